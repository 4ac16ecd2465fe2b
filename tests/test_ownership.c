/* SPDX-License-Identifier: MIT */
/* Who owns an array: one writer at a time, no eviction by looking, members that come back, forced assembly. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define OWN_MEMBER_BYTES ((1u << 20) + (8u << 20))
#define OWN_CHUNK (64u * 1024)

static void own_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t round)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = ((off + i) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)round << 40);

		memcpy(p + i, &v, 8);
	}
}

static void own_write(struct graid_array *a, uint64_t off, uint64_t len, uint32_t round)
{
	uint8_t *buf = malloc(1 << 20);

	for (uint64_t at = off; at < off + len; at += 1 << 20) {
		size_t n = off + len - at < (1 << 20) ? (size_t)(off + len - at) : (1 << 20);

		own_pattern(buf, n, at, round);
		cr_assert_eq(graid_array_write(a, buf, n, at), (ssize_t)n);
	}
	free(buf);
}

/* Blocks in [lo, hi) hold round `in`, the others round `out`. */
static void own_verify(struct graid_array *a, uint64_t lo, uint64_t hi, uint32_t in,
		       uint32_t out, const char *when)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *got = malloc(1 << 16), *want = malloc(1 << 16);

	cr_assert_eq(graid_array_info(a, &info), 0);
	for (uint64_t off = 0; off < info.size; off += 1 << 16) {
		own_pattern(want, 1 << 16, off, off >= lo && off < hi ? in : out);
		cr_assert_eq(graid_array_read(a, got, 1 << 16, off), 1 << 16, "%s: read", when);
		cr_assert_eq(memcmp(got, want, 1 << 16), 0, "%s: bytes at %llu wrong", when,
			     (unsigned long long)off);
	}
	free(got);
	free(want);
}

static unsigned own_nfailed(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.nfailed;
}

static int own_state(struct graid_array *a, unsigned role)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, role, &mi), 0);
	return mi.state;
}

/* Every path but the one at @p skip. */
static unsigned own_without(const struct au_set *s, unsigned skip, const char **out)
{
	unsigned k = 0;

	for (unsigned i = 0; i < s->n; i++)
		if (i != skip)
			out[k++] = s->paths[i];
	return k;
}

/* A fresh array of `n` members, filled with round 1, closed. */
static void own_make_array(struct au_set *s, unsigned n, int level)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	au_make(s, n, OWN_MEMBER_BYTES);
	cr_assert_eq(au_create(s, n, level, OWN_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	own_write(a, 0, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
}

static void own_read_fd(int fd, void *buf, size_t len)
{
	cr_assert_eq(read(fd, buf, len), (ssize_t)len);
}

/*
 * A child that waits on @p go, opens the members in its order, reports the result (0, or
 * 1000 + roles out when it opened degraded, or -errno) on @p res, and holds the array until
 * @p hold says close.
 */
static void own_race_child(const char *const *paths, unsigned n, int go, int res, int hold)
{
	struct graid_array *a = NULL;
	char c;
	int rc;

	if (read(go, &c, 1) != 1)
		_exit(2);
	rc = graid_array_open(paths, n, NULL, &a);
	if (rc == 0) {
		struct graid_array_info info = { .struct_size = sizeof(info) };

		graid_array_info(a, &info);
		rc = info.nfailed ? 1000 + (int)info.nfailed : 0;
	}
	if (write(res, &rc, sizeof(rc)) != sizeof(rc))
		_exit(2);
	if (a) {
		if (read(hold, &c, 1) < 0)
			_exit(2);
		graid_array_close(a);
	}
	_exit(0);
}

static void own_race(int level, unsigned n)
{
	const char *fwd[AU_MAX], *rev[AU_MAX];
	struct graid_array *a;
	struct au_set s;

	own_make_array(&s, n, level);
	for (unsigned i = 0; i < n; i++) {
		fwd[i] = s.paths[i];
		rev[i] = s.paths[n - 1 - i];
	}
	for (unsigned round = 0; round < 40; round++) {
		int go[2], res[2][2], hold[2][2], got[2], st;
		pid_t pid[2];

		cr_assert_eq(pipe(go), 0);
		for (unsigned k = 0; k < 2; k++) {
			cr_assert_eq(pipe(res[k]), 0);
			cr_assert_eq(pipe(hold[k]), 0);
			pid[k] = fork();
			cr_assert_geq(pid[k], 0);
			if (pid[k] == 0)
				own_race_child(k ? rev : fwd, n, go[0], res[k][1], hold[k][0]);
		}
		/* One write releases both. */
		cr_assert_eq(write(go[1], "gg", 2), 2);
		for (unsigned k = 0; k < 2; k++)
			own_read_fd(res[k][0], &got[k], sizeof(got[k]));
		cr_assert(!(got[0] == 0 && got[1] == 0),
			  "RAID-%d round %u: both openers hold the array", level, round);
		cr_assert(got[0] < 1000 && got[1] < 1000,
			  "RAID-%d round %u: an opener left members out (%d, %d)", level, round,
			  got[0], got[1]);
		cr_assert((got[0] == 0 && got[1] == -EBUSY) || (got[1] == 0 && got[0] == -EBUSY),
			  "RAID-%d round %u: wanted one holder and one EBUSY, got %d and %d", level,
			  round, got[0], got[1]);
		for (unsigned k = 0; k < 2; k++) {
			cr_assert_eq(write(hold[k][1], "c", 1), 1);
			cr_assert_eq(waitpid(pid[k], &st, 0), pid[k]);
			cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			close(res[k][0]);
			close(res[k][1]);
			close(hold[k][0]);
			close(hold[k][1]);
		}
		close(go[0]);
		close(go[1]);
	}
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
	cr_assert_eq(own_nfailed(a), 0, "RAID-%d: a member is out after the races", level);
	own_verify(a, 0, 0, 1, 1, "after the races");
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, two_openers_in_opposite_orders_never_both_hold_raid1, .timeout = 300)
{
	own_race(1, 2);
}

Test(ownership, two_openers_in_opposite_orders_never_both_hold_raid5, .timeout = 300)
{
	own_race(5, 4);
}

Test(ownership, two_openers_in_opposite_orders_never_both_hold_raid6, .timeout = 300)
{
	own_race(6, 4);
}

Test(ownership, two_openers_in_opposite_orders_never_both_hold_raid10, .timeout = 300)
{
	own_race(10, 4);
}

Test(ownership, a_holder_of_some_members_keeps_out_a_writer_of_the_others, .timeout = 120)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a, *b = NULL;
	uint64_t before[3];
	struct au_set s;

	own_make_array(&s, 3, 1);
	/* Served on d0 d1, as nbdkit was in the report; d2 is not given. */
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cr_assert_eq(graid_array_open(s.paths + 2, 1, NULL, &b), -EBUSY,
		     "a writable open of the member left out must not become a second writer");
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &b), -EBUSY);
	for (unsigned i = 0; i < 3; i++)
		before[i] = au_file_hash(s.paths[i]);
	cr_assert_eq(graid_array_open(s.paths, 3, &ro, &b), 0, "looking works while it is held");
	cr_assert_eq(graid_array_close(b), 0);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), before[i], "a look changed member %u", i);
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, a_member_given_twice_is_named_and_not_mistaken_for_a_holder, .timeout = 60)
{
	const char *twice[4];
	struct graid_array *a;
	struct au_set s;

	own_make_array(&s, 4, 6);
	twice[0] = s.paths[0];
	twice[1] = s.paths[1];
	twice[2] = s.paths[2];
	twice[3] = s.paths[1];
	/* Not EBUSY from locking it against itself: it is left out, the others open. */
	cr_assert_eq(graid_array_open(twice, 4, NULL, &a), 0);
	cr_assert_eq(own_nfailed(a), 1);
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, a_read_only_look_at_some_members_changes_no_byte, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	const char *some[6];
	struct graid_array *a;
	uint64_t before[6];
	struct au_set s;

	own_make_array(&s, 6, 6);
	for (unsigned i = 0; i < 6; i++)
		before[i] = au_file_hash(s.paths[i]);
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open((const char *[]){ s.paths[0], s.paths[1], s.paths[2],
							s.paths[5] },
				      4, &ro, &a),
		     0);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 6; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), before[i], "member %u changed", i);
	own_without(&s, 9, some);
	cr_assert_eq(graid_array_open(some, 6, NULL, &a), 0);
	cr_assert_eq(own_nfailed(a), 0);
	graid_array_close(a);
	au_remove(&s);
}

/* Fail two other roles so every read of the array needs role `who`'s own bytes. */
static void own_lean_on(struct graid_array *a, unsigned who)
{
	unsigned failed = 0;

	for (unsigned r = 0; r < 6 && failed < 2; r++)
		if (r != who) {
			cr_assert_eq(graid_array_fail_member(a, r), 0);
			failed++;
		}
}

/*
 * A RAID-6 of six with role @p out left out of one open, during which [off, off + len) is
 * written with round 2 (len 0: nothing); then opened with every member and brought up to
 * date. Returns the array, open, and what was written to the member that came back.
 */
static struct graid_array *own_out_and_back(struct au_set *s, unsigned out, uint64_t off,
					    uint64_t len, struct graid_member_info *mi)
{
	const char *five[6];
	struct graid_array *a;

	own_make_array(s, 6, 6);
	own_without(s, out, five);
	cr_assert_eq(graid_array_open(five, 5, NULL, &a), 0);
	cr_assert_eq(own_nfailed(a), 1);
	if (len)
		own_write(a, off, len, 2);
	cr_assert_eq(graid_array_close(a), 0);
	/* The open that left it out (status, a typo) must not have evicted it for good. */
	cr_assert_eq(graid_array_open(s->paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(own_state(a, out), GRAID_MEMBER_ACTIVE);
	cr_assert_eq(own_nfailed(a), 0);
	cr_assert_eq(graid_array_member_info(a, out, mi), 0);
	return a;
}

Test(ownership, a_member_absent_while_nothing_was_written_returns_with_nothing_copied,
     .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct au_set s;
	struct graid_array *a = own_out_and_back(&s, 3, 0, 0, &mi);

	cr_assert_eq(mi.write_bytes, 0, "%llu bytes copied to a member that missed nothing",
		     (unsigned long long)mi.write_bytes);
	own_lean_on(a, 3);
	own_verify(a, 0, 0, 1, 1, "read through the member that came back");
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, a_member_absent_while_4_mib_were_written_gets_only_the_marked_regions,
     .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const uint64_t off = 5u << 20, len = 4u << 20;
	/* RAID-6 of 6, 64 KiB chunks: 4 data chunks a row; a region is 1 MiB of a member. */
	const uint64_t row_bytes = 4 * OWN_CHUNK, region_rows = (1u << 20) / OWN_CHUNK;
	uint64_t first = off / row_bytes / region_rows;
	uint64_t last = (off + len - 1) / row_bytes / region_rows;
	uint64_t bound = (last - first + 1) * region_rows * OWN_CHUNK;
	struct au_set s;
	struct graid_array *a = own_out_and_back(&s, 2, off, len, &mi);

	cr_log_info("member 2 came back: %llu bytes copied to it, %llu written to the array "
		    "while it was out, at most %llu in the regions marked",
		    (unsigned long long)mi.write_bytes, (unsigned long long)len,
		    (unsigned long long)bound);
	cr_assert_gt(mi.write_bytes, 0);
	cr_assert_leq(mi.write_bytes, bound, "%llu bytes copied, more than the %llu marked",
		      (unsigned long long)mi.write_bytes, (unsigned long long)bound);
	own_lean_on(a, 2);
	own_verify(a, off, off + len, 2, 1, "read through the member that caught up");
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, a_replaced_members_old_device_does_not_come_back, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s, n;

	own_make_array(&s, 4, 5);
	au_make(&n, 1, OWN_MEMBER_BYTES);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_replace_member(a, 3, n.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Role 3 went to the new device, which is absent now: the old one has no claim. */
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(own_nfailed(a), 1);
	cr_assert_eq(own_state(a, 3), GRAID_MEMBER_MISSING);
	own_verify(a, 0, 0, 1, 1, "without either device of role 3");
	graid_array_close(a);
	au_remove(&n);
	au_remove(&s);
}

Test(ownership, forced_assembly_after_a_read_error_during_a_rebuild_returns_every_byte,
     .timeout = 120)
{
	struct graid_open_options force = { .struct_size = sizeof(force),
					    .flags = GRAID_OPEN_FORCE };
	char faulty[400];
	const char *paths[4];
	struct graid_array *a;
	struct au_set s, n;

	tu_need_fault_injection();
	own_make_array(&s, 4, 5);
	au_make(&n, 1, OWN_MEMBER_BYTES);
	/* Role 3 is replaced; the rebuild then meets one read error on role 1. */
	snprintf(faulty, sizeof(faulty), "faulty:read-eio-after=2:%s", s.paths[1]);
	paths[0] = s.paths[0];
	paths[1] = faulty;
	paths[2] = s.paths[2];
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_replace_member(a, 3, n.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), -EIO);
	graid_array_close(a);
	paths[1] = s.paths[1];
	paths[3] = n.paths[0];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), -EIO, "two roles out: no assembly");
	cr_assert_eq(graid_array_open(paths, 4, &force, &a), 0);
	cr_assert_eq(own_state(a, 1), GRAID_MEMBER_ACTIVE, "role 1 was forced back");
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(own_nfailed(a), 0);
	own_verify(a, 0, 0, 1, 1, "after forced assembly and the rebuild");
	graid_array_close(a);
	au_remove(&n);
	au_remove(&s);
}

Test(ownership, force_is_refused_with_read_only, .timeout = 30)
{
	struct graid_open_options o = { .struct_size = sizeof(o),
					.flags = GRAID_OPEN_FORCE | GRAID_OPEN_READ_ONLY };
	struct graid_array *a = NULL;
	struct au_set s;

	own_make_array(&s, 4, 5);
	cr_assert_eq(graid_array_open(s.paths, 4, &o, &a), -EINVAL);
	au_remove(&s);
}

/* Writes until killed; tells the parent once the array is open and being written. */
static void own_writer_child(const char *const *paths, unsigned n, int ready)
{
	struct graid_array *a;
	uint8_t *buf = aligned_alloc(4096, 1 << 16);
	uint64_t off = 0;

	if (graid_array_open(paths, n, NULL, &a))
		_exit(3);
	memset(buf, 0x5a, 1 << 16);
	for (unsigned i = 0;; i++) {
		if (graid_array_write(a, buf, 1 << 16, off) != 1 << 16)
			_exit(4);
		off = (off + (1 << 16)) % (4u << 20);
		if (i == 0 && write(ready, "r", 1) != 1)
			_exit(5);
	}
}

Test(ownership, an_open_right_after_the_holder_was_killed_mid_write_succeeds, .timeout = 300)
{
	struct au_set s;

	own_make_array(&s, 4, 6);
	for (unsigned round = 0; round < 100; round++) {
		struct graid_array *a = NULL;
		int ready[2], st, rc;
		pid_t pid;
		char c;

		cr_assert_eq(pipe(ready), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			own_writer_child(s.paths, 4, ready[1]);
		own_read_fd(ready[0], &c, 1);
		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFSIGNALED(st), "round %u: the writer ended by itself (%d)", round, st);
		/* At once: the kernel may still hold the dead writer's member files. */
		rc = graid_array_open(s.paths, 4, NULL, &a);
		cr_assert_eq(rc, 0, "round %u: open after the kill: %s", round, graid_strerror(rc));
		cr_assert_eq(own_nfailed(a), 0, "round %u: a member was left out", round);
		cr_assert_eq(graid_array_close(a), 0);
		close(ready[0]);
		close(ready[1]);
	}
	au_remove(&s);
}

Test(ownership, two_halves_opened_apart_are_not_merged_as_in_sync, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	uint8_t *buf = aligned_alloc(4096, 1 << 16);
	struct graid_array *a;
	struct au_set s;

	/* A RAID-1 split: each member opened without the other, and written. */
	own_make_array(&s, 2, 1);
	cr_assert_eq(graid_array_open(s.paths, 1, NULL, &a), 0);
	own_write(a, 0, 1 << 20, 7);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths + 1, 1, NULL, &a), 0);
	own_write(a, 4u << 20, 1 << 20, 8);
	cr_assert_eq(graid_array_close(a), 0);
	/* Together: one side is kept, the other left out; never both as "in sync". */
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(own_nfailed(a), 1, "a diverged half was merged as in sync");
	own_verify(a, 0, 1 << 20, 7, 1, "the side kept (the first given)");
	graid_array_close(a);
	/* The side left out is untouched: it still holds its own writes. */
	cr_assert_eq(graid_array_open(s.paths + 1, 1, &ro, &a), 0);
	own_verify(a, 4u << 20, 5u << 20, 8, 1, "the side left out");
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

Test(ownership, a_read_only_flush_leaves_a_writers_bitmap_marks, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a, *b;
	uint64_t before[2];
	struct au_set s;

	own_make_array(&s, 2, 1);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	own_write(a, 0, 1 << 20, 3); /* marks a region, not yet swept */
	for (unsigned i = 0; i < 2; i++)
		before[i] = au_file_hash(s.paths[i]);
	cr_assert_eq(graid_array_open(s.paths, 2, &ro, &b), 0);
	cr_assert_eq(graid_array_flush(b), 0);
	cr_assert_eq(graid_array_close(b), 0);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), before[i],
			     "a read-only handle's flush wrote member %u", i);
	graid_array_close(a);
	au_remove(&s);
}

Test(ownership, forced_raid10_resyncs_from_the_current_copy_not_the_forced_one, .timeout = 60)
{
	struct graid_open_options force = { .struct_size = sizeof(force),
					    .flags = GRAID_OPEN_FORCE };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *got = malloc(OWN_CHUNK), *want = malloc(OWN_CHUNK);
	struct graid_array *a;
	unsigned current = 0, right = 0;
	struct au_set s;

	/* RAID-10 of 3 (near-2): member 1 fails, the array is rewritten, member 0 is lost. */
	own_make_array(&s, 3, 10);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	own_write(a, 0, info.size, 2);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths + 1, 2, NULL, &a), -EIO);
	cr_assert_eq(graid_array_open(s.paths + 1, 2, &force, &a), 0);
	/*
	 * Chunks with a copy on member 2 were current there and must stay so; those whose only
	 * current copy was on member 0 are lost, as the header says.
	 */
	for (uint64_t off = 0; off < info.size; off += OWN_CHUNK) {
		uint64_t chunk = off / OWN_CHUNK;
		bool on2 = (2 * chunk) % 3 == 2 || (2 * chunk + 1) % 3 == 2;

		own_pattern(want, OWN_CHUNK, off, 2);
		cr_assert_eq(graid_array_read(a, got, OWN_CHUNK, off), OWN_CHUNK);
		if (on2) {
			current++;
			right += !memcmp(got, want, OWN_CHUNK);
		}
	}
	cr_assert_eq(right, current, "%u of %u chunks with a current copy were overwritten by "
		     "the forced member's stale one", current - right, current);
	graid_array_close(a);
	free(got);
	free(want);
	au_remove(&s);
}

Test(ownership, the_lock_file_is_never_followed_through_a_link, .timeout = 60)
{
	char dir[300], link[400], victim[400], uuid_text[37];
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint64_t before;
	struct au_set s;
	int fd;

	own_make_array(&s, 2, 1);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(dir, sizeof(dir), "%s/locks", s.dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(victim, sizeof(victim), "%s/victim", s.dir);
	fd = open(victim, O_CREAT | O_WRONLY, 0600);
	cr_assert_eq(write(fd, "precious", 8), 8);
	close(fd);
	before = au_file_hash(victim);
	/* The lock file's name, as docs/ARRAYS.md gives it: the UUID's RFC 9562 text. */
	for (unsigned i = 0, at = 0; i < 16; i++)
		at += (unsigned)sprintf(uuid_text + at, "%s%02x",
					i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
					info.uuid[i]);
	snprintf(link, sizeof(link), "%s/%s.lock", dir, uuid_text);
	cr_assert_eq(symlink(victim, link), 0);
	setenv("GRAID_LOCK_DIR", dir, 1);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), -ENOLCK);
	cr_assert_eq(au_file_hash(victim), before, "the link's target was written");
	/* A lock directory others can write is refused, not used. */
	unlink(link);
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0, "needs root (chown)");
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), -ENOLCK);
	unsetenv("GRAID_LOCK_DIR");
	au_remove(&s);
}
