/* SPDX-License-Identifier: MIT */
/* Rebuild members online: passes until no member is left rebuilding, and their end. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/job_progress.h"
#include "jobs/rebuild.h"
#include "meta/array_meta.h"
#include "meta/events.h"
#include "meta/live.h"

/*
 * The pass failed: if a target failed meanwhile and a spare takes its role now (as the
 * worker would), the new device is rebuilt by the next pass instead of this one failing.
 */
static bool rebuild_target_taken_over(struct rebuild_ctx *c)
{
	bool any = false;

	pthread_mutex_lock(&c->a->meta_lock);
	array_roles_takeover_due(c->a);
	for (unsigned t = 0; t < c->ntarget; t++) {
		const struct member *m = &c->a->members[c->target[t]];

		any = any || (atomic_load(&m->state) == GRAID_MEMBER_REBUILDING &&
			      memcmp(m->dev.uuid, c->target_uuid[t], 16));
	}
	pthread_mutex_unlock(&c->a->meta_lock);
	return any;
}

/*
 * One pass over the members that are REBUILDING when it starts. 0 or -errno; *again says
 * whether another pass is due: false only when the pass found nothing to rebuild (spares
 * may take over, or a target be swapped, while a pass runs).
 */
static int rebuild_pass(struct graid_array *a, struct rebuild_ctx *c, struct job_progress *prog,
			bool *again)
{
	const struct layout *l = &a->lay;
	uint64_t start = l->nstripes;
	int rc;

	if (array_foreign(a))
		return -ESTALE; /* another host took the array over */
	c->ntarget = 0;
	c->catchup_only = true;
	pthread_mutex_lock(&a->meta_lock);
	/* Roles failed since (the worker may not have looked yet) take their spares first. */
	array_roles_takeover_due(a);
	for (unsigned m = 0; m < a->nmembers; m++)
		if (atomic_load(&a->members[m].state) == GRAID_MEMBER_REBUILDING) {
			uint64_t row = a->members[m].role.rebuild_offset / l->chunk;

			c->catchup_only = c->catchup_only && a->members[m].role.catchup;
			memcpy(c->target_uuid[c->ntarget], a->members[m].dev.uuid, 16);
			c->target_outages[c->ntarget] = atomic_load(&a->members[m].role.outages);
			c->target[c->ntarget++] = m;
			if (row < start)
				start = row;
		}
	pthread_mutex_unlock(&a->meta_lock);
	*again = c->ntarget > 0;
	if (!*again)
		return 0;
	c->fn = job_progress_fn;
	c->arg = prog;
	c->done = c->skipped = 0;
	rebuild_note_totals(c, start);
	c->total = (l->nstripes - start) * l->chunk * c->ntarget;
	c->t0 = c->last_cp = c->pace_t0 = graid__now_ns();
	c->pace_rate = atomic_load(&a->rebuild_rate);
	c->pace_bytes0 = 0;
	c->fg_seen = atomic_load(&a->fg_started);
	graid__log(GRAID_LOG_NOTICE, "%s of %u member(s) from row %llu of %llu",
		   c->catchup_only ? "catch-up (regions the bitmap marks)" : "rebuild", c->ntarget,
		   (unsigned long long)start, (unsigned long long)l->nstripes);
	/* Events count this pass's roles from 0 %, rows done before a resume included. */
	job_progress_pass(prog, c->reported, start * l->chunk * c->ntarget);
	job_progress_fn(prog, c->reported, c->reported + c->total);
	/* A ring per pass: a member that joined since may need NVMe passthrough entries. */
	rc = mbatch_open(&c->mb, a);
	c->mb.keep_read_errors = true; /* a survivor's bad sector costs a block, not the member */
	/* The new member gets the whole live-data map before any row is skipped on it. */
	if (rc == 0)
		rc = live_write_all(a);
	if (rc == 0)
		rc = rebuild_rows(c, start);
	mbatch_close(&c->mb);
	c->reported += c->done + c->skipped;
	if (array_foreign(a))
		return -ESTALE; /* another host took the array over: not "start again" */
	if (rc && rc != -ECANCELED && rc != -ESTALE && rebuild_target_taken_over(c))
		rc = -ESTALE;
	if (rc == -ESTALE) {
		graid__log(GRAID_LOG_NOTICE, "rebuild: a member being rebuilt was replaced, or came "
					     "back from an outage: starting it again from row 0");
		return 0; /* *again: the caller runs another pass */
	}
	if (rc) {
		if (rc != -ECANCELED) /* closing: the checkpoint resumes it */
			graid__log(GRAID_LOG_ERR, "rebuild stopped: %s", graid_strerror(rc));
		return rc;
	}
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned t = 0; t < c->ntarget; t++) {
		struct member *m = &a->members[c->target[t]];
		int expect = GRAID_MEMBER_REBUILDING;

		if (!rebuild_target_same(c, t))
			continue; /* swapped for a new device at the very end: the next pass */
		m->role.rebuild_offset = 0;
		m->role.catchup = false;
		if (atomic_compare_exchange_strong(&m->state, &expect, GRAID_MEMBER_ACTIVE))
			array_event(a, GRAID_EVENT_REBUILD_DONE, (int)c->target[t], 0, 0, 0);
	}
	a->events++;
	array_recount(a);
	array_write_superblocks(a, 0);
	pthread_mutex_unlock(&a->meta_lock);
	graid__log(GRAID_LOG_NOTICE, "rebuild done: %u member(s) in sync", c->ntarget);
	return 0;
}

static void rebuild_free(struct rebuild_ctx *c)
{
	for (unsigned i = 0; i < REBUILD_SLOTS; i++) {
		row_bufs_free(&c->slot[i].buf);
		row_bad_free(&c->slot[i].lost);
		free(c->slot[i].wmeta);
		c->slot[i].wmeta = NULL;
		c->slot[i].wmeta_cap = 0;
	}
	row_bad_free(&c->bad);
	free(c->ptrs);
	free(c);
}

GRAID_API int graid_array_rebuild(struct graid_array *a, graid_progress_fn fn, void *arg)
{
	struct rebuild_ctx *c;
	struct job_progress prog;
	bool ran;
	int rc = 0;

	if (!a)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	if (array_reshape_holds_jobs(a))
		return -EBUSY; /* after the reshape (the worker runs it then) */
	/* Heap: two stripe sets and the per-member flags are too large for a thread's stack. */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->a = a;
	c->rows_max = row_job_rows(a, REBUILD_SLOT_BYTES);
	pthread_mutex_lock(&a->rebuild_lock);
	for (unsigned i = 0; i < REBUILD_SLOTS && rc == 0; i++)
		rc = row_bufs_alloc(&c->slot[i].buf, a, c->rows_max, false);
	c->ptrs = malloc((size_t)c->rows_max * a->nmembers * sizeof(*c->ptrs));
	if (!c->ptrs)
		rc = -ENOMEM;
	/* Each pass's steps once (docs/OPERATIONS.md), the caller's callback over them all. */
	job_progress_init(&prog, a, GRAID_EVENT_REBUILD_PROGRESS, fn, arg);
	/* Spares may take over while a pass runs: pass again until nothing is left. */
	for (bool again = true; rc == 0 && again;)
		rc = rebuild_pass(a, c, &prog, &again);
	pthread_mutex_unlock(&a->rebuild_lock);
	ran = c->ntarget > 0; /* a pass began on some role: its STOPPED is due */
	rebuild_free(c);
	if (rc && ran)
		array_event_rebuild_stopped(a, rc);
	return rc;
}

GRAID_API int graid_array_set_rebuild_options(struct graid_array *a,
					      const struct graid_rebuild_options *opts)
{
	const size_t v1 = offsetof(struct graid_rebuild_options, busy_bytes_per_sec);

	if (!a || !opts || opts->struct_size < v1)
		return -EINVAL;
	atomic_store(&a->rebuild_rate, opts->max_bytes_per_sec);
	atomic_store(&a->rebuild_yield_us, opts->foreground_yield_us);
	atomic_store(&a->rebuild_busy_rate,
		     opts->struct_size >= sizeof(*opts) ? opts->busy_bytes_per_sec : 0);
	return 0;
}
