/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow and the live-data map (docs/RESHAPE.md, "Moving only live data"): new rows
 * whose data lies only in old rows of unused regions are zeroed on every member, not copied;
 * new rows that get live data have their regions marked used before their writes go out.
 */
#ifndef LIBGRAID_CORE_RESHAPE_LIVE_H
#define LIBGRAID_CORE_RESHAPE_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

/*
 * The most array bytes, and rows, one window zeroes (grow56_live_window): a run of unused
 * rows costs a deallocation a member, not a transfer, but the window holds the locks of
 * all its rows while it runs (taking them costs the square of their count), and requests
 * on those rows wait: with 4 KiB chunks a 256 MiB window was tens of thousands of rows and
 * held a random reader up for 0.85 s (review); 256 rows keep it to a few milliseconds.
 */
#define GROW56_LIVE_SKIP_BYTES (256ull << 20)
#define GROW56_LIVE_SKIP_ROWS 256u

/*
 * Whether new row @p row of @p rs needs no copy: every array byte it holds (of the moved
 * ones, [0, rs->end)) lies in an old row of a region the live-data map records unused, so
 * reads as zero on every member, data and parity alike. false without a map. The caller
 * holds the locks of the old rows, or only looks (docs/RESHAPE.md, "Moving only live data",
 * says why a bit read under them can be trusted).
 */
bool grow56_live_row_unused(const struct graid_array *a, const struct array_reshape *rs,
			    uint64_t row);

/*
 * How many new rows from @p row on, at most @p most, are alike: grow56_live_row_unused()
 * equal to @p unused. 0 when row @p row itself is not.
 */
uint64_t grow56_live_span(const struct graid_array *a, const struct array_reshape *rs,
			  uint64_t row, uint64_t most, bool unused);

/*
 * Mark used, durably, the live-map regions of new rows [@p r0, @p r1) that get live data
 * (every one with @p all), each region once, as a data write marks its own
 * (live_start_write: a discard's pending clear of the region is cancelled too). Before the
 * rows' writes go out. 0 without a map.
 * @return 0; -EIO no member took a mark; -ESTALE the array was taken over.
 */
int grow56_live_mark(struct graid_array *a, const struct array_reshape *rs, uint64_t r0,
		     uint64_t r1, bool all);

/*
 * New rows [@p r0, @p r1) whose sources grow56_live_row_unused() says are unused: zeroed on
 * every live member of the new geometry, one deallocation a member (discard_member_sync:
 * zeroes written where a member cannot deallocate), their bad-block log entries cleared
 * (zeroes are their contents), @p written set for the members zeroed (the caller flushes
 * them). A member out, or going out (its zeroing failed: taken out as any write error takes
 * it), misses them: the rows are marked in the bitmap, durably, before this returns. With
 * every member zeroed, the live-map regions wholly inside become unused at the next flush
 * (live_rows_zeroed). The caller holds the rows' locks.
 * @return 0; -EIO the array broke; the bitmap's error.
 */
int grow56_zero_rows(struct graid_array *a, const struct array_reshape *rs, uint64_t r0,
		     uint64_t r1, bool *written);

/*
 * A window at array byte @p p (a new row's start) of only rows that need no copy, when that
 * run (at most GROW56_LIVE_SKIP_BYTES, and the moved bytes' end) is longer than the @p safe
 * bytes reshape_safe_bytes() gives: its bytes, else 0. Such a window is safe in place even
 * where it overlaps (reshape_window()'s @c overlap): the old rows it zeroes hold, at and past
 * @p p, only its own sources, which are zero. A look without the locks: the window checks
 * again under them (grow56_live_window_holds).
 */
uint64_t grow56_live_window(const struct graid_array *a, const struct array_reshape *rs,
			    uint64_t p, uint64_t safe);

/* Whether every new row of [@p r0, @p r1) still needs no copy (under the window's locks). */
bool grow56_live_window_holds(const struct graid_array *a, const struct array_reshape *rs,
			      uint64_t r0, uint64_t r1);

/*
 * Whether the staging's copy (reshape_stage.c) skips the chunks whose old row lies in an
 * unused region: with a live-data map and no checksums (a checksummed grow copies every
 * chunk, its tags and generations as built in reshape_csum.c). docs/RESHAPE.md, "Moving only
 * live data", says why the copy then holds zeroes there and why that is crash-safe.
 */
bool grow56_stage_skips(const struct graid_array *a);

/*
 * [@p off, + @p len) of member @p role's data area (the staged copy's place of chunks that
 * are zero; a RAID-10 window's new copy of a chunk of an unused region) zeroed by deallocation (discard_member_sync: zeroes written where the member
 * cannot deallocate, so it always reads zero after), its bad-block log entries cleared;
 * not flushed (the caller flushes before its record). A failure took the
 * member out, as a failed write does; the test write cut stops it as it stops writes.
 * @return 0; -EIO the cut, or discard_member_sync()'s errors.
 */
int grow_zero_place(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

#endif /* LIBGRAID_CORE_RESHAPE_LIVE_H */
