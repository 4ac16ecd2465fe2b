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
#if GRAID_FAULT_INJECTION
/*
 * Test seam, 0 in use: the bits a map set up from now on uses at most (its room and the
 * check of a recorded region size), so that a small array's maps are too small for a grow.
 */
extern uint64_t graid__test_region_map_bits;
#endif
/*
 * A RAID-10 grown to @p stripes array chunks: the regions that cover them counted (their
 * state zero: clean, unused). 0 (also for a map never set up); -ENOSPC more regions than
 * the room region_map_init made (m->cap).
 */
int region_map_grow(struct region_map *m, uint64_t stripes);

/*
 * Bit i of @p out (@p bytes long, zeroed first) set to the OR of bits [i << @p k, (i + 1) <<
 * @p k) of @p fine, which has @p nfine bits: a map's image for regions 2^k times as large.
 * Bits past @p bytes * 8 are dropped (the caller sizes @p out for ceil(nfine / 2^k) bits).
 */
void region_map_or_bits(const uint8_t *fine, uint64_t nfine, unsigned k, uint8_t *out,
			uint64_t bytes);
/*
 * The least number of doublings k of @p m's region size after which @p stripes fit its room
 * (ceil(stripes / (region_stripes << k)) <= m->cap); 0 when they fit already. -ENOSPC no k
 * does (the region size would pass the whole array or wrap). Not for a map never set up.
 */
int region_map_doublings(const struct region_map *m, uint64_t stripes, unsigned *k);

/*
 * A coarsening under way: what region_map_coarsen_undo() puts back. The fine states are
 * copied whole: a region's mark, restored exactly, is what the members' copies (the fine
 * ones, or the OR image) hold at least.
 */
struct region_map_undo {
	uint64_t region_stripes, nregions;
	uint8_t *state;
};
/*
 * The instance's per-region arrays merged (@p undo false: regions [i << k, (i + 1) << k) of
 * @p nfine into region i) or spread back (@p undo true), under the map's lock, with nothing
 * in flight.
 */
typedef void (*region_map_merge_fn)(struct region_map *m, uint64_t nfine, unsigned k, bool undo,
				    void *arg);
/*
 * Make @p m's regions 2^@p k times as large, in memory and on the members (docs/RESHAPE.md,
 * "Coarsening the region maps"): with every request drained (the array quiesced, its jobs
 * held), under the map's lock, the states OR-ed (a region marked before is marked after),
 * the instance's arrays merged (@p merge), region_stripes and nregions set; then the image
 * written to every writable member is the fine map OR-ed with the coarse one, which is a
 * superset of the map read at either region size: safe whatever the superblocks say until
 * region_map_coarsen_finish(). @p undo filled for region_map_coarsen_undo(). @return 0;
 * -EBUSY a write in flight on a region (nothing changed); -ENOMEM (nothing changed); -EIO a
 * member's copy was not written (changed in memory: undo it); -ESTALE taken over (the same).
 */
int region_map_coarsen(struct graid_array *a, struct region_map *m, unsigned k,
		       region_map_merge_fn merge, void *arg, struct region_map_undo *undo);
/*
 * The coarsening given up (its superblocks not written): the fine states, size and count
 * back, the instance's arrays spread back; the image stays the OR one (a superset of the
 * fine map, which is what the members hold, each copy written or not). Frees @p undo.
 */
void region_map_coarsen_undo(struct region_map *m, region_map_merge_fn merge, void *arg,
			     struct region_map_undo *undo);
/*
 * The superblocks record the coarse size: the image made the coarse map alone and written
 * (a member whose copy is not rewritten keeps the OR image, a superset: harmless). Frees
 * @p undo. 0, or region_map_write_all()'s error (logged by it).
 */
int region_map_coarsen_finish(struct graid_array *a, struct region_map *m,
			      struct region_map_undo *undo);

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
