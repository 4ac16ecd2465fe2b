/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-5 or RAID-6 online (docs/RESHAPE.md, "RAID-5/6 growing, as built") on
 * member files: 4 -> 5 and 6 -> 7 with known data and a scrub after, I/O while it moves,
 * members failing mid-way (going on degraded, spares rebuilt after), a staging failing
 * after STAGED (its rows fenced, the job tried again), the resync of an unclean open by
 * position before the job moves anything. Crashes at any member write are
 * test_reshape_crash.c's, members failing at random points test_reshape_failures.c's. The
 * tests set graid__test_grow56, so they drive the grow even in a build with GROW56_BUILT 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "jobs/reshape_grow.h"
#include "cututil.h"
#include "member/member.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56;
extern _Atomic int graid__test_grow56_staged_fail;
extern atomic_bool graid__test_grow56_hold;
#else
static bool graid__test_grow56; /* no switch in a release build: setup() skips */
static _Atomic int graid__test_grow56_staged_fail;
static atomic_bool graid__test_grow56_hold;
#endif

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("RAID-5/6 growing is switched off; its tests turn it on with "
		     "graid__test_grow56, which exists only with -Dfault_injection");
#endif
	graid__test_grow56 = true;
}

/* A RAID-@p level of @p nold (and @p nadd more files, not in it) holding the model. */
static uint8_t *make_array(struct au_set *s, int level, unsigned nold, unsigned nadd,
			   struct graid_array **out, uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nold + nadd, BYTES);
	cr_assert_eq(au_create(s, nold, level, CHUNK, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	return model;
}

static void grow_whole(int level, unsigned nold, uint64_t seed)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, grown;
	unsigned n, nall = nold + 1;
	uint8_t *model = make_array(&s, level, nold, 1, &a, &size, seed), *tail;

	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_INFO);
	cr_assert_eq(graid_array_grow(a, &s.paths[nold], 1, GRAID_GROW_WAIT), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	/* The first rows went through their staged copy on the added member. */
	cr_assert(strstr(gu_log_text, "through their staged copy"), "%s", gu_log_text);
	grown = gu_array_bytes(a, &n);
	cr_assert_eq(n, nall);
	cr_assert_eq(grown, size / gu_ndata(level, nold) * gu_ndata(level, nall),
		     "size %llu after the grow", (unsigned long long)grown);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the grow");
	/* The space the grow added reads as zeroes, and takes writes. */
	tail = aligned_alloc(BLK, grown - size);
	cr_assert_not_null(tail);
	cr_assert_eq(graid_array_read(a, tail, grown - size, size), (ssize_t)(grown - size));
	for (uint64_t i = 0; i < grown - size; i++)
		cr_assert_eq(tail[i], 0, "added byte %llu", (unsigned long long)i);
	gu_fill(tail, grown - size, seed + 1);
	cr_assert_eq(graid_array_write(a, tail, grown - size, size), (ssize_t)(grown - size));
	cr_assert_eq(graid_array_close(a), 0);
	/* Reopened: not reshaping, the same bytes, parity right. */
	cr_assert_eq(graid_array_open(s.paths, nall, NULL, &a), 0);
	cr_assert_eq(gu_array_bytes(a, &n), grown);
	cr_assert_eq(n, nall);
	gu_check_all(a, model, size);
	{
		uint8_t *got = aligned_alloc(BLK, grown - size);

		cr_assert_eq(graid_array_read(a, got, grown - size, size), (ssize_t)(grown - size));
		cr_assert(!memcmp(got, tail, grown - size));
		free(got);
	}
	gu_scrub_clean(a, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(tail);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56, a_raid5_of_four_grows_to_five, .init = setup)
{
	grow_whole(5, 4, 1);
}

Test(reshape_grow56, a_raid6_of_six_grows_to_seven, .init = setup)
{
	grow_whole(6, 6, 2);
}

Test(reshape_grow56, a_raid5_of_three_grows_by_two_members_at_once, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model = make_array(&s, 5, 3, 2, &a, &size, 3);

	cr_assert_eq(graid_array_grow(a, &s.paths[3], 2, GRAID_GROW_WAIT), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size / 2 * 4);
	cr_assert_eq(n, 5);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "3 -> 5");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

struct waiter {
	struct graid_array *a;
	atomic_bool done;
	int rc;
};

static void *wait_job(void *arg)
{
	struct waiter *w = arg;

	w->rc = reshape_job_wait(w->a);
	atomic_store(&w->done, true);
	return NULL;
}

static void io_during(int level, unsigned nold, uint64_t seed0)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, level, nold, 1, &a, &size, seed0);

	gu_grow_with_io(a, &s, nold, model, size, seed0, 3 * CHUNK);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56, raid5_writes_and_reads_while_it_moves_data_are_right_after, .init = setup)
{
	io_during(5, 4, 7);
}

Test(reshape_grow56, raid6_writes_and_reads_while_it_moves_data_are_right_after, .init = setup)
{
	io_during(6, 6, 8);
}

/*
 * An async queue: writes queued before the grow and not reaped (the job waits for them),
 * then rounds of 32 writes in flight at once, each straddling two chunks (so two pieces,
 * each taking both its rows' locks, many parked on each other and on the windows).
 */
Test(reshape_grow56, raid5_queued_requests_across_the_start_and_the_windows_are_right,
     .init = setup)
{
	struct graid_completion c[64];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 99, rounds = 0;
	uint8_t *model = make_array(&s, 5, 4, 1, &a, &size, 21);
	uint8_t *bufs = aligned_alloc(BLK, 32 * (size_t)CHUNK);
	struct waiter w = { 0 };
	pthread_t t;
	unsigned got;

	cr_assert_not_null(bufs);
	gu_slow_down(a, 4u << 20);
	cr_assert_eq(graid_queue_create(a, 64, &q), 0);
	for (unsigned i = 0; i < 32; i++) {
		uint64_t off = (3 * (uint64_t)i + gu_rng(&seed) % 3) % (size / CHUNK) * CHUNK;

		gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
		memcpy(model + off, bufs + i * (size_t)CHUNK, CHUNK);
		cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, off, i), 0);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	for (got = 0; got < 32;) {
		int n = graid_queue_reap(q, c, 64, 1);

		cr_assert_gt(n, 0);
		for (int i = 0; i < n; i++)
			cr_assert_eq(c[i].result, (int64_t)CHUNK);
		got += (unsigned)n;
	}
	w.a = a;
	cr_assert_eq(pthread_create(&t, NULL, wait_job, &w), 0);
	do {
		uint64_t offs[32];

		for (unsigned i = 0; i < 32; i++) {
			bool dup;

			do {
				offs[i] = (gu_rng(&seed) % (size / CHUNK - 1)) * CHUNK + BLK;
				dup = false;
				for (unsigned k = 0; k < i; k++)
					dup |= offs[k] == offs[i];
			} while (dup);
			gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
			cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, offs[i], i),
				     0);
		}
		cr_assert_geq(graid_queue_submit(q), 0);
		for (got = 0; got < 32;) {
			int n = graid_queue_reap(q, c, 64, 1);

			cr_assert_gt(n, 0);
			for (int i = 0; i < n; i++)
				cr_assert_eq(c[i].result, (int64_t)CHUNK);
			got += (unsigned)n;
		}
		for (unsigned i = 0; i < 32; i++)
			memcpy(model + offs[i], bufs + i * (size_t)CHUNK, CHUNK);
		rounds++;
	} while (!atomic_load(&w.done));
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, 0);
	cr_log_info("%llu rounds of 32 queued writes during the reshape", (unsigned long long)rounds);
	cr_assert_gt(rounds, 2);
	graid_queue_destroy(q);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after queued writes");
	cr_assert_eq(graid_array_close(a), 0);
	free(bufs);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56, a_close_mid_way_is_resumed_by_the_next_open, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, 5, 4, 1, &a, &size, 5);

	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	usleep(200000);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	gu_check_all(a, model, size);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), size / 3 * 4);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "resumed");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Every role of @p a ACTIVE again (a spare's rebuild done), within a few seconds. */
static void wait_all_active(struct graid_array *a)
{
	for (unsigned i = 0; i < 4000; i++) {
		bool all = true;

		for (unsigned r = 0; r < a->nmembers; r++)
			all &= atomic_load(&a->members[r].state) == GRAID_MEMBER_ACTIVE;
		if (all && !atomic_load(&a->rebuild_bg_running))
			return;
		usleep(5000);
	}
	cr_assert_fail("the spares' rebuilds did not end");
}

/*
 * Members failing mid-way (after the staging): the job goes on degraded, recovering the
 * lost chunks of old rows from their parity and writing new rows around the lost members;
 * every byte reads back, writes go on; once it has finished, the spares (whose takeover
 * waited for it) are rebuilt in the new geometry and a scrub finds every stripe right.
 */
static void fail_mid_way(int level, unsigned nold, unsigned nfail)
{
	const unsigned nall = nold + 1, nfiles = nall + nfail;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 55, at;
	uint8_t *model = make_array(&s, level, nold, 1 + nfail, &a, &size,
				    60 + (uint64_t)level);
	uint8_t *buf = aligned_alloc(BLK, 2 * CHUNK);

	cr_assert_not_null(buf);
	for (unsigned i = 0; i < nfail; i++)
		cr_assert_eq(graid_array_add_spare(a, s.paths[nall + i]), 0);
	gu_slow_down(a, 1u << 20);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_WARNING);
	cr_assert_eq(graid_array_grow(a, &s.paths[nold], 1, 0), 0);
	usleep(300000);
	at = atomic_load(&a->reshape_mem->position);
	cr_assert_gt(at, 0, "nothing moved yet");
	/* An old member and (RAID-6) the added one. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	if (nfail > 1)
		cr_assert_eq(graid_array_fail_member(a, nold), 0);
	/* Writes across the array while it moves degraded, by position. */
	for (unsigned i = 0; i < 64; i++) {
		uint64_t len = (1 + gu_rng(&seed) % (2 * CHUNK / BLK)) * BLK;
		uint64_t off = gu_rng(&seed) % ((size - len) / BLK + 1) * BLK;

		gu_fill(buf, len, gu_rng(&seed));
		cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
		memcpy(model + off, buf, len);
	}
	gu_check_all(a, model, size);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0, "the job did not finish degraded: %s", gu_log_text);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "moving on degraded"), "%s", gu_log_text);
	cr_log_info("failed at byte %llu of %llu; finished degraded", (unsigned long long)at,
		    (unsigned long long)size);
	cr_assert_eq(gu_array_bytes(a, NULL), size / gu_ndata(level, nold) * gu_ndata(level, nall));
	gu_check_all(a, model, size);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the spares' rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, nfiles, NULL, &a), 0);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56, raid5_a_member_failing_mid_way_loses_nothing, .init = setup)
{
	fail_mid_way(5, 4, 1);
}

Test(reshape_grow56, raid6_two_members_failing_mid_way_lose_nothing, .init = setup)
{
	fail_mid_way(6, 6, 2);
}

Test(reshape_grow56, scrubs_and_rebuilds_wait_for_the_reshape, .init = setup)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_array(&s, 5, 4, 1, &a, &size, 9);

	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), -EBUSY);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), -EBUSY);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	gu_scrub_clean(a, "after");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* The array of @p a has grown to @p grown bytes within 20 s (a retry comes after 5). */
static void wait_grown(struct graid_array *a, uint64_t grown, const char *what)
{
	for (unsigned i = 0; i < 4000; i++) {
		if (gu_array_bytes(a, NULL) == grown)
			return;
		usleep(5000);
	}
	cr_assert_fail("%s: the reshape did not finish: %s", what, gu_log_text);
}

/*
 * Reads of the array's first @p len bytes, a chunk at a time: each fails -EIO (fenced) or
 * returns the model's bytes, never others. @return how many failed.
 */
static unsigned first_rows_fenced(struct graid_array *a, const uint8_t *model, uint64_t len)
{
	uint8_t *buf = aligned_alloc(BLK, CHUNK);
	unsigned eio = 0;

	cr_assert_not_null(buf);
	for (uint64_t at = 0; at < len; at += CHUNK) {
		ssize_t r = graid_array_read(a, buf, CHUNK, at);

		if (r == -EIO) {
			eio++;
			continue;
		}
		cr_assert_eq(r, (ssize_t)CHUNK, "read at %llu: %zd", (unsigned long long)at, r);
		cr_assert(!memcmp(buf, model + at, CHUNK), "read at %llu: wrong bytes (placed in "
			  "the old geometry over new cells)", (unsigned long long)at);
	}
	free(buf);
	return eio;
}

/*
 * A RAID-@p level of @p nold growing by one whose STAGED step fails after writing the
 * first new rows (their flush failing): [0, S) is fenced, reads there fail rather than
 * return new cells read in the old geometry, a write there fails rather than land where the
 * staged copy overwrites it; beyond, the array serves. @p extra more files (spares). The
 * write past the fence goes to *@p model.
 */
static struct graid_array *staged_fails_of(struct au_set *s, int level, unsigned nold,
					   unsigned extra, uint8_t **model, uint64_t *size,
					   uint64_t seed)
{
	unsigned k = gu_ndata(level, nold);
	struct graid_array *a;
	uint8_t *buf = aligned_alloc(BLK, CHUNK);

	cr_assert_not_null(buf);
	*model = make_array(s, level, nold, 1 + extra, &a, size, seed);
	for (unsigned i = 0; i < extra; i++)
		cr_assert_eq(graid_array_add_spare(a, s->paths[nold + 1 + i]), 0);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_NOTICE);
	atomic_store(&graid__test_grow56_staged_fail, -EIO);
	cr_assert_eq(graid_array_grow(a, &s->paths[nold], 1, GRAID_GROW_WAIT), -EIO);
	cr_assert(strstr(gu_log_text, "fail (-EIO) until"), "%s", gu_log_text);
	/* S is k * k' chunks: reads across and past it. */
	cr_assert_gt(first_rows_fenced(a, *model, 2ull * k * (k + 1) * CHUNK), 0,
		     "no read of [0, S) failed");
	gu_fill(buf, CHUNK, seed + 1);
	cr_assert_eq(graid_array_write(a, buf, CHUNK, 4 * CHUNK), -EIO,
		     "a write into [0, S) was taken in the old geometry");
	cr_assert_eq(graid_array_write(a, buf, CHUNK, *size - CHUNK), (ssize_t)CHUNK);
	memcpy(*model + *size - CHUNK, buf, CHUNK);
	free(buf);
	return a;
}

static struct graid_array *staged_fails(struct au_set *s, unsigned extra, uint8_t **model,
					uint64_t *size, uint64_t seed)
{
	return staged_fails_of(s, 5, 4, extra, model, size, seed);
}

/*
 * Findings 1 and 5 (docs/RESHAPE.md): after the STAGED step failed, [0, S) is never served
 * in the wrong geometry; a member failing then has the job tried again (degraded, the
 * fence lifted once the rows are written from the copy), and once it has finished the spare
 * takes the failed role and is rebuilt.
 */
Test(reshape_grow56, a_staging_failing_after_staged_is_fenced_then_tried_again, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	a = staged_fails(&s, 1, &model, &size, 41);
	atomic_store(&graid__test_grow56_staged_fail, 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	wait_grown(a, size / 3 * 4, "after a member failed");
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "trying again"), "%s", gu_log_text);
	gu_check_all(a, model, size);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the retry and the spare's rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * The same on RAID-6 6 -> 7, two old members failing after the stop (the added one holds
 * the staged copy, which the step needs: without it the job waits for an open with it).
 */
Test(reshape_grow56, raid6_a_staging_failing_after_staged_is_fenced_then_tried_again,
     .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	a = staged_fails_of(&s, 6, 6, 2, &model, &size, 51);
	atomic_store(&graid__test_grow56_staged_fail, 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_fail_member(a, 5), 0);
	wait_grown(a, size / 4 * 5, "after two members failed");
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	gu_check_all(a, model, size);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the retry and the spares' rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 9, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Finding 5: no member out, the cause gone: the job is tried again at its retry time (5 s). */
Test(reshape_grow56, a_stopped_job_is_tried_again_once_the_cause_is_gone, .init = setup,
     .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	a = staged_fails(&s, 0, &model, &size, 45);
	atomic_store(&graid__test_grow56_staged_fail, 0);
	wait_grown(a, size / 3 * 4, "the cause gone");
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "trying again"), "%s", gu_log_text);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "tried again");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Finding 1: closed while fenced, the next open writes [0, S) from the copy; nothing lost. */
Test(reshape_grow56, a_close_while_the_first_rows_are_fenced_loses_no_write, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	a = staged_fails(&s, 0, &model, &size, 43);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_close(a), 0);
	atomic_store(&graid__test_grow56_staged_fail, 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	gu_check_all(a, model, size);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), size / 3 * 4);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened and finished");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * The added member, which holds the staged copy, missing at the open after the STAGED step
 * failed: the open serves all but [0, S), which fails -EIO (before, the open failed, and
 * the whole array was out of reach for the want of one new device); the next open with it
 * writes the first rows from the copy and finishes, nothing lost.
 */
Test(reshape_grow56, an_open_without_the_staged_copy_serves_all_but_the_first_rows,
     .init = setup)
{
	const char *four[4];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	a = staged_fails(&s, 0, &model, &size, 47);
	cr_assert_eq(graid_array_close(a), 0);
	atomic_store(&graid__test_grow56_staged_fail, 0);
	for (unsigned i = 0; i < 4; i++)
		four[i] = s.paths[i];
	gu_log_text[0] = '\0';
	cr_assert_eq(graid_array_open(four, 4, NULL, &a), 0, "%s", gu_log_text);
	cr_assert(strstr(gu_log_text, "fail (-EIO) until they are, the rest is served"), "%s",
		  gu_log_text);
	cr_assert_gt(first_rows_fenced(a, model, 2ull * 3 * 4 * CHUNK), 0,
		     "no read of [0, S) failed");
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), size / 3 * 4);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "with the copy back, finished");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Garbage over member file @p path's @p len bytes at @p off (a torn parity write). */
static void tear(const char *path, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *junk = malloc(len);
	FILE *f = fopen(path, "r+b");

	cr_assert(junk && f);
	gu_fill(junk, len, seed);
	cr_assert_eq(fseeko(f, (off_t)off, SEEK_SET), 0);
	cr_assert_eq(fwrite(junk, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(junk);
}

/*
 * Finding 6: a crash mid-way leaves an old row past the position dirty with torn parity.
 * The unclean open resyncs it (in the old geometry, by position) before the job moves
 * anything, so when one of the row's data members fails before the job reaches it, the
 * window recovers the right bytes from parity.
 */
Test(reshape_grow56, an_unclean_open_resyncs_by_position_before_the_job_moves, .init = setup)
{
	struct graid_array *a;
	struct au_set s;
	struct layout ol;
	uint64_t size, data_off, at, row;
	uint8_t *model = make_array(&s, 5, 4, 1, &a, &size, 47);
	uint8_t *buf = aligned_alloc(BLK, CHUNK);
	unsigned pm, dm;

	cr_assert_not_null(buf);
	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	usleep(300000);
	cr_assert_gt(atomic_load(&a->reshape_mem->position), 0, "nothing moved yet");
	cr_assert_lt(atomic_load(&a->reshape_mem->position), size / 2);
	ol = a->reshape_mem->old_lay;
	data_off = a->data_offset;
	/* A write far past the position: its row marked dirty, then the crash (no write lands). */
	at = size - 8 * CHUNK;
	gu_fill(buf, CHUNK, 48);
	cr_assert_eq(graid_array_write(a, buf, CHUNK, at), (ssize_t)CHUNK);
	memcpy(model + at, buf, CHUNK);
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	/* The crash tore that row's parity. */
	row = at / ((uint64_t)ol.chunk * ol.ndata);
	pm = layout_role_member(&ol, row, ol.ndata);
	dm = layout_role_member(&ol, row, (unsigned)(at / ol.chunk % ol.ndata) == 0 ? 1 : 0);
	tear(s.path[pm], data_off + row * ol.chunk, ol.chunk, 49);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_NOTICE);
	atomic_store(&graid__test_grow56_hold, true);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert(strstr(gu_log_text, "dirty regions to resync"), "%s", gu_log_text);
	/* A data member of that row fails before the job has moved it. */
	cr_assert_eq(graid_array_fail_member(a, dm), 0);
	atomic_store(&graid__test_grow56_hold, false);
	cr_assert_eq(reshape_job_wait(a), 0, "%s", gu_log_text);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
	au_remove(&s);
}
