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
