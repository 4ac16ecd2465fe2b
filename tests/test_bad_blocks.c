/* SPDX-License-Identifier: MIT */
/*
 * A bad block costs a block: a rebuild, scrub or resync that meets a sector a survivor cannot
 * read ("faulty:bad-block=N", which a covering write remaps; "bad-block-sticky=N", which it
 * does not) rebuilds it from redundancy and writes it back where redundancy is left, and
 * records it in the bad-block log where none is; the member and the array stay up, reads of
 * the lost blocks fail with -EIO and every other byte reads right.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "healutil.h"
#include "testutil.h"

#define BB_CHUNK (64u * 1024)

struct bb_bed {
	struct au_set s;
	char spec[4][400];
	const char *paths[AU_MAX];
	uint64_t size;
	int level;
	unsigned n;
	struct graid_array *a;
	unsigned bad_events, repaired_events;
	char newpath[320];         /* the replacement's file */
	const char *plain[AU_MAX]; /* the members as they are now, without fault schedules */
};

static void bb_events(void *arg, const struct graid_event *ev)
{
	struct bb_bed *b = arg;

	b->bad_events += ev->type == GRAID_EVENT_BAD_BLOCK;
	b->repaired_events += ev->type == GRAID_EVENT_BLOCK_REPAIRED;
}

/*
 * An array of @p n members filled with round 1 and closed; then opened again with each
 * member in @p faulty (up to 4, -1 ends) given @p opts[i] as its fault schedule.
 */
static void bb_setup(struct bb_bed *b, int level, unsigned n, const int *faulty,
		     const char *const *opts)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	tu_need_fault_injection(); /* the bad sectors are modelled by faulty: members */
	memset(b, 0, sizeof(*b));
	b->level = level;
	b->n = n;
	au_make(&b->s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, n, level, BB_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	heal_fill(a, b->size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(b->paths, b->s.paths, sizeof(b->paths));
	for (unsigned i = 0; faulty && i < 4 && faulty[i] >= 0; i++) {
		snprintf(b->spec[i], sizeof(b->spec[i]), "faulty:%s:%s", opts[i],
			 b->s.path[faulty[i]]);
		b->paths[faulty[i]] = b->spec[i];
	}
	cr_assert_eq(graid_array_open(b->paths, n, NULL, &b->a), 0);
	cr_assert_eq(graid_array_set_event_callback(b->a, bb_events, b), 0);
}

static void bb_close(struct bb_bed *b)
{
	cr_assert_eq(graid_array_close(b->a), 0);
	au_remove(&b->s);
}

/* Replace role @p role with a new file and rebuild it: the rebuild must finish. */
static void bb_replace_and_rebuild(struct bb_bed *b, unsigned role)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_fail_member(b->a, role), 0);
	snprintf(b->newpath, sizeof(b->newpath), "%s", heal_new_member(&b->s, "new"));
	cr_assert_eq(graid_array_replace_member(b->a, role, b->newpath), 0);
	memcpy(b->plain, b->s.paths, sizeof(b->plain));
	b->plain[role] = b->newpath;
	cr_assert_eq(graid_array_rebuild(b->a, NULL, NULL), 0,
		     "one unreadable sector must not stop the rebuild");
	cr_assert_eq(graid_array_info(b->a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "%u roles out after the rebuild", info.nfailed);
	for (unsigned r = 0; r < b->n; r++)
		cr_assert_eq(info.member_state[r], GRAID_MEMBER_ACTIVE, "role %u: state %d", r,
			     info.member_state[r]);
}

/*
 * Every 4 KiB block of the array reads back round 2 below @p split and round 1 from it on,
 * except the blocks at the array offsets in @p lost (n_lost of them), which must fail with
 * -EIO.
 */
static void bb_verify(struct graid_array *a, uint64_t size, uint64_t split, const uint64_t *lost,
		      unsigned n_lost, const char *when)
{
	uint8_t *got = malloc(4096), *want = malloc(4096);

	for (uint64_t off = 0; off < size; off += 4096) {
		bool is_lost = false;
		ssize_t r;

		for (unsigned i = 0; i < n_lost; i++)
			is_lost |= lost[i] == off;
		r = graid_array_read(a, got, 4096, off);
		if (is_lost) {
			cr_assert_eq(r, -EIO, "%s: the lost block at %llu read %zd", when,
				     (unsigned long long)off, r);
			continue;
		}
		heal_pattern(want, 4096, off, off < split ? 2 : 1);
		cr_assert_eq(r, 4096, "%s: read at %llu: %zd", when, (unsigned long long)off, r);
		cr_assert_eq(memcmp(got, want, 4096), 0, "%s: block at %llu wrong", when,
			     (unsigned long long)off);
	}
	free(got);
	free(want);
}

/* Role @p role's log holds exactly one range: @p moff, 4 KiB, with @p flags and @p arr. */
static void bb_expect_record(struct graid_array *a, unsigned role, uint64_t moff, unsigned flags,
			     uint64_t arr)
{
	struct graid_bad_block bb[4];
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_bad_blocks(a, role, bb, 4), 1, "role %u: ranges", role);
	cr_assert_eq(bb[0].member_offset, moff, "role %u: at %llu", role,
		     (unsigned long long)bb[0].member_offset);
	cr_assert_eq(bb[0].len, 4096);
	cr_assert_eq(bb[0].flags, flags, "role %u: flags %#x", role, bb[0].flags);
	cr_assert_eq(bb[0].array_offset, arr, "role %u: array offset %llu", role,
		     (unsigned long long)bb[0].array_offset);
	cr_assert_eq(graid_array_member_info(a, role, &mi), 0);
	cr_assert_eq(mi.bad_blocks, 1);
}

static void bb_expect_clean_log(struct graid_array *a, unsigned role)
{
	cr_assert_eq(graid_array_bad_blocks(a, role, NULL, 0), 0, "role %u has records", role);
}

/*
 * RAID-5 of 4, 64 KiB chunks. Row 1: P on member 2, data 1 on member 0, data 2 on member 1
 * (md's left-symmetric). Member 1 cannot read 4 KiB at row 1 + 4 KiB; role 0 is replaced:
 * that 4 KiB column of row 1 has two erasures, one more than RAID-5 covers.
 */
Test(bad_blocks, raid5_rebuild_past_an_unreadable_sector_finishes_and_loses_one_column,
     .timeout = 120)
{
	const int faulty[] = { 1, -1 };
	const char *opts[] = { "bad-block-sticky=69632" };
	const uint64_t lost[] = { 4 * BB_CHUNK + 4096, 5 * BB_CHUNK + 4096 };
	struct bb_bed b;

	bb_setup(&b, 5, 4, faulty, opts);
	bb_replace_and_rebuild(&b, 0);
	cr_assert_geq(b.bad_events, 2, "%u bad-block events", b.bad_events);
	bb_expect_record(b.a, 0, BB_CHUNK + 4096, GRAID_BAD_BLOCK_LOST, lost[0]);
	bb_expect_record(b.a, 1, BB_CHUNK + 4096, GRAID_BAD_BLOCK_UNREADABLE, lost[1]);
	bb_expect_clean_log(b.a, 2);
	bb_verify(b.a, b.size, 0, lost, 2, "after the rebuild");
	/* The records hold across a reopen, with the sector readable again underneath. */
	cr_assert_eq(graid_array_close(b.a), 0);
	cr_assert_eq(graid_array_open(b.plain, 4, NULL, &b.a), 0);
	bb_expect_record(b.a, 0, BB_CHUNK + 4096, GRAID_BAD_BLOCK_LOST, lost[0]);
	bb_expect_record(b.a, 1, BB_CHUNK + 4096, GRAID_BAD_BLOCK_UNREADABLE, lost[1]);
	bb_verify(b.a, b.size, 0, lost, 2, "reopened");
	bb_close(&b);
}

/* Whole chunks written over the lost blocks bring them back; the records go. */
Test(bad_blocks, raid5_writing_the_lost_chunks_whole_clears_their_records, .timeout = 120)
{
	const int faulty[] = { 1, -1 };
	const char *opts[] = { "bad-block=69632" };
	const uint64_t lost[] = { 4 * BB_CHUNK + 4096, 5 * BB_CHUNK + 4096 };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	uint8_t *buf = malloc(2 * BB_CHUNK);
	struct bb_bed b;

	bb_setup(&b, 5, 4, faulty, opts);
	bb_replace_and_rebuild(&b, 0);
	/* A 4 KiB write over one lost block cannot make its stripe whole: refused. */
	heal_pattern(buf, 4096, lost[0], 2);
	cr_assert_eq(graid_array_write(b.a, buf, 4096, lost[0]), -EIO);
	bb_verify(b.a, b.size, 0, lost, 2, "after the refused write");
	heal_pattern(buf, 2 * BB_CHUNK, 4 * BB_CHUNK, 1);
	cr_assert_eq(graid_array_write(b.a, buf, 2 * BB_CHUNK, 4 * BB_CHUNK), 2 * BB_CHUNK);
	bb_expect_clean_log(b.a, 0);
	bb_expect_clean_log(b.a, 1);
	bb_verify(b.a, b.size, 0, NULL, 0, "after the lost chunks were written");
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	/* The records' clearing reached the members: a reopen finds none. */
	cr_assert_eq(graid_array_flush(b.a), 0);
	cr_assert_eq(graid_array_close(b.a), 0);
	cr_assert_eq(graid_array_open(b.plain, 4, NULL, &b.a), 0);
	bb_expect_clean_log(b.a, 0);
	bb_expect_clean_log(b.a, 1);
	free(buf);
	bb_close(&b);
}

/*
 * RAID-6 of 5 (3 data). Row 2: P on member 2, Q on 3, data 0, 1, 2 on 4, 0, 1. Role 0 is
 * replaced; members 1 and 4 cannot read row 2 + 8 KiB (three erasures: lost), and member 3
 * cannot read row 4 + 12 KiB (two erasures there: rebuilt and rewritten).
 */
Test(bad_blocks, raid6_rebuild_past_two_unreadable_sectors_in_one_column_finishes,
     .timeout = 120)
{
	const int faulty[] = { 1, 4, 3, -1 };
	const char *opts[] = { "bad-block-sticky=139264", "bad-block-sticky=139264",
			       "bad-block=274432" };
	/* Row 2 holds array chunks 6, 7, 8: data 0 (member 4), 1 (member 0), 2 (member 1). */
	const uint64_t lost[] = { 6 * BB_CHUNK + 8192, 7 * BB_CHUNK + 8192, 8 * BB_CHUNK + 8192 };
	struct bb_bed b;

	bb_setup(&b, 6, 5, faulty, opts);
	bb_replace_and_rebuild(&b, 0);
	bb_expect_record(b.a, 0, 2 * BB_CHUNK + 8192, GRAID_BAD_BLOCK_LOST, lost[1]);
	bb_expect_record(b.a, 1, 2 * BB_CHUNK + 8192, GRAID_BAD_BLOCK_UNREADABLE, lost[2]);
	bb_expect_record(b.a, 4, 2 * BB_CHUNK + 8192, GRAID_BAD_BLOCK_UNREADABLE, lost[0]);
	bb_expect_clean_log(b.a, 3);
	cr_assert_geq(b.repaired_events, 1, "member 3's sector was not written back");
	bb_verify(b.a, b.size, 0, lost, 3, "after the rebuild");
	bb_close(&b);
}

/* Mirrors: the survivor's unreadable sector is the one block the new copy lacks. */
static void bb_mirror_rebuild(int level, unsigned n)
{
	const int faulty[] = { 1, -1 };
	const char *opts[] = { "bad-block-sticky=8192" };
	/* Chunk 0's copies are on members 0 and 1 on both levels: 8 KiB into it is lost. */
	const uint64_t lost[] = { 8192 };
	struct bb_bed b;

	bb_setup(&b, level, n, faulty, opts);
	if (level == 1) {
		/* A third copy would have it: fail it first, so none is left. */
		for (unsigned m = 2; m < n; m++)
			cr_assert_eq(graid_array_fail_member(b.a, m), 0);
	}
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	cr_assert_eq(graid_array_replace_member(b.a, 0, heal_new_member(&b.s, "new")), 0);
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	bb_expect_record(b.a, 0, 8192, GRAID_BAD_BLOCK_LOST, 8192);
	bb_expect_record(b.a, 1, 8192, GRAID_BAD_BLOCK_UNREADABLE, 8192);
	bb_verify(b.a, b.size, 0, lost, 1, "after the rebuild");
	bb_close(&b);
}

Test(bad_blocks, raid1_rebuild_past_an_unreadable_sector_finishes, .timeout = 120)
{
	bb_mirror_rebuild(1, 2);
}

Test(bad_blocks, raid10_rebuild_past_an_unreadable_sector_finishes, .timeout = 120)
{
	bb_mirror_rebuild(10, 4);
}

/* A third RAID-1 copy still has it: nothing is lost, and the bad copy is rewritten. */
Test(bad_blocks, raid1_rebuild_takes_a_sector_from_the_third_copy, .timeout = 120)
{
	const int faulty[] = { 1, -1 };
	const char *opts[] = { "bad-block=8192" };
	struct bb_bed b;

	bb_setup(&b, 1, 3, faulty, opts);
	bb_replace_and_rebuild(&b, 0);
	bb_expect_clean_log(b.a, 0);
	bb_expect_clean_log(b.a, 1);
	cr_assert_geq(b.repaired_events, 1);
	cr_assert_eq(graid_array_fail_member(b.a, 2), 0);
	cr_assert_eq(graid_array_fail_member(b.a, 1), 0);
	bb_verify(b.a, b.size, 0, NULL, 0, "from the rebuilt copy alone");
	bb_close(&b);
}

/* ---- scrub ----------------------------------------------------------------------------- */

/* A latent sector: the scrub rebuilds it, writes it back, and the member stays. */
static void bb_scrub_latent(int level, unsigned n, unsigned flags)
{
	const int faulty[] = { 1, -1 };
	/* Member 1's block 4 KiB into row 1: data on every level here, P on none. */
	const char *opts[] = { "bad-block=69632" };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct bb_bed b;

	bb_setup(&b, level, n, faulty, opts);
	cr_assert_eq(graid_array_scrub(b.a, flags, &rep), 0, "a latent sector failed the scrub");
	cr_assert_eq(rep.rewritten, 1, "%llu blocks rewritten", (unsigned long long)rep.rewritten);
	cr_assert_eq(rep.unrecoverable, 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the scrub took the member out");
	cr_assert_eq(mi.errors, 1);
	cr_assert_eq(b.repaired_events, 1);
	bb_expect_clean_log(b.a, 1);
	/* Rewritten, so remapped: read and scrubbed again, it fails no more. */
	bb_verify(b.a, b.size, 0, NULL, 0, "after the scrub");
	cr_assert_eq(graid_array_scrub(b.a, flags, &rep), 0);
	cr_assert_eq(rep.rewritten, 0);
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_assert_eq(mi.errors, 1, "the sector was not rewritten: it failed again");
	bb_close(&b);
}

Test(bad_blocks, raid5_scrub_rewrites_a_latent_sector_and_keeps_the_member, .timeout = 120)
{
	bb_scrub_latent(5, 4, 0);
}

Test(bad_blocks, raid6_scrub_with_repair_rewrites_a_latent_sector, .timeout = 120)
{
	bb_scrub_latent(6, 5, GRAID_SCRUB_REPAIR);
}

Test(bad_blocks, raid1_scrub_rewrites_a_latent_sector_from_the_other_copy, .timeout = 120)
{
	bb_scrub_latent(1, 2, 0);
}

Test(bad_blocks, raid10_scrub_rewrites_a_latent_sector_from_the_other_copy, .timeout = 120)
{
	bb_scrub_latent(10, 4, GRAID_SCRUB_REPAIR);
}

/* A sector the drive cannot remap: the rewrite fails, and that takes the member out. */
Test(bad_blocks, a_rewrite_that_fails_takes_the_member_out, .timeout = 120)
{
	const int faulty[] = { 1, -1 };
	const char *opts[] = { "bad-block-sticky=69632" };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct bb_bed b;

	bb_setup(&b, 5, 4, faulty, opts);
	/* The rows already read are still compared: the scrub itself succeeds. */
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	cr_assert_eq(rep.rewritten, 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED);
	bb_verify(b.a, b.size, 0, NULL, 0, "with the member out");
	bb_close(&b);
}

/* Two members that cannot read the same RAID-5 column: recorded, the rest checked. */
Test(bad_blocks, raid5_scrub_records_a_column_past_redundancy_and_goes_on, .timeout = 120)
{
	const int faulty[] = { 1, 3, -1 };
	const char *opts[] = { "bad-block-sticky=69632", "bad-block-sticky=69632" };
	/* Row 1: data 2 on member 1, data 0 on member 3. */
	const uint64_t lost[] = { 3 * BB_CHUNK + 4096, 5 * BB_CHUNK + 4096 };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct bb_bed b;

	bb_setup(&b, 5, 4, faulty, opts);
	cr_assert_eq(graid_array_scrub(b.a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(rep.unrecoverable, 2);
	cr_assert_eq(rep.skipped, 1);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(b.bad_events, 2);
	bb_expect_record(b.a, 1, BB_CHUNK + 4096, GRAID_BAD_BLOCK_UNREADABLE, lost[1]);
	bb_expect_record(b.a, 3, BB_CHUNK + 4096, GRAID_BAD_BLOCK_UNREADABLE, lost[0]);
	cr_assert_eq(graid_array_info(b.a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	bb_verify(b.a, b.size, 0, lost, 2, "after the scrub");
	bb_close(&b);
}

/* A member every read of which fails is not a bad sector: past the threshold, it is out. */
Test(bad_blocks, a_scrub_takes_out_a_member_past_the_error_threshold, .timeout = 120)
{
	const int faulty[] = { 2, -1 };
	const char *opts[] = { "read-eio-after=0" };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct bb_bed b;

	bb_setup(&b, 6, 5, faulty, opts);
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), -EIO);
	cr_assert_eq(graid_array_member_info(b.a, 2, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED);
	cr_assert_eq(mi.errors, 21, "%llu errors", (unsigned long long)mi.errors);
	bb_verify(b.a, b.size, 0, NULL, 0, "with the member out");
	bb_close(&b);
}

/* ---- resync after a crash ------------------------------------------------------------- */

/*
 * Round 1 everywhere, then a writer that puts round 2 over the first MiB and dies without
 * a close: the array is unclean, that region marked. It is opened again with member 1
 * unable to read one block of that region: the open's resync rebuilds it from the others,
 * writes it back, and keeps the member.
 */
static void bb_resync_past_a_bad_sector(int level, unsigned n)
{
	char spec[400];
	const char *paths[AU_MAX];
	const unsigned victim = level == 1 ? 0 : 1;
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	pid_t pid;
	int st;

	tu_need_fault_injection();
	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, BB_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, n, NULL, &a))
			_exit(1);
		heal_fill(a, 1u << 20, 2);
		_exit(0); /* unclean: the region written stays marked */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer: %d", st);
	au_wait_unlocked(s.paths, n);
	memcpy(paths, s.paths, sizeof(paths));
	/*
	 * 8 KiB into row 1 of member 1 (parity levels: data there) or 0 (RAID-1: the copy the
	 * resync reads and copies to the others).
	 */
	snprintf(spec, sizeof(spec), "faulty:bad-block=%u:%s", BB_CHUNK + 8192, s.path[victim]);
	paths[victim] = spec;
	cr_assert_eq(graid_array_open(paths, n, NULL, &a), 0, "the resync failed the open");
	cr_assert_eq(graid_array_member_info(a, victim, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the resync took the member out");
	cr_assert_eq(mi.errors, 1);
	cr_assert_geq(mi.read_repaired, 1);
	cr_assert_eq(graid_array_bad_blocks(a, victim, NULL, 0), 0);
	bb_verify(a, info.size, 1u << 20, NULL, 0, "after the resync");
	cr_assert_eq(graid_array_member_info(a, victim, &mi), 0);
	cr_assert_eq(mi.errors, 1, "the sector was not rewritten: it failed again");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(bad_blocks, raid5_resync_rewrites_a_bad_sector_and_keeps_the_member, .timeout = 120)
{
	bb_resync_past_a_bad_sector(5, 4);
}

Test(bad_blocks, raid6_resync_rewrites_a_bad_sector_and_keeps_the_member, .timeout = 120)
{
	bb_resync_past_a_bad_sector(6, 5);
}

Test(bad_blocks, raid1_resync_takes_a_bad_sector_from_the_other_copy, .timeout = 120)
{
	bb_resync_past_a_bad_sector(1, 2);
}

/* ---- catch-up of a member that was out ------------------------------------------------- */

/*
 * Member 2 is out while round 2 is written over the first MiB; it comes back, and its
 * catch-up (the regions the bitmap marks) meets an unreadable sector on member 1 in them.
 * RAID-6 still has redundancy there: rebuilt, written back, nothing lost. RAID-5 has none:
 * that 4 KiB column is recorded lost on member 2, and the rest of the catch-up finishes.
 */
static void bb_catchup_past_a_bad_sector(int level, unsigned n, const uint64_t *lost,
					 unsigned nlost)
{
	char spec[400];
	const char *paths[AU_MAX];
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, BB_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	/* Without member 2: its role is missing, the bitmap keeps what is written meanwhile. */
	memcpy(paths, s.paths, sizeof(paths));
	paths[2] = paths[n - 1];
	cr_assert_eq(graid_array_open(paths, n - 1, NULL, &a), 0);
	heal_fill(a, 1u << 20, 2);
	cr_assert_eq(graid_array_close(a), 0);
	/* Member 2 back; member 1 cannot read 4 KiB into row 1, inside the region written. */
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:bad-block=%u:%s", BB_CHUNK + 4096, s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, n, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0, "the catch-up stopped");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	for (unsigned r = 0; r < n; r++)
		cr_assert_eq(info.member_state[r], GRAID_MEMBER_ACTIVE, "role %u: %d", r,
			     info.member_state[r]);
	cr_assert_eq(graid_array_bad_blocks(a, 2, NULL, 0), nlost ? 1 : 0);
	bb_verify(a, info.size, 1u << 20, lost, nlost, "after the catch-up");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(bad_blocks, raid6_catchup_rebuilds_a_survivors_bad_sector, .timeout = 120)
{
	bb_catchup_past_a_bad_sector(6, 5, NULL, 0);
}

Test(bad_blocks, raid5_catchup_records_the_one_column_it_cannot_rebuild, .timeout = 120)
{
	/* Row 1 of RAID-5 of 4: P on member 2, data 1 on member 0, data 2 on member 1. */
	const uint64_t lost[] = { 5 * BB_CHUNK + 4096 };

	bb_catchup_past_a_bad_sector(5, 4, lost, 1);
}
