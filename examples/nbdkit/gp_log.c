/* SPDX-License-Identifier: MIT */
/* The library's log and the plugin's start messages, mapped onto nbdkit's log, each once. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "gp.h"

/*
 * nbdkit has two levels: errors, always shown (stderr, or syslog once it has forked into
 * the background), and debug, shown with -v. A library warning (a member left out, an
 * array going on degraded) is for the operator's eyes, so it goes where nbdkit's errors
 * go, but labelled a warning: written here the way nbdkit writes its errors, to the place
 * nbdkit would send them (gp_sink_of()). Notices and the rest go to the debug log.
 */

static pthread_mutex_t gp_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int gp_relay_fd = -1; /* the check's process: records to the get_ready process */

/* The start: texts printed so far (printed again only to the debug log), errors kept. */
static struct {
	bool on;
	bool keep_errors;
	char **texts;
	size_t ntexts;
	char *errors; /* newline-separated */
	size_t errors_len;
} gp_start;

enum gp_sink gp_sink_of(bool ready_process)
{
	switch (gp.srv.log_to) {
	case GP_LOG_STDERR:
		return GP_SINK_STDERR;
	case GP_LOG_SYSLOG:
		return GP_SINK_SYSLOG;
	case GP_LOG_NULL:
		return GP_SINK_NULL;
	case GP_LOG_DEFAULT:
		break;
	}
	/*
	 * By default nbdkit logs to stderr, and to syslog in the process it forks into the
	 * background; --run's fork keeps stderr. get_ready runs before either fork.
	 */
	if (ready_process || gp.ready_pid == 0 || getpid() == gp.ready_pid || gp.srv.run)
		return GP_SINK_STDERR;
	return GP_SINK_SYSLOG;
}

static void gp_warning_out(const char *msg)
{
	switch (gp_sink_of(false)) {
	case GP_SINK_STDERR:
		flockfile(stderr);
		fprintf(stderr, "nbdkit: graid: warning: %s\n", msg);
		funlockfile(stderr);
		break;
	case GP_SINK_SYSLOG:
		syslog(LOG_DAEMON | LOG_WARNING, "graid: warning: %s", msg);
		break;
	case GP_SINK_NULL:
		break;
	}
}

/* One record for the get_ready process: the level as a digit, the text, a newline. */
static void gp_relay(int level, const char *msg)
{
	size_t n = strlen(msg);
	char *rec = malloc(n + 2);

	if (!rec)
		return;
	rec[0] = (char)('0' + (level < 0 ? 0 : level > 9 ? 9 : level));
	memcpy(rec + 1, msg, n);
	for (size_t i = 1; i <= n; i++)
		if (rec[i] == '\n')
			rec[i] = ' ';
	rec[n + 1] = '\n';
	for (size_t done = 0; done < n + 2;) {
		ssize_t w = write(gp_relay_fd, rec + done, n + 2 - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	free(rec);
}

/* Was @p msg printed already in this start? If not, it is now remembered. */
static bool gp_start_seen(const char *msg)
{
	char **t;

	for (size_t i = 0; i < gp_start.ntexts; i++)
		if (strcmp(gp_start.texts[i], msg) == 0)
			return true;
	t = realloc(gp_start.texts, (gp_start.ntexts + 1) * sizeof(*t));
	if (t) {
		gp_start.texts = t;
		t[gp_start.ntexts] = strdup(msg);
		if (t[gp_start.ntexts])
			gp_start.ntexts++;
	}
	return false;
}

static void gp_start_keep(const char *msg)
{
	size_t n = strlen(msg);
	char *e = realloc(gp_start.errors, gp_start.errors_len + n + 2);

	if (!e)
		return;
	memcpy(e + gp_start.errors_len, msg, n);
	e[gp_start.errors_len + n] = '\n';
	e[gp_start.errors_len + n + 1] = '\0';
	gp_start.errors = e;
	gp_start.errors_len += n + 1;
}

static void gp_print(int level, const char *msg)
{
	bool again = false;

	if (level > GRAID_LOG_WARNING) {
		nbdkit_debug("%s", msg);
		return;
	}
	pthread_mutex_lock(&gp_log_lock);
	if (gp_start.on) {
		again = gp_start_seen(msg);
		if (!again && level <= GRAID_LOG_ERR && gp_start.keep_errors)
			gp_start_keep(msg);
	}
	pthread_mutex_unlock(&gp_log_lock);
	if (again)
		nbdkit_debug("(again) %s", msg);
	else if (level <= GRAID_LOG_ERR)
		nbdkit_error("%s", msg);
	else
		gp_warning_out(msg);
}

void gp_log_lib(void *arg, int level, const char *msg)
{
	(void)arg;
	if (gp_relay_fd < 0) {
		gp_print(level, msg);
		return;
	}
	gp_relay(level, msg);
	if (level <= GRAID_LOG_WARNING) {
		pthread_mutex_lock(&gp_log_lock);
		gp_start_seen(msg);
		pthread_mutex_unlock(&gp_log_lock);
	}
}

void gp_error(const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		nbdkit_error("%s", fmt);
		return;
	}
	gp_log_lib(NULL, GRAID_LOG_ERR, msg);
	free(msg);
}

void gp_warning(const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		gp_warning_out(fmt);
		return;
	}
	gp_log_lib(NULL, GRAID_LOG_WARNING, msg);
	free(msg);
}

void gp_log_relay(int fd)
{
	gp_relay_fd = fd;
}

void gp_log_replay(char *records, size_t len)
{
	gp_log_start(false);
	for (size_t i = 0; i < len;) {
		char *nl = memchr(records + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - records) : len;

		records[end] = '\0'; /* the last record's newline, or the byte past it (spare) */
		if (end > i)
			gp_print(records[i] - '0', records + i + 1);
		i = end + 1;
	}
	/* Kept for the open after the fork: gp_log_start() there. */
	pthread_mutex_lock(&gp_log_lock);
	gp_start.on = false;
	pthread_mutex_unlock(&gp_log_lock);
}

void gp_log_start(bool keep_errors)
{
	pthread_mutex_lock(&gp_log_lock);
	gp_start.on = true;
	gp_start.keep_errors = keep_errors;
	pthread_mutex_unlock(&gp_log_lock);
}

char *gp_log_started(void)
{
	char *errors;

	pthread_mutex_lock(&gp_log_lock);
	errors = gp_start.errors ? gp_start.errors : strdup("");
	for (size_t i = 0; i < gp_start.ntexts; i++)
		free(gp_start.texts[i]);
	free(gp_start.texts);
	gp_start.texts = NULL;
	gp_start.ntexts = 0;
	gp_start.errors = NULL;
	gp_start.errors_len = 0;
	gp_start.on = gp_start.keep_errors = false;
	pthread_mutex_unlock(&gp_log_lock);
	return errors;
}
