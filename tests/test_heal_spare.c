/* SPDX-License-Identifier: MIT */
/* Hot spares: one takes over a failed member by itself, and is not blamed for the old device's errors. */
#include <errno.h>
#include <stdbool.h>
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

Test(heal_spare, a_hot_spare_takes_over_a_failed_member, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	char *spare;

	au_make(&s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	spare = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	cr_assert_eq(graid_array_member_info(a, 5, &mi), 0, "the spare is listed after the roles");
	cr_assert_eq(mi.state, GRAID_MEMBER_SPARE);
	cr_assert_str_eq(mi.path, spare);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	/* The spare is rebuilding in the background; this waits for it (or does it). */
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[3], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_member_info(a, 3, &mi), 0);
	cr_assert_str_eq(mi.path, spare);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, info.size, NULL, 3, "after the spare took over and two more failed");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A new member whose writes fail while several of its writes are in flight (64 KiB chunks:
 * many writes per batch, two batches' writes at once): a hot spare takes its role at the
 * first failure and must not be failed by the old device's later ones.
 */
Test(heal_spare, a_spare_is_not_blamed_for_late_errors_of_the_member_it_replaced, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	a = heal_raid5_role2_failed(&s, 64 * 1024, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_add_spare(a, heal_new_member(&s, "spare")), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE,
		     "role 2 is %d after the spare's rebuild", info.member_state[2]);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "with the spare standing in for another");
	graid_array_close(a);
	au_remove(&s);
}

Test(heal_spare, a_removed_spare_takes_no_role_and_is_not_a_spare_at_the_next_open,
     .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_given_info gi = { .struct_size = sizeof(gi) };
	const char *paths[AU_MAX];
	uint64_t hash[6];
	struct graid_array *a;
	struct au_set s;
	char *spare, *keep, *stranger;

	au_make(&s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	spare = heal_new_member(&s, "spare");
	keep = heal_new_member(&s, "keep");
	stranger = heal_new_member(&s, "stranger");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	cr_assert_eq(graid_array_add_spare(a, keep), 0);

	/* Refusals change nothing: not a spare, a member in a role, bad arguments. */
	for (unsigned i = 0; i < 5; i++)
		hash[i] = au_file_hash(s.paths[i]);
	hash[5] = au_file_hash(spare);
	cr_assert_eq(graid_array_remove_spare(a, stranger), -ENOENT);
	cr_assert_eq(graid_array_remove_spare(a, "/nonexistent/device"), -ENOENT);
	cr_assert_eq(graid_array_remove_spare(a, s.paths[2]), -ENOENT, "role 2 is no spare");
	cr_assert_eq(graid_array_remove_spare(a, ""), -EINVAL);
	cr_assert_eq(graid_array_remove_spare(a, NULL), -EINVAL);
	cr_assert_eq(graid_array_remove_spare(NULL, spare), -EINVAL);
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), hash[i], "member %u changed", i);
	cr_assert_eq(au_file_hash(spare), hash[5], "the spare changed");
	cr_assert_eq(graid_array_member_info(a, 6, &mi), 0, "both spares still listed");

	/* Named by another path to the same device: matched by identity. */
	{
		char other[600];

		snprintf(other, sizeof(other), "%s/./%s", s.dir, strrchr(spare, '/') + 1);
		cr_assert_eq(graid_array_remove_spare(a, other), 0);
	}
	cr_assert_eq(graid_array_remove_spare(a, spare), -ENOENT, "removed twice");
	cr_assert(au_sb_cleared(spare), "the removed spare still has a superblock");
	cr_assert_eq(graid_array_member_info(a, 5, &mi), 0);
	cr_assert_str_eq(mi.path, keep, "the other spare moved up");
	cr_assert_eq(graid_array_member_info(a, 6, &mi), -EINVAL, "one spare left");
	cr_assert_eq(graid_array_remove_spare(a, keep), 0);
	cr_assert_eq(graid_array_member_info(a, 5, &mi), -EINVAL, "no spare left");

	/* A member fails: no spare takes its role. */
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[3], GRAID_MEMBER_FAILED, "a removed spare took role 3");
	cr_assert_eq(graid_array_close(a), 0);

	/* Given with the members at the next open, neither is taken as a spare. */
	memcpy(paths, s.paths, sizeof(paths));
	paths[5] = spare;
	paths[6] = keep;
	cr_assert_eq(graid_array_open(paths, 7, NULL, &a), 0);
	cr_assert_eq(graid_array_member_info(a, 5, &mi), -EINVAL, "a removed spare is back");
	for (unsigned i = 5; i < 7; i++) {
		cr_assert_eq(graid_array_given_info(a, i, &gi), 0);
		cr_assert_neq(gi.verdict, GRAID_GIVEN_SPARE, "%s taken as a spare", paths[i]);
		cr_assert_neq(gi.verdict, GRAID_GIVEN_MEMBER, "%s taken as a member", paths[i]);
	}
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[3], GRAID_MEMBER_FAILED);
	heal_verify(a, info.size, NULL, 3, "after the spares were removed and a member failed");
	/* Free again: it can be added back (and takes failed role 3 at once). */
	cr_assert_eq(graid_array_add_spare(a, keep), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* A look is refused before anything is looked up, and writes nothing. */
	{
		struct graid_open_options ro = { .struct_size = sizeof(ro),
						 .flags = GRAID_OPEN_READ_ONLY };

		paths[5] = keep;
		cr_assert_eq(graid_array_open(paths, 6, &ro, &a), 0);
		hash[5] = au_file_hash(keep);
		cr_assert_eq(graid_array_remove_spare(a, keep), -EROFS);
		cr_assert_eq(au_file_hash(keep), hash[5]);
		cr_assert_eq(graid_array_close(a), 0);
	}
	au_remove(&s);
}

/* Make @p path an empty device of the size the tests use: no superblock on it. */
static void wipe(const char *path)
{
	int fd = open(path, O_WRONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 0), 0);
	cr_assert_eq(ftruncate(fd, HEAL_MEMBER_BYTES), 0);
	close(fd);
}

/*
 * A device replaced in its role is let go at once, not when the array closes: the operator
 * can wipe it and add it back as a hot spare while the array stays open (served), and
 * another process can take it.
 */
Test(heal_spare, a_replaced_device_is_let_go_and_can_come_back_as_a_spare, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const char *old_paths[AU_MAX];
	struct graid_array *a, *other;
	struct au_set s;
	char *fresh, *old;

	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 5);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	fresh = heal_new_member(&s, "fresh");
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);

	/* The old device is free: wiped, another array can be made on it while this one is open. */
	old = s.path[1];
	memcpy(old_paths, s.paths, sizeof(old_paths));
	old_paths[0] = old;
	old_paths[1] = heal_new_member(&s, "x1");
	old_paths[2] = heal_new_member(&s, "x2");
	wipe(old);
	{
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
						  .chunk_bytes = 8192, .backend = "isal" };

		cr_assert_eq(graid_array_create(old_paths, 3, &cfg, &other), 0,
			     "the replaced device is still held by the array it left");
		cr_assert_eq(graid_array_close(other), 0);
	}
	/* Wiped again, it comes back to its first array as a hot spare. */
	wipe(old);
	cr_assert_eq(graid_array_add_spare(a, old), 0);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_SPARE);
	heal_verify(a, info.size, NULL, 5, "with the old device back as a spare");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A spare whose own superblock cannot be written is not added: the next open could not find it. */
Test(heal_spare, a_spare_whose_superblock_fails_is_not_added, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	char spec[600];

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 8192, &a), 0);
	snprintf(spec, sizeof(spec), "faulty:sb-eio-after=0:%s", heal_new_member(&s, "spare"));
	cr_assert_eq(graid_array_add_spare(a, spec), -EIO);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), -EINVAL, "it is listed as a spare");
	/* The array goes on: a good spare is taken, and takes a failed role. */
	cr_assert_eq(graid_array_add_spare(a, heal_new_member(&s, "good")), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE);
	cr_assert(strstr(mi.path, "good"), "role 2 is %s", mi.path);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
