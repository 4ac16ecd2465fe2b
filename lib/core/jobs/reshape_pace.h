/* SPDX-License-Identifier: MIT */
/*
 * How fast a reshape job moves (docs/RESHAPE.md, "Pacing"): the rebuild's rate limits, and by
 * default a share of the members' time while foreground I/O runs.
 */
#ifndef LIBGRAID_CORE_RESHAPE_PACE_H
#define LIBGRAID_CORE_RESHAPE_PACE_H

#include <stdatomic.h>
#include <stdint.h>

#include "array/array.h"

/*
 * The job's share of the members' time, in percent, while foreground reads or writes run and
 * no busy rate is set (graid_rebuild_options::busy_bytes_per_sec 0): after a window that took
 * t, it waits t x (100 - share) / share, cut short when the foreground goes quiet.
 */
#define RESHAPE_BUSY_SHARE_PCT 25u

/* Pacing state: the rate in force, since when, and the bytes moved by then; the last look. */
struct reshape_pace {
	uint64_t rate, t0, bytes0;
	unsigned fg_seen;
};

/* Start pacing a job's move: no rate in force yet, the foreground's requests so far seen. */
void reshape_pace_start(struct graid_array *a, struct reshape_pace *p);

/*
 * After a window: sleep until @p bytes (moved per member since the job began) are due at the
 * rate limit in force (max_bytes_per_sec; busy_bytes_per_sec, if lower, while foreground I/O
 * is in flight); then, with no busy rate set and foreground I/O seen since the last call,
 * give the members back for the share's complement of @p window_ns. Returns early once
 * @p stop is set or the array closes.
 */
void reshape_pace(struct graid_array *a, struct reshape_pace *p, uint64_t bytes,
		  uint64_t window_ns, const atomic_bool *stop);

#if GRAID_FAULT_INJECTION
/* Test seams: every window's time given to reshape_pace(), and the share's sleeps, summed. */
extern _Atomic uint64_t graid__test_pace_window_ns, graid__test_pace_share_ns;
#endif

#endif
