/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow moves only live data (issue 42, docs/RESHAPE.md "Moving only live data"):
 * on arrays with only some regions written, a RAID-5 4 -> 5 and a RAID-6 6 -> 7 write far
 * fewer member bytes than a whole move, every written byte reads back and the rest reads
 * zero, every new row of an unused region is zero on every member file (parity too), every
 * new row holding data is in a used region, and the live-data map's used bytes stay near
 * what was written (the finish no longer marks every region used). Then a write and a
 * write-zeroes while the grow is mid-way (routed by position: neither clears a bit), a
 * crash mid-way (the in-process write cut) with the resume at the next open, and a member
 * out through the grow with its spare rebuilt after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "cututil.h"
#include "jobs/reshape_grow.h"
#include "member/member.h"
#include "meta/live.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56;
extern atomic_bool graid__test_grow56_hold;
#else
static bool graid__test_grow56; /* no switch in a release build: setup() skips */
static atomic_bool graid__test_grow56_hold;
#endif

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("RAID-5/6 growing is switched on for tests with graid__test_grow56, and "
		     "the write cut exists, only with -Dfault_injection");
#endif
	graid__test_grow56 = true;
}

/*
 * A RAID-@p level of @p nold files (and @p extra more, not in it), never written: all
 * unused.
 */
static uint8_t *make_array_x(struct au_set *s, int level, unsigned nold, unsigned extra,
			     struct graid_array **out, uint64_t *size)
{
	uint8_t *model;

	au_make(s, nold + extra, BYTES);
	cr_assert_eq(au_create(s, nold, level, CHUNK, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	memset(model, 0, *size);
	return model;
}

/* The same with one file more: the one the grow adds. */
static uint8_t *make_array(struct au_set *s, int level, unsigned nold, struct graid_array **out,
			   uint64_t *size)
{
	return make_array_x(s, level, nold, 1, out, size);
}

/* Write @p len bytes of seeded data at @p off, in the model too. */
static void put(struct graid_array *a, uint8_t *model, uint64_t off, uint64_t len, uint64_t seed)
{
	gu_fill(model + off, len, seed);
	cr_assert_eq(graid_array_write(a, model + off, len, off), (ssize_t)len,
		     "write at %llu", (unsigned long long)off);
}

/* A few small runs: the first bytes (the staged rows), two more at 30% and 60%. */
static void put_some(struct graid_array *a, uint8_t *model, uint64_t size, uint64_t seed)
{
	put(a, model, 0, 64 * 1024, seed);
	put(a, model, size * 3 / 10 / BLK * BLK, 96 * 1024, seed + 1);
	put(a, model, size * 6 / 10 / BLK * BLK, 32 * 1024, seed + 2);
}

/* Data bytes of kind @p op moved to or from roles [@p m0, @p m1) (not the metadata). */
static uint64_t member_bytes(struct graid_array *a, unsigned m0, unsigned m1, int op)
{
	uint64_t sum = 0;

	for (unsigned m = m0; m < m1; m++) {
		struct graid_io_stats st = { .struct_size = sizeof(st) };

		cr_assert_eq(graid_array_stats(a, (int)m, &st), 0);
		sum += st.io[op].bytes;
	}
	return sum;
}

/* Data bytes written to the first @p n roles' devices (not the metadata: docs/STATS.md). */
static uint64_t member_writes(struct graid_array *a, unsigned n)
{
	return member_bytes(a, 0, n, GRAID_IO_WRITE);
}

/* File @p path's first @p bytes made 0xa5: a device holding old bytes, not zeroes. */
static void junk_file(const char *path, uint64_t bytes)
{
	uint8_t *junk = malloc(1u << 20);
	int fd = open(path, O_WRONLY);

	cr_assert_not_null(junk);
	cr_assert_geq(fd, 0);
	memset(junk, 0xa5, 1u << 20);
	for (uint64_t off = 0; off < bytes; off += 1u << 20)
		cr_assert_eq(pwrite(fd, junk, 1u << 20, (off_t)off), 1 << 20);
	close(fd);
	free(junk);
}

static uint64_t used_bytes(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

/*
 * The map against the bytes, row by row of the (new) geometry: a row holding a non-zero
 * byte of the model is in a used region; a row of an unused region is zero on every member
 * file, data and parity alike (what a rebuild, a scrub and the next grow rely on).
 */
static void check_map(struct graid_array *a, const uint8_t *model, uint64_t size,
		      const char *when)
{
	const struct layout *l = &a->lay;
	uint64_t unit = (uint64_t)l->ndata * l->chunk, unused = 0;
	uint8_t *buf = malloc(l->chunk);

	cr_assert_not_null(buf);
	cr_assert_not_null(a->live);
	for (uint64_t row = 0; row < l->nstripes; row++) {
		bool data = false;

		for (uint64_t b = row * unit; b < (row + 1) * unit && b < size && !data; b++)
			data = model[b] != 0;
		if (!live_stripe_unused(a, row)) {
			continue;
		}
		cr_assert(!data, "%s: row %llu holds data but its region is unused", when,
			  (unsigned long long)row);
		unused++;
		for (unsigned m = 0; m < l->nmembers; m++) {
			int fd = open(a->members[m].dev.path, O_RDONLY);

			cr_assert_geq(fd, 0);
			cr_assert_eq(pread(fd, buf, l->chunk, (off_t)(a->data_offset + row * l->chunk)),
				     (ssize_t)l->chunk);
			close(fd);
			for (uint32_t i = 0; i < l->chunk; i++)
				cr_assert_eq(buf[i], 0, "%s: row %llu of an unused region holds a "
							"non-zero byte on member %u", when,
					     (unsigned long long)row, m);
		}
	}
	cr_assert_gt(unused, 0, "%s: no row is unused", when);
	free(buf);
}

/* Every byte of the first @p size as the model says: the data written, zeroes elsewhere. */
static void check_bytes(struct graid_array *a, const uint8_t *model, uint64_t size,
			const char *when)
{
	uint8_t *got = aligned_alloc(BLK, size);

	cr_assert_not_null(got);
	cr_assert_eq(graid_array_read(a, got, size, 0), (ssize_t)size, "%s", when);
	for (uint64_t b = 0; b < size; b += BLK)
		cr_assert(!memcmp(got + b, model + b, BLK), "%s: block at %llu wrong", when,
			  (unsigned long long)b);
	free(got);
}

/* What a whole move writes: every new row holding moved bytes, on every member. */
static uint64_t full_move_bytes(int level, unsigned nold, uint64_t size)
{
	uint64_t unit = (uint64_t)gu_ndata(level, nold + 1) * CHUNK;

	return (size + unit - 1) / unit * (nold + 1) * CHUNK;
}

static void grow_some(int level, unsigned nold, uint64_t seed)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, grown, w0, written, used0, used;
	uint8_t *model = make_array(&s, level, nold, &a, &size);

	put_some(a, model, size, seed);
	used0 = used_bytes(a);
	w0 = member_writes(a, nold);
	cr_assert_eq(graid_array_grow(a, &s.paths[nold], 1, GRAID_GROW_WAIT), 0);
	written = member_writes(a, nold + 1) - w0;
	grown = gu_array_bytes(a, NULL);
	used = used_bytes(a);
	cr_log_info("RAID-%d %u -> %u: %llu of %llu bytes used before, %llu of %llu after; the "
		    "grow wrote %llu member bytes, a whole move %llu", level, nold, nold + 1,
		    (unsigned long long)used0, (unsigned long long)size, (unsigned long long)used,
		    (unsigned long long)grown, (unsigned long long)written,
		    (unsigned long long)full_move_bytes(level, nold, size));
	/* A whole move writes every row: here the staged rows and the written regions' rows. */
	cr_assert_lt(written * 3, full_move_bytes(level, nold, size),
		     "the grow wrote %llu member bytes", (unsigned long long)written);
	/* The finish marked nothing more: the regions the data went to, not the whole array. */
	cr_assert_lt(used * 3, grown * 2, "%llu of %llu bytes used after the grow",
		     (unsigned long long)used, (unsigned long long)grown);
	check_bytes(a, model, size, "after the grow");
	check_map(a, model, size, "after the grow");
	/*
	 * After a flush, the regions whose rows the grow zeroed whole are recorded unused, as a
	 * discard's: those that held data only in the old geometry, and the added space.
	 */
	cr_assert_eq(graid_array_flush(a), 0);
	cr_log_info("after a flush: %llu bytes used", (unsigned long long)used_bytes(a));
	cr_assert_lt(used_bytes(a), used, "the flush recorded no region the grow zeroed unused");
	used = used_bytes(a);
	check_map(a, model, size, "after the grow and a flush");
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, nold + 1, NULL, &a), 0);
	cr_assert_eq(used_bytes(a), used, "the map on the members is the one in memory");
	check_bytes(a, model, size, "reopened");
	check_map(a, model, size, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56_live, raid5_four_to_five_moves_only_the_written_regions, .init = setup)
{
	grow_some(5, 4, 11);
}

Test(reshape_grow56_live, raid6_six_to_seven_moves_only_the_written_regions, .init = setup)
{
	grow_some(6, 6, 12);
}

/*
 * RAID-5(4) -> RAID-6(5) (GRAID_GROW_RAID6, Q-last: no data moves, the added member takes
 * Q) on a partly written array: the rows of unused regions are zeroed, not read, so the
 * added member takes far less than a whole Q pass; every byte reads back, the map holds,
 * a scrub is clean, and with two members failed after, every byte still reads back.
 */
Test(reshape_grow56_live, raid5_to_raid6_computes_q_only_for_the_written_regions, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, w0, written, full;
	uint8_t *model = make_array(&s, 5, 4, &a, &size);

	put_some(a, model, size, 13);
	w0 = member_writes(a, 4);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_WAIT | GRAID_GROW_RAID6), 0);
	written = member_writes(a, 5) - w0;
	full = a->lay.nstripes * CHUNK; /* a whole Q pass: one chunk a row, on the added member */
	cr_log_info("RAID-5(4) -> RAID-6(5): the conversion wrote %llu member bytes, a whole Q "
		    "pass %llu", (unsigned long long)written, (unsigned long long)full);
	cr_assert_eq(a->lay.level, 6);
	cr_assert_eq(gu_array_bytes(a, NULL), size);
	cr_assert_lt(written * 3, full, "the conversion wrote %llu member bytes",
		     (unsigned long long)written);
	check_bytes(a, model, size, "after the conversion");
	check_map(a, model, size, "after the conversion");
	gu_scrub_clean(a, "after the conversion");
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	check_bytes(a, model, size, "two members failed after the conversion");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Mid-way (the move paced, the position past a third): a write into a region not moved
 * yet and never written (the job must then copy its rows, not zero them), and a
 * write-zeroes of whole regions below the position, where the data was moved (a discard
 * routed by a reshape clears no bit: placed by the old geometry it would name rows that
 * now hold other data), then a flush (the map's sweep).
 */
Test(reshape_grow56_live, raid5_a_write_and_write_zeroes_mid_way_are_kept, .init = setup)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size, grown, late, zoff, zlen;
	uint8_t *model = make_array(&s, 5, 4, &a, &size);

	/* The first half written: a zeroing below a third of it hits data in both geometries. */
	put(a, model, 0, size / 2 / BLK * BLK, 21);
	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	do {
		usleep(2000);
		cr_assert_eq(graid_array_info(a, &info), 0);
		cr_assert(info.reshaping, "the grow ended before the test got in");
	} while (info.reshape_done < size / 3);
	/* A region not moved yet, never written: past the position and the written half. */
	late = size * 8 / 10 / BLK * BLK;
	cr_assert_gt(late, info.reshape_done + (1u << 20));
	put(a, model, late, 48 * 1024, 22);
	/* Whole regions of either geometry, below the position. */
	zoff = 1u << 20;
	zlen = 2u << 20;
	cr_assert_eq(graid_array_write_zeroes(a, zoff, zlen), 0);
	memset(model + zoff, 0, zlen);
	cr_assert_eq(graid_array_flush(a), 0);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	grown = gu_array_bytes(a, NULL);
	check_bytes(a, model, size, "after the grow");
	check_map(a, model, size, "after the grow");
	cr_assert_lt(used_bytes(a), grown, "every region used after the grow");
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * A crash mid-way (every member write after the k-th fails without landing: a power cut as
 * the members see it), then the open resumes the grow from its record: the map's marks are
 * durable and made before the rows' writes, so the rows moved before the crash keep them.
 * k at every CUTS-th of the grow's member writes (the staging, copying windows, windows
 * that zero, the finish); the cut stops the job's zeroing too, so some cuts tear a run of
 * zeroed rows across the members.
 */
#define CUTS 40u
Test(reshape_grow56_live, raid6_a_crash_mid_way_then_the_resume_reads_back_everything,
     .init = setup)
{
	long total = 0;

	for (unsigned q = 0; q < CUTS; q++) {
		struct graid_array *a;
		struct au_set s;
		uint64_t size;
		uint8_t *model = make_array(&s, 6, 6, &a, &size);
		long k = q ? total * q / CUTS : 1l << 40, left;
		int rc;

		put_some(a, model, size, 30 + q);
		graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cut's failures */
		fault_writes_cut_after(k);
		rc = graid_array_grow(a, &s.paths[6], 1, GRAID_GROW_WAIT);
		graid_array_close(a);
		left = fault_writes_cut_left();
		fault_writes_cut_after(-1);
		graid_log_set(NULL, NULL, GRAID_LOG_ERR);
		if (q == 0) {
			/* The first run counts the member writes of a whole grow and its close. */
			total = k - left;
			cr_log_info("a whole grow and its close: %ld member writes", total);
			cr_assert_gt(total, 8);
		} else {
			cr_assert_eq(left, 0, "the cut after %ld of %ld writes was not reached "
					      "(%ld left; the grow: %d): %s", k, total, left, rc,
				     gu_log_text);
		}
		gu_log_clear();
		graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
		rc = graid_array_open(s.paths, 7, NULL, &a);
		graid_log_set(NULL, NULL, GRAID_LOG_ERR);
		cr_assert_eq(rc, 0, "cut after %ld: the open: %d: %s", k, rc, gu_log_text);
		if (a->reshape_job)
			cr_assert_eq(reshape_job_wait(a), 0, "cut after %ld: the resume failed", k);
		cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 5, "cut after %ld", k);
		check_bytes(a, model, size, "after the resume");
		check_map(a, model, size, "after the resume");
		cr_assert_lt(used_bytes(a) * 3, size / 4 * 5 * 2, "cut after %ld: %llu used", k,
			     (unsigned long long)used_bytes(a));
		gu_scrub_clean(a, "after the resume");
		cr_assert_eq(graid_array_close(a), 0);
		free(model);
		au_remove(&s);
	}
}

/*
 * The staging of the first rows (reshape_stage.c) moves only live data too: on a RAID-6 6 -> 7
 * whose first region was never written (data only at 60%), the staged copy's chunks are
 * neither read from the old members nor written to the added one (their place there is
 * deallocated: zeroes), so the grow reads little more than the written region's rows and
 * writes less to the added member than the staged copy alone is. The added member's file
 * held old bytes (0xa5): the first rows, moved from the copy, must read zero all the same.
 */
Test(reshape_grow56_live, raid6_the_staging_neither_reads_nor_copies_unused_first_rows,
     .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, used0, r0, reads, added;
	uint8_t *model = make_array(&s, 6, 6, &a, &size);
	/* The staged copy: k x k' chunks (4 data chunks a row before, 5 after). */
	uint64_t staged = 4 * 5 * (uint64_t)CHUNK, new_unit = 5 * (uint64_t)CHUNK;

	junk_file(s.paths[6], BYTES);
	put(a, model, size * 6 / 10 / BLK * BLK, 32 * 1024, 50);
	used0 = used_bytes(a);
	cr_assert_lt(used0, size / 4, "%llu bytes used", (unsigned long long)used0);
	r0 = member_bytes(a, 0, 6, GRAID_IO_READ);
	cr_assert_eq(graid_array_grow(a, &s.paths[6], 1, GRAID_GROW_WAIT), 0);
	reads = member_bytes(a, 0, 6, GRAID_IO_READ) - r0;
	added = member_bytes(a, 6, 7, GRAID_IO_WRITE); /* a role since the grow's start */
	cr_log_info("RAID-6 6 -> 7, %llu bytes used: the grow read %llu bytes of the old members "
		    "and wrote %llu to the added one (the staged copy alone: %llu)",
		    (unsigned long long)used0, (unsigned long long)reads, (unsigned long long)added,
		    (unsigned long long)staged);
	/* The used region's rows (and a new row more at each end), no staged chunk. */
	cr_assert_leq(reads, used0 + 2 * new_unit, "the grow read %llu bytes",
		      (unsigned long long)reads);
	cr_assert_lt(added, staged, "the added member took %llu bytes", (unsigned long long)added);
	check_bytes(a, model, size, "after the grow");
	check_map(a, model, size, "after the grow");
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 7, NULL, &a), 0);
	check_bytes(a, model, size, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * The same staging cut by a crash (every member write after the k-th fails without landing)
 * at each of its first writes (the start, the copy's deallocations and writes, STAGED, the
 * first rows from the copy, COPY), the added member's file full of old bytes: the copy holds
 * zeroes for the chunks it skipped, so the resume (copying again from STAGING, or writing
 * the first rows from the copy in STAGED) never moves the added member's old bytes into
 * the array: every byte reads back, the rows of unused regions are zero on every member.
 */
#define STAGE_CUTS 60
Test(reshape_grow56_live, raid6_a_crash_in_a_staging_that_skips_unused_rows_then_the_resume,
     .init = setup)
{
	for (long k = 1; k <= STAGE_CUTS; k += 2) {
		struct graid_array *a;
		struct au_set s;
		uint64_t size;
		uint8_t *model = make_array(&s, 6, 6, &a, &size);
		int rc;

		junk_file(s.paths[6], BYTES);
		put(a, model, size * 3 / 10 / BLK * BLK, 64 * 1024, 60 + (uint64_t)k);
		graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cut's failures */
		fault_writes_cut_after(k);
		rc = graid_array_grow(a, &s.paths[6], 1, GRAID_GROW_WAIT);
		graid_array_close(a);
		cr_assert_eq(fault_writes_cut_left(), 0, "the cut after %ld was not reached (the "
							 "grow: %d)", k, rc);
		fault_writes_cut_after(-1);
		gu_log_clear();
		rc = graid_array_open(s.paths, 7, NULL, &a);
		graid_log_set(NULL, NULL, GRAID_LOG_ERR);
		cr_assert_eq(rc, 0, "cut after %ld: the open: %d: %s", k, rc, gu_log_text);
		if (a->reshape_job)
			cr_assert_eq(reshape_job_wait(a), 0, "cut after %ld: the resume failed", k);
		/* A cut before the start's superblocks: no grow; the next one grows it. */
		if (gu_array_bytes(a, NULL) == size)
			cr_assert_eq(graid_array_grow(a, &s.paths[6], 1, GRAID_GROW_WAIT), 0,
				     "cut after %ld: the grow again", k);
		cr_assert_eq(gu_array_bytes(a, NULL), size / 4 * 5, "cut after %ld", k);
		check_bytes(a, model, size, "after the resume");
		check_map(a, model, size, "after the resume");
		gu_scrub_clean(a, "after the resume");
		cr_assert_eq(graid_array_close(a), 0);
		free(model);
		au_remove(&s);
	}
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
 * A member out through the grow (RAID-6 6 -> 7, an old one failed before it): the zeroing
 * goes around it, its rows marked in the bitmap; every byte reads back degraded, and once
 * the spare (its file full of old bytes) has taken the role after the finish and been
 * rebuilt, the rows of unused regions are zero there too and a scrub is clean.
 */
Test(reshape_grow56_live, raid6_a_member_out_misses_the_zeroing_and_its_spare_gets_it,
     .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array_x(&s, 6, 6, 2, &a, &size);
	uint8_t *junk = malloc(1u << 20);
	int fd;

	cr_assert_not_null(junk);
	memset(junk, 0xa5, 1u << 20);
	fd = open(s.paths[7], O_WRONLY);
	cr_assert_geq(fd, 0);
	for (uint64_t off = 0; off < BYTES; off += 1u << 20)
		cr_assert_eq(pwrite(fd, junk, 1u << 20, (off_t)off), 1 << 20);
	close(fd);
	put_some(a, model, size, 40);
	/* A grow starts with every member in: the member goes out before the job moves. */
	atomic_store(&graid__test_grow56_hold, true);
	cr_assert_eq(graid_array_grow(a, &s.paths[6], 1, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_add_spare(a, s.paths[7]), 0);
	atomic_store(&graid__test_grow56_hold, false);
	cr_assert_eq(reshape_job_wait(a), 0);
	/*
	 * The worker hands the spare the role as soon as the finish has the new geometry (it
	 * may before the done event is sent, and before this line): what tells that it waited
	 * is the spare's rows of unused regions zero below, its file having been all 0xa5.
	 */
	check_bytes(a, model, size, "after the grow");
	wait_all_active(a);
	cr_assert_str_eq(a->members[2].dev.path, s.paths[7]);
	check_bytes(a, model, size, "after the spare's rebuild");
	check_map(a, model, size, "after the spare's rebuild");
	cr_assert_lt(used_bytes(a) * 3, size / 4 * 5 * 2);
	gu_scrub_clean(a, "after the spare's rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	free(junk);
	free(model);
	au_remove(&s);
}
