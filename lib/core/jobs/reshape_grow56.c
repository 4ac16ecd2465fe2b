/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow's member I/O (docs/RESHAPE.md, "RAID-5/6 growing, as built"): what the
 * batched paths (the windows' and the STAGED step's rows, reshape_grow56_batch.c; the
 * staging's copy, reshape_stage.c) do synchronously beside their rings: the recovery of a
 * chunk from its old row, the staged copy's reads, the flush. The caller holds the row
 * locks, flushes, and
 * writes the record: this file moves bytes, and keeps what the bytes cannot say (a member
 * that missed a row: the bitmap; a unit that holds nothing valid: the bad-block log) true
 * at their new places before the caller's record can advance past them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "jobs/reshape_csum.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_io.h"
#include "member/member.h"
#include "member/member_io.h"
#include "member/tag_store.h"
#include "meta/array_readerr.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/member_fail.h"

unsigned grow56_batch_rows(uint32_t chunk, unsigned new_nmembers)
{
	size_t row = (size_t)new_nmembers * chunk;

	/* At least one row: a 1 MiB chunk's rows keep the buffer near 16 MiB with the old row. */
	return row >= GROW56_BATCH_BYTES ? 1u : (unsigned)(GROW56_BATCH_BYTES / row);
}

size_t grow56_buf_bytes(uint32_t chunk, unsigned new_nmembers, unsigned old_nmembers)
{
	/* A batch's new rows' chunks, then an old row's (a degraded read's survivors). */
	return ((size_t)grow56_batch_rows(chunk, new_nmembers) * new_nmembers + old_nmembers) *
	       chunk;
}

unsigned grow56_dead_member(const struct graid_array *a, const struct array_reshape *rs)
{
	for (unsigned m = 0; m < rs->new_lay.nmembers; m++)
		if (!array_role_alive(a, m))
			return m;
	return a->nmembers;
}

/*
 * Through the member's fault model (member_data_pio), as the stripe path's I/O goes, with
 * its tags as the ring's I/O has them (reshape_csum_pio: a read verified, -EBADMSG with
 * @p mf's csum set; a write tagged with @p meta, NULL each block's next generation).
 */
static int grow56_io_mf(struct graid_array *a, unsigned m, void *buf, size_t len, uint64_t off,
			bool write, const char *what, uint64_t arr_off, const uint32_t *meta,
			struct member_io_fault *mf)
{
	int rc = reshape_csum_pio(a, m, write, buf, len, off, meta, mf);

	if (rc)
		graid__log(write ? GRAID_LOG_ERR : GRAID_LOG_WARNING,
			   "reshape: %s array byte %" PRIu64 " %s member %u (%s): %s", what,
			   arr_off, write ? "to" : "from", m, a->members[m].dev.path,
			   graid_strerror(rc));
	return rc;
}

static int grow56_io(struct graid_array *a, unsigned m, void *buf, size_t len, uint64_t off,
		     bool write, const char *what, uint64_t arr_off)
{
	struct member_io_fault mf;

	return grow56_io_mf(a, m, buf, len, off, write, what, arr_off, NULL, &mf);
}

/*
 * The job's I/O on member @p m (issued on @p fd) failed with @p err: the member is taken out
 * as the stripe path takes it out (array_member_io_failed), and the job goes on degraded.
 * -EIO when that broke the array (the job stops at its recorded position).
 */
static int grow56_out(struct graid_array *a, unsigned m, int fd, int err)
{
	array_member_io_failed(a, m, fd, err);
	return atomic_load(&a->broken) ? -EIO : 0;
}

/* Set the columns of @p c in @p cols: a whole chunk of @p chunk bytes. */
static void grow56_cols_all(struct bbl_cols *c, uint32_t chunk)
{
	for (unsigned i = 0; i < chunk / BBL_UNIT; i++)
		bbl_cols_set(c, i);
}

/*
 * Role @p r of old row @p row into @p blk, with @p era set for its 4 KiB units that hold
 * nothing valid: all of them for a member out (or taken out by this read), the ones its
 * bad-block log records, and the ones a media error left unreadable (read again 4 KiB at a
 * time; the error counts against the member, which stays unless past its threshold).
 * 0; -EIO the array broke.
 */
static int grow56_read_role(struct graid_array *a, const struct layout *l, uint64_t row,
			    unsigned r, uint8_t *blk, struct bbl_cols *era)
{
	unsigned m = layout_role_member(l, row, r);
	uint64_t off = row * l->chunk;
	struct member_io_fault mf = { .fd = a->members[m].dev.fd };
	int rc;

	if (!array_role_alive(a, m)) {
		grow56_cols_all(era, l->chunk);
		return 0;
	}
	/* A block failing its tag is unreadable here: an erasure, rebuilt from the others. */
	rc = grow56_io_mf(a, m, blk, l->chunk, off, false, "reading the old row of",
			  off * l->ndata, NULL, &mf);
	if (rc && array_member_read_error(a, m, &mf, rc)) {
		for (unsigned c = 0; c < l->chunk / BBL_UNIT; c++)
			if (grow56_io(a, m, blk + (size_t)c * BBL_UNIT, BBL_UNIT,
				      off + (uint64_t)c * BBL_UNIT, false,
				      "reading 4 KiB of the old row of", off * l->ndata))
				bbl_cols_set(era, c);
		rc = 0;
	} else if (rc) {
		grow56_cols_all(era, l->chunk);
		return grow56_out(a, m, mf.fd, rc);
	}
	badblocks_cols(a, m, off, l->chunk, era);
	return 0;
}

/*
 * The old row is whole with its parity: no window has written it (docs/RESHAPE.md, the
 * invariant), and requests keep its parity through the stripe path.
 */
int grow56_recover_old(struct graid_array *a, const struct array_reshape *rs, uint64_t off,
		       uint8_t *dst, uint8_t *scratch, struct bbl_cols *lost)
{
	const struct layout *l = &rs->old_lay;
	const unsigned nroles = l->ndata + l->nparity;
	uint64_t c = off / l->chunk, row = c / l->ndata;
	const unsigned td = (unsigned)(c % l->ndata);
	struct bbl_cols era[GRAID_MAX_MEMBERS];
	uint8_t *blocks[GRAID_MAX_MEMBERS], *ptrs[GRAID_MAX_MEMBERS];
	int rc = 0;

	struct bbl_cols judged = { { 0 } };

	for (unsigned r = 0; rc == 0 && r < nroles; r++) {
		blocks[r] = scratch + (size_t)r * l->chunk;
		memset(&era[r], 0, sizeof(era[r]));
		rc = grow56_read_role(a, l, row, r, blocks[r], &era[r]);
	}
	/*
	 * Checksums: the row's records judged before anything is rebuilt or moved (a stale
	 * block is rebuilt too, or what nothing places is moved as a loss): never moved under
	 * a fresh tag (reshape_csum.c).
	 */
	if (rc == 0)
		rc = reshape_csum_judge_old(a, l, row, blocks, era, &judged);
	for (unsigned col = 0; rc == 0 && col < l->chunk / BBL_UNIT; col++) {
		unsigned idx[GRAID_MAX_MEMBERS], k = 0;

		if (bbl_cols_test(&judged, col)) {
			bbl_cols_set(lost, col);
			memset(blocks[td] + (size_t)col * BBL_UNIT, 0, BBL_UNIT);
			continue;
		}
		if (!bbl_cols_test(&era[td], col))
			continue;
		for (unsigned r = 0; r < nroles; r++)
			if (bbl_cols_test(&era[r], col))
				idx[k++] = r; /* in role order: the engine wants them sorted */
		if (k > l->nparity) {
			bbl_cols_set(lost, col);
			memset(blocks[td] + (size_t)col * BBL_UNIT, 0, BBL_UNIT);
			continue;
		}
		for (unsigned r = 0; r < nroles; r++)
			ptrs[r] = blocks[r] + (size_t)col * BBL_UNIT;
		rc = graid_parity_recover(a->be, l->ndata, l->nparity, BBL_UNIT, 1, ptrs, k, idx);
	}
	if (rc == 0)
		memcpy(dst, blocks[td], l->chunk);
	return rc;
}

/*
 * The staged copy of array byte @p off into @p dst. One copy, no redundancy: a unit that
 * cannot be read (a media error) or that its log records (a loss the staging carried there)
 * stays lost, set in @p lost and zeroes in @p dst. Any other error stops the job.
 */
static int grow56_read_staged(struct graid_array *a, const struct reshape_record *rec,
			      uint32_t chunk, uint64_t off, uint8_t *dst, struct bbl_cols *lost)
{
	unsigned m = rec->stage_role[0];
	uint64_t moff = rec->stage_member_off[0] + (off - rec->stage_array_off);
	struct member_io_fault mf = { .fd = a->members[m].dev.fd };
	int rc = grow56_io_mf(a, m, dst, chunk, moff, false, "reading the staged copy of", off,
			      NULL, &mf);

	if (rc && !array_member_read_error(a, m, &mf, rc))
		return rc;
	for (unsigned c = 0; rc && c < chunk / BBL_UNIT; c++)
		if (grow56_io(a, m, dst + (size_t)c * BBL_UNIT, BBL_UNIT,
			      moff + (uint64_t)c * BBL_UNIT, false,
			      "reading 4 KiB of the staged copy of", off))
			bbl_cols_set(lost, c);
	badblocks_cols(a, m, moff, chunk, lost);
	for (unsigned c = 0; c < chunk / BBL_UNIT; c++)
		if (bbl_cols_test(lost, c))
			memset(dst + (size_t)c * BBL_UNIT, 0, BBL_UNIT);
	return 0;
}

/*
 * Data chunk at array byte @p off into @p dst: its old place, the staged copy, or zeroes;
 * from its old row through parity where its old place cannot be trusted (member out,
 * recorded in its log, a read error). @p lost gets the 4 KiB units that hold nothing valid.
 */
static int grow56_read_chunk(struct graid_array *a, const struct array_reshape *rs,
			     const struct reshape_record *rec, uint64_t off, bool staged,
			     uint8_t *dst, uint8_t *scratch, struct bbl_cols *lost)
{
	uint32_t chunk = rs->new_lay.chunk;
	struct layout_pos o;

	if (off >= rs->end) {
		memset(dst, 0, chunk); /* the added space: zeroes, parity consistent with them */
		return 0;
	}
	if (staged && off >= rec->stage_array_off &&
	    off - rec->stage_array_off < rec->stage_bytes)
		return grow56_read_staged(a, rec, chunk, off, dst, lost);
	layout_map(&rs->old_lay, off, &o);
	if (array_role_alive(a, o.member) && !badblocks_overlap(a, o.member, o.member_off, chunk) &&
	    !reshape_csum_row_suspect(a, o.member_off / chunk) &&
	    grow56_io(a, o.member, dst, chunk, o.member_off, false, "reading", off) == 0)
		return 0;
	return grow56_recover_old(a, rs, off, dst, scratch, lost);
}

int grow56_mark_rows(struct graid_array *a, uint64_t r0, uint64_t r1)
{
	uint64_t step = a->bitmap.enabled ? a->bitmap.map.region_stripes : 0;
	int rc = 0;

	/* One mark per region: a region already marked costs nothing (bitmap_start_write). */
	for (uint64_t row = r0; step && rc == 0 && row < r1; row = (row / step + 1) * step) {
		rc = bitmap_start_write(a, row);
		bitmap_end_write(a, row);
	}
	return rc;
}

int grow56_flush(struct graid_array *a, const bool *written, uint64_t r0, uint64_t r1)
{
	int rc = 0;

	/*
	 * The tags of the rows written go to their members before the members' flush: the
	 * record that follows moves the position past them (docs/RESHAPE.md, "Checksums
	 * across a grow"). Failing, nothing is recorded: the job stops and tries again.
	 */
	if (a->tags && (rc = tag_store_write_back(a)) != 0) {
		graid__log(GRAID_LOG_ERR, "reshape: writing the moved rows' checksum tags: %s",
			   graid_strerror(rc));
		return rc;
	}

	for (unsigned m = 0; rc == 0 && m < a->nmembers; m++) {
		int fd = a->members[m].dev.fd, err;

		if (!written[m] || (err = member_flush_fd(&a->members[m], fd)) == 0)
			continue;
		graid__log(GRAID_LOG_ERR, "reshape: flushing member %u (%s): %s; taking it out",
			   m, a->members[m].dev.path, graid_strerror(err));
		/* Its rows since the last flush may not be on it: a catch-up rewrites them. */
		rc = grow56_out(a, m, fd, err);
		if (rc == 0)
			rc = grow56_mark_rows(a, r0, r1);
	}
	/*
	 * The log entries the rows' writes cleared, on the devices before the record: after a
	 * crash a stale one would fail reads of a unit that holds moved data. A sync that fails
	 * leaves a record too many (-EIO for data that is there, never data for none): logged.
	 */
	if (rc == 0 && badblocks_sync(a))
		graid__log(GRAID_LOG_WARNING, "reshape: writing the bad-block logs' clears "
					      "failed; they are written again at the next flush");
	return rc;
}

int grow56_read_staged_span(struct graid_array *a, const struct array_reshape *rs,
			    const struct reshape_record *rec, uint64_t off, unsigned n,
			    uint8_t *dst, uint8_t *scratch, struct bbl_cols *lost)
{
	uint32_t chunk = rs->new_lay.chunk;
	uint64_t len = (uint64_t)n * chunk;
	unsigned m = rec->stage_role[0];
	uint64_t moff = rec->stage_member_off[0] + (off - rec->stage_array_off);
	int rc = 0;

	/*
	 * Wholly inside the copy (and the old size), on a member whose log names nothing
	 * there: one read, verified against its tags. Anything else, or that read failing (a
	 * block failing its tag included), chunk by chunk (grow56_read_staged: 4 KiB at a time
	 * where the chunk fails).
	 */
	if (off >= rec->stage_array_off && off + len <= rec->stage_array_off + rec->stage_bytes &&
	    off + len <= rs->end && m < a->nmembers && array_role_alive(a, m) &&
	    !badblocks_overlap(a, m, moff, len) &&
	    grow56_io(a, m, dst, len, moff, false, "reading the staged copy of", off) == 0)
		return 0;
	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = grow56_read_chunk(a, rs, rec, off + (uint64_t)i * chunk, true,
				       dst + (size_t)i * chunk, scratch, &lost[i]);
	return rc;
}
