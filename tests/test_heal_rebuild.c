/* SPDX-License-Identifier: MIT */
/*
 * Replace and rebuild online under writes, then lose more members; what replace and spare
 * add refuse; what a role's new device starts with.
 */
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
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[2]), -EEXIST);
	cr_assert_eq(graid_array_replace_member(a, 1, "/nonexistent"), -ENOENT);
	cr_assert_eq(graid_array_replace_member(a, 9, fresh), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	graid_array_close(a);
	au_remove(&s);
	au_remove(&t);
}

/* A member's file hash for each of @p s's first @p n members. */
static void heal_hashes(const struct au_set *s, unsigned n, uint64_t *h)
{
	for (unsigned i = 0; i < n; i++)
		h[i] = au_file_hash(s->paths[i]);
}

/*
 * `replace --degraded 1 d0 d1 d2 d3 d4` with the new device's path forgotten: role 0's own
 * device (absent from the members, so its role is missing) must not become role 1's new
 * device, nor a spare. The role's own device stays accepted, and so does the failed device
 * of the role being replaced.
 */
Test(heal_rebuild, replace_and_spare_add_refuse_a_member_of_another_role)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t before[5], after[5];
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 4096, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 9);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Role 0 not given (degraded), role 1 failed: d0 is given as role 1's "new" device. */
	cr_assert_eq(graid_array_open(s.paths + 1, 4, NULL, &a), 0);
	heal_hashes(&s, 5, before);
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[0]), -EEXIST,
		     "an absent member of role 0 was taken as role 1's new device");
	cr_assert_eq(graid_array_add_spare(a, s.paths[0]), -EEXIST,
		     "an absent member of role 0 was taken as a spare");
	/* One the array holds open, in another role. */
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[3]), -EEXIST);
	cr_assert_eq(graid_array_add_spare(a, s.paths[3]), -EEXIST);
	heal_hashes(&s, 5, after);
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(after[i], before[i], "a refused call changed member %u", i);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[0], GRAID_MEMBER_MISSING);
	cr_assert_eq(info.member_state[1], GRAID_MEMBER_FAILED);
	/* The failed device of the role being replaced is accepted as its new device. */
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[1]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Role 0's own device, for role 0: accepted, and rebuilt whole. */
	cr_assert_eq(graid_array_open(s.paths + 1, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_replace_member(a, 0, s.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	heal_verify(a, info.size, NULL, 9, "through the roles replaced by their own devices");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * The read errors counted against a role's old device are not the new device's: an old
 * drive taken out for too many of them, replaced by a new one that has one repaired read
 * error, must keep the new one. Before, the role kept the count and took the new device
 * out at its first repaired error.
 */
Test(heal_rebuild, a_replaced_role_starts_with_fresh_read_error_counts, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	char bad[400], worse[400];
	const char *paths[4];
	uint8_t *buf = malloc(4096);
	struct graid_array *a;
	struct au_set s;
	int reads = 0;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 4096, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 9);
	cr_assert_eq(graid_array_close(a), 0);
	/* Every read of member 2 fails; each is repaired from parity until it is too many. */
	snprintf(bad, sizeof(bad), "faulty:read-eio-after=0:%s", s.paths[2]);
	memcpy(paths, s.paths, sizeof(paths));
	paths[2] = bad;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	/* RAID-5 of 4, 4 KiB chunks: array bytes [8 KiB, 12 KiB) are member 2's. */
	do {
		cr_assert_eq(graid_array_read(a, buf, 4096, 8192), 4096);
		cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
	} while (mi.state == GRAID_MEMBER_ACTIVE && ++reads < 1000);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED, "member 2 was never taken out");
	cr_log_info("member 2 taken out after %d repaired read errors", reads);
	/* Its new device reads badly too, but this is its first error. */
	snprintf(worse, sizeof(worse), "faulty:read-eio-after=0:%s",
		 heal_new_member(&s, "new"));
	cr_assert_eq(graid_array_replace_member(a, 2, worse), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_read(a, buf, 4096, 8192), 4096);
	cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE,
		     "the new device was taken out at its first repaired read error (state %d)",
		     mi.state);
	cr_assert_eq(mi.errors, 1);
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/*
 * The library's background rebuild says how it ended (graid_array_info): running while it
 * runs, and the error it stopped with when a second member fails under it, with the
 * replaced role left rebuilding; a graidctl following a served rebuild relies on it.
 */
Test(heal_rebuild, a_background_rebuild_that_stops_says_why_in_info, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX];
	char spec[600];
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 7);
	cr_assert_eq(graid_array_close(a), 0);
	/* Member 2 cannot be read: the rebuild of role 1 reads it, fails it, and stops. */
	snprintf(spec, sizeof(spec), "faulty:read-eio-after=0:%s", s.path[2]);
	memcpy(paths, s.paths, sizeof(paths));
	paths[2] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.rebuild_running, 0);
	cr_assert_eq(info.rebuild_error, 0, "no rebuild ran yet");
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_replace_member(a, 1, heal_new_member(&s, "new")), 0);
	cr_assert_eq(graid_array_rebuild_start(a), 0);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(graid_array_info(a, &info), 0);
		if (!info.rebuild_running && info.rebuild_error)
			break;
		usleep(10000);
	}
	cr_assert_eq(info.rebuild_error, -EIO, "the background rebuild's end: %d", info.rebuild_error);
	cr_assert_eq(info.member_state[1], GRAID_MEMBER_REBUILDING, "role 1 left rebuilding");
	graid_array_close(a);
	au_remove(&s);
}
