/* SPDX-License-Identifier: MIT */
/*
 * The write-intent bitmap: a region is marked dirty on every member before the first write to
 * it, and cleared lazily (a flush after its writes have gone quiet). After an unclean
 * shutdown only the dirty regions are resynchronised. An instance of region_map.c: what is
 * its own is when a mark may be cleared (HOT, the flush epochs, the resync still pending).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/bitmap.h"

static const struct region_map_kind bitmap_kind = {
	.name = "bitmap",
	/* Regions of at least 1 MiB of a member: a stream of small writes rarely pays a mark. */
	.min_region_bytes = 1u << 20,
	/* Epoch 0 is "not stamped" (quiet_epoch). */
	.first_epoch = 1,
};

int bitmap_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes)
{
	struct bitmap *b = &a->bitmap;
	int rc;

	memset(b, 0, sizeof(*b));
	if (bytes == 0 || a->lay.level == 0)
		return 0; /* no redundancy, nothing to resync */
	rc = region_map_init(a, &b->map, &bitmap_kind, offset, bytes, region_stripes);
	if (rc)
		return rc;
	atomic_init(&b->resync_from, UINT64_MAX);
	b->quiet_epoch = calloc(b->map.cap, sizeof(*b->quiet_epoch));
	if (!b->quiet_epoch) {
		bitmap_free(a);
		return -ENOMEM;
	}
	b->enabled = true;
	return 0;
}

void bitmap_free(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;

	region_map_free(a, &b->map);
	free(b->quiet_epoch);
	memset(b, 0, sizeof(*b));
}

int bitmap_mark_all(struct graid_array *a)
{
	if (!a->bitmap.enabled)
		return 0;
	region_map_mark_all(&a->bitmap.map);
	return bitmap_write_all(a);
}

int bitmap_write_all(struct graid_array *a)
{
	return region_map_write_all(a, a->bitmap.enabled ? &a->bitmap.map : NULL);
}

int bitmap_start_write(struct graid_array *a, uint64_t stripe)
{
	struct region_map *m = &a->bitmap.map;
	uint64_t r;
	uint8_t old;

	if (!a->bitmap.enabled)
		return 0;
	r = stripe / m->region_stripes;
	atomic_fetch_add_explicit(&m->inflight[r], 1, memory_order_relaxed);
	/* HOT first: a flush that sees it will not clear the region under this write. */
	old = atomic_fetch_or(&m->state[r], BITMAP_HOT);
	if (old & BITMAP_DIRTY)
		return 0;
	return region_map_mark(a, m, r);
}

void bitmap_end_write(struct graid_array *a, uint64_t stripe)
{
	struct region_map *m = &a->bitmap.map;

	if (a->bitmap.enabled)
		atomic_fetch_sub_explicit(&m->inflight[stripe / m->region_stripes], 1,
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
	struct region_map *m = &b->map;
	uint64_t from;
	uint32_t e;

	/* With a role out the sweep clears nothing (the history): nothing to stamp either. */
	if (!b->enabled || !region_map_may_write(a) || !bitmap_all_active(a))
		return 0;
	pthread_mutex_lock(&m->lock);
	e = region_map_epoch(m);
	from = atomic_load(&b->resync_from);
	for (uint64_t r = 0; r < m->nregions && r < from; r++) {
		uint8_t st = atomic_load(&m->state[r]);

		if (!(st & BITMAP_DIRTY))
			continue;
		/* Read after the state: a write sets inflight before HOT. */
		if (atomic_load_explicit(&m->inflight[r], memory_order_acquire))
			continue;
		if (st & BITMAP_HOT) {
			b->quiet_epoch[r] = 0; /* written since an earlier flush's stamp */
			atomic_fetch_and(&m->state[r], (uint8_t)~BITMAP_HOT);
		} else if (!b->quiet_epoch[r] || (int32_t)(e - b->quiet_epoch[r]) < 0) {
			/*
			 * Unstamped, or a stamp so old (2^31 flushes whose sweeps stopped early:
			 * a role went out between stamp and sweep) that it reads as a later one.
			 */
			b->quiet_epoch[r] = e;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return e;
}

void bitmap_sweep(struct graid_array *a, uint32_t epoch)
{
	struct bitmap *b = &a->bitmap;
	struct region_map *m = &b->map;
	struct region_map_sweep s;
	uint64_t from;

	/*
	 * While a role is not active every mark is kept: the bitmap is then the history of what
	 * was written since, which a member that comes back catches up from (array_recount).
	 */
	if (!b->enabled || !region_map_may_write(a) || !epoch || !bitmap_all_active(a))
		return;
	region_map_sweep_begin(m, &s);
	from = atomic_load(&b->resync_from);
	for (uint64_t r = 0; r < m->nregions && r < from; r++) {
		uint32_t stamp = b->quiet_epoch[r];
		uint8_t st;

		/* Stamped by this flush or an earlier one (serial-number compare). */
		if (!stamp || (int32_t)(epoch - stamp) < 0)
			continue;
		st = atomic_load(&m->state[r]);
		if (!(st & BITMAP_DIRTY) || (st & BITMAP_HOT) ||
		    atomic_load_explicit(&m->inflight[r], memory_order_acquire)) {
			b->quiet_epoch[r] = 0; /* a write came after the stamp */
			continue;
		}
		/* A write that sets HOT meanwhile wins: the exchange then fails. */
		if (atomic_compare_exchange_strong(&m->state[r], &st, 0)) {
			b->quiet_epoch[r] = 0;
			region_map_sweep_clear(m, &s, r);
		}
	}
	region_map_sweep_end(a, m, &s);
}

void bitmap_resync_pending(struct graid_array *a, uint64_t from)
{
	struct bitmap *b = &a->bitmap;
	struct region_map *m = &b->map;

	if (!b->enabled)
		return;
	pthread_mutex_lock(&m->lock);
	/*
	 * Pending again from @p from: stamps made before (a flush while a role was out, which
	 * swept nothing) predate the resync's writes there, and must not clear those regions.
	 */
	for (uint64_t r = from; r < atomic_load(&b->resync_from) && r < m->nregions; r++)
		b->quiet_epoch[r] = 0;
	atomic_store(&b->resync_from, from);
	pthread_mutex_unlock(&m->lock);
}

int bitmap_load(struct graid_array *a)
{
	int got;

	if (!a->bitmap.enabled)
		return 0;
	got = region_map_load(a, &a->bitmap.map);
	/* No copy read: which regions a crash left inconsistent is unknown. */
	return got < 0 ? got : got ? 0 : -EIO;
}

uint64_t bitmap_dirty_regions(const struct graid_array *a)
{
	const struct bitmap *b = &a->bitmap;
	uint64_t n = 0;

	for (uint64_t r = 0; b->enabled && r < b->map.nregions; r++)
		n += region_map_marked(&b->map, r);
	return n;
}

/*
 * The bitmap's own per-region state across a coarsening: every stamp dropped (a stamp is a
 * promise about the region it was made for; unstamped, a region waits one more flush), and
 * the resync still pending from the region that holds its first one.
 */
static void bitmap_merge(struct region_map *m, uint64_t nfine, unsigned k, bool undo, void *arg)
{
	struct bitmap *b = arg;
	uint64_t from = atomic_load(&b->resync_from);

	for (uint64_t r = 0; r < nfine; r++)
		b->quiet_epoch[r] = 0;
	if (from != UINT64_MAX)
		atomic_store(&b->resync_from, undo ? from << k : from >> k);
	(void)m;
}

int bitmap_coarsen(struct graid_array *a, unsigned k, struct region_map_undo *undo)
{
	memset(undo, 0, sizeof(*undo));
	if (!a->bitmap.enabled)
		return 0;
	return region_map_coarsen(a, &a->bitmap.map, k, bitmap_merge, &a->bitmap, undo);
}

void bitmap_coarsen_undo(struct graid_array *a, struct region_map_undo *undo)
{
	if (a->bitmap.enabled)
		region_map_coarsen_undo(&a->bitmap.map, bitmap_merge, &a->bitmap, undo);
}
