/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-0 online (docs/RESHAPE.md) on member files: 3 -> 4 with known data, I/O
 * while it moves, a crash after any member write of a 2 -> 4 (then the open resumes it; the
 * 3 -> 4 with a writer going is test_reshape_crash.c's), a bad sector, bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "jobs/reshape_grow.h"
#include "cututil.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "testutil.h"

#define NOLD 3
#define CHUNK (64u * 1024)
#define BYTES (3ull << 20)
#define BLK 4096u

/* A RAID-0 of three (and a fourth file, not in it) holding @p model, open in *@p out. */
static uint8_t *make_array(struct au_set *s, struct graid_array **out, uint64_t *size,
			   uint64_t seed)
{
	uint8_t *model;

	au_make(s, NOLD + 1, BYTES);
	cr_assert_eq(au_create(s, NOLD, 0, CHUNK, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	return model;
}

static struct graid_array *open_all(struct au_set *s)
{
	struct graid_array *a = NULL;

	cr_assert_eq(graid_array_open(s->paths, NOLD + 1, NULL, &a), 0);
	return a;
}

Test(reshape_grow0, a_raid0_of_three_grows_to_four_and_every_byte_reads_back)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, grown;
	unsigned n;
	uint8_t *model = make_array(&s, &a, &size, 1), *tail;

	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), 0);
	grown = gu_array_bytes(a, &n);
	cr_assert_eq(n, NOLD + 1);
	cr_assert_eq(grown, size / NOLD * (NOLD + 1), "size %llu after the grow",
		     (unsigned long long)grown);
	gu_check_all(a, model, size);
	/* The space the grow added reads as zeroes, and takes writes. */
	tail = aligned_alloc(BLK, grown - size);
	cr_assert_not_null(tail);
	cr_assert_eq(graid_array_read(a, tail, grown - size, size), (ssize_t)(grown - size));
	for (uint64_t i = 0; i < grown - size; i++)
		cr_assert_eq(tail[i], 0);
	gu_fill(tail, grown - size, 2);
	cr_assert_eq(graid_array_write(a, tail, grown - size, size), (ssize_t)(grown - size));
	cr_assert_eq(graid_array_close(a), 0);
	/* Reopened: four members, not reshaping, the same bytes. */
	a = open_all(&s);
	cr_assert_eq(gu_array_bytes(a, &n), grown);
	cr_assert_eq(n, NOLD + 1);
	gu_check_all(a, model, size);
	{
		uint8_t *got = aligned_alloc(BLK, grown - size);

		cr_assert_eq(graid_array_read(a, got, grown - size, size), (ssize_t)(grown - size));
		cr_assert(!memcmp(got, tail, grown - size));
		free(got);
	}
	cr_assert_eq(graid_array_close(a), 0);
	free(tail);
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

Test(reshape_grow0, writes_and_reads_while_it_moves_data_are_right_after)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 77, during;
	uint8_t *model = make_array(&s, &a, &size, 3);

	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = 3 * CHUNK, .zeroes = true });
	cr_assert_gt(during, 0, "no request ran during the reshape");
	cr_assert_eq(gu_array_bytes(a, NULL), size / NOLD * (NOLD + 1));
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	a = open_all(&s);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow0, a_raid0_of_two_grows_by_three_members_at_once)
{
	struct graid_array *a = NULL;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model;

	au_make(&s, 5, BYTES);
	cr_assert_eq(au_create(&s, 2, 0, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	gu_fill(model, size, 11);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 3, GRAID_GROW_WAIT), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size / 2 * 5);
	cr_assert_eq(n, 5);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size / 2 * 5);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow0, one_handle_grows_twice_with_io_between)
{
	struct graid_array *a = NULL;
	struct au_set s;
	uint64_t size, mid;
	unsigned n;
	uint8_t *model;

	au_make(&s, 4, BYTES);
	cr_assert_eq(au_create(&s, 2, 0, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size * 2);
	gu_fill(model, size * 2, 13);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_WAIT), 0);
	mid = gu_array_bytes(a, NULL);
	cr_assert_eq(mid, size / 2 * 3);
	cr_assert_eq(graid_array_write(a, model + size, mid - size, size), (ssize_t)(mid - size));
	cr_assert_eq(graid_array_grow(a, &s.paths[3], 1, GRAID_GROW_WAIT), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size * 2);
	cr_assert_eq(n, 4);
	gu_check_all(a, model, mid);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	gu_check_all(a, model, mid);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * An async queue with writes queued before the grow and not reaped: the job waits for them
 * (they are placed by the old geometry without a chunk lock), and requests queued after,
 * many in flight at once, are routed while the job moves their chunks.
 */
Test(reshape_grow0, requests_in_flight_across_the_start_and_the_windows_are_right)
{
	struct graid_completion c[64];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 99, rounds = 0;
	uint8_t *model = make_array(&s, &a, &size, 21);
	uint8_t *bufs = aligned_alloc(BLK, 32 * (size_t)CHUNK);
	struct waiter w = { 0 };
	pthread_t t;
	unsigned got;

	cr_assert_not_null(bufs);
	cr_assert_eq(graid_queue_create(a, 64, &q), 0);
	/* 32 chunk writes at scattered chunks, submitted, not reaped. */
	for (unsigned i = 0; i < 32; i++) {
		/* Distinct chunks: i spreads them, the random part only shuffles. */
		uint64_t off = ((gu_rng(&seed) % 3) + 3 * (uint64_t)i) % (size / CHUNK) * CHUNK;

		gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
		memcpy(model + off, bufs + i * (size_t)CHUNK, CHUNK);
		cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, off, i), 0);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), -EBUSY, "one at a time");
	if (atomic_load(&a->plain_inflight)) {
		/* Not reaped: the job must not have moved anything yet. */
		usleep(20000);
		cr_assert_eq(atomic_load(&a->reshape_mem->position), 0,
			     "the job moved chunks under unreaped plain requests");
		cr_log_info("the job waited for %u unreaped requests",
			    atomic_load(&a->plain_inflight));
	}
	for (got = 0; got < 32;) {
		int n = graid_queue_reap(q, c, 64, 1);

		cr_assert_gt(n, 0);
		for (int i = 0; i < n; i++)
			cr_assert_eq(c[i].result, (int64_t)CHUNK);
		got += (unsigned)n;
	}
	w.a = a;
	cr_assert_eq(pthread_create(&t, NULL, wait_job, &w), 0);
	/* Rounds of 32 writes in flight at once (distinct chunks per round), during the move. */
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
			/* Straddles into the next chunk (and maybe the position). */
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
		/* No two of a round overlap (each starts 4 KiB into its own chunk). */
		for (unsigned i = 0; i < 32; i++)
			memcpy(model + offs[i], bufs + i * (size_t)CHUNK, CHUNK);
		rounds++;
	} while (!atomic_load(&w.done));
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, 0);
	cr_log_info("%llu rounds of 32 queued writes during the reshape", (unsigned long long)rounds);
	graid_queue_destroy(q);
	gu_check_all(a, model, size);
	cr_assert_eq(gu_array_bytes(a, NULL), size / NOLD * (NOLD + 1));
	cr_assert_eq(graid_array_close(a), 0);
	free(bufs);
	free(model);
	au_remove(&s);
}

Test(reshape_grow0, the_rebuild_rate_limit_paces_the_move)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .max_bytes_per_sec = 1000000 };
	struct graid_array *a;
	struct au_set s;
	struct timespec t0, t1;
	uint64_t size;
	uint8_t *model = make_array(&s, &a, &size, 31);
	double secs, want;

	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* Moved bytes over four members at 1 MB/s each, less the last window's share. */
	want = (double)size / (NOLD + 1) / 1e6 - 0.3;
	cr_log_info("%.2f s at 1 MB/s a member (at least %.2f s due)", secs, want);
	cr_assert_geq(secs, want, "the move took %.2f s", secs);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow0, a_close_mid_way_is_resumed_by_the_next_open)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model = make_array(&s, &a, &size, 5);

	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	cr_assert_eq(graid_array_close(a), 0);
	a = open_all(&s);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size / NOLD * (NOLD + 1));
	cr_assert_eq(n, NOLD + 1);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Crashes that left: no reshape recorded, one to resume, one finished. */
static unsigned crash_seen[3];

/*
 * One crash: every member write after the first @p k of a grow of a RAID-0 of @p nold by
 * @p nadd fails without landing (the close's too), then a look and an open of all the files
 * must serve the same bytes and, going on (or starting again when no superblock recorded
 * the reshape), grow the array.
 */
static void crash_at(unsigned nold, unsigned nadd, long k, long *writes)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };
	const unsigned nall = nold + nadd;
	struct graid_array *a = NULL;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model;
	int rc;

	au_make(&s, nall, BYTES);
	cr_assert_eq(au_create(&s, nold, 0, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	gu_fill(model, size, 100 + (uint64_t)k);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	fault_writes_cut_after(k);
	rc = graid_array_grow(a, &s.paths[nold], nadd, GRAID_GROW_WAIT);
	graid_array_close(a);
	if (writes)
		*writes = k - fault_writes_cut_left();
	fault_writes_cut_after(-1);
	/* A look first: it serves the same bytes, by the recorded position, writing nothing. */
	a = NULL;
	rc = graid_array_open(s.paths, nall, &ro, &a);
	cr_assert_eq(rc, 0, "crash after write %ld: the look failed: %d", k, rc);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	a = NULL;
	rc = graid_array_open(s.paths, nall, NULL, &a);
	cr_assert_eq(rc, 0, "crash after write %ld: the open failed: %d", k, rc);
	gu_check_all(a, model, size);
	if (a->reshape_job) {
		cr_assert_eq(reshape_job_wait(a), 0, "crash after write %ld: the resume failed", k);
		crash_seen[1]++;
	} else if (gu_array_bytes(a, &n) == size) {
		cr_assert_eq(graid_array_grow(a, &s.paths[nold], nadd, GRAID_GROW_WAIT), 0,
			     "crash after write %ld: the grow again failed", k);
		crash_seen[0]++;
	} else {
		crash_seen[2]++;
	}
	cr_assert_eq(gu_array_bytes(a, &n), size / nold * nall, "crash after write %ld", k);
	cr_assert_eq(n, nall);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Two added at once: the start writes two added roles' superblocks, a crash between them. */
Test(reshape_grow0, a_crash_while_adding_two_members_loses_nothing)
{
	long total = 0;

	graid_log_set(gu_log_keep, NULL, 0);
	crash_at(2, 2, 1000000, &total);
	cr_log_info("a grow 2 -> 4 and its close: %ld member writes", total);
	for (long k = 0; k < 40 && k < total; k++)
		crash_at(2, 2, k, NULL);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
}

Test(reshape_grow0, a_device_too_small_is_refused_and_nothing_is_written)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, before[NOLD + 1], after[NOLD + 1];
	unsigned n;
	uint8_t *model = make_array(&s, &a, &size, 9);

	cr_assert_eq(truncate(s.path[NOLD], (off_t)(BYTES / 2)), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i <= NOLD; i++)
		before[i] = au_file_hash(s.path[i]);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), -EINVAL);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, s.path[NOLD]), "the device is not named: %s", gu_log_text);
	for (unsigned i = 0; i <= NOLD; i++) {
		after[i] = au_file_hash(s.path[i]);
		cr_assert_eq(after[i], before[i], "file %u was written", i);
	}
	cr_assert_eq(gu_array_bytes(a, &n), size);
	cr_assert_eq(n, NOLD);
	gu_check_all(a, model, size);
	/* Bad arguments. */
	cr_assert_eq(graid_array_grow(a, NULL, 1, 0), -EINVAL);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 0, 0), -EINVAL);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0x80), -EINVAL);
	cr_assert_eq(graid_array_grow(a, &s.paths[0], 1, 0), -EEXIST, "a member of it");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow0, other_levels_are_refused_naming_the_level)
{
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, 0), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "RAID-1 "), "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Review (rev1): the finish makes the new size visible before its superblock round is on
 * any member. A write into the added space, acknowledged and flushed during that round,
 * must survive a crash there: the open that resumes the FINISHING record must not zero it.
 * Member 0's superblock writes are slowed (1.5 s), so the round is under way while the test
 * writes; the crash comes after the flush has returned.
 */
Test(reshape_grow0, a_flushed_write_to_the_added_space_survives_a_crash_in_the_finish, .timeout = 60)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("slow superblock writes (faulty:) exist only with -Dfault_injection");
#endif
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char slow[400];
	const char *paths[NOLD];
	uint8_t *model = make_array(&s, &a, &size, 41), *blk, *got;
	struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };
	ssize_t rc;

	cr_assert_eq(graid_array_close(a), 0);
	snprintf(slow, sizeof(slow), "faulty:sb-stall-us=1500000:%s", s.path[0]);
	paths[0] = slow;
	for (unsigned i = 1; i < NOLD; i++)
		paths[i] = s.paths[i];
	a = NULL;
	cr_assert_eq(graid_array_open(paths, NOLD, NULL, &a), 0);
	blk = aligned_alloc(BLK, BLK);
	got = aligned_alloc(BLK, BLK);
	cr_assert_eq(graid_array_read(a, got, BLK, 0), (ssize_t)BLK); /* the queue made */
	memset(blk, 0x5a, BLK);
	graid_log_set(gu_log_keep, NULL, 0); /* the cut's failures are expected */
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	/* Refused (beyond the size) until the finish shows the new size. */
	for (unsigned i = 0; (rc = graid_array_write(a, blk, BLK, size)) == -EINVAL && i < 30000;
	     i++)
		nanosleep(&ms, NULL);
	cr_assert_eq(rc, (ssize_t)BLK, "the write into the added space: %zd", rc);
	cr_assert_eq(graid_array_flush(a), 0);
	/* Acknowledged and flushed: now the power goes. */
	fault_writes_cut_after(0);
	reshape_job_wait(a);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	a = open_all(&s);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_eq(gu_array_bytes(a, NULL), size / NOLD * (NOLD + 1));
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_read(a, got, BLK, size), (ssize_t)BLK);
	cr_assert(!memcmp(got, blk, BLK), "the flushed write into the added space was lost "
					  "(read %#x)", got[0]);
	cr_assert_eq(graid_array_close(a), 0);
	free(blk);
	free(got);
	free(model);
	au_remove(&s);
}

/*
 * Review (rev1): a queue's zero buffer is sized by the stripe of the geometry it was made in
 * (discard.c discard_zbuf_len: at least 1 MiB). After a grow widens the stripe past it, a
 * write-zeroes of a part of a stripe is written from the zero buffer for the new stripe's
 * length: the bytes past the buffer's end go to the members (or the write fails).
 */
Test(reshape_grow0, write_zeroes_after_a_grow_past_the_zero_buffer_write_zeroes, .timeout = 60)
{
	const uint32_t chunk = 512u * 1024;
	const uint64_t unit_new = 3ull * chunk;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *pat, *got;

	au_make(&s, 3, 8ull << 20);
	cr_assert_eq(au_create(&s, 2, 0, chunk, &a), 0);
	/* The (sync calls') queue makes its zero buffer now: 1 MiB, the 2-member stripe. */
	cr_assert_eq(graid_array_write_zeroes(a, 0, BLK), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_WAIT), 0);
	size = gu_array_bytes(a, NULL);
	cr_assert_geq(size, unit_new);
	pat = aligned_alloc(BLK, unit_new);
	got = aligned_alloc(BLK, unit_new);
	memset(pat, 0xa5, unit_new);
	cr_assert_eq(graid_array_write(a, pat, unit_new, 0), (ssize_t)unit_new);
	/* Not stripe-aligned: written from the zero buffer, 1.5 MiB - 4 KiB of it. */
	cr_assert_eq(graid_array_write_zeroes(a, BLK, unit_new - BLK), 0);
	cr_assert_eq(graid_array_read(a, got, unit_new, 0), (ssize_t)unit_new);
	cr_assert_eq(got[0], 0xa5);
	for (uint64_t i = BLK; i < unit_new; i++)
		cr_assert_eq(got[i], 0, "byte %llu is %#x after write-zeroes",
			     (unsigned long long)i, got[i]);
	cr_assert_eq(graid_array_close(a), 0);
	free(pat);
	free(got);
	au_remove(&s);
}

/*
 * Member 0 cannot read one 4 KiB block of a chunk the grow moves (a medium error). A RAID-0
 * has no copy of it and keeps no bad-block log to carry the loss: the grow stops before it,
 * the log naming the array bytes, the member stays (the error counted), and everything reads
 * as before (that block -EIO). Once that block is written (the drive remaps the sector), the
 * next open goes on and finishes, every byte right. Before, the job's synchronous reads
 * bypassed the drive and its faults.
 */
Test(reshape_grow0, a_bad_sector_under_a_chunk_it_moves_stops_it_until_written)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const uint64_t row = 20, bad = row * CHUNK + BLK, lost = row * NOLD * CHUNK + BLK;
	const char *paths[AU_MAX];
	char spec[700], want[96];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model;

	tu_need_fault_injection();
	model = make_array(&s, &a, &size, 77);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:bad-block=%llu:%s", (unsigned long long)bad,
		 s.path[0]);
	paths[0] = spec;
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	gu_log_text[0] = '\0';
	cr_assert_eq(graid_array_open(paths, NOLD, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &paths[NOLD], 1, GRAID_GROW_WAIT), -EIO);
	snprintf(want, sizeof(want), "array bytes %llu..+4095 (member 0, data-area byte %llu)",
		 (unsigned long long)lost, (unsigned long long)bad);
	cr_assert(strstr(gu_log_text, want), "the log does not name the bytes: %s", gu_log_text);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert(info.reshaping);
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_gt(mi.errors, 0, "the job never met the bad sector");
	gu_check_but(a, model, size, lost, "stopped before the bad block");
	/* The block restored: the write over the bad sector remaps it, and it reads back. */
	memset(model + lost, 0x5a, BLK);
	cr_assert_eq(graid_array_write(a, model + lost, BLK, lost), (ssize_t)BLK);
	gu_check_but(a, model, size, UINT64_MAX, "the block written");
	cr_assert_eq(graid_array_close(a), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	/* The drive keeps its remap; the model's is its open's alone: the plain file now. */
	cr_assert_eq(graid_array_open(s.paths, NOLD + 1, NULL, &a), 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(gu_array_bytes(a, NULL), size / NOLD * (NOLD + 1));
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
