/* SPDX-License-Identifier: MIT */
/* Which failed I/Os the I/O-error health rule counts: one per bad area (member_ioerr.c). */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "member/member_ioerr.h"

static struct member_role *role_new(void)
{
	struct member_role *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	member_role_reset(r, 1);
	return r;
}

#define S 1000000000ull

Test(member_ioerr, one_area_failing_again_is_counted_once)
{
	struct member_role *r = role_new();

	cr_assert(member_ioerr_note(r, false, 65536, 65536, 10 * S));
	for (unsigned i = 0; i < 4; i++)
		cr_assert_not(member_ioerr_note(r, false, 65536, 65536, (11 + i) * S), "retry %u", i);
	/* One block inside it, read alone: the same area. */
	cr_assert_not(member_ioerr_note(r, false, 65536 + 8192, 4096, 20 * S));
	cr_assert_eq(atomic_load(&r->io_err_row[0]), 1);
	cr_assert_eq(atomic_load(&r->io_err_next), 1);
	/* The block next to it, not overlapping: another area. */
	cr_assert(member_ioerr_note(r, false, 131072, 4096, 21 * S));
	cr_assert_eq(atomic_load(&r->io_err_row[0]), 2);
	/* A write of the same bytes is another kind: counted, in the writes' row. */
	cr_assert(member_ioerr_note(r, true, 65536, 65536, 22 * S));
	cr_assert_eq(atomic_load(&r->io_err_row[1]), 1);
	cr_assert_eq(atomic_load(&r->io_err_row[0]), 2);
	free(r);
}

Test(member_ioerr, an_area_counts_again_after_the_window_or_eight_others)
{
	struct member_role *r = role_new();

	cr_assert(member_ioerr_note(r, false, 0, 4096, 10 * S));
	cr_assert_not(member_ioerr_note(r, false, 0, 4096, 10 * S + IOERR_AREA_WINDOW_NS));
	cr_assert(member_ioerr_note(r, false, 0, 4096, 11 * S + IOERR_AREA_WINDOW_NS));
	/* Eight other areas push it out of the memory. */
	for (uint64_t k = 1; k <= IOERR_AREAS; k++)
		cr_assert(member_ioerr_note(r, false, k << 20, 4096, 12 * S + IOERR_AREA_WINDOW_NS));
	cr_assert(member_ioerr_note(r, false, 0, 4096, 13 * S + IOERR_AREA_WINDOW_NS));
	cr_assert_eq(atomic_load(&r->io_err_next), IOERR_AREAS + 3);
	/* A role given a new device forgets them. */
	member_role_reset(r, 2);
	cr_assert(member_ioerr_note(r, false, 0, 4096, 14 * S + IOERR_AREA_WINDOW_NS));
	free(r);
}
