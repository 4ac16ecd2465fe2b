/* SPDX-License-Identifier: MIT */
/* A reshape's two geometries: where an array byte lives, and the job's window math; pure. */
#ifndef LIBGRAID_CORE_RESHAPE_MAP_H
#define LIBGRAID_CORE_RESHAPE_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "format/layout.h"
#include "format/reshape_format.h"

/*
 * One geometry, placed by layout.c: @c lay is its struct layout; @c data the layout its
 * data and P follow (the same, except RESHAPE_LAYOUT_Q_LAST: RAID-5 over members 0..n-2,
 * with Q on member n-1).
 */
struct reshape_geo {
	struct layout lay;
	struct layout data;
	uint32_t layout_id;
};

/* Both geometries of a record, and where it stands. */
struct reshape_map {
	struct reshape_geo old_g, new_g;
	uint64_t position, end;
	uint32_t direction, phase;
	uint64_t stage_array_off, stage_bytes;
	uint32_t stage_role;
	uint64_t stage_member_off;
};

/* Which copy of the array a byte is read from now. */
enum reshape_in {
	RESHAPE_IN_OLD = 0,
	RESHAPE_IN_NEW = 1,
	/* Phase STAGED, at/after the position: only the staged copy is whole (the first one). */
	RESHAPE_IN_STAGED = 2,
};

struct reshape_loc {
	unsigned in;            /* enum reshape_in */
	unsigned member;        /* role in that geometry (RAID-1/10: the first copy) */
	uint64_t member_off;    /* from the data area's start */
};

/*
 * Set up @p m from a decoded (valid) record.
 * @return 0; -EINVAL a geometry layout.c cannot place (not from reshape_decode()).
 */
int reshape_map_init(struct reshape_map *m, const struct reshape_record *r);

/* Place @p array_off in geometry @p g (any layout id). @pre array_off < g->lay.array_bytes. */
void reshape_geo_map(const struct reshape_geo *g, uint64_t array_off, struct layout_pos *pos);

/* The member holding parity @p which (0 P, 1 Q) of @p stripe in @p g; GRAID_LAYOUT_NONE: none. */
unsigned reshape_geo_parity(const struct reshape_geo *g, uint64_t stripe, unsigned which);

/*
 * Where @p array_off is now: bytes the reshape has passed (forward: below the position;
 * backward: at or above it) in the new geometry, the others in the old one; in phase
 * STAGED the staged range at/after the position on the staged copy. Bytes at or past the
 * end of the moved bytes are the new geometry's (space the reshape adds).
 * @return 0; -ERANGE @p array_off is past the new geometry's size.
 */
int reshape_locate(const struct reshape_map *m, uint64_t array_off, struct reshape_loc *loc);

/* What moving array bytes [array_off, array_end) touches, and whether it is safe in place. */
struct reshape_window {
	uint64_t array_off, array_end;
	uint64_t old_row0, old_row1;  /* old rows read: [old_row0, old_row1] */
	uint64_t new_row0, new_row1;  /* new rows written: [new_row0, new_row1] */
	/* Old members whose rows the window writes (their content there changes). */
	unsigned nwritten;
	/*
	 * Writing it would overwrite, on an old member, a row that still holds array bytes at
	 * or past @c array_off: bytes not yet durable in their new place and covered by the
	 * recorded position. Such a window must be staged first.
	 */
	bool overlap;
};

/*
 * The window moving array bytes [@p array_off, @p array_off + @p bytes) forward.
 * @return 0; -EINVAL empty, not on chunk boundaries, or past the end of the moved bytes;
 *   -EOPNOTSUPP a backward record or geometries with different chunks (not built).
 */
int reshape_window(const struct reshape_map *m, uint64_t array_off, uint64_t bytes,
		   struct reshape_window *w);

/*
 * Array bytes a window moves to fill whole rows of the new geometry: a new stripe's data
 * for RAID-5 and RAID-6 (its parity is computed whole), else one chunk.
 */
uint64_t reshape_window_unit(const struct reshape_map *m);

/*
 * The most bytes, in whole window units, that a window at @p array_off moves without
 * overlap (capped at the end, and at @p limit); 0: none is safe, stage first.
 */
uint64_t reshape_safe_bytes(const struct reshape_map *m, uint64_t array_off, uint64_t limit);

/*
 * How many bytes from the start to stage so that, once they are moved from the staged
 * copy, a window of @p want bytes (whole units) is safe at every later position, and the
 * last window may end at the end. 0: no staging needed (no window overlaps). Walks the
 * whole reshape in windows of at most @p want (once, when a reshape starts).
 * @return 0 and *@p bytes; -ENOSPC not possible within the moved bytes.
 */
int reshape_stage_need(const struct reshape_map *m, uint64_t want, uint64_t *bytes);

/* Bytes of an added member's data area above the rows the moved bytes fill in the new geometry. */
uint64_t reshape_stage_room(const struct reshape_map *m);

#endif /* LIBGRAID_CORE_RESHAPE_MAP_H */
