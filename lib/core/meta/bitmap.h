/* SPDX-License-Identifier: MIT */
/* The write-intent bitmap and the resync it drives after an unclean shutdown. */
#ifndef LIBGRAID_CORE_BITMAP_H
#define LIBGRAID_CORE_BITMAP_H

#include "array/array.h"
#include "meta/region_map.h"

/* Where the bitmap lives unless the creator says otherwise: after the superblock. */
#define BITMAP_DEFAULT_OFFSET 4096u
#define BITMAP_DEFAULT_BYTES (64u * 1024)

/*
 * Set up the bitmap at @p offset, @p bytes long, with @p region_stripes stripes per bit as
 * the superblocks record it (0: the derived size of format minor 0). -EPROTO the recorded
 * size does not fit the bitmap; -ENOMEM.
 */
int bitmap_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes);
/* Whether region @p r is marked (dirty, or kept as history). */
static inline bool bitmap_region_marked(const struct graid_array *a, uint64_t r)
{
	return region_map_marked(&a->bitmap.map, r);
}
/*
 * Whether stripe @p stripe lies in a region that the resync after an unclean open has still
 * to make consistent (bitmap_resync_pending): its data is the truth there, not its parity
 * nor its tags.
 */
static inline bool bitmap_unresynced(const struct graid_array *a, uint64_t stripe)
{
	const struct region_map *m = &a->bitmap.map;
	uint64_t r;

	if (!a->bitmap.enabled || atomic_load(&a->bitmap.resync_from) == UINT64_MAX)
		return false;
	r = stripe / m->region_stripes;
	return r < m->nregions && r >= atomic_load(&a->bitmap.resync_from) &&
	       region_map_marked(m, r);
}
void bitmap_free(struct graid_array *a);
/*
 * Around every redundant write of a stripe: marks its region dirty (durably) first. 0; -EIO
 * no member took the mark, -ESTALE the array was taken over: the write must not go out
 * (bitmap_end_write() is still due).
 */
int bitmap_start_write(struct graid_array *a, uint64_t stripe);
void bitmap_end_write(struct graid_array *a, uint64_t stripe);
/*
 * Around a flush of the members: bitmap_flush_begin() before it, bitmap_sweep() with its
 * epoch after it, which clears the regions whose writes that flush made durable, on disk
 * too (bitmap.c says how). 0 from begin: nothing to sweep.
 */
uint32_t bitmap_flush_begin(struct graid_array *a);
void bitmap_sweep(struct graid_array *a, uint32_t epoch);
/*
 * Regions from @p from on await the resync after an unclean open: no sweep clears them.
 * The resync moves it on as it goes; UINT64_MAX once it is done.
 */
void bitmap_resync_pending(struct graid_array *a, uint64_t from);
/*
 * Open after an unclean shutdown, or with marks kept as history: read the marks from the
 * members (region_map_load says whose). -EIO no copy could be read; -ENOMEM.
 */
int bitmap_load(struct graid_array *a);
/* Make every writable member's copy equal to memory (region_map_write_all). */
int bitmap_write_all(struct graid_array *a);
/* Mark every region (in memory and on every writable member): all of it is to resync. */
int bitmap_mark_all(struct graid_array *a);
uint64_t bitmap_dirty_regions(const struct graid_array *a);


/*
 * Regions 2^@p k times as large (region_map_coarsen(), which says when and what it returns):
 * the flush stamps dropped, the pending resync's start scaled. No bitmap: 0.
 */
int bitmap_coarsen(struct graid_array *a, unsigned k, struct region_map_undo *undo);
/* region_map_coarsen_undo() for the bitmap. */
void bitmap_coarsen_undo(struct graid_array *a, struct region_map_undo *undo);

#endif
