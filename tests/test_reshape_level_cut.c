/* SPDX-License-Identifier: MIT */
/*
 * Metadata-only level changes (docs/RESHAPE.md) when their superblock round is cut short
 * or misses members: a round no member takes leaves the array as it was (a stale Q never
 * trusted after a crash); a round some members miss clears the dropped member's superblock;
 * members and spares of the old level that missed the round come back (caught up or
 * rebuilt); an array split across the change is refused in either order of the paths; a
 * RAID-5 of two is refused a RAID-6 with a clear reason; a round only a spare takes keeps
 * the new level; two spares both kept at any cut; a RAID-1 becoming a RAID-5 takes
 * the engine it was opened with; the dropped slot is emptied. Separate from test_reshape_level.c
 * (the changes themselves) to keep each file to one concern.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "cututil.h"
#include "growutil.h"
#include "testutil.h"
#include "array/array.h"
#include "format/layout.h"

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

static void setup(void)
{
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_INFO);
	gu_log_clear();
}

TestSuite(reshape_level_cut, .init = setup, .timeout = 300);


/* gu_make_q_last() over @p nfiles files (spares and other devices after the five). */
static uint8_t *make_q_last(struct au_set *s, unsigned nfiles, struct graid_array **out,
			    uint64_t *size, uint64_t seed)
{
	return gu_make_q_last(s, nfiles, BYTES, CHUNK, out, size, seed);
}

/* Open files @p idx of @p s (faulty:fabric-state specs when @p state is set). */
static int open_some(const struct au_set *s, const unsigned *idx, unsigned n,
		     struct graid_array **a)
{
	const char *p[8];

	for (unsigned i = 0; i < n; i++)
		p[i] = s->paths[idx[i]];
	return graid_array_open(p, n, NULL, a);
}

/* Whether file @p path still carries a libgraid superblock (a read-only look at it alone). */
static bool has_superblock(const char *path)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a;
	int rc = graid_array_open(&path, 1, &ro, &a);

	if (rc == 0)
		graid_array_close(a);
	return rc != -EINVAL;
}

/*
 * F1: every member's superblock write fails in the round (NVMe-oF controllers reconnecting:
 * kept in, not failed). No member records the RAID-5, so the handle stays the RAID-6 and
 * keeps writing Q; after a crash the reopened RAID-6's Q is current: a scrub is clean and
 * two data members out still read back every byte.
 */
Test(reshape_level_cut, a_round_no_member_takes_leaves_the_raid6)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 5, &a, &size, 1), *model2;
	char state[320], spec[5][700];
	const char *paths[5];

	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	for (unsigned i = 0; i < 5; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:fabric-state=%s:%s", state, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	cr_assert_neq(graid_array_convert(a, 5, 0), 0, "no member took the round");
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	gu_assert_level(a, 6, 5, "after a round no member took");
	cr_assert_eq(a->lay.layout_id, LAYOUT_Q_LAST);
	model2 = aligned_alloc(BLK, size);
	gu_fill(model2, size, 2);
	cr_assert_eq(graid_array_write(a, model2, size, 0), (ssize_t)size, "%s", gu_log_text);
	cr_assert_eq(graid_array_flush(a), 0);
	fault_writes_cut_after(0); /* a crash: nothing more reaches the members */
	graid_array_close(a);
	fault_writes_cut_after(-1);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 6, 5, "reopened");
	gu_check_all(a, model2, size);
	gu_scrub_clean(a, "reopened: Q current");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	gu_check_all(a, model2, size);
	graid_array_close(a);
	free(model);
	free(model2);
	au_remove(&s);
}

/* F1, the mirror: a round no member takes leaves the RAID-1 a RAID-1, on disk and here. */
Test(reshape_level_cut, raid1_a_round_no_member_takes_leaves_the_raid1)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	char state[320], spec[2][700];
	const char *paths[2];

	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	for (unsigned i = 0; i < 2; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:fabric-state=%s:%s", state, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, 2, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	cr_assert_neq(graid_array_convert(a, 5, 0), 0);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	gu_assert_level(a, 1, 2, "after a round no member took");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 1, 2, "reopened");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * F1, some members miss the round (members 1-3 reconnecting, kept in; member 0 takes it):
 * the handle is the RAID-5, and the dropped member's superblock is cleared all the same, so
 * members 1-3 (still recording the RAID-6) can never be assembled with its stale Q.
 */
Test(reshape_level_cut, a_round_some_members_miss_clears_the_dropped_member)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 5, &a, &size, 3), *model2;
	char live[320], flaky[320], spec[5][700];
	const char *paths[5];
	static const unsigned side[] = { 1, 2, 3, 4 };

	cr_assert_eq(graid_array_close(a), 0);
	snprintf(live, sizeof(live), "%s/ctrl-live", s.dir);
	snprintf(flaky, sizeof(flaky), "%s/ctrl-flaky", s.dir);
	cr_assert_eq(au_ctrl_state(live, "live"), 0);
	cr_assert_eq(au_ctrl_state(flaky, "live"), 0);
	for (unsigned i = 0; i < 5; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:fabric-state=%s:%s",
			 i >= 1 && i <= 3 ? flaky : live, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(au_ctrl_state(flaky, "connecting"), 0);
	cr_assert_neq(graid_array_convert(a, 5, 0), 0, "members 1-3 missed the round");
	cr_assert_eq(au_ctrl_state(flaky, "live"), 0);
	gu_assert_level(a, 5, 4, "some members took the round");
	cr_assert(!has_superblock(s.paths[4]), "the dropped member's superblock is kept: %s",
		  gu_log_text);
	model2 = aligned_alloc(BLK, size);
	gu_fill(model2, size, 4);
	cr_assert_eq(graid_array_write(a, model2, size, 0), (ssize_t)size, "%s", gu_log_text);
	cr_assert_eq(graid_array_flush(a), 0);
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);

	/* Without member 0: no Q to trust; whatever is assembled reads the new bytes. */
	gu_log_clear();
	if (open_some(&s, side, 4, &a) == 0) {
		gu_check_all(a, model2, size);
		cr_assert(a->nmembers < 5 || atomic_load(&a->members[4].state) !=
						     GRAID_MEMBER_ACTIVE,
			  "the stale Q was taken in: %s", gu_log_text);
		graid_array_close(a);
	}
	free(model);
	free(model2);
	au_remove(&s);
}

/*
 * F3: the round cut after member 0's superblock (RAID-5 of four at E + 1); members 1-3 and
 * Q opened without it (the RAID-6 of five, legitimately), written, crashed: both sides at
 * E + 1. All five given, in either order, are refused as split (nothing silently dropped),
 * and the side that moved on opens alone with its bytes.
 */
Test(reshape_level_cut, a_split_across_the_drop_is_refused_in_either_order)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 5, &a, &size, 5), *model2;
	static const unsigned side[] = { 1, 2, 3, 4 };
	static const unsigned fwd[] = { 0, 1, 2, 3, 4 }, rev[] = { 4, 3, 2, 1, 0 };
	int rc;

	fault_writes_cut_after(1);
	graid_array_convert(a, 5, 0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	cr_assert_eq(open_some(&s, side, 4, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 6, 5, "members 1-3 and Q");
	model2 = aligned_alloc(BLK, size);
	gu_fill(model2, size, 6);
	cr_assert_eq(graid_array_write(a, model2, size, 0), (ssize_t)size);
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);

	for (int order = 0; order < 2; order++) {
		gu_log_clear();
		rc = open_some(&s, order ? rev : fwd, 5, &a);
		if (rc == 0) {
			/* Only the side that moved on may be taken, and with its bytes. */
			gu_assert_level(a, 6, 5, order ? "all five, reversed" : "all five");
			gu_check_all(a, model2, size);
			graid_array_close(a);
			continue;
		}
		cr_log_info("order %d: refused: %s", order, gu_log_text);
		cr_assert_eq(rc, -EIO, "order %d: %d", order, rc);
		cr_assert_not_null(strstr(gu_log_text, "split across a level change"),
				   "order %d: not told it is split: %s", order, gu_log_text);
	}
	cr_assert_eq(open_some(&s, side, 4, &a), 0, "%s", gu_log_text);
	gu_check_all(a, model2, size);
	graid_array_close(a);
	free(model);
	free(model2);
	au_remove(&s);
}

/*
 * F4: member 1 missed the round (cut after member 0's superblock); the RAID-5 opened
 * without it moved on (two events past it) and was written. Given again, member 1 is a
 * stale member of the RAID-5 (its RAID-6 superblock notwithstanding): rebuilt, every byte.
 */
Test(reshape_level_cut, a_member_that_missed_the_drop_comes_back_later)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 5, &a, &size, 7), *model2;
	static const unsigned side[] = { 0, 2, 3 };

	fault_writes_cut_after(1);
	graid_array_convert(a, 5, 0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	cr_assert_eq(open_some(&s, side, 3, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "members 0, 2, 3");
	model2 = aligned_alloc(BLK, size);
	gu_fill(model2, size, 8);
	cr_assert_eq(graid_array_write(a, model2, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_close(a), 0);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "all given");
	cr_assert_str_eq(a->members[1].dev.path, s.paths[1], "member 1 left out: %s",
			 gu_log_text);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0, "%s", gu_log_text);
	cr_assert_eq(atomic_load(&a->nfailed), 0u);
	gu_check_all(a, model2, size);
	gu_scrub_clean(a, "member 1 back");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	gu_check_all(a, model2, size);
	graid_array_close(a);
	free(model);
	free(model2);
	au_remove(&s);
}

/* F4, the mirror: member 1 missed RAID-1 -> RAID-5; member 0 moved on alone; both given. */
Test(reshape_level_cut, raid1_a_member_that_missed_the_change_comes_back_later)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model, *model2;

	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	model2 = aligned_alloc(BLK, size);
	gu_fill(model, size, 9);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	fault_writes_cut_after(1);
	graid_array_convert(a, 5, 0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	cr_assert_eq(graid_array_open(s.paths, 1, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "member 0 alone");
	gu_fill(model2, size, 10);
	cr_assert_eq(graid_array_write(a, model2, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_close(a), 0);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "both");
	cr_assert_str_eq(a->members[1].dev.path, s.paths[1], "member 1 left out: %s",
			 gu_log_text);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	gu_check_all(a, model2, size);
	graid_array_close(a);
	free(model);
	free(model2);
	au_remove(&s);
}

/*
 * F4's limit: member 1 missed the change and was then opened alone as the RAID-1 and
 * written (then a crash), while member 0 moved on as the RAID-5: split, so member 1 is not
 * caught up over its own writes.
 */
Test(reshape_level_cut, raid1_a_split_member_is_not_caught_up)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model;
	struct graid_given_info gi = { .struct_size = sizeof(gi) };

	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	gu_fill(model, size, 11);
	fault_writes_cut_after(1);
	graid_array_convert(a, 5, 0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	cr_assert_eq(graid_array_open(s.paths, 1, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0); /* member 0: E + 2, the RAID-5 */
	cr_assert_eq(graid_array_open(&s.paths[1], 1, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 1, 2, "member 1 alone");
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_flush(a), 0);
	/*
	 * A crash before its close: member 1 at E + 1, below the event member 0 recorded it
	 * out at (E + 2), so only its own record (member 0 out) tells it diverged.
	 */
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "both");
	cr_assert_eq(graid_array_given_info(a, 1, &gi), 0);
	cr_assert_eq(gi.verdict, GRAID_GIVEN_DIVERGED, "member 1: verdict %d (%s)", gi.verdict,
		     gi.why);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

/* F5: a hot spare across the drop, the round whole or cut at any write: still a spare. */
Test(reshape_level_cut, a_spare_is_kept_across_the_drop_at_any_cut)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	for (long k = -1; k < 7; k++) {
		struct au_set s;
		struct graid_array *a;
		uint64_t size;
		uint8_t *model = make_q_last(&s, 6, &a, &size, 12);
		int rc;

		cr_assert_eq(graid_array_add_spare(a, s.paths[5]), 0, "%s", gu_log_text);
		fault_writes_cut_after(k);
		rc = graid_array_convert(a, 5, 0);
		graid_array_close(a);
		fault_writes_cut_after(-1);
		gu_log_clear();
		cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0, "cut %ld: %s", k,
			     gu_log_text);
		cr_log_info("cut after write %ld: convert %d, RAID-%d of %u", k, rc,
			    a->lay.level, a->nmembers);
		cr_assert_eq(a->nspares, 1u, "cut %ld: the spare is lost: %s", k, gu_log_text);
		gu_check_all(a, model, size);
		graid_array_close(a);
		free(model);
		au_remove(&s);
	}
}

/* F5, the mirror: a spare across RAID-1 -> RAID-5, at any cut. */
Test(reshape_level_cut, raid1_a_spare_is_kept_across_the_change_at_any_cut)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	for (long k = -1; k < 4; k++) {
		struct au_set s;
		struct graid_array *a;

		au_make(&s, 3, BYTES);
		cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
		cr_assert_eq(graid_array_add_spare(a, s.paths[2]), 0, "%s", gu_log_text);
		fault_writes_cut_after(k);
		graid_array_convert(a, 5, 0);
		graid_array_close(a);
		fault_writes_cut_after(-1);
		gu_log_clear();
		cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0, "cut %ld: %s", k,
			     gu_log_text);
		cr_assert_eq(a->nspares, 1u, "cut %ld: the spare is lost: %s", k, gu_log_text);
		graid_array_close(a);
		au_remove(&s);
	}
}

/* Whether the array holds file @p path as a hot spare. */
static bool holds_spare(const struct graid_array *a, const char *path)
{
	for (unsigned i = 0; i < a->nspares; i++)
		if (!strcmp(a->spares[i].dev.path, path))
			return true;
	return false;
}

/*
 * F5 with two spares: the RAID-5 numbers its spare slots from four, so spare #2 takes slot
 * 5, the slot spare #1 had in the RAID-6. A spare the cut left at the RAID-6's event is
 * found by its slot id among the fresh spare slots, not by its old number (which would
 * check it against spare #2's id and leave it out as replaced).
 */
Test(reshape_level_cut, two_spares_are_kept_across_the_drop_at_any_cut)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	for (long k = -1; k < 9; k++) {
		struct au_set s;
		struct graid_array *a;
		uint64_t size;
		uint8_t *model = make_q_last(&s, 7, &a, &size, 14);
		int rc;

		cr_assert_eq(graid_array_add_spare(a, s.paths[5]), 0, "%s", gu_log_text);
		cr_assert_eq(graid_array_add_spare(a, s.paths[6]), 0, "%s", gu_log_text);
		fault_writes_cut_after(k);
		rc = graid_array_convert(a, 5, 0);
		graid_array_close(a);
		fault_writes_cut_after(-1);
		gu_log_clear();
		cr_assert_eq(graid_array_open(s.paths, 7, NULL, &a), 0, "cut %ld: %s", k,
			     gu_log_text);
		cr_log_info("cut after write %ld: convert %d, RAID-%d of %u, %u spares", k, rc,
			    a->lay.level, a->nmembers, a->nspares);
		cr_assert_eq(a->nspares, 2u, "cut %ld: a spare is lost: %s", k, gu_log_text);
		cr_assert(holds_spare(a, s.paths[5]) && holds_spare(a, s.paths[6]), "cut %ld",
			  k);
		gu_check_all(a, model, size);
		graid_array_close(a);
		free(model);
		au_remove(&s);
	}
}

/*
 * Two spares, spare #1 unreachable through the round (its own failed write is no error):
 * it stays at the RAID-6's event and slot 5, which the RAID-5 gave spare #2; after a
 * crash both are still spares.
 */
Test(reshape_level_cut, two_spares_the_first_missing_the_drop_both_kept)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 7, &a, &size, 15);
	char state[320], spec[700];

	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	snprintf(spec, sizeof(spec), "faulty:fabric-state=%s:%s", state, s.path[5]);
	cr_assert_eq(graid_array_add_spare(a, spec), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_add_spare(a, s.paths[6]), 0, "%s", gu_log_text);
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "converted");
	fault_writes_cut_after(0); /* a crash before spare #1 is written again */
	graid_array_close(a);
	fault_writes_cut_after(-1);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 7, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "reopened");
	cr_assert_eq(a->nspares, 2u, "a spare is lost: %s", gu_log_text);
	cr_assert(holds_spare(a, s.paths[5]) && holds_spare(a, s.paths[6]));
	gu_check_all(a, model, size);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

/*
 * A Q-last RAID-6 of five with one hot spare, reopened with every member behind a fabric
 * state that goes "connecting" for the drop's round: no member takes it, the spare does.
 * The handle goes back to the RAID-6 of five; then a crash (the close writes nothing).
 * @return the array's bytes as written.
 */
static uint8_t *spare_alone_took_the_drop(struct au_set *s, uint64_t *size, uint64_t seed)
{
	uint8_t *model;
	struct graid_array *a;
	char state[320], spec[5][700];
	const char *paths[6];

	model = make_q_last(s, 6, &a, size, seed);
	cr_assert_eq(graid_array_add_spare(a, s->paths[5]), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s->dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	for (unsigned i = 0; i < 5; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:fabric-state=%s:%s", state, s->path[i]);
		paths[i] = spec[i];
	}
	paths[5] = s->paths[5];
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(a->nspares, 1u);
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	cr_assert_neq(graid_array_convert(a, 5, 0), 0, "no member took the round");
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	gu_assert_level(a, 6, 5, "after a round only the spare took");
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	return model;
}

/*
 * F1's other side: every member misses the round (reconnecting) but the hot spare takes
 * it. The members (and Q) still say RAID-6 with Q active, so the handle goes back to the
 * RAID-6 and keeps writing Q (kept as a RAID-5, an open given the members without the
 * spare would trust a Q nobody wrote). A crash before its next round: an open given the
 * spare finds it freshest and opens the RAID-5 of four (the members at E its current
 * members, Q left out): the same data, the spare kept.
 */
Test(reshape_level_cut, spare_takes_round_members_all_fail)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = spare_alone_took_the_drop(&s, &size, 16);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "reopened");
	cr_assert(holds_spare(a, s.paths[5]), "the spare is lost: %s", gu_log_text);
	gu_check_all(a, model, size);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

/*
 * A spare that alone took the round is no side of a split: after the crash the members are
 * opened without it (the RAID-6 of five, written at the spare's event) and cut off again,
 * and an open given all of them later must take the members' RAID-6, not refuse the array
 * as split between the members and the spare (it did, -EIO, every member DIVERGED).
 */
Test(reshape_level_cut, a_spare_alone_at_the_new_level_is_no_split)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = spare_alone_took_the_drop(&s, &size, 17);

	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 6, 5, "the members alone");
	gu_check_all(a, model, size);
	fault_writes_cut_after(0); /* a crash again: the members stay at the open's event */
	graid_array_close(a);
	fault_writes_cut_after(-1);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 6, 5, "the members and the spare");
	gu_check_all(a, model, size);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

/*
 * The same, RAID-1 of two -> RAID-5 of two: the spare alone took it, the handle stays a
 * RAID-1; an open given the spare before its next round opens the RAID-5 (same bytes).
 */
Test(reshape_level_cut, raid1_spare_takes_round_members_all_fail)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	struct au_set s;
	struct graid_array *a;
	char state[320], spec[2][700];
	const char *paths[3];

	au_make(&s, 3, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, s.paths[2]), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	for (unsigned i = 0; i < 2; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:fabric-state=%s:%s", state, s.path[i]);
		paths[i] = spec[i];
	}
	paths[2] = s.paths[2];
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	cr_assert_neq(graid_array_convert(a, 5, 0), 0, "no member took the round");
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	gu_assert_level(a, 1, 2, "after a round only the spare took");
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);

	gu_log_clear();
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "reopened");
	cr_assert(holds_spare(a, s.paths[2]), "the spare is lost: %s", gu_log_text);
	graid_array_close(a);
	au_remove(&s);
}

/* The dropped role's slot keeps nothing of the Q device (counters, as a grow sets them). */
Test(reshape_level_cut, the_dropped_slot_is_emptied)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, 5, &a, &size, 13);

	cr_assert_gt(atomic_load(&a->members[4].role.writes), 0u, "Q took no writes?");
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	cr_assert_eq(atomic_load(&a->members[4].role.writes), 0u);
	cr_assert_eq(atomic_load(&a->members[4].role.write_bytes), 0u);
	cr_assert_eq(a->members[4].role.slot_id, 0u);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

/* A RAID-5 of two has no RAID-6 to become (four members at least): refused, said so. */
Test(reshape_level_cut, a_raid5_of_two_is_refused_a_raid6_clearly)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t h[3];

	au_make(&s, 3, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i < 3; i++)
		h[i] = au_file_hash(s.paths[i]);
	gu_log_clear();
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_RAID6 | GRAID_GROW_WAIT),
		     -EINVAL);
	cr_assert_not_null(strstr(gu_log_text, "four members at least"), "%s", gu_log_text);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), h[i], "file %u written", i);
	graid_array_close(a);
	au_remove(&s);
}

/* RAID-1 -> RAID-5 opens the engine the array was opened with, not the default. */
Test(reshape_level_cut, raid1_to_raid5_uses_the_engine_it_was_opened_with)
{
	struct au_set s;
	struct graid_array *a;
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = "ref" };
	struct graid_array_info info = { .struct_size = sizeof(info) };

	unsetenv("GRAID_BACKEND");
	au_make(&s, 2, BYTES);
	cr_assert_eq(au_create(&s, 2, 1, CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, &o, &a), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_str_eq(info.engine, "ref");
	graid_array_close(a);
	au_remove(&s);
}
