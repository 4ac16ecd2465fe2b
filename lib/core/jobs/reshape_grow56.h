/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-5 or RAID-6 (docs/RESHAPE.md, "RAID-5/6 growing, as built"): the member
 * I/O of its job, rows at a time, below reshape_grow.c's windows and records.
 */
#ifndef LIBGRAID_CORE_RESHAPE_GROW56_H
#define LIBGRAID_CORE_RESHAPE_GROW56_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "format/reshape_format.h"
#include "jobs/reshape_io.h"
#include "meta/badblocks.h"

/*
 * The new rows a batch of a window holds at once (grow56_window_rows): as many as fit in
 * GROW56_BATCH_BYTES of chunks (a few MiB of data), at least one.
 */
#define GROW56_BATCH_BYTES (8u << 20)
unsigned grow56_batch_rows(uint32_t chunk, unsigned new_nmembers);

/*
 * Bytes the job's buffer needs: a batch's new rows' chunks (grow56_batch_rows), then an old
 * row's (degraded reads).
 */
size_t grow56_buf_bytes(uint32_t chunk, unsigned new_nmembers, unsigned old_nmembers);

/*
 * Write new rows [@p r0, @p r1) whole, a batch of grow56_batch_rows() rows at a time on the
 * job's ring @p rio (reshape_grow56_batch.c): every direct read of the batch at once (each
 * data chunk from its old place; past the end: zeroes), the rare chunks its old place cannot
 * give (its member out, its bad-block log recording units of it, a media error or a block
 * failing its tag reading it, its old row's checksum records disagreeing) recovered one by one
 * from the old row through the engine (grow56_recover_old), parity per row, then every write
 * of the batch at once, each with its meta words with checksums (reshape_csum_row_meta).
 * Units no redundancy covers are written as zeroes and recorded lost at their new place, and
 * each place written has its log entries cleared. A member out, or going out (a write of the
 * job's that fails takes it out as the stripe path does), is written around, the row marked
 * in the bitmap, durably, before this returns. Rows whose data lies only in regions the
 * live-data map records unused are zeroed instead, a run of them at once (grow56_zero_rows);
 * the others' regions are marked used before their writes (grow56_live_mark,
 * reshape_live.h). @p written marks the members written (the caller flushes them,
 * grow56_flush). @p buf holds grow56_buf_bytes(); @p rio has room for a batch's writes
 * (rows x new members). An error that breaks the array, or a read or write the job cannot go
 * around, is logged and returned, the position untouched.
 * @return 0; -EIO the array broke; a member's error; -ENOMEM; the engine's error; the
 * bitmap's (bitmap_start_write); -errno the ring broke; grow56_live_mark()'s;
 * reshape_csum_row_meta()'s.
 */
int grow56_window_rows(struct graid_array *a, const struct array_reshape *rs,
		       struct reshape_io *rio, uint64_t r0, uint64_t r1, uint8_t *buf,
		       bool *written);

/*
 * The data chunk at array byte @p off recovered from its old row through the engine into
 * @p dst (@p scratch: an old row's chunks), 4 KiB column by column: its old member is out,
 * its log records units of it, or a read of it failed. Each role's read error counts against
 * its member (array_member_read_error); a member failing otherwise is taken out. A column
 * with more erasures than parity covers stays lost: set in @p lost and zeroes in @p dst (the
 * caller records it at the new place).
 * @return 0; -EIO the array broke; the engine's error.
 */
int grow56_recover_old(struct graid_array *a, const struct array_reshape *rs, uint64_t off,
		       uint8_t *dst, uint8_t *scratch, struct bbl_cols *lost);

/*
 * @p n data chunks from array byte @p off (a chunk boundary) into @p dst, one after another,
 * for the STAGED step (@p rec's staged copy): one read where the copy holds them all (its
 * member in, its log naming nothing there), else, or where that read fails (a block failing
 * its tag included), chunk by chunk: a unit the copy cannot give (a media error, a block
 * failing its tag), or that its log records, stays lost (set in @p lost[i], zeroes in
 * @p dst); a chunk outside the copy comes from its old place, or from parity (@p scratch: an
 * old row's chunks). The copy's reads are synchronous, not on the job's ring: they go to its
 * one member, where a ring overlaps nothing, and an error of theirs other than a medium error
 * stops the job rather than take out the only member that holds the first rows whole.
 * @return 0; the copy's member's error (not a medium error); grow56_recover_old()'s.
 */
int grow56_read_staged_span(struct graid_array *a, const struct array_reshape *rs,
			    const struct reshape_record *rec, uint64_t off, unsigned n,
			    uint8_t *dst, uint8_t *scratch, struct bbl_cols *lost);

/*
 * Where the STAGED step's rows read their data: @c rec's staged copy, or, where the same
 * call just wrote it (@c mem not NULL: the copy's bytes from array byte stage_array_off,
 * @c mem_lost a chunk's lost units each), the buffer it was written from, which holds what
 * the copy holds: the copy durable, its tags and its log too, before STAGED was recorded.
 */
struct grow56_staged_src {
	const struct reshape_record *rec;
	const uint8_t *mem;
	const struct bbl_cols *mem_lost;
};

/*
 * The STAGED step's new rows [@p r0, @p r1), as grow56_window_rows() writes a window's (a
 * batch at a time, each batch's writes at once on @p rio, with their meta words), their data
 * from @p src (the staged copy: grow56_read_staged_span, a row's data at a time; or its bytes
 * in memory), none skipped as unused (the caller marked their regions used).
 * @return grow56_window_rows()'s; grow56_read_staged_span()'s.
 */
int grow56_staged_rows(struct graid_array *a, const struct array_reshape *rs,
		       struct reshape_io *rio, const struct grow56_staged_src *src, uint64_t r0,
		       uint64_t r1, uint8_t *buf, bool *written);

/*
 * The flush after the job's writes: each member @p written marks made durable. A member
 * whose flush fails is taken out, and new rows [@p r0, @p r1) (those written since the last
 * flush) are marked in the bitmap, durably, so that its catch-up rewrites them. Then the
 * bad-block logs' clears are written (a failure there is logged, not returned).
 * @return 0; -EIO the array broke; the bitmap's error.
 */
int grow56_flush(struct graid_array *a, const bool *written, uint64_t r0, uint64_t r1);

/*
 * Mark member rows [@p r0, @p r1) in the bitmap, durably (each region once; kept while a
 * role is out: the history a member that comes back catches up from). 0 with no bitmap.
 * @return 0; bitmap_start_write()'s error.
 */
int grow56_mark_rows(struct graid_array *a, uint64_t r0, uint64_t r1);

/* The first member of @p rs's new geometry not alive, or a->nmembers when all are. */
unsigned grow56_dead_member(const struct graid_array *a, const struct array_reshape *rs);

#endif /* LIBGRAID_CORE_RESHAPE_GROW56_H */
