/* SPDX-License-Identifier: MIT */
/*
 * Two flushes overlap (two threads, as ublk and nbdkit queues do; found by review). Flush A's
 * member flushes have all run; a discard of region 0 then completes, and flush B begins
 * (live_flush_begin stamps the region with its epoch) and stalls in its first member flush.
 * Flush A's sweep must not record the region unused: none of its member flushes ran after
 * the discard completed, and B has flushed nothing yet.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

#define LF_MEMBER_BYTES ((1u << 20) + (16u << 20))
#define LF_EXPORT __attribute__((visibility("default")))

static atomic_int lf_armed, lf_calls, lf_b_started, lf_a_done;
static _Thread_local int lf_role; /* 0 main (flush A), 1 thread before B, 2 thread in B */
static struct graid_array *lf_array;
static uint64_t lf_len;
static unsigned lf_nmembers;
static atomic_int lf_discard_rc = 1, lf_flush_b_rc = 1;

static uint64_t lf_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

static void *lf_thread(void *arg)
{
	(void)arg;
	lf_role = 1;
	lf_discard_rc = graid_array_discard(lf_array, 0, lf_len);
	lf_role = 2;
	lf_flush_b_rc = graid_array_flush(lf_array);
	return NULL;
}

LF_EXPORT int fdatasync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
	if (lf_role == 2 && !atomic_exchange(&lf_b_started, 1)) {
		/* Flush B has begun (its live_flush_begin ran): stall until A has swept. */
		while (!atomic_load(&lf_a_done))
			usleep(1000);
	}
	rc = real(fd);
	if (lf_role == 0 && atomic_load(&lf_armed) &&
	    (unsigned)atomic_fetch_add(&lf_calls, 1) + 1 == lf_nmembers) {
		pthread_t t;

		atomic_store(&lf_armed, 0);
		cr_assert_eq(pthread_create(&t, NULL, lf_thread, NULL), 0);
		pthread_detach(t);
		/* At most 2 s: a fix that serialises flushes keeps B from starting until A ends. */
		for (int i = 0; i < 2000 && !atomic_load(&lf_b_started); i++)
			usleep(1000);
	}
	return rc;
}

Test(live_flush_overlap, an_overlapping_flush_does_not_sweep_what_only_the_later_one_promoted)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t buf[4096];
	uint64_t used;

	au_make(&s, 4, LF_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	lf_array = a;
	lf_nmembers = 4;
	lf_len = lf_used(a);
	cr_assert_gt(lf_len, 0);
	atomic_store(&lf_calls, 0);
	atomic_store(&lf_armed, 1);
	cr_assert_eq(graid_array_flush(a), 0); /* flush A */
	used = lf_used(a);
	atomic_store(&lf_a_done, 1);
	cr_assert_eq(lf_discard_rc, 0);
	for (int i = 0; i < 5000 && atomic_load(&lf_flush_b_rc) == 1; i++)
		usleep(1000); /* let flush B end before the array is looked at again */
	cr_assert_gt(used, 0, "flush A recorded the region unused though the discard completed "
			      "after all of A's member flushes and flush B had flushed nothing");
	cr_assert_eq(atomic_load(&lf_flush_b_rc), 0);
	/* B's member flushes ran after the discard: the next sweep may record it unused. */
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(lf_used(a), 0, "the region stayed used after flushes that made it durable");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
