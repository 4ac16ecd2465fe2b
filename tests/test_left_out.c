/* SPDX-License-Identifier: MIT */
/*
 * Members left out at open, and what each becomes (docs/ARRAYS.md, "Members left out at
 * open"): a member whose contents cannot be trusted as a whole (shrunk, a copy on another
 * NVMe namespace) is recorded failed and rebuilt whole, never caught up from the bitmap;
 * graid_array_given_info() names what became of every device given; a look works on
 * members that cannot be written and says when the array was left unclean.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "api/array_assemble.h"
#include "arrayutil.h"
#include "testutil.h"

/* 1 MiB of superblock and maps, then 8 MiB of data. */
#define LO_DATA_OFFSET (1u << 20)
#define LO_MEMBER_BYTES (LO_DATA_OFFSET + (8u << 20))
#define LO_CHUNK (64u * 1024)

static void lo_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t round)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = ((off + i) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)round << 40);

		memcpy(p + i, &v, 8);
	}
}

static void lo_write(struct graid_array *a, uint64_t off, uint64_t len, uint32_t round)
{
	uint8_t *buf = malloc(1 << 20);

	for (uint64_t at = off; at < off + len; at += 1 << 20) {
		size_t n = off + len - at < (1 << 20) ? (size_t)(off + len - at) : (1 << 20);

		lo_pattern(buf, n, at, round);
		cr_assert_eq(graid_array_write(a, buf, n, at), (ssize_t)n);
	}
	free(buf);
}

/* Bytes in [lo, hi) hold round @p in, the others round @p out. */
static void lo_verify(struct graid_array *a, uint64_t lo, uint64_t hi, uint32_t in,
		      uint32_t out, const char *when)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *got = malloc(1 << 16), *want = malloc(1 << 16);

	cr_assert_eq(graid_array_info(a, &info), 0);
	for (uint64_t off = 0; off < info.size; off += 1 << 16) {
		lo_pattern(want, 1 << 16, off, off >= lo && off < hi ? in : out);
		cr_assert_eq(graid_array_read(a, got, 1 << 16, off), 1 << 16, "%s: read", when);
		cr_assert_eq(memcmp(got, want, 1 << 16), 0, "%s: bytes at %llu wrong", when,
			     (unsigned long long)off);
	}
	free(got);
	free(want);
}

static int lo_state(struct graid_array *a, unsigned role)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, role, &mi), 0);
	return mi.state;
}

static struct graid_given_info lo_given(struct graid_array *a, unsigned idx)
{
	struct graid_given_info g = { .struct_size = sizeof(g) };

	cr_assert_eq(graid_array_given_info(a, idx, &g), 0);
	return g;
}

/* An array of @p n members filled with round 1, closed. */
static void lo_make(struct au_set *s, unsigned n, int level)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	au_make(s, n, LO_MEMBER_BYTES);
	cr_assert_eq(au_create(s, n, level, LO_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	lo_write(a, 0, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
}

/* Fail the roles that hold other copies of @p keep's data, so every read needs it. */
static void lo_lean_on(struct graid_array *a, int level, unsigned n, unsigned keep)
{
	if (level == 10) {
		cr_assert_eq(graid_array_fail_member(a, keep ^ 1u), 0);
		return;
	}
	for (unsigned k = 1; k <= (level == 6 ? 2u : 1u) && k < n; k++)
		cr_assert_eq(graid_array_fail_member(a, (keep + k) % n), 0);
	if (level == 1)
		for (unsigned k = 2; k < n; k++)
			cr_assert_eq(graid_array_fail_member(a, (keep + k) % n), 0);
}

/*
 * Role @p r's member file shrinks below its data area's end (an LV reduced, a partition
 * cut, a file truncated), the array runs degraded and is written, then the file grows back
 * (its lost tail now reads as zeroes). The member must not come back "in sync": its role
 * was recorded failed, and the member is taken back only as a new device, rebuilt whole.
 */
static void lo_shrunk_then_regrown(int level, unsigned n, unsigned r)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	const uint64_t woff = 0, wlen = 1u << 20;
	struct graid_array *a;
	struct au_set s;
	int back;

	lo_make(&s, n, level);
	cr_assert_eq(truncate(s.path[r], LO_DATA_OFFSET + (4u << 20)), 0);
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0, "open with role %u shrunk", r);
	cr_assert_eq(lo_state(a, r), GRAID_MEMBER_FAILED, "a shrunk member's role is not "
							  "recorded failed");
	cr_assert_eq(lo_given(a, r).verdict, GRAID_GIVEN_SHRUNK);
	cr_assert_eq(lo_given(a, r).role, (int)r);
	lo_write(a, woff, wlen, 2);
	cr_assert_eq(graid_array_close(a), 0);

	cr_assert_eq(truncate(s.path[r], LO_MEMBER_BYTES), 0);
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	back = lo_state(a, r);
	if (back != GRAID_MEMBER_ACTIVE) {
		/* Its own device is accepted as the new one, and rebuilt whole. */
		cr_assert_eq(graid_array_replace_member(a, r, s.paths[r]), 0);
		cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	}
	cr_assert_eq(lo_state(a, r), GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "RAID-%d: %llu mismatches after role %u came back",
		     level, (unsigned long long)rep.mismatches, r);
	lo_lean_on(a, level, n, r);
	lo_verify(a, woff, woff + wlen, 2, 1, "read through the member that shrank and grew");
	cr_assert_eq(back, GRAID_MEMBER_FAILED, "the grown member came back as %d, not failed",
		     back);
	graid_array_close(a);
	au_remove(&s);
}

Test(left_out, raid1_a_shrunk_then_regrown_member_is_rebuilt_whole, .timeout = 120)
{
	lo_shrunk_then_regrown(1, 2, 1);
}

Test(left_out, raid5_a_shrunk_then_regrown_member_is_rebuilt_whole, .timeout = 120)
{
	lo_shrunk_then_regrown(5, 4, 2);
}

Test(left_out, raid6_a_shrunk_then_regrown_member_is_rebuilt_whole, .timeout = 120)
{
	lo_shrunk_then_regrown(6, 5, 3);
}

Test(left_out, raid10_a_shrunk_then_regrown_member_is_rebuilt_whole, .timeout = 120)
{
	lo_shrunk_then_regrown(10, 4, 2);
}

/*
 * A superblock found on another NVMe namespace than the one it was written on (a block
 * copy): the candidate is left out, its role recorded failed, and it may only be forced
 * back. Files have no NVMe identity, so the identities are set on the candidates the way
 * member_open() and the superblock would have them.
 */
Test(left_out, a_member_on_another_nvme_namespace_is_recorded_failed_not_caught_up,
     .timeout = 60)
{
	struct assembly as = { .lock = { .fd = -1 } };
	struct au_set s;

	lo_make(&s, 4, 5);
	cr_assert_eq(assemble_gather(&as, s.paths, 4, false), 0);
	for (unsigned i = 0; i < 4; i++)
		cr_assert(as.c[i].writable, "a look at writable member %u says it is not", i);
	for (unsigned i = 0; i < 4; i++) {
		struct open_candidate *c = &as.c[i];

		c->m.dev.nvme.is_nvme = true;
		c->m.dev.nvme.nsid = 1;
		memset(c->m.dev.nvme.nguid, 0x10 + (int)i, sizeof(c->m.dev.nvme.nguid));
		c->sb.nvme.flags = GRAID_SB_NVME_ID;
		c->sb.nvme.nsid = 1;
		/* Role 2's superblock was written on namespace 0x77.., it is on 0x12.. now. */
		memset(c->sb.nvme.nguid, i == 2 ? 0x77 : 0x10 + (int)i, sizeof(c->sb.nvme.nguid));
	}
	assemble_filter(&as);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(as.c[i].valid, i != 2, "candidate %u valid: %d", i, as.c[i].valid);
	cr_assert_eq(as.c[2].verdict, GRAID_GIVEN_IDENTITY);
	cr_assert(as.c[2].forcible, "a copy can still be forced back");
	cr_assert(assemble_role_distrusted(&as, 2), "its role is not recorded failed");
	cr_assert_not(assemble_role_distrusted(&as, 1));
	assemble_release(&as);
	au_remove(&s);
}

/* An empty file of @p bytes in @p s's folder. */
static const char *lo_file(struct au_set *s, const char *name, off_t bytes, char *buf, size_t len)
{
	FILE *f;

	snprintf(buf, len, "%s/%s", s->dir, name);
	f = fopen(buf, "w");
	cr_assert(f);
	cr_assert_eq(ftruncate(fileno(f), bytes), 0);
	fclose(f);
	return buf;
}

Test(left_out, every_device_given_is_told_what_became_of_it, .timeout = 60)
{
	char empty[320], nope[320];
	struct graid_array *a, *b;
	struct au_set s, o;
	const char *paths[10];
	struct graid_given_info g;

	lo_make(&s, 6, 6);
	au_make(&o, 4, LO_MEMBER_BYTES);
	cr_assert_eq(au_create(&o, 4, 5, LO_CHUNK, &b), 0);
	graid_array_close(b);
	/* Role 3 recorded failed two events ago (stale); role 2 shrinks. */
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(truncate(s.path[2], LO_DATA_OFFSET), 0);
	snprintf(nope, sizeof(nope), "%s/nope", s.dir);
	paths[0] = s.paths[0];
	paths[1] = s.paths[1];
	paths[2] = s.paths[1];
	paths[3] = s.paths[2];
	paths[4] = s.paths[3];
	paths[5] = s.paths[4];
	paths[6] = o.paths[0];
	paths[7] = lo_file(&s, "empty", 1 << 20, empty, sizeof(empty));
	paths[8] = nope;
	paths[9] = s.paths[5];
	cr_assert_eq(graid_array_open(paths, 10, NULL, &a), 0);
	cr_assert_eq(graid_array_given_info(a, 10, &g), -EINVAL);
	cr_assert_eq(lo_given(a, 0).verdict, GRAID_GIVEN_MEMBER);
	cr_assert_eq(lo_given(a, 0).role, 0);
	cr_assert_eq(lo_given(a, 1).verdict, GRAID_GIVEN_MEMBER);
	g = lo_given(a, 2);
	cr_assert_eq(g.verdict, GRAID_GIVEN_TWICE);
	cr_assert(strstr(g.why, "given twice"), "%s", g.why);
	g = lo_given(a, 3);
	cr_assert_eq(g.verdict, GRAID_GIVEN_SHRUNK);
	cr_assert_eq(g.role, 2);
	cr_assert(strstr(g.why, "smaller than its superblock says"), "%s", g.why);
	g = lo_given(a, 4);
	cr_assert_eq(g.verdict, GRAID_GIVEN_STALE, "verdict %d: %s", g.verdict, g.why);
	cr_assert_eq(g.role, 3);
	cr_assert_eq(lo_given(a, 5).verdict, GRAID_GIVEN_MEMBER);
	cr_assert_eq(lo_given(a, 6).verdict, GRAID_GIVEN_OTHER_ARRAY);
	cr_assert_eq(lo_given(a, 7).verdict, GRAID_GIVEN_NO_SUPERBLOCK);
	cr_assert_eq(lo_given(a, 7).role, -1);
	g = lo_given(a, 8);
	cr_assert_eq(g.verdict, GRAID_GIVEN_UNOPENED);
	cr_assert_eq(g.error, -ENOENT);
	cr_assert_eq(lo_given(a, 9).verdict, GRAID_GIVEN_MEMBER);
	cr_assert_eq(lo_given(a, 9).role, 5);
	cr_assert_eq(lo_state(a, 2), GRAID_MEMBER_FAILED);
	cr_assert_eq(lo_state(a, 3), GRAID_MEMBER_FAILED);
	graid_array_close(a);
	au_remove(&o);
	au_remove(&s);
}

/*
 * Run @p fn in a child that cannot write the member files: as "nobody" when this is root
 * (root writes anything), else as this user with the files made read-only. 0 when the
 * child's checks held; the child's exit code (its failed check) otherwise.
 */
static int lo_as_reader(struct au_set *s, const bool *writable, int (*fn)(struct au_set *))
{
	int status;
	pid_t pid;

	cr_assert_eq(chmod(s->dir, 0755), 0);
	for (unsigned i = 0; i < s->n; i++)
		cr_assert_eq(chmod(s->path[i], writable[i] && geteuid() == 0 ? 0666
					       : writable[i] ? 0644 : 0444), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(90);
		_exit(fn(s));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child died");
	for (unsigned i = 0; i < s->n; i++)
		cr_assert_eq(chmod(s->path[i], 0644), 0);
	return WEXITSTATUS(status);
}

/* A look at members nobody here may write: it works, and changes nothing. */
static int lo_look(struct au_set *s)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint8_t *buf = malloc(1 << 16), *want = malloc(1 << 16);
	int rc = graid_array_open(s->paths, s->n, &ro, &a);

	if (rc)
		return 10;
	if (graid_array_info(a, &info) || info.nfailed || info.unclean)
		return 11;
	lo_pattern(want, 1 << 16, 5u << 20, 1);
	if (graid_array_read(a, buf, 1 << 16, 5u << 20) != 1 << 16 || memcmp(buf, want, 1 << 16))
		return 12;
	if (graid_array_write(a, buf, 1 << 16, 0) != -EROFS)
		return 13;
	/* The look tells, without writing, that this process could not write them. */
	for (unsigned i = 0; i < s->n; i++) {
		struct graid_given_info g = { .struct_size = sizeof(g) };

		if (graid_array_given_info(a, i, &g) || g.verdict != GRAID_GIVEN_MEMBER ||
		    g.writable)
			return 14;
	}
	graid_array_close(a);
	free(buf);
	free(want);
	/* And a writable open says that none could be opened for writing, not "no superblock". */
	setenv("GRAID_LOCK_DIR", "/nonexistent-lock-dir-not-reached", 1);
	rc = graid_array_open(s->paths, s->n, NULL, &a);
	if (rc != -EACCES && rc != -EPERM)
		return 15;
	return 0;
}

Test(left_out, a_look_works_on_members_that_cannot_be_written, .timeout = 60)
{
	const bool none[4] = { false, false, false, false };
	uint64_t before[4];
	struct au_set s;
	int rc;

	lo_make(&s, 4, 5);
	for (unsigned i = 0; i < 4; i++)
		before[i] = au_file_hash(s.paths[i]);
	rc = lo_as_reader(&s, none, lo_look);
	cr_assert_eq(rc, 0, "the look at read-only members failed its check %d", rc);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), before[i], "member %u changed", i);
	au_remove(&s);
}

/* A writable open given member 1 read-only: role 1 is missing (not failed), named why. */
static int lo_open_one_unwritable(struct au_set *s)
{
	struct graid_given_info g = { .struct_size = sizeof(g) };
	struct graid_array *a;
	char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/graid-left-out-locks-%d", (int)getpid());
	if (mkdir(dir, 0700))
		return 20;
	setenv("GRAID_LOCK_DIR", dir, 1);
	if (graid_array_open(s->paths, s->n, NULL, &a))
		return 21;
	if (graid_array_given_info(a, 1, &g) || g.verdict != GRAID_GIVEN_NOT_WRITABLE ||
	    g.role != 1 || (g.error != -EACCES && g.error != -EPERM) || !strstr(g.why, "writable"))
		return 22;
	if (lo_state(a, 1) != GRAID_MEMBER_MISSING)
		return 23;
	lo_write(a, 0, 1 << 20, 2);
	if (graid_array_close(a))
		return 24;
	rmdir(dir);
	return 0;
}

Test(left_out, a_member_that_cannot_be_written_is_missing_and_catches_up_later, .timeout = 60)
{
	const bool writable[4] = { true, false, true, true };
	struct graid_array *a;
	struct au_set s;
	int rc;

	lo_make(&s, 4, 5);
	rc = lo_as_reader(&s, writable, lo_open_one_unwritable);
	cr_assert_eq(rc, 0, "the open with member 1 not writable failed its check %d", rc);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(lo_state(a, 1), GRAID_MEMBER_ACTIVE);
	lo_lean_on(a, 5, 4, 1);
	lo_verify(a, 0, 1 << 20, 2, 1, "read through the member that caught up");
	graid_array_close(a);
	au_remove(&s);
}

/* A writer killed mid-write: a look says the array is unclean, with regions to resync. */
Test(left_out, a_look_after_a_crash_says_unclean_until_a_writable_open_resyncs, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a, *look;
	struct au_set s;
	int status;
	pid_t pid;

	lo_make(&s, 4, 5);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, 4, NULL, &a))
			_exit(1);
		lo_write(a, 2u << 20, 3u << 20, 2);
		raise(SIGKILL);
		_exit(2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the writer exited %d", WEXITSTATUS(status));
	au_wait_unlocked(s.paths, 4);
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &look), 0);
	cr_assert_eq(graid_array_info(look, &info), 0);
	cr_assert_eq(info.unclean, 1, "a look after a crash says the array is clean");
	cr_assert_gt(info.resync_regions, 0);
	cr_assert_eq(info.holder_pid, 0, "a dead writer named as the holder");
	graid_array_close(look);

	/* While a live writer holds it, the missing clean flag is its doing: not unclean. */
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &look), 0);
	cr_assert_eq(graid_array_info(look, &info), 0);
	cr_assert_eq(info.unclean, 0);
	cr_assert_eq(info.holder_pid, (uint32_t)getpid());
	cr_assert(strstr(info.holder, "pid "), "%s", info.holder);
	graid_array_close(look);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &look), 0);
	cr_assert_eq(graid_array_info(look, &info), 0);
	cr_assert_eq(info.unclean, 0, "still unclean after a writable open and close");
	cr_assert_eq(info.holder_pid, 0);
	lo_verify(look, 2u << 20, 5u << 20, 2, 1, "after the resync");
	graid_array_close(look);
	au_remove(&s);
}
