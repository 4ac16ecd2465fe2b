/* SPDX-License-Identifier: MIT */
/* Rebuild pacing: the busy rate under foreground reads, its pause ending, and the older options struct. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#include "healutil.h"

/* A reader that keeps foreground I/O in flight until told to stop. */
struct heal_reader {
	struct graid_array *a;
	uint64_t size;
	volatile bool *stop;
	unsigned reads, failures;
};

static void *heal_reader_main(void *arg)
{
	struct heal_reader *r = arg;
	uint8_t *buf = malloc(4096);
	uint64_t x = 88172645463325252ull;

	while (!*r->stop) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (graid_array_read(r->a, buf, 4096, x % (r->size / 4096) * 4096) != 4096)
			r->failures++;
		r->reads++;
	}
	free(buf);
	return NULL;
}

static double heal_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* busy_bytes_per_sec holds the rebuild back while foreground I/O is in flight. */
Test(heal_rate, the_busy_rate_limits_a_rebuild_under_foreground_reads, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	const uint64_t busy = 2u << 20; /* the 4 MiB member in about 2 s */
	volatile bool stop = false;
	struct heal_reader r[2];
	pthread_t th[2];
	struct graid_array *a;
	struct au_set s;
	double t0, secs;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	ro.busy_bytes_per_sec = busy;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	for (unsigned i = 0; i < 2; i++) {
		r[i] = (struct heal_reader){ .a = a, .size = info.size, .stop = &stop };
		pthread_create(&th[i], NULL, heal_reader_main, &r[i]);
	}
	usleep(20 * 1000);
	t0 = heal_secs();
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	secs = heal_secs() - t0;
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(r[i].failures, 0);
	}
	cr_log_info("rebuild under reads: %.2f s, reads %u + %u", secs, r[0].reads, r[1].reads);
	/*
	 * Unlimited, the 4 MiB rebuild takes tens of ms in RAM; at the busy rate about 2 s, less
	 * the last of its four 1 MiB batches, which nothing paces.
	 */
	cr_assert_geq(secs, 0.5 * (double)(HEAL_MEMBER_BYTES - (1u << 20)) / (double)busy,
		      "rebuilt in %.2f s under foreground reads: the busy rate was not applied",
		      secs);
	heal_verify(a, info.size, NULL, 9, "after a rebuild at the busy rate");
	graid_array_close(a);
	au_remove(&s);
}

struct heal_rebuilder {
	struct graid_array *a;
	int rc;
	double secs; /* from start to end */
};

static void *heal_rebuilder_main(void *arg)
{
	struct heal_rebuilder *b = arg;
	double t0 = heal_secs();

	b->rc = graid_array_rebuild(b->a, NULL, NULL);
	b->secs = heal_secs() - t0;
	return NULL;
}

/*
 * A pause taken at the busy rate ends when the foreground goes quiet: at 64 KiB/s the 4 MiB
 * member would take a minute, and one pause after three 1 MiB batches would sleep 48 s;
 * once the readers stop, the rest must go at full speed (tens of ms in RAM).
 */
Test(heal_rate, a_busy_rate_pause_ends_when_the_foreground_stops, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	volatile bool stop = false;
	struct heal_reader r;
	struct heal_rebuilder b;
	pthread_t th, tb;
	struct graid_array *a;
	struct au_set s;
	double t_stop;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	ro.busy_bytes_per_sec = 64u << 10;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	r = (struct heal_reader){ .a = a, .size = info.size, .stop = &stop };
	pthread_create(&th, NULL, heal_reader_main, &r);
	usleep(20 * 1000);
	b = (struct heal_rebuilder){ .a = a };
	pthread_create(&tb, NULL, heal_rebuilder_main, &b);
	usleep(300 * 1000); /* the rebuild is held back, in a pause by now */
	stop = true;
	pthread_join(th, NULL);
	t_stop = heal_secs();
	pthread_join(tb, NULL);
	cr_assert_eq(b.rc, 0, "rebuild: %s", graid_strerror(b.rc));
	cr_assert_eq(r.failures, 0);
	cr_log_info("rebuild: %.2f s in all, %.2f s after the readers stopped", b.secs,
		    heal_secs() - t_stop);
	cr_assert_lt(heal_secs() - t_stop, 10.0,
		     "the rebuild went on at the busy rate for %.1f s after the foreground stopped",
		     heal_secs() - t_stop);
	heal_verify(a, info.size, NULL, 9, "after a rebuild whose pause ended early");
	graid_array_close(a);
	au_remove(&s);
}

/* A caller compiled before busy_bytes_per_sec existed passes the shorter struct. */
Test(heal_rate, rebuild_options_accept_the_struct_without_the_busy_rate)
{
	struct graid_rebuild_options ro = { .busy_bytes_per_sec = 1 };
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 4096, &a), 0);
	ro.struct_size = offsetof(struct graid_rebuild_options, busy_bytes_per_sec);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	ro.struct_size = offsetof(struct graid_rebuild_options, foreground_yield_us);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), -EINVAL);
	ro.struct_size = sizeof(ro);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	graid_array_close(a);
	au_remove(&s);
}

