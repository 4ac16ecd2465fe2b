/* SPDX-License-Identifier: MIT */
/*
 * A map of regions kept on every member, one bit a region, the copies kept equal: the
 * mechanics the write-intent bitmap (bitmap.c) and the live-data map (live.c) share. A region
 * is recorded on every writable member, durably, before the write that needs the record may
 * go out; it is cleared by a sweep the instance decides on; an open reads the copies back.
 * What a record means, and when it may be cleared, is the instance's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/region_map.h"
#include "member/member.h"

/* The stripe numbers that writes lock and mark: rows, or array chunks for RAID-10. */
uint64_t bitmap_stripes(const struct graid_array *a)
{
	return a->lay.level == 10 ? a->lay.array_bytes / a->lay.chunk : a->lay.nstripes;
}

#if GRAID_FAULT_INJECTION
uint64_t graid__test_region_map_bits;
#endif

/* The bits a map of @p bytes uses: all of them, but for the tests' small maps. */
static uint64_t region_map_bits(uint64_t bytes)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_region_map_bits && graid__test_region_map_bits < bytes * 8)
		return graid__test_region_map_bits;
#endif
	return bytes * 8;
}

uint64_t region_map_default_region(const struct graid_array *a, const struct region_map_kind *k,
				   uint64_t bytes)
{
	uint64_t nst = bitmap_stripes(a), bits = region_map_bits(bytes);
	uint64_t per = (nst + bits - 1) / bits;
	uint64_t least = k->min_region_bytes / a->lay.chunk;

	if (per < least)
		per = least;
	return per ? per : 1;
}

/*
 * Regions the in-memory arrays have room for. RAID-10 numbers array chunks, so a grow adds
 * regions (reshape_grow10.c, region_map_grow): its handles get room for as many as the
 * roles a grow may add (member_cap) bring, within the map's bits. The I/O path reads the
 * arrays without a lock, so they are never moved: the room is made here.
 */
static uint64_t region_map_room(const struct graid_array *a, uint64_t nregions, uint64_t per,
				uint64_t bits)
{
	uint64_t nst, cap;

	if (a->lay.level != 10 || a->member_cap <= a->lay.nmembers)
		return nregions;
	nst = bitmap_stripes(a) / a->lay.nmembers * a->member_cap + a->member_cap;
	cap = nst / per + 1;
	if (cap > bits)
		cap = bits;
	return cap > nregions ? cap : nregions;
}

int region_map_grow(struct region_map *m, uint64_t stripes)
{
	uint64_t n;

	if (!m->kind)
		return 0;
	n = stripes / m->region_stripes + (stripes % m->region_stripes != 0);
	if (n > m->cap)
		return -ENOSPC;
	if (n > m->nregions)
		atomic_store(&m->nregions, n);
	return 0;
}

int region_map_init(struct graid_array *a, struct region_map *m, const struct region_map_kind *k,
		    uint64_t offset, uint64_t bytes, uint64_t region_stripes)
{
	uint64_t nst = bitmap_stripes(a), bits = region_map_bits(bytes), per;

	memset(m, 0, sizeof(*m));
	per = region_stripes ? region_stripes : region_map_default_region(a, k, bytes);
	/* Divided, not rounded up by adding: a recorded size near 2^64 must not wrap to 0. */
	if (nst / per + (nst % per != 0) > bits) {
		graid__log(GRAID_LOG_ERR, "%s: %llu stripes per region need more than its %llu bits",
			   k->name, (unsigned long long)per, (unsigned long long)bits);
		return -EPROTO;
	}
	m->kind = k;
	m->offset = offset;
	m->bytes = bytes;
	m->region_stripes = per;
	m->nregions = nst / per + (nst % per != 0);
	m->cap = region_map_room(a, m->nregions, per, bits);
	m->state = calloc(m->cap, sizeof(*m->state));
	m->inflight = calloc(m->cap, sizeof(*m->inflight));
	if (posix_memalign((void **)&m->disk, ARRAY_ALIGN, bytes))
		m->disk = NULL;
	if (!m->state || !m->inflight || !m->disk) {
		free(m->state);
		free(m->inflight);
		free(m->disk);
		memset(m, 0, sizeof(*m));
		return -ENOMEM;
	}
	memset(m->disk, 0, bytes);
	pthread_mutex_init(&m->lock, NULL);
	return 0;
}

void region_map_free(struct graid_array *a, struct region_map *m)
{
	if (!m->kind)
		return; /* never set up */
	/* First: a write given up on may still read the disk image. */
	meta_ring_free(a, m->ring);
	pthread_mutex_destroy(&m->lock);
	free(m->state);
	free(m->inflight);
	free(m->disk);
	memset(m, 0, sizeof(*m));
}

static void region_map_set_disk(struct region_map *m, uint64_t r, bool on)
{
	if (on)
		m->disk[r / 8] |= (uint8_t)(1u << (r % 8));
	else
		m->disk[r / 8] &= (uint8_t)~(1u << (r % 8));
}

/* Write block @p blk (4 KiB) of the image to every writable member, durably; lock held. */
static int region_map_write_block(struct graid_array *a, struct region_map *m, uint64_t blk,
				  struct meta_timed *timed)
{
	return meta_write_all(a, &m->ring, m->disk + blk * ARRAY_ALIGN, ARRAY_ALIGN,
			      m->offset + blk * ARRAY_ALIGN, m->kind->name, timed);
}

int region_map_mark(struct graid_array *a, struct region_map *m, uint64_t r)
{
	struct meta_timed timed; /* 2 KiB: filled only on the slow path */
	int rc = 0;

	timed.n = 0;
	pthread_mutex_lock(&m->lock);
	/*
	 * Marked in memory only once the mark is durable: a second writer of the region that
	 * saw it earlier would issue its data before the mark is on disk. A mark that no member
	 * took leaves the region unmarked (the next writer tries again) and refuses this write:
	 * its data must not reach a member with nothing on disk to say so.
	 */
	if (!region_map_marked(m, r)) {
		region_map_set_disk(m, r, true);
		rc = meta_mark_verdict(region_map_write_block(a, m, r / 8 / ARRAY_ALIGN, &timed),
				       m->kind->name, r);
		if (rc == 0)
			atomic_fetch_or(&m->state[r], REGION_MAP_MARKED);
		else
			region_map_set_disk(m, r, false);
	}
	pthread_mutex_unlock(&m->lock);
	meta_timed_settle(a, &timed);
	return rc;
}

void region_map_mark_all(struct region_map *m)
{
	pthread_mutex_lock(&m->lock);
	for (uint64_t r = 0; r < m->nregions; r++) {
		atomic_fetch_or(&m->state[r], REGION_MAP_MARKED);
		region_map_set_disk(m, r, true);
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * Whose copies an open reads: the members assembly keeps as current (a role ACTIVE or
 * REBUILDING, as the freshest superblock records it), never one that came back at this open
 * (rejoined), for every instance. A member that came back missed what was done while it was
 * out, marks and clears alike: its copy can lack a mark the others hold, and can hold one
 * they have since cleared (a region resynced, or wholly discarded). OR-ing it in would be
 * harmless for either map (a mark too many costs a resync or a copy, never data), but it is
 * never needed: every mark goes to every writable member, so the current members hold each
 * mark made while it was out, and each one it holds from before it left that still stands.
 * So its copy would only bring back what was rightly cleared; the open then rewrites it
 * (region_map_write_all). docs/FORMAT.md states the rule for both maps.
 */
static bool region_map_copy_counts(const struct graid_array *a, unsigned role)
{
	const struct member *m = &a->members[role];

	return m->dev.fd >= 0 && array_role_writable(a, role) && !m->role.rejoined;
}

int region_map_load(struct graid_array *a, struct region_map *m)
{
	uint8_t *tmp;
	int got = 0;

	if (posix_memalign((void **)&tmp, ARRAY_ALIGN, m->bytes))
		return -ENOMEM;
	for (unsigned i = 0; i < a->nmembers; i++) {
		if (!region_map_copy_counts(a, i) ||
		    member_pio(&a->members[i], tmp, m->bytes, m->offset, false))
			continue;
		for (uint64_t k = 0; k < m->bytes; k++)
			m->disk[k] |= tmp[k];
		got++;
	}
	free(tmp);
	for (uint64_t r = 0; r < m->nregions; r++)
		if (m->disk[r / 8] & (1u << (r % 8)))
			atomic_fetch_or(&m->state[r], REGION_MAP_MARKED);
	return got;
}

/*
 * Each member's copy is read first and only the 4 KiB blocks that differ are written: a
 * clean open, whose copies nearly always match already, then costs one read per member
 * instead of a durable write (an fdatasync) per block per member. A copy that cannot be read
 * is written whole.
 */
int region_map_write_all(struct graid_array *a, struct region_map *m)
{
	uint8_t *cur;
	int rc = 0;

	/* Taken over by another host: its records, not ours, from now on. */
	if (array_foreign(a))
		return -ESTALE;
	/* Its members may be another holder's, or opened without write access. */
	if (!m || !region_map_may_write(a))
		return 0;
	if (posix_memalign((void **)&cur, ARRAY_ALIGN, m->bytes))
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *mb = &a->members[i];

		if (mb->dev.fd < 0 || !array_role_writable(a, i))
			continue;
		if (member_area_match(mb, m->disk, cur, m->offset, m->bytes)) {
			graid__log(GRAID_LOG_ERR, "member %u: %s write failed", i, m->kind->name);
			rc = -EIO;
		}
	}
	pthread_mutex_unlock(&m->lock);
	free(cur);
	return rc;
}

int region_map_write_member(struct graid_array *a, struct region_map *m, struct member *mb)
{
	uint8_t *cur;
	int rc;

	if (array_foreign(a))
		return -ESTALE;
	if (!m || !region_map_may_write(a))
		return 0;
	if (posix_memalign((void **)&cur, ARRAY_ALIGN, m->bytes))
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	rc = member_area_match(mb, m->disk, cur, m->offset, m->bytes);
	pthread_mutex_unlock(&m->lock);
	free(cur);
	if (rc)
		graid__log(GRAID_LOG_ERR, "%s: %s write failed: %s", mb->dev.path, m->kind->name,
			   graid_strerror(rc));
	return rc;
}

uint32_t region_map_epoch(struct region_map *m)
{
	uint32_t e;

	/* A wrapped counter skips the values the instance gives other meanings. */
	do
		e = ++m->flush_epoch;
	while (e < m->kind->first_epoch);
	return e;
}

void region_map_sweep_begin(struct region_map *m, struct region_map_sweep *s)
{
	s->first = UINT64_MAX;
	s->last = 0;
	s->timed.n = 0;
	pthread_mutex_lock(&m->lock);
}

void region_map_sweep_clear(struct region_map *m, struct region_map_sweep *s, uint64_t r)
{
	region_map_set_disk(m, r, false);
	if (s->first == UINT64_MAX)
		s->first = r;
	s->last = r;
}

void region_map_sweep_end(struct graid_array *a, struct region_map *m, struct region_map_sweep *s)
{
	/* A failed clear is harmless (the mark stays on disk): nothing waits for it. */
	for (uint64_t blk = s->first / 8 / ARRAY_ALIGN;
	     s->first != UINT64_MAX && blk <= s->last / 8 / ARRAY_ALIGN; blk++)
		region_map_write_block(a, m, blk, &s->timed);
	pthread_mutex_unlock(&m->lock);
	meta_timed_settle(a, &s->timed);
}

/* ---- coarsening (a RAID-10 grow past the map's bits: docs/RESHAPE.md) -------------------- */

void region_map_or_bits(const uint8_t *fine, uint64_t nfine, unsigned k, uint8_t *out,
			uint64_t bytes)
{
	memset(out, 0, bytes);
	for (uint64_t r = 0; r < nfine; r++)
		if ((fine[r / 8] >> (r % 8)) & 1u) {
			uint64_t c = r >> k;

			if (c / 8 < bytes)
				out[c / 8] |= (uint8_t)(1u << (c % 8));
		}
}

int region_map_doublings(const struct region_map *m, uint64_t stripes, unsigned *k)
{
	for (unsigned d = 0; d < 64; d++) {
		uint64_t per = m->region_stripes << d;

		if (per >> d != m->region_stripes)
			break; /* wrapped */
		if (stripes / per + (stripes % per != 0) <= m->cap) {
			*k = d;
			return 0;
		}
		if (per >= stripes)
			break; /* one region covers everything and still does not fit */
	}
	return -ENOSPC;
}

int region_map_coarsen(struct graid_array *a, struct region_map *m, unsigned k,
		       region_map_merge_fn merge, void *arg, struct region_map_undo *undo)
{
	uint64_t nfine, ncoarse;
	uint8_t *coarse;

	memset(undo, 0, sizeof(*undo));
	if (!m->kind || k == 0)
		return 0;
	pthread_mutex_lock(&m->lock);
	nfine = atomic_load(&m->nregions);
	ncoarse = (nfine >> k) + ((nfine & ((1ull << k) - 1)) != 0);
	/* A write marks its region at its start and ends it at its completion: none may run. */
	for (uint64_t r = 0; r < nfine; r++)
		if (atomic_load(&m->inflight[r])) {
			pthread_mutex_unlock(&m->lock);
			return -EBUSY;
		}
	undo->state = malloc(nfine ? nfine : 1);
	coarse = malloc(m->bytes);
	if (!undo->state || !coarse) {
		pthread_mutex_unlock(&m->lock);
		free(undo->state);
		free(coarse);
		undo->state = NULL;
		return -ENOMEM;
	}
	undo->region_stripes = m->region_stripes;
	undo->nregions = nfine;
	for (uint64_t r = 0; r < nfine; r++)
		undo->state[r] = atomic_load(&m->state[r]);
	/* In place, upward: region i's sources are i << k on, never below a region written. */
	for (uint64_t i = 0; i < ncoarse; i++) {
		uint8_t st = 0;

		for (uint64_t r = i << k; r < ((i + 1) << k) && r < nfine; r++)
			st |= undo->state[r];
		atomic_store(&m->state[i], st);
	}
	for (uint64_t r = ncoarse; r < nfine; r++)
		atomic_store(&m->state[r], 0);
	if (merge)
		merge(m, nfine, k, false, arg);
	/* The image: fine | coarse, a superset of the map at either size (the crash argument). */
	region_map_or_bits(m->disk, nfine, k, coarse, m->bytes);
	for (uint64_t b = 0; b < m->bytes; b++)
		m->disk[b] |= coarse[b];
	free(coarse);
	m->region_stripes <<= k;
	atomic_store(&m->nregions, ncoarse);
	pthread_mutex_unlock(&m->lock);
	return region_map_write_all(a, m);
}

void region_map_coarsen_undo(struct region_map *m, region_map_merge_fn merge, void *arg,
			     struct region_map_undo *undo)
{
	unsigned k = 0;

	if (!m->kind || !undo->state)
		return;
	pthread_mutex_lock(&m->lock);
	while ((undo->region_stripes << k) < m->region_stripes)
		k++;
	for (uint64_t r = 0; r < undo->nregions; r++)
		atomic_store(&m->state[r], undo->state[r]);
	if (merge)
		merge(m, undo->nregions, k, true, arg);
	m->region_stripes = undo->region_stripes;
	atomic_store(&m->nregions, undo->nregions);
	pthread_mutex_unlock(&m->lock);
	free(undo->state);
	undo->state = NULL;
}

int region_map_coarsen_finish(struct graid_array *a, struct region_map *m,
			      struct region_map_undo *undo)
{
	uint64_t n;

	if (!m->kind || !undo->state)
		return 0;
	free(undo->state);
	undo->state = NULL;
	pthread_mutex_lock(&m->lock);
	n = atomic_load(&m->nregions);
	memset(m->disk, 0, m->bytes);
	for (uint64_t r = 0; r < n; r++)
		region_map_set_disk(m, r, region_map_marked(m, r));
	pthread_mutex_unlock(&m->lock);
	return region_map_write_all(a, m);
}
