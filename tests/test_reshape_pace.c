/* SPDX-License-Identifier: MIT */
/*
 * A grow's pacing (lib/core/jobs/reshape_pace.c, docs/RESHAPE.md "Pacing"): while foreground
 * reads run and no busy rate is set, the job leaves the members to them three quarters of
 * the time (it sleeps three times each window's own time); idle, or with a busy rate set,
 * it does not. Measured through the pacing's test seams (the windows' time and the share's
 * sleeps, summed), on a RAID-6 6 -> 7 of member files whose added one is an emulated drive,
 * so that a window takes drive time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "cututil.h"
#include "growutil.h"
#include "jobs/reshape_pace.h"
#include "testutil.h"

#define NOLD 6
#define CHUNK (64u * 1024)
#define BYTES (8ull << 20)
#define RATE_MBPS 100

#if !GRAID_FAULT_INJECTION
/* Without fault injection there are no seams; each test skips at tu_need_fault_injection(). */
static _Atomic uint64_t graid__test_pace_window_ns, graid__test_pace_share_ns;
#endif

struct reader {
	struct graid_array *a;
	uint64_t size;
	atomic_bool stop;
	unsigned long reads;
};

/* One 4 KiB read after another at random places until told to stop. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	void *buf;

	cr_assert_eq(posix_memalign(&buf, 4096, 4096), 0);
	while (!atomic_load(&r->stop)) {
		uint64_t off = gu_rng(&seed) % (r->size / 4096) * 4096;

		cr_assert_eq(graid_array_read(r->a, buf, 4096, off), 4096);
		r->reads++;
	}
	free(buf);
	return NULL;
}

/* A full RAID-6 of NOLD member files, and the added one's path as an emulated drive. */
static struct graid_array *make(struct au_set *s, char *spec, size_t spec_len, uint64_t *size)
{
	struct graid_array *a;
	uint8_t *data = malloc(1u << 20);

	au_make(s, NOLD + 1, BYTES);
	cr_assert_eq(au_create(s, NOLD, 6, CHUNK, &a), 0);
	*size = gu_array_bytes(a, NULL);
	for (uint64_t off = 0; off < *size; off += 1u << 20) {
		gu_fill(data, 1u << 20, off);
		cr_assert_eq(graid_array_write(a, data, 1u << 20, off), 1 << 20);
	}
	free(data);
	snprintf(spec, spec_len, "faulty:mbps=%d:%s", RATE_MBPS, s->path[NOLD]);
	atomic_store(&graid__test_pace_window_ns, 0);
	atomic_store(&graid__test_pace_share_ns, 0);
	return a;
}

/* The grow, with a reader going through all of it when @p reads. */
static void grow(struct graid_array *a, const char *spec, uint64_t size, bool reads)
{
	struct reader r = { .a = a, .size = size };
	pthread_t t;

	if (reads)
		cr_assert_eq(pthread_create(&t, NULL, reader_main, &r), 0);
	cr_assert_eq(graid_array_grow(a, &spec, 1, GRAID_GROW_WAIT), 0);
	if (reads) {
		atomic_store(&r.stop, true);
		pthread_join(t, NULL);
		cr_log_info("%lu reads during the grow", r.reads);
	}
	cr_log_info("windows %.3f s, the share's sleeps %.3f s",
		    (double)atomic_load(&graid__test_pace_window_ns) / 1e9,
		    (double)atomic_load(&graid__test_pace_share_ns) / 1e9);
}

Test(reshape_pace, reads_running_get_three_quarters_of_the_members_time, .timeout = 120)
{
	struct au_set s;
	char spec[400];
	uint64_t size, window, share;
	struct graid_array *a;

	tu_need_fault_injection();
	a = make(&s, spec, sizeof(spec), &size);
	grow(a, spec, size, true);
	window = atomic_load(&graid__test_pace_window_ns);
	share = atomic_load(&graid__test_pace_share_ns);
	cr_assert_gt(window, 0);
	/* Three times the windows' time, less the moments the reader was between two reads. */
	cr_assert_geq(share, 2 * window, "slept %llu ns after windows of %llu ns",
		      (unsigned long long)share, (unsigned long long)window);
	cr_assert_leq(share, 3 * window + window / 10);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(reshape_pace, an_idle_grow_never_sleeps, .timeout = 120)
{
	struct au_set s;
	char spec[400];
	uint64_t size;
	struct graid_array *a;

	tu_need_fault_injection();
	a = make(&s, spec, sizeof(spec), &size);
	grow(a, spec, size, false);
	cr_assert_gt(atomic_load(&graid__test_pace_window_ns), 0);
	cr_assert_eq(atomic_load(&graid__test_pace_share_ns), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A busy rate the caller set replaces the share (here one no drive reaches: full speed). */
Test(reshape_pace, a_busy_rate_set_replaces_the_share, .timeout = 120)
{
	struct au_set s;
	char spec[400];
	uint64_t size;
	struct graid_array *a;

	tu_need_fault_injection();
	a = make(&s, spec, sizeof(spec), &size);
	gu_full_speed_under_load(a);
	grow(a, spec, size, true);
	cr_assert_gt(atomic_load(&graid__test_pace_window_ns), 0);
	cr_assert_eq(atomic_load(&graid__test_pace_share_ns), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
