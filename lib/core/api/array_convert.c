/* SPDX-License-Identifier: MIT */
/* graid_array_convert(): a metadata-only level change of an open array (docs/RESHAPE.md). */
#include <errno.h>

#include "jobs/reshape_level.h"

GRAID_API int graid_array_convert(struct graid_array *a, int level, unsigned flags)
{
	int rc;

	if (!a || flags)
		return -EINVAL;
	if (level != 0 && level != 1 && level != 5 && level != 6 && level != 10)
		return -EINVAL;
	rc = reshape_level_check(a, level);
	/*
	 * A RAID-1 has no parity engine (array_open_engine): one is opened before the array
	 * becomes a RAID-5 of two, as an open of one would: the engine the array was opened
	 * (or created) with, else GRAID_BACKEND, else the fastest.
	 * Kept if the change is refused after (closed at close).
	 */
	if (rc == 0 && level == 5 && a->lay.level == 1 && !a->be) {
		struct graid_backend *be = NULL;

		rc = graid_backend_open(a->be_name, &be);
		if (rc)
			graid__log(GRAID_LOG_ERR, "convert: no parity engine for the RAID-5: %s",
				   graid_strerror(rc));
		/* Another call's may be in first: one kept. */
		pthread_mutex_lock(&a->meta_lock);
		if (rc == 0 && !a->be) {
			a->be = be;
			be = NULL;
		}
		pthread_mutex_unlock(&a->meta_lock);
		if (be)
			graid_backend_close(be);
	}
	return rc ? rc : reshape_level_convert(a, level);
}
