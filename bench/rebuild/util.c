/* SPDX-License-Identifier: MIT */
/* Small shared helpers: clocks, medians, the watchdog against a hung library, its log. */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rb.h"

uint64_t rb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double rb_cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void rb_clock_start(struct rb_clock *c)
{
	c->cpu0 = rb_cpu_secs();
	c->t0 = rb_now_ns();
}

double rb_clock_rate(const struct rb_clock *c, uint64_t bytes, struct rb_rate *out)
{
	double secs = (double)(rb_now_ns() - c->t0) / 1e9;

	out->mbps = (double)bytes / 1e6 / secs;
	out->cpu_per_gb = (rb_cpu_secs() - c->cpu0) / ((double)bytes / 1e9);
	return secs;
}

void rb_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts))
		;
}

static int util_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

double rb_median(double *v, unsigned n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), util_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A hung library must not hang the benchmark: say where it stuck, and stop. */
static const char *volatile util_phase = "start";

static void util_say(const char *s)
{
	ssize_t rc = write(2, s, strlen(s));

	(void)rc;
}

static void util_alarm(int sig)
{
	(void)sig;
	util_say("\nrebuild_bench: no progress, giving up (library hang?) during: ");
	util_say(util_phase);
	util_say("\n");
	_exit(2);
}

void rb_watch_init(void)
{
	signal(SIGALRM, util_alarm);
}

void rb_watch(const char *phase, double expect_secs)
{
	util_phase = phase;
	alarm((unsigned)(expect_secs * 4) + 60);
}

static atomic_long util_resync_regions = -1;

static void util_log(void *arg, int level, const char *msg)
{
	const char *p;

	(void)arg;
	if (level <= GRAID_LOG_WARNING)
		fprintf(stderr, "libgraid: %s\n", msg);
	/* array_resync's closing notice; the public API has no other way to see the count. */
	p = strstr(msg, "resync: ");
	if (p && strstr(p, "dirty regions"))
		atomic_store(&util_resync_regions, strtol(p + 8, NULL, 10));
}

void rb_log_install(void)
{
	graid_log_set(util_log, NULL, GRAID_LOG_NOTICE);
}

long rb_log_resync_regions(void)
{
	return atomic_load(&util_resync_regions);
}

void rb_log_reset(void)
{
	atomic_store(&util_resync_regions, -1);
}

/* Other work on a shared machine moves every figure: print the load beside them. */
void rb_loadavg(const char *when)
{
	char buf[64] = "";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f && fgets(buf, sizeof(buf), f))
		printf("# load average %s: %.*s\n", when, (int)strcspn(buf, " \n"), buf);
	if (f)
		fclose(f);
}

unsigned rb_level_members(const struct rb_opts *o, int level)
{
	return level == 1 ? 2 : o->members;
}

uint64_t rb_drive_wait(struct rb_drive *d, uint64_t bytes)
{
	uint64_t cost = 0, now = rb_now_ns(), start;

	if (d->mbps)
		cost = bytes * 1000 / d->mbps;
	if (d->iops && 1000000000ull / d->iops > cost)
		cost = 1000000000ull / d->iops;
	start = d->busy_until > now ? d->busy_until : now;
	d->busy_until = start + cost;
	return d->busy_until - now;
}

void rb_drive_prefix(const struct rb_opts *o, char *out, size_t len)
{
	int n = 0;

	out[0] = 0;
	if (!o || (!o->drive_mbps && !o->drive_iops))
		return;
	n = snprintf(out, len, "faulty:");
	if (o->drive_mbps)
		n += snprintf(out + n, len - (size_t)n, "mbps=%llu%s",
			      (unsigned long long)o->drive_mbps, o->drive_iops ? "," : "");
	if (o->drive_iops)
		n += snprintf(out + n, len - (size_t)n, "iops=%llu",
			      (unsigned long long)o->drive_iops);
	snprintf(out + n, len - (size_t)n, ":");
}
