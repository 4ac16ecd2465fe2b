/* SPDX-License-Identifier: MIT */
/*
 * A RAID-0 grow made visible (docs/RESHAPE.md, "Progress and events"): the events it sends
 * (started, progress, paused with the reason, done), and graid_array_info's reshape fields
 * while it moves, after a stop and at a read-only look, on member files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "array/array.h"
#include "jobs/reshape_grow.h"
#include "cututil.h"
#include "member/member.h"

#define NOLD 3
#define CHUNK (64u * 1024)
#define BYTES (3ull << 20)

static struct graid_array_info info_of(struct graid_array *a)
{
	struct graid_array_info i = { .struct_size = sizeof(i) };

	cr_assert_eq(graid_array_info(a, &i), 0);
	return i;
}

static struct graid_array *make(struct au_set *s, uint64_t *size)
{
	struct graid_array *a;

	au_make(s, NOLD + 1, BYTES);
	cr_assert_eq(au_create(s, NOLD, 0, CHUNK, &a), 0);
	*size = info_of(a).size;
	return a;
}

/* Pace the move at @p rate bytes a second per member written (the rebuild's limit). */
static void pace(struct graid_array *a, uint64_t rate)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o), .max_bytes_per_sec = rate };

	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
}

/* The handle's reshape events, oldest first, into @p ev (at most 64); returns how many. */
static unsigned reshape_events(struct graid_array *a, struct graid_event *ev)
{
	struct graid_event all[256];
	int n = graid_array_events(a, 0, all, 256, NULL);
	unsigned k = 0;

	cr_assert_geq(n, 0);
	for (int i = 0; i < n && k < 64; i++)
		if (all[i].type >= GRAID_EVENT_RESHAPE_STARTED &&
		    all[i].type <= GRAID_EVENT_RESHAPE_DONE)
			ev[k++] = all[i];
	return k;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait (up to 20 s) until the job has moved at least @p bytes. */
static struct graid_array_info wait_moved(struct graid_array *a, uint64_t bytes)
{
	struct graid_array_info i;

	for (unsigned t = 0; t < 2000; t++) {
		i = info_of(a);
		if (i.reshape_done >= bytes)
			return i;
		sleep_ms(10);
	}
	cr_assert_fail("the reshape did not reach byte %llu", (unsigned long long)bytes);
	return i;
}

Test(reshape_progress, a_grow_sends_started_every_step_then_done)
{
	struct graid_event ev[64];
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	unsigned n, step = 10;

	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), 0);
	n = reshape_events(a, ev);
	/* started, 10 .. 100, done */
	cr_assert_eq(n, 12, "%u reshape events", n);
	cr_assert_eq(ev[0].type, GRAID_EVENT_RESHAPE_STARTED);
	cr_assert_eq(ev[0].count, 1, "members added");
	cr_assert_eq(ev[0].member, -1);
	for (unsigned k = 1; k <= 10; k++) {
		cr_assert_eq(ev[k].type, GRAID_EVENT_RESHAPE_PROGRESS);
		cr_assert_eq(ev[k].count, k * step);
		cr_assert_gt(ev[k].seq, ev[k - 1].seq);
	}
	cr_assert_eq(ev[11].type, GRAID_EVENT_RESHAPE_DONE);
	cr_assert_eq(ev[11].error, 0);
	cr_assert_eq(ev[11].count, size / NOLD * (NOLD + 1), "done's count is the new size");
	cr_assert_str_eq(graid_event_name(ev[11].type), "reshape-done");
	/* Finished: nothing reshaping any more. */
	cr_assert_eq(info_of(a).reshaping, 0);
	cr_assert_eq(info_of(a).reshape_total, 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(reshape_progress, the_event_step_is_the_applications)
{
	struct graid_event_options eo = { .struct_size = sizeof(eo), .progress_percent = 25 };
	struct graid_event ev[64];
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	unsigned n;

	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), 0);
	n = reshape_events(a, ev);
	cr_assert_eq(n, 6, "%u reshape events", n); /* started, 25, 50, 75, 100, done */
	for (unsigned k = 1; k <= 4; k++)
		cr_assert_eq(ev[k].count, 25 * k);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(reshape_progress, the_info_fields_follow_the_move)
{
	struct graid_array_info i;
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);

	i = info_of(a);
	cr_assert_eq(i.reshaping, 0);
	cr_assert_eq(i.reshape_running, 0);
	/* 3 MiB over four members at 256 KiB/s each: about three seconds. */
	pace(a, 256 * 1024);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	i = info_of(a);
	cr_assert_eq(i.reshaping, 1);
	cr_assert_eq(i.reshape_total, size);
	cr_assert_eq(i.size, size, "the old size until it is done");
	i = wait_moved(a, size / 3);
	cr_assert_eq(i.reshape_running, 1);
	cr_assert_eq(i.reshape_error, 0);
	cr_assert_lt(i.reshape_done, size);
	cr_assert_gt(i.reshape_bytes_per_sec, 0, "a rate once a third has moved");
	cr_log_info("%llu of %llu bytes, %llu B/s, ETA %llu s",
		    (unsigned long long)i.reshape_done, (unsigned long long)i.reshape_total,
		    (unsigned long long)i.reshape_bytes_per_sec,
		    (unsigned long long)i.reshape_eta_sec);
	/* Four members at 256 KiB/s move about 1 MiB a second: the rate says so, roughly. */
	cr_assert_lt(i.reshape_bytes_per_sec, 4ull << 20);
	cr_assert_gt(i.reshape_eta_sec, 0);
	cr_assert_lt(i.reshape_eta_sec, 60);
	cr_assert_eq(reshape_job_wait(a), 0);
	i = info_of(a);
	cr_assert_eq(i.reshaping, 0);
	cr_assert_eq(i.reshape_running, 0);
	cr_assert_eq(i.size, size / NOLD * (NOLD + 1));
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Events the callback saw, kept across the handle's close. */
static struct graid_event seen[512];
static unsigned nseen;

static void keep(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (nseen < 512)
		seen[nseen++] = *ev;
}

Test(reshape_progress, a_close_mid_way_pauses_and_the_open_starts_it_again)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };
	struct graid_event ev[64];
	struct graid_array_info i;
	const struct graid_event *paused = NULL;
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	unsigned n;

	pace(a, 256 * 1024);
	cr_assert_eq(graid_array_set_event_callback(a, keep, NULL), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	wait_moved(a, size / 4);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned k = 0; k < nseen; k++)
		if (seen[k].type == GRAID_EVENT_RESHAPE_PAUSED)
			paused = &seen[k];
	cr_assert_not_null(paused, "a close mid-way sends reshape-paused");
	cr_assert_eq(paused->error, -ECANCELED, "the reason: closing");
	cr_assert_geq(paused->count, 25);
	cr_assert_lt(paused->count, 100);
	for (unsigned k = 0; k < nseen; k++)
		cr_assert_neq(seen[k].type, GRAID_EVENT_RESHAPE_DONE);

	/* A look: reshaping, not running, at the recorded position. */
	cr_assert_eq(graid_array_open(s.paths, NOLD + 1, &ro, &a), 0);
	i = info_of(a);
	cr_assert_eq(i.reshaping, 1);
	cr_assert_eq(i.reshape_running, 0);
	cr_assert_eq(i.reshape_total, size);
	cr_assert_geq(i.reshape_done * 100 / size, paused->count);
	cr_assert_lt(i.reshape_done, size);
	cr_assert_eq(graid_array_close(a), 0);

	/* A writable open resumes it: started again, steps past the pause's, done. */
	cr_assert_eq(graid_array_open(s.paths, NOLD + 1, NULL, &a), 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	n = reshape_events(a, ev);
	cr_assert_geq(n, 3);
	cr_assert_eq(ev[0].type, GRAID_EVENT_RESHAPE_STARTED);
	cr_assert_eq(ev[0].count, 1);
	for (unsigned k = 1; k + 1 < n; k++) {
		cr_assert_eq(ev[k].type, GRAID_EVENT_RESHAPE_PROGRESS);
		cr_assert_gt(ev[k].count, paused->count, "step %llu sent again after the resume",
			     (unsigned long long)ev[k].count);
	}
	cr_assert_eq(ev[n - 2].count, 100);
	cr_assert_eq(ev[n - 1].type, GRAID_EVENT_RESHAPE_DONE);
	cr_assert_eq(ev[n - 1].count, size / NOLD * (NOLD + 1));
	cr_assert_eq(info_of(a).reshaping, 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Every member write fails from now on (a crash as the members see it): the job stops. */
Test(reshape_progress, a_failed_write_pauses_it_with_the_error)
{
	struct graid_event ev[64];
	struct graid_array_info i;
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	unsigned n;

	pace(a, 256 * 1024);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	wait_moved(a, size / 4);
	fault_writes_cut_after(0);
	cr_assert_eq(reshape_job_wait(a), -EIO);
	i = info_of(a);
	cr_assert_eq(i.reshaping, 1, "recorded, not finished");
	cr_assert_eq(i.reshape_running, 0);
	cr_assert_eq(i.reshape_error, -EIO);
	cr_assert_eq(i.reshape_bytes_per_sec, 0);
	n = reshape_events(a, ev);
	cr_assert_geq(n, 2);
	cr_assert_eq(ev[n - 1].type, GRAID_EVENT_RESHAPE_PAUSED);
	cr_assert_eq(ev[n - 1].error, -EIO);
	cr_assert_str_eq(graid_event_name(ev[n - 1].type), "reshape-paused");
	graid_array_close(a);
	fault_writes_cut_after(-1);
	au_remove(&s);
}

/*
 * The end's superblock round takes a while (each write stalls 0.3 s here): until it is on
 * the members the array keeps its old size, so graid_array_info() must not yet say the
 * reshape is over. A caller (graidctl grow following a holder) that polls until
 * `reshaping` is 0 and then reads `size` must read the new size.
 */
Test(reshape_progress, not_reshaping_only_with_the_new_size)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("slow superblock writes (faulty:) exist only with -Dfault_injection");
#endif
	char spec[NOLD + 1][340];
	const char *specs[NOLD + 1];
	struct graid_array_info i;
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	bool seen_reshaping = false;

	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned r = 0; r < NOLD + 1; r++) {
		snprintf(spec[r], sizeof(spec[r]), "faulty:sb-stall-us=300000:%s", s.path[r]);
		specs[r] = spec[r];
	}
	cr_assert_eq(graid_array_open(specs, NOLD, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &specs[NOLD], 1, 0), 0);
	for (unsigned t = 0; t < 30000; t++) {
		i = info_of(a);
		if (!i.reshaping && seen_reshaping)
			break;
		seen_reshaping |= i.reshaping != 0;
		sleep_ms(1);
	}
	cr_assert(seen_reshaping);
	cr_assert_eq(i.reshaping, 0, "the reshape did not end");
	cr_assert_eq(i.size, size / NOLD * (NOLD + 1),
		     "reshaping 0 but the size is still the old one (%llu)",
		     (unsigned long long)i.size);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* On reshape-done, the job's thread lingers a while (a slow callback): its end is told. */
static void linger_on_done(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_RESHAPE_DONE)
		sleep_ms(500);
}

/*
 * Once graid_array_info() says the reshape is over (not reshaping, the new size), the next
 * grow may start: it must not be refused -EBUSY because the ended job's thread has not yet
 * returned from telling its end.
 */
Test(reshape_progress, a_grow_right_after_the_end_is_not_busy)
{
	struct au_set s;
	struct graid_array *a;
	struct graid_array_info i;
	uint64_t size;

	au_make(&s, NOLD + 2, BYTES);
	cr_assert_eq(au_create(&s, NOLD, 0, CHUNK, &a), 0);
	size = info_of(a).size;
	cr_assert_eq(graid_array_set_event_callback(a, linger_on_done, NULL), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, 0), 0);
	for (unsigned t = 0; t < 20000; t++) {
		i = info_of(a);
		if (!i.reshaping)
			break;
		sleep_ms(1);
	}
	cr_assert_eq(i.reshaping, 0, "the first grow did not end");
	cr_assert_eq(i.size, size / NOLD * (NOLD + 1));
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD + 1], 1, GRAID_GROW_WAIT), 0,
		     "the next grow refused while the first job told its end");
	cr_assert_eq(info_of(a).nmembers, NOLD + 2);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Member writes a whole grow of a fresh set makes (its start, its move, its end). */
static long grow_writes(void)
{
	struct au_set s;
	uint64_t size;
	struct graid_array *a = make(&s, &size);
	long left;

	fault_writes_cut_after(1000000);
	cr_assert_eq(graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT), 0);
	left = fault_writes_cut_left();
	fault_writes_cut_after(-1);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	return 1000000 - left;
}

/*
 * The last write of the end's superblock round fails: reshape-done tells the error, and
 * graid_array_info() goes on saying reshaping (the old size stays until the next open
 * finishes it), with that error, rather than "over" with the old size.
 */
Test(reshape_progress, a_failed_end_round_stays_reshaping_with_its_error)
{
	struct graid_event ev[64];
	struct graid_array_info i;
	struct au_set s;
	uint64_t size;
	struct graid_array *a;
	long w = grow_writes();
	unsigned n;
	int rc;

	a = make(&s, &size);
	fault_writes_cut_after(w - 1);
	rc = graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT);
	fault_writes_cut_after(-1);
	cr_log_info("%ld writes; the grow with the last cut: %d", w, rc);
	cr_assert_neq(rc, 0);
	n = reshape_events(a, ev);
	cr_assert_geq(n, 2);
	cr_assert_eq(ev[n - 1].type, GRAID_EVENT_RESHAPE_DONE);
	cr_assert_neq(ev[n - 1].error, 0);
	i = info_of(a);
	cr_assert_eq(i.size, size, "the old size until an open finishes it");
	cr_assert_eq(i.reshaping, 1, "not over while the old size stays");
	cr_assert_eq(i.reshape_running, 0);
	cr_assert_eq(i.reshape_error, ev[n - 1].error);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A stop after the last window but before the end is recorded (writes cut at each point of
 * the end in turn): reshape-progress 100 is "done" (job_progress.c: 100 only when all is
 * done), so a reshape that ends in reshape-paused must not have sent it, nor pause at 100.
 */
Test(reshape_progress, no_100_before_a_pause)
{
	long w = grow_writes();
	unsigned paused = 0;

	for (long k = 2; k <= 24; k++) {
		struct graid_event ev[64];
		struct au_set s;
		uint64_t size;
		struct graid_array *a = make(&s, &size);
		unsigned n;

		fault_writes_cut_after(w - k);
		(void)graid_array_grow(a, &s.paths[NOLD], 1, GRAID_GROW_WAIT);
		fault_writes_cut_after(-1);
		n = reshape_events(a, ev);
		if (n && ev[n - 1].type == GRAID_EVENT_RESHAPE_PAUSED) {
			paused++;
			cr_assert_lt(ev[n - 1].count, 100, "cut %ld before the last: paused at 100",
				     k);
			for (unsigned e = 0; e < n; e++)
				cr_assert(ev[e].type != GRAID_EVENT_RESHAPE_PROGRESS ||
					  ev[e].count < 100,
					  "cut %ld before the last: progress 100, then paused", k);
		}
		graid_array_close(a);
		au_remove(&s);
	}
	cr_assert_gt(paused, 0, "no cut stopped it before its end");
}
