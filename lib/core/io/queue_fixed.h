/* SPDX-License-Identifier: MIT */
/* The caller's registered memory on a queue: graid_queue_register_buffers() (queue_fixed.c). */
#ifndef LIBGRAID_CORE_QUEUE_FIXED_H
#define LIBGRAID_CORE_QUEUE_FIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/queue.h"

/* A slot of the buffer table: memory of the caller's (user), or left for a kernel's pages. */
struct queue_slot {
	uintptr_t base; /* user: its address; else what the kernel counts offsets from (0) */
	size_t len;     /* user only */
	bool user;
};

/*
 * Where the fake addresses of a read into a kernel's buffer start (struct req, kslot): far
 * above any offset in a slot, page-aligned so that alignment checks see the offset's own.
 */
#if UINTPTR_MAX > 0xffffffffu
#define QUEUE_KSLOT_BIAS ((uintptr_t)1 << 40)
#else
#define QUEUE_KSLOT_BIAS ((uintptr_t)0) /* no room: a kernel's pages are never read into */
#endif

/* A registered range: [base, end), fixed buffer @index of the queue's ring. */
struct queue_fixed {
	uintptr_t base, end;
	unsigned index;
};

/*
 * The fixed buffer holding [ptr, ptr + len) whole, or -1 (none); for @p passthru members
 * only where the kernel takes IORING_URING_CMD_FIXED.
 */
static inline int queue_fixed_index(const struct graid_queue *q, const void *ptr, size_t len,
				    bool passthru)
{
	uintptr_t p = (uintptr_t)ptr;
	unsigned lo = 0, hi = q->nfixed;

	if (passthru && !q->fixed_cmd)
		return -1;

	/* The last range starting at or below p, by bisection: they do not overlap. */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (q->fixed[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || p + len > q->fixed[lo - 1].end || p + len < p)
		return -1;
	return (int)q->fixed[lo - 1].index;
}

/* The ranges forgotten (graid_queue_destroy: the ring's exit unregisters them). */
void queue_fixed_free(struct graid_queue *q);
/*
 * Where graid_queue_read_fixed() reads to: *@p buf (and *@p kslot -1) for the caller's
 * memory, or a fake address and the slot for a kernel's pages. 0, -EINVAL (no such slot,
 * outside the caller's range) or -EXDEV (a kernel's pages this queue cannot read into).
 */
int queue_fixed_target(const struct graid_queue *q, unsigned buf_index, size_t buf_offset,
		       size_t len, uint8_t **buf, int *kslot);

#endif /* LIBGRAID_CORE_QUEUE_FIXED_H */
