/* SPDX-License-Identifier: MIT */
/*
 * A reshape's visible progress (docs/RESHAPE.md): its events (started, progress, paused,
 * done), its measured rate, and the graid_array_info fields. The job calls the hooks; the
 * job's own logic stays in reshape_grow.c.
 */
#ifndef LIBGRAID_CORE_RESHAPE_PROGRESS_H
#define LIBGRAID_CORE_RESHAPE_PROGRESS_H

#include <stdint.h>

#include "array/array.h"
#include "jobs/job_progress.h"

/* One job's progress: its percent events and the window its rate is measured over. */
struct reshape_progress {
	struct graid_array *a;
	struct array_reshape *rs;
	struct job_progress ev;
	uint64_t t0, pos0;      /* the rate's window: since when, from which position */
	uint64_t t1, pos1;      /* a sample half-way, the next window's start (t1 0: none) */
};

/*
 * The job begins moving (a grow's start or a resume at open) at @p position with
 * @p added members added: RESHAPE_STARTED, the percent already moved passed without events,
 * the routing state marked running, its error cleared.
 */
void reshape_progress_start(struct reshape_progress *p, struct graid_array *a,
			    struct array_reshape *rs, unsigned added, uint64_t position);

/* The recorded position is @p position now: the steps it passed sent, the rate measured. */
void reshape_progress_note(struct reshape_progress *p, uint64_t position);

/*
 * The job ends with @p rc at @p position: RESHAPE_DONE (count: the new size) when the
 * routing state says every byte is in the new geometry, else RESHAPE_PAUSED (error @p rc,
 * count: the percent moved) and the error kept for graid_array_info (not a close's).
 */
void reshape_progress_end(struct reshape_progress *p, int rc, uint64_t position);

/*
 * graid_array_info's reshape fields, from the routing state of @p a (none: all 0). Read
 * before the size: once this says none, array_size() gives the new size.
 */
void reshape_progress_info(struct graid_array *a, struct graid_array_info *i);

#endif /* LIBGRAID_CORE_RESHAPE_PROGRESS_H */
