/* SPDX-License-Identifier: MIT */
/* Hot spares: one takes over a failed member by itself, and is not blamed for the old device's errors. */
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
