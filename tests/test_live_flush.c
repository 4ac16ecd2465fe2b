/* SPDX-License-Identifier: MIT */
/*
 * The live-data map's durability order: a flush records unused only the regions whose
 * discard completed before its member flushes ran. A discard that completes while a flush
 * is under way (another queue's, as ublk and nbdkit do) waits for the next flush: its zeroes
 * may not be durable yet. This program stands in for fdatasync() (exported: the library's
 * calls bind to it) to complete a discard between a flush's member flushes and its sweep.
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

static atomic_int lf_armed, lf_calls, lf_discard_rc = 1;
static _Thread_local int lf_inner;
static struct graid_array *lf_array;
static uint64_t lf_len;
static unsigned lf_nmembers;

static uint64_t lf_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

static void *lf_discard_main(void *arg)
{
	(void)arg;
	lf_inner = 1;
	atomic_store(&lf_discard_rc, graid_array_discard(lf_array, 0, lf_len));
	return NULL;
}

/* After the flush's last member flush: a discard of region 0 completes, before the sweep. */
LF_EXPORT int fdatasync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
	rc = real(fd);
	if (!lf_inner && atomic_load(&lf_armed) &&
	    (unsigned)atomic_fetch_add(&lf_calls, 1) + 1 == lf_nmembers) {
		pthread_t t;

		atomic_store(&lf_armed, 0);
		if (pthread_create(&t, NULL, lf_discard_main, NULL) == 0)
			pthread_join(t, NULL);
	}
	return rc;
}

Test(live_flush, a_discard_completed_during_a_flush_waits_for_the_next_flush)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t buf[4096];

	au_make(&s, 4, LF_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	lf_array = a;
	lf_nmembers = 4;
	lf_len = lf_used(a); /* exactly region 0, the one written */
	cr_assert_gt(lf_len, 0);
	atomic_store(&lf_calls, 0);
	atomic_store(&lf_armed, 1);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(atomic_load(&lf_armed), 0, "the discard did not run inside the flush");
	cr_assert_eq(atomic_load(&lf_discard_rc), 0);
	cr_assert_gt(lf_used(a), 0, "region recorded unused by a flush whose member flushes "
				    "ran before the discard completed");
	/* The next flush makes the zeroes durable first: then the region is unused. */
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(lf_used(a), 0, "the next flush did not record it unused");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
