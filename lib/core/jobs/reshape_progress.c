/* SPDX-License-Identifier: MIT */
/*
 * A reshape's visible progress: events at its start, at every step (graid_event_options,
 * as a rebuild's), at a stop and at its end; the rate it moves at, for the ETA that
 * graid_array_info, the control endpoint's status, graidctl and the metrics report.
 */
#include <errno.h>

#include "jobs/reshape_progress.h"
#include "meta/events.h"

/*
 * The rate is measured from a window start RATE_MIN_NS back at least (a first figure soon
 * after the start). Once the window is RATE_WINDOW_NS long it starts again from a sample
 * taken half-way, so the figure covers the last one to two seconds: a changed rate limit or
 * load shows soon, and one burst of a window's chunks is never the whole figure.
 */
#define RATE_MIN_NS (250ull * 1000 * 1000)
#define RATE_WINDOW_NS (2ull * 1000 * 1000 * 1000)

/* Whole percent, rounded down, 100 only when all is done (job_progress.c's rule). */
static unsigned percent_of(uint64_t done, uint64_t total)
{
	uint64_t pct;

	if (done >= total)
		return 100;
	pct = done > UINT64_MAX / 100 ? done / (total / 100) : done * 100 / total;
	return pct < 99 ? (unsigned)pct : 99;
}

void reshape_progress_start(struct reshape_progress *p, struct graid_array *a,
			    struct array_reshape *rs, unsigned added, uint64_t position)
{
	p->a = a;
	p->rs = rs;
	p->t0 = graid__now_ns();
	p->pos0 = position;
	p->t1 = p->pos1 = 0;
	atomic_store(&rs->rate, 0);
	atomic_store(&rs->error, 0);
	atomic_store(&rs->running, true);
	job_progress_init(&p->ev, a, GRAID_EVENT_RESHAPE_PROGRESS, NULL, NULL);
	array_event(a, GRAID_EVENT_RESHAPE_STARTED, -1, 0, 0, added);
	/* A resumed reshape's steps already passed are not sent again (a resumed scrub's). */
	if (position && position < rs->end)
		job_progress_skip(&p->ev, position, rs->end);
}

void reshape_progress_note(struct reshape_progress *p, uint64_t position)
{
	uint64_t now = graid__now_ns();

	if (now - p->t0 >= RATE_MIN_NS && position >= p->pos0)
		atomic_store(&p->rs->rate,
			     (uint64_t)((double)(position - p->pos0) * 1e9 / (double)(now - p->t0)));
	if (!p->t1 && now - p->t0 >= RATE_WINDOW_NS / 2) {
		p->t1 = now;
		p->pos1 = position;
	}
	if (now - p->t0 >= RATE_WINDOW_NS) {
		p->t0 = p->t1;
		p->pos0 = p->pos1;
		p->t1 = now;
		p->pos1 = position;
	}
	/* 100 is "done": sent by the end once the routing says so, not by the last window. */
	job_progress_note(&p->ev, position < p->rs->end ? position : p->rs->end - 1, p->rs->end);
}

void reshape_progress_end(struct reshape_progress *p, int rc, uint64_t position)
{
	struct array_reshape *rs = p->rs;

	atomic_store(&rs->running, false);
	atomic_store(&rs->rate, 0);
	if (atomic_load(&rs->done)) {
		/* The end's superblock round failed: the routing stays, its error is shown. */
		if (rc)
			atomic_store(&rs->error, rc);
		job_progress_note(&p->ev, rs->end, rs->end); /* 100: the windows stop at 99 */
		array_event(p->a, GRAID_EVENT_RESHAPE_DONE, -1, rc, 0, rs->new_lay.array_bytes);
		return;
	}
	if (rc != -ECANCELED)
		atomic_store(&rs->error, rc ? rc : -EIO);
	/* Every byte moved but the end not recorded: 99, not the 100 of a done reshape. */
	array_event(p->a, GRAID_EVENT_RESHAPE_PAUSED, -1, rc ? rc : -EIO, 0,
		    percent_of(position < rs->end ? position : rs->end - 1, rs->end));
}

void reshape_progress_info(struct graid_array *a, struct graid_array_info *i)
{
	struct array_reshape *rs = atomic_load(&a->reshape);
	uint64_t done, rate;

	i->reshaping = i->reshape_running = i->reshape_error = 0;
	i->reshape_done = i->reshape_total = i->reshape_bytes_per_sec = 0;
	i->reshape_eta_sec = 0;
	/*
	 * Over only once the routing is gone: rs->done is set before the superblock round that
	 * ends it, and until that round is on the members the array keeps its old size (a
	 * failed round keeps it, and the routing, for this open).
	 */
	if (!rs)
		return;
	done = atomic_load(&rs->position);
	i->reshaping = 1;
	i->reshape_total = rs->end;
	i->reshape_done = done < rs->end ? done : rs->end;
	i->reshape_running = atomic_load(&rs->running);
	i->reshape_error = atomic_load(&rs->error);
	if (!i->reshape_running)
		return;
	rate = atomic_load(&rs->rate);
	i->reshape_bytes_per_sec = rate;
	i->reshape_eta_sec = rate ? (rs->end - i->reshape_done + rate - 1) / rate : UINT64_MAX;
}
