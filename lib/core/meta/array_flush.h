/* SPDX-License-Identifier: MIT */
/* Completed writes made durable on every member (array_flush.c). */
#ifndef LIBGRAID_CORE_ARRAY_FLUSH_H
#define LIBGRAID_CORE_ARRAY_FLUSH_H

#include "array/array.h"

/*
 * Make every completed write durable on every writable member, failing those
 * that cannot, then let the bitmap clear quiet regions. -EIO when the array is broken (too
 * many failed), else 0; *failed (may be NULL) gets how many members failed to flush. What
 * graid_array_flush() wraps; internal callers carry on degraded when a member fails.
 */
int array_flush_members(struct graid_array *a, unsigned *failed);

#endif
