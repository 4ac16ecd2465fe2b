/* SPDX-License-Identifier: MIT */
/* Progress events of a rebuild or scrub: one event at each step passed, each step once. */
#include <limits.h>
#include <stdbool.h>

#include "jobs/job_progress.h"
#include "meta/events.h"

void job_progress_init(struct job_progress *p, struct graid_array *a, int type,
		       graid_progress_fn fn, void *arg)
{
	p->a = a;
	p->type = type;
	p->step = atomic_load(&a->event.progress_step);
	p->next = p->step;
	p->member = -1;
	p->base = p->lead = 0;
	p->quiet = false;
	p->fn = fn;
	p->arg = arg;
}

/* Whole percent, rounded down; a total of 0 is all done. */
static unsigned progress_percent(uint64_t done, uint64_t total)
{
	if (done >= total)
		return 100;
	/* done < total: done * 100 overflows only where total / 100 is far from 0. */
	uint64_t pct = done > UINT64_MAX / 100 ? done / (total / 100) : done * 100 / total;

	return pct < 99 ? (unsigned)pct : 99;
}

/* A rebuild's event names its first role being rebuilt (or the one set); a scrub's none. */
static int progress_member(const struct job_progress *p)
{
	if (p->type != GRAID_EVENT_REBUILD_PROGRESS)
		return -1;
	if (p->member >= 0)
		return p->member;
	for (unsigned r = 0; r < p->a->nmembers; r++)
		if (atomic_load(&p->a->members[r].state) == GRAID_MEMBER_REBUILDING)
			return (int)r;
	return -1;
}

/*
 * The steps below 100 that @p pct reaches, then 100 itself once the job is done, whether or
 * not the step divides 100 (a step of 30: 30, 60, 90, 100). Sent or only passed.
 */
static void progress_advance(struct job_progress *p, unsigned pct, bool send)
{
	if (!p->step)
		return;
	for (; p->next <= pct && p->next < 100; p->next += p->step)
		if (send)
			array_event(p->a, p->type, progress_member(p), 0, 0, p->next);
	if (pct == 100 && p->next != UINT_MAX) {
		if (send)
			array_event(p->a, p->type, progress_member(p), 0, 0, 100);
		p->next = UINT_MAX;
	}
}

void job_progress_skip(struct job_progress *p, uint64_t done, uint64_t total)
{
	progress_advance(p, progress_percent(done, total), false);
}

void job_progress_note(struct job_progress *p, uint64_t done, uint64_t total)
{
	uint64_t d = done > p->base ? done - p->base : 0, t = total > p->base ? total - p->base : 0;

	progress_advance(p, progress_percent(p->lead + d, p->lead + t), !p->quiet);
	p->quiet = false;
}

void job_progress_pass(struct job_progress *p, uint64_t base, uint64_t lead)
{
	p->base = base;
	p->lead = lead;
	p->next = p->step;
	p->quiet = lead > 0;
}

void job_progress_fn(void *arg, uint64_t done, uint64_t total)
{
	struct job_progress *p = arg;

	job_progress_note(p, done, total);
	if (p->fn)
		p->fn(p->arg, done, total);
}
