/* SPDX-License-Identifier: MIT */
/* A rebuild pass's rows: which need copying, and the pipeline of batches over them. */
#include <errno.h>
#include <string.h>

#include "io/discard.h"
#include "jobs/rebuild.h"
#include "meta/bitmap.h"
#include "meta/live.h"

/*
 * A catch-up copies only rows of regions the bitmap marks: those are all that was written
 * while the member was out (no mark is cleared while a role is not active).
 */
static bool rebuild_row_needed(const struct rebuild_ctx *c, uint64_t row)
{
	const struct graid_array *a = c->a;
	const struct layout *l = &a->lay;

	if (!c->catchup_only || !a->bitmap.enabled)
		return true;
	if (l->level != 10)
		return bitmap_region_marked(a, row / a->bitmap.map.region_stripes);
	/* RAID-10 marks array chunks: those that land on the target's row. */
	for (unsigned t = 0; t < c->ntarget; t++) {
		uint64_t arr;

		if (!layout_unmap(l, c->target[t], row * l->chunk, &arr) &&
		    bitmap_region_marked(a, arr / l->chunk / a->bitmap.map.region_stripes))
			return true;
	}
	return false;
}

static int rebuild_lock_slot(struct rebuild_ctx *c, struct rebuild_slot *s);

/*
 * Rows whose regions the live-data map records unused read as zeroes on every survivor: the
 * targets get them by deallocation (zeroes written where a target cannot), not by a copy.
 * The rows are locked as a new slot's are (only tried while older slots hold theirs), then
 * checked again, so a write that marked one used meanwhile lands after the zeroing.
 */
static int rebuild_skip_unused(struct rebuild_ctx *c, uint64_t *row)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	const uint64_t most = REBUILD_SKIP_ROWS_MAX;
	struct rebuild_slot tmp;
	uint64_t k = 0, r0 = *row;
	int rc;

	while (r0 + k < l->nstripes && k < most && live_row_unused(a, r0 + k))
		k++;
	if (k == 0)
		return 0;
	memset(&tmp, 0, sizeof(tmp));
	tmp.row0 = r0;
	tmp.rows = (unsigned)k;
	rc = rebuild_lock_slot(c, &tmp);
	if (rc) {
		stripe_set_release(a, &tmp.locks);
		return rc;
	}
	for (k = 0; k < tmp.rows && live_row_unused(a, r0 + k); k++)
		;
	for (unsigned t = 0; rc == 0 && k && t < c->ntarget; t++)
		if (rebuild_target_same(c, t))
			rc = discard_member_sync(a, c->target[t], r0 * l->chunk, k * l->chunk);
	stripe_set_release(a, &tmp.locks);
	c->skipped += k * l->chunk * c->ntarget;
	*row = r0 + k;
	if (rc == 0 && c->fn)
		c->fn(c->arg, c->reported + c->done + c->skipped, c->reported + c->total);
	return rc;
}

/* The first row from @p row on that needs copying (nstripes: none). */
static uint64_t rebuild_next_needed(struct rebuild_ctx *c, uint64_t row)
{
	const struct graid_array *a = c->a;
	uint64_t n = a->lay.nstripes;

	while (row < n && !rebuild_row_needed(c, row)) {
		uint64_t next = row + 1;

		if (a->lay.level != 10) /* a whole unmarked region at once */
			next = (row / a->bitmap.map.region_stripes + 1) * a->bitmap.map.region_stripes;
		if (next > n)
			next = n;
		c->skipped += (next - row) * a->lay.chunk * c->ntarget;
		row = next;
	}
	return row;
}

/*
 * What each target has to receive in all: what it got so far plus the rows from @p start
 * this pass copies (graid_member_info's catchup_total).
 */
void rebuild_note_totals(struct rebuild_ctx *c, uint64_t start)
{
	struct graid_array *a = c->a;
	uint64_t rows = a->lay.nstripes - start, skipped = c->skipped;

	if (c->catchup_only && a->bitmap.enabled) {
		rows = 0;
		for (uint64_t row = rebuild_next_needed(c, start); row < a->lay.nstripes;
		     row = rebuild_next_needed(c, row + 1))
			rows++;
		c->skipped = skipped;
	} else if (a->live) {
		/* A whole rebuild deallocates unused rows instead of copying them. */
		rows = 0;
		for (uint64_t row = start; row < a->lay.nstripes; row++)
			rows += !live_row_unused(a, row);
	}
	for (unsigned t = 0; t < c->ntarget; t++) {
		struct member *m = &a->members[c->target[t]];

		atomic_store(&m->role.copy_total, atomic_load(&m->role.copied) + rows * a->lay.chunk);
	}
}

/* The oldest slot still reading, or NULL. */
static struct rebuild_slot *rebuild_oldest_reading(struct rebuild_ctx *c)
{
	for (unsigned k = 0; k < c->busy; k++) {
		struct rebuild_slot *s = &c->slot[(c->head + k) % REBUILD_SLOTS];

		if (s->state == SLOT_READING)
			return s;
	}
	return NULL;
}

/* Recover a slot whose reads are (or are about to be) done and queue its writes. */
static int rebuild_to_writing(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	int rc = rebuild_finish_reads(c, s);

	return rc ? rc : rebuild_write_slot(c, s);
}

/* Wait for the oldest slot's writes and release it. */
static int rebuild_retire(struct rebuild_ctx *c)
{
	int rc = rebuild_finish(c, &c->slot[c->head]);

	c->head = (c->head + 1) % REBUILD_SLOTS;
	c->busy--;
	return rc;
}

/*
 * Move the pipeline one stage on, waiting as needed: the oldest reading slot gets recovered
 * and its writes queued; with none reading, the oldest slot is retired.
 */
static int rebuild_step(struct rebuild_ctx *c)
{
	struct rebuild_slot *s = rebuild_oldest_reading(c);

	return s ? rebuild_to_writing(c, s) : rebuild_retire(c);
}

/* Let every busy slot run to its end, oldest first. */
static int rebuild_drain(struct rebuild_ctx *c)
{
	int rc = 0;

	while (rc == 0 && c->busy)
		rc = rebuild_step(c);
	return rc;
}

/* Release the oldest slots whose writes have already completed, without waiting. */
static int rebuild_reap(struct rebuild_ctx *c)
{
	int rc = 0;

	while (rc == 0 && c->busy && c->slot[c->head].state == SLOT_WRITING &&
	       mbatch_poll(&c->mb, &c->slot[c->head].grp))
		rc = rebuild_retire(c);
	return rc;
}

/*
 * Lock a new slot's rows while older slots hold theirs. Holding some sets while waiting for
 * another could close a circle with a scrub waiting in order for its own set, so only try;
 * while a bucket stays busy, move the older slots on (they need no new locks) until none is
 * left, then wait like everybody else.
 */
static int rebuild_lock_slot(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;

	rebuild_add_locks(c, s);
	while (c->busy && !stripe_set_trylock(a, &s->locks)) {
		int rc = rebuild_step(c);

		if (rc)
			return rc;
	}
	if (!c->busy)
		stripe_set_lock(a, &s->locks);
	return 0;
}

/* Rows in the busy slots: those a pause would see done once they are drained. */
static unsigned rebuild_rows_busy(const struct rebuild_ctx *c)
{
	unsigned rows = 0;

	for (unsigned k = 0; k < c->busy; k++)
		rows += c->slot[(c->head + k) % REBUILD_SLOTS].rows;
	return rows;
}

/* Every row from `start` on, up to REBUILD_SLOTS batches in flight. */
int rebuild_rows(struct rebuild_ctx *c, uint64_t start)
{
	struct graid_array *a = c->a;
	uint64_t row = start;
	int rc = 0;

	c->head = c->busy = 0;
	while (rc == 0 && (row < a->lay.nstripes || c->busy)) {
		rc = rebuild_reap(c);
		/* Queue the reads of as many new batches as there are free slots. */
		while (rc == 0 && (row = rebuild_next_needed(c, row)) < a->lay.nstripes &&
		       c->busy < REBUILD_SLOTS) {
			struct rebuild_slot *s;

			if (atomic_load(&a->closing)) {
				rc = -ECANCELED;
				break;
			}
			if (array_foreign(a)) {
				rc = -ESTALE; /* another host took the array over */
				break;
			}
			if (!c->catchup_only && live_row_unused(a, row)) {
				rc = rebuild_skip_unused(c, &row);
				continue;
			}
			/*
			 * A rate limit or a yield to foreground I/O pauses here, with every row
			 * released first: a pause must never hold a foreground write up.
			 */
			if (rebuild_pause_due(c, rebuild_rows_busy(c))) {
				rc = rebuild_drain(c);
				if (rc)
					break;
				rebuild_pace(c);
			}
			s = &c->slot[(c->head + c->busy) % REBUILD_SLOTS];
			s->row0 = row;
			row_bad_reset(&s->lost); /* nothing of an earlier batch, or pass, is recorded */
			s->rows = (unsigned)(a->lay.nstripes - row < c->rows_max
						     ? a->lay.nstripes - row
						     : c->rows_max);
			for (unsigned k = 1; k < s->rows; k++)
				if (!rebuild_row_needed(c, row + k) ||
				    (!c->catchup_only && live_row_unused(a, row + k))) {
					s->rows = k; /* a batch is one run of needed rows */
					break;
				}
			rc = rebuild_lock_slot(c, s);
			if (rc)
				break; /* what it holds is released below, with every slot's */
			c->busy++;
			row += s->rows;
			rc = rebuild_start_reads(c, s);
		}
		/*
		 * Then whatever is ready: a batch whose reads are in gets recovered and its
		 * writes queued; with every batch writing, the oldest is waited for; otherwise
		 * wait for the next completion (a read in, or the oldest batch's writes out).
		 */
		if (rc == 0 && c->busy) {
			struct rebuild_slot *s = rebuild_oldest_reading(c);

			if (!s)
				rc = rebuild_retire(c);
			else if (mbatch_poll(&c->mb, &s->grp))
				rc = rebuild_to_writing(c, s);
			else
				rc = mbatch_wait_any(&c->mb);
		}
	}
	/* Whatever ended the loop: let the I/O land, then free every row. */
	for (unsigned i = 0; i < REBUILD_SLOTS; i++) {
		if (c->slot[i].state != SLOT_FREE)
			mbatch_wait(&c->mb, &c->slot[i].grp);
		c->slot[i].state = SLOT_FREE;
		row_bad_reset(&c->slot[i].lost); /* its rows were not all written: not recorded */
		stripe_set_release(a, &c->slot[i].locks);
	}
	c->busy = 0;
	return rc;
}
