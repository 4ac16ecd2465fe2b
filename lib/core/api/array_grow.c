/* SPDX-License-Identifier: MIT */
/* graid_array_grow(): the public call that adds members to an array online (docs/RESHAPE.md). */
#include <errno.h>

#include "jobs/reshape_grow.h"
#include "jobs/reshape_qlast.h"

GRAID_API int graid_array_grow(struct graid_array *a, const char *const *devices, unsigned n,
			       unsigned flags)
{
	if (!a || !devices || n == 0 || (flags & ~(GRAID_GROW_WAIT | GRAID_GROW_RAID6)))
		return -EINVAL;
	if (flags & GRAID_GROW_RAID6)
		return reshape_convert_start(a, devices, n, flags & GRAID_GROW_WAIT);
	return reshape_grow_start(a, devices, n, flags & GRAID_GROW_WAIT);
}
