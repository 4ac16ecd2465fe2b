/* SPDX-License-Identifier: MIT */
/* A map of regions kept on every member: the mechanics the bitmap and the live-data map share. */
#ifndef LIBGRAID_CORE_REGION_MAP_H
#define LIBGRAID_CORE_REGION_MAP_H

#include "array/array.h"
#include "meta/meta_write.h"

/*
 * What an instance is: its constants. The mechanics are the same for every instance; what
 * it does with a region's state between marking and clearing is its own (bitmap.c, live.c).
 */
struct region_map_kind {
	const char *name;               /* names the area in the log ("bitmap") */
	/*
	 * The least a region covers of each member when the superblocks record no size: a
	 * few writes rarely pay for a mark. Part of the format's derivation rule (FORMAT.md).
	 */
	uint64_t min_region_bytes;
	/* Epochs below this are the instance's own marks, never a flush's (region_map_epoch). */
	uint32_t first_epoch;
};

/*
 * The stripes a map counts, the stripe numbers writes lock and mark (the name is older than
 * the live-data map): member rows, or array chunks for RAID-10.
 */
uint64_t bitmap_stripes(const struct graid_array *a);
/* The region size the format derives for @p bytes of map (docs/FORMAT.md states the rule). */
uint64_t region_map_default_region(const struct graid_array *a, const struct region_map_kind *k,
				   uint64_t bytes);
/*
 * Set up @p m at @p offset, @p bytes long, with @p region_stripes stripes per bit as the
 * superblocks record it (0: derived). -EPROTO the map has too few bits for the array
 * (logged); -ENOMEM. On error nothing is left to free.
 */
int region_map_init(struct graid_array *a, struct region_map *m, const struct region_map_kind *k,
		    uint64_t offset, uint64_t bytes, uint64_t region_stripes);
void region_map_free(struct graid_array *a, struct region_map *m);
/*
 * A RAID-10 grown to @p stripes array chunks: the regions that cover them counted (their
 * state zero: clean, unused). 0 (also for a map never set up); -ENOSPC more regions than
 * the room region_map_init made (m->cap).
 */
int region_map_grow(struct region_map *m, uint64_t stripes);

/*
 * Whether this handle may change a map at all: a read-only handle writes nothing, whoever
 * asks (docs/ARRAYS.md), and so clears nothing either (its marks may be a live writer's).
 */
static inline bool region_map_may_write(const struct graid_array *a)
{
	return !a->read_only;
}

/* Whether region @p r is recorded (in memory: on disk once its mark was written). */
static inline bool region_map_marked(const struct region_map *m, uint64_t r)
{
	return atomic_load(&m->state[r]) & REGION_MAP_MARKED;
}

/*
 * Record region @p r on every writable member, durably, unless it is already: the slow path
 * of a write's mark. 0; -EIO no member took it (the region stays unmarked), -ESTALE the
 * array was taken over. The members whose write failed are failed after the lock is let go.
 */
int region_map_mark(struct graid_array *a, struct region_map *m, uint64_t r);
/* Record every region, in memory and in the disk image (region_map_write_all writes it). */
void region_map_mark_all(struct region_map *m);

/*
 * OR the copies of the members that count into memory (open). Which count is one rule,
 * region_map.c says why. How many copies were read (0: none could be), or -ENOMEM.
 */
int region_map_load(struct graid_array *a, struct region_map *m);
/*
 * Make every writable member's copy equal to memory. NULL @p m: no map. 0; -EIO a member's
 * copy could not be written (logged); -ESTALE the array was taken over; -ENOMEM. A
 * read-only handle writes nothing and returns 0.
 */
int region_map_write_all(struct graid_array *a, struct region_map *m);
/*
 * The same on @p mb alone, a device outside the roles about to take one (a replace in
 * service): its later marks reach it as writes of its role. @p m NULL: none. 0 or -errno.
 */
int region_map_write_member(struct graid_array *a, struct region_map *m, struct member *mb);

/* The next flush epoch, at least kind->first_epoch; the lock held. */
uint32_t region_map_epoch(struct region_map *m);

/*
 * A sweep: regions recorded clear under the lock (region_map_sweep_clear, after the
 * instance cleared their state), then the blocks they are in written to every writable
 * member and the lock let go (region_map_sweep_end).
 */
struct region_map_sweep {
	uint64_t first, last;           /* the regions cleared; first UINT64_MAX: none */
	struct meta_timed timed;        /* 2 KiB: filled only on the slow path */
};
void region_map_sweep_begin(struct region_map *m, struct region_map_sweep *s);
void region_map_sweep_clear(struct region_map *m, struct region_map_sweep *s, uint64_t r);
void region_map_sweep_end(struct graid_array *a, struct region_map *m, struct region_map_sweep *s);

#endif
