/* SPDX-License-Identifier: MIT */
/*
 * Every job's events end: a scrub or resync that started and could not get its buffers
 * sends its DONE with the error; a rebuild that never began on any role sends no STOPPED.
 * Linked statically for the buffers' seam (io/row_job.h).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "io/row_job.h"
#include "jobs/jobs.h"

#define JE_MEMBER_BYTES (4u << 20)
#define JE_MAX 64u

struct je_rec {
	pthread_mutex_t lock;
	struct graid_event ev[JE_MAX];
	unsigned n;
};

/* The tests need the fault-injection seams; a release build compiles none of them. */
#if GRAID_FAULT_INJECTION
static void je_on_event(void *arg, const struct graid_event *ev)
{
	struct je_rec *r = arg;

	pthread_mutex_lock(&r->lock);
	if (r->n < JE_MAX)
		r->ev[r->n++] = *ev;
	pthread_mutex_unlock(&r->lock);
}

/* How many events of @p type were seen; the last one's error in *err. */
static unsigned je_count(struct je_rec *r, int type, int *err)
{
	unsigned n = 0;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < r->n; i++)
		if (r->ev[i].type == type) {
			n++;
			if (err)
				*err = r->ev[i].error;
		}
	pthread_mutex_unlock(&r->lock);
	return n;
}

static struct graid_array *je_open(struct au_set *s, struct je_rec *r)
{
	struct graid_array *a;

	au_make(s, 3, JE_MEMBER_BYTES);
	cr_assert_eq(au_create(s, 3, 5, 65536, &a), 0);
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	cr_assert_eq(graid_array_set_event_callback(a, je_on_event, r), 0);
	return a;
}

#endif

Test(job_ends, scrub_without_buffers_sends_done_with_the_error)
{
#if GRAID_FAULT_INJECTION
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	static struct je_rec r;
	struct au_set s;
	struct graid_array *a = je_open(&s, &r);
	int err = 0;

	graid__test_row_bufs_fail = true;
	cr_expect_eq(graid_array_scrub(a, 0, &rep), -ENOMEM);
	graid__test_row_bufs_fail = false;
	cr_expect_eq(je_count(&r, GRAID_EVENT_SCRUB_STARTED, NULL), 1);
	cr_expect_eq(je_count(&r, GRAID_EVENT_SCRUB_DONE, &err), 1, "SCRUB_STARTED never ended");
	cr_expect_eq(err, -ENOMEM);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
#else
	cr_skip_test("the buffers' seam is in fault-injection builds only");
#endif
}

Test(job_ends, resync_without_buffers_sends_done_with_the_error)
{
#if GRAID_FAULT_INJECTION
	static struct je_rec r;
	struct au_set s;
	struct graid_array *a = je_open(&s, &r);
	int err = 0;

	cr_assert(a->bitmap.enabled, "the array has no write-intent bitmap to resync");
	graid__test_row_bufs_fail = true;
	cr_expect_eq(array_resync(a), -ENOMEM);
	graid__test_row_bufs_fail = false;
	cr_expect_eq(je_count(&r, GRAID_EVENT_RESYNC_STARTED, NULL), 1);
	cr_expect_eq(je_count(&r, GRAID_EVENT_RESYNC_DONE, &err), 1, "RESYNC_STARTED never ended");
	cr_expect_eq(err, -ENOMEM);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
#else
	cr_skip_test("the buffers' seam is in fault-injection builds only");
#endif
}

/* A failed role and no spare: nothing is REBUILDING, the rebuild fails before any pass. */
Test(job_ends, rebuild_that_never_began_sends_no_stopped)
{
#if GRAID_FAULT_INJECTION
	static struct je_rec r;
	struct au_set s;
	struct graid_array *a = je_open(&s, &r);

	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	graid__test_row_bufs_fail = true;
	cr_expect_eq(graid_array_rebuild(a, NULL, NULL), -ENOMEM);
	graid__test_row_bufs_fail = false;
	cr_expect_eq(je_count(&r, GRAID_EVENT_REBUILD_STOPPED, NULL), 0,
		     "REBUILD_STOPPED for a rebuild that never started");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
#else
	cr_skip_test("the buffers' seam is in fault-injection builds only");
#endif
}

/*
 * A replace asked while a close on another thread has begun (closing set, the replaces
 * already stopped): refused, since a copy begun now would outlive the handle.
 */
Test(job_ends, a_replace_asked_during_a_close_is_refused)
{
	struct au_set s;
	struct graid_array *a;

	au_make(&s, 3, JE_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	atomic_store(&a->closing, true);
	cr_expect_eq(graid_array_replace_start(a, 1, NULL, 0), -ECANCELED);
	cr_expect_eq(graid_array_replace_start(a, 1, NULL, GRAID_REPLACE_WAIT), -ECANCELED);
	atomic_store(&a->closing, false);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
