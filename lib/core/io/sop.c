/* SPDX-License-Identifier: MIT */
/*
 * Stripe operations driven from phase to phase: where one starts, which plan a stripe gets,
 * and what follows when its member I/O drains. The plans are the sop_*.c files below it.
 */
#include <errno.h>

#include "io/lost_write_mirror.h"
#include "io/sop.h"
#include "io/sop_internal.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/meta.h"
#include "meta/stripe_lock.h"

static void sop_lock_and_plan(struct graid_queue *q, struct sop *s);
static bool sop_data_alive(struct graid_queue *q, struct sop *s);

/* Do what a plan left to its driver. */
static void sop_step(struct graid_queue *q, struct sop *s, enum sop_step step)
{
	switch (step) {
	case SOP_STEP_NONE:
		break;
	case SOP_STEP_DRAINED:
		sop_io_done(q, s);
		break;
	case SOP_STEP_LOCK:
		sop_lock_and_plan(q, s);
		break;
	case SOP_STEP_LOG_WAIT:
		s->phase = SOP_JOURNAL_WAIT;
		s->next = q->parked;
		q->parked = s;
		break;
	}
}

/* Under the stripe lock (none for a RAID-0 discard): plan the stripe and issue its I/O. */
static void sop_plan_locked(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;

	s->pending = 0;
	s->read_failed = false;
	s->write_fail = 0;
	s->err = 0;
	s->nlost = 0;
	if (s->plan == PLAN_DEALLOC)
		sop_dealloc_locked(q, s);
	else if ((l->level == 1 || l->level == 10) && s->req->write)
		sop_step(q, s, sop_mirror_write_locked(q, s));
	else if (l->level == 1 || l->level == 10)
		sop_step(q, s, sop_mirror_read(q, s));
	else
		sop_step(q, s, sop_parity_plan(q, s));
}

static void sop_lock_and_plan(struct graid_queue *q, struct sop *s)
{
	s->phase = SOP_PARKED;
	if (!stripe_trylock(q->a, s->stripe, &s->bucket)) {
		s->next = q->parked;
		q->parked = s;
		return;
	}
	s->locked = true;
	sop_plan_locked(q, s);
}

/* The row of layout @p l holding array byte @p off (RAID-0/5/6): a member-offset row. */
static uint64_t sop_row_of(const struct layout *l, uint64_t off)
{
	return off / ((uint64_t)l->chunk * l->ndata);
}

/*
 * A reshape's operation (one chunk, queue_cut_reshape), under its locks: the position read
 * now holds until they are let go, since the job moves a chunk only under them and advances
 * the position before it lets go. Placed by the geometry that holds the chunk now. RAID-0
 * reads or writes straight; RAID-10 reads a copy or writes both, of that geometry (s->lay);
 * RAID-5/6 as any stripe of that geometry, degraded in it where a member is out: every row
 * a window has not written is whole in the old geometry, every row below the position
 * whole in the new one (docs/RESHAPE.md).
 */
static void sop_reshape_plan(struct graid_queue *q, struct sop *s)
{
	const struct array_reshape *rs = s->req->rs;
	uint64_t pos = atomic_load_explicit(&rs->position, memory_order_acquire);
	bool moved = s->arr_off < pos || s->arr_off >= rs->end;
	const struct layout *l = moved ? &rs->new_lay : &rs->old_lay;
	bool alive;

	/* Whole in neither geometry: a staging that failed after STAGED (array.h fence). */
	if (!moved && s->arr_off < atomic_load_explicit(&rs->fence, memory_order_acquire)) {
		sop_finish(q, s, -EIO);
		return;
	}
	s->lay = l;
	s->stripe = sop_row_of(l, s->arr_off);
	if (l->level == 10) {
		/* A chunk, the same stripe in both geometries: its copies by s->lay (sop_mirror.c). */
		sop_plan_locked(q, s);
		return;
	}
	sop_range(l, s);
	alive = sop_data_alive(q, s);
	if (l->nparity == 0 && !alive)
		sop_finish(q, s, -EIO);
	else if (!s->req->write && alive)
		sop_step(q, s, sop_direct_read(q, s));
	else if (s->req->kslot >= 0)
		sop_finish(q, s, -EXDEV);
	else if (l->nparity == 0)
		sop_step(q, s, sop_direct_write(q, s));
	else
		sop_plan_locked(q, s);
}

/*
 * The locks of a reshape's operation. RAID-0 and 10: the stripe lock keyed by the chunk's
 * number (RAID-10's stripe numbering).
 * RAID-5/6: the locks of both rows its chunk lies in (old and new geometry; rows are
 * member-offset rows, so a row number names the same places in both), all or none, so
 * that it never holds one while it waits: the job takes every row lock of a window, old
 * rows read and new rows written, and waits for them.
 */
static bool sop_reshape_trylock(struct graid_queue *q, struct sop *s)
{
	const struct array_reshape *rs = s->req->rs;
	uint64_t ro, rn;

	if (rs->old_lay.nparity == 0) {
		if (!stripe_trylock(q->a, s->arr_off / rs->old_lay.chunk, &s->bucket))
			return false;
		s->locked = true;
		return true;
	}
	ro = sop_row_of(&rs->old_lay, s->arr_off);
	rn = sop_row_of(&rs->new_lay, s->arr_off);
	if (!stripe_trylock(q->a, ro, &s->bucket))
		return false;
	if (stripe_bucket(rn) != s->bucket) {
		if (!stripe_trylock(q->a, rn, &s->bucket2)) {
			stripe_unlock(q->a, s->bucket);
			return false;
		}
		s->locked2 = true;
	}
	s->locked = true;
	return true;
}

static void sop_reshape_start(struct graid_queue *q, struct sop *s)
{
	s->phase = SOP_PARKED;
	if (!sop_reshape_trylock(q, s)) {
		s->next = q->parked;
		q->parked = s;
		return;
	}
	sop_reshape_plan(q, s);
}

bool sop_try_unpark(struct graid_queue *q, struct sop *s)
{
	/*
	 * Waiting for log space holds its locks, a grow's routed operation too (its locks
	 * taken, its geometry chosen): first, or it would try them again and never get them.
	 */
	if (s->phase == SOP_JOURNAL_WAIT) {
		enum sop_step step = sop_write_logged(q, s);

		if (step == SOP_STEP_LOG_WAIT)
			return false;
		sop_step(q, s, step);
		return true;
	}
	if (s->req->rs) {
		if (!sop_reshape_trylock(q, s))
			return false;
		sop_reshape_plan(q, s);
		return true;
	}
	if (s->nrun > 1) {
		if (!sop_run_trylock(q, s))
			return false;
		if (s->plan == PLAN_DEALLOC)
			sop_dealloc_locked(q, s);
		else
			sop_run_plan(q, s);
		return true;
	}
	if (!stripe_trylock(q->a, s->stripe, &s->bucket))
		return false;
	s->locked = true;
	sop_plan_locked(q, s);
	return true;
}

static void sop_run_start(struct graid_queue *q, struct sop *s)
{
	if (!s->dealloc)
		s->plan = PLAN_RUN;
	s->phase = SOP_PARKED;
	if (!sop_run_trylock(q, s)) {
		s->next = q->parked;
		q->parked = s;
	} else if (s->dealloc) {
		sop_dealloc_locked(q, s);
	} else {
		sop_run_plan(q, s);
	}
}

/* Whole stripes of a discard: RAID-0 goes at once, the others under their stripe locks. */
static void sop_dealloc_start(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;

	s->plan = PLAN_DEALLOC;
	if (l->nparity == 0 && l->level != 1 && l->level != 10)
		sop_dealloc_locked(q, s);
	else if (s->nrun > 1)
		sop_run_start(q, s);
	else
		sop_lock_and_plan(q, s);
}

static void sop_recovered_next(struct graid_queue *q, struct sop *s)
{
	sop_step(q, s, sop_recovered(q, s));
}

static void sop_generated_next(struct graid_queue *q, struct sop *s)
{
	sop_step(q, s, sop_write_phase(q, s));
}

void sop_compute_batch(struct graid_queue *q)
{
	sop_batch_recover(q, sop_recovered_next);
	sop_batch_gen(q, sop_generated_next);
}

/*
 * The region is marked dirty on disk before any member sees this write, and data (not
 * zeroes) marks its region used, durably. A mark no member took fails the write before any
 * member sees it (each start is ended by sop_finish all the same).
 */
static int sop_mark_write(struct graid_queue *q, struct sop *s)
{
	int mark_err = 0;

	if (s->req->rs && s->req->write) {
		/*
		 * A reshape's: its chunk is in one of two rows, by the position it reads under
		 * its locks: both rows are marked (conservative; sop_finish ends both).
		 */
		const struct array_reshape *rs = s->req->rs;

		s->rs_rows[0] = sop_row_of(&rs->old_lay, s->arr_off);
		s->rs_rows[1] = sop_row_of(&rs->new_lay, s->arr_off);
		s->rs_marked = true;
		for (unsigned k = 0; k < 2; k++) {
			int rc = bitmap_start_write(q->a, s->rs_rows[k]);

			mark_err = mark_err ? mark_err : rc;
			if (!s->req->zero) {
				rc = live_start_write(q->a, s->rs_rows[k]);
				mark_err = mark_err ? mark_err : rc;
			}
		}
		return mark_err;
	}

	for (unsigned j = 0; s->req->write && j < s->nrun; j++) {
		int rc = bitmap_start_write(q->a, s->stripe + j);

		mark_err = mark_err ? mark_err : rc;
	}
	for (unsigned j = 0; s->req->write && !s->req->zero && j < s->nrun; j++) {
		int rc = live_start_write(q->a, s->stripe + j);

		mark_err = mark_err ? mark_err : rc;
	}
	return mark_err;
}

/* RAID-0/5/6, one stripe: every data chunk it touches can be read where it lies. */
static bool sop_data_alive(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	uint32_t ws, we;
	bool all_alive = true;

	for (unsigned d = 0; d < l->ndata; d++) {
		unsigned m = layout_data_member(l, s->stripe, d);

		if (!sop_span(l, s, d, &ws, &we))
			continue;
		/* A read of a block the member's log records bad: from the others, or -EIO. */
		if (!array_role_readable(q->a, m, (s->stripe + 1) * l->chunk) ||
		    (!s->req->write && badblocks_overlap(q->a, m, sop_member_off(l, s->stripe, ws),
							 we - ws)))
			all_alive = false;
	}
	return all_alive;
}

void sop_start(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;
	bool all_alive;
	int mark_err;

	s->pending = 0;
	s->read_failed = false;
	s->repairing = false;
	s->wmeta_on = false;
	s->nbad = 0;
	s->write_fail = 0;
	s->err = 0;
	s->locked = false;
	s->locked2 = false;
	s->rs_marked = false;
	s->nlocked = 0;
	s->jseq = 0;
	/* A recycled operation must not keep its last plan: parking and unparking read it. */
	s->plan = PLAN_RCW;
	mark_err = sop_mark_write(q, s);
	if (mark_err || atomic_load(&q->a->broken)) {
		sop_finish(q, s, mark_err ? mark_err : -EIO);
	} else if (s->req->rs) {
		sop_reshape_start(q, s);
	} else if (s->dealloc) {
		sop_dealloc_start(q, s);
	} else if (s->nrun > 1) {
		sop_run_start(q, s);
	} else if (l->level == 1 || l->level == 10) {
		if (s->req->write)
			sop_lock_and_plan(q, s);
		else
			sop_step(q, s, sop_mirror_read(q, s));
	} else {
		sop_range(l, s);
		all_alive = sop_data_alive(q, s);
		if (!s->req->write && all_alive)
			sop_step(q, s, sop_direct_read(q, s));
		else if (s->req->kslot >= 0)
			sop_finish(q, s, -EXDEV); /* a kernel's buffer: nothing recovered into it */
		else if (l->nparity == 0 && all_alive)
			sop_step(q, s, sop_direct_write(q, s));
		else if (l->nparity == 0)
			sop_finish(q, s, -EIO);
		else
			sop_lock_and_plan(q, s);
	}
}

/* The members this operation wrote back what they could not read, and are still in. */
static void sop_note_repaired(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = 0;

	/* Nothing written (a mirror repair with no generations to give): nothing repaired. */
	if (!s->nbad || s->write_fail || !s->nwrites)
		return;
	if (l->level == 1 || l->level == 10)
		n = layout_copies(l, s->arr_off, members, moff);
	for (unsigned i = 0; i < s->nbad; i++) {
		uint64_t row = s->stripe, units = (s->hi - s->lo + BBL_UNIT - 1) / BBL_UNIT;

		if (!array_role_writable(q->a, s->bad[i]))
			continue;
		for (unsigned k = 0; k < n; k++)
			if (members[k] == s->bad[i]) {
				row = moff[k] / l->chunk;
				units = (s->arr_len + BBL_UNIT - 1) / BBL_UNIT;
			}
		array_member_read_repaired(q->a, s->bad[i], row, units);
	}
}

/* The member I/O of a plan that needs no stripe work (direct, mirror) is over. */
static void sop_simple_done(struct graid_queue *q, struct sop *s, bool broken)
{
	switch (s->plan) {
	case PLAN_DIRECT_READ:
		if (!s->read_failed) {
			sop_finish(q, s, 0);
			return;
		}
		/* A data member failed under us: read it again the degraded way. */
		sop_release_bufs(q, s);
		if (broken || s->lay->nparity == 0)
			sop_finish(q, s, -EIO);
		else if (s->locked)
			sop_plan_locked(q, s); /* a reshape's: its row locks held already */
		else
			sop_lock_and_plan(q, s);
		return;
	case PLAN_DIRECT_WRITE:
		sop_finish(q, s, s->write_fail ? -EIO : 0);
		return;
	case PLAN_MIRROR_READ:
		/* With generations: a copy behind another is healed as a bad one is. */
		if (!s->repairing && !s->read_failed)
			lost_write_mirror_check(q->a, s);
		if (s->repairing) {
			sop_note_repaired(q, s);
			sop_finish(q, s, 0); /* the read had it; a failed write-back is out */
		} else if (!s->read_failed) {
			if (s->nbad && !q->a->read_only)
				sop_step(q, s, sop_mirror_repair(q, s));
			else
				sop_finish(q, s, 0);
		} else {
			sop_release_bufs(q, s);
			/*
			 * Again under the stripe lock: a read that went stale because a write
			 * overtook it (a checksum's witness) would, unlocked, go stale again
			 * for as long as writes of the member go on.
			 */
			if (s->locked)
				sop_step(q, s, sop_mirror_read(q, s));
			else
				sop_lock_and_plan(q, s);
		}
		return;
	default: /* PLAN_MIRROR_WRITE */
		/* Done if any copy took the write; the failed copies are out of the array now. */
		sop_finish(q, s, s->write_fail < s->nwrites && !broken ? 0 : -EIO);
		return;
	}
}

void sop_io_done(struct graid_queue *q, struct sop *s)
{
	bool broken = atomic_load(&q->a->broken);

	if (s->err) {
		sop_finish(q, s, s->err);
	} else if (s->req->write && array_foreign(q->a)) {
		/*
		 * Another host took the array over while this write was out (a drive refused
		 * part of it for its reservation, or the owner look saw it): whatever landed is
		 * not this handle's to acknowledge, and nothing more of it is written.
		 */
		sop_finish(q, s, -ESTALE);
	} else if (s->req->kslot >= 0 && s->read_failed) {
		/* Nor read again another way: the caller does, through its own memory. */
		sop_finish(q, s, -EXDEV);
	} else if (s->plan == PLAN_DIRECT_READ || s->plan == PLAN_DIRECT_WRITE ||
		   s->plan == PLAN_MIRROR_READ || s->plan == PLAN_MIRROR_WRITE) {
		sop_simple_done(q, s, broken);
	} else if (s->phase == SOP_LOGGING) {
		/* Every entry is durable (or its member is out): now the members in place. */
		if (broken)
			sop_finish(q, s, -EIO);
		else
			sop_step(q, s, sop_write_in_place(q, s));
	} else if (s->phase == SOP_READING && !s->read_failed) {
		sop_compute(q, s);
	} else if (s->phase == SOP_READING) {
		/* Plan again with the failed member out (still holding the stripe lock). */
		sop_release_bufs(q, s);
		sop_plan_locked(q, s);
	} else {
		/* Writing done. A member that failed now is out; its chunk is what parity says. */
		sop_note_repaired(q, s);
		sop_finish(q, s, broken ? -EIO : 0);
	}
}
