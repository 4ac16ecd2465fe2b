/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow's member I/O (docs/RESHAPE.md, "RAID-5/6 growing, as built"): whole new
 * rows with their parity, the staged copy, and the zeroed tail. The caller holds the row
 * locks, flushes, and writes the record: this file only moves bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "jobs/reshape_grow56.h"
#include "member/member.h"
#include "meta/bitmap.h"

size_t grow56_buf_bytes(const struct array_reshape *rs)
{
	/* A new row's chunks, then an old row's (a degraded read's survivors). */
	return (size_t)(rs->new_lay.nmembers + rs->old_lay.nmembers) * rs->new_lay.chunk;
}

unsigned grow56_dead_member(const struct graid_array *a, const struct array_reshape *rs)
{
	for (unsigned m = 0; m < rs->new_lay.nmembers; m++)
		if (!array_role_alive(a, m))
			return m;
	return a->nmembers;
}

static int grow56_io(struct graid_array *a, unsigned m, void *buf, size_t len, uint64_t off,
		     bool write, const char *what, uint64_t arr_off)
{
	int rc = member_pio(&a->members[m], buf, len, a->data_offset + off, write);

	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: %s array byte %" PRIu64 " %s member %u (%s): "
					  "%s", what, arr_off, write ? "to" : "from", m,
			   a->members[m].dev.path, graid_strerror(rc));
	return rc;
}

/*
 * The data chunk at array byte @p off, whose old member is out, recovered from the rest of
 * its old row through the engine into @p dst (@p scratch: an old row's chunks). The row is
 * whole with its parity: no window has written it (docs/RESHAPE.md, the invariant), and
 * requests keep its parity through the stripe path.
 */
static int grow56_recover_old(struct graid_array *a, const struct array_reshape *rs,
			      uint64_t off, uint8_t *dst, uint8_t *scratch)
{
	const struct layout *l = &rs->old_lay;
	uint64_t c = off / l->chunk, row = c / l->ndata;
	uint8_t *blocks[GRAID_MAX_MEMBERS];
	unsigned lost[2], nlost = 0;
	int rc;

	for (unsigned r = 0; r < l->ndata + l->nparity; r++) {
		unsigned m = layout_role_member(l, row, r);

		blocks[r] = scratch + (size_t)r * l->chunk;
		if (!array_role_alive(a, m)) {
			if (nlost == l->nparity)
				return -EIO; /* the array is broken: the job stops on it */
			lost[nlost++] = r;
			continue;
		}
		rc = grow56_io(a, m, blocks[r], l->chunk, row * l->chunk, false,
			       "reading (degraded) the old row of", off);
		if (rc)
			return rc;
	}
	rc = graid_parity_recover(a->be, l->ndata, l->nparity, l->chunk, 1, blocks, nlost, lost);
	if (rc == 0)
		memcpy(dst, blocks[c % l->ndata], l->chunk);
	return rc;
}

/* Data chunk at array byte @p off into @p dst: its old place, the staged copy, or zeroes. */
static int grow56_read_chunk(struct graid_array *a, const struct array_reshape *rs,
			     const struct reshape_record *rec, uint64_t off, bool staged,
			     uint8_t *dst, uint8_t *scratch)
{
	uint32_t chunk = rs->new_lay.chunk;
	struct layout_pos o;

	if (off >= rs->end) {
		memset(dst, 0, chunk); /* the added space: zeroes, parity consistent with them */
		return 0;
	}
	if (staged && off >= rec->stage_array_off &&
	    off - rec->stage_array_off < rec->stage_bytes)
		return grow56_io(a, rec->stage_role[0], dst, chunk,
				 rec->stage_member_off[0] + (off - rec->stage_array_off), false,
				 "reading the staged copy of", off);
	layout_map(&rs->old_lay, off, &o);
	if (!array_role_alive(a, o.member))
		return grow56_recover_old(a, rs, off, dst, scratch);
	return grow56_io(a, o.member, dst, chunk, o.member_off, false, "reading", off);
}

/* Whether a role of the new geometry is out: the job then writes around it. */
static bool grow56_degraded(const struct graid_array *a, const struct array_reshape *rs)
{
	return grow56_dead_member(a, rs) < a->nmembers;
}

int grow56_rows(struct graid_array *a, const struct array_reshape *rs,
		const struct reshape_record *rec, uint64_t r0, uint64_t r1, bool staged,
		uint8_t *buf, bool *written)
{
	const struct layout *l = &rs->new_lay;
	unsigned nroles = l->ndata + l->nparity;
	uint8_t *blocks[GRAID_MAX_MEMBERS], *scratch = buf + (size_t)l->nmembers * l->chunk;
	int rc = 0;

	for (unsigned r = 0; r < nroles; r++)
		blocks[r] = buf + (size_t)r * l->chunk;
	for (uint64_t row = r0; rc == 0 && row < r1; row++) {
		/*
		 * A role out: the row is written around it, and marked in the bitmap first
		 * (kept while a role is out), so a catch-up of the role after the reshape
		 * rewrites it; a spare's rebuild rewrites every row anyway.
		 */
		bool marked = grow56_degraded(a, rs);

		if (marked)
			rc = bitmap_start_write(a, row);
		for (unsigned d = 0; rc == 0 && d < l->ndata; d++)
			rc = grow56_read_chunk(a, rs, rec, (row * l->ndata + d) * l->chunk, staged,
					       blocks[d], scratch);
		if (rc == 0)
			rc = graid_parity_gen(a->be, l->ndata, l->nparity, l->chunk, 1, blocks);
		for (unsigned r = 0; rc == 0 && r < nroles; r++) {
			unsigned m = layout_role_member(l, row, r);

			if (!array_role_alive(a, m))
				continue;
			rc = grow56_io(a, m, blocks[r], l->chunk, row * l->chunk, true,
				       "writing the new row of", row * l->ndata * l->chunk);
			written[m] = true;
		}
		if (marked)
			bitmap_end_write(a, row);
	}
	return rc;
}

int grow56_stage_copy(struct graid_array *a, const struct array_reshape *rs,
		      const struct reshape_record *rec, uint8_t *buf)
{
	uint32_t chunk = rs->old_lay.chunk;
	unsigned sr = rec->stage_role[0];
	int rc = 0;

	for (uint64_t at = 0; rc == 0 && at < rec->stage_bytes; at += chunk) {
		uint64_t off = rec->stage_array_off + at;

		rc = grow56_read_chunk(a, rs, rec, off, false, buf,
				       buf + (size_t)rs->new_lay.nmembers * chunk);
		if (rc == 0)
			rc = grow56_io(a, sr, buf, chunk, rec->stage_member_off[0] + at, true,
				       "staging", off);
	}
	if (rc == 0)
		rc = member_flush(&a->members[sr]);
	return rc;
}

int grow56_zero_tail(struct graid_array *a, const struct array_reshape *rs)
{
	const struct layout *l = &rs->new_lay;
	uint64_t unit = (uint64_t)l->ndata * l->chunk;
	uint64_t row = (rs->end + unit - 1) / unit;

	if (row >= l->nstripes)
		return 0;
	for (unsigned m = 0; m < l->nmembers; m++) {
		int rc = member_zero_range(&a->members[m], a->data_offset + row * l->chunk,
					   (l->nstripes - row) * l->chunk);

		if (rc == 0)
			rc = member_flush(&a->members[m]);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "reshape: zeroing the added space on member %u "
						  "(%s): %s", m, a->members[m].dev.path,
				   graid_strerror(rc));
			return rc;
		}
	}
	return 0;
}
