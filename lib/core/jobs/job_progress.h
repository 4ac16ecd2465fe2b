/* SPDX-License-Identifier: MIT */
/* Progress events of a rebuild or scrub, every step the application chose (job_progress.c). */
#ifndef LIBGRAID_CORE_JOB_PROGRESS_H
#define LIBGRAID_CORE_JOB_PROGRESS_H

#include <stdint.h>

#include "array/array.h"

/* One job's progress events, and the caller's own progress callback it passes on to. */
struct job_progress {
	struct graid_array *a;
	int type;              /* GRAID_EVENT_REBUILD_PROGRESS or GRAID_EVENT_SCRUB_PROGRESS */
	unsigned step;         /* percent between events; 0: none */
	unsigned next;         /* the next percent to send: each is sent once, never again */
	graid_progress_fn fn;  /* the caller's, or NULL */
	void *arg;
};

/* Begin a job's progress, at the step graid_array_set_event_options() set. */
void job_progress_init(struct job_progress *p, struct graid_array *a, int type,
		       graid_progress_fn fn, void *arg);
/*
 * A graid_progress_fn over a struct job_progress: job_progress_note(), then the caller's
 * callback.
 */
void job_progress_fn(void *arg, uint64_t done, uint64_t total);
/* The steps @p done of @p total passed, sent, one event each. */
void job_progress_note(struct job_progress *p, uint64_t done, uint64_t total);
/* The steps @p done of @p total reaches are passed without events (a scrub that resumes). */
void job_progress_skip(struct job_progress *p, uint64_t done, uint64_t total);

#endif /* LIBGRAID_CORE_JOB_PROGRESS_H */
