/* SPDX-License-Identifier: MIT */
/*
 * The live-data map: what it records (never written, written, wholly discarded), that it
 * survives a reopen and a kill -9, and that a rebuild copies only used regions, deallocates
 * the rest on the new member, and loses nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define LV_MEMBER_BYTES ((1u << 20) + (16u << 20))

static uint64_t lv_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

static void lv_verify(struct graid_array *a, const uint8_t *model, uint64_t size, const char *when)
{
	uint8_t *buf = malloc(size);

	cr_assert_eq(graid_array_read(a, buf, size, 0), (ssize_t)size, "%s: read", when);
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != model[i])
			cr_assert_fail("%s: byte %llu is %u, expected %u", when,
				       (unsigned long long)i, buf[i], model[i]);
	free(buf);
}

Test(live, regions_are_unused_until_written_and_after_a_whole_discard)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t buf[8192];
	struct graid_array *a;
	struct au_set s;
	uint64_t used;

	au_make(&s, 4, LV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.used_bytes, 0, "a new array uses nothing");
	memset(buf, 7, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 5u << 20), (ssize_t)sizeof(buf));
	used = lv_used(a);
	cr_assert_gt(used, 0);
	cr_assert_lt(used, info.size / 8, "one write marks one region (%llu bytes)",
		     (unsigned long long)used);
	/* Zeroes are not data: a discard of an unused region marks nothing. */
	cr_assert_eq(graid_array_discard(a, 9u << 20, 1u << 20), 0);
	cr_assert_eq(lv_used(a), used);
	cr_assert_eq(graid_array_close(a), 0);

	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(lv_used(a), used, "the map survives a reopen");
	/* A discard that covers only part of the region keeps it used. */
	cr_assert_eq(graid_array_discard(a, 5u << 20, 8192), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(lv_used(a), used);
	/* The whole array discarded, then flushed: nothing is used any more. */
	cr_assert_eq(graid_array_discard(a, 0, info.size), 0);
	cr_assert_eq(lv_used(a), used, "recorded unused only after a flush");
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(lv_used(a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(lv_used(a), 0, "and on disk");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A write acknowledged before a kill -9 left its region recorded used on disk. */
Test(live, an_acknowledged_write_is_used_after_a_kill)
{
	uint8_t buf[4096];
	struct graid_array *a;
	struct au_set s;
	pid_t pid;
	int st;

	au_make(&s, 3, LV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 1, 4096, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	if (pid == 0) {
		graid_log_set(NULL, NULL, 0);
		memset(buf, 0x11, sizeof(buf));
		if (graid_array_open(s.paths, 3, NULL, &a) ||
		    graid_array_write(a, buf, sizeof(buf), 3u << 20) != (ssize_t)sizeof(buf))
			_exit(1);
		raise(SIGKILL); /* no flush, no close */
		_exit(2);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st), "child exited %d", WEXITSTATUS(st));
	au_wait_unlocked(s.paths, 3);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_gt(lv_used(a), 0);
	/* Lose the copies it was read from: the rebuilt one must have copied it. */
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(graid_array_read(a, buf, sizeof(buf), 3u << 20), (ssize_t)sizeof(buf));
	for (unsigned i = 0; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0x11);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * 10% of the array written (one range of it discarded again), a member replaced: the rebuild
 * writes about that much to the new member, the rest of it becomes holes, the data is whole,
 * a scrub is clean, and losing another member afterwards still reads everything back.
 */
static void lv_rebuild(int level, unsigned n, uint32_t chunk)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	uint64_t rng = tu_seed() ^ (uint64_t)(level * 7 + n);
	struct graid_array *a;
	struct au_set s, spare;
	uint8_t *model;
	uint64_t piece;
	unsigned victim = 1, other = 0; /* 0: the copy beside 1 on RAID-1/10 too */

	au_make(&s, n, LV_MEMBER_BYTES);
	au_make(&spare, 1, LV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	piece = info.size / 40 / 4096 * 4096;
	/* Four scattered pieces of 2.5% each, then the last one discarded again. */
	for (unsigned k = 0; k < 4; k++) {
		uint64_t off = (info.size / 4) * k + 8192 * k;

		tu_fill(&rng, model + off, piece);
		cr_assert_eq(graid_array_write(a, model + off, piece, off), (ssize_t)piece);
	}
	cr_assert_eq(graid_array_discard(a, (info.size / 4) * 3 + 8192 * 3, piece), 0);
	memset(model + (info.size / 4) * 3 + 8192 * 3, 0, piece);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_leq(lv_used(a), info.size / 8, "about 7.5%% used: %llu of %llu",
		      (unsigned long long)lv_used(a), (unsigned long long)info.size);

	cr_assert_eq(graid_array_fail_member(a, victim), 0);
	cr_assert_eq(graid_array_replace_member(a, victim, spare.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_member_info(a, victim, &mi), 0);
	cr_assert_leq(mi.write_bytes, (LV_MEMBER_BYTES - (1u << 20)) / 5,
		      "the new member got %llu bytes written of %u",
		      (unsigned long long)mi.write_bytes, LV_MEMBER_BYTES - (1u << 20));
	lv_verify(a, model, info.size, "after the rebuild");
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_gt(rep.unused, 0, "unused rows are not read");
	/* Now the rebuilt member must stand in for another. */
	cr_assert_eq(graid_array_fail_member(a, other), 0);
	lv_verify(a, model, info.size, "with the rebuilt member standing in");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
	au_remove(&spare);
}

Test(live, raid5_rebuild_copies_only_used_regions, .timeout = 300) { lv_rebuild(5, 4, 16384); }
Test(live, raid6_rebuild_copies_only_used_regions, .timeout = 300) { lv_rebuild(6, 5, 8192); }
Test(live, raid1_rebuild_copies_only_used_regions, .timeout = 300) { lv_rebuild(1, 2, 4096); }
Test(live, raid10_rebuild_copies_only_used_regions, .timeout = 300) { lv_rebuild(10, 4, 8192); }

static uint64_t lv_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/*
 * A second reader, from docs/FORMAT.md alone: the superblock's live-data map fields, the
 * map's bits, the region size; the regions its bits mark add up to what the library reports,
 * and the bits are exactly the regions that were written.
 */
Test(live, the_map_decodes_from_the_documented_layout_alone)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t sb[4096], *map, buf[4096];
	uint64_t off, bytes, per, chunk, ndata, nstripes, region_bytes, used = 0;
	struct graid_array *a;
	struct au_set s;
	int fd;

	au_make(&s, 5, LV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 5, 16384, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	memset(buf, 3, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), info.size - 4096), (ssize_t)sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), info.size / 2), (ssize_t)sizeof(buf));
	cr_assert_eq(graid_array_close(a), 0);

	fd = open(s.paths[3], O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	cr_assert_eq(lv_le(sb + 0x0a, 2), 5, "format minor 5");
	chunk = lv_le(sb + 0x3c, 4);
	ndata = lv_le(sb + 0x40, 4) - 1; /* RAID-5 */
	nstripes = lv_le(sb + 0x58, 8) / chunk;
	off = lv_le(sb + 0xd8, 8);
	bytes = lv_le(sb + 0xe0, 8);
	per = lv_le(sb + 0xe8, 8);
	cr_assert(off && bytes && per, "a new array has a map");
	map = malloc(bytes);
	cr_assert_eq(pread(fd, map, bytes, (off_t)off), (ssize_t)bytes);
	close(fd);
	region_bytes = per * chunk * ndata;
	for (uint64_t r = 0; r < (nstripes + per - 1) / per; r++) {
		bool set = map[r / 8] >> (r % 8) & 1;
		bool written = r == 0 || r == (info.size / 2) / region_bytes ||
			       r == (info.size - 4096) / region_bytes;

		cr_assert_eq(set, written, "region %llu", (unsigned long long)r);
		if (set)
			used += (r + 1) * region_bytes > info.size ? info.size - r * region_bytes
								   : region_bytes;
	}
	for (uint64_t r = (nstripes + per - 1) / per; r < bytes * 8; r++)
		cr_assert_eq(map[r / 8] >> (r % 8) & 1, 0, "bit %llu past the last region",
			     (unsigned long long)r);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert_eq(lv_used(a), used);
	cr_assert_eq(graid_array_close(a), 0);
	free(map);
	au_remove(&s);
}

/*
 * A discard and a write of the same region in flight together: either may land last, so the
 * region must stay used (a rebuild then copies whatever it holds).
 */
Test(live, a_discard_racing_a_write_keeps_the_region_used)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_completion c[2];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;
	int got = 0;

	au_make(&s, 4, LV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 65536), 0);
	memset(buf, 0x42, 65536);
	cr_assert_eq(graid_queue_create(a, 4, &q), 0);
	for (int order = 0; order < 2; order++) {
		got = 0;
		if (order == 0) {
			cr_assert_eq(graid_queue_write(q, buf, 65536, 4u << 20, 1), 0);
			cr_assert_eq(graid_queue_discard(q, 0, info.size, 2), 0);
		} else {
			cr_assert_eq(graid_queue_discard(q, 0, info.size, 2), 0);
			cr_assert_eq(graid_queue_write(q, buf, 65536, 4u << 20, 1), 0);
		}
		cr_assert_geq(graid_queue_submit(q), 0);
		while (got < 2) {
			int n = graid_queue_reap(q, c, 2, 1);

			cr_assert_gt(n, 0);
			for (int i = 0; i < n; i++)
				cr_assert_geq(c[i].result, 0);
			got += n;
		}
		cr_assert_eq(graid_array_flush(a), 0);
		cr_assert_gt(lv_used(a), 0, "order %d: the written region stays used", order);
	}
	/* Alone, the same discard frees everything. */
	cr_assert_eq(graid_array_discard(a, 0, info.size), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(lv_used(a), 0);
	cr_assert_eq(graid_queue_destroy(q), 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}
