/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-5 (docs/RESHAPE.md, "RAID-5/6 growing, as built") where members and
 * sectors fail under the job: a member out at the finish (the added space is zeroed around
 * it and marked for its catch-up), a resume at open with a member missing, the added member
 * going out mid-row (its rows written around it and marked), a sector an old member cannot
 * read (recovered from parity, the member kept), a unit the bad-block log records lost (it
 * stays lost at its new place). Members are "faulty:" files: the job's member I/O goes
 * through the fault model as the stripe path's does. The tests set graid__test_grow56.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "cututil.h"
#include "jobs/reshape_grow.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "testutil.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56;
#else
static bool graid__test_grow56; /* no switch in a release build: setup() skips */
#endif

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("RAID-5/6 growing is switched off; its tests turn it on with "
		     "graid__test_grow56, which exists only with -Dfault_injection");
#endif
	graid__test_grow56 = true;
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_INFO);
}

/* Members of the RAID-@p level before the grow (one more file: the one added). */
static unsigned nold_of(int level)
{
	return level == 5 ? 4 : 6;
}

/* The size after the grow by one member of an array of @p size bytes. */
static uint64_t grown_of(int level, uint64_t size)
{
	unsigned k = nold_of(level) - (level == 5 ? 1 : 2);

	return size / k * (k + 1);
}

/* A RAID-@p level of nold_of() member files (one more to add), holding a pattern, closed. */
static uint8_t *make_closed(struct au_set *s, int level, uint64_t *size)
{
	struct graid_array *a;
	uint8_t *model;

	au_make(s, nold_of(level) + 1, BYTES);
	cr_assert_eq(au_create(s, nold_of(level), level, CHUNK, &a), 0);
	*size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, 42);
	cr_assert_eq(graid_array_write(a, model, *size, 0), (ssize_t)*size);
	cr_assert_eq(graid_array_close(a), 0);
	return model;
}

static int state_of(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, idx, &mi), 0);
	return mi.state;
}

static void wait_state(struct graid_array *a, unsigned idx, int state)
{
	for (int i = 0; i < 3000 && state_of(a, idx) != state; i++)
		usleep(10000);
	cr_assert_eq(state_of(a, idx), state, "member %u: state %d, waited for %d", idx,
		     state_of(a, idx), state);
}

/* The job has moved past its staging (position > 0), or has ended. */
static void wait_moving(struct graid_array *a)
{
	for (int i = 0; i < 3000 && !atomic_load(&a->reshape_mem->position); i++)
		usleep(2000);
	cr_assert_gt(atomic_load(&a->reshape_mem->position), 0, "nothing moved yet");
}

/* The job has moved past byte @p p. */
static void wait_past(struct graid_array *a, uint64_t p)
{
	for (int i = 0; i < 3000 && atomic_load(&a->reshape_mem->position) <= p; i++)
		usleep(1000);
	cr_assert_gt(atomic_load(&a->reshape_mem->position), p, "stuck at %llu",
		     (unsigned long long)p);
}

/*
 * Member @p victim (an old one, or 4: the added one) sits behind a modelled NVMe-oF
 * controller that goes down once the job has moved past its staging: the job's own I/O
 * takes the member out (UNREACHABLE) and goes on around it; it is still out at the finish,
 * which zeroes the added space on the others and marks its rows there. The controller live
 * again, the member catches up from the bitmap in the new geometry: every byte reads back
 * through it and a scrub finds no mismatch.
 */
static void out_and_back(int level, unsigned victim)
{
	const unsigned nold = nold_of(level);
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	char state[320], spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_closed(&s, level, &size);

	tu_need_fault_injection();
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	snprintf(spec, sizeof(spec), "faulty:fabric-state=%s:%s", state, s.path[victim]);
	memcpy(paths, s.paths, sizeof(paths));
	paths[victim] = spec;
	cr_assert_eq(graid_array_open(paths, nold, NULL, &a), 0);
	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &paths[nold], 1, 0), 0);
	wait_moving(a);
	/* Past a window too: the job is then most likely in its pacing sleep, between rows. */
	wait_past(a, atomic_load(&a->reshape_mem->position));
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	wait_state(a, victim, GRAID_MEMBER_UNREACHABLE);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0, "the job did not finish: %s", gu_log_text);
	cr_assert_eq(gu_array_bytes(a, NULL), grown_of(level, size));
	cr_assert_eq(state_of(a, victim), GRAID_MEMBER_UNREACHABLE);
	gu_check_but(a, model, size, UINT64_MAX, "degraded, after the grow");
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	wait_state(a, victim, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_member_info(a, victim, &mi), 0);
	cr_log_info("member %u caught up %llu of %llu bytes", victim,
		    (unsigned long long)mi.catchup_done, (unsigned long long)mi.catchup_total);
	cr_assert_eq(mi.catchup_done, mi.catchup_total);
	gu_check_but(a, model, size, UINT64_MAX, "caught up");
	gu_scrub_clean(a, "caught up");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, nold + 1, NULL, &a), 0);
	gu_check_but(a, model, size, UINT64_MAX, "reopened");
	gu_scrub_clean(a, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56_faults, raid5_an_old_member_out_at_the_finish_catches_up_after_it,
     .init = setup, .timeout = 300)
{
	out_and_back(5, 1);
}

/*
 * out_and_back() with the added member @p victim, whose outage must meet the job's own
 * write (mid-row) or flush. The outage is timed by a sleep: on a loaded host it can meet a
 * record write instead (the job then stops and is tried again: right too, but not the path
 * this test is for), so up to three tries, each checked whole, for one that meets it.
 */
static void out_mid_row(int level, unsigned victim)
{
	char wrote[32], flushed[40];

	snprintf(wrote, sizeof(wrote), "to member %u", victim);
	snprintf(flushed, sizeof(flushed), "flushing member %u", victim);
	for (unsigned t = 1; t <= 3; t++) {
		gu_log_clear();
		out_and_back(level, victim);
		if (strstr(gu_log_text, wrote) || strstr(gu_log_text, flushed)) {
			cr_log_info("try %u: the outage met by the job's %s", t,
				    strstr(gu_log_text, wrote) ? "write (mid-row)" : "flush");
			return;
		}
		cr_log_info("try %u: the outage met a record write, not the job's write or flush",
			    t);
	}
	cr_assert_fail("the job's own write or flush did not meet the outage in three tries: %s",
		       gu_log_text);
}

Test(reshape_grow56_faults, raid5_the_added_member_going_out_mid_row_catches_up_after_it,
     .init = setup, .timeout = 600)
{
	out_mid_row(5, 4);
}

Test(reshape_grow56_faults, raid6_the_added_member_going_out_mid_row_catches_up_after_it,
     .init = setup, .timeout = 600)
{
	out_mid_row(6, 6);
}

/*
 * A grow closed mid-way is resumed by an open that lacks an old member (its role missing,
 * its device absent): the job moves the rest around it, and its finish zeroes the added space
 * on the members it has and marks the missing one's rows there, instead of stopping on the
 * member without a device (the routing and every redundancy job held for good).
 */
Test(reshape_grow56_faults, a_resume_with_a_member_missing_finishes, .init = setup,
     .timeout = 300)
{
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_closed(&s, 5, &size);

	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	gu_slow_down(a, 1u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	wait_moving(a);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	paths[2] = s.paths[4];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_not_null(a->reshape_job, "nothing to resume");
	cr_assert_eq(reshape_job_wait(a), 0, "the resumed job did not finish: %s", gu_log_text);
	cr_assert_eq(gu_array_bytes(a, NULL), grown_of(5, size));
	cr_assert_eq(atomic_load(&a->reshape), NULL, "the routing stayed set");
	gu_check_but(a, model, size, UINT64_MAX, "degraded, after the grow");
	/* The rows of the added space are marked for the missing member's return. */
	cr_assert(a->bitmap.enabled);
	cr_assert(bitmap_region_marked(a, a->bitmap.map.nregions - 1),
		  "the last region is not marked");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Members 0 (and, RAID-6, 1) cannot read the 4 KiB block at the same place of an old row the
 * job moves: the job reads the chunks there from parity (two erasures in one column for
 * RAID-6; each error counted against its member, which stays), and the new row written
 * there remaps them. No member is lost, every byte reads back, parity is right.
 */
static void bad_sectors(int level, uint64_t row)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const unsigned nold = nold_of(level), nbad = level == 5 ? 1 : 2;
	const uint64_t bad = row * CHUNK + BLK;
	char spec[2][700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t size, errors = 0;
	uint8_t *model = make_closed(&s, level, &size);

	tu_need_fault_injection();
	memcpy(paths, s.paths, sizeof(paths));
	for (unsigned i = 0; i < nbad; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:bad-block=%llu:%s",
			 (unsigned long long)bad, s.path[i]);
		paths[i] = spec[i];
	}
	cr_assert_eq(graid_array_open(paths, nold, NULL, &a), 0);
	cr_assert_eq(graid_array_grow(a, &paths[nold], 1, GRAID_GROW_WAIT), 0, "%s", gu_log_text);
	cr_assert_eq(gu_array_bytes(a, NULL), grown_of(level, size));
	for (unsigned i = 0; i < nbad; i++) {
		cr_assert_eq(graid_array_member_info(a, i, &mi), 0);
		errors += mi.errors;
	}
	cr_assert_gt(errors, 0, "the job never met the bad sectors");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "%u members lost", info.nfailed);
	for (unsigned r = 0; r <= nold; r++)
		cr_assert_eq(info.member_state[r], GRAID_MEMBER_ACTIVE, "member %u: %d", r,
			     info.member_state[r]);
	gu_check_but(a, model, size, UINT64_MAX, "after the grow");
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56_faults, raid5_a_bad_sector_under_a_source_chunk_is_read_from_parity,
     .init = setup, .timeout = 300)
{
	bad_sectors(5, 40);
}

/* In the first rows, which go through the staged copy: read from parity at the staging. */
Test(reshape_grow56_faults, raid5_a_bad_sector_under_a_staged_chunk_is_read_from_parity,
     .init = setup, .timeout = 300)
{
	bad_sectors(5, 1);
}

Test(reshape_grow56_faults, raid6_two_bad_sectors_in_one_column_are_read_from_parity,
     .init = setup, .timeout = 300)
{
	bad_sectors(6, 40);
}

/*
 * A 4 KiB unit the bad-block log records lost (nothing valid there, and its row's parity
 * unit recorded too, so nothing recovers it) before the grow is moved as a loss: it reads
 * -EIO at its new place after the grow, and after a reopen; the log names it there (by its
 * array offset) and its new row's parity unit, and no longer names the old places, which
 * now hold other data that reads back right.
 */
static void lost_unit(int level, uint64_t lost)
{
	const unsigned nold = nold_of(level);
	struct graid_bad_block bb[8];
	struct graid_array *a;
	struct au_set s;
	struct layout_pos o;
	uint64_t size;
	uint8_t *model = make_closed(&s, level, &size);
	unsigned found = 0, nparity = 0;
	int n;

	tu_need_fault_injection();
	cr_assert_eq(graid_array_open(s.paths, nold, NULL, &a), 0);
	/* Lost where parity cannot help: the data unit and its row's parity units too. */
	layout_map(&a->lay, lost, &o);
	cr_assert_eq(badblocks_add(a, o.member, a->members[o.member].dev.fd, o.member_off, BLK,
				   BBL_F_LOST), 0);
	for (unsigned q = 0; q < a->lay.nparity; q++) {
		unsigned p = layout_role_member(&a->lay, o.member_off / CHUNK, a->lay.ndata + q);

		cr_assert_eq(badblocks_add(a, p, a->members[p].dev.fd, o.member_off, BLK,
					   BBL_F_LOST), 0);
	}
	gu_check_but(a, model, size, lost, "recorded lost, before the grow");
	cr_assert_eq(graid_array_grow(a, &s.paths[nold], 1, GRAID_GROW_WAIT), 0, "%s",
		     gu_log_text);
	gu_check_but(a, model, size, lost, "after the grow");
	for (unsigned r = 0; r <= nold; r++) {
		n = graid_array_bad_blocks(a, r, bb, 8);
		cr_assert_geq(n, 0);
		for (int i = 0; i < n; i++) {
			cr_log_info("member %u: log range at %llu, %llu bytes, array byte %llu", r,
				    (unsigned long long)bb[i].member_offset,
				    (unsigned long long)bb[i].len,
				    (unsigned long long)bb[i].array_offset);
			cr_assert_eq(bb[i].len, BLK);
			if (bb[i].array_offset == UINT64_MAX) {
				nparity++;
				continue;
			}
			cr_assert_eq(bb[i].array_offset, lost, "a record names array byte %llu",
				     (unsigned long long)bb[i].array_offset);
			found++;
		}
	}
	/* The unit at its new place, and its new row's parity units. */
	cr_assert_eq(found, 1, "%u records of data after the grow", found);
	cr_assert_eq(nparity, (unsigned)level - 4, "%u records of parity after the grow", nparity);
	gu_scrub_clean(a, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, nold + 1, NULL, &a), 0);
	gu_check_but(a, model, size, lost, "reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow56_faults, raid5_a_unit_recorded_lost_stays_lost_at_its_new_place,
     .init = setup, .timeout = 300)
{
	lost_unit(5, 50ull * CHUNK + 2 * BLK);
}

/*
 * In the first rows: the loss is carried into the staged copy's log at the staging, and from
 * there to the new place.
 */
Test(reshape_grow56_faults, raid5_a_unit_recorded_lost_in_the_staged_rows_stays_lost,
     .init = setup, .timeout = 300)
{
	lost_unit(5, 4ull * CHUNK + 3 * BLK);
}

Test(reshape_grow56_faults, raid6_a_unit_recorded_lost_stays_lost_at_its_new_place,
     .init = setup, .timeout = 300)
{
	lost_unit(6, 50ull * CHUNK + 2 * BLK);
}

/*
 * graid_array_bad_blocks() during a grow names the array byte a logged place holds now:
 * by the new geometry where the move has passed (found by review: it mapped by the old one
 * alone, so an operator restoring "lost" bytes would restore others). RAID-5 4 -> 5, paced:
 * an entry logged on a place the move has passed, whose old and new bytes differ.
 */
Test(reshape_grow56_faults, bad_blocks_names_the_byte_a_moved_place_holds, .init = setup,
     .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, row = 3, off, want_new, was_old;
	uint8_t *model = make_closed(&s, 5, &size);
	struct graid_bad_block bb[8];
	const struct array_reshape *rs;
	unsigned m;

	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	gu_slow_down(a, 256u << 10);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	rs = a->reshape_mem;
	wait_past(a, (row + 2) * CHUNK * 4);
	/* A data place of new row `row` whose bytes in the old geometry were others. */
	for (m = 0; m < 5; m++)
		if (layout_unmap(&rs->new_lay, m, row * CHUNK, &want_new) == 0 &&
		    layout_unmap(&rs->old_lay, m, row * CHUNK, &was_old) == 0 && want_new != was_old)
			break;
	cr_assert_lt(m, 5);
	off = row * CHUNK;
	cr_assert_eq(badblocks_add(a, m, a->members[m].dev.fd, off, BLK, BBL_F_UNREADABLE), 0);
	cr_assert_eq(graid_array_bad_blocks(a, m, bb, 8), 1);
	cr_assert_eq(bb[0].member_offset, off);
	cr_assert_eq(bb[0].array_offset, want_new, "member %u row %llu: array byte %llu, holds %llu "
						   "(the old geometry's %llu)", m,
		     (unsigned long long)row, (unsigned long long)bb[0].array_offset,
		     (unsigned long long)want_new, (unsigned long long)was_old);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_assert_eq(graid_array_bad_blocks(a, m, bb, 8), 1);
	cr_assert_eq(bb[0].array_offset, want_new, "after the grow");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
