/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-10 (md near-2) online (docs/RESHAPE.md, "RAID-10 growing, as built"): a
 * window's chunks moved copy by copy, below reshape_grow.c's windows and records; the
 * region maps' growth; the checks of the start.
 */
#ifndef LIBGRAID_CORE_RESHAPE_GROW10_H
#define LIBGRAID_CORE_RESHAPE_GROW10_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "jobs/reshape_io.h"

/*
 * Whether RAID-10 grows start and resume (GROW10_BUILT in reshape_grow10.c; tests may turn
 * them on with graid__test_grow10 whatever its value). Off: -EOPNOTSUPP, and the open
 * refuses their records as any it cannot resume.
 */
bool grow10_allowed(void);
#if GRAID_FAULT_INJECTION
/* Test seam, false in use: grow10_maps_fit() does nothing (the -ENOSPC of older builds). */
extern bool graid__test_grow10_no_coarsen;
/* Test seam, NULL in use: called between grow10_skip_window()'s look and its locks. */
extern void (*graid__test_grow10_skip_look)(struct graid_array *a, uint64_t c0, uint64_t c1);
#endif

/* Chunks a RAID-10 window moves at most (the job's buffer holds one each). */
#define GROW10_WINDOW_CHUNKS 16u

/*
 * Move RAID-10 chunks [@p c0, @p c1) (at most GROW10_WINDOW_CHUNKS) from their old copies
 * to their new ones through @p buf (a chunk each), their chunk locks held by the caller:
 * each chunk read from one old copy, a clean one (alive, its bad-block log recording
 * nothing there), of two clean ones the one whose member has fewer of the window's reads;
 * a copy that fails to read (a medium error, the member
 * failing) gives way to the other, 4 KiB at a time; a unit neither copy has is moved as a
 * loss (zeroes, recorded lost at both new places). Both new copies written (those on
 * members that are out skipped), each place's log kept true, the members written flushed.
 * With a role of the new geometry out, before the writes or after them, the chunks are
 * marked in the bitmap, durably, before the caller's record: a member that comes back
 * catches up from it. A write or flush that fails takes its member out, as the stripe
 * path does, and the window goes on degraded.
 * @return 0; -EIO the array broke; -ENOMEM; the ring's or the bitmap's errors.
 */
int grow10_move(struct graid_array *a, struct reshape_io *rio, const struct array_reshape *rs,
		uint64_t c0, uint64_t c1, uint8_t *buf);

/*
 * The most chunks one window of unused chunks takes (grow10_skip_window): it costs a
 * deallocation a member, not a transfer, but holds the locks of all its chunks while it
 * runs (as RAID-5/6's GROW56_LIVE_SKIP_ROWS). Its zeroed copies, two a chunk, are held
 * to GROW56_LIVE_SKIP_BYTES too (256 MiB: 128 chunks of 1 MiB), as a RAID-5/6 window's
 * are: a device whose zeroing writes the zeroes (BLKZEROOUT without an offload) writes
 * no more than that, unpaced, while the window's locks are held.
 */
#define GROW10_SKIP_CHUNKS 256u

/*
 * Where the chunks from job @p j's position on lie in unused regions of the live-data map,
 * more than a window moves (GROW10_WINDOW_CHUNKS), up to GROW10_SKIP_CHUNKS and
 * GROW56_LIVE_SKIP_BYTES of zeroed copies: one window of them, safe in place whatever it
 * overlaps (the new places of chunks [p, q) hold, at and past p, only chunks of [p, q),
 * which read zero): under their locks, checked again, their new copies zeroed (a
 * deallocation a member), flushed, the record, the position. A write
 * that marked one meanwhile: nothing done, nothing recorded (0), the next window is a
 * copying one.
 * docs/RESHAPE.md, "RAID-10 growing, as built".
 * @return 1 a window done; 0 none here; -ENOMEM; -EIO the array broke; the bitmap's,
 * grow56_flush()'s and grow_record_next()'s errors.
 */
struct reshape_job;
int grow10_skip_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);

/*
 * The start's checks for a RAID-10 growing to @p new_n members (meta_lock held): refused
 * (-EOPNOTSUPP, logged) with checksums (tags are placed by one geometry); -ENOSPC (logged)
 * the bitmap or the live map has no room (its bits, or this handle's regions) for the
 * array chunks the grow adds. 0 for other levels.
 */
int grow10_check(struct graid_array *a, unsigned new_n);

/*
 * Before the start's checks (no lock held) for a RAID-10 growing to @p new_n members: where
 * the bitmap's or the live map's bits cannot count the grown array's chunks at their
 * region size, both maps coarsened (their region sizes doubled as often as needed, a new
 * bit the OR of the old ones it covers) in memory, on every member and in the superblocks,
 * with the array quiesced (io/quiesce.h) and no rebuild pass running: docs/RESHAPE.md,
 * "Coarsening the region maps". Done for good even if the grow then fails (a coarser map
 * is as valid). 0 also where nothing is needed or nothing fits (grow10_check() refuses
 * that, -ENOSPC); -EBUSY a rebuild, scrub, resync, replace or reshape is under way, or
 * requests stayed in flight past QUIESCE_DRAIN_NS; -ECANCELED closing; -EIO a map's copy
 * or the superblocks could not be written (the maps keep their sizes); -ENOMEM.
 */
int grow10_maps_fit(struct graid_array *a, unsigned new_n);

/*
 * At the finish, before the added space is zeroed: the bitmap's and the live map's regions
 * counted for the new geometry's chunks (the added ones clean and unused). 0; -ENOSPC.
 */
int grow10_maps_grow(struct graid_array *a, const struct array_reshape *rs);

/*
 * The first row of member @p m of the new geometry that holds only space the grow adds:
 * its slots from 2 * (old chunks) on, in near-2's row-major order.
 */
uint64_t grow10_tail_row(const struct array_reshape *rs, unsigned m);

#endif /* LIBGRAID_CORE_RESHAPE_GROW10_H */
