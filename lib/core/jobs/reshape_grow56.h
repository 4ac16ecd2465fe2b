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
 * The STAGED step's rows, a chunk at a time with synchronous I/O (it runs at an open too,
 * before the job's ring exists; the windows take grow56_window_rows()).
 * Write new rows [@p r0, @p r1) whole: each data chunk read from its old place (or, @p
 * staged, from the record's staged copy; past the end: zeroes), parity computed through the
 * engine, every chunk and parity written. @p written marks the members written (the caller
 * flushes them, grow56_flush). A chunk whose old place cannot be trusted (its member out,
 * its bad-block log recording units of it, a media error reading it) is recovered from its
 * old row through the engine; units no redundancy covers are written as zeroes and recorded
 * lost at their new place, and each place written has its log entries cleared. A member
 * out, or going out (a write of the job's that fails takes it out as the stripe path does),
 * is written around, the row marked in the bitmap, durably, before this returns. An error
 * that breaks the array, or a read or write the job cannot go around, is logged and
 * returned, the position untouched.
 * @return 0; -EIO the array broke; a member's error; -ENOMEM; the engine's error; the
 * bitmap's (bitmap_start_write).
 */
int grow56_rows(struct graid_array *a, const struct array_reshape *rs,
		const struct reshape_record *rec, uint64_t r0, uint64_t r1, bool staged,
		uint8_t *buf, bool *written);

/*
 * Write new rows [@p r0, @p r1) whole, as grow56_rows() (not staged) does and with the same
 * guarantees, a batch of grow56_batch_rows() rows at a time on the job's ring @p rio
 * (reshape_grow56_batch.c): every direct read of the batch at once, the rare chunks its old
 * place cannot give recovered one by one (grow56_recover_old), parity per row, then every
 * write of the batch at once. Rows whose data lies only in regions the live-data map records
 * unused are zeroed instead, a run of them at once (grow56_zero_rows); the others' regions
 * are marked used before their writes (grow56_live_mark, reshape_live.h). @p buf holds
 * grow56_buf_bytes(); @p rio has room for a batch's writes (rows x new members).
 * @return grow56_rows()'s; -errno the ring broke; grow56_live_mark()'s.
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
 * Copy array bytes [stage_array_off, + stage_bytes) of @p rec from their old places to the
 * staged copy (stage_role[0] at stage_member_off[0]), then flush that member. Units that
 * hold nothing valid are recorded lost in that member's log at their place in the copy.
 * @return 0; a member's error; -ENODEV the copy's member went out.
 */
int grow56_stage_copy(struct graid_array *a, const struct array_reshape *rs,
		      const struct reshape_record *rec, uint8_t *buf);

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
