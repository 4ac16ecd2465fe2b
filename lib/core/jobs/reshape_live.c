/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow moves only live data (docs/RESHAPE.md, "Moving only live data"). The
 * live-data map's regions are member rows, and a row number names the same member bytes in
 * both geometries. A clear bit says its rows read as zero on every member, parity too; so a
 * new row whose data comes only from such old rows would be written with zeroes and zero
 * parity by a copy: it is zeroed instead, without reading anything. A new row that gets
 * live data has its region marked used, durably, before its writes go out, as a request's
 * write marks its own, so every new row holding live data has its bit when the grow ends and
 * the finish needs no "every region used". While a grow runs a bit is cleared only for a
 * region whose rows the grow zeroed whole (behind the position, never a window's source),
 * or by a discard from before the grow (discards routed by a reshape clear none, queue.c).
 */
#include <errno.h>
#include <inttypes.h>

#include "io/discard.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_live.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/live.h"
#include "meta/member_fail.h"

/* Array bytes of a row's data in layout @p l. */
static uint64_t grow56_live_unit(const struct layout *l)
{
	return (uint64_t)l->ndata * l->chunk;
}

bool grow56_live_row_unused(const struct graid_array *a, const struct array_reshape *rs,
			    uint64_t row)
{
	uint64_t nu = grow56_live_unit(&rs->new_lay), ou = grow56_live_unit(&rs->old_lay);
	uint64_t b0 = row * nu, b1 = b0 + nu;

	if (!a->live)
		return false;
	if (b0 >= rs->end)
		return true; /* the space the grow adds: zeroes */
	if (b1 > rs->end)
		b1 = rs->end;
	for (uint64_t r = b0 / ou; r <= (b1 - 1) / ou; r++)
		if (!live_stripe_unused(a, r))
			return false;
	return true;
}

uint64_t grow56_live_span(const struct graid_array *a, const struct array_reshape *rs,
			  uint64_t row, uint64_t most, bool unused)
{
	uint64_t k = 0;

	while (k < most && grow56_live_row_unused(a, rs, row + k) == unused)
		k++;
	return k;
}

int grow56_live_mark(struct graid_array *a, const struct array_reshape *rs, uint64_t r0,
		     uint64_t r1, bool all)
{
	uint64_t last = UINT64_MAX, step;
	int rc = 0;

	if (!a->live)
		return 0;
	step = a->live->map.region_stripes;
	for (uint64_t row = r0; rc == 0 && row < r1; row++) {
		if (row / step == last || (!all && grow56_live_row_unused(a, rs, row)))
			continue;
		last = row / step;
		/*
		 * As a data write: numbered, a discard's pending clear of the region cancelled
		 * (a discard from before the grow may still be waiting for its flush), marked.
		 */
		rc = live_start_write(a, row);
		live_end_write(a, row);
	}
	return rc;
}

int grow56_zero_rows(struct graid_array *a, const struct array_reshape *rs, uint64_t r0,
		     uint64_t r1, bool *written)
{
	const struct layout *l = &rs->new_lay;
	uint64_t off = r0 * l->chunk, len = (r1 - r0) * l->chunk;
	bool out = grow56_dead_member(a, rs) < a->nmembers;
	struct live_token t;
	int rc = 0;

	/* A role out: the rows marked first, as a batch's (kept while a role is out). */
	if (out && (rc = grow56_mark_rows(a, r0, r1)) != 0)
		return rc;
	live_rows_zero_begin(a, &t);
	for (unsigned m = 0; m < l->nmembers; m++) {
		int fd = a->members[m].dev.fd;

		if (!array_role_alive(a, m))
			continue;
		/* The added members' rows too: their devices were not zeroed when added. */
		if (fault_write_cut()) {
			/* A test's power cut: no zeroes land from here on, as no write does. */
			rc = -EIO;
			array_member_io_failed(a, m, fd, rc);
		} else {
			rc = discard_member_sync(a, m, off, len);
		}
		if (rc == 0) {
			written[m] = true;
			badblocks_clear(a, m, fd, off, len);
			continue;
		}
		/* discard_member_sync() took the member out, as a failed write does. */
		graid__log(GRAID_LOG_ERR, "reshape: zeroing unused rows %" PRIu64 "-%" PRIu64
					  " on member %u (%s): %s; taking it out",
			   r0, r1 - 1, m, a->members[m].dev.path, graid_strerror(rc));
		if (atomic_load(&a->broken))
			return -EIO;
	}
	/* A member out missed the zeroes: its catch-up rewrites these rows. */
	if (out || grow56_dead_member(a, rs) < a->nmembers)
		return grow56_mark_rows(a, r0, r1);
	/*
	 * Zero on every member: their regions may be recorded unused after the next flush, so
	 * a region whose old rows held data that has moved on keeps no mark for it. Not with a
	 * member out, whose rows are stale until its catch-up.
	 */
	live_rows_zeroed(a, r0, r1, &t);
	return 0;
}

uint64_t grow56_live_window(const struct graid_array *a, const struct array_reshape *rs,
			    uint64_t p, uint64_t safe)
{
	uint64_t nu = grow56_live_unit(&rs->new_lay);
	uint64_t most = GROW56_LIVE_SKIP_BYTES / nu < GROW56_LIVE_SKIP_ROWS
				? GROW56_LIVE_SKIP_BYTES / nu : GROW56_LIVE_SKIP_ROWS;
	uint64_t run = grow56_live_span(a, rs, p / nu, most, true) * nu;

	/*
	 * In place whatever it overlaps: the old rows these new rows lie over hold, at and past
	 * p, only bytes of [p, p + run) (k' > k), which are the rows' own sources, all zero. So
	 * zeroing them, all or some (a crash mid-way), changes no byte of either geometry, and
	 * a row whole before stays whole, parity too.
	 */
	if (run > rs->end - p)
		run = rs->end - p;
	return run > safe ? run : 0;
}

bool grow56_live_window_holds(const struct graid_array *a, const struct array_reshape *rs,
			      uint64_t r0, uint64_t r1)
{
	return grow56_live_span(a, rs, r0, r1 - r0, true) == r1 - r0;
}

bool grow56_stage_skips(const struct graid_array *a)
{
	return a->live && !a->tags;
}

int grow_zero_place(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	int fd = a->members[role].dev.fd, rc;

	if (fault_write_cut()) {
		/* A test's power cut: no zeroes land from here on, as no write does. */
		rc = -EIO;
		array_member_io_failed(a, role, fd, rc);
	} else {
		rc = discard_member_sync(a, role, off, len);
	}
	if (rc) {
		graid__log(GRAID_LOG_ERR, "reshape: zeroing the places of unused chunks on member "
					  "%u (%s) at data-area byte %" PRIu64 ": %s; taking it out", role, a->members[role].dev.path, off,
			   graid_strerror(rc));
		return rc;
	}
	/* Zeroes are their contents: no loss to keep there (a write's clearing). */
	badblocks_clear(a, role, fd, off, len);
	return 0;
}
