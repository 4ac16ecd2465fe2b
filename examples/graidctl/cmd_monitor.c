/* SPDX-License-Identifier: MIT */
/* graidctl monitor: follow every array on the host, report each event (mdadm --monitor's job). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/file.h>
#include <sys/stat.h>

#include "gctl.h"
#include "gctl_monitor.h"

/* mdadm's default delay between looks: an unserved array changes only when a command runs. */
#define MON_DELAY_DEFAULT 60.0
#define MON_PROGRAM_TIMEOUT_DEFAULT 30.0
/* How often the run directory is read for endpoints that appeared (an array served later). */
#define MON_ENDPOINT_PERIOD 1.0

static volatile sig_atomic_t mon_stop;

static void mon_on_signal(int sig)
{
	(void)sig;
	mon_stop = 1;
}

void gctl_help_monitor(FILE *f)
{
	gctl_print_cmd_usage(f, "monitor");
	fprintf(f,
		"\nFollow every libgraid array on this host and print one line per event:\n"
		"served arrays through their holders' control endpoints (RUN_DIR/UUID.ctl),\n"
		"the others by looking at their superblocks every --delay seconds (the devices\n"
		"graid.conf names, as assemble --scan finds them).\n\n"
		"  TIME EVENT ARRAY-UUID MEMBER [name=NAME] [key=value...] [role=N] [seq=N]\n\n"
		"MEMBER is the role's device, role:N when unknown, - for the array itself.\n"
		"Events: the library's (member-failed, degraded, rebuild-done... see graidctl(1))\n"
		"and the monitor's own: new-array, member-missing, array-disappeared, missed,\n"
		"test-message.\n\n"
		"Options:\n"
		"  --program PATH, --alert PATH  run PATH EVENT ARRAY-UUID [MEMBER] per event\n"
		"                   (no shell; one at a time, in order; killed after\n"
		"                   --program-timeout; its failure is logged, the monitor goes on)\n"
		"  --program-timeout S  seconds a --program run may take (default 30)\n"
		"  --syslog         each line to syslog too (facility daemon)\n"
		"  --delay S        seconds between looks at unserved arrays (default 60)\n"
		"  --oneshot        report the arrays that need attention now, once, and exit\n"
		"  --test           a test-message event per array found (then goes on, or\n"
		"                   exits with --oneshot)\n"
		"  --config FILE    graid.conf (default $GRAID_CONF, else /etc/graid/graid.conf)\n"
		"  --run-dir DIR    the endpoints' directory (default $GRAID_RUN_DIR, else\n"
		"                   /run/graid)\n"
		"  --state-file F   the last event number seen per holder and each unserved\n"
		"                   array's last look, so that a monitor started again misses\n"
		"                   nothing (default RUN_DIR/monitor.state; \"none\": not kept)\n\n"
		"Exit status: 0 stopped by SIGTERM or SIGINT, or --oneshot found nothing to\n"
		"report; 3 --oneshot reported an array degraded, failed, gone or needing a\n"
		"resync (not closed cleanly); 1 the monitor could not start, or its stdout was\n"
		"closed; 2 usage error, or another monitor follows with the same state file.\n");
}

static int mon_parse_seconds(const char *cmd, const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0) || v > 86400)
		return gctl_usage_err(cmd, "%s: '%s' is not a number of seconds (0 < S <= 86400)",
				      opt, s);
	*out = v;
	return GCTL_EXIT_OK;
}

/* --oneshot and --test: one round over every array, reported, no following. */
static int mon_once(struct mon *m)
{
	mon_served_once(m);
	mon_look_round(m);
	for (int i = 0; i < m->narr; i++) {
		struct mon_array *a = m->arr[i];
		struct mon_event e = { .a = a, .role = -1 };

		if (!a->served_now && !a->have_base)
			continue;
		if (m->test) {
			e.name = "test-message";
			snprintf(e.detail, sizeof(e.detail), "source=%s", a->served_now ? "holder" : "look");
			mon_report(m, &e);
		}
		/* The look reported its own arrays' degraded state; a holder's is reported here. */
		if (m->oneshot && a->served_now && mon_array_lost(a)) {
			e.name = "array-failed";
			snprintf(e.detail, sizeof(e.detail), "source=holder");
			mon_report(m, &e);
		} else if (m->oneshot && a->served_now && mon_array_degraded(a)) {
			e.name = "degraded";
			snprintf(e.detail, sizeof(e.detail), "source=holder");
			mon_report(m, &e);
		}
	}
	return GCTL_EXIT_OK;
}

static int mon_follow(struct mon *m)
{
	double next_look = 0, next_endpoints = 0;
	struct pollfd *pfd = NULL;
	struct mon_array **who = NULL;
	struct stat st;
	int out_pipe = !fstat(STDOUT_FILENO, &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));

	while (!mon_stop && !m->out_gone) {
		double now = gctl_now(), wait;
		int n = 0, cap;

		if (now >= next_endpoints) {
			mon_endpoints_scan(m);
			next_endpoints = now + MON_ENDPOINT_PERIOD;
		}
		if (now >= next_look) {
			mon_look_round(m);
			m->started = 1;
			next_look = gctl_now() + m->delay;
		}
		/* A holder that went away since: its superblocks are looked at at once. */
		if (m->look_soon) {
			m->look_soon = 0;
			mon_look_round(m);
		}
		wait = mon_program_tick(m);
		now = gctl_now();
		if (next_endpoints - now < wait)
			wait = next_endpoints - now;
		if (next_look - now < wait)
			wait = next_look - now;
		if (wait < 0)
			wait = 0;
		/* Taken after the scans and looks above, which add the arrays they find. */
		cap = m->narr;
		{
			struct pollfd *p = realloc(pfd, (size_t)(cap + 2) * sizeof(*p));
			struct mon_array **w = realloc(who, (size_t)(cap + 2) * sizeof(*w));

			if (p)
				pfd = p;
			if (w)
				who = w;
			if (!p || !w)
				break;
		}
		for (int i = 0; i < m->narr; i++) {
			if (!m->arr[i]->subscribed)
				continue;
			pfd[n].fd = m->arr[i]->ctl.fd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			who[n++] = m->arr[i];
		}
		/* A pipe's reader gone (graidctl monitor | head) wakes the poll. */
		if (out_pipe) {
			pfd[n].fd = STDOUT_FILENO;
			pfd[n].events = 0;
			pfd[n].revents = 0;
			who[n++] = NULL;
		}
		if (poll(pfd, (nfds_t)n, (int)(wait * 1000) + 1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (who[i])
				mon_served_read(m, who[i]);
			else
				m->out_gone = 1;
		}
		if (m->out_gone) {
			fprintf(stderr, "graidctl monitor: its standard output was closed: "
				"stopped\n");
			break;
		}
	}
	free(pfd);
	free(who);
	return mon_stop ? GCTL_EXIT_OK : GCTL_EXIT_FAILED;
}

/*
 * One following monitor per state file: two would each write the numbers they reported over
 * the other's. The lock is on a file beside it (the state file itself is replaced by rename);
 * held until exit.
 */
static int mon_lock(struct mon *m)
{
	char path[4200], who[64] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s.lock", m->state_file);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		gctl_err("monitor: %s: %s", path, strerror(errno));
		return GCTL_EXIT_FAILED;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		n = pread(fd, who, sizeof(who) - 1, 0);
		who[n > 0 ? n : 0] = '\0';
		who[strcspn(who, "\n")] = '\0';
		gctl_err("monitor: another monitor (pid %s) follows the arrays with the state "
			 "file %s; one per state file (--state-file names another)",
			 who[0] ? who : "unknown", m->state_file);
		close(fd);
		return GCTL_EXIT_USAGE;
	}
	if (ftruncate(fd, 0) == 0)
		dprintf(fd, "%ld\n", (long)getpid());
	m->lock_fd = fd;
	return GCTL_EXIT_OK;
}

int gctl_cmd_monitor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "program", required_argument, NULL, 'p' },
		{ "alert", required_argument, NULL, 'p' },
		{ "program-timeout", required_argument, NULL, 'T' },
		{ "syslog", no_argument, NULL, 'y' },
		{ "delay", required_argument, NULL, 'd' },
		{ "oneshot", no_argument, NULL, '1' },
		{ "test", no_argument, NULL, 't' },
		{ "config", required_argument, NULL, 'c' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "state-file", required_argument, NULL, 's' },
		{ "scan", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct mon m = { .delay = MON_DELAY_DEFAULT,
			 .program_timeout = MON_PROGRAM_TIMEOUT_DEFAULT, .lock_fd = -1 };
	const char *run_dir = getenv("GRAID_RUN_DIR"), *state = NULL;
	struct sigaction sa = { .sa_handler = mon_on_signal };
	int c, ex;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!*optarg || optarg[0] != '/')
				return gctl_usage_err(argv[0], "--program: '%s' is not an absolute path",
						      optarg);
			m.program = optarg;
			break;
		case 'T':
			if (mon_parse_seconds(argv[0], "--program-timeout", optarg,
					      &m.program_timeout))
				return GCTL_EXIT_USAGE;
			break;
		case 'y':
			m.use_syslog = 1;
			break;
		case 'd':
			if (mon_parse_seconds(argv[0], "--delay", optarg, &m.delay))
				return GCTL_EXIT_USAGE;
			break;
		case '1':
			m.oneshot = 1;
			break;
		case 't':
			m.test = 1;
			break;
		case 'c':
			m.config = optarg;
			break;
		case 'r':
			run_dir = optarg;
			break;
		case 's':
			state = optarg;
			break;
		case 'S':
			break; /* mdadm's --scan: what graidctl monitor does anyway */
		default:
			return gctl_usage_err(argv[0], "see 'graidctl monitor --help'");
		}
	}
	if (optind < argc)
		return gctl_usage_err(argv[0], "unexpected argument '%s': the arrays are found, "
				      "not named (graid.conf's DEVICE lines say where)", argv[optind]);
	if (m.program && access(m.program, X_OK)) {
		gctl_err("%s: --program %s: %s", argv[0], m.program, strerror(errno));
		return GCTL_EXIT_FAILED;
	}
	snprintf(m.run_dir, sizeof(m.run_dir), "%s", run_dir && *run_dir ? run_dir : "/run/graid");
	if (!state)
		snprintf(m.state_file, sizeof(m.state_file), "%s/monitor.state", m.run_dir);
	else if (strcmp(state, "none"))
		snprintf(m.state_file, sizeof(m.state_file), "%s", state);
	if (!m.oneshot && m.state_file[0] && (ex = mon_lock(&m)))
		return ex;
	mon_report_open(&m);
	/* An inherited "ignore" would have the --program children reaped unseen (waitpid fails). */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * A following monitor goes on from where the last one stopped (its numbers, its looks);
	 * --oneshot says how the arrays are now, and leaves the saved state alone.
	 */
	if (!m.oneshot)
		mon_state_load(&m);
	if (m.oneshot || m.test)
		ex = mon_once(&m);
	if (m.oneshot) {
		mon_program_drain(&m);
		ex = m.attention ? GCTL_EXIT_DEGRADED : GCTL_EXIT_OK;
	} else {
		/* --test then follows: the arrays already reported are not new. */
		m.started = m.test;
		for (int i = 0; i < m.narr; i++)
			m.arr[i]->served_now = 0;
		ex = mon_follow(&m);
		mon_program_drain(&m);
		mon_state_save(&m);
	}
	for (int i = 0; i < m.narr; i++) {
		gctl_ctl_close(&m.arr[i]->ctl);
		free(m.arr[i]->pend);
		free(m.arr[i]);
	}
	free(m.arr);
	if (m.lock_fd >= 0)
		close(m.lock_fd);
	return ex;
}
