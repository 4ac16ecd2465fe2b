/* SPDX-License-Identifier: MIT */
/* The member being rebuilt replaced, failed or taken over by a spare while its rebuild runs. */
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
 * The member being rebuilt fails on a foreground write and is replaced (or a spare takes
 * over) while the rebuild runs. The new device starts at row 0: the running pass must not
 * carry on from where the old device was and call the new one in sync (it did once: rows
 * before the swap were never written to the new device, and read back wrong).
 */
struct heal_swap {
	struct graid_array *a;
	struct au_set *s;
	uint64_t size;
	uint32_t row_bytes;
	unsigned victim;
	int done;
	int fail_rc, write_rc, replace_rc;
	struct heal_progress prog;
};

static void heal_swap_cb(void *arg, uint64_t done, uint64_t total)
{
	struct heal_swap *h = arg;
	uint8_t *buf;

	heal_progress_cb(&h->prog, done, total);
	if (h->done || done == 0)
		return;
	h->done = 1;
	h->fail_rc = graid_array_fail_member(h->a, h->victim);
	/* A full-stripe write to the last row, degraded now. */
	buf = malloc(h->row_bytes);
	heal_pattern(buf, h->row_bytes, h->size - h->row_bytes, 9);
	h->write_rc = (int)graid_array_write(h->a, buf, h->row_bytes, h->size - h->row_bytes);
	free(buf);
	h->replace_rc = graid_array_replace_member(h->a, h->victim,
						   heal_new_member(h->s, "new2"));
}

Test(heal_swap, a_member_replaced_during_its_own_rebuild_is_rebuilt_from_the_start, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_swap h = { 0 };
	struct graid_array *a;
	struct au_set s;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	h = (struct heal_swap){ .a = a, .s = &s, .size = info.size, .row_bytes = 3 * 4096,
				.victim = 2 };
	cr_assert_eq(graid_array_rebuild(a, heal_swap_cb, &h), 0);
	cr_assert_eq(h.fail_rc, 0, "failing the member being rebuilt: %d", h.fail_rc);
	cr_assert_eq(h.prog.backwards, 0, "progress went backwards over the second pass");
	cr_assert_eq(h.prog.last, h.prog.total, "progress ended at %llu of %llu",
		     (unsigned long long)h.prog.last, (unsigned long long)h.prog.total);
	cr_assert_eq(h.write_rc, (int)h.row_bytes, "the degraded write: %d", h.write_rc);
	cr_assert_eq(h.replace_rc, 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	heal_verify(a, info.size, NULL, 9, "after the rebuilt member was replaced mid-rebuild");
	graid_array_close(a);
	au_remove(&s);
}

/* The new member fails under its own rebuild: the rebuild stops, the data stays whole. */
Test(heal_swap, a_new_member_failing_during_its_rebuild_stops_it_with_eio, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	a = heal_raid5_role2_failed(&s, 4096, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), -EIO);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_FAILED);
	heal_verify(a, info.size, NULL, 9, "degraded, after the new member failed");
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new2")), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "with the second new member standing in for another");
	graid_array_close(a);
	au_remove(&s);
}

struct heal_late_writer {
	struct graid_array *a;
	uint64_t size;
	int rc;
};

static void *heal_late_writer_main(void *arg)
{
	struct heal_late_writer *w = arg;
	uint8_t *buf = malloc(3 * 4096);

	usleep(500 * 1000); /* the rebuild has written its first batch and is pacing */
	heal_pattern(buf, 3 * 4096, w->size - 3 * 4096, 9);
	w->rc = (int)graid_array_write(w->a, buf, 3 * 4096, w->size - 3 * 4096);
	free(buf);
	return NULL;
}

/* The same with no call from the callback: a hot spare takes over from a paced rebuild. */
Test(heal_swap, a_spare_taking_over_the_member_being_rebuilt_is_rebuilt_from_the_start,
     .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 1u << 20 };
	struct heal_late_writer w;
	struct graid_array *a;
	struct au_set s;
	pthread_t th;
	int rc;

	tu_need_fault_injection();
	a = heal_raid5_role2_failed(&s, 4096, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_add_spare(a, heal_new_member(&s, "spare")), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	w = (struct heal_late_writer){ .a = a, .size = info.size };
	pthread_create(&th, NULL, heal_late_writer_main, &w);
	rc = graid_array_rebuild(a, NULL, NULL);
	pthread_join(th, NULL);
	cr_assert_eq(rc, 0, "rebuild: %s", graid_strerror(rc));
	cr_assert_eq(w.rc, 3 * 4096, "the write during the rebuild: %d", w.rc);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0); /* nothing left: returns at once */
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	heal_verify(a, info.size, NULL, 9, "after a spare took over the member being rebuilt");
	graid_array_close(a);
	au_remove(&s);
}
