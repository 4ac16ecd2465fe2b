/* SPDX-License-Identifier: MIT */
/*
 * A rebuild's progress: batches accounted for, checkpoints in the superblocks, pacing against
 * a rate and foreground I/O.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "jobs/rebuild.h"
#include "jobs/rebuild_heal.h"
#include "member/member.h"
#include "meta/array_meta.h"
#include "meta/array_view.h"

/*
 * Is target t still the device this pass began with, as the pass began with it? A failed
 * target may have been replaced (by hand, or by a spare) in the same role, or been
 * unreachable and come back: either starts from row 0, and nothing this pass did counts
 * for it. meta_lock held.
 */
bool rebuild_target_started_over(const struct rebuild_ctx *c, unsigned t)
{
	const struct member *m = &c->a->members[c->target[t]];

	return memcmp(m->dev.uuid, c->target_uuid[t], 16) ||
	       atomic_load(&m->role.outages) != c->target_outages[t];
}

/* ... and still being rebuilt. meta_lock held. */
bool rebuild_target_same(const struct rebuild_ctx *c, unsigned t)
{
	return atomic_load(&c->a->members[c->target[t]].state) == GRAID_MEMBER_REBUILDING &&
	       !rebuild_target_started_over(c, t);
}

static void rebuild_checkpoint(struct graid_array *a, struct rebuild_ctx *c, uint64_t bytes)
{
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned t = 0; t < c->ntarget; t++) {
		struct member *m = &a->members[c->target[t]];

		if (!rebuild_target_same(c, t))
			continue;
		/* The rows below the checkpoint are read from it once it is recorded: durable first. */
		if (member_flush(m) == 0)
			m->role.rebuild_offset = bytes;
	}
	array_write_superblocks(a, 0);
	array_view_publish(a); /* progress, for a status look from outside */
	/* A long rebuild keeps the background thread: it looks at unreachable members here. */
	if (array_reach_interval_ns(a))
		array_reach_poll(a);
	pthread_mutex_unlock(&a->meta_lock);
}

/*
 * Decide the rate limit in force (0: none): the busy limit, if lower, when foreground I/O is
 * in flight or has started since the last decision (a caller issuing one synchronous
 * request after another is busy, even when caught between two). A change of rate starts a
 * new pacing window, so bytes rebuilt at one rate are never paid for, or credited, at the
 * other.
 */
static uint64_t rebuild_rate_window(struct rebuild_ctx *c)
{
	struct graid_array *a = c->a;
	uint64_t rate = atomic_load(&a->rebuild_rate);
	uint64_t busy = atomic_load(&a->rebuild_busy_rate);
	unsigned started = atomic_load(&a->fg_started);
	bool fg = atomic_load(&a->fg_inflight) || started != c->fg_seen;

	c->fg_seen = started;
	if (busy && (!rate || busy < rate) && fg)
		rate = busy;
	if (rate != c->pace_rate) {
		c->pace_rate = rate;
		c->pace_t0 = graid__now_ns();
		c->pace_bytes0 = c->done / c->ntarget;
	}
	return rate;
}

/* When `bytes` (per rebuilt member, since the pass began) are due at the rate in force. */
static uint64_t rebuild_due_ns(const struct rebuild_ctx *c, uint64_t rate, uint64_t bytes)
{
	/* In floating point: bytes x 10^9 passes 2^64 after about 18 GB. */
	return c->pace_t0 + (uint64_t)((double)(bytes - c->pace_bytes0) * 1e9 / (double)rate);
}

/*
 * A pause's sleep is cut into slices this long, and the rate decided again after each: a
 * pause taken at the busy rate ends when the foreground goes quiet (it would otherwise
 * sleep for up to three whole batches at that rate: 36 MiB at 1 MB/s is 36 s), and a
 * close or a changed limit is seen within one slice.
 */
#define REBUILD_PACE_SLICE_NS (50ull * 1000 * 1000)

/* Sleep until the bytes done are due at the rate in force, and as the yield asks. */
void rebuild_pace(struct rebuild_ctx *c)
{
	struct graid_array *a = c->a;
	unsigned yield = atomic_load(&a->rebuild_yield_us);

	while (!atomic_load(&a->closing)) {
		uint64_t rate = c->pace_rate, due, now;

		if (!rate)
			break;
		due = rebuild_due_ns(c, rate, c->done / c->ntarget);
		now = graid__now_ns();
		if (due <= now)
			break;
		if (due - now > REBUILD_PACE_SLICE_NS)
			due = now + REBUILD_PACE_SLICE_NS;
		usleep((useconds_t)((due - now) / 1000));
		rebuild_rate_window(c);
	}
	if (yield && atomic_load(&a->fg_inflight))
		usleep(yield);
}

/* Would rebuild_pace() sleep once `rows` more rows are done? */
bool rebuild_pause_due(struct rebuild_ctx *c, unsigned rows)
{
	struct graid_array *a = c->a;
	uint64_t rate = rebuild_rate_window(c);
	uint64_t bytes = c->done / c->ntarget + (uint64_t)rows * a->lay.chunk;

	if (atomic_load(&a->rebuild_yield_us) && atomic_load(&a->fg_inflight))
		return true;
	return rate && rebuild_due_ns(c, rate, bytes) > graid__now_ns();
}

/*
 * Wait for a slot's writes, release its rows, and account for them: progress, checkpoint.
 * The other slot may be reading meanwhile; its rows lie after these.
 */
int rebuild_finish(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	bool failed[GRAID_MAX_MEMBERS] = { false };
	int rc = mbatch_wait(&c->mb, &s->grp);

	for (size_t i = 0; i < s->nios; i++)
		if (s->buf.ios[i].res != (int)s->buf.ios[i].len)
			failed[s->buf.ios[i].member] = true;
	/* Zeroes where nothing was left are written: recorded lost before anyone may read them. */
	rebuild_heal_record_lost(a, &s->lost, failed);
	stripe_set_release(a, &s->locks);
	s->state = SLOT_FREE;
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned t = 0; (rc == 0 || rc == -ESTALE) && t < c->ntarget; t++) {
		const struct member *m = &a->members[c->target[t]];

		/*
		 * Replaced meanwhile: a new pass starts the new device from row 0, whatever
		 * became of the old one (a later batch's write may have failed it first). A
		 * target that was not replaced and failed ends the rebuild with EIO, even when
		 * another target was replaced.
		 */
		if (rebuild_target_started_over(c, t))
			rc = -ESTALE;
		else if (failed[c->target[t]] ||
			 atomic_load(&m->state) != GRAID_MEMBER_REBUILDING)
			rc = -EIO; /* the new member itself failed */
	}
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		return rc;
	c->done += (uint64_t)s->rows * l->chunk * c->ntarget;
	for (unsigned t = 0; t < c->ntarget; t++)
		atomic_fetch_add(&a->members[c->target[t]].role.copied, (uint64_t)s->rows * l->chunk);
	if (graid__now_ns() - c->last_cp >= REBUILD_CHECKPOINT_NS) {
		rebuild_checkpoint(a, c, (s->row0 + s->rows) * l->chunk);
		c->last_cp = graid__now_ns();
	}
	if (c->fn)
		c->fn(c->arg, c->reported + c->done + c->skipped, c->reported + c->total);
	return 0;
}
