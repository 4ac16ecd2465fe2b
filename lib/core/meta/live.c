/* SPDX-License-Identifier: MIT */
/*
 * The live-data map. A region is recorded used on every writable member, durably, before the
 * first data write to it is issued (so before any is acknowledged); it is recorded unused
 * only after a discard of all of it completed and a flush made that durable, and only if no
 * data write to it started since the discard was queued. A crash can therefore leave a region
 * marked used that holds only zeroes (harmless: it is copied), never the other way round.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/meta_write.h"
#include "member/member.h"

/* Regions cover at least this many bytes of each member: a few writes rarely pay a mark. */
#define LIVE_MIN_REGION (256u * 1024)

uint64_t live_default_region(const struct graid_array *a, uint64_t bytes)
{
	uint64_t nst = bitmap_stripes(a), bits = bytes * 8, per = (nst + bits - 1) / bits;
	uint64_t least = LIVE_MIN_REGION / a->lay.chunk;

	if (per < least)
		per = least;
	return per ? per : 1;
}

void live_free(struct graid_array *a)
{
	struct live *l = a->live;

	if (!l)
		return;
	/* First: a write given up on may still read the disk image. */
	meta_ring_free(a, l->ring);
	pthread_mutex_destroy(&l->lock);
	free(l->used);
	free(l->cand);
	free(l->cand_seq);
	free(l->inflight);
	free(l->last);
	free(l->disk);
	free(l);
	a->live = NULL;
}

int live_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes)
{
	uint64_t nst = bitmap_stripes(a), per;
	struct live *l;

	a->live = NULL;
	if (bytes == 0)
		return 0;
	per = region_stripes ? region_stripes : live_default_region(a, bytes);
	if (nst / per + (nst % per != 0) > bytes * 8) {
		graid__log(GRAID_LOG_ERR, "live-data map: %llu stripes per region need more than its "
					  "%llu bits", (unsigned long long)per,
			   (unsigned long long)(bytes * 8));
		return -EPROTO;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	a->live = l;
	l->offset = offset;
	l->bytes = bytes;
	l->region_stripes = per;
	l->nregions = nst / per + (nst % per != 0);
	pthread_mutex_init(&l->lock, NULL);
	l->used = calloc(l->nregions, sizeof(*l->used));
	l->cand = calloc(l->nregions, sizeof(*l->cand));
	l->cand_seq = calloc(l->nregions, sizeof(*l->cand_seq));
	atomic_init(&l->flush_epoch, 1);
	l->inflight = calloc(l->nregions, sizeof(*l->inflight));
	l->last = calloc(l->nregions, sizeof(*l->last));
	if (!l->used || !l->cand || !l->cand_seq || !l->inflight || !l->last ||
	    posix_memalign((void **)&l->disk, ARRAY_ALIGN, bytes)) {
		l->disk = NULL;
		live_free(a);
		return -ENOMEM;
	}
	memset(l->disk, 0, bytes);
	return 0;
}

static void live_set_disk(struct live *l, uint64_t r, bool on)
{
	if (on)
		l->disk[r / 8] |= (uint8_t)(1u << (r % 8));
	else
		l->disk[r / 8] &= (uint8_t)~(1u << (r % 8));
}

/* Write map block @p blk (4 KiB) to every writable member, durably; l->lock held. */
static int live_write_block(struct graid_array *a, uint64_t blk, struct meta_timed *timed)
{
	struct live *l = a->live;

	return meta_write_all(a, &l->ring, l->disk + blk * ARRAY_ALIGN, ARRAY_ALIGN,
			      l->offset + blk * ARRAY_ALIGN, "live-data map", timed);
}

int live_load(struct graid_array *a)
{
	struct live *l = a->live;
	uint8_t *tmp;
	int got = 0;

	if (!l)
		return 0;
	if (posix_memalign((void **)&tmp, ARRAY_ALIGN, l->bytes))
		return -ENOMEM;
	/* A bit set on any member counts: a stale copy can only hold fewer. */
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];

		if (m->fd < 0 || !array_role_writable(a, i))
			continue;
		if (member_pio(m, tmp, l->bytes, l->offset, false))
			continue;
		for (uint64_t k = 0; k < l->bytes; k++)
			l->disk[k] |= tmp[k];
		got++;
	}
	free(tmp);
	for (uint64_t r = 0; r < l->nregions; r++)
		atomic_store(&l->used[r], (l->disk[r / 8] >> (r % 8)) & 1);
	if (!got) {
		/* Unreadable everywhere: everything counts as used, which is always safe. */
		for (uint64_t r = 0; r < l->nregions; r++) {
			atomic_store(&l->used[r], 1);
			live_set_disk(l, r, true);
		}
	}
	return 0;
}

int live_write_all(struct graid_array *a)
{
	struct live *l = a->live;
	uint8_t *cur;
	int rc = 0;

	/* Taken over by another host: its records, not ours, from now on. */
	if (array_foreign(a))
		return -ESTALE;

	if (!l || a->read_only)
		return 0;
	if (posix_memalign((void **)&cur, ARRAY_ALIGN, l->bytes))
		return -ENOMEM;
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];

		if (m->fd < 0 || !array_role_writable(a, i))
			continue;
		if (member_area_match(m, l->disk, cur, l->offset, l->bytes)) {
			graid__log(GRAID_LOG_ERR, "member %u: live-data map write failed", i);
			rc = -EIO;
		}
	}
	pthread_mutex_unlock(&l->lock);
	free(cur);
	return rc;
}

int live_start_write(struct graid_array *a, uint64_t stripe)
{
	struct live *l = a->live;
	struct meta_timed timed; /* 2 KiB: filled only on the slow path */
	uint64_t r;
	int rc = 0;

	if (!l)
		return 0;
	r = stripe / l->region_stripes;
	/*
	 * In this order, all sequentially consistent: a sweep that clears the region either
	 * sees this write in flight (and puts the mark back), or is seen below (and the
	 * region is marked again, under the lock, before the write is issued).
	 */
	atomic_fetch_add(&l->inflight[r], 1);
	atomic_store(&l->last[r], atomic_fetch_add(&l->seq, 1) + 1);
	atomic_store(&l->cand[r], 0);
	if (atomic_load(&l->used[r]))
		return 0;
	timed.n = 0;
	pthread_mutex_lock(&l->lock);
	/* As the bitmap's: a mark no member took refuses the write (a rebuild would skip it). */
	if (!atomic_load(&l->used[r])) {
		live_set_disk(l, r, true);
		rc = meta_mark_verdict(live_write_block(a, r / 8 / ARRAY_ALIGN, &timed),
				       "live-data map", r);
		if (rc == 0)
			atomic_store(&l->used[r], 1);
		else
			live_set_disk(l, r, false);
	}
	pthread_mutex_unlock(&l->lock);
	meta_timed_settle(a, &timed);
	return rc;
}

void live_end_write(struct graid_array *a, uint64_t stripe)
{
	struct live *l = a->live;

	if (l)
		atomic_fetch_sub(&l->inflight[stripe / l->region_stripes], 1);
}

/* Array bytes per stripe number (bitmap numbering): a row of data, or one chunk on 1/10. */
static uint64_t live_unit(const struct graid_array *a)
{
	const struct graid_layout *g = &a->lay;

	return (g->level == 1 || g->level == 10) ? g->chunk : (uint64_t)g->chunk * g->ndata;
}

/* Regions wholly inside [off, off+len): [*r0, *r1). */
static void live_covered(const struct graid_array *a, uint64_t off, uint64_t len,
			 uint64_t *r0, uint64_t *r1)
{
	const struct live *l = a->live;
	uint64_t rb = l->region_stripes * live_unit(a), end = off + len;

	*r0 = (off + rb - 1) / rb;
	/* The last region may be short: covered when the range runs to the array's end. */
	*r1 = end >= a->lay.array_bytes ? l->nregions : end / rb;
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
		t->tainted = atomic_load(&l->inflight[r]) != 0;
}

void live_discard_done(struct graid_array *a, uint64_t off, uint64_t len,
		       const struct live_token *t)
{
	struct live *l = a->live;
	uint64_t r0, r1;

	if (!l || t->tainted)
		return;
	live_covered(a, off, len, &r0, &r1);
	for (uint64_t r = r0; r < r1; r++) {
		if (!atomic_load(&l->used[r]) || atomic_load(&l->inflight[r]) ||
		    atomic_load(&l->last[r]) > t->seq)
			continue;
#if GRAID_FAULT_INJECTION
		if (graid__test_live_marking)
			graid__test_live_marking(a, r);
#endif
		atomic_store(&l->cand_seq[r], t->seq);
		atomic_store(&l->cand[r], LIVE_CAND_DONE);
		/*
		 * Look again after marking (all sequentially consistent): a write that started
		 * between the look above and the mark cleared nothing, but it has counted itself
		 * in flight and numbered itself after t->seq first, so it is seen here.
		 */
		if (atomic_load(&l->inflight[r]) || atomic_load(&l->last[r]) > t->seq)
			atomic_store(&l->cand[r], 0);
	}
}

#if GRAID_FAULT_INJECTION
void (*graid__test_live_marking)(struct graid_array *a, uint64_t r);
#endif

struct live_flush live_flush_begin(struct graid_array *a)
{
	struct live *l = a->live;
	struct live_flush f = { 0, 0 };

	if (!l || a->read_only)
		return f;
	/*
	 * Numbered and stamped under the lock, so that epochs follow the order in which the
	 * stamps were made: a flush that drew a lower number but stamped after a later one's
	 * members were already flushing would hand that later flush a discard its member
	 * flushes may have missed (a later epoch promotes an earlier one's stamps).
	 */
	pthread_mutex_lock(&l->lock);
	/* Epochs 0 and 1 are the other marks: a wrapped counter skips them. */
	do
		f.epoch = atomic_fetch_add(&l->flush_epoch, 1) + 1;
	while (f.epoch < 2);
	for (uint64_t r = 0; r < l->nregions; r++) {
		uint32_t done = LIVE_CAND_DONE;

		/* A write that clears the mark meanwhile wins: the exchange then fails. */
		atomic_compare_exchange_strong(&l->cand[r], &done, f.epoch);
	}
	f.seq = atomic_load(&l->seq);
	pthread_mutex_unlock(&l->lock);
	return f;
}

void live_sweep(struct graid_array *a, struct live_flush f)
{
	struct live *l = a->live;
	struct meta_timed timed; /* 2 KiB: filled only on the slow path */
	uint64_t first = UINT64_MAX, last = 0;

	if (!l || a->read_only)
		return;
	timed.n = 0;
	pthread_mutex_lock(&l->lock);
	for (uint64_t r = 0; r < l->nregions; r++) {
		uint32_t stamp = atomic_load(&l->cand[r]);

		/*
		 * Only what a flush of this epoch or an earlier one promoted (serial-number
		 * compare): a discard that completed after this flush began waits for a flush
		 * that began after it.
		 */
		if (stamp < 2 || (int32_t)(f.epoch - stamp) < 0 ||
		    !atomic_compare_exchange_strong(&l->cand[r], &stamp, 0))
			continue;
		atomic_store(&l->used[r], 0);
		/*
		 * A write numbered after the discard looked keeps it, finished or not: it counted
		 * itself in flight and numbered itself before it looked at used (see
		 * live_start_write), so one that saw used still 1 is seen here.
		 */
		if (atomic_load(&l->inflight[r]) || atomic_load(&l->last[r]) > f.seq ||
		    atomic_load(&l->last[r]) > atomic_load(&l->cand_seq[r])) {
			atomic_store(&l->used[r], 1);
			continue;
		}
		live_set_disk(l, r, false);
		if (first == UINT64_MAX)
			first = r;
		last = r;
	}
	for (uint64_t blk = first == UINT64_MAX ? 1 : first / 8 / ARRAY_ALIGN;
	     first != UINT64_MAX && blk <= last / 8 / ARRAY_ALIGN; blk++)
		live_write_block(a, blk, &timed);
	pthread_mutex_unlock(&l->lock);
	meta_timed_settle(a, &timed);
}

bool live_row_unused(const struct graid_array *a, uint64_t row)
{
	const struct graid_layout *g = &a->lay;
	const struct live *l = a->live;

	if (!l)
		return false;
	if (g->level != 10)
		return !atomic_load(&l->used[row / l->region_stripes]);
	/* RAID-10 numbers array chunks: every chunk any member holds in this row. */
	for (unsigned m = 0; m < a->nmembers; m++) {
		uint64_t arr;

		if (!graid_layout_unmap(g, m, row * g->chunk, &arr) &&
		    atomic_load(&l->used[arr / g->chunk / l->region_stripes]))
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
	rb = l->region_stripes * live_unit(a);
	for (uint64_t r = 0; r < l->nregions; r++)
		if (atomic_load(&l->used[r]))
			used += r + 1 == l->nregions ? a->lay.array_bytes - r * rb : rb;
	return used;
}
