/* SPDX-License-Identifier: MIT */
/* The rebuild's rate limit alone, for the control endpoint above this layer. */
#ifndef LIBGRAID_CORE_REBUILD_RATE_H
#define LIBGRAID_CORE_REBUILD_RATE_H

#include <stdint.h>

#include "array/array.h"

/*
 * graid_rebuild_options::max_bytes_per_sec alone (0: unlimited), the yield and the busy
 * rate left as they are: 0, or -EINVAL @p a NULL. docs/CONTROL.md ("rebuild-rate") says why
 * not graid_array_set_rebuild_options().
 */
int array_set_rebuild_rate(struct graid_array *a, uint64_t bytes_per_s);
/* The rebuild's rate limit in force (max_bytes_per_sec; 0: unlimited). */
uint64_t array_rebuild_rate(struct graid_array *a);

#endif
