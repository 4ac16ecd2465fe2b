/* SPDX-License-Identifier: MIT */
/* Read errors (array_readerr.c): a media error repaired from redundancy, its member kept. */
#ifndef LIBGRAID_CORE_ARRAY_READERR_H
#define LIBGRAID_CORE_ARRAY_READERR_H

#include "array/array.h"
#include "member/member_io.h"

/*
 * Whether a read of @p role that failed with @p err is a media error on a
 * member otherwise reachable (a sector to rebuild and rewrite), not a lost path or device.
 * Counts nothing.
 */
bool array_read_error_repairable(struct graid_array *a, unsigned role, int err);
/*
 * A read of @p role (issued on descriptor @p mf->fd) failed with @p err. True: a media
 * error on a member that is otherwise healthy, to be repaired from redundancy (the member
 * stays; the error counts against it, except a checksum mismatch, @p mf->csum, which its
 * own counter took); false: the caller fails it as for any error (array_member_io_failed):
 * not a media error, or more of them than READERR_MAX within the hour.
 */
bool array_member_read_error(struct graid_array *a, unsigned role,
			     const struct member_io_fault *mf, int err);
/*
 * @p units 4 KiB blocks of @p role in member row @p row were rebuilt from redundancy and
 * written back (GRAID_EVENT_BLOCK_REPAIRED).
 */
void array_member_read_repaired(struct graid_array *a, unsigned role, uint64_t row,
				uint64_t units);

#endif
