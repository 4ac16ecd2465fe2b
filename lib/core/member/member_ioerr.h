/* SPDX-License-Identifier: MIT */
/* The failed I/Os a role's I/O-error health rule counts: one per bad area, not per retry. */
#ifndef LIBGRAID_CORE_MEMBER_MEMBER_IOERR_H
#define LIBGRAID_CORE_MEMBER_MEMBER_IOERR_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

/*
 * A failed I/O of [@p off, @p off + @p len) (data-area bytes) on role @p r's device at
 * @p now_ns: counted for the rule (its count in a row and the ring of times) unless an
 * I/O of the same kind that failed on bytes it overlaps was counted within
 * IOERR_AREA_WINDOW_NS (docs/HEALTH.md, "I/O errors"). Returns whether it was counted.
 * Lock-free, relaxed: two threads failing on one area at the same moment may both count.
 */
bool member_ioerr_note(struct member_role *r, bool write, uint64_t off, uint64_t len,
		       uint64_t now_ns);

#endif /* LIBGRAID_CORE_MEMBER_MEMBER_IOERR_H */
