/* SPDX-License-Identifier: MIT */
/* The rebuild's rate limit set alone: the control endpoint's rebuild-rate op. */
#include <errno.h>

#include "api/rebuild_rate.h"

int array_set_rebuild_rate(struct graid_array *a, uint64_t bytes_per_s)
{
	if (!a)
		return -EINVAL;
	/* Stored as graid_array_set_rebuild_options() stores it: read at the next batch. */
	atomic_store(&a->rebuild_rate, bytes_per_s);
	return 0;
}

uint64_t array_rebuild_rate(struct graid_array *a)
{
	return atomic_load(&a->rebuild_rate);
}
