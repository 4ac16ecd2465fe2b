/* SPDX-License-Identifier: MIT */
/*
 * Metadata-only level changes (docs/RESHAPE.md, "Metadata-only level changes, as built"):
 * a Q-last RAID-6 of n + 1 back to the RAID-5 of n by dropping its Q member, under the
 * array's quiesce, in one superblock round.
 */
#ifndef LIBGRAID_CORE_RESHAPE_LEVEL_H
#define LIBGRAID_CORE_RESHAPE_LEVEL_H

#include "array/array.h"

/*
 * graid_array_convert()'s work (include/libgraid/graid.h says every return): @p level the
 * level wanted. Only a Q-last RAID-6 to RAID-5 is built; the rest are refused, logged, with
 * nothing written.
 */
int reshape_level_convert(struct graid_array *a, int level);

#endif
