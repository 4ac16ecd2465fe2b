/* SPDX-License-Identifier: MIT */
/* graidctl monitor's output: one line per event on stdout, syslog, and the --program runs. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "gctl.h"
#include "gctl_monitor.h"

extern char **environ;

/*
 * --program runs are queued and run one at a time, in the events' order (a script that
 * mails or pages sees them as they happened), each in a child the main loop reaps: the
 * monitor goes on following the arrays while one runs. The queue is bounded; past it a run
 * is dropped and said on stderr (the event line itself was printed).
 */
#define MON_QUEUE_MAX 1024

struct mon_run {
	char *argv[5];
	char *env[8];
};

static struct mon_run mon_queue[MON_QUEUE_MAX];
static unsigned mon_qhead, mon_qlen;
static pid_t mon_child;
static double mon_child_deadline;
static char mon_child_what[160];

int mon_event_priority(const char *name)
{
	static const struct {
		const char *name;
		int prio;
	} p[] = {
		{ "array-failed", LOG_ALERT },      { "member-failed", LOG_CRIT },
		{ "degraded", LOG_CRIT },           { "health-critical", LOG_CRIT },
		{ "missed", LOG_CRIT },             { "array-disappeared", LOG_CRIT },
		{ "member-missing", LOG_CRIT },     { "member-unreachable", LOG_WARNING },
		{ "health-warning", LOG_WARNING },  { "spares-missing", LOG_WARNING },
		{ "rebuild-stopped", LOG_WARNING }, { "scrub-mismatch", LOG_WARNING },
		{ "bad-block", LOG_WARNING },       { "member-slow", LOG_WARNING },
		{ "array-foreign", LOG_WARNING },   { "resync-needed", LOG_WARNING },
		{ "checksum-error", LOG_WARNING },  { "checksum-tag-error", LOG_WARNING },
		{ "reshape-paused", LOG_WARNING },
	};

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (strcmp(p[i].name, name) == 0)
			return p[i].prio;
	return LOG_INFO;
}

void mon_report_open(struct mon *m)
{
	if (m->use_syslog)
		openlog("graidctl-monitor", LOG_PID, LOG_DAEMON);
}

static void report_time(int64_t ns, char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char date[32], zone[8];

	if (ns > 0) {
		ts.tv_sec = (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
	}
	localtime_r(&ts.tv_sec, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, len, "%s.%03ld%s", date, ts.tv_nsec / 1000000, zone);
}

static char *report_env(const char *key, const char *value)
{
	size_t n = strlen(key) + strlen(value) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s=%s", key, value);
	return s;
}

static void report_queue(struct mon *m, const struct mon_event *e, const char *member,
			 const char *line)
{
	struct mon_run *r;
	char num[32];

	if (mon_qlen == MON_QUEUE_MAX) {
		fprintf(stderr, "graidctl monitor: %s: %s %s: --program not run: %u runs are "
			"waiting already\n", m->program, e->name, e->a->uuid_text, MON_QUEUE_MAX);
		return;
	}
	r = &mon_queue[(mon_qhead + mon_qlen++) % MON_QUEUE_MAX];
	memset(r, 0, sizeof(*r));
	r->argv[0] = strdup(m->program);
	r->argv[1] = strdup(e->name);
	r->argv[2] = strdup(e->a->uuid_text);
	r->argv[3] = member ? strdup(member) : NULL;
	r->env[0] = report_env("GRAID_EVENT", e->name);
	r->env[1] = report_env("GRAID_ARRAY_UUID", e->a->uuid_text);
	r->env[2] = report_env("GRAID_ARRAY_NAME", e->a->name);
	r->env[3] = report_env("GRAID_EVENT_LINE", line);
	snprintf(num, sizeof(num), "%d", e->role);
	r->env[4] = report_env("GRAID_ROLE", e->role >= 0 ? num : "");
	snprintf(num, sizeof(num), "%llu", (unsigned long long)e->seq);
	r->env[5] = report_env("GRAID_EVENT_SEQ", e->seq ? num : "");
}

void mon_report(struct mon *m, const struct mon_event *e)
{
	char when[64], member[300], line[1024];
	int has_member = 0;

	report_time(e->time_ns, when, sizeof(when));
	if (e->role >= 0 && e->role < GRAID_MAX_MEMBERS && !e->unsure && e->a->path[e->role][0]) {
		snprintf(member, sizeof(member), "%s", e->a->path[e->role]);
		has_member = 1;
	} else if (e->role >= 0) {
		snprintf(member, sizeof(member), "role:%d", e->role);
		has_member = 1;
	} else {
		snprintf(member, sizeof(member), "-");
	}
	snprintf(line, sizeof(line), "%s %s %s %s%s%s%s%s", when, e->name, e->a->uuid_text, member,
		 e->a->name[0] ? " name=" : "", e->a->name, e->detail[0] ? " " : "", e->detail);
	if (e->role >= 0)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " role=%d", e->role);
	if (e->seq)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " seq=%llu",
			 (unsigned long long)e->seq);
	printf("%s\n", line);
	/* SIGPIPE is ignored (the holders' sockets): a reader gone is EPIPE here. */
	if (fflush(stdout) && errno == EPIPE)
		m->out_gone = 1;
	if (m->use_syslog)
		syslog(mon_event_priority(e->name), "%s", line);
	if (!strcmp(e->name, "degraded") || !strcmp(e->name, "array-failed") ||
	    !strcmp(e->name, "array-disappeared") || !strcmp(e->name, "resync-needed"))
		m->attention = 1;
	if (m->program)
		report_queue(m, e, has_member ? member : NULL, line);
}

static void run_free(struct mon_run *r)
{
	for (int i = 0; i < 5; i++)
		free(r->argv[i]);
	for (int i = 0; i < 8; i++)
		free(r->env[i]);
}

static void run_said(struct mon *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_said(struct mon *m, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "graidctl monitor: %s\n", msg);
	if (m->use_syslog)
		syslog(LOG_ERR, "%s", msg);
}

/* Fork and exec the queue's head; the environment is built before the fork. */
static void run_start(struct mon *m)
{
	struct mon_run *r = &mon_queue[mon_qhead];
	size_t n = 0, k = 0;
	char **envp;
	pid_t pid;

	for (char **e = environ; *e; e++)
		n++;
	envp = calloc(n + 8, sizeof(*envp));
	for (size_t i = 0; envp && i < n; i++) {
		int ours = 0;

		for (int j = 0; j < 8 && r->env[j]; j++) {
			size_t kl = strcspn(r->env[j], "=") + 1;

			ours |= !strncmp(environ[i], r->env[j], kl);
		}
		if (!ours)
			envp[k++] = environ[i];
	}
	for (int j = 0; envp && j < 8; j++)
		if (r->env[j])
			envp[k++] = r->env[j];
	snprintf(mon_child_what, sizeof(mon_child_what), "%s %s %s%s%s", m->program, r->argv[1],
		 r->argv[2], r->argv[3] ? " " : "", r->argv[3] ? r->argv[3] : "");
	fflush(NULL);
	pid = envp ? fork() : -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		/* Its own process group: a run past its time is killed with what it started. */
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, 0);
		/* Its output goes to the monitor's stderr: stdout is the events' alone. */
		dup2(2, 1);
		signal(SIGPIPE, SIG_DFL);
		execve(r->argv[0], r->argv, envp);
		fprintf(stderr, "graidctl monitor: %s: %s\n", r->argv[0], strerror(errno));
		_exit(127);
	}
	free(envp);
	if (pid < 0)
		run_said(m, "--program %s: not run: fork failed (%d)", mon_child_what, errno);
	else {
		setpgid(pid, pid);
		mon_child = pid;
		mon_child_deadline = gctl_now() + m->program_timeout;
	}
	run_free(r);
	mon_qhead = (mon_qhead + 1) % MON_QUEUE_MAX;
	mon_qlen--;
}

double mon_program_tick(struct mon *m)
{
	int st;

	if (mon_child > 0) {
		pid_t p = waitpid(mon_child, &st, WNOHANG);

		if (p == mon_child) {
			mon_child = 0;
			if (WIFEXITED(st) && WEXITSTATUS(st))
				run_said(m, "--program %s: exit %d", mon_child_what, WEXITSTATUS(st));
			else if (WIFSIGNALED(st))
				run_said(m, "--program %s: killed by signal %d", mon_child_what,
					 WTERMSIG(st));
		} else if (gctl_now() >= mon_child_deadline) {
			kill(-mon_child, SIGKILL);
			kill(mon_child, SIGKILL);
			waitpid(mon_child, &st, 0);
			mon_child = 0;
			run_said(m, "--program %s: still running after %d s: killed", mon_child_what,
				 (int)m->program_timeout);
		} else {
			double left = mon_child_deadline - gctl_now();

			return left < 0.05 ? left : 0.05;
		}
	}
	if (mon_qlen)
		run_start(m);
	return mon_child > 0 ? 0.05 : 1e9;
}

void mon_program_drain(struct mon *m)
{
	while (mon_child > 0 || mon_qlen) {
		double t = mon_program_tick(m);

		if (mon_child > 0 || mon_qlen)
			usleep(t < 0.05 ? (useconds_t)(t * 1e6) + 1000 : 50000);
	}
}
