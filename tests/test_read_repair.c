/* SPDX-License-Identifier: MIT */
/*
 * Media errors repaired in place: a sector a member cannot read ("faulty:bad-block=N:",
 * which a covering write remaps) is recomputed from the rest of its stripe, handed to the
 * reader, written back, and the member stays in the array; a member whose reads keep
 * failing is taken out all the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define RR_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define RR_CHUNK (64u * 1024)

static void rr_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

struct rr_bed {
	struct au_set s;
	char spec[400];
	const char *paths[AU_MAX];
	uint64_t size;
	struct graid_array *a;
};

/* Members filled with round 1; member @p victim reopened with a bad block at @p bad. */
static void rr_setup(struct rr_bed *b, int level, unsigned n, unsigned victim,
		     const char *opts)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint8_t *buf;

	tu_need_fault_injection(); /* the bad block is modelled by a faulty: member */
	memset(b, 0, sizeof(*b));
	au_make(&b->s, n, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, n, level, RR_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	buf = malloc(b->size);
	rr_pattern(buf, 0, b->size, 1);
	cr_assert_eq(graid_array_write(a, buf, b->size, 0), (ssize_t)b->size);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(b->paths, b->s.paths, sizeof(b->paths));
	snprintf(b->spec, sizeof(b->spec), "faulty:%s:%s", opts, b->s.path[victim]);
	b->paths[victim] = b->spec;
	cr_assert_eq(graid_array_open(b->paths, n, NULL, &b->a), 0);
}

static void rr_verify(struct graid_array *a, uint64_t size, unsigned round, const char *what)
{
	uint8_t *buf = malloc(size), *want = malloc(size);

	rr_pattern(want, 0, size, round);
	cr_assert_eq(graid_array_read(a, buf, size, 0), (ssize_t)size, "%s: read", what);
	cr_assert_eq(memcmp(buf, want, size), 0, "%s: data differ", what);
	free(buf);
	free(want);
}

static struct graid_member_info rr_info(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, idx, &mi), 0);
	return mi;
}

static void rr_repaired_in_place(int level, unsigned n)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi;
	struct rr_bed b;

	/* Member 1, row 1 (data there on RAID-5 and RAID-6 with these member counts). */
	rr_setup(&b, level, n, 1, "bad-block=69632");
	rr_verify(b.a, b.size, 1, "read over the bad block");
	mi = rr_info(b.a, 1);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "a member with one bad block was taken out");
	cr_assert_eq(mi.errors, 1, "%llu errors", (unsigned long long)mi.errors);
	rr_verify(b.a, b.size, 1, "read again");
	cr_assert_eq(rr_info(b.a, 1).errors, 1, "the block was not rewritten: it failed again");
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	/* Lean on member 1: the rewritten block must hold the data, not just be readable. */
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	if (level == 6)
		cr_assert_eq(graid_array_fail_member(b.a, 2), 0);
	rr_verify(b.a, b.size, 1, "through the repaired member");
	graid_array_close(b.a);
	au_remove(&b.s);
}

Test(read_repair, raid5_a_bad_block_is_rewritten_and_the_member_stays, .timeout = 60)
{
	rr_repaired_in_place(5, 4);
}

Test(read_repair, raid6_a_bad_block_is_rewritten_and_the_member_stays, .timeout = 60)
{
	rr_repaired_in_place(6, 5);
}

Test(read_repair, a_partial_write_over_a_bad_block_repairs_it, .timeout = 60)
{
	struct rr_bed b;
	uint8_t *buf = malloc(4096);

	/* RAID-5 of 4: a 4 KiB write to row 1 reads the rest of the stripe (RMW or RCW). */
	rr_setup(&b, 5, 4, 1, "bad-block=69632");
	rr_pattern(buf, 3 * RR_CHUNK, 4096, 1); /* the same bytes again: the data stay round 1 */
	cr_assert_eq(graid_array_write(b.a, buf, 4096, 3 * RR_CHUNK), 4096);
	rr_verify(b.a, b.size, 1, "after a write next to the bad block");
	cr_assert_eq(rr_info(b.a, 1).state, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	rr_verify(b.a, b.size, 1, "through the repaired member");
	free(buf);
	graid_array_close(b.a);
	au_remove(&b.s);
}

Test(read_repair, a_member_whose_reads_keep_failing_is_taken_out, .timeout = 60)
{
	struct rr_bed b;
	uint8_t *buf = malloc(3 * RR_CHUNK);

	rr_setup(&b, 6, 5, 2, "read-eio-after=0");
	/* Every read of member 2 fails: 20 are repaired, the 21st takes it out. */
	for (int i = 0; i < 400 && rr_info(b.a, 2).state == GRAID_MEMBER_ACTIVE; i++) {
		uint64_t row = (uint64_t)i % (b.size / (3 * RR_CHUNK));
		ssize_t r = graid_array_read(b.a, buf, 3 * RR_CHUNK, row * 3 * RR_CHUNK);

		cr_assert_eq(r, 3 * RR_CHUNK, "read %d: %zd", i, r);
	}
	cr_assert_eq(rr_info(b.a, 2).state, GRAID_MEMBER_FAILED);
	cr_assert_eq(rr_info(b.a, 2).errors, 21, "%llu errors",
		     (unsigned long long)rr_info(b.a, 2).errors);
	rr_verify(b.a, b.size, 1, "with the member out");
	free(buf);
	graid_array_close(b.a);
	au_remove(&b.s);
}

Test(read_repair, a_bad_block_with_no_redundancy_left_fails_that_read_only, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rr_bed b;
	uint8_t *buf = malloc(3 * RR_CHUNK);

	rr_setup(&b, 5, 4, 1, "bad-block=69632");
	cr_assert_eq(graid_array_fail_member(b.a, 3), 0);
	/* Row 1 needs member 1's bad block and cannot recompute it: that read fails ... */
	cr_assert_eq(graid_array_read(b.a, buf, 3 * RR_CHUNK, 3 * RR_CHUNK), -EIO);
	/* ... and nothing else: the member stays, the array serves every other row. */
	cr_assert_eq(rr_info(b.a, 1).state, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_info(b.a, &info), 0);
	cr_assert_eq(info.nfailed, 1);
	cr_assert_eq(graid_array_read(b.a, buf, 3 * RR_CHUNK, 0), 3 * RR_CHUNK);
	cr_assert_eq(graid_array_read(b.a, buf, 3 * RR_CHUNK, 6 * RR_CHUNK), 3 * RR_CHUNK);
	free(buf);
	graid_array_close(b.a);
	au_remove(&b.s);
}

/* Mirrors: the other copy is read, written over the bad one, and the member stays. */
static void rr_mirror_repaired(int level, unsigned n)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi;
	struct rr_bed b;

	/* Member 0, chunk 0: its copy is on member 1 (RAID-1: every member; RAID-10: near-2). */
	rr_setup(&b, level, n, 0, "bad-block=0");
	rr_verify(b.a, b.size, 1, "read over the bad block");
	mi = rr_info(b.a, 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "a copy with one bad block was taken out");
	cr_assert_eq(mi.errors, 1, "%llu errors", (unsigned long long)mi.errors);
	/* The read's whole range on that copy was rewritten: at least its bad block. */
	cr_assert_geq(mi.read_repaired, 1, "%llu blocks repaired",
		      (unsigned long long)mi.read_repaired);
	for (int i = 0; i < 4; i++) /* the reads spread over the copies: each sees member 0 */
		rr_verify(b.a, b.size, 1, "read again");
	cr_assert_eq(rr_info(b.a, 0).errors, 1, "the block was not rewritten: it failed again");
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	/* The rewritten copy must hold the data, not just be readable. */
	for (unsigned m = 1; m < (level == 1 ? n : 2); m++)
		cr_assert_eq(graid_array_fail_member(b.a, m), 0);
	rr_verify(b.a, b.size, 1, "through the repaired copy");
	graid_array_close(b.a);
	au_remove(&b.s);
}

Test(read_repair, raid10_a_bad_block_is_read_from_the_other_copy_and_rewritten, .timeout = 60)
{
	rr_mirror_repaired(10, 4);
}

Test(read_repair, raid1_a_bad_block_is_read_from_the_other_copy_and_rewritten, .timeout = 60)
{
	rr_mirror_repaired(1, 3);
}

/*
 * A member cut short (its file truncated, a device that shrank) is not a bad sector: a read
 * past its new end comes back short, and writing the block back would only extend a file
 * full of holes that then read as zeroes. It is taken out on its first short read.
 */
Test(read_repair, a_member_cut_short_is_taken_out_not_repaired, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const size_t row = 3 * RR_CHUNK;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;

	au_make(&s, 5, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, RR_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	buf = malloc(info.size);
	rr_pattern(buf, 0, info.size, 1);
	cr_assert_eq(graid_array_write(a, buf, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(truncate(s.path[2], 0), 0);
	/*
	 * The last rows first (member 2 holds data in three rows of five): before the mend, its
	 * block was written back at the far end and the rows below read the holes as zeroes.
	 */
	for (size_t k = 1; k <= 5 && rr_info(a, 2).state == GRAID_MEMBER_ACTIVE; k++)
		cr_assert_eq(graid_array_read(a, buf, row, info.size - k * row), (ssize_t)row);
	cr_assert_eq(rr_info(a, 2).state, GRAID_MEMBER_FAILED,
		     "a member that returned short reads stayed in the array");
	cr_assert_eq(rr_info(a, 2).errors, 1);
	free(buf);
	rr_verify(a, info.size, 1, "with the short member out");
	graid_array_close(a);
	au_remove(&s);
}
