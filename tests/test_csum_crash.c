/* SPDX-License-Identifier: MIT */
/*
 * Checksums after a crash: a block written just before a kill holds new bytes under its old
 * tag (the tag was cached). Read before the background resync reaches its region, it is
 * answered from its data and reported CSUM_UNVERIFIED, never healed back to the old bytes
 * nor reported as corruption.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "array/array.h"

#define CC_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define CC_CHUNK (64u * 1024)
#define CC_OFF (40u * 4096)

static pthread_t cc_main;
static atomic_bool cc_hold;
static atomic_uint cc_unverified, cc_error;

static void cc_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

/* Reads of other threads (the worker's resync) wait while cc_hold, till 10 s from the open. */
static _Atomic time_t cc_until;

static void cc_seam(struct graid_array *a, unsigned member)
{
	(void)a;
	(void)member;
	while (atomic_load(&cc_hold) && !pthread_equal(pthread_self(), cc_main) &&
	       time(NULL) < atomic_load(&cc_until))
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

static void cc_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_CSUM_UNVERIFIED)
		atomic_fetch_add(&cc_unverified, 1);
	if (ev->type == GRAID_EVENT_CSUM_ERROR || ev->type == GRAID_EVENT_CSUM_TAG_ERROR)
		atomic_fetch_add(&cc_error, 1);
}

Test(csum_crash, new_bytes_under_an_old_tag_are_unverified_not_healed)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = CC_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_RESYNC_BACKGROUND };
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf, *want;
	int status;
	pid_t pid;

	au_make(&s, 3, CC_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(s.paths, 3, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	buf = malloc(info.size);
	want = malloc(info.size);
	cc_pattern(buf, 0, info.size, 1);
	cr_assert_eq(graid_array_write(a, buf, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(graid_array_close(a), 0);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The new bytes land; their tags die with the process, unwritten. */
		if (graid_array_open(s.paths, 3, NULL, &a))
			_exit(2);
		cc_pattern(buf, CC_OFF, 4096, 2);
		_exit(graid_array_write(a, buf, 4096, CC_OFF) == 4096 ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(s.paths, 3);

	cc_main = pthread_self();
	atomic_store(&cc_hold, true);
	atomic_store(&cc_until, time(NULL) + 10);
	graid__test_before_read = cc_seam;
	cr_assert_eq(graid_array_open(s.paths, 3, &opt, &a), 0);
	graid_array_set_event_callback(a, cc_on_event, NULL);
	cr_assert_eq(graid_array_read(a, buf, 4096, CC_OFF), 4096);
	cc_pattern(want, CC_OFF, 4096, 2);
	cr_assert_eq(memcmp(buf, want, 4096), 0, "the bytes written before the crash are lost");
	cr_assert_eq(atomic_load(&cc_unverified), 1);
	cr_assert_eq(atomic_load(&cc_error), 0);
	atomic_store(&cc_hold, false);
	graid__test_before_read = NULL;
	cr_assert_eq(graid_array_close(a), 0);

	/* After the resync, and a clean close: every block verifies. */
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	graid_array_set_event_callback(a, cc_on_event, NULL);
	cc_pattern(want, 0, info.size, 1);
	cc_pattern(want + CC_OFF, CC_OFF, 4096, 2);
	cr_assert_eq(graid_array_read(a, buf, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(memcmp(buf, want, info.size), 0);
	cr_assert_eq(atomic_load(&cc_unverified), 1);
	cr_assert_eq(atomic_load(&cc_error), 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(want);
	au_remove(&s);
#endif
}
