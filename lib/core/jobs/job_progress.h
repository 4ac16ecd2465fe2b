/* SPDX-License-Identifier: MIT */
/* Progress events of a rebuild or scrub, every step the application chose (job_progress.c). */
#ifndef LIBGRAID_CORE_JOB_PROGRESS_H
#define LIBGRAID_CORE_JOB_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

/* One job's progress events, and the caller's own progress callback it passes on to. */
struct job_progress {
	struct graid_array *a;
	int type;              /* GRAID_EVENT_REBUILD_PROGRESS or GRAID_EVENT_SCRUB_PROGRESS */
	unsigned step;         /* percent between events; 0: none */
	unsigned next;         /* the next percent to send: each is sent once, never again */
	int member;            /* the role the events name; -1: the first one REBUILDING */
	uint64_t base;         /* the done and total given count this much before the pass */
	uint64_t lead;         /* and the pass had this much done before it began (a resume) */
	bool quiet;            /* the next note passes its steps without events */
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
/*
 * A pass of a rebuild begins: the done and total notes give from here on count @p base
 * bytes of the passes before; this pass had @p lead bytes done before it began (the rows
 * below a resumed rebuild's checkpoint). Its percent is (lead + done - base) of
 * (lead + total - base), from the first step again; its first note passes the steps the
 * lead reaches without events, as a resumed scrub does.
 */
void job_progress_pass(struct job_progress *p, uint64_t base, uint64_t lead);

#endif /* LIBGRAID_CORE_JOB_PROGRESS_H */
