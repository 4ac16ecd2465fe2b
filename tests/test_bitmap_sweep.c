/* SPDX-License-Identifier: MIT */
/*
 * When the write-intent bitmap may clear a mark (found by review): only where the flush that
 * clears it made every write the mark covered durable, and never before the resync after an
 * unclean open has reached the region. The old sweep cleared the mark in each sequence here
 * (the last test against the old code; the others drive the flush steps it did not have);
 * each fails with its rule taken out of bitmap.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "meta/bitmap.h"
#include "testutil.h"

#define BS_CHUNK (64u * 1024)

/*
 * A write in flight while one flush begins and ends after the next flush's member flushes
 * began: that flush did not make it durable, so its sweep must keep the mark. Before, the
 * first sweep took HOT off under the write and the second cleared the mark, as the write
 * had ended by then.
 */
Test(bitmap_sweep, a_write_that_ends_after_a_flush_began_keeps_its_mark, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint32_t e;

	au_make(&s, 3, 16u << 20);
	cr_assert_eq(au_create(&s, 3, 5, BS_CHUNK, &a), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_not(bitmap_region_marked(a, 0), "a fresh array's region 0 is clean");

	bitmap_start_write(a, 0);
	cr_assert(bitmap_region_marked(a, 0));
	/* A flush while the write is in flight. */
	e = bitmap_flush_begin(a);
	bitmap_sweep(a, e);
	cr_assert(bitmap_region_marked(a, 0), "cleared under a write in flight");
	/* The next flush begins; the write ends during its member flushes. */
	e = bitmap_flush_begin(a);
	bitmap_end_write(a, 0);
	bitmap_sweep(a, e);
	cr_assert(bitmap_region_marked(a, 0),
		  "cleared by a flush that began before the write ended");
	/* Flushes that begin after it ended: the mark goes (one keeps it as written lately). */
	for (unsigned i = 0; i < 3 && bitmap_region_marked(a, 0); i++)
		cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_not(bitmap_region_marked(a, 0), "the mark of a quiet region never went");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Two flushes at once, the region quiet when the first began: a write during the first's
 * member flushes, and a second flush that begins after it. Neither may clear the mark, in
 * either order of their sweeps: the first's member flushes may have missed the write, and
 * the second finds it written lately.
 */
static void bs_two_flushes(bool first_sweeps_first)
{
	struct graid_array *a;
	struct au_set s;
	uint32_t e1, e2;

	au_make(&s, 3, 16u << 20);
	cr_assert_eq(au_create(&s, 3, 5, BS_CHUNK, &a), 0);
	bitmap_start_write(a, 0);
	bitmap_end_write(a, 0);
	/* A flush takes HOT off (written lately); the next finds the region quiet. */
	e1 = bitmap_flush_begin(a);
	bitmap_sweep(a, e1);
	cr_assert(bitmap_region_marked(a, 0));
	e1 = bitmap_flush_begin(a);
	/* A write starts and ends during the first flush's member flushes ... */
	bitmap_start_write(a, 0);
	bitmap_end_write(a, 0);
	/* ... and a second flush begins after it. */
	e2 = bitmap_flush_begin(a);
	if (first_sweeps_first)
		bitmap_sweep(a, e1);
	bitmap_sweep(a, e2);
	if (!first_sweeps_first)
		bitmap_sweep(a, e1);
	cr_assert(bitmap_region_marked(a, 0), "cleared although written after a flush began");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(bitmap_sweep, a_write_between_two_flushes_keeps_its_mark_the_later_ending_first,
     .timeout = 60)
{
	bs_two_flushes(false);
}

Test(bitmap_sweep, a_write_between_two_flushes_keeps_its_mark_the_earlier_ending_first,
     .timeout = 60)
{
	bs_two_flushes(true);
}

static atomic_int bs_resync_done;

static void bs_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_RESYNC_DONE)
		atomic_store(&bs_resync_done, 1);
}

/*
 * A crash leaves 8 regions dirty; one stripe of the last is made inconsistent. Opened with
 * the resync in the background (slowed by throttled members), the caller flushes at once:
 * the marks of regions the resync has not reached must stay, or it skips them and the
 * stripe stays inconsistent (a member lost later would be rebuilt wrong from it).
 */
Test(bitmap_sweep, a_flush_during_the_background_resync_keeps_what_it_has_not_reached,
     .timeout = 120)
{
	struct graid_open_options o = { .struct_size = sizeof(o),
					.flags = GRAID_OPEN_RESYNC_BACKGROUND };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	const unsigned n = 3, len = 1u << 20, rows = 128;
	char fp[3][400];
	const char *paths[3];
	uint64_t data_off, row;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, len);
	pid_t pid;
	int st, fd;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&s, n, 32u << 20);
	cr_assert_eq(au_create(&s, n, 5, BS_CHUNK, &a), 0);
	data_off = a->data_offset;
	cr_assert_eq(a->bitmap.map.region_stripes, 16, "the test assumes 1 MiB regions of a member");
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, n, NULL, &a))
			_exit(1);
		memset(buf, 0x3c, len);
		/* 128 rows of 2 data chunks: 8 regions of 16 rows. */
		for (uint64_t off = 0; off < (uint64_t)rows * 2 * BS_CHUNK; off += len)
			if (graid_array_write(a, buf, len, off) != (ssize_t)len)
				_exit(2);
		_exit(0); /* unclean: every region written stays dirty */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer: %d", st);
	au_wait_unlocked(s.paths, n);
	/* Row 120 (in the last region) made inconsistent, as a torn write leaves it. */
	row = 120;
	memset(buf, 0xee, 4096);
	fd = open(s.paths[0], O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, buf, 4096, (off_t)(data_off + row * BS_CHUNK)), 4096);
	close(fd);

	for (unsigned i = 0; i < n; i++) {
		snprintf(fp[i], sizeof(fp[i]), "faulty:mbps=4:%s", s.paths[i]);
		paths[i] = fp[i];
	}
	atomic_store(&bs_resync_done, 0);
	cr_assert_eq(graid_array_open(paths, n, &o, &a), 0);
	cr_assert_eq(graid_array_set_event_callback(a, bs_event, NULL), 0);
	cr_assert_eq(graid_array_flush(a), 0, "a flush as the resync starts");
	for (unsigned i = 0; i < 1000 && !atomic_load(&bs_resync_done); i++)
		usleep(50 * 1000);
	cr_assert(atomic_load(&bs_resync_done), "no RESYNC_DONE in 50 s");
	cr_assert_eq(graid_array_close(a), 0);

	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_gt(rep.stripes_checked, 0);
	cr_assert_eq(rep.mismatches, 0, "%llu stripes left inconsistent: the resync skipped them",
		     (unsigned long long)rep.mismatches);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(buf);
}


/*
 * A fresh RAID-5 of 3 members in @p s, opened with "faulty:meta-eio-after=0:" on the members
 * @p mask names: their metadata writes all fail, their data writes do not.
 */
static struct graid_array *bs_open_meta_eio(struct au_set *s, unsigned mask)
{
	char fp[3][400];
	const char *paths[3];
	struct graid_array *a;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(s, 3, 16u << 20);
	cr_assert_eq(au_create(s, 3, 5, BS_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(fp[i], sizeof(fp[i]), "faulty:meta-eio-after=0:%s", s->paths[i]);
		paths[i] = mask & (1u << i) ? fp[i] : s->paths[i];
	}
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	return a;
}

/*
 * The mark of a region's first write that no member takes: the write fails, having sent
 * nothing to any member (one member is failed for its failed mark write; the others the
 * array needs). Before, the data went out with no mark anywhere, and a crash then left a
 * stripe no resync would look at.
 */
Test(bitmap_sweep, a_mark_no_member_takes_fails_its_write, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const unsigned len = 64u * 1024;
	uint8_t *buf = aligned_alloc(4096, len), *got = aligned_alloc(4096, len);
	struct graid_array *a;
	struct au_set s;

	a = bs_open_meta_eio(&s, 7);
	memset(buf, 0x77, len);
	cr_assert_eq(graid_array_write(a, buf, len, 0), -EIO, "written with no mark anywhere");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 1, "RAID-5 of 3: one member out for its mark, the rest kept");
	cr_assert_eq(graid_array_read(a, got, len, 0), len);
	cr_assert_neq(got[0], 0x77, "the refused write reached a member");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(buf);
	free(got);
}

/*
 * One member that takes the mark is enough (a reader takes the OR of the copies); a member
 * whose mark write failed is failed for it, as the array can do without it, so that no
 * member holds data whose mark it lacks. Before, it stayed in.
 */
Test(bitmap_sweep, a_mark_one_member_takes_lets_its_write_through, .timeout = 60)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const unsigned len = 64u * 1024;
	uint8_t *buf = aligned_alloc(4096, len), *got = aligned_alloc(4096, len);
	struct graid_array *a;
	struct au_set s;

	a = bs_open_meta_eio(&s, 3);
	memset(buf, 0x78, len);
	cr_assert_eq(graid_array_write(a, buf, len, 0), len);
	cr_assert(bitmap_region_marked(a, 0));
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED, "member 0's mark write failed: still in");
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "member 1: the array needs it");
	cr_assert_eq(graid_array_read(a, got, len, 0), len);
	cr_assert(memcmp(got, buf, len) == 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(buf);
	free(got);
}
