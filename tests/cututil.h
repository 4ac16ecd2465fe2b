/* SPDX-License-Identifier: MIT */
/*
 * The member-write cut of the reshape's crash tests (member/member.h,
 * fault_writes_cut_after()) exists only with -Dfault_injection; in a release build a test
 * that reaches for it skips, saying so.
 */
#ifndef GRAID_TESTS_CUTUTIL_H
#define GRAID_TESTS_CUTUTIL_H

#include <criterion/criterion.h>

#include "member/member.h"

#if !GRAID_FAULT_INJECTION
static inline void fault_writes_cut_after(long n)
{
	if (n >= 0)
		cr_skip_test("the member-write cut exists only with -Dfault_injection");
}

static inline long fault_writes_cut_left(void)
{
	return -1;
}
#endif

#endif
