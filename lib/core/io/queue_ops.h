/* SPDX-License-Identifier: MIT */
/* The caller's own operations on a queue's ring: graid_queue_sqe() (queue_ops.c). */
#ifndef LIBGRAID_CORE_QUEUE_OPS_H
#define LIBGRAID_CORE_QUEUE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/queue.h"

/* A caller's operation in flight; its address, with bit 0 set, is the CQE's user_data. */
struct queue_op {
	struct queue_op *next;
	uint64_t user_data;
};

/* CQE user_data of a caller's operation: mio records are at least 8-byte aligned. */
#define QUEUE_OP_TAG UINT64_C(1)

/* A CQE of a caller's operation (user_data with QUEUE_OP_TAG); false: no room, keep it. */
bool queue_op_cqe(struct graid_queue *q, const struct io_uring_cqe *cqe);
/* Up to @p max finished operations into @p c; how many. */
unsigned queue_op_take(struct graid_queue *q, struct graid_completion *c, unsigned max);
void queue_ops_free(struct graid_queue *q);

#endif /* LIBGRAID_CORE_QUEUE_OPS_H */
