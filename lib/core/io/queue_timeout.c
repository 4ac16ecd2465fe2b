/* SPDX-License-Identifier: MIT */
/*
 * The array's I/O timeout (graid_array_set_io_timeout), part one: which member I/Os of a
 * queue may be given up on, and when the oldest is due. They are kept in order of
 * preparation, so the oldest is at the head. Giving up, and the late end of an I/O given
 * up on, are queue_late.c.
 */
#include "io/queue.h"
#include "io/queue_late.h"
#include "io/queue_timeout.h"

static void tlist_remove(struct graid_queue *q, struct mio *io)
{
	if (io->t_prev)
		io->t_prev->t_next = io->t_next;
	else
		q->t_head = io->t_next;
	if (io->t_next)
		io->t_next->t_prev = io->t_prev;
	else
		q->t_tail = io->t_prev;
	io->t_prev = io->t_next = NULL;
	io->tracked = false;
}

void queue_timeout_track(struct graid_queue *q, struct mio *io, const uint8_t *ptr)
{
	struct sop *s = io->sop;
	unsigned slot = io->slot;

	io->tracked = false;
	io->late = false;
	if (!atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed))
		return;
	/* A read straight into the caller's memory cannot be given up on: it is theirs. */
	if (!io->write && !(s->own[slot] && ptr == s->buf[slot]))
		return;
	io->t_issue = graid__now_ns();
	io->t_next = NULL;
	io->t_prev = q->t_tail;
	if (q->t_tail)
		q->t_tail->t_next = io;
	else
		q->t_head = io;
	q->t_tail = io;
	io->tracked = true;
}

void queue_timeout_untrack(struct graid_queue *q, struct mio *io)
{
	if (io->tracked)
		tlist_remove(q, io);
}

struct mio *queue_timeout_due(struct graid_queue *q)
{
	uint64_t tmo = atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed);
	struct mio *io = q->t_head;

	if (!io || !tmo || graid__now_ns() - io->t_issue < tmo)
		return NULL;
	tlist_remove(q, io);
	return io;
}

int queue_timeout_wait(struct graid_queue *q)
{
	uint64_t tmo = atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	uint64_t now, left;

	if (!tmo || !q->t_head)
		return io_uring_wait_cqe(&q->ring, &cqe);
	now = graid__now_ns();
	left = q->t_head->t_issue + tmo > now ? q->t_head->t_issue + tmo - now : 0;
	ts.tv_sec = (long long)(left / 1000000000ull);
	ts.tv_nsec = (long long)(left % 1000000000ull);
	return io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts);
}

