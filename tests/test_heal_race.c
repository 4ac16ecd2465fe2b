/* SPDX-License-Identifier: MIT */
/* The pipelined rebuild raced by writers and a scrubber, then more members lost: every byte as last written. */
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

/*
 * The pipelined rebuild keeps one batch's writes in flight while it locks and reads the
 * next. Writers race it with runs of 1-4 blocks at random places (each writer owns every
 * other 16 KiB group, so the in-memory copy knows each block's last write), a scrubber
 * takes its own stripe locks all along, then members other than the rebuilt ones are lost
 * and everything must read back as last written.
 */
struct heal_racer {
	struct graid_array *a;
	uint64_t size;
	unsigned id;
	uint32_t *round;
	volatile bool *stop;
	uint64_t seed;
	int failures;
	unsigned writes;
};

static uint64_t heal_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *heal_racer_main(void *arg)
{
	struct heal_racer *w = arg;
	uint8_t *buf = malloc(4 * 4096);
	uint64_t groups = w->size / (4 * 4096), s = w->seed;
	uint32_t r = 1000 + w->id;

	while (!*w->stop) {
		uint64_t g = heal_rand(&s) % groups / 2 * 2 + w->id;
		unsigned first = (unsigned)(heal_rand(&s) % 4);
		unsigned nb = 1 + (unsigned)(heal_rand(&s) % (4 - first));
		uint64_t b0 = g * 4 + first;

		if (g >= groups)
			continue;
		for (unsigned k = 0; k < nb; k++)
			heal_pattern(buf + k * 4096, 4096, (b0 + k) * 4096, r);
		if (graid_array_write(w->a, buf, nb * 4096, b0 * 4096) != (ssize_t)nb * 4096) {
			w->failures++;
		} else {
			for (unsigned k = 0; k < nb; k++)
				w->round[b0 + k] = r;
			w->writes++;
		}
		r += 2;
	}
	free(buf);
	return NULL;
}

struct heal_scrubber {
	struct graid_array *a;
	volatile bool *stop;
	int failures;
	unsigned runs;
};

static void *heal_scrubber_main(void *arg)
{
	struct heal_scrubber *sc = arg;

	while (!*sc->stop) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		if (graid_array_scrub(sc->a, 0, &rep))
			sc->failures++;
		sc->runs++;
	}
	return NULL;
}

static void heal_pipelined(int level, unsigned n, uint32_t chunk, const unsigned *victims,
			   unsigned nvictims, const unsigned *lose, unsigned nlose)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_progress prog = { 0 };
	struct heal_racer w[2];
	struct heal_scrubber sc = { 0 };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	volatile bool stop = false;
	uint64_t seed = tu_seed();
	pthread_t th[3];
	struct graid_array *a;
	struct au_set s;
	uint32_t *round;
	char name[32];

	cr_log_info("seed %llu", (unsigned long long)seed);
	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	round = calloc(info.size / 4096, sizeof(*round));
	heal_fill(a, info.size, 5);
	for (uint64_t b = 0; b < info.size / 4096; b++)
		round[b] = 5;
	for (unsigned i = 0; i < nvictims; i++)
		cr_assert_eq(graid_array_fail_member(a, victims[i]), 0);
	for (unsigned i = 0; i < nvictims; i++) {
		snprintf(name, sizeof(name), "new%u", i);
		cr_assert_eq(graid_array_replace_member(a, victims[i], heal_new_member(&s, name)),
			     0);
	}
	/* About a second of rebuilding: many batches, each raced by many writes. */
	ro.max_bytes_per_sec = 4u << 20;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	sc = (struct heal_scrubber){ .a = a, .stop = &stop };
	for (unsigned i = 0; i < 2; i++) {
		w[i] = (struct heal_racer){ .a = a, .size = info.size, .id = i, .round = round,
					    .stop = &stop, .seed = seed * 2 + i + 1 };
		pthread_create(&th[i], NULL, heal_racer_main, &w[i]);
	}
	pthread_create(&th[2], NULL, heal_scrubber_main, &sc);
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	pthread_join(th[2], NULL);
	cr_assert_eq(sc.failures, 0, "scrub failed while the rebuild ran");
	cr_log_info("racing writes %u + %u, scrubs %u", w[0].writes, w[1].writes, sc.runs);
	cr_assert_eq(prog.backwards, 0, "progress went backwards");
	cr_assert_eq(prog.last, prog.total);
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (unsigned i = 0; i < nvictims; i++)
		cr_assert_eq(info.member_state[victims[i]], GRAID_MEMBER_ACTIVE);
	/* Rebuilt data and parity must agree before anything else is lost. */
	{
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
		cr_assert_eq(rep.mismatches, 0, "scrub after the rebuild: %llu mismatches",
			     (unsigned long long)rep.mismatches);
	}
	for (unsigned i = 0; i < nlose; i++)
		cr_assert_eq(graid_array_fail_member(a, lose[i]), 0);
	heal_verify(a, info.size, round, 0, "after a pipelined rebuild and losing others");
	cr_assert_eq(graid_array_close(a), 0);
	free(round);
	au_remove(&s);
}

Test(heal_race, raid6_two_rebuilt_at_once_under_racing_writes_and_scrubs_then_two_others_lost,
     .timeout = 300)
{
	unsigned victims[2] = { 1, 4 }, lose[2] = { 0, 5 };

	heal_pipelined(6, 6, 4096, victims, 2, lose, 2);
}

Test(heal_race, raid5_large_chunks_rebuilt_under_racing_writes_and_scrubs_then_another_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 2 }, lose[1] = { 0 };

	heal_pipelined(5, 5, 65536, victims, 1, lose, 1);
}

Test(heal_race, raid10_rebuilt_under_racing_writes_and_scrubs_then_its_partner_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 2 }, lose[1] = { 3 };

	heal_pipelined(10, 4, 4096, victims, 1, lose, 1);
}

Test(heal_race, raid1_rebuilt_under_racing_writes_and_scrubs_then_the_old_copy_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 0 }, lose[1] = { 1 };

	heal_pipelined(1, 2, 16384, victims, 1, lose, 1);
}
