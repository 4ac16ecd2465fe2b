/* SPDX-License-Identifier: MIT */
/* The library's log: one process-wide sink, stderr by default, never stdout. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static graid_log_fn log_fn;
static void *log_arg;
static int log_max = GRAID_LOG_WARNING;

static void log_stderr(void *arg, int level, const char *msg)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error",
					     "warning", "notice", "info", "debug" };
	(void)arg;
	fprintf(stderr, "libgraid %s: %s\n", names[level & 7], msg);
}

/* The default sink reads GRAID_LOG_LEVEL once, so a user can turn up detail without code. */
static void log_init_default(void)
{
	const char *env = getenv("GRAID_LOG_LEVEL");

	graid__fork_safe();
	log_fn = log_stderr;
	if (env && *env) {
		int lvl = atoi(env);

		if (lvl >= GRAID_LOG_ERR && lvl <= GRAID_LOG_DEBUG)
			log_max = lvl;
	}
}

GRAID_API void graid_log_set(graid_log_fn fn, void *arg, int max_level)
{
	pthread_once(&log_once, log_init_default);
	graid__lock(&graid__log_lock);
	log_fn = fn;
	log_arg = arg;
	log_max = max_level;
	graid__unlock(&graid__log_lock);
}

void graid__log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	pthread_once(&log_once, log_init_default);
	graid__lock(&graid__log_lock);
	if (!log_fn || level > log_max) {
		graid__unlock(&graid__log_lock);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Called under the lock so a concurrent graid_log_set() never races a caller's sink. */
	log_fn(log_arg, level, msg);
	graid__unlock(&graid__log_lock);
}
