/* SPDX-License-Identifier: MIT */
/*
 * A data write that starts while a discard of its region is completing, just between the
 * discard's look at the region and its mark (the library's live-map seam puts it there),
 * keeps the region used: else the next flush records it unused, and a rebuild skips the
 * acknowledged write (found by review with a debugger; this makes it a test).
 */
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "meta/live.h"
#include "testutil.h"

#define LR_MEMBER_BYTES ((1u << 20) + (16u << 20))

#if GRAID_FAULT_INJECTION
static int lr_fired;

static void lr_write_now(struct graid_array *a, uint64_t r)
{
	uint8_t buf[4096];

	if (lr_fired++ || r != 0)
		return;
	memset(buf, 0x77, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
}

static uint64_t lr_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

static void lr_run(void)
{
	struct graid_array *a;
	struct au_set s, n;
	uint8_t buf[4096];
	uint64_t region;

	au_make(&s, 4, LR_MEMBER_BYTES);
	au_make(&n, 1, LR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	region = lr_used(a);
	graid__test_live_marking = lr_write_now;
	cr_assert_eq(graid_array_discard(a, 0, region), 0);
	graid__test_live_marking = NULL;
	cr_assert_eq(lr_fired, 1, "the seam never ran: the test tested nothing");
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_gt(lr_used(a), 0, "the region written during the discard was recorded unused");
	/* And the harm it would do: a rebuild skipping it, then the rebuilt member read. */
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_replace_member(a, 0, n.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_read(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(buf[0], 0x77, "the acknowledged write reads 0x%02x after the rebuild",
		     buf[0]);
	graid_array_close(a);
	au_remove(&s);
	au_remove(&n);
}
#endif

Test(live_race, a_write_between_a_discards_look_and_its_mark_keeps_the_region_used,
     .timeout = 60)
{
	tu_need_fault_injection(); /* the seam exists only in builds with fault injection */
#if GRAID_FAULT_INJECTION
	lr_run();
#endif
}
