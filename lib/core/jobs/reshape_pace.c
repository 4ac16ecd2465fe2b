/* SPDX-License-Identifier: MIT */
/*
 * A reshape job's pacing. Two rules, the second a default:
 *
 * - The rebuild's limits (graid_array_set_rebuild_options()): bytes a second per member, the
 *   busy one while requests are in flight. The bytes per member are the moved bytes over the
 *   new member count (about a member's share of the writes). A change of rate starts a new
 *   pacing window, as rebuild_progress.c does, so bytes moved at one rate are never paid for
 *   at another.
 * - With no busy rate set, a share of the members' time while foreground I/O runs: a window
 *   keeps every member busy for as long as it takes (its reads and writes in flight at once),
 *   and a drive serves one I/O after another, so a 4 KiB read arriving then waits behind the
 *   window's chunks. Sleeping three times the window's own time after it leaves the drives
 *   to the foreground three quarters of the time whatever their speed, where a fixed rate
 *   would be too low for NVMe or too high for disks (docs/RESHAPE.md, "Pacing", has the
 *   figures that chose it).
 */
#include <time.h>

#include "common/internal.h"
#include "jobs/reshape_pace.h"

#if GRAID_FAULT_INJECTION
/* Test seams (tests/test_reshape_pace.c): the windows' time and the share's sleeps, summed. */
_Atomic uint64_t graid__test_pace_window_ns, graid__test_pace_share_ns;
#endif

/* Sleeps are cut into slices this long: a stop, a close or a changed rate is seen soon. */
#define RESHAPE_PACE_SLICE_NS (50ull * 1000 * 1000)

static bool pace_stopped(struct graid_array *a, const atomic_bool *stop)
{
	return atomic_load(stop) || atomic_load(&a->closing);
}

static void pace_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* Foreground I/O in flight now, or started since the last look (one synchronous read after another). */
static bool pace_fg_busy(struct graid_array *a, struct reshape_pace *p)
{
	unsigned started = atomic_load(&a->fg_started);
	bool busy = atomic_load(&a->fg_inflight) || started != p->fg_seen;

	p->fg_seen = started;
	return busy;
}

static void pace_rate(struct graid_array *a, struct reshape_pace *p, uint64_t bytes,
		      const atomic_bool *stop)
{
	for (;;) {
		uint64_t rate = atomic_load(&a->rebuild_rate);
		uint64_t busy = atomic_load(&a->rebuild_busy_rate);
		uint64_t due, now = graid__now_ns();

		if (busy && (!rate || busy < rate) && atomic_load(&a->fg_inflight))
			rate = busy;
		if (rate != p->rate) {
			p->rate = rate;
			p->t0 = now;
			p->bytes0 = bytes;
		}
		if (!rate || pace_stopped(a, stop))
			return;
		/* In floating point: bytes x 10^9 passes 2^64 after about 18 GB. */
		due = p->t0 + (uint64_t)((double)(bytes - p->bytes0) * 1e9 / (double)rate);
		if (due <= now)
			return;
		pace_sleep_ns(due - now > RESHAPE_PACE_SLICE_NS ? RESHAPE_PACE_SLICE_NS : due - now);
	}
}

static void pace_share(struct graid_array *a, struct reshape_pace *p, uint64_t window_ns,
		       const atomic_bool *stop)
{
	uint64_t left = window_ns * (100u - RESHAPE_BUSY_SHARE_PCT) / RESHAPE_BUSY_SHARE_PCT;

	if (atomic_load(&a->rebuild_busy_rate) || !pace_fg_busy(a, p))
		return;
	while (left && !pace_stopped(a, stop)) {
		uint64_t ns = left > RESHAPE_PACE_SLICE_NS ? RESHAPE_PACE_SLICE_NS : left;

		pace_sleep_ns(ns);
		left -= ns;
#if GRAID_FAULT_INJECTION
		atomic_fetch_add(&graid__test_pace_share_ns, ns);
#endif
		/* The foreground went quiet: the members are the job's again. */
		if (!pace_fg_busy(a, p))
			return;
	}
}

void reshape_pace_start(struct graid_array *a, struct reshape_pace *p)
{
	*p = (struct reshape_pace){ .fg_seen = atomic_load(&a->fg_started) };
}

void reshape_pace(struct graid_array *a, struct reshape_pace *p, uint64_t bytes,
		  uint64_t window_ns, const atomic_bool *stop)
{
#if GRAID_FAULT_INJECTION
	atomic_fetch_add(&graid__test_pace_window_ns, window_ns);
#endif
	pace_rate(a, p, bytes, stop);
	pace_share(a, p, window_ns, stop);
}
