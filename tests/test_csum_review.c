/* SPDX-License-Identifier: MIT */
/*
 * Checksums under concurrent writes, through the test seam: a real mismatch met by a read
 * that writes of other blocks overtake is still settled (healed) in a bounded number of
 * tries, never retried for as long as the writes go on.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "array/array.h"

#define CV_DATA_OFF (1u << 20)
#define CV_MEMBER_BYTES (CV_DATA_OFF + (4u << 20))
#define CV_CHUNK (64u * 1024)

static void cv_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

#if GRAID_FAULT_INJECTION
static atomic_uint cv_csum_error;

static void cv_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_CSUM_ERROR && ev->error == 0)
		atomic_fetch_add(&cv_csum_error, 1);
}

static pthread_t cv_reader;
static atomic_uint cv_tries;    /* member reads the reader thread issued */
static atomic_uint cv_go;       /* writes asked of the writer, not yet issued */
static atomic_bool cv_stop;

/* Member reads of the reading thread: the first 20 each have a write of another block overtake them. */
static void cv_seam(struct graid_array *a, unsigned member)
{
	(void)a;
	(void)member;
	if (!pthread_equal(pthread_self(), cv_reader))
		return;
	if (atomic_fetch_add(&cv_tries, 1) >= 20)
		return;
	atomic_fetch_add(&cv_go, 1);
	/* The write reaches the (slow, in-order) member before this read does. */
	nanosleep(&(struct timespec){ .tv_nsec = 3000000 }, NULL);
}

static void *cv_writer(void *arg)
{
	struct graid_array *a = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);

	cv_pattern(buf, 200 * 4096, 4096, 1);
	while (!atomic_load(&cv_stop)) {
		unsigned n = atomic_load(&cv_go);

		if (n && atomic_compare_exchange_strong(&cv_go, &n, n - 1)) {
			if (graid_array_write(a, buf, 4096, 200 * 4096) != 4096)
				break;
			continue;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
	free(buf);
	return NULL;
}

/*
 * RAID-1: the copy read for block 5 is corrupted. Each try is overtaken by a write of
 * another block of the same member (the racy read's witness changes): the first try is
 * given up as stale, the next must run where no write can overtake it (under the stripe
 * lock), find the mismatch and heal from the other copy: three member reads. Retried
 * unlocked, every try ends stale for as long as the writes go on.
 */
#endif

Test(csum_review, mirror_mismatch_overtaken_by_writes_heals_in_bounded_tries)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .chunk_bytes = CV_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	char slow[sizeof(((struct au_set *)0)->path[0]) + 32];
	const char *paths[2];
	uint8_t *buf, want[4096], blk[4096];
	struct graid_array *a;
	struct au_set s;
	pthread_t w;
	int fd;

	au_make(&s, 2, CV_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	buf = aligned_alloc(4096, info.size);
	cv_pattern(buf, 0, info.size, 1);
	cr_assert_eq(graid_array_write(a, buf, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(graid_array_close(a), 0);

	/* Block 5 (stripe 0) is read from the first copy: corrupt it there. */
	fd = open(s.path[0], O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, blk, 4096, CV_DATA_OFF + 5 * 4096), 4096);
	blk[100] ^= 0x5a;
	cr_assert_eq(pwrite(fd, blk, 4096, CV_DATA_OFF + 5 * 4096), 4096);
	close(fd);

	/* The first copy a drive that serves one I/O per 10 ms, in the order they come. */
	snprintf(slow, sizeof(slow), "faulty:iops=100:%s", s.path[0]);
	paths[0] = slow;
	paths[1] = s.path[1];
	cr_assert_eq(graid_array_open(paths, 2, NULL, &a), 0);
	graid_array_set_event_callback(a, cv_on_event, NULL);
	/* Block 200's region marked once now: the writes below are then one member write each. */
	cv_pattern(want, 200 * 4096, 4096, 1);
	cr_assert_eq(graid_array_write(a, want, 4096, 200 * 4096), 4096);
	cv_reader = pthread_self();
	atomic_store(&cv_stop, false);
	cr_assert_eq(pthread_create(&w, NULL, cv_writer, a), 0);
	graid__test_before_read = cv_seam;
	cr_assert_eq(graid_array_read(a, buf, 4096, 5 * 4096), 4096);
	graid__test_before_read = NULL;
	atomic_store(&cv_stop, true);
	pthread_join(w, NULL);
	cv_pattern(want, 5 * 4096, 4096, 1);
	cr_assert_eq(memcmp(buf, want, 4096), 0, "wrong bytes returned");
	cr_assert_eq(atomic_load(&cv_csum_error), 1, "%u healed events",
		     atomic_load(&cv_csum_error));
	cr_assert_leq(atomic_load(&cv_tries), 3, "%u tries for one read of a bad block",
		      atomic_load(&cv_tries));
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
#endif
}

/* Flip a byte of data-area block @p mblk of the member file @p path. */
static void cv_corrupt(const char *path, uint64_t mblk, uint8_t flip)
{
	uint8_t blk[4096];
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, blk, 4096, (off_t)(CV_DATA_OFF + mblk * 4096)), 4096);
	blk[100] ^= flip;
	cr_assert_eq(pwrite(fd, blk, 4096, (off_t)(CV_DATA_OFF + mblk * 4096)), 4096);
	close(fd);
}

/* Created with checksums over @p s, filled with round 1 and closed; its size. */
static uint64_t cv_make(struct au_set *s, int level, unsigned n)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = CV_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint8_t *buf;

	au_make(s, n, CV_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(s->paths, n, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	buf = aligned_alloc(4096, info.size);
	cv_pattern(buf, 0, info.size, 1);
	cr_assert_eq(graid_array_write(a, buf, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	return info.size;
}

/* Array block @p blk reads right, or fails -EIO (@p lost); never other bytes. */
static void cv_read_block(struct graid_array *a, uint64_t blk, bool lost)
{
	uint8_t *buf = aligned_alloc(4096, 4096), want[4096];
	ssize_t got = graid_array_read(a, buf, 4096, blk * 4096);

	cv_pattern(want, blk * 4096, 4096, 1);
	if (lost)
		cr_assert_eq(got, -EIO, "block %llu: %zd%s", (unsigned long long)blk, got,
			     got == 4096 && memcmp(buf, want, 4096) ? " (wrong bytes)" : "");
	else
		cr_assert(got == 4096 && memcmp(buf, want, 4096) == 0, "block %llu: %zd",
			  (unsigned long long)blk, got);
	free(buf);
}

/*
 * RAID-1, block 5 bad on both copies: unrecoverable. A replace in service of the first
 * copy must not take the second copy's bytes for it unchecked (and make them its tag):
 * after the swap the block still fails -EIO, never reads back the second copy's bytes.
 */
Test(csum_review, replace_does_not_copy_a_bad_mirror_copy)
{
	struct graid_array *a;
	struct au_set s, sp;

	cv_make(&s, 1, 2);
	cv_corrupt(s.path[0], 5, 0x5a);
	cv_corrupt(s.path[1], 5, 0xa5);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cv_read_block(a, 5, true);
	au_make(&sp, 1, CV_MEMBER_BYTES);
	cr_assert_eq(graid_array_replace_start(a, 0, sp.path[0], GRAID_REPLACE_WAIT), 0);
	cv_read_block(a, 5, true);
	cv_read_block(a, 6, false);
	cr_assert_eq(graid_array_close(a), 0);
	strcpy(s.path[0], sp.path[0]);
	s.paths[0] = s.path[0];
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	cv_read_block(a, 5, true);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&sp);
	au_remove(&s);
}

/*
 * RAID-5, one row with two bad blocks (the replaced member's and another's at the same
 * place): unrecoverable. The replace must not rebuild the first from the second's wrong
 * bytes and tag the result as right.
 */
Test(csum_review, replace_does_not_rebuild_from_a_bad_block)
{
	struct graid_array *a;
	struct au_set s, sp;

	cv_make(&s, 5, 3);
	/* Row 0: each member's first block; member 0 holds data in row 0. */
	cv_corrupt(s.path[0], 2, 0x5a);
	cv_corrupt(s.path[1], 2, 0xa5);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	au_make(&sp, 1, CV_MEMBER_BYTES);
	cr_assert_eq(graid_array_replace_start(a, 0, sp.path[0], GRAID_REPLACE_WAIT), 0);
	cr_assert_eq(graid_array_close(a), 0);
	strcpy(s.path[0], sp.path[0]);
	s.paths[0] = s.path[0];
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	/* Whichever of the two holds data in row 0: its array block fails, never reads wrong. */
	for (uint64_t blk = 0; blk < 2 * CV_CHUNK / 4096; blk++) {
		uint8_t *buf = aligned_alloc(4096, 4096), want[4096];
		ssize_t got = graid_array_read(a, buf, 4096, blk * 4096);

		cv_pattern(want, blk * 4096, 4096, 1);
		cr_assert(got == -EIO || (got == 4096 && memcmp(buf, want, 4096) == 0),
			  "block %llu: %zd%s", (unsigned long long)blk, got,
			  got == 4096 ? " (wrong bytes)" : "");
		free(buf);
	}
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&sp);
	au_remove(&s);
}

/*
 * RAID-1, 70 blocks bad on both copies: more than a bad-block log takes, so the replace
 * ends with no swap (-ENOSPC) and the member keeps its role. Its bad blocks must still fail
 * their tags: a tag the copy forgot would let the first copy's wrong bytes through.
 */
Test(csum_review, replace_without_swap_keeps_lost_blocks_unreadable)
{
	struct graid_array *a;
	struct au_set s, sp;
	int rc;

	cv_make(&s, 1, 2);
	for (uint64_t k = 0; k < 70; k++) {
		cv_corrupt(s.path[0], k, 0x5a);
		cv_corrupt(s.path[1], k, 0xa5);
	}
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	au_make(&sp, 1, CV_MEMBER_BYTES);
	rc = graid_array_replace_start(a, 0, sp.path[0], GRAID_REPLACE_WAIT);
	cr_assert_eq(rc, -ENOSPC, "replace: %d", rc);
	for (uint64_t k = 0; k < 70; k++)
		cv_read_block(a, k, true);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&sp);
	au_remove(&s);
}

static atomic_uint cv_events;

static void cv_count_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_CSUM_ERROR && ev->error == 0)
		atomic_fetch_add(&cv_events, 1);
}

/*
 * RAID-1 with 256 KiB chunks: one member read of a chunk meets 40 bad blocks. Every one is
 * healed and each is an event of its own (the done-when's "every case an event").
 */
Test(csum_review, many_bad_blocks_in_one_read_each_an_event)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .chunk_bytes = 256u * 1024, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf, *want;

	au_make(&s, 2, CV_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a), 0);
	buf = aligned_alloc(4096, 256u * 1024);
	want = malloc(256u * 1024);
	cv_pattern(want, 0, 256u * 1024, 1);
	cr_assert_eq(graid_array_write(a, want, 256u * 1024, 0), 256 * 1024);
	cr_assert_eq(graid_array_close(a), 0);
	for (uint64_t k = 0; k < 40; k++)
		cv_corrupt(s.path[0], k, 0x5a);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0);
	graid_array_set_event_callback(a, cv_count_event, NULL);
	cr_assert_eq(graid_array_read(a, buf, 256u * 1024, 0), 256 * 1024);
	cr_assert_eq(memcmp(buf, want, 256u * 1024), 0, "wrong bytes");
	cr_assert_eq(atomic_load(&cv_events), 40, "%u events for 40 healed blocks",
		     atomic_load(&cv_events));
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(want);
	au_remove(&s);
}

/*
 * RAID-5, member 0's tag area cut short under the open array (its last tag blocks read as
 * I/O errors, as bad sectors there would): the whole array still reads right, the member
 * stays in with no error counted; the tags' loss costs their protection, not the member.
 */
Test(csum_review, unreadable_tag_block_costs_no_member)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size = cv_make(&s, 5, 3);
	uint8_t *buf = aligned_alloc(4096, size), *want = malloc(size);
	int fd;

	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	/* The data area is size / 2 per member; its first tag block is kept, the rest cut. */
	fd = open(s.path[0], O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)(CV_DATA_OFF + size / 2 + 4096)), 0);
	close(fd);
	cv_pattern(want, 0, size, 1);
	cr_assert_eq(graid_array_read(a, buf, size, 0), (ssize_t)size);
	cr_assert_eq(memcmp(buf, want, size), 0, "wrong bytes");
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the member was taken out");
	cr_assert_eq(mi.errors, 0, "%llu errors counted", (unsigned long long)mi.errors);
	/* Writes over the lost tags work, and make them anew (read back after a reopen). */
	cv_pattern(buf, 0, size, 1);
	cr_assert_eq(graid_array_write(a, buf, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_read(a, buf, size, 0), (ssize_t)size);
	cr_assert_eq(memcmp(buf, want, size), 0, "wrong bytes after the reopen");
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(want);
	au_remove(&s);
}

struct cv_race {
	struct graid_array *a;
	atomic_bool stop;
};

static void *cv_race_writer(void *arg)
{
	struct cv_race *r = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);

	for (unsigned i = 0; !atomic_load(&r->stop); i++) {
		memset(buf, i & 1 ? 0x11 : 0xee, 4096);
		if (graid_array_write(r->a, buf, 4096, 12 * 4096) != 4096)
			break;
	}
	free(buf);
	return NULL;
}

/*
 * Members in RAM (tmpfs: reads and writes done in place, a page copied while another thread
 * copies into it): a read racing writes of its block may get bytes torn between the old and
 * the new, which match neither tag while the write is still in flight. For 6 s of such
 * races on RAID-1 and RAID-5: every read whole (old or new), and no checksum event.
 */
static void cv_torn(int level, unsigned n)
{
	struct cv_race r;
	struct au_set s;
	pthread_t t;
	uint8_t *buf = aligned_alloc(4096, 4096);
	const char *tmp = getenv("TMPDIR");
	char *saved = tmp ? strdup(tmp) : NULL;
	time_t end;

	if (access("/dev/shm", W_OK))
		cr_skip_test("no /dev/shm");
	setenv("TMPDIR", "/dev/shm", 1);
	cv_make(&s, level, n);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &r.a), 0);
	atomic_store(&cv_events, 0);
	graid_array_set_event_callback(r.a, cv_count_event, NULL);
	atomic_init(&r.stop, false);
	memset(buf, 0x11, 4096);
	cr_assert_eq(graid_array_write(r.a, buf, 4096, 12 * 4096), 4096);
	cr_assert_eq(pthread_create(&t, NULL, cv_race_writer, &r), 0);
	end = time(NULL) + 6;
	while (time(NULL) < end) {
		ssize_t got = graid_array_read(r.a, buf, 4096, 12 * 4096);
		bool whole = true;

		for (unsigned k = 1; k < 4096 && got == 4096; k++)
			whole &= buf[k] == buf[0];
		cr_assert(got == 4096 && whole, "read: %zd, %s", got, whole ? "whole" : "torn");
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	cr_assert_eq(atomic_load(&cv_events), 0, "%u checksum events for right data",
		     atomic_load(&cv_events));
	cr_assert_eq(graid_array_close(r.a), 0);
	free(buf);
	au_remove(&s);
}

Test(csum_review, raid1_torn_racing_reads_are_not_corruption) { cv_torn(1, 2); }
Test(csum_review, raid5_torn_racing_reads_are_not_corruption) { cv_torn(5, 3); }

/*
 * A crash right after a write (its tags cached, never written): the block holds the new
 * bytes on both RAID-1 copies under their old tags, in a region the bitmap marks. A
 * read-only look (no resync) must answer it from the data, as a writable open does before
 * its resync reaches the region, not fail it -EIO for two "bad" copies.
 */
Test(csum_review, read_only_look_after_a_crash_reads_the_data)
{
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, 4096), want[4096];
	int status;
	pid_t pid;

	cv_make(&s, 1, 2);
	cv_pattern(want, 40 * 4096, 4096, 2);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, 2, NULL, &a))
			_exit(2);
		_exit(graid_array_write(a, want, 4096, 40 * 4096) == 4096 ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(s.paths, 2);
	cr_assert_eq(graid_array_open(s.paths, 2, &opt, &a), 0);
	cr_assert_eq(graid_array_read(a, buf, 4096, 40 * 4096), 4096);
	cr_assert_eq(memcmp(buf, want, 4096), 0, "not the bytes written before the crash");
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}
