/* SPDX-License-Identifier: MIT */
/* No write that skipped a failed member is acknowledged before the superblocks record it. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

/* Each superblock write of the slow member waits this long: the round takes at least it. */
#define SF_SB_STALL_US 400000

static atomic_bool sf_failing;  /* member 1's failure logged: out, its round under way */
static atomic_bool sf_recorded; /* its event: the round ended, the superblocks say so */

static void sf_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	if (strstr(msg, "member 1 (") && strstr(msg, ") failed: "))
		atomic_store(&sf_failing, true);
}

static void sf_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_MEMBER_FAILED && ev->member == 1)
		atomic_store(&sf_recorded, true);
}

struct sf_writer {
	struct graid_array *a;
	ssize_t rc;
};

/* The write that meets member 1's first failed I/O, and so runs the superblock round. */
static void *sf_first(void *arg)
{
	struct sf_writer *w = arg;
	static uint8_t buf[4096];

	memset(buf, 0x5a, sizeof(buf));
	w->rc = graid_array_write(w->a, buf, sizeof(buf), 0);
	return NULL;
}

/*
 * RAID-5 of four, member 1 failing at its first write, member 2 taking a long time over each
 * superblock. A second write, begun once member 1 is out (planned without it) and on another
 * stripe, must not return before the round that records member 1 as failed has ended: until
 * then member 1's superblock on disk still calls it active, and after a crash its stale copy
 * of that write's chunk would be trusted.
 */
Test(sb_fence, write_around_a_failed_member_waits_for_its_superblocks, .timeout = 60)
{
	char spec1[512], spec2[512];
	const char *paths[AU_MAX];
	struct au_set s;
	struct graid_array *a;
	struct sf_writer w = { 0 };
	pthread_t t;
	uint8_t buf[4096], back[4096];
	bool recorded_at_return;
	ssize_t rc;

	tu_need_fault_injection();
	au_make(&s, 4, 4u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 4096, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec1, sizeof(spec1), "faulty:write-eio-after=0:%s", s.path[1]);
	snprintf(spec2, sizeof(spec2), "faulty:sb-stall-us=%d:%s", SF_SB_STALL_US, s.path[2]);
	paths[1] = spec1;
	paths[2] = spec2;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	atomic_store(&sf_failing, false);
	atomic_store(&sf_recorded, false);
	graid_log_set(sf_log, NULL, 7);
	graid_array_set_event_callback(a, sf_event, NULL);

	w.a = a;
	cr_assert_eq(pthread_create(&t, NULL, sf_first, &w), 0);
	while (!atomic_load(&sf_failing))
		sched_yield();
	cr_assert(!atomic_load(&sf_recorded), "the round ended before the second write began");
	/* Stripe 100: member 1 holds a chunk of it (data or parity), as it does of every stripe. */
	memset(buf, 0xc3, sizeof(buf));
	rc = graid_array_write(a, buf, sizeof(buf), 100u * 3u * 4096u);
	recorded_at_return = atomic_load(&sf_recorded);
	cr_assert_eq(rc, (ssize_t)sizeof(buf));
	cr_assert(recorded_at_return, "a write that skipped member 1 was acknowledged before the "
				      "superblocks recorded its failure");
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, 4096);
	cr_assert_eq(graid_array_read(a, back, sizeof(back), 100u * 3u * 4096u),
		     (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, buf, sizeof(buf)), 0);
	graid_log_set(NULL, NULL, 0);
	graid_array_close(a);
	au_remove(&s);
}
