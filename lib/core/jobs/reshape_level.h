/* SPDX-License-Identifier: MIT */
/*
 * Metadata-only level changes (docs/RESHAPE.md, "Metadata-only level changes, as built"):
 * a Q-last RAID-6 of n + 1 back to the RAID-5 of n by dropping its Q member, a RAID-1 of two
 * to the RAID-5 of two and back, each under the array's quiesce in one superblock round.
 */
#ifndef LIBGRAID_CORE_RESHAPE_LEVEL_H
#define LIBGRAID_CORE_RESHAPE_LEVEL_H

#include "array/array.h"

/*
 * Whether @p level is a change this build makes of @p a as it is (the caller then prepares,
 * e.g. opens the parity engine): 0, or the refusal (logged): -EOPNOTSUPP, -EROFS, -ESTALE.
 */
int reshape_level_check(struct graid_array *a, int level);
/*
 * graid_array_convert()'s work (include/libgraid/graid.h says every return): @p level the
 * level wanted. Built: a Q-last RAID-6 to RAID-5, a RAID-1 of two to RAID-5 (the parity
 * engine opened first) and back; the rest are refused, logged, with nothing written.
 */
int reshape_level_convert(struct graid_array *a, int level);

#endif
