/* SPDX-License-Identifier: MIT */
/* Small shared helpers: transfer rates, sleeping, the library's log, the emulated drive. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_util.h"
#include "rb.h"

void rb_clock_start(struct rb_clock *c)
{
	c->cpu0 = bench_cpu_now();
	c->t0 = bench_now_ns();
}

double rb_clock_rate(const struct rb_clock *c, uint64_t bytes, struct rb_rate *out)
{
	double secs = (double)(bench_now_ns() - c->t0) / 1e9;

	out->mbps = (double)bytes / 1e6 / secs;
	out->cpu_per_gb = (bench_cpu_now() - c->cpu0) / ((double)bytes / 1e9);
	return secs;
}

void rb_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts))
		;
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

unsigned rb_level_members(const struct rb_opts *o, int level)
{
	return level == 1 ? 2 : o->members;
}

uint64_t rb_drive_cost(const struct rb_drive *d, uint64_t bytes)
{
	uint64_t cost = 0;

	if (d->mbps)
		cost = bytes * 1000 / d->mbps;
	if (d->iops && 1000000000ull / d->iops > cost)
		cost = 1000000000ull / d->iops;
	return cost;
}

uint64_t rb_drive_wait(struct rb_drive *d, uint64_t bytes)
{
	uint64_t cost = rb_drive_cost(d, bytes), now = bench_now_ns(), start;

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
