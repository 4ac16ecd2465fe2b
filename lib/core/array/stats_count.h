/* SPDX-License-Identifier: MIT */
/* What the I/O paths call to count a completed I/O (io_stats.c). */
#ifndef LIBGRAID_CORE_STATS_COUNT_H
#define LIBGRAID_CORE_STATS_COUNT_H

#include "array/array.h"

/* At allocation: every counter zero from now, the default slow limit. */
void stats_init(struct graid_array *a);
/* A caller's request of enum graid_io_kind @p kind ended; @p start_ns when it was queued. */
void stats_request(struct graid_array *a, unsigned kind, uint64_t bytes, bool failed,
		   uint64_t start_ns);
/*
 * A role's device ended an I/O it began at @p start_ns. Returns 0, or the I/O's milliseconds
 * (at least 1) when it passed the slow limit and this member's MEMBER_SLOW event of the
 * minute is due: the caller sends it (array_event, a layer above this one).
 */
uint64_t stats_member(struct graid_array *a, unsigned member, unsigned kind, uint64_t bytes,
		      bool failed, uint64_t start_ns);

#if GRAID_FAULT_INJECTION
/* Test seam, 0 in use: the shortest time between two MEMBER_SLOW of a member, ns (a minute). */
extern uint64_t graid__test_slow_every_ns;
#endif

#endif
