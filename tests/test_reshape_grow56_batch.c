/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow's windows move a batch of rows at a time on the job's ring
 * (lib/core/jobs/reshape_grow56_batch.c, docs/RESHAPE.md "RAID-5/6 growing, as built"):
 * on members that each behave as a drive of their own ("faulty:mbps="), the move overlaps
 * the members' I/O, so it takes well under the time the same bytes take one I/O after
 * another; and a write of the batch failing takes its member out, the rows around it are
 * written and marked, and every byte reads back. The tests set graid__test_grow56.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "array/array.h"
#include "cututil.h"
#include "jobs/reshape_grow.h"
#include "meta/bitmap.h"
#include "testutil.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56;
#else
static bool graid__test_grow56; /* no switch in a release build: setup() skips */
#endif

#define BLK 4096u

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];
/* When the job said it starts moving, and that the staging ended (CLOCK_MONOTONIC, s). */
static double log_moving_at, log_staged_at;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	pthread_mutex_lock(&log_lock);
	if (strstr(msg, "reshape: moving data:"))
		log_moving_at = now_s();
	if (strstr(msg, "through their staged copy"))
		log_staged_at = now_s();
	if (strlen(log_text) + strlen(msg) + 2 < sizeof(log_text)) {
		strcat(log_text, msg);
		strcat(log_text, "\n");
	}
	pthread_mutex_unlock(&log_lock);
}

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("RAID-5/6 growing's tests turn it on with graid__test_grow56, which "
		     "exists only with -Dfault_injection");
#endif
	graid__test_grow56 = true;
	log_text[0] = '\0';
	log_moving_at = log_staged_at = 0;
	graid_log_set(log_keep, NULL, GRAID_LOG_INFO);
}

static uint64_t array_bytes(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.size;
}

/* A RAID-@p level of @p n member files (@p extra more), holding a pattern, closed. */
static uint8_t *make_closed(struct au_set *s, unsigned n, unsigned extra, int level,
			    uint32_t chunk, uint64_t bytes, uint64_t *size)
{
	struct graid_array *a;
	uint8_t *model;
	uint64_t seed = 42;

	au_make(s, n + extra, bytes);
	cr_assert_eq(au_create(s, n, level, chunk, &a), 0);
	*size = array_bytes(a);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	for (size_t i = 0; i < *size; i += 8) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		memcpy(model + i, &seed, 8);
	}
	cr_assert_eq(graid_array_write(a, model, *size, 0), (ssize_t)*size);
	cr_assert_eq(graid_array_close(a), 0);
	return model;
}

static void check_all(struct graid_array *a, const uint8_t *model, uint64_t size,
		      const char *when)
{
	uint8_t *got = aligned_alloc(BLK, 1u << 20);

	cr_assert_not_null(got);
	for (uint64_t at = 0; at < size; at += 1u << 20) {
		size_t n = size - at < (1u << 20) ? (size_t)(size - at) : 1u << 20;

		cr_assert_eq(graid_array_read(a, got, n, at), (ssize_t)n, "%s: read at %llu",
			     when, (unsigned long long)at);
		cr_assert(!memcmp(got, model + at, n), "%s: the MiB at %llu differs", when,
			  (unsigned long long)at);
	}
	free(got);
}

/*
 * RAID-6 6 -> 7 on members that each move 25 MB/s, one I/O after another. The job reads
 * the old data once (size bytes) and writes the new rows whole (size x 7/5): moved one I/O
 * at a time, that is at least their sum over the rate. Batched, each member serves about a
 * seventh of it at the same time: the grow must take under 0.6 of the serial time (it took
 * 0.3 of it here; the synchronous job took more than the serial time).
 */
Test(reshape_grow56_batch, raid6_windows_keep_every_member_busy_at_once, .init = setup,
     .timeout = 300)
{
	enum { NOLD = 6, RATE = 25 };
	char spec[NOLD + 1][400];
	const char *paths[NOLD + 1];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_closed(&s, NOLD, 1, 6, 64u << 10, 8ull << 20, &size);
	double serial, t0, took;

	tu_need_fault_injection();
	for (unsigned i = 0; i <= NOLD; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:mbps=%d:%s", RATE, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, NOLD, NULL, &a), 0);
	serial = (double)size * (1.0 + 7.0 / 5.0) / (RATE * 1e6);
	t0 = now_s();
	cr_assert_eq(graid_array_grow(a, &paths[NOLD], 1, GRAID_GROW_WAIT), 0, "%s", log_text);
	took = now_s() - t0;
	cr_log_info("RAID-6 6 -> 7 of %llu bytes at %d MB/s a member: %.2f s, one I/O at a time "
		    "at least %.2f s", (unsigned long long)size, RATE, took, serial);
	cr_assert_lt(took, serial * 0.6, "the grow took %.2f s, the serial time is %.2f s", took,
		     serial);
	cr_assert_eq(array_bytes(a), size / 4 * 5);
	check_all(a, model, size, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * The staging (reshape_stage.c) of RAID-6 6 -> 7 on members that each move 10 MB/s, one I/O
 * after another: its S bytes are read from the old members, written to the copy on the added
 * member, read back from it and written as new rows with their parity (S x 7/5). One I/O
 * at a time, that is at least S x 4.4 over the rate. With each phase's I/O in flight at once
 * and the copy kept in memory for the new rows, the copy's member does S alone (its writes)
 * and the rest is spread: about 0.3 of the serial time (measured 0.33-0.34; chunk by chunk,
 * synchronously, it took 1.1; batched but reading the copy back, 0.56). Timed from the job's
 * own lines: "moving data" just before the staging, "through their staged copy" at its end.
 */
Test(reshape_grow56_batch, raid6_the_staging_keeps_the_members_busy_at_once, .init = setup,
     .timeout = 300)
{
	enum { NOLD = 6, RATE = 10 };
	char spec[NOLD + 1][400];
	const char *paths[NOLD + 1], *at;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, staged;
	uint8_t *model = make_closed(&s, NOLD, 1, 6, 64u << 10, 8ull << 20, &size);
	double serial, took;

	tu_need_fault_injection();
	for (unsigned i = 0; i <= NOLD; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:mbps=%d:%s", RATE, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, NOLD, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &paths[NOLD], 1, GRAID_GROW_WAIT), 0, "%s", log_text);
	at = strstr(log_text, "reshape: the first ");
	cr_assert_not_null(at, "%s", log_text);
	staged = strtoull(at + strlen("reshape: the first "), NULL, 10);
	cr_assert_gt(staged, 0);
	cr_assert(log_moving_at > 0 && log_staged_at > log_moving_at, "%s", log_text);
	took = log_staged_at - log_moving_at;
	serial = (double)staged * (1.0 + 1.0 + 1.0 + 7.0 / 5.0) / (RATE * 1e6);
	cr_log_info("staging %llu bytes at %d MB/s a member: %.3f s, one I/O at a time at least "
		    "%.3f s (%.2f of it)", (unsigned long long)staged, RATE, took, serial,
		    took / serial);
	cr_assert_lt(took, serial * 0.6, "the staging took %.3f s, the serial time is %.3f s",
		     took, serial);
	check_all(a, model, size, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * RAID-5 4 -> 5 whose added member fails its writes after its first 40 (the staging's and
 * the first windows'): a write of a batch fails, member_batch.c takes the member out, the
 * job goes on around it, and the rows from the first failing write's on are marked in the
 * bitmap for its return; every byte reads back, degraded, and after a reopen.
 */
Test(reshape_grow56_batch, raid5_a_batch_write_failing_takes_its_member_out_and_marks_rows,
     .init = setup, .timeout = 300)
{
	const uint32_t chunk = 16u << 10;
	char spec[400];
	const char *paths[5];
	struct graid_array *a;
	struct au_set s;
	uint64_t size, off, step;
	uint8_t *model = make_closed(&s, 4, 1, 5, chunk, 4ull << 20, &size);
	const char *at;

	tu_need_fault_injection();
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=40:%s", s.path[4]);
	paths[4] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &paths[4], 1, GRAID_GROW_WAIT), 0, "%s", log_text);
	cr_assert_eq(array_bytes(a), size / 3 * 4);
	at = strstr(log_text, "writing the new rows to member 4");
	cr_assert_not_null(at, "no batch write failed: %s", log_text);
	at = strstr(at, "data-area byte ");
	cr_assert_not_null(at);
	off = strtoull(at + strlen("data-area byte "), NULL, 10);
	cr_log_info("the added member's write at data-area byte %llu failed (new row %llu)",
		    (unsigned long long)off, (unsigned long long)(off / chunk));
	cr_assert(a->bitmap.enabled);
	step = a->bitmap.map.region_stripes;
	/* Every row moved from the failing one on: written around the member, marked. */
	for (uint64_t row = off / chunk; row < size / 4 / chunk; row += step)
		cr_assert(bitmap_region_marked(a, row / step), "new row %llu is not marked",
			  (unsigned long long)row);
	check_all(a, model, size, "degraded, after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	check_all(a, model, size, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
