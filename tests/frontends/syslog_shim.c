/* SPDX-License-Identifier: MIT */
/* Test helper (LD_PRELOAD): syslog(3) written to $GRAID_TEST_SYSLOG as "PRIORITY FACILITY MESSAGE". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

/* Exported over the build's hidden default: these replace libc's for the program. */
#define SHIM_EXPORT __attribute__((visibility("default")))

/* glibc's fortified syslog(), which a build with _FORTIFY_SOURCE calls instead. */
SHIM_EXPORT void __syslog_chk(int pri, int flag, const char *fmt, ...);

static int shim_facility = LOG_USER;

SHIM_EXPORT void openlog(const char *ident, int option, int facility)
{
	(void)ident;
	(void)option;
	shim_facility = facility;
}

static void shim_write(int pri, const char *fmt, va_list ap)
{
	const char *path = getenv("GRAID_TEST_SYSLOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (!f)
		return;
	fprintf(f, "%d %d ", LOG_PRI(pri), (pri & LOG_FACMASK) ? pri & LOG_FACMASK : shim_facility);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fclose(f);
}

SHIM_EXPORT void syslog(int pri, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_write(pri, fmt, ap);
	va_end(ap);
}

SHIM_EXPORT void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
	va_list ap;

	(void)flag;
	va_start(ap, fmt);
	shim_write(pri, fmt, ap);
	va_end(ap);
}
