/* SPDX-License-Identifier: MIT */
/* Which copy of a RAID-1/10 chunk is its truth in a region the resync has still to reach. */
#ifndef LIBGRAID_CORE_MIRROR_SOURCE_H
#define LIBGRAID_CORE_MIRROR_SOURCE_H

#include "array/array.h"
#include "format/layout.h"

/*
 * Copy j of a chunk (layout_copies' order) in the order the resync tries them as its
 * source: a member forced back in (GRAID_OPEN_FORCE) may hold stale copies, so any other
 * copy comes first, and it comes only where no other copy will do.
 */
static inline unsigned mirror_source_order(const struct graid_array *a, const unsigned *members,
					   unsigned k, unsigned *order)
{
	unsigned n = 0;

	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned j = 0; j < k; j++)
			if (!a->members[members[j]].role.forced == !pass)
				order[n++] = j;
	return n;
}

/*
 * The copy the resync makes every other copy of the chunk equal to, and so the only one a
 * read may be served from until it has: after a crash the copies of a chunk being written
 * may differ, and a read balanced over them could return one value before the resync and
 * the other after it (docs/ARRAYS.md, "Mirror reads while a background resync runs"). The
 * first copy in mirror_source_order() readable over the whole chunk and not in @p left_out
 * (indexed like @p members; NULL: none), as an index into members[]; GRAID_LAYOUT_NONE if
 * none. @p moff: the copies' member offsets, @p within bytes into the chunk.
 */
static inline unsigned mirror_source(const struct graid_array *a, const unsigned *members,
				     const uint64_t *moff, unsigned k, uint64_t within,
				     const bool *left_out)
{
	unsigned order[GRAID_MAX_MEMBERS], n = mirror_source_order(a, members, k, order);

	for (unsigned i = 0; i < n; i++) {
		unsigned j = order[i];

		if ((!left_out || !left_out[j]) &&
		    array_role_readable(a, members[j], moff[j] - within + a->lay.chunk))
			return j;
	}
	return GRAID_LAYOUT_NONE;
}

#endif
