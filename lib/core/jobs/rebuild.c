/* SPDX-License-Identifier: MIT */
/* Rebuild members online: batches of stripes, recovered through the engine, checkpointed. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid_backend.h>

#include "meta/bitmap.h"
#include "meta/journal.h"
#include "meta/live.h"
#include "io/discard.h"
#include "io/member_batch.h"
#include "io/row_job.h"
#include "io/stripe_set.h"
#include "jobs/jobs.h"
#include "jobs/rebuild_heal.h"
#include "member/member.h"
#include "meta/array_view.h"
#include "meta/meta.h"

/* A batch holds about this much chunk data in memory (all members of its rows). */
#define REBUILD_SLOT_BYTES (12u << 20)
/* Batches in flight: one being written, one being recovered, one being read. */
#define REBUILD_SLOTS 3
/* The largest member I/O: big enough to be sequential, small enough to keep several queued. */
#define REBUILD_IO_MAX (1u << 20)
/* Unused rows deallocated on the targets under one set of stripe locks, at most. */
#define REBUILD_SKIP_ROWS_MAX 1024u
/* Superblocks get the checkpoint at least this often. */
#define REBUILD_CHECKPOINT_NS (1000000000ull)

/*
 * The batch loop is a pipeline over REBUILD_SLOTS slots, taken in row order: while one
 * batch's writes to the new member are in flight and the next batch is recovered, the batch
 * after it is already being read, so neither the survivors nor the new member wait for the
 * engine. Each slot holds its rows' stripe locks from before its reads are queued until its
 * writes have completed, so a foreground write to one of those rows waits and then lands on
 * the new member after the rebuilt data: never under it.
 */
enum rebuild_slot_state { SLOT_FREE, SLOT_READING, SLOT_WRITING };

struct rebuild_slot {
	uint64_t row0;
	unsigned rows;
	struct row_bufs buf;      /* data member-major: each member's rows are one contiguous run */
	size_t nios;
	struct mbgroup grp;
	struct stripe_set locks;
	enum rebuild_slot_state state; /* not FREE: locks held, the I/O of state on the ring */
	bool have[GRAID_MAX_MEMBERS]; /* parity levels: this member's rows were read */
	/* Units of the targets no member could give (zeroed): recorded once written. */
	struct row_bad lost;
};

/* What a rebuild needs, allocated once. */
struct rebuild_ctx {
	struct graid_array *a;
	unsigned rows_max;
	uint8_t **ptrs;           /* rows_max * nroles pointers, for the engine */
	struct mbatch mb;         /* one ring for the whole rebuild */
	struct row_bad bad;       /* units the slot being recovered could not read */
	struct rebuild_slot slot[REBUILD_SLOTS];
	unsigned head, busy;      /* slot[head .. head + busy) (mod REBUILD_SLOTS), oldest first */
	unsigned target[GRAID_MAX_MEMBERS];
	unsigned ntarget;
	/* Every target only catches up: rows of regions the bitmap does not mark are skipped. */
	bool catchup_only;
	/* Each target's member UUID when the pass began: a device swapped in since is new. */
	uint8_t target_uuid[GRAID_MAX_MEMBERS][16];
	/*
	 * And its outage count: a target that was unreachable and came back since started
	 * over (array_reach.c), and rows this pass copied before may have missed writes.
	 */
	uint64_t target_outages[GRAID_MAX_MEMBERS];
	/* The pass in progress. */
	graid_progress_fn fn;
	void *arg;
	uint64_t done, total, t0, last_cp, batch_ns;
	uint64_t skipped;         /* bytes a catch-up had no need to copy (progress only) */
	uint64_t reported;        /* bytes of earlier passes, reported: progress never goes back */
	/* Pacing: the rate in force, and where its window began (bytes per rebuilt member). */
	uint64_t pace_rate, pace_t0, pace_bytes0;
	unsigned fg_seen;         /* fg_started at the last pacing decision */
};

/* Chunk `i` of the slot's rows for member (parity) or target index (mirror) `who`. */
static uint8_t *rebuild_chunk(const struct rebuild_ctx *c, const struct rebuild_slot *s,
			      unsigned who, unsigned i)
{
	return s->buf.data + ((size_t)who * c->rows_max + i) * c->a->lay.chunk;
}

/*
 * Merge neighbours into one I/O where a member's range and the buffer both continue: a batch
 * becomes a few large sequential I/Os per member instead of one per chunk.
 */
static size_t rebuild_merge(struct mbio *ios, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct mbio *p = k ? &ios[k - 1] : NULL;

		if (p && p->member == ios[i].member && p->write == ios[i].write &&
		    p->off + p->len == ios[i].off && p->buf + p->len == ios[i].buf &&
		    p->len + ios[i].len <= REBUILD_IO_MAX) {
			p->len += ios[i].len;
			continue;
		}
		ios[k++] = ios[i];
	}
	return k;
}

static void rebuild_add_locks(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct graid_layout *l = &c->a->lay;

	for (unsigned i = 0; i < s->rows; i++) {
		if (l->level != 10) {
			stripe_set_add(&s->locks, s->row0 + i);
			continue;
		}
		/* RAID-10: writes lock array chunks; those that land on the target rows. */
		for (unsigned t = 0; t < c->ntarget; t++) {
			uint64_t arr;

			if (!graid_layout_unmap(l, c->target[t], (s->row0 + i) * l->chunk, &arr))
				stripe_set_add(&s->locks, arr / l->chunk);
		}
	}
}

/* RAID-5/6: every live member's rows, one run per member. */
static int rebuild_plan_parity_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	unsigned nlost = 0;

	s->nios = 0;
	for (unsigned m = 0; m < a->nmembers; m++) {
		s->have[m] = array_role_alive(a, m);
		if (!s->have[m]) {
			nlost++;
			continue;
		}
		for (unsigned i = 0; i < s->rows; i++)
			s->buf.ios[s->nios++] = (struct mbio){ .member = m,
							   .buf = rebuild_chunk(c, s, m, i),
							   .len = l->chunk,
							   .off = (s->row0 + i) * l->chunk };
	}
	if (nlost > l->nparity)
		return -EIO; /* more lost than parity can rebuild */
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	return 0;
}

/* RAID-1/10: each target chunk from a live copy, into the target's own run of the slot. */
static int rebuild_plan_mirror_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];

	s->nios = 0;
	for (unsigned t = 0; t < c->ntarget; t++)
		for (unsigned i = 0; i < s->rows; i++) {
			unsigned k, src = GRAID_LAYOUT_NONE;
			uint64_t arr;

			if (graid_layout_unmap(l, c->target[t], (s->row0 + i) * l->chunk, &arr))
				continue; /* a RAID-10 slot no chunk uses */
			k = graid_layout_copies(l, arr, members, moff);
			for (unsigned j = 0; j < k && src == GRAID_LAYOUT_NONE; j++)
				if (array_role_alive(a, members[j]))
					src = j;
			if (src == GRAID_LAYOUT_NONE)
				return -EIO;
			s->buf.ios[s->nios++] = (struct mbio){ .member = members[src],
							   .buf = rebuild_chunk(c, s, t, i),
							   .len = l->chunk, .off = moff[src] };
		}
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	return 0;
}

/* Rotation gives rows different loss patterns: one engine call per pattern. */
static int rebuild_recover(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	unsigned lost[ROW_JOB_ROWS_MAX][2], nlost[ROW_JOB_ROWS_MAX];
	int rc;

	for (unsigned i = 0; i < s->rows; i++) {
		nlost[i] = 0;
		/* Bad blocks in the row: recovered column by column instead (rebuild_heal.c). */
		if (rebuild_heal_parity_needed(a, s->row0 + i, s->have, &c->bad)) {
			for (unsigned r = 0; r < nroles; r++)
				c->ptrs[r] = rebuild_chunk(c, s, graid_layout_role_member(l, s->row0 + i, r), i);
			rc = rebuild_heal_parity_row(a, &c->mb, s->row0 + i, c->ptrs, s->have,
						     c->target, c->ntarget, &c->bad, &s->lost);
			if (rc)
				return rc;
			nlost[i] = 3; /* done */
			continue;
		}
		for (unsigned r = 0; r < nroles; r++) {
			unsigned m = graid_layout_role_member(l, s->row0 + i, r);

			if (!s->have[m])
				lost[i][nlost[i]++] = r; /* at most nparity: checked when planned */
		}
	}
	for (unsigned i = 0; i < s->rows; i++) {
		unsigned ng = 0;

		if (nlost[i] == 0 || nlost[i] == 3)
			continue;
		for (unsigned j = i; j < s->rows; j++) {
			if (nlost[j] != nlost[i] || lost[j][0] != lost[i][0] ||
			    (nlost[i] > 1 && lost[j][1] != lost[i][1]))
				continue;
			for (unsigned r = 0; r < nroles; r++) {
				unsigned m = graid_layout_role_member(l, s->row0 + j, r);

				c->ptrs[ng * nroles + r] = rebuild_chunk(c, s, m, j);
			}
			ng++;
			if (j != i)
				nlost[j] = 3; /* done with this group */
		}
		/* The rebuilt chunks go to the drives, not back to the CPU: past its caches. */
		rc = graid_parity_recover_flags(a->be, l->ndata, l->nparity, l->chunk, ng,
						c->ptrs, nlost[i], lost[i], GRAID_BATCH_F_STREAM);
		if (rc)
			return rc;
	}
	return 0;
}

/* Queue a locked slot's reads of the survivors (or live copies). */
static int rebuild_start_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	int rc = c->a->lay.nparity ? rebuild_plan_parity_reads(c, s)
				   : rebuild_plan_mirror_reads(c, s);

	if (rc == 0)
		rc = mbatch_start(&c->mb, &s->grp, s->buf.ios, s->nios);
	if (rc == 0)
		s->state = SLOT_READING;
	return rc;
}

/*
 * RAID-1/10: chunks whose source copy could not read some units, or records them bad, get
 * those units from another copy, or zeroes recorded lost (rebuild_heal.c).
 */
static int rebuild_heal_mirror(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct graid_layout *l = &c->a->lay;
	int rc = 0;

	for (size_t k = 0; rc == 0 && k < s->nios; k++) {
		const struct mbio *io = &s->buf.ios[k];

		if (c->bad.n == 0 && !badblocks_any(c->a, io->member))
			continue;
		/* A merged read: one target chunk per chunk of it, in the target's own run. */
		for (uint32_t at = 0; rc == 0 && at < io->len; at += l->chunk) {
			uint8_t *buf = io->buf + at;
			size_t idx = (size_t)(buf - s->buf.data) / l->chunk;
			unsigned t = (unsigned)(idx / c->rows_max), i = (unsigned)(idx % c->rows_max);

			rc = rebuild_heal_mirror_chunk(c->a, &c->mb, c->target[t],
						       (s->row0 + i) * l->chunk, buf, io->member,
						       io->off + at, &c->bad, &s->lost);
		}
	}
	return rc;
}

/* Wait for a slot's reads and, for parity levels, recover its lost chunks. */
static int rebuild_finish_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	int rc, tries = 0;

	for (;;) {
		rc = mbatch_wait(&c->mb, &s->grp);
		/* Sectors a survivor cannot read: found 4 KiB at a time, the member kept. */
		row_bad_reset(&c->bad);
		if (rc == 0 && row_heal_any_media(s->buf.ios, s->nios))
			rc = row_heal_narrow(&c->mb, s->buf.ios, s->nios, &c->bad);
		for (size_t i = 0; rc == 0 && i < s->nios; i++)
			if (s->buf.ios[i].res != (int)s->buf.ios[i].len)
				rc = -EAGAIN; /* a survivor failed: plan the batch again without it */
		if (rc != -EAGAIN || ++tries > (int)a->nmembers)
			break;
		row_bad_reset(&s->lost);
		rc = rebuild_start_reads(c, s);
		if (rc)
			break;
	}
	if (rc == 0 && a->lay.nparity)
		rc = rebuild_recover(c, s);
	else if (rc == 0)
		rc = rebuild_heal_mirror(c, s);
	return rc;
}

/* Queue the slot's writes to the targets: one run per target. */
static int rebuild_write_slot(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct graid_layout *l = &c->a->lay;

	s->nios = 0;
	for (unsigned t = 0; t < c->ntarget; t++)
		for (unsigned i = 0; i < s->rows; i++) {
			uint64_t member_off = (s->row0 + i) * l->chunk, arr;
			unsigned who = t;

			if (l->nparity)
				who = c->target[t];
			else if (graid_layout_unmap(l, c->target[t], member_off, &arr))
				continue;
			s->buf.ios[s->nios++] = (struct mbio){ .member = c->target[t], .write = true,
							   .buf = rebuild_chunk(c, s, who, i),
							   .len = l->chunk, .off = member_off };
		}
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	s->state = SLOT_WRITING;
	return mbatch_start(&c->mb, &s->grp, s->buf.ios, s->nios);
}

/*
 * Is target t still the device this pass began with, as the pass began with it? A failed
 * target may have been replaced (by hand, or by a spare) in the same role, or been
 * unreachable and come back: either starts from row 0, and nothing this pass did counts
 * for it. meta_lock held.
 */
static bool rebuild_target_started_over(const struct rebuild_ctx *c, unsigned t)
{
	const struct member *m = &c->a->members[c->target[t]];

	return memcmp(m->uuid, c->target_uuid[t], 16) ||
	       atomic_load(&m->outages) != c->target_outages[t];
}

/* ... and still being rebuilt. meta_lock held. */
static bool rebuild_target_same(const struct rebuild_ctx *c, unsigned t)
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
			m->rebuild_offset = bytes;
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
static void rebuild_pace(struct rebuild_ctx *c)
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
static bool rebuild_pause_due(struct rebuild_ctx *c, unsigned rows)
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
static int rebuild_finish(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
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
		atomic_fetch_add(&a->members[c->target[t]].copied, (uint64_t)s->rows * l->chunk);
	if (graid__now_ns() - c->last_cp >= REBUILD_CHECKPOINT_NS) {
		rebuild_checkpoint(a, c, (s->row0 + s->rows) * l->chunk);
		c->last_cp = graid__now_ns();
	}
	if (c->fn)
		c->fn(c->arg, c->reported + c->done + c->skipped, c->reported + c->total);
	return 0;
}

/*
 * A catch-up copies only rows of regions the bitmap marks: those are all that was written
 * while the member was out (no mark is cleared while a role is not active).
 */
static bool rebuild_row_needed(const struct rebuild_ctx *c, uint64_t row)
{
	const struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;

	if (!c->catchup_only || !a->bitmap.enabled)
		return true;
	if (l->level != 10)
		return bitmap_region_marked(a, row / a->bitmap.region_stripes);
	/* RAID-10 marks array chunks: those that land on the target's row. */
	for (unsigned t = 0; t < c->ntarget; t++) {
		uint64_t arr;

		if (!graid_layout_unmap(l, c->target[t], row * l->chunk, &arr) &&
		    bitmap_region_marked(a, arr / l->chunk / a->bitmap.region_stripes))
			return true;
	}
	return false;
}

/*
 * Rows whose regions the live-data map records unused read as zeroes on every survivor: the
 * targets get them by deallocation (zeroes written where a target cannot), not by a copy.
 * The rows are locked as a new slot's are (only tried while older slots hold theirs), then
 * checked again, so a write that marked one used meanwhile lands after the zeroing.
 */
static int rebuild_lock_slot(struct rebuild_ctx *c, struct rebuild_slot *s);

static int rebuild_skip_unused(struct rebuild_ctx *c, uint64_t *row)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
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
			next = (row / a->bitmap.region_stripes + 1) * a->bitmap.region_stripes;
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
static void rebuild_note_totals(struct rebuild_ctx *c, uint64_t start)
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

		atomic_store(&m->copy_total, atomic_load(&m->copied) + rows * a->lay.chunk);
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
static int rebuild_rows(struct rebuild_ctx *c, uint64_t start)
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

/*
 * One pass over the members that are REBUILDING when it starts. 0 or -errno; *again says
 * whether another pass is due: false only when the pass found nothing to rebuild (spares
 * may take over, or a target be swapped, while a pass runs).
 */
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
			      memcmp(m->uuid, c->target_uuid[t], 16));
	}
	pthread_mutex_unlock(&c->a->meta_lock);
	return any;
}

static int rebuild_pass(struct graid_array *a, struct rebuild_ctx *c, graid_progress_fn fn,
			void *arg, bool *again)
{
	const struct graid_layout *l = &a->lay;
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
			uint64_t row = a->members[m].rebuild_offset / l->chunk;

			c->catchup_only = c->catchup_only && a->members[m].catchup;
			memcpy(c->target_uuid[c->ntarget], a->members[m].uuid, 16);
			c->target_outages[c->ntarget] = atomic_load(&a->members[m].outages);
			c->target[c->ntarget++] = m;
			if (row < start)
				start = row;
		}
	pthread_mutex_unlock(&a->meta_lock);
	*again = c->ntarget > 0;
	if (!*again)
		return 0;
	c->fn = fn;
	c->arg = arg;
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
	if (fn)
		fn(arg, c->reported, c->reported + c->total);
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
		m->rebuild_offset = 0;
		m->catchup = false;
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
	}
	row_bad_free(&c->bad);
	free(c->ptrs);
	free(c);
}

GRAID_API int graid_array_rebuild(struct graid_array *a, graid_progress_fn fn, void *arg)
{
	struct rebuild_ctx *c;
	int rc = 0;

	if (!a)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
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
	/* Spares may take over while a pass runs: pass again until nothing is left. */
	for (bool again = true; rc == 0 && again;)
		rc = rebuild_pass(a, c, fn, arg, &again);
	pthread_mutex_unlock(&a->rebuild_lock);
	rebuild_free(c);
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
