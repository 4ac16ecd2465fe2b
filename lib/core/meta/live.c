/* SPDX-License-Identifier: MIT */
/*
 * The live-data map. A region is recorded used on every writable member, durably, before the
 * first data write to it is issued (so before any is acknowledged); it is recorded unused
 * only after a discard of all of it completed and a flush made that durable, and only if no
 * data write to it started since the discard was queued. A crash can therefore leave a region
 * marked used that holds only zeroes (harmless: it is copied), never the other way round.
 * An instance of region_map.c: what is its own is when a region may be recorded unused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/live.h"

static const struct region_map_kind live_kind = {
	.name = "live-data map",
	/* Regions of at least 256 KiB of a member: a few writes rarely pay for a mark. */
	.min_region_bytes = 256u * 1024,
	/* Epochs 0 and 1 are a region's other discard marks (none, LIVE_CAND_DONE). */
	.first_epoch = 2,
};

void live_free(struct graid_array *a)
{
	struct live *l = a->live;

	if (!l)
		return;
	region_map_free(a, &l->map);
	free(l->cand);
	free(l->cand_seq);
	free(l->last);
	free(l);
	a->live = NULL;
}

int live_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes)
{
	struct live *l;
	int rc;

	a->live = NULL;
	if (bytes == 0)
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	rc = region_map_init(a, &l->map, &live_kind, offset, bytes, region_stripes);
	if (rc) {
		free(l);
		return rc;
	}
	a->live = l;
	l->cand = calloc(l->map.cap, sizeof(*l->cand));
	l->cand_seq = calloc(l->map.cap, sizeof(*l->cand_seq));
	l->last = calloc(l->map.cap, sizeof(*l->last));
	if (!l->cand || !l->cand_seq || !l->last) {
		live_free(a);
		return -ENOMEM;
	}
	return 0;
}

int live_load(struct graid_array *a)
{
	struct live *l = a->live;
	int got;

	if (!l)
		return 0;
	got = region_map_load(a, &l->map);
	if (got < 0)
		return got;
	/* Unreadable everywhere: everything counts as used, which is always safe. */
	if (!got)
		region_map_mark_all(&l->map);
	return 0;
}

int live_write_all(struct graid_array *a)
{
	return region_map_write_all(a, a->live ? &a->live->map : NULL);
}

int live_start_write(struct graid_array *a, uint64_t stripe)
{
	struct live *l = a->live;
	uint64_t r;

	if (!l)
		return 0;
	r = stripe / l->map.region_stripes;
	/*
	 * In this order, all sequentially consistent: a sweep that clears the region either
	 * sees this write in flight (and puts the mark back), or is seen below (and the
	 * region is marked again, under the lock, before the write is issued).
	 */
	atomic_fetch_add(&l->map.inflight[r], 1);
	atomic_store(&l->last[r], atomic_fetch_add(&l->seq, 1) + 1);
	atomic_store(&l->cand[r], 0);
	if (region_map_marked(&l->map, r))
		return 0;
	/* As the bitmap's: a mark no member took refuses the write (a rebuild would skip it). */
	return region_map_mark(a, &l->map, r);
}

void live_end_write(struct graid_array *a, uint64_t stripe)
{
	struct live *l = a->live;

	if (l)
		atomic_fetch_sub(&l->map.inflight[stripe / l->map.region_stripes], 1);
}

/* Array bytes per stripe number (bitmap numbering): a row of data, or one chunk on 1/10. */
static uint64_t live_unit(const struct graid_array *a)
{
	const struct layout *g = &a->lay;

	return (g->level == 1 || g->level == 10) ? g->chunk : (uint64_t)g->chunk * g->ndata;
}

/* Regions wholly inside [off, off+len): [*r0, *r1). */
static void live_covered(const struct graid_array *a, uint64_t off, uint64_t len,
			 uint64_t *r0, uint64_t *r1)
{
	const struct live *l = a->live;
	uint64_t rb = l->map.region_stripes * live_unit(a), end = off + len;

	*r0 = (off + rb - 1) / rb;
	/* The last region may be short: covered when the range runs to the array's end. */
	*r1 = end >= a->lay.array_bytes ? l->map.nregions : end / rb;
	if (*r1 < *r0)
		*r1 = *r0;
}

void live_discard_begin(struct graid_array *a, uint64_t off, uint64_t len, struct live_token *t)
{
	struct live *l = a->live;
	uint64_t r0, r1;

	t->tainted = false;
	if (!l)
		return;
	t->seq = atomic_load(&l->seq);
	live_covered(a, off, len, &r0, &r1);
	/* A write in flight now may land after this discard's zeroes: keep such regions used. */
	for (uint64_t r = r0; r < r1 && !t->tainted; r++)
		t->tainted = atomic_load(&l->map.inflight[r]) != 0;
}

/* Region @p r was zeroed whole since @p t was taken: unused after the next flush, unless written. */
static void live_candidate(struct graid_array *a, struct live *l, uint64_t r,
			   const struct live_token *t)
{
	if (!region_map_marked(&l->map, r) || atomic_load(&l->map.inflight[r]) ||
	    atomic_load(&l->last[r]) > t->seq)
		return;
#if GRAID_FAULT_INJECTION
	if (graid__test_live_marking)
		graid__test_live_marking(a, r);
#else
	(void)a;
#endif
	atomic_store(&l->cand_seq[r], t->seq);
	atomic_store(&l->cand[r], LIVE_CAND_DONE);
	/*
	 * Look again after marking (all sequentially consistent): a write that started between
	 * the look above and the mark cleared nothing, but it has counted itself in flight and
	 * numbered itself after t->seq first, so it is seen here.
	 */
	if (atomic_load(&l->map.inflight[r]) || atomic_load(&l->last[r]) > t->seq)
		atomic_store(&l->cand[r], 0);
}

void live_discard_done(struct graid_array *a, uint64_t off, uint64_t len,
		       const struct live_token *t)
{
	struct live *l = a->live;
	uint64_t r0, r1;

	if (!l || t->tainted)
		return;
	live_covered(a, off, len, &r0, &r1);
	for (uint64_t r = r0; r < r1; r++)
		live_candidate(a, l, r, t);
}

void live_rows_zero_begin(struct graid_array *a, struct live_token *t)
{
	t->tainted = false;
	t->seq = a->live ? atomic_load(&a->live->seq) : 0;
}

void live_rows_zeroed(struct graid_array *a, uint64_t r0, uint64_t r1, const struct live_token *t)
{
	struct live *l = a->live;
	uint64_t step;

	if (!l)
		return;
	step = l->map.region_stripes;
	/* The regions wholly inside; the last may be short, covered when r1 is the end. */
	for (uint64_t r = (r0 + step - 1) / step;
	     r < (r1 >= a->lay.nstripes ? l->map.nregions : r1 / step); r++)
		live_candidate(a, l, r, t);
}

#if GRAID_FAULT_INJECTION
void (*graid__test_live_marking)(struct graid_array *a, uint64_t r);
#endif

struct live_flush live_flush_begin(struct graid_array *a)
{
	struct live *l = a->live;
	struct live_flush f = { 0, 0 };

	if (!l || !region_map_may_write(a))
		return f;
	/*
	 * Numbered and stamped under the lock, so that epochs follow the order in which the
	 * stamps were made: a flush that drew a lower number but stamped after a later one's
	 * members were already flushing would hand that later flush a discard its member
	 * flushes may have missed (a later epoch promotes an earlier one's stamps).
	 */
	pthread_mutex_lock(&l->map.lock);
	f.epoch = region_map_epoch(&l->map);
	for (uint64_t r = 0; r < l->map.nregions; r++) {
		uint32_t done = LIVE_CAND_DONE;

		/* A write that clears the mark meanwhile wins: the exchange then fails. */
		atomic_compare_exchange_strong(&l->cand[r], &done, f.epoch);
	}
	f.seq = atomic_load(&l->seq);
	pthread_mutex_unlock(&l->map.lock);
	return f;
}

void live_sweep(struct graid_array *a, struct live_flush f)
{
	struct live *l = a->live;
	struct region_map_sweep s;

	if (!l || !region_map_may_write(a))
		return;
	region_map_sweep_begin(&l->map, &s);
	for (uint64_t r = 0; r < l->map.nregions; r++) {
		uint32_t stamp = atomic_load(&l->cand[r]);

		/*
		 * Only what a flush of this epoch or an earlier one promoted (serial-number
		 * compare): a discard that completed after this flush began waits for a flush
		 * that began after it.
		 */
		if (stamp < 2 || (int32_t)(f.epoch - stamp) < 0 ||
		    !atomic_compare_exchange_strong(&l->cand[r], &stamp, 0))
			continue;
		atomic_store(&l->map.state[r], 0);
		/*
		 * A write numbered after the discard looked keeps it, finished or not: it counted
		 * itself in flight and numbered itself before it looked at used (see
		 * live_start_write), so one that saw used still 1 is seen here.
		 */
		if (atomic_load(&l->map.inflight[r]) || atomic_load(&l->last[r]) > f.seq ||
		    atomic_load(&l->last[r]) > atomic_load(&l->cand_seq[r])) {
			atomic_store(&l->map.state[r], REGION_MAP_MARKED);
			continue;
		}
		region_map_sweep_clear(&l->map, &s, r);
	}
	region_map_sweep_end(a, &l->map, &s);
}

bool live_row_unused(const struct graid_array *a, uint64_t row)
{
	const struct layout *g = &a->lay;
	const struct live *l = a->live;

	if (!l)
		return false;
	if (g->level != 10)
		return !region_map_marked(&l->map, row / l->map.region_stripes);
	/* RAID-10 numbers array chunks: every chunk any member holds in this row. */
	for (unsigned m = 0; m < a->nmembers; m++) {
		uint64_t arr;

		if (!layout_unmap(g, m, row * g->chunk, &arr) &&
		    region_map_marked(&l->map, arr / g->chunk / l->map.region_stripes))
			return false;
	}
	return true;
}

uint64_t live_used_bytes(const struct graid_array *a)
{
	const struct live *l = a->live;
	uint64_t rb, used = 0;

	if (!l)
		return a->lay.array_bytes;
	rb = l->map.region_stripes * live_unit(a);
	for (uint64_t r = 0; r < l->map.nregions; r++)
		if (region_map_marked(&l->map, r))
			used += r + 1 == l->map.nregions ? a->lay.array_bytes - r * rb : rb;
	return used;
}

/*
 * The live map's own per-region state across a coarsening: a discard's candidacy dropped
 * (the region stays used: a later discard of all of it records it unused again), and a
 * region's last write the latest of the regions it merges (spread back as is on an undo:
 * a later sequence only keeps a region used).
 */
static void live_merge(struct region_map *m, uint64_t nfine, unsigned k, bool undo, void *arg)
{
	struct live *l = arg;
	uint64_t ncoarse = (nfine >> k) + ((nfine & ((1ull << k) - 1)) != 0);

	for (uint64_t r = 0; r < nfine; r++) {
		atomic_store(&l->cand[r], 0);
		atomic_store(&l->cand_seq[r], 0);
	}
	if (undo) {
		/* Downward: region r's source r >> k is below it, not yet overwritten. */
		for (uint64_t r = nfine; r-- > 0;)
			atomic_store(&l->last[r], atomic_load(&l->last[r >> k]));
	} else {
		for (uint64_t i = 0; i < ncoarse; i++) {
			uint64_t top = 0;

			for (uint64_t r = i << k; r < ((i + 1) << k) && r < nfine; r++)
				if (atomic_load(&l->last[r]) > top)
					top = atomic_load(&l->last[r]);
			atomic_store(&l->last[i], top);
		}
		for (uint64_t r = ncoarse; r < nfine; r++)
			atomic_store(&l->last[r], 0);
	}
	(void)m;
}

int live_coarsen(struct graid_array *a, unsigned k, struct region_map_undo *undo)
{
	memset(undo, 0, sizeof(*undo));
	if (!a->live)
		return 0;
	return region_map_coarsen(a, &a->live->map, k, live_merge, a->live, undo);
}

void live_coarsen_undo(struct graid_array *a, struct region_map_undo *undo)
{
	if (a->live)
		region_map_coarsen_undo(&a->live->map, live_merge, a->live, undo);
}
