/* SPDX-License-Identifier: MIT */
/*
 * The write-intent bitmap: a region is marked dirty on every member before the first write to
 * it, and cleared lazily (a flush after its writes have gone quiet). After an unclean
 * shutdown only the dirty regions are resynchronised.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta/bitmap.h"
#include "meta/meta_write.h"
#include "member/member.h"

/* Regions are at least this large, so a stream of small writes rarely pays for a mark. */
#define BITMAP_MIN_REGION (1u << 20)

/* The stripe numbers that writes lock and mark: rows, or array chunks for RAID-10. */
uint64_t bitmap_stripes(const struct graid_array *a)
{
	return a->lay.level == 10 ? a->lay.array_bytes / a->lay.chunk : a->lay.nstripes;
}

/*
 * The region size of an array whose superblocks do not record one (format minor 0): the
 * rule docs/FORMAT.md states, which must never change, since such arrays rely on it.
 */
static uint64_t bitmap_derived_region(const struct graid_array *a, uint64_t bits)
{
	uint64_t nst = bitmap_stripes(a), per = (nst + bits - 1) / bits;

	if (per < BITMAP_MIN_REGION / a->lay.chunk)
		per = BITMAP_MIN_REGION / a->lay.chunk;
	return per ? per : 1;
}

int bitmap_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes)
{
	struct bitmap *b = &a->bitmap;
	uint64_t nst = bitmap_stripes(a), bits = bytes * 8, per;

	memset(b, 0, sizeof(*b));
	if (bytes == 0 || a->lay.level == 0)
		return 0; /* no redundancy, nothing to resync */
	per = region_stripes ? region_stripes : bitmap_derived_region(a, bits);
	/* Divided, not rounded up by adding: a recorded size near 2^64 must not wrap to 0. */
	if (nst / per + (nst % per != 0) > bits) {
		graid__log(GRAID_LOG_ERR, "bitmap: %llu stripes per region need more than its %llu "
					  "bits", (unsigned long long)per, (unsigned long long)bits);
		return -EPROTO;
	}
	b->offset = offset;
	b->bytes = bytes;
	b->region_stripes = per;
	b->nregions = nst / per + (nst % per != 0);
	b->state = calloc(b->nregions, sizeof(*b->state));
	b->inflight = calloc(b->nregions, sizeof(*b->inflight));
	b->quiet_epoch = calloc(b->nregions, sizeof(*b->quiet_epoch));
	atomic_init(&b->resync_from, UINT64_MAX);
	if (posix_memalign((void **)&b->disk, ARRAY_ALIGN, bytes) || !b->state || !b->inflight ||
	    !b->quiet_epoch) {
		bitmap_free(a);
		return -ENOMEM;
	}
	memset(b->disk, 0, bytes);
	pthread_mutex_init(&b->lock, NULL);
	b->enabled = true;
	return 0;
}

void bitmap_free(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;

	/* First: a write given up on may still read the disk image. */
	meta_ring_free(a, b->ring);
	if (b->enabled)
		pthread_mutex_destroy(&b->lock);
	free(b->state);
	free(b->inflight);
	free(b->quiet_epoch);
	free(b->disk);
	memset(b, 0, sizeof(*b));
}

/* Write bitmap block `blk` (4 KiB) to every writable member; b->lock held. */
static int bitmap_write_block(struct graid_array *a, uint64_t blk, struct meta_timed *timed)
{
	struct bitmap *b = &a->bitmap;

	return meta_write_all(a, &b->ring, b->disk + blk * ARRAY_ALIGN, ARRAY_ALIGN,
			      b->offset + blk * ARRAY_ALIGN, "bitmap", timed);
}

static void bitmap_set_disk(struct bitmap *b, uint64_t r, bool on)
{
	if (on)
		b->disk[r / 8] |= (uint8_t)(1u << (r % 8));
	else
		b->disk[r / 8] &= (uint8_t)~(1u << (r % 8));
}

int bitmap_mark_all(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;

	if (!b->enabled)
		return 0;
	for (uint64_t r = 0; r < b->nregions; r++) {
		atomic_fetch_or(&b->state[r], BITMAP_DIRTY);
		bitmap_set_disk(b, r, true);
	}
	return bitmap_write_all(a);
}

/*
 * Make every writable member's bitmap equal to the in-memory one. Each member's copy is read
 * first and only the 4 KiB blocks that differ are written: a clean open, whose bitmaps are
 * nearly always clear already, then costs one read per member instead of a durable write
 * (an fdatasync) per block per member. A copy that cannot be read is written whole.
 */
int bitmap_write_all(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;
	uint8_t *cur;
	int rc = 0;

	/* Taken over by another host: its records, not ours, from now on. */
	if (array_foreign(a))
		return -ESTALE;

	if (!b->enabled)
		return 0;
	if (posix_memalign((void **)&cur, ARRAY_ALIGN, b->bytes))
		return -ENOMEM;
	pthread_mutex_lock(&b->lock);
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];

		if (m->fd < 0 || !array_role_writable(a, i))
			continue;
		if (member_area_match(m, b->disk, cur, b->offset, b->bytes)) {
			graid__log(GRAID_LOG_ERR, "member %u: bitmap write failed", i);
			rc = -EIO;
		}
	}
	pthread_mutex_unlock(&b->lock);
	free(cur);
	return rc;
}


int bitmap_start_write(struct graid_array *a, uint64_t stripe)
{
	struct bitmap *b = &a->bitmap;
	struct meta_timed timed; /* 2 KiB: filled only on the slow path */
	uint64_t r;
	uint8_t old;
	int rc = 0;

	if (!b->enabled)
		return 0;
	r = stripe / b->region_stripes;
	atomic_fetch_add_explicit(&b->inflight[r], 1, memory_order_relaxed);
	/* HOT first: a flush that sees it will not clear the region under this write. */
	old = atomic_fetch_or(&b->state[r], BITMAP_HOT);
	if (old & BITMAP_DIRTY)
		return 0;
	timed.n = 0;
	pthread_mutex_lock(&b->lock);
	/*
	 * DIRTY only once the mark is durable: a second writer of the region that saw it
	 * earlier would issue its data before the mark is on disk. A mark that no member
	 * took leaves the region unmarked (the next writer tries again) and refuses this
	 * write: its data must not reach a member with nothing on disk to say so.
	 */
	if (!(atomic_load(&b->state[r]) & BITMAP_DIRTY)) {
		bitmap_set_disk(b, r, true);
		rc = meta_mark_verdict(bitmap_write_block(a, r / 8 / ARRAY_ALIGN, &timed),
				       "bitmap", r);
		if (rc == 0)
			atomic_fetch_or(&b->state[r], BITMAP_DIRTY);
		else
			bitmap_set_disk(b, r, false);
	}
	pthread_mutex_unlock(&b->lock);
	meta_timed_settle(a, &timed);
	return rc;
}

void bitmap_end_write(struct graid_array *a, uint64_t stripe)
{
	struct bitmap *b = &a->bitmap;

	if (b->enabled)
		atomic_fetch_sub_explicit(&b->inflight[stripe / b->region_stripes], 1,
					  memory_order_release);
}

/*
 * Every layout role active: read from the states themselves, which a failure changes before
 * anything else (nfailed follows a moment later, under meta_lock), so no sweep between the
 * two can clear a mark the failed member will need.
 */
static bool bitmap_all_active(const struct graid_array *a)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		if (atomic_load(&a->members[r].state) != GRAID_MEMBER_ACTIVE)
			return false;
	return true;
}

/*
 * Clearing a mark is safe only where every write the mark covered is durable: it ended
 * before a flush of the members began, and none has started since. A write in flight when
 * the sweep runs is not the only danger: one that ended a moment after the members'
 * fdatasync began is not made durable by it, yet finds the region quiet at the sweep. So
 * the decision is made in two steps around the member flushes. bitmap_flush_begin(), before
 * them, stamps each marked region that has no write in flight with the flush's epoch;
 * bitmap_sweep(), after them, clears only regions stamped by this flush or an earlier one
 * that no write has touched since (a write sets HOT before its first member I/O). A region
 * written since the last flush (HOT) is kept one more flush: its HOT goes, unstamped, so a
 * busy region is not re-marked on every write. Both run under the lock, which orders the
 * epochs as the flushes began. Regions the resync after an unclean open has not reached
 * are left alone: their marks are all that says they may be inconsistent.
 */
uint32_t bitmap_flush_begin(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;
	uint64_t from;
	uint32_t e;

	/* With a role out the sweep clears nothing (the history): nothing to stamp either. */
	if (!b->enabled || a->read_only || !bitmap_all_active(a))
		return 0;
	pthread_mutex_lock(&b->lock);
	/* Epoch 0 means "not stamped": a wrapped counter skips it. */
	e = ++b->flush_epoch ? b->flush_epoch : ++b->flush_epoch;
	from = atomic_load(&b->resync_from);
	for (uint64_t r = 0; r < b->nregions && r < from; r++) {
		uint8_t st = atomic_load(&b->state[r]);

		if (!(st & BITMAP_DIRTY))
			continue;
		/* Read after the state: a write sets inflight before HOT. */
		if (atomic_load_explicit(&b->inflight[r], memory_order_acquire))
			continue;
		if (st & BITMAP_HOT) {
			b->quiet_epoch[r] = 0; /* written since an earlier flush's stamp */
			atomic_fetch_and(&b->state[r], (uint8_t)~BITMAP_HOT);
		} else if (!b->quiet_epoch[r] || (int32_t)(e - b->quiet_epoch[r]) < 0) {
			/*
			 * Unstamped, or a stamp so old (2^31 flushes whose sweeps stopped early:
			 * a role went out between stamp and sweep) that it reads as a later one.
			 */
			b->quiet_epoch[r] = e;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return e;
}

void bitmap_sweep(struct graid_array *a, uint32_t epoch)
{
	struct bitmap *b = &a->bitmap;
	struct meta_timed timed; /* 2 KiB: filled only on the slow path */
	uint64_t first = UINT64_MAX, last = 0, from;

	/*
	 * While a role is not active every mark is kept: the bitmap is then the history of what
	 * was written since, which a member that comes back catches up from (array_recount).
	 */
	if (!b->enabled || a->read_only || !epoch || !bitmap_all_active(a))
		return;
	timed.n = 0;
	pthread_mutex_lock(&b->lock);
	from = atomic_load(&b->resync_from);
	for (uint64_t r = 0; r < b->nregions && r < from; r++) {
		uint32_t stamp = b->quiet_epoch[r];
		uint8_t st;

		/* Stamped by this flush or an earlier one (serial-number compare). */
		if (!stamp || (int32_t)(epoch - stamp) < 0)
			continue;
		st = atomic_load(&b->state[r]);
		if (!(st & BITMAP_DIRTY) || (st & BITMAP_HOT) ||
		    atomic_load_explicit(&b->inflight[r], memory_order_acquire)) {
			b->quiet_epoch[r] = 0; /* a write came after the stamp */
			continue;
		}
		/* A write that sets HOT meanwhile wins: the exchange then fails. */
		if (atomic_compare_exchange_strong(&b->state[r], &st, 0)) {
			b->quiet_epoch[r] = 0;
			bitmap_set_disk(b, r, false);
			if (first == UINT64_MAX)
				first = r;
			last = r;
		}
	}
	for (uint64_t blk = first == UINT64_MAX ? 1 : first / 8 / ARRAY_ALIGN;
	     first != UINT64_MAX && blk <= last / 8 / ARRAY_ALIGN; blk++)
		bitmap_write_block(a, blk, &timed);
	pthread_mutex_unlock(&b->lock);
	meta_timed_settle(a, &timed);
}

void bitmap_resync_pending(struct graid_array *a, uint64_t from)
{
	struct bitmap *b = &a->bitmap;

	if (!b->enabled)
		return;
	pthread_mutex_lock(&b->lock);
	/*
	 * Pending again from @p from: stamps made before (a flush while a role was out, which
	 * swept nothing) predate the resync's writes there, and must not clear those regions.
	 */
	for (uint64_t r = from; r < atomic_load(&b->resync_from) && r < b->nregions; r++)
		b->quiet_epoch[r] = 0;
	atomic_store(&b->resync_from, from);
	pthread_mutex_unlock(&b->lock);
}

/* Read the bitmap of every present member and OR them: a mark on any member counts. */
int bitmap_load(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;
	uint8_t *tmp;
	int got = 0;

	if (!b->enabled)
		return 0;
	if (posix_memalign((void **)&tmp, ARRAY_ALIGN, b->bytes))
		return -ENOMEM;
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];

		if (m->fd < 0 || !array_role_writable(a, i) || m->rejoined)
			continue;
		if (member_pio(m, tmp, b->bytes, b->offset, false))
			continue;
		for (uint64_t k = 0; k < b->bytes; k++)
			b->disk[k] |= tmp[k];
		got++;
	}
	free(tmp);
	for (uint64_t r = 0; r < b->nregions; r++)
		if (b->disk[r / 8] & (1u << (r % 8)))
			atomic_store(&b->state[r], BITMAP_DIRTY);
	return got ? 0 : -EIO;
}

uint64_t bitmap_dirty_regions(const struct graid_array *a)
{
	const struct bitmap *b = &a->bitmap;
	uint64_t n = 0;

	for (uint64_t r = 0; b->enabled && r < b->nregions; r++)
		n += (atomic_load(&b->state[r]) & BITMAP_DIRTY) != 0;
	return n;
}
