/* SPDX-License-Identifier: MIT */
/* How a member zeroes a range without sending data (discard.c). */
#ifndef LIBGRAID_CORE_DISCARD_H
#define LIBGRAID_CORE_DISCARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/queue.h"

/* Bytes of zeroes a zero request's stripe operation may cover when it writes them. */
size_t discard_zbuf_len(const struct graid_array *a);
/* Every writable member can zero a range without a data transfer (hole, discard, deallocate). */
bool discard_can_offload(const struct graid_array *a);
/* Zero [off, off+len) of role's data area by offload; 0 or -errno (then the role is failed). */
int discard_member(struct graid_queue *q, unsigned role, uint64_t off, uint64_t len);
/* The same outside a queue (rebuild: the unused rows of a new member). */
int discard_member_sync(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

#endif /* LIBGRAID_CORE_DISCARD_H */
