/* SPDX-License-Identifier: MIT */
/* Replace and rebuild online under writes, then lose more members; what replace refuses. */
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

struct heal_writer {
	struct graid_array *a;
	uint64_t size;
	unsigned id;
	uint32_t *round;
	volatile bool *stop;
	int failures;
};

/* Rewrites its own blocks (b % 2 == id) again and again while the rebuild runs. */
static void *heal_writer_main(void *arg)
{
	struct heal_writer *w = arg;
	uint8_t *buf = malloc(4096);
	uint32_t r = 100;

	while (!*w->stop) {
		for (uint64_t b = w->id; b < w->size / 4096 && !*w->stop; b += 2 * 7) {
			heal_pattern(buf, 4096, b * 4096, r);
			if (graid_array_write(w->a, buf, 4096, b * 4096) != 4096)
				w->failures++;
			else
				w->round[b] = r;
		}
		r++;
	}
	free(buf);
	return NULL;
}

static void heal_rebuild_under_writes(int level, unsigned n, uint32_t chunk, unsigned victim,
				      const unsigned *lose_after, unsigned nlose_after)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_progress prog = { 0 };
	struct heal_writer w[2];
	volatile bool stop = false;
	pthread_t th[2];
	struct graid_array *a;
	struct au_set s;
	uint32_t *round;

	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	round = calloc(info.size / 4096, sizeof(*round));
	heal_fill(a, info.size, 7);
	for (uint64_t b = 0; b < info.size / 4096; b++)
		round[b] = 7;
	cr_assert_eq(graid_array_fail_member(a, victim), 0);
	cr_assert_eq(graid_array_replace_member(a, victim, heal_new_member(&s, "new")), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[victim], GRAID_MEMBER_REBUILDING);
	for (unsigned i = 0; i < 2; i++) {
		w[i] = (struct heal_writer){ .a = a, .size = info.size, .id = i, .round = round,
					     .stop = &stop };
		pthread_create(&th[i], NULL, heal_writer_main, &w[i]);
	}
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	cr_assert_gt(prog.calls, 1);
	cr_assert_eq(prog.backwards, 0, "progress went backwards");
	cr_assert_eq(prog.last, prog.total, "progress ended at %llu of %llu",
		     (unsigned long long)prog.last, (unsigned long long)prog.total);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[victim], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(info.nfailed, 0);
	/* The rebuilt member must now carry its share: lose members other than it. */
	for (unsigned i = 0; i < nlose_after; i++)
		cr_assert_eq(graid_array_fail_member(a, lose_after[i]), 0);
	heal_verify(a, info.size, round, 0, "after rebuild and losing others");
	cr_assert_eq(graid_array_close(a), 0);
	free(round);
	au_remove(&s);
}

Test(heal_rebuild, raid6_rebuild_under_writes_then_losing_two_others, .timeout = 300)
{
	unsigned lose[2] = { 0, 4 };

	heal_rebuild_under_writes(6, 6, 16384, 2, lose, 2);
}

Test(heal_rebuild, raid5_rebuild_under_writes_then_losing_another, .timeout = 300)
{
	unsigned lose[1] = { 3 };

	heal_rebuild_under_writes(5, 4, 4096, 1, lose, 1);
}

Test(heal_rebuild, raid1_rebuild_under_writes_then_losing_the_old_copy, .timeout = 300)
{
	unsigned lose[1] = { 0 };

	heal_rebuild_under_writes(1, 2, 8192, 1, lose, 1);
}

Test(heal_rebuild, raid10_rebuild_under_writes_then_losing_its_partner, .timeout = 300)
{
	unsigned lose[1] = { 1 };

	heal_rebuild_under_writes(10, 4, 4096, 0, lose, 1);
}

Test(heal_rebuild, replace_refuses_active_roles_and_foreign_members)
{
	struct graid_array *a, *b;
	struct au_set s, t;
	char *fresh;

	au_make(&s, 4, HEAL_MEMBER_BYTES);
	au_make(&t, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 4096, &a), 0);
	cr_assert_eq(au_create(&t, 2, 1, 4096, &b), 0);
	graid_array_close(b);
	fresh = heal_new_member(&s, "fresh");
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), -EBUSY);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_replace_member(a, 1, t.paths[0]), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[2]), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, "/nonexistent"), -ENOENT);
	cr_assert_eq(graid_array_replace_member(a, 9, fresh), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	graid_array_close(a);
	au_remove(&s);
	au_remove(&t);
}
