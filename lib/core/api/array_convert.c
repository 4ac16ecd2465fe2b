/* SPDX-License-Identifier: MIT */
/* graid_array_convert(): a metadata-only level change of an open array (docs/RESHAPE.md). */
#include <errno.h>

#include "jobs/reshape_level.h"

GRAID_API int graid_array_convert(struct graid_array *a, int level, unsigned flags)
{
	if (!a || flags)
		return -EINVAL;
	if (level != 0 && level != 1 && level != 5 && level != 6 && level != 10)
		return -EINVAL;
	return reshape_level_convert(a, level);
}
