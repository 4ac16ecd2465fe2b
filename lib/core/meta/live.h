/* SPDX-License-Identifier: MIT */
/*
 * The live-data map: one bit per region of stripes, set while the region may hold data
 * somebody wrote; clear for regions never written since create and regions wholly discarded
 * since. Rebuild, resync and scrub skip the clear ones (docs/FORMAT.md, "Live-data map").
 */
#ifndef LIBGRAID_CORE_LIVE_H
#define LIBGRAID_CORE_LIVE_H

#include "array/array.h"
#include "meta/region_map.h"

/* Where the map lives unless the creator says otherwise: after the write-intent bitmap. */
#define LIVE_DEFAULT_OFFSET (128u * 1024)
#define LIVE_DEFAULT_BYTES (64u * 1024)

/* The map: region_map.c's mechanics; a region's REGION_MAP_MARKED is "used". */
struct live {
	struct region_map map;
	_Atomic uint32_t *cand;          /* per region: 0 none, LIVE_CAND_DONE, or a flush epoch */
	_Atomic uint64_t *cand_seq;      /* per region: the write sequence its discard saw */
	_Atomic uint64_t *last;          /* per region: seq of the last data write started */
	_Atomic uint64_t seq;
};

/*
 * A region wholly discarded goes through two marks before it is recorded unused: DONE when
 * the discard completed, then the epoch of the first flush that began after that
 * (live_flush_begin). Only a flush of that epoch or a later one may clear it: its member
 * flushes ran after the discard completed, so the zeroes are durable, whichever flushes
 * overlap. A data write that starts clears either mark, and one numbered after the
 * discard's look (cand_seq) keeps the region used even if it stalled before clearing it.
 */
#define LIVE_CAND_DONE 1u

/* What a discard saw when it was queued (live_discard_begin). */
struct live_token {
	uint64_t seq;
	bool tainted;                    /* a data write was in flight in a covered region */
};

/* Set up the map (NULL a->live when bytes is 0: no map, everything counts as used). */
int live_init(struct graid_array *a, uint64_t offset, uint64_t bytes, uint64_t region_stripes);
void live_free(struct graid_array *a);
/*
 * OR the members' copies into memory (open; region_map_load says whose); none readable:
 * every region counts as used. 0 or -ENOMEM.
 */
int live_load(struct graid_array *a);
/* Make every writable member's copy equal to memory (create, open, a member joining). */
int live_write_all(struct graid_array *a);

/*
 * Around every data write of a stripe: marks its region used (durably) before any I/O. 0;
 * -EIO no member took the mark, -ESTALE the array was taken over: the write must not go out
 * (live_end_write() is still due).
 */
int live_start_write(struct graid_array *a, uint64_t stripe);
void live_end_write(struct graid_array *a, uint64_t stripe);
/* A discard or write-zeroes of [off, off+len) array bytes: queued, then completed whole. */
void live_discard_begin(struct graid_array *a, uint64_t off, uint64_t len, struct live_token *t);
void live_discard_done(struct graid_array *a, uint64_t off, uint64_t len,
		       const struct live_token *t);
/*
 * Member rows [@p r0, @p r1) (levels 5 and 6) zeroed on every member by a caller that held
 * their stripe locks from before live_rows_zero_begin() filled @p t until the zeroing
 * completed (a grow's rows that need no copy, its added space): the regions wholly inside
 * are recorded unused after the next flush, as a discard's, unless a data write to them
 * starts meanwhile or was in flight.
 */
void live_rows_zero_begin(struct graid_array *a, struct live_token *t);
void live_rows_zeroed(struct graid_array *a, uint64_t r0, uint64_t r1, const struct live_token *t);
#if GRAID_FAULT_INJECTION
/*
 * Test seam, NULL in use: called in live_discard_done between its look at region @p r and
 * its mark, where a write starting would slip between them. Only with fault injection.
 */
extern void (*graid__test_live_marking)(struct graid_array *a, uint64_t r);
#endif

/*
 * Before a flush's member flushes: promote the discards completed so far, and return the
 * write sequence now (live_sweep's argument).
 */
struct live_flush {
	uint64_t seq;                    /* the write sequence when the flush began */
	uint32_t epoch;                  /* its epoch (>= 2) */
};
struct live_flush live_flush_begin(struct graid_array *a);
/*
 * After those member flushes: record unused the regions promoted by live_flush_begin that
 * no data write has touched since (@p flush_seq), on disk too.
 */
void live_sweep(struct graid_array *a, struct live_flush f);

/* Whether stripe @p stripe (bitmap numbering: array chunks on RAID-10) is in an unused region. */
static inline bool live_stripe_unused(const struct graid_array *a, uint64_t stripe)
{
	return a->live && !region_map_marked(&a->live->map, stripe / a->live->map.region_stripes);
}
/* Whether member row @p row holds only unused regions (every level; RAID-10 by its chunks). */
bool live_row_unused(const struct graid_array *a, uint64_t row);
/* Bytes of the array in used regions (the array's size without a map). */
uint64_t live_used_bytes(const struct graid_array *a);

/*
 * Regions 2^@p k times as large (region_map_coarsen(), which says when and what it returns):
 * pending discard candidacies dropped, each region's last write the latest merged. No map: 0.
 */
int live_coarsen(struct graid_array *a, unsigned k, struct region_map_undo *undo);
/* region_map_coarsen_undo() for the live-data map. */
void live_coarsen_undo(struct graid_array *a, struct region_map_undo *undo);

#endif
