/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-10 (md near-2) online (docs/RESHAPE.md, "RAID-10 growing, as built") on
 * member files: 4 -> 6 and 2 -> 3 with known data, I/O while it moves, a close mid-way, a
 * member failing mid-way, a bad sector under one copy, a unit neither copy has. After
 * each: every byte reads back, a scrub finds nothing, and with one member of each pair
 * failed every byte still reads back. The crashes are test_reshape_crash.c's.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "format/layout.h"
#include "jobs/reshape_grow.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_live.h"
#include "meta/live.h"
#include "testutil.h"

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

/* A RAID-10 of @p nold (and @p nadd more files, not in it) holding the model. */
static uint8_t *make_array(struct au_set *s, unsigned nold, unsigned nadd,
			   struct graid_array **out, uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nold + nadd, BYTES);
	cr_assert_eq(au_create(s, nold, 10, CHUNK, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	return model;
}

/* Near-2 over @p nnew members of the rows @p size over @p nold fills: whole chunks. */
static uint64_t grown_size(uint64_t size, unsigned nold, unsigned nnew)
{
	uint64_t rows = size / CHUNK * 2 / nold;

	return rows * nnew / 2 * CHUNK;
}

/* Every byte still reads back with one member of each new pair out (then all of it). */
static void check_one_of_each_pair(struct graid_array *a, const uint8_t *model,
				   uint64_t size, unsigned n)
{
	/* Pairs of slots (2i, 2i + 1) mod n: failing every other member from 1 leaves one. */
	for (unsigned m = 1; m < n; m += 2)
		cr_assert_eq(graid_array_fail_member(a, m), 0, "member %u", m);
	gu_check_all(a, model, size);
}

/* The space the grow added reads as zeroes. */
static void check_tail_zero(struct graid_array *a, uint64_t from, uint64_t to)
{
	uint8_t *tail = aligned_alloc(BLK, to - from);

	cr_assert_not_null(tail);
	cr_assert_eq(graid_array_read(a, tail, to - from, from), (ssize_t)(to - from));
	for (uint64_t i = 0; i < to - from; i++)
		cr_assert_eq(tail[i], 0, "added byte %llu is not zero", (unsigned long long)i);
	free(tail);
}

static void grow_whole(unsigned nold, unsigned nadd, uint64_t seed)
{
	const unsigned nall = nold + nadd;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, grown;
	unsigned n;
	uint8_t *model = make_array(&s, nold, nadd, &a, &size, seed);

	cr_assert_eq(graid_array_grow(a, &s.paths[nold], nadd, GRAID_GROW_WAIT), 0);
	grown = gu_array_bytes(a, &n);
	cr_assert_eq(n, nall);
	cr_assert_eq(grown, grown_size(size, nold, nall), "size %llu after the grow",
		     (unsigned long long)grown);
	gu_check_all(a, model, size);
	check_tail_zero(a, size, grown);
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, nall, NULL, &a), 0);
	cr_assert_eq(gu_array_bytes(a, &n), grown);
	cr_assert_eq(n, nall);
	cr_assert_null(a->reshape_job);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");
	check_one_of_each_pair(a, model, size, nall);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Data bytes of kind @p op moved to or from role @p m (not the metadata). */
static uint64_t member_bytes_of(struct graid_array *a, unsigned m, int op)
{
	struct graid_io_stats st = { .struct_size = sizeof(st) };

	cr_assert_eq(graid_array_stats(a, (int)m, &st), 0);
	return st.io[op].bytes;
}

/* Data bytes of kind @p op moved to or from roles [0, @p n). */
static uint64_t member_bytes(struct graid_array *a, unsigned n, int op)
{
	uint64_t sum = 0;

	for (unsigned m = 0; m < n; m++)
		sum += member_bytes_of(a, m, op);
	return sum;
}

static uint64_t used_bytes(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

/*
 * Both copies of every chunk of an unused region are zero in the member files (the added
 * members' files held old bytes), and every chunk holding data is in a used region.
 */
static void check_unused_zero(struct graid_array *a, const uint8_t *model, uint64_t size)
{
	uint8_t *buf = malloc(CHUNK);
	uint64_t unused = 0;

	cr_assert_not_null(buf);
	for (uint64_t c = 0; c < a->lay.array_bytes / CHUNK; c++) {
		unsigned m[2];
		uint64_t o[2];
		bool data = false;

		if (!live_stripe_unused(a, c))
			continue;
		for (uint64_t b = c * CHUNK; b < (c + 1) * CHUNK && b < size && !data; b++)
			data = model[b] != 0;
		cr_assert(!data, "chunk %llu holds data but its region is unused",
			  (unsigned long long)c);
		unused++;
		layout_copies(&a->lay, c * CHUNK, m, o);
		for (unsigned k = 0; k < 2; k++) {
			int fd = open(a->members[m[k]].dev.path, O_RDONLY);

			cr_assert_geq(fd, 0);
			cr_assert_eq(pread(fd, buf, CHUNK, (off_t)(a->data_offset + o[k])),
				     (ssize_t)CHUNK);
			close(fd);
			for (uint32_t i = 0; i < CHUNK; i++)
				cr_assert_eq(buf[i], 0, "chunk %llu of an unused region: a non-zero "
							"byte in its copy on member %u",
					     (unsigned long long)c, m[k]);
		}
	}
	cr_assert_gt(unused, 0, "no chunk is unused");
	free(buf);
}

/*
 * A RAID-10 of 4 files (and 2 more, full of old bytes: 0xa5, not in it) with nothing
 * written: its model, all zeroes.
 */
static uint8_t *make_sparse(struct au_set *s, struct graid_array **a, uint64_t *size)
{
	uint8_t *model, *junk = malloc(1u << 20);

	au_make(s, 6, BYTES);
	cr_assert_eq(au_create(s, 4, 10, CHUNK, a), 0);
	*size = gu_array_bytes(*a, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	cr_assert_not_null(junk);
	memset(model, 0, *size);
	memset(junk, 0xa5, 1u << 20);
	for (unsigned f = 4; f < 6; f++) {
		int fd = open(s->paths[f], O_WRONLY);

		cr_assert_geq(fd, 0);
		for (uint64_t off = 0; off < BYTES; off += 1u << 20)
			cr_assert_eq(pwrite(fd, junk, 1u << 20, (off_t)off), 1 << 20);
		close(fd);
	}
	free(junk);
	return model;
}

/* @p len bytes of a pattern written at @p at, in the array and its model. */
static void write_run(struct graid_array *a, uint8_t *model, uint64_t at, uint64_t len,
		      uint64_t seed)
{
	gu_fill(model + at, len, seed);
	cr_assert_eq(graid_array_write(a, model + at, len, at), (ssize_t)len);
}

/*
 * A RAID-10 of 4 files (and 2 more, full of old bytes: 0xa5) with two small runs written
 * (at a third and two thirds): the model, zeroes elsewhere.
 */
static uint8_t *make_some(struct au_set *s, struct graid_array **a, uint64_t *size,
			  uint64_t seed)
{
	uint8_t *model = make_sparse(s, a, size);

	write_run(*a, model, *size / 3 / BLK * BLK, 40 * 1024, seed);
	write_run(*a, model, *size * 2 / 3 / BLK * BLK, 8 * 1024, seed + 1);
	return model;
}

/*
 * Each chunk read once, from either clean copy, the less loaded member's: in a near-2
 * RAID-10 of 4, copy 0 of every chunk lies on member 0 or 2; reading copy 0 each time left
 * members 1 and 3 idle while 0 and 2 read everything (half the members' bandwidth).
 */
Test(reshape_grow10, a_grow_reads_from_both_copies_evenly)
{
	uint64_t size, r0[4], got[4], lo = UINT64_MAX, hi = 0, sum = 0;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model = make_array(&s, 4, 2, &a, &size, 71);

	for (unsigned m = 0; m < 4; m++)
		r0[m] = member_bytes_of(a, m, GRAID_IO_READ);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0);
	for (unsigned m = 0; m < 4; m++) {
		got[m] = member_bytes_of(a, m, GRAID_IO_READ) - r0[m];
		cr_log_info("member %u read %llu bytes during the grow", m,
			    (unsigned long long)got[m]);
		lo = got[m] < lo ? got[m] : lo;
		hi = got[m] > hi ? got[m] : hi;
		sum += got[m];
	}
	cr_assert_leq(sum, size, "%llu bytes read for %llu moved", (unsigned long long)sum,
		      (unsigned long long)size);
	cr_assert_geq(4 * lo, 3 * hi, "reads per member from %llu to %llu bytes",
		      (unsigned long long)lo, (unsigned long long)hi);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * A RAID-10 grow moves only live data (issue 42): on a 4 -> 6 with two small runs written,
 * the chunks of unused regions are not read (the old members read no more than the used
 * regions' bytes) and their new copies are zeroed, not written (the members wrote no more
 * than twice the used bytes; the added members' files held old bytes: those copies read
 * zero after); long runs of them take far fewer windows (records) than 16-chunk windows
 * would; every byte reads back, a scrub is clean, the used bytes stay as they were, also
 * reopened. Its used regions line up with the windows: each window copies only used chunks
 * or skips only unused ones (a copying window's unused chunks:
 * the_unused_chunks_of_a_copying_window_are_zeroed_at_their_new_places).
 */
Test(reshape_grow10, a_grow_reads_and_copies_only_the_used_regions)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, used0, r0, w0, reads, writes, records;
	uint8_t *model = make_some(&s, &a, &size, 70);

	used0 = used_bytes(a);
	cr_assert_lt(used0 * 4, size, "%llu of %llu bytes used", (unsigned long long)used0,
		     (unsigned long long)size);
	r0 = member_bytes(a, 4, GRAID_IO_READ);
	w0 = member_bytes(a, 4, GRAID_IO_WRITE);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0);
	reads = member_bytes(a, 4, GRAID_IO_READ) - r0;
	writes = member_bytes(a, 6, GRAID_IO_WRITE) - w0;
	/* The job stays until the next grow or the close: its last record's generation. */
	cr_assert_not_null(a->reshape_job);
	records = a->reshape_job->rec.generation;
	cr_log_info("RAID-10 4 -> 6, %llu of %llu bytes used: the grow read %llu bytes, wrote "
		    "%llu, in %llu records", (unsigned long long)used0, (unsigned long long)size,
		    (unsigned long long)reads, (unsigned long long)writes,
		    (unsigned long long)records);
	/*
	 * Long runs of unused chunks one window each: far fewer windows (a record each) than
	 * the size in windows of GROW10_WINDOW_CHUNKS (16) chunks.
	 */
	cr_assert_lt(records * 2, size / CHUNK / 16, "%llu records", (unsigned long long)records);
	/* Each used chunk that moves read once, from one copy; written twice. */
	cr_assert_leq(reads, used0, "the grow read %llu bytes", (unsigned long long)reads);
	cr_assert_leq(writes, 2 * used0, "the grow wrote %llu bytes", (unsigned long long)writes);
	gu_check_all(a, model, size);
	check_tail_zero(a, size, gu_array_bytes(a, NULL));
	check_unused_zero(a, model, size);
	cr_assert_eq(used_bytes(a), used0, "the map changed");
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Writes, write-zeroes and reads across the array while a grow of a partly written one
 * runs (slowed): writes into unused chunks race the windows that zero them (a write marks
 * its region before its data, a window checks the bits again under its locks); after it
 * every byte reads as the model says, the copies of unused chunks are zero on every member
 * file, a scrub is clean, also reopened.
 */
Test(reshape_grow10, writes_racing_the_windows_that_skip_unused_chunks_are_kept)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 91, during;
	uint8_t *model = make_some(&s, &a, &size, 90);

	gu_slow_down(a, 4u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, 0), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = 3 * CHUNK, .zeroes = true,
						    .unslow_after = 200 });
	cr_assert_gt(during, 0, "no request ran during the reshape");
	cr_assert_eq(gu_array_bytes(a, NULL), grown_size(size, 4, 6));
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	gu_scrub_clean(a, "after writes during the move");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

#if GRAID_FAULT_INJECTION
/* The race below: one write into the last chunk of the run a window looked at. */
static uint8_t *race_model;
static atomic_int race_writes;

static void race_write(struct graid_array *a, uint64_t c0, uint64_t c1)
{
	uint64_t off = (c1 - 1) * CHUNK;

	(void)c0;
	if (atomic_fetch_add(&race_writes, 1))
		return;
	gu_fill(race_model + off, BLK, 99);
	/* The job's thread, no lock of the run held yet: routed by position, old geometry. */
	if (graid_array_write(a, race_model + off, BLK, off) != (ssize_t)BLK)
		atomic_store(&race_writes, -1000);
}
#endif

/*
 * A write landing in a run of unused chunks between a window's look at the run (all unused)
 * and its locks (the test seam graid__test_grow10_skip_look writes there): the window sees
 * the mark under its locks and does nothing, the next one copies that chunk; the write reads
 * back after the grow and after a reopen, the unused chunks' copies are zero, a scrub is
 * clean. A window that went on would record the run moved without that chunk's data.
 */
Test(reshape_grow10, a_write_between_the_look_and_the_locks_of_a_skipping_window_is_kept)
{
#if GRAID_FAULT_INJECTION
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_some(&s, &a, &size, 95);

	race_model = model;
	atomic_store(&race_writes, 0);
	graid__test_grow10_skip_look = race_write;
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0);
	graid__test_grow10_skip_look = NULL;
	cr_assert_gt(atomic_load(&race_writes), 0, "no window skipped a run, or the write failed");
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
#else
	cr_skip_test("the test seam exists only with -Dfault_injection");
#endif
}

/*
 * Used data straddling the boundaries of live-map regions, an unused region (no longer than
 * a window: not a skipping window's) between each two pairs of used ones: the windows that
 * copy also hold chunks of unused regions, which grow10_write zeroes at their new places
 * (the added members' files held old bytes). After the grow, and reopened: every unused
 * chunk's copies are zero on every member file, every byte reads back, a scrub is clean.
 */
Test(reshape_grow10, the_unused_chunks_of_a_copying_window_are_zeroed_at_their_new_places)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, reg;
	uint8_t *model = make_sparse(&s, &a, &size);

	cr_assert_not_null(a->live);
	reg = a->live->map.region_stripes * CHUNK;
	cr_assert_leq(a->live->map.region_stripes, GROW10_WINDOW_CHUNKS,
		      "a region of %llu chunks: its run would be a skipping window's",
		      (unsigned long long)a->live->map.region_stripes);
	/* Regions 3k + 4 and 3k + 5 used (a run across their boundary), 3k + 6 unused. */
	for (unsigned k = 0; k < 6; k++) {
		uint64_t edge = (3 * k + 5) * reg;

		cr_assert_lt(edge + reg, size);
		write_run(a, model, edge - 2 * BLK, 4 * BLK, 200 + k);
	}
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0);
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	check_unused_zero(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

#if GRAID_FAULT_INJECTION
/* The outage below: the added member's controller goes down at the first skipping window. */
static char outage_state[320];
static atomic_int outage_looks;

static void outage_at_look(struct graid_array *a, uint64_t c0, uint64_t c1)
{
	(void)a;
	(void)c0;
	(void)c1;
	if (atomic_fetch_add(&outage_looks, 1) == 0)
		cr_assert_eq(au_ctrl_state(outage_state, "connecting"), 0);
}

static int member_state(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, idx, &mi), 0);
	return mi.state;
}
#endif

/*
 * The added member 4 (its file full of old bytes) behind a modelled NVMe-oF controller
 * (faulty:fabric-state=) that goes down at the first window skipping a run of unused
 * chunks: the job takes it out and goes on around it, its skipping windows marking their
 * chunks in the bitmap for it. The controller live again after the finish, the member
 * catches up from the bitmap: every unused chunk's copies read zero on every member file
 * (a skipping window that did not mark would leave member 4's old bytes where the live map
 * promises zeroes), every byte reads back, a scrub is clean, also reopened.
 */
Test(reshape_grow10, the_added_member_out_during_skipping_windows_catches_up_to_zeroes,
     .timeout = 300)
{
#if GRAID_FAULT_INJECTION
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const char *paths[2];
	char spec[700];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_some(&s, &a, &size, 120);

	snprintf(outage_state, sizeof(outage_state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(outage_state, "live"), 0);
	snprintf(spec, sizeof(spec), "faulty:fabric-state=%s:%s", outage_state, s.path[4]);
	paths[0] = spec;
	paths[1] = s.paths[5];
	atomic_store(&outage_looks, 0);
	graid__test_grow10_skip_look = outage_at_look;
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the outage's failures */
	cr_assert_eq(graid_array_grow(a, paths, 2, GRAID_GROW_WAIT), 0);
	graid__test_grow10_skip_look = NULL;
	cr_assert_gt(atomic_load(&outage_looks), 1, "fewer than two skipping windows");
	cr_assert_eq(member_state(a, 4), GRAID_MEMBER_UNREACHABLE, "member 4 was not taken out");
	cr_assert_eq(gu_array_bytes(a, NULL), grown_size(size, 4, 6));
	gu_check_all(a, model, size);
	cr_assert_eq(au_ctrl_state(outage_state, "live"), 0);
	for (int i = 0; i < 3000 && member_state(a, 4) != GRAID_MEMBER_ACTIVE; i++)
		usleep(10000);
	cr_assert_eq(member_state(a, 4), GRAID_MEMBER_ACTIVE, "member 4 did not come back");
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), 0);
	cr_log_info("member 4 caught up %llu of %llu bytes", (unsigned long long)mi.catchup_done,
		    (unsigned long long)mi.catchup_total);
	cr_assert_eq(mi.catchup_done, mi.catchup_total);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "caught up");
	cr_assert_eq(graid_array_close(a), 0);
	/* Reopened on the files: check_unused_zero reads them by the members' paths. */
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	check_unused_zero(a, model, size);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
#else
	cr_skip_test("the test seam and faulty: members exist only with -Dfault_injection");
#endif
}

#if GRAID_FAULT_INJECTION
/* The skipping windows below: the most chunks one took. */
static atomic_ullong skip_most;

static void skip_size(struct graid_array *a, uint64_t c0, uint64_t c1)
{
	(void)a;
	if (c1 - c0 > atomic_load(&skip_most))
		atomic_store(&skip_most, c1 - c0);
}
#endif

/*
 * An empty RAID-10 of 1 MiB chunks (the largest) grown 4 -> 6: its windows skipping runs
 * of unused chunks zero at most GROW56_LIVE_SKIP_BYTES of new copies each (two a chunk:
 * 128 chunks, not GROW10_SKIP_CHUNKS' 256, whose 512 MiB a device writing its zeroes would
 * write under the window's locks); every byte after reads zero, the added members' too.
 */
Test(reshape_grow10, a_skipping_window_zeroes_at_most_256_mib_of_copies, .timeout = 300)
{
#if GRAID_FAULT_INJECTION
	const uint32_t big = GRAID_LAYOUT_MAX_CHUNK;
	struct graid_array *a;
	struct au_set s;
	uint64_t grown;

	au_make(&s, 6, 200ull << 20);
	cr_assert_eq(au_create(&s, 4, 10, big, &a), 0);
	atomic_store(&skip_most, 0);
	graid__test_grow10_skip_look = skip_size;
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0);
	graid__test_grow10_skip_look = NULL;
	cr_log_info("1 MiB chunks: the longest skipping window took %llu chunks",
		    (unsigned long long)atomic_load(&skip_most));
	cr_assert_gt(atomic_load(&skip_most), GROW10_WINDOW_CHUNKS, "no window skipped a run");
	cr_assert_leq(atomic_load(&skip_most) * 2 * big, GROW56_LIVE_SKIP_BYTES,
		      "a window of %llu chunks zeroed %llu MiB of copies",
		      (unsigned long long)atomic_load(&skip_most),
		      (unsigned long long)(atomic_load(&skip_most) * 2 * big >> 20));
	grown = gu_array_bytes(a, NULL);
	for (uint64_t off = 0; off < grown; off += 16ull << 20)
		check_tail_zero(a, off, off + 16 * big < grown ? off + 16 * big : grown);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
#else
	cr_skip_test("the test seam exists only with -Dfault_injection");
#endif
}

/*
 * The same grow cut by a crash (every member write after the k-th fails without landing,
 * the zeroings included) at every CUTS-th of its member writes, then the open's resume: the
 * window the record does not cover is redone, zeroing or copying again; every byte reads
 * back, the copies of unused chunks are zero, a scrub is clean.
 */
#define CUTS 30u
Test(reshape_grow10, a_crash_mid_way_through_a_grow_that_skips_unused_chunks)
{
	long total = 0;

	for (unsigned q = 0; q < CUTS; q++) {
		struct graid_array *a;
		struct au_set s;
		uint64_t size;
		uint8_t *model = make_some(&s, &a, &size, 80 + q);
		long k = q ? total * q / CUTS : 1l << 40, left;
		int rc;

		graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cut's failures */
		fault_writes_cut_after(k);
		rc = graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT);
		graid_array_close(a);
		left = fault_writes_cut_left();
		fault_writes_cut_after(-1);
		if (q == 0) {
			total = k - left;
			cr_log_info("a whole grow and its close: %ld member writes", total);
			cr_assert_gt(total, 8);
		} else {
			cr_assert_eq(left, 0, "the cut after %ld of %ld was not reached (the grow: "
					      "%d)", k, total, rc);
		}
		gu_log_clear();
		rc = graid_array_open(s.paths, 6, NULL, &a);
		graid_log_set(NULL, NULL, GRAID_LOG_ERR);
		cr_assert_eq(rc, 0, "cut after %ld: the open: %d: %s", k, rc, gu_log_text);
		if (a->reshape_job)
			cr_assert_eq(reshape_job_wait(a), 0, "cut after %ld: the resume failed", k);
		if (gu_array_bytes(a, NULL) == size)
			cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, GRAID_GROW_WAIT), 0,
				     "cut after %ld: the grow again", k);
		cr_assert_eq(gu_array_bytes(a, NULL), grown_size(size, 4, 6), "cut after %ld", k);
		gu_check_all(a, model, size);
		check_unused_zero(a, model, size);
		gu_scrub_clean(a, "after the resume");
		cr_assert_eq(graid_array_close(a), 0);
		free(model);
		au_remove(&s);
	}
}

Test(reshape_grow10, a_raid10_of_four_grows_to_six_and_every_byte_reads_back)
{
	grow_whole(4, 2, 1);
}

Test(reshape_grow10, a_raid10_of_two_grows_to_three_an_odd_count)
{
	grow_whole(2, 1, 2);
}

/* Writes (some straddling chunks and the position) and reads while it moves, then after. */
Test(reshape_grow10, writes_and_reads_while_it_moves_data_are_right_after)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 77, during;
	uint8_t *model = make_array(&s, 4, 2, &a, &size, 3);

	gu_slow_down(a, 4u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, 0), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = 3 * CHUNK, .zeroes = true,
						    .unslow_after = 200 });
	cr_assert_gt(during, 0, "no request ran during the reshape");
	cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 6);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after writes during the move");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	check_one_of_each_pair(a, model, size, 6);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow10, a_close_mid_way_is_resumed_by_the_next_open)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, 4, 2, &a, &size, 5);

	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, 0), 0);
	usleep(200000);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert(info.reshaping, "the close did not stop it mid-way");
	cr_assert_gt(info.reshape_done, 0, "nothing moved before the close");
	gu_check_all(a, model, size);
	cr_assert_not_null(a->reshape_job);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 6);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "resumed");
	check_one_of_each_pair(a, model, size, 6);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Every role of @p a ACTIVE again (a spare's rebuild done), within a few seconds. */
static void wait_all_active(struct graid_array *a)
{
	for (unsigned i = 0; i < 4000; i++) {
		bool all = true;

		for (unsigned r = 0; r < a->nmembers; r++)
			all &= atomic_load(&a->members[r].state) == GRAID_MEMBER_ACTIVE;
		if (all && !atomic_load(&a->rebuild_bg_running))
			return;
		usleep(5000);
	}
	cr_assert_fail("the spare's rebuild did not end");
}

/*
 * A member failing mid-way: the job goes on degraded, reading each chunk from the copy
 * left and writing the new copies around the member; writes go on; after the finish the
 * spare (whose takeover waited for it) is rebuilt in the new geometry.
 */
Test(reshape_grow10, a_member_failing_mid_way_loses_nothing)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 55, at;
	uint8_t *model = make_array(&s, 4, 3, &a, &size, 61);
	uint8_t *buf = aligned_alloc(BLK, 2 * CHUNK);

	cr_assert_not_null(buf);
	cr_assert_eq(graid_array_add_spare(a, s.paths[6]), 0);
	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, 0), 0);
	usleep(300000);
	at = atomic_load(&a->reshape_mem->position);
	cr_assert_gt(at, 0, "nothing moved yet");
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	for (unsigned i = 0; i < 64; i++) {
		uint64_t len = (1 + gu_rng(&seed) % (2 * CHUNK / BLK)) * BLK;
		uint64_t off = gu_rng(&seed) % ((size - len) / BLK + 1) * BLK;

		gu_fill(buf, len, gu_rng(&seed));
		cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
		memcpy(model + off, buf, len);
	}
	gu_check_all(a, model, size);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0, "the job did not finish degraded");
	cr_log_info("failed at byte %llu of %llu; finished degraded", (unsigned long long)at,
		    (unsigned long long)size);
	cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 6);
	gu_check_all(a, model, size);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the spare's rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 7, NULL, &a), 0);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");
	check_one_of_each_pair(a, model, size, 6);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
	au_remove(&s);
}

/*
 * Bad sectors (faulty: members) under the copies of chunk 20 of a RAID-10 of four: copies
 * on members 0 and 1 at data-area byte 10 * CHUNK. @p both: under both copies (the unit
 * is lost: moved as a loss, -EIO at its new place), else under the first only (read from
 * the second). The rest reads back, the grow finishes, a reopen serves the same.
 */
static void bad_sector(bool both)
{
	const uint64_t chunk = 20, moff = chunk / 2 * CHUNK + BLK, lost = chunk * CHUNK + BLK;
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX];
	char spec[2][700];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	tu_need_fault_injection();
	model = make_array(&s, 4, 2, &a, &size, both ? 78 : 77);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	for (unsigned m = 0; m < (both ? 2u : 1u); m++) {
		snprintf(spec[m], sizeof(spec[m]), "faulty:bad-block=%llu:%s",
			 (unsigned long long)moff, s.path[m]);
		paths[m] = spec[m];
	}
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &paths[4], 2, GRAID_GROW_WAIT), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_gt(mi.errors, 0, "the job never met the bad sector");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "a bad sector cost a member");
	cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 6);
	gu_check_but(a, model, size, both ? lost : UINT64_MAX, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	/* The drives' model is the open's alone: the plain files now, the loss recorded. */
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_but(a, model, size, both ? lost : UINT64_MAX, "reopened");
	if (!both) {
		gu_scrub_clean(a, "reopened");
		check_one_of_each_pair(a, model, size, 6);
	}
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow10, a_bad_sector_under_one_copy_is_read_from_the_other)
{
	bad_sector(false);
}

Test(reshape_grow10, a_unit_neither_copy_has_moves_as_a_loss)
{
	bad_sector(true);
}

/* Arrays whose tags are placed by one geometry are refused, nothing written. */
Test(reshape_grow10, checksummed_arrays_are_refused)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 10,
					  .chunk_bytes = CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array *a;
	struct au_set s;
	uint64_t before;

	au_make(&s, 5, BYTES);
	cr_assert_eq(graid_array_create(s.paths, 4, &cfg, &a), 0);
	before = au_file_hash(s.path[4]);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "checksums"), "%s", gu_log_text);
	cr_assert_eq(au_file_hash(s.path[4]), before, "the device was written");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * While a grow runs a chunk lives in one geometry or the other: the array is carried only
 * while every pair of both keeps a member. RAID-10 3 -> 4: members 0 and 2 hold both old
 * copies of the chunks on slots (2, 3) of each old row, while the new pairs (0, 1), (2, 3)
 * would each keep one: failing both is refused (-EBUSY) until the grow has ended.
 */
Test(reshape_grow10, a_failure_that_loses_a_pair_of_either_geometry_is_refused)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, 3, 1, &a, &size, 91);

	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[3], 1, 0), 0);
	usleep(100000);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), -EBUSY, "the old pair (2, 0) would be lost");
	gu_check_all(a, model, size);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), grown_size(size, 3, 4));
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Closed mid-way, then opened without one member (an old one): the open resumes the grow
 * degraded, reading each chunk from the copy left; every byte reads back, and once the
 * member is given back (a reopen with it: it missed the move, so it is rebuilt as a spare
 * would be, or caught up) a scrub finds nothing.
 */
Test(reshape_grow10, a_resume_with_a_member_missing_finishes_degraded)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	const char *some[6];
	unsigned k = 0;
	uint8_t *model = make_array(&s, 4, 2, &a, &size, 95);

	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 2, 0), 0);
	usleep(150000);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 6; i++)
		if (i != 2)
			some[k++] = s.paths[i];
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(some, 5, NULL, &a), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_not_null(a->reshape_job, "the open did not resume it");
	gu_check_all(a, model, size);
	cr_assert_eq(reshape_job_wait(a), 0, "the resume did not finish degraded");
	cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 6);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	/* With it back: it is brought up to date in the new geometry (not trusted as it is). */
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	for (unsigned i = 0; i < 4000; i++) {
		bool all = true;

		for (unsigned r = 0; r < a->nmembers; r++)
			all &= atomic_load(&a->members[r].state) == GRAID_MEMBER_ACTIVE;
		if (all && !atomic_load(&a->rebuild_bg_running))
			break;
		usleep(5000);
	}
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "the member back");
	/* Its copies are right: every byte reads back with its partners out. */
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 5), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * A grow refused while a scrub runs (found by review: a repairing scrub started before the
 * grow compared and "repaired" rows by the old geometry that the job had moved, and a
 * RAID-10 copy held another chunk's bytes); asked from the scrub's progress callback, so
 * the scrub is surely under way. After the scrub the grow goes, and everything reads back.
 */
struct scrub_grow {
	struct graid_array *a;
	struct au_set *s;
	int rc;
	bool asked;
};

static void grow_from_scrub(void *arg, uint64_t done, uint64_t total)
{
	struct scrub_grow *g = arg;

	(void)done;
	(void)total;
	if (g->asked)
		return;
	g->asked = true;
	g->rc = graid_array_grow(g->a, &g->s->paths[2], 1, 0);
}

Test(reshape_grow10, a_grow_is_refused_while_a_scrub_runs)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, 2, 1, &a, &size, 9);
	struct scrub_grow g = { .a = a, .s = &s };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep), .progress = grow_from_scrub,
					  .progress_arg = &g };

	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert(g.asked, "no progress call");
	cr_assert_eq(g.rc, -EBUSY, "a grow started under a running scrub (%d)", g.rc);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_WAIT), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), grown_size(size, 2, 3));
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
