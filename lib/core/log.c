/* SPDX-License-Identifier: MIT */
/* The library's log: one process-wide sink, stderr by default, never stdout. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* As for select_lock (backend_select.c): a log callback that forks must not wait for itself. */
static _Thread_local bool log_mine, log_forking;

static void log_take(void)
{
	pthread_mutex_lock(&log_lock);
	log_mine = true;
}

static void log_drop(void)
{
	log_mine = false;
	pthread_mutex_unlock(&log_lock);
}
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

void graid__log_fork_lock(bool take)
{
	if (take) {
		log_forking = !log_mine;
		if (log_forking)
			pthread_mutex_lock(&log_lock);
	} else if (log_forking) {
		pthread_mutex_unlock(&log_lock);
	}
}

GRAID_API void graid_log_set(graid_log_fn fn, void *arg, int max_level)
{
	pthread_once(&log_once, log_init_default);
	log_take();
	log_fn = fn;
	log_arg = arg;
	log_max = max_level;
	log_drop();
}

void graid__log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	pthread_once(&log_once, log_init_default);
	log_take();
	if (!log_fn || level > log_max) {
		log_drop();
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Called under the lock so a concurrent graid_log_set() never races a caller's sink. */
	log_fn(log_arg, level, msg);
	log_drop();
}
