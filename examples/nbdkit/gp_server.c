/* SPDX-License-Identifier: MIT */
/* What nbdkit's own command line says about the server: -r, --run and --log. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "gp.h"

/*
 * nbdkit tells a plugin that the server is read-only only per connection (.open's
 * readonly), long after the array had to be opened, and tells it nothing of where its
 * log goes. It leaves its argv as it was given, so that /proc/PID/cmdline stays true; its
 * options are read again from there, by the same getopt_long with nbdkit's own option
 * table (server/options.h, the same from 1.32 to today). Only whether an option takes an
 * argument matters for the others: that decides which words are options at all.
 */
static const char gp_short_options[] = "46D:e:fg:i:nop:P:rst:u:U:vV";

enum { GP_OPT_OTHER = 0x100, GP_OPT_LOG, GP_OPT_RUN };

static const struct option gp_long_options[] = {
	{ "ipv4-only", no_argument, NULL, GP_OPT_OTHER },
	{ "ipv6-only", no_argument, NULL, GP_OPT_OTHER },
	{ "debug", required_argument, NULL, GP_OPT_OTHER },
	{ "dump-config", no_argument, NULL, GP_OPT_OTHER },
	{ "dump-plugin", no_argument, NULL, GP_OPT_OTHER },
	{ "exit-with-parent", no_argument, NULL, GP_OPT_OTHER },
	{ "export", required_argument, NULL, GP_OPT_OTHER },
	{ "export-name", required_argument, NULL, GP_OPT_OTHER },
	{ "exportname", required_argument, NULL, GP_OPT_OTHER },
	{ "filter", required_argument, NULL, GP_OPT_OTHER },
	{ "foreground", no_argument, NULL, GP_OPT_OTHER },
	{ "no-fork", no_argument, NULL, GP_OPT_OTHER },
	{ "group", required_argument, NULL, GP_OPT_OTHER },
	{ "help", no_argument, NULL, GP_OPT_OTHER },
	{ "ip-addr", required_argument, NULL, GP_OPT_OTHER },
	{ "ipaddr", required_argument, NULL, GP_OPT_OTHER },
	{ "log", required_argument, NULL, GP_OPT_LOG },
	{ "long-options", no_argument, NULL, GP_OPT_OTHER },
	{ "mask-handshake", required_argument, NULL, GP_OPT_OTHER },
	{ "new-style", no_argument, NULL, GP_OPT_OTHER },
	{ "newstyle", no_argument, NULL, GP_OPT_OTHER },
	{ "no-sr", no_argument, NULL, GP_OPT_OTHER },
	{ "old-style", no_argument, NULL, GP_OPT_OTHER },
	{ "oldstyle", no_argument, NULL, GP_OPT_OTHER },
	{ "pid-file", required_argument, NULL, GP_OPT_OTHER },
	{ "pidfile", required_argument, NULL, GP_OPT_OTHER },
	{ "port", required_argument, NULL, GP_OPT_OTHER },
	{ "read-only", no_argument, NULL, 'r' },
	{ "readonly", no_argument, NULL, 'r' },
	{ "run", required_argument, NULL, GP_OPT_RUN },
	{ "selinux-label", required_argument, NULL, GP_OPT_OTHER },
	{ "short-options", no_argument, NULL, GP_OPT_OTHER },
	{ "single", no_argument, NULL, GP_OPT_OTHER },
	{ "stdin", no_argument, NULL, GP_OPT_OTHER },
	{ "swap", no_argument, NULL, GP_OPT_OTHER },
	{ "threads", required_argument, NULL, GP_OPT_OTHER },
	{ "tls", required_argument, NULL, GP_OPT_OTHER },
	{ "tls-certificates", required_argument, NULL, GP_OPT_OTHER },
	{ "tls-psk", required_argument, NULL, GP_OPT_OTHER },
	{ "tls-verify-peer", no_argument, NULL, GP_OPT_OTHER },
	{ "unix", required_argument, NULL, GP_OPT_OTHER },
	{ "user", required_argument, NULL, GP_OPT_OTHER },
	{ "verbose", no_argument, NULL, GP_OPT_OTHER },
	{ "version", no_argument, NULL, GP_OPT_OTHER },
	{ "vsock", no_argument, NULL, GP_OPT_OTHER },
	{ NULL, 0, NULL, 0 },
};

/* The whole of /proc/self/cmdline (NUL-separated words); NULL, errno set, on failure. */
static char *gp_cmdline(size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0)
		goto fail;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *b = realloc(buf, cap * 2);

			if (!b)
				goto fail;
			buf = b;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
fail:
	if (fd >= 0) {
		int e = errno;

		close(fd);
		errno = e;
	}
	free(buf);
	return NULL;
}

static void gp_server_option(struct gp_server *srv, int c, const char *arg)
{
	if (c == 'r')
		srv->readonly = true;
	else if (c == GP_OPT_RUN)
		srv->run = true;
	else if (c == GP_OPT_LOG)
		srv->log_to = strcmp(arg, "stderr") == 0   ? GP_LOG_STDERR
			      : strcmp(arg, "syslog") == 0 ? GP_LOG_SYSLOG
			      : strcmp(arg, "null") == 0   ? GP_LOG_NULL
							   : GP_LOG_DEFAULT;
}

int gp_server_read(struct gp_server *srv)
{
	size_t len, argc = 0;
	char *words = gp_cmdline(&len), **argv;
	int saved_optind = optind, saved_opterr = opterr, saved_optopt = optopt, c;
	char *saved_optarg = optarg;

	*srv = (struct gp_server){ .log_to = GP_LOG_DEFAULT };
	if (!words) {
		nbdkit_error("reading nbdkit's command line (/proc/self/cmdline), to tell whether "
			     "-r was given: %m");
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		argc += words[i] == '\0';
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		nbdkit_error("calloc: %m");
		free(words);
		return -1;
	}
	for (size_t i = 0, w = 0; i < len && w < argc; w++) {
		argv[w] = words + i;
		i += strlen(words + i) + 1;
	}
	/* nbdkit parsed its options long ago; 0 restarts glibc's getopt from scratch. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long((int)argc, argv, gp_short_options, gp_long_options, NULL)) != -1)
		gp_server_option(srv, c, optarg);
	optind = saved_optind;
	opterr = saved_opterr;
	optopt = saved_optopt;
	optarg = saved_optarg;
	free(argv);
	free(words);
	nbdkit_debug("nbdkit's command line: %s, %s, log %d", srv->readonly ? "-r" : "writable",
		     srv->run ? "--run" : "no --run", (int)srv->log_to);
	return 0;
}
