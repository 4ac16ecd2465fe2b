/* SPDX-License-Identifier: MIT */
/*
 * A RAID-10 grow whose region maps are too small for the grown chunk count at their region
 * size (docs/RESHAPE.md, "Coarsening the region maps"): the maps are made coarser at the
 * start (region size doubled, a new bit the OR of the old ones) with the array quiesced
 * (lib/core/io/quiesce.c). Before, such a grow was refused -ENOSPC (the seam
 * graid__test_grow10_no_coarsen shows that refusal still). The maps are made small with
 * the seam graid__test_region_map_bits (8 bits), so a 4 MiB array needs a coarser map to
 * grow 4 -> 6: the live map's regions go 48 -> 96 chunks, the bitmap's 64 -> 128.
 *
 * Here: the OR function and the doublings; the quiesce (held requests, the drain, a queue
 * that is not reaped); the grow with writes running across its start, the coarse map the OR
 * of the fine one in memory and on the members, the superblocks' sizes read back by a
 * reopen; and a crash (fault_writes_cut_after) at every member write of the start.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "cututil.h"
#include "growutil.h"
#include "array/array.h"
#include "io/quiesce.h"
#include "jobs/reshape_grow.h"
#include "jobs/reshape_grow10.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/region_map.h"
#include "testutil.h"

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u
#define MAP_BITS 8u
/* The region sizes the 8-bit maps get at create (48, 64) and after the grow's coarsening. */
#define LIVE_FINE 48u
#define LIVE_COARSE 96u
#define BITMAP_FINE 64u
#define BITMAP_COARSE 128u

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the small-map and cut seams exist only with -Dfault_injection");
#else
	graid__test_region_map_bits = MAP_BITS;
	graid__test_grow10_no_coarsen = false;
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cuts' failures are expected */
#endif
}

static void teardown(void)
{
#if GRAID_FAULT_INJECTION
	graid__test_region_map_bits = 0;
	graid__test_grow10_no_coarsen = false;
#endif
}

/* ---- the OR and the doublings ------------------------------------------------------- */

Test(grow10_maps, or_bits_sets_a_coarse_bit_for_each_marked_fine_one)
{
	/* Fine bits 0, 3, 4, 9 of 11: pairs {0,1} {2,3} {4,5} {8,9} -> coarse 0, 1, 2, 4. */
	uint8_t fine[2] = { 0x19, 0x02 }, out[4];

	region_map_or_bits(fine, 11, 1, out, sizeof(out));
	cr_assert_eq(out[0], 0x17, "k = 1: %#x", out[0]);
	cr_assert_eq(out[1] | out[2] | out[3], 0);
	/* Quads {0..3} {4..7} {8..11}: all three. */
	region_map_or_bits(fine, 11, 2, out, sizeof(out));
	cr_assert_eq(out[0], 0x07, "k = 2: %#x", out[0]);
	/* The last fine bit alone in its pair (bit 10 of 11) still counts. */
	fine[0] = 0;
	fine[1] = 0x04;
	region_map_or_bits(fine, 11, 1, out, sizeof(out));
	cr_assert_eq(out[0], 0x20, "bit 10 -> 5: %#x", out[0]);
	/* Bits past nfine are not read. */
	fine[1] = 0xf8;
	region_map_or_bits(fine, 11, 1, out, sizeof(out));
	cr_assert_eq(out[0], 0);
}

Test(grow10_maps, or_bits_of_random_maps_match_the_definition)
{
	uint64_t seed = 42;

	for (unsigned t = 0; t < 200; t++) {
		uint8_t fine[64], out[64];
		uint64_t nfine = gu_rng(&seed) % (sizeof(fine) * 8) + 1;
		unsigned k = (unsigned)(gu_rng(&seed) % 4) + 1;

		for (unsigned i = 0; i < sizeof(fine); i++)
			fine[i] = (uint8_t)gu_rng(&seed);
		region_map_or_bits(fine, nfine, k, out, sizeof(out));
		for (uint64_t c = 0; c < sizeof(out) * 8; c++) {
			bool want = false;

			for (uint64_t r = c << k; r < ((c + 1) << k) && r < nfine; r++)
				want |= (fine[r / 8] >> (r % 8)) & 1;
			cr_assert_eq((out[c / 8] >> (c % 8)) & 1, want, "nfine %llu k %u bit %llu",
				     (unsigned long long)nfine, k, (unsigned long long)c);
		}
	}
}

Test(grow10_maps, doublings_are_the_fewest_that_fit)
{
	struct region_map m = { .region_stripes = 48, .cap = 8 };
	unsigned k = 99;

	cr_assert_eq(region_map_doublings(&m, 384, &k), 0);
	cr_assert_eq(k, 0, "384 chunks fit 8 regions of 48");
	cr_assert_eq(region_map_doublings(&m, 385, &k), 0);
	cr_assert_eq(k, 1);
	cr_assert_eq(region_map_doublings(&m, 576, &k), 0);
	cr_assert_eq(k, 1, "576 chunks: 6 regions of 96");
	cr_assert_eq(region_map_doublings(&m, 48ull * 8 * 1024, &k), 0);
	cr_assert_eq(k, 10);
	/* A 4 TB RAID-10 of 512 KiB chunks growing to 16 TB: the real 64 KiB live map. */
	m.region_stripes = 16;
	m.cap = 524288;
	cr_assert_eq(region_map_doublings(&m, (16ull << 40) / (512u << 10), &k), 0);
	cr_assert_eq(k, 2);
	/* No room at all: nothing fits. */
	m.cap = 0;
	cr_assert_eq(region_map_doublings(&m, 1, &k), -ENOSPC);
}

/* ---- the quiesce ---------------------------------------------------------------------- */

struct held {
	struct graid_array *a;
	atomic_bool done;
	ssize_t rc;
};

static void *held_write(void *arg)
{
	struct held *h = arg;
	uint8_t *b = aligned_alloc(BLK, BLK);

	memset(b, 0x6b, BLK);
	h->rc = graid_array_write(h->a, b, BLK, 0);
	atomic_store(&h->done, true);
	free(b);
	return NULL;
}

Test(quiesce, a_synchronous_write_waits_until_the_quiesce_ends, .init = setup,
     .fini = teardown)
{
	struct held h = { 0 };
	struct au_set s;
	pthread_t t;

	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &h.a), 0);
	cr_assert_eq(array_quiesce(h.a, QUIESCE_DRAIN_NS), 0);
	cr_assert_eq(array_quiesce(h.a, QUIESCE_DRAIN_NS), -EBUSY, "one quiesce at a time");
	cr_assert_eq(pthread_create(&t, NULL, held_write, &h), 0);
	usleep(50000);
	cr_assert_not(atomic_load(&h.done), "a write went through a quiesced array");
	cr_assert_eq(atomic_load(&h.a->fg_inflight), 0, "a held write is counted");
	array_unquiesce(h.a);
	pthread_join(t, NULL);
	cr_assert_eq(h.rc, (ssize_t)BLK);
	cr_assert_eq(graid_array_close(h.a), 0);
	au_remove(&s);
}

Test(quiesce, a_queue_not_reaped_is_not_waited_for_forever_and_its_owner_gets_eagain,
     .init = setup, .fini = teardown)
{
	struct graid_completion c[2];
	struct graid_array *a;
	struct graid_queue *q;
	uint8_t *b = aligned_alloc(BLK, 2 * BLK);
	struct au_set s;

	memset(b, 0x3c, 2 * BLK);
	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	cr_assert_eq(graid_queue_write(q, b, BLK, 0, 1), 0);
	/* Queued, never reaped: the drain gives up, and nothing stays held. */
	cr_assert_eq(array_quiesce(a, 20ull * 1000 * 1000), -EBUSY);
	cr_assert_not(atomic_load(&a->quiesced));
	cr_assert_eq(graid_queue_submit(q) >= 0, true);
	cr_assert_eq(graid_queue_reap(q, c, 1, 1), 1);
	cr_assert_eq(c[0].result, (int64_t)BLK);
	/* Quiesced with one request in the queue: the next is -EAGAIN (reap, then again). */
	cr_assert_eq(graid_queue_write(q, b, BLK, BLK, 2), 0);
	atomic_store(&a->quiesced, true);
	cr_assert_eq(graid_queue_write(q, b + BLK, BLK, 2 * BLK, 3), -EAGAIN);
	atomic_store(&a->quiesced, false);
	cr_assert_eq(graid_queue_submit(q) >= 0, true);
	cr_assert_eq(graid_queue_reap(q, c, 1, 1), 1);
	cr_assert_eq(graid_queue_destroy(q), 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(b);
	au_remove(&s);
}

/* ---- the grow ------------------------------------------------------------------------- */

/* What must read back, and a writer that overwrites random blocks of it until told. */
struct model {
	uint8_t *bytes;
	uint64_t size;
	int64_t torn;                /* the block of the write a cut caught, or -1 */
	uint8_t torn_new[BLK];
	struct graid_array *a;
	atomic_bool stop;
	uint64_t seed;
	unsigned acked;
	unsigned nap_us;             /* between writes (0: back to back) */
};

static void *writer(void *arg)
{
	struct model *m = arg;
	uint8_t *blk = aligned_alloc(BLK, BLK);

	while (blk && !atomic_load(&m->stop)) {
		uint64_t b = gu_rng(&m->seed) % (m->size / BLK);

		gu_fill(blk, BLK, gu_rng(&m->seed));
		if (graid_array_write(m->a, blk, BLK, b * BLK) != (ssize_t)BLK) {
			m->torn = (int64_t)b;
			memcpy(m->torn_new, blk, BLK);
			break;
		}
		memcpy(m->bytes + b * BLK, blk, BLK);
		m->acked++;
		if (m->nap_us)
			usleep(m->nap_us);
	}
	free(blk);
	return NULL;
}

static void check_model(struct graid_array *a, const struct model *m, const char *when)
{
	uint8_t *got = aligned_alloc(BLK, m->size);

	cr_assert_not_null(got);
	cr_assert_eq(graid_array_read(a, got, m->size, 0), (ssize_t)m->size, "%s: the read", when);
	for (uint64_t at = 0; at < m->size; at += BLK) {
		if (!memcmp(got + at, m->bytes + at, BLK))
			continue;
		cr_assert(m->torn == (int64_t)(at / BLK) && !memcmp(got + at, m->torn_new, BLK),
			  "%s: block at %llu is neither the last acknowledged write nor the one "
			  "the cut caught", when, (unsigned long long)at);
	}
	free(got);
}

/*
 * Every chunk that holds data (the model's nonzero blocks) lies in a region the live map
 * records used, at the size this open read: else a rebuild would skip it.
 */
static void check_live_covers(struct graid_array *a, const struct model *m, const char *when)
{
	static const uint8_t zero[BLK];
	uint64_t per = a->live->map.region_stripes;

	for (uint64_t at = 0; at < m->size; at += BLK) {
		uint64_t c = at / CHUNK;

		/* The write a cut caught went out only if its mark did: not this test's subject. */
		if (!memcmp(m->bytes + at, zero, BLK))
			continue;
		cr_assert(region_map_marked(&a->live->map, c / per),
			  "%s: chunk %llu holds data, and region %llu (of %llu chunks) is "
			  "recorded unused", when, (unsigned long long)c,
			  (unsigned long long)(c / per), (unsigned long long)per);
	}
}

/* A RAID-10 of 4 of the 6 files, with 8-bit maps; the model all zeroes but @p seeded chunks. */
static void make(struct au_set *s, struct model *m, const uint64_t *seeded, unsigned nseeded)
{
	memset(m, 0, sizeof(*m));
	m->torn = -1;
	m->seed = 9;
	m->nap_us = 200;
	au_make(s, 6, BYTES);
	cr_assert_eq(au_create(s, 4, 10, CHUNK, &m->a), 0);
	m->size = gu_array_bytes(m->a, NULL);
	cr_assert_eq(m->size, 384ull * CHUNK, "the sizes below assume 384 chunks");
	cr_assert_eq(m->a->live->map.region_stripes, LIVE_FINE);
	cr_assert_eq(m->a->bitmap.map.region_stripes, BITMAP_FINE);
	m->bytes = aligned_alloc(BLK, m->size);
	cr_assert_not_null(m->bytes);
	memset(m->bytes, 0, m->size);
	for (unsigned i = 0; i < nseeded; i++) {
		uint8_t *at = m->bytes + seeded[i] * CHUNK;

		gu_fill(at, BLK, seeded[i] + 1);
		cr_assert_eq(graid_array_write(m->a, at, BLK, seeded[i] * CHUNK), (ssize_t)BLK);
	}
}

/* The live map's regions marked in memory, as a bit image of 8 bytes (8 regions at most). */
static uint64_t live_marks(struct graid_array *a)
{
	uint64_t bits = 0;

	for (uint64_t r = 0; r < atomic_load(&a->live->map.nregions); r++)
		if (region_map_marked(&a->live->map, r))
			bits |= 1ull << r;
	return bits;
}

/* The first byte of member @p i's copy of the live map, as on the file. */
static uint8_t live_on_member(const struct au_set *s, unsigned i)
{
	FILE *f = fopen(s->paths[i], "rb");
	uint8_t b = 0;

	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, LIVE_DEFAULT_OFFSET, SEEK_SET), 0);
	cr_assert_eq(fread(&b, 1, 1, f), 1u);
	fclose(f);
	return b;
}

Test(grow10_maps, a_grow_past_the_maps_bits_was_refused_enospc, .init = setup,
     .fini = teardown)
{
	struct au_set s;
	struct model m;

	make(&s, &m, NULL, 0);
#if GRAID_FAULT_INJECTION
	graid__test_grow10_no_coarsen = true;
#endif
	cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), -ENOSPC);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_FINE);
	cr_assert_eq(graid_array_close(m.a), 0);
	free(m.bytes);
	au_remove(&s);
}

/*
 * A request queued and not reaped (by the very thread that asks for the grow): the drain
 * gives up after 10 s, the grow is refused -EBUSY with nothing changed, and once the
 * request is reaped the grow goes through.
 */
Test(grow10_maps, a_start_that_cannot_drain_is_refused_ebusy_and_changes_nothing,
     .init = setup, .fini = teardown, .timeout = 120)
{
	struct graid_completion c;
	struct graid_queue *q;
	uint8_t *b = aligned_alloc(BLK, BLK);
	struct au_set s;
	struct model m;
	unsigned n;

	make(&s, &m, NULL, 0);
	gu_fill(b, BLK, 5);
	memcpy(m.bytes, b, BLK);
	cr_assert_eq(graid_queue_create(m.a, 4, &q), 0);
	cr_assert_eq(graid_queue_write(q, b, BLK, 0, 1), 0);
	cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), -EBUSY);
	cr_assert(strstr(gu_log_text, "not quiesced"), "%s", gu_log_text);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_FINE);
	cr_assert_eq(m.a->bitmap.map.region_stripes, BITMAP_FINE);
	cr_assert_eq(gu_array_bytes(m.a, &n), m.size);
	cr_assert_eq(n, 4u);
	cr_assert(graid_queue_submit(q) >= 0);
	cr_assert_eq(graid_queue_reap(q, &c, 1, 1), 1);
	cr_assert_eq(c.result, (int64_t)BLK);
	cr_assert_eq(graid_queue_destroy(q), 0);
	cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), 0, "%s",
		     gu_log_text);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_COARSE);
	check_model(m.a, &m, "grown");
	cr_assert_eq(graid_array_close(m.a), 0);
	free(b);
	free(m.bytes);
	au_remove(&s);
}

/*
 * Chunks written in fine regions 1, 2 and 7 (48 chunks each): coarse regions 0, 1 and 3.
 * After the grow the live map is exactly that OR (RAID-10's regions are chunks, the same
 * in both geometries: the move marks none), in memory, on the members, and after a reopen
 * that reads the sizes the superblocks recorded.
 */
Test(grow10_maps, the_coarse_maps_are_the_or_of_the_fine_ones_and_a_reopen_reads_them,
     .init = setup, .fini = teardown)
{
	const uint64_t seeded[] = { 50, 100, 7 * 48 + 3 };
	struct au_set s;
	struct model m;
	unsigned n;

	make(&s, &m, seeded, 3);
	cr_assert_eq(live_marks(m.a), 0x86, "fine marks %#llx",
		     (unsigned long long)live_marks(m.a));
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(live_on_member(&s, i), 0x86, "member %u", i);
	cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), 0, "%s",
		     gu_log_text);
	cr_assert_eq(gu_array_bytes(m.a, &n), 576ull * CHUNK);
	cr_assert_eq(n, 6u);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_COARSE);
	cr_assert_eq(m.a->bitmap.map.region_stripes, BITMAP_COARSE);
	cr_assert_eq(atomic_load(&m.a->live->map.nregions), 6u);
	cr_assert_eq(live_marks(m.a), 0x0b, "coarse marks %#llx",
		     (unsigned long long)live_marks(m.a));
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(live_on_member(&s, i), 0x0b, "member %u holds %#x", i,
			     live_on_member(&s, i));
	check_model(m.a, &m, "grown");
	cr_assert_eq(graid_array_close(m.a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &m.a), 0, "%s", gu_log_text);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_COARSE);
	cr_assert_eq(m.a->bitmap.map.region_stripes, BITMAP_COARSE);
	cr_assert_eq(live_marks(m.a), 0x0b);
	check_model(m.a, &m, "reopened");
	gu_scrub_clean(m.a, "reopened");
	cr_assert_eq(graid_array_close(m.a), 0);
	free(m.bytes);
	au_remove(&s);
}

Test(grow10_maps, writes_running_across_the_coarsening_all_read_back, .init = setup,
     .fini = teardown)
{
	struct au_set s;
	struct model m;
	pthread_t t;

	make(&s, &m, NULL, 0);
	m.nap_us = 0; /* back to back: one is nearly always in flight when the start comes */
	cr_assert_eq(pthread_create(&t, NULL, writer, &m), 0);
	usleep(20000);
	cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), 0, "%s",
		     gu_log_text);
	usleep(20000);
	atomic_store(&m.stop, true);
	pthread_join(t, NULL);
	cr_assert_eq(m.torn, -1, "a write failed");
	cr_assert_gt(m.acked, 20u);
	cr_assert_eq(m.a->live->map.region_stripes, LIVE_COARSE);
	check_model(m.a, &m, "grown");
	cr_assert_eq(graid_array_close(m.a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &m.a), 0, "%s", gu_log_text);
	check_model(m.a, &m, "reopened");
	check_live_covers(m.a, &m, "reopened");
	gu_scrub_clean(m.a, "reopened");
	cr_assert_eq(graid_array_close(m.a), 0);
	free(m.bytes);
	au_remove(&s);
}

/*
 * A power cut after member write k of the start, k = 0 .. 47 (the coarsening's map and
 * superblock writes, the grow's first record and rounds, first windows), a writer going:
 * the open serves every acknowledged write, both maps record one size (the old or the new),
 * and the grow then finishes (resumed, or started again) with the data whole.
 */
Test(grow10_maps, a_crash_around_the_coarsening_loses_no_acknowledged_write, .init = setup,
     .fini = teardown, .timeout = 900)
{
	unsigned coarse = 0, fine = 0;

	for (long k = 0; k < 48; k++) {
		struct au_set s;
		struct model m;
		pthread_t t;
		unsigned n;
		bool big;

		make(&s, &m, NULL, 0);
		m.seed = 100 + (uint64_t)k;
		fault_writes_cut_after(k);
		cr_assert_eq(pthread_create(&t, NULL, writer, &m), 0);
		usleep(2000);
		graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT);
		usleep(2000);
		atomic_store(&m.stop, true);
		pthread_join(t, NULL);
		graid_array_close(m.a);
		fault_writes_cut_after(-1);
		m.a = NULL;

		cr_assert_eq(graid_array_open(s.paths, 6, NULL, &m.a), 0,
			     "crash after write %ld: the open failed: %s", k, gu_log_text);
		big = m.a->live->map.region_stripes == LIVE_COARSE;
		cr_assert(big || m.a->live->map.region_stripes == LIVE_FINE, "crash after %ld", k);
		cr_assert_eq(m.a->bitmap.map.region_stripes, big ? BITMAP_COARSE : BITMAP_FINE,
			     "crash after write %ld: the maps record different sizes", k);
		coarse += big;
		fine += !big;
		check_model(m.a, &m, "reopened after the cut");
		check_live_covers(m.a, &m, "reopened after the cut");
		gu_array_bytes(m.a, &n);
		if (m.a->reshape_job)
			cr_assert_eq(reshape_job_wait(m.a), 0, "crash after %ld: the resume", k);
		else if (n == 4)
			cr_assert_eq(graid_array_grow(m.a, &s.paths[4], 2, GRAID_GROW_WAIT), 0,
				     "crash after %ld: the grow again: %s", k, gu_log_text);
		cr_assert_eq(gu_array_bytes(m.a, &n), 576ull * CHUNK, "crash after %ld", k);
		cr_assert_eq(m.a->live->map.region_stripes, LIVE_COARSE);
		check_model(m.a, &m, "grown after the cut");
		cr_assert_eq(graid_array_close(m.a), 0);
		free(m.bytes);
		au_remove(&s);
	}
	cr_log_info("cuts that left the fine maps: %u, the coarse ones: %u", fine, coarse);
	cr_assert_gt(fine, 0u);
	cr_assert_gt(coarse, 0u);
}
