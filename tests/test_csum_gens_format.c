/* SPDX-License-Identifier: MIT */
/*
 * Generations in the superblock (docs/FORMAT.md, "Generations"; docs/INTEGRITY.md, "Lost
 * writes", decision 5): a checksummed array this version creates is major 3 with GENERATIONS
 * (bit 17); an older checksummed array (major 2, every generation 0) gets it at its first
 * writable open and keeps it off in a read-only one; a crash in the round that upgrades it
 * leaves the freshest superblock's word; GENERATIONS without CHECKSUMS is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "array/array.h"
#include "arrayutil.h"
#include "csumutil.h"
#include "format/superblock.h"
#include "format/tag_format.h"

#define GF_N 4
#define GF_BYTES (12u << 20)
#define GF_DATA (256u << 10)

static void gf_quiet(void)
{
	graid_log_set(NULL, NULL, 0);
}

static void gf_sb_read(const char *path, struct superblock *sb)
{
	uint8_t buf[GRAID_SB_SIZE];
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(sb_decode(buf, sb), 0, "%s: the superblock does not decode", path);
}

static void gf_sb_write(const char *path, const struct superblock *sb)
{
	uint8_t buf[GRAID_SB_SIZE];
	int fd = open(path, O_WRONLY);

	cr_assert_geq(fd, 0);
	sb_encode(sb, buf);
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
}

/* Every member's superblock is major @p major, with GENERATIONS exactly when @p gens. */
static void gf_expect_major(const struct au_set *s, unsigned major, bool gens)
{
	for (unsigned m = 0; m < GF_N; m++) {
		struct superblock sb;

		gf_sb_read(s->paths[m], &sb);
		cr_assert_eq(sb.version, major, "member %u: major %u, not %u", m, sb.version, major);
		cr_assert(sb.flags & GRAID_SB_F_CHECKSUMS);
		cr_assert_eq(!!(sb.flags & GRAID_SB_F_GENERATIONS), gens,
			     "member %u: GENERATIONS %s", m, gens ? "missing" : "set");
		cr_assert_eq(sb_generations(&sb), gens);
	}
}

static void gf_pattern(uint8_t *buf, unsigned round)
{
	for (size_t i = 0; i < GF_DATA; i++)
		buf[i] = (uint8_t)(i * 13 + round * 101 + (i >> 12));
}

static struct graid_array *gf_open(const struct au_set *s, unsigned flags)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = flags };
	struct graid_array *a = NULL;

	cr_assert_eq(graid_array_open(s->paths, GF_N, &o, &a), 0);
	return a;
}

/* Reads back round @p round's data, with no lost write reported. */
static void gf_check(struct graid_array *a, unsigned round)
{
	uint8_t *want = malloc(GF_DATA), *got = malloc(GF_DATA);
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	gf_pattern(want, round);
	cr_assert_eq(graid_array_read(a, got, GF_DATA, 0), (ssize_t)GF_DATA);
	cr_assert_eq(memcmp(got, want, GF_DATA), 0);
	for (unsigned m = 0; m < GF_N; m++) {
		cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
		cr_assert_eq(mi.checksum_lost_writes, 0, "member %u reports a lost write", m);
		cr_assert_eq(mi.checksum_errors, 0, "member %u reports a checksum error", m);
	}
	free(want);
	free(got);
}

/* A RAID-5 of four with checksums, as this version creates it. */
static struct graid_array *gf_create(struct au_set *s)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = 16384, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array *a = NULL;

	gf_quiet();
	au_make(s, GF_N, GF_BYTES);
	cr_assert_eq(graid_array_create(s->paths, GF_N, &cfg, &a), 0);
	return a;
}

/*
 * An array as a version before generations left it: checksummed, major 2, every tag's meta
 * word 0. Made by this version with the generations switched off on the handle before
 * anything is written (its writes then keep meta 0, and its close writes major 2).
 */
static void gf_make_old(struct au_set *s)
{
	struct graid_array *a = gf_create(s);
	uint8_t *buf = malloc(GF_DATA);
	struct cu_geom g;

	a->csum_gens = false;
	gf_pattern(buf, 1);
	cr_assert_eq(graid_array_write(a, buf, GF_DATA, 0), (ssize_t)GF_DATA);
	cu_geom_read(&g, a, s->paths[0]);
	cr_assert_eq(graid_array_close(a), 0);
	gf_expect_major(s, GRAID_SB_VERSION_MAJOR_INCOMPAT, false);
	/* Every tag the writes left holds generation 0 (their meta word is VALID alone). */
	for (unsigned m = 0; m < GF_N; m++) {
		int fd = open(s->paths[m], O_RDONLY);
		uint8_t t[8];

		cr_assert_geq(fd, 0);
		for (uint64_t b = 0; b < 16; b++) {
			cr_assert_eq(pread(fd, t, 8, (off_t)cu_tag_pos(&g, b)), 8);
			cr_assert_eq(t[4] | t[5] | t[6] | (t[7] & 0x7f), 0,
				     "member %u block %llu: meta bits set", m, (unsigned long long)b);
		}
		close(fd);
	}
	free(buf);
}

Test(csum_gens_format, a_created_checksummed_array_is_major_3_with_generations)
{
	struct au_set s;
	struct graid_array *a = gf_create(&s);
	uint8_t *buf = malloc(GF_DATA);

	cr_assert(a->csum_gens);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_FEATURES, true);
	gf_pattern(buf, 1);
	cr_assert_eq(graid_array_write(a, buf, GF_DATA, 0), (ssize_t)GF_DATA);
	cr_assert_eq(graid_array_close(a), 0);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_FEATURES, true);
	a = gf_open(&s, GRAID_OPEN_READ_ONLY);
	cr_assert(a->csum_gens, "the superblock's GENERATIONS turns them on");
	gf_check(a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

Test(csum_gens_format, an_older_array_is_upgraded_at_its_first_writable_open_only)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct au_set s;
	struct graid_array *a;
	uint8_t *buf = malloc(GF_DATA);

	gf_make_old(&s);
	/* Read-only: generations stay off, nothing is written. */
	a = gf_open(&s, GRAID_OPEN_READ_ONLY);
	cr_assert_not(a->csum_gens);
	gf_check(a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_INCOMPAT, false);
	/* Writable: the open's own superblock round carries the bit. */
	a = gf_open(&s, 0);
	cr_assert(a->csum_gens);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_FEATURES, true);
	gf_check(a, 1);
	/* The all-zero generations and records agree: a scrub finds nothing. */
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(rep.rewritten, 0);
	gf_pattern(buf, 2);
	cr_assert_eq(graid_array_write(a, buf, GF_DATA / 2, 0), (ssize_t)(GF_DATA / 2));
	cr_assert_eq(graid_array_close(a), 0);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_FEATURES, true);
	a = gf_open(&s, 0);
	cr_assert(a->csum_gens);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(rep.rewritten, 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * A crash in the upgrading open's round: one member still has the superblock from before it
 * (major 2, no bit, one event behind), the others the round's (major 3 with the bit). The
 * freshest's word is the array's: generations on, and after the next close every member is
 * major 3 with the bit; the data reads right and no lost write is reported.
 */
Test(csum_gens_format, a_crash_in_the_upgrading_round_keeps_the_freshest_word)
{
	struct au_set s;
	struct superblock before, now;
	struct graid_array *a;
	int status;
	pid_t pid;

	gf_make_old(&s);
	gf_sb_read(s.paths[3], &before);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The upgrading open, and the process dies before its close. */
		if (graid_array_open(s.paths, GF_N, NULL, &a) || !a->csum_gens)
			_exit(2);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(s.paths, GF_N);
	gf_sb_read(s.paths[0], &now);
	cr_assert(sb_generations(&now));
	cr_assert_eq(now.events, before.events + 1);
	/* Member 3 as if the round had not reached it. */
	gf_sb_write(s.paths[3], &before);
	a = gf_open(&s, 0);
	cr_assert(a->csum_gens, "the freshest superblock has GENERATIONS");
	cr_assert_eq(graid_array_flush(a), 0);
	gf_check(a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	gf_expect_major(&s, GRAID_SB_VERSION_MAJOR_FEATURES, true);
	a = gf_open(&s, GRAID_OPEN_READ_ONLY);
	cr_assert(a->csum_gens);
	gf_check(a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* GENERATIONS without CHECKSUMS: no superblock of it decodes, and no open assembles it. */
Test(csum_gens_format, generations_without_checksums_are_refused)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .chunk_bytes = 16384, .backend = "isal" };
	struct graid_array *a = NULL;
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb, back;
	struct au_set s;

	gf_quiet();
	au_make(&s, 2, GF_BYTES);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a), 0);
	cr_assert_not(a->csum_gens);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned m = 0; m < 2; m++) {
		gf_sb_read(s.paths[m], &sb);
		cr_assert_eq(sb.version, GRAID_SB_VERSION_MAJOR);
		sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
		sb.flags |= GRAID_SB_F_GENERATIONS;
		sb_encode(&sb, buf);
		cr_assert_eq(sb_decode(buf, &back), -EPROTO);
		gf_sb_write(s.paths[m], &sb);
	}
	a = NULL;
	cr_assert_neq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cr_assert_null(a);
	au_remove(&s);
}
