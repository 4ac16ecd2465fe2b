/* SPDX-License-Identifier: MIT */
/*
 * Turning a RAID-5 of n members into a RAID-6 of n + 1 by adding one member, online, no data
 * moved (docs/RESHAPE.md, "RAID-5 to RAID-6, Q-last, as built"): the new geometry is the
 * Q-last RAID-6 (layout.h LAYOUT_Q_LAST), whose data and P are where the RAID-5 had them, so
 * the RAID-5/6 grow's start, job, records, finish and resume (reshape_grow.c) carry it, the
 * job writing only Q (rows of unused live-map regions zeroed on every member instead). What
 * differs from a grow is here.
 */
#ifndef LIBGRAID_CORE_RESHAPE_QLAST_H
#define LIBGRAID_CORE_RESHAPE_QLAST_H

#include <stdbool.h>

#include "array/array.h"
#include "format/reshape_format.h"

/*
 * Add the device @p paths[0] (@p n must be 1) to the open, writable RAID-5 @p a as the Q
 * member of a RAID-6 Q-last of one member more, and start computing Q in the background:
 * reshape_grow_start()'s steps, in its order, with its guarantees (reshape_grow.h), the
 * record's new geometry being level 6, layout Q-last. Rows below the position are RAID-6,
 * rows at or past it RAID-5 (the added member's chunk there holds nothing yet: a write there
 * writes data and P only). The superblocks say RAID-6 Q-last (major 3, RESHAPE and Q_LAST)
 * from the start's round on; the finish drops RESHAPE.
 * @return 0 started (with @p wait: finished); -EOPNOTSUPP not a RAID-5 (the level named in
 *   the log), or a RAID-5 with a journal or checksums; -EINVAL @p n is not 1, or
 *   reshape_grow_start()'s -EINVAL (a device too small, refused by member_attach); and every
 *   other error reshape_grow_start() returns (-EIO a member is out: the conversion starts
 *   only with every member in).
 */
int reshape_convert_start(struct graid_array *a, const char *const *paths, unsigned n,
			  bool wait);

/*
 * Whether @p r is a RAID-5 -> RAID-6 Q-last conversion: old level 5 rotating, new level 6
 * Q-last with one member more, chunk and data_bytes kept (what reshape_convert_start writes).
 */
bool reshape_qlast_record(const struct reshape_record *r);

/* Make @p g (a copy of the RAID-5's geometry with one member more) the RAID-6 Q-last. */
void reshape_qlast_geom(struct reshape_geom *g);

/*
 * What must hold of @p a before a conversion adding @p n members opens any device: a RAID-5,
 * one member added. @return 0; -EOPNOTSUPP another level; -EINVAL @p n != 1, or a RAID-5 of
 * two (no RAID-6 of three; all logged).
 */
int reshape_qlast_check(const struct graid_array *a, unsigned n);

/*
 * Whether @p a is a Q-last RAID-6, which no grow takes (a grow's record and job describe
 * the rotating layout only); said in the log when so.
 */
bool reshape_qlast_no_grow(const struct graid_array *a);

/*
 * Whether @p rs keeps every row where it was: a RAID-5's conversion to a Q-last RAID-6, whose
 * data and P stay in place (Q is added). False for a grow, which moves rows.
 */
bool reshape_qlast_rows_kept(const struct array_reshape *rs);

/*
 * Whether role @p role of a new row of @p rs needs no write: a conversion's data and P are
 * the old row's own chunks at their own places (the job writes Q alone). False for a grow.
 */
bool reshape_qlast_kept(const struct array_reshape *rs, unsigned role);

/*
 * What the job has written per member once @p bytes of the array have been copied (the
 * position less what was zeroed, not copied), which its pacing holds to the rate limit: a
 * grow's bytes over the new member count; a conversion's Q, all on the added member: the
 * bytes over the data chunks a row.
 */
uint64_t reshape_qlast_per_member(const struct reshape_record *r,
				  const struct array_reshape *rs, uint64_t bytes);

#endif /* LIBGRAID_CORE_RESHAPE_QLAST_H */
