/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_sqe(): the caller's own io_uring operations on a queue's ring, beside the
 * member I/O, so that one wait (graid_queue_reap) covers both. A server that feeds the
 * array from another kernel interface (graid-ublk's commands to the ublk driver) then
 * needs one ring and one system call per turn, and a driver that registers its buffers on
 * the ring a command came through (UBLK_F_AUTO_BUF_REG) registers them where the member
 * reads run. Each operation has a small record; its address tagged with bit 0 is the
 * CQE's user_data, which tells it from a member I/O's (queue.c, queue_reap_cqes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/queue.h"
#include "io/queue_ops.h"

/* Operations in flight at most: twice the depth, and a few polls (graid.h). */
static unsigned queue_ops_cap(const struct graid_queue *q)
{
	return 2 * q->depth + 16;
}

static int queue_ops_alloc(struct graid_queue *q)
{
	unsigned cap = queue_ops_cap(q);

	q->ops = calloc(cap, sizeof(*q->ops));
	q->op_done = calloc(cap, sizeof(*q->op_done));
	if (!q->ops || !q->op_done) {
		free(q->ops);
		free(q->op_done);
		q->ops = NULL;
		q->op_done = NULL;
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cap; i++)
		q->ops[i].next = i + 1 < cap ? &q->ops[i + 1] : NULL;
	q->op_free = q->ops;
	q->ops_cap = cap;
	q->op_done_cap = cap;
	return 0;
}

/* What a caller's SQE may ask for: links would chain it to member I/O, the rest names
 * resources of the ring the caller has no handle on, and a skipped CQE would never end it. */
#define QUEUE_SQE_REFUSED                                                                  \
	(IOSQE_FIXED_FILE | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_BUFFER_SELECT |      \
	 IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_DRAIN)

/*
 * Operations that act on other requests of the ring (cancel, remove, update, a linked
 * timeout) or on its file table: on this ring they would reach the member I/O, and a
 * member read cancelled under the library would fail a healthy member.
 */
static bool queue_sqe_opcode_refused(const struct io_uring_sqe *sqe)
{
	switch (sqe->opcode) {
	case IORING_OP_ASYNC_CANCEL:
	case IORING_OP_POLL_REMOVE:
	case IORING_OP_TIMEOUT_REMOVE:
	case IORING_OP_LINK_TIMEOUT:
	case IORING_OP_FILES_UPDATE:
		return true;
	default:
		return false;
	}
}

GRAID_API int graid_queue_sqe(struct graid_queue *q, const struct io_uring_sqe *sqe,
			      uint64_t user_data)
{
	struct io_uring_sqe *dst;
	struct queue_op *op;

	if (!q || !sqe || (sqe->flags & QUEUE_SQE_REFUSED) || queue_sqe_opcode_refused(sqe))
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	if (!q->ops && queue_ops_alloc(q))
		return -ENOMEM;
	/* Completions not reaped yet count too: their room is kept without a realloc. */
	if (!q->op_free || q->nops + q->nop_done >= q->ops_cap)
		return -EAGAIN;
	dst = io_uring_get_sqe(&q->ring);
	if (!dst) {
		/* The ring is full of member I/O: send it (a refusal leaves it for later). */
		member_ring_submit(&q->ring, 0);
		dst = io_uring_get_sqe(&q->ring);
		if (!dst)
			return -EAGAIN;
	}
	op = q->op_free;
	q->op_free = op->next;
	op->user_data = user_data;
	/* The caller's 64 bytes; where the ring has 128-byte entries the rest is zero. */
	memcpy(dst, sqe, sizeof(*sqe));
	if (q->ring.flags & IORING_SETUP_SQE128)
		memset(dst + 1, 0, sizeof(*sqe));
	io_uring_sqe_set_data64(dst, (uint64_t)(uintptr_t)op | QUEUE_OP_TAG);
	q->nops++;
	return 0;
}

bool queue_op_cqe(struct graid_queue *q, const struct io_uring_cqe *cqe)
{
	struct queue_op *op = (struct queue_op *)(uintptr_t)(cqe->user_data & ~QUEUE_OP_TAG);

	if (q->nop_done == q->op_done_cap) {
		/* A multishot operation can end more CQEs than there are records. */
		unsigned cap = 2 * q->op_done_cap;
		struct graid_completion *p = realloc(q->op_done, cap * sizeof(*p));

		if (!p)
			return false;
		q->op_done = p;
		q->op_done_cap = cap;
	}
	q->op_done[q->nop_done++] = (struct graid_completion){ .user_data = op->user_data,
							       .result = cqe->res };
	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		op->next = q->op_free;
		q->op_free = op;
		q->nops--;
	}
	return true;
}

unsigned queue_op_take(struct graid_queue *q, struct graid_completion *c, unsigned max)
{
	unsigned n = q->nop_done < max ? q->nop_done : max;

	if (n == 0)
		return 0;
	memcpy(c, q->op_done, n * sizeof(*c));
	q->nop_done -= n;
	memmove(q->op_done, q->op_done + n, q->nop_done * sizeof(*c));
	return n;
}

void queue_ops_free(struct graid_queue *q)
{
	free(q->ops);
	free(q->op_done);
	q->ops = NULL;
	q->op_done = NULL;
	q->op_free = NULL;
	q->nops = q->nop_done = 0;
}
