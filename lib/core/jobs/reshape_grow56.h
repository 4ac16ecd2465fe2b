/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-5 or RAID-6 (docs/RESHAPE.md, "RAID-5/6 growing, as built"): the member
 * I/O of its job, rows at a time, below reshape_grow.c's windows and records.
 */
#ifndef LIBGRAID_CORE_RESHAPE_GROW56_H
#define LIBGRAID_CORE_RESHAPE_GROW56_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "format/reshape_format.h"

/* Bytes the job's buffer needs: a new row's chunks, then an old row's (degraded reads). */
size_t grow56_buf_bytes(const struct array_reshape *rs);

/*
 * Write new rows [@p r0, @p r1) whole: each data chunk read from its old place (or, @p
 * staged, from the record's staged copy; past the end: zeroes), parity computed through the
 * engine, every chunk and parity written with pwrite. @p written marks the members written
 * (the caller flushes them). Degraded: a chunk whose old member is out is recovered from its
 * old row through the engine; a member out is written around, the row marked in the bitmap
 * first. A read or write that fails is logged and returned, the position untouched.
 * @return 0; a member's error; -ENOMEM; the engine's error.
 */
int grow56_rows(struct graid_array *a, const struct array_reshape *rs,
		const struct reshape_record *rec, uint64_t r0, uint64_t r1, bool staged,
		uint8_t *buf, bool *written);

/*
 * Copy array bytes [stage_array_off, + stage_bytes) of @p rec from their old places to the
 * staged copy (stage_role[0] at stage_member_off[0]), then flush that member.
 * @return 0; a member's error.
 */
int grow56_stage_copy(struct graid_array *a, const struct array_reshape *rs,
		      const struct reshape_record *rec, uint8_t *buf);

/*
 * Zero every member's rows from the first row past the moved bytes to the end of the data
 * area (the added space's data and its parity, zeroes consistent for P and Q, and the
 * staging rows), flushed.
 * @return 0; a member's error.
 */
int grow56_zero_tail(struct graid_array *a, const struct array_reshape *rs);

/* The first member of @p rs's new geometry not alive, or a->nmembers when all are. */
unsigned grow56_dead_member(const struct graid_array *a, const struct array_reshape *rs);

#endif /* LIBGRAID_CORE_RESHAPE_GROW56_H */
