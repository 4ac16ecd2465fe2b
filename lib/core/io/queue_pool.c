/* SPDX-License-Identifier: MIT */
/* The array's pool of queues, and the synchronous calls (graid_array_read...) run on them. */
#include <errno.h>

#include "io/queue.h"
#include "io/queue_io.h"
#include "io/queue_pool.h"

struct graid_queue *array_queue_get(struct graid_array *a)
{
	struct graid_queue *q;

	pthread_mutex_lock(&a->pool.lock);
	q = a->pool.idle;
	if (q)
		a->pool.idle = q->pool_next;
	pthread_mutex_unlock(&a->pool.lock);
	if (q && (q->ring.flags & member_ring_flags(a)) != member_ring_flags(a)) {
		/* An NVMe generic device joined since this queue was made: it needs big SQEs. */
		graid_queue_destroy(q);
		q = NULL;
	}
	if (!q) {
		if (graid_queue_create(a, 16, &q))
			return NULL;
		/* One caller waiting on one request: nothing to overlap a worker thread with. */
		queue_inline_setup(q);
	}
	return q;
}

/*
 * Wait for the one request a synchronous call queued. It never returns while that request
 * is still queued: the queue goes back to the pool afterwards, and a request left in it
 * would reach the members later with whatever the caller has put in its buffer since, hand
 * its completion to the next call, and keep its stripes locked. A ring the kernel refuses
 * is tried again for as long as it answers "not now". 0 and *c filled, or a negative errno
 * when the ring itself is broken: the queue is then kept out of the pool for good (its
 * I/O may still be the kernel's).
 */
int array_queue_sync_wait(struct graid_array *a, struct graid_queue *q,
			  struct graid_completion *c)
{
	for (;;) {
		int rc = graid_queue_reap(q, c, 1, 1);

		if (rc == 1)
			return 0;
		if (rc == 0 && q->nreq == 0)
			return -EIO; /* nothing queued: cannot happen, but never wait for it */
		if (rc < 0 && !queue_err_transient(rc)) {
			graid__log(GRAID_LOG_ERR, "array: a queue's ring failed (%s) with a request "
						  "in it; that queue is retired", graid_strerror(rc));
			/* Closed, as graid_queue_destroy() closes a broken ring; never freed. */
			io_uring_queue_exit(&q->ring);
			q->retired = true;
			return rc;
		}
		(void)a;
	}
}

int64_t array_sync_request(struct graid_array *a, enum array_sync_kind kind, void *buf,
			   uint64_t len, uint64_t offset)
{
	struct graid_completion c;
	struct graid_queue *q;
	int rc;

	if (!a)
		return -EINVAL;
	q = array_queue_get(a);
	if (!q)
		return -ENOMEM;
	switch (kind) {
	case SYNC_READ: rc = graid_queue_read(q, buf, (size_t)len, offset, 0); break;
	case SYNC_WRITE: rc = graid_queue_write(q, buf, (size_t)len, offset, 0); break;
	case SYNC_DISCARD: rc = graid_queue_discard(q, offset, len, 0); break;
	default: rc = graid_queue_write_zeroes(q, offset, len, 0); break;
	}
	if (rc == 0)
		rc = array_queue_sync_wait(a, q, &c);
	array_queue_put(a, q);
	return rc ? rc : c.result;
}

void array_queue_put(struct graid_array *a, struct graid_queue *q)
{
	if (q->retired)
		return; /* kept, never reused: the kernel may still own its memory */
	pthread_mutex_lock(&a->pool.lock);
	q->pool_next = a->pool.idle;
	a->pool.idle = q;
	pthread_mutex_unlock(&a->pool.lock);
}

void array_queue_pool_reap_late(struct graid_array *a)
{
	struct graid_queue *late = NULL, **pp;

	pthread_mutex_lock(&a->pool.lock);
	for (pp = &a->pool.idle; *pp;) {
		struct graid_queue *q = *pp;

		if (q->nlate) {
			*pp = q->pool_next;
			q->pool_next = late;
			late = q;
		} else {
			pp = &q->pool_next;
		}
	}
	pthread_mutex_unlock(&a->pool.lock);
	while (late) {
		struct graid_queue *q = late;

		late = q->pool_next;
		graid_queue_reap(q, NULL, 0, 0); /* idle: only late completions are there */
		array_queue_put(a, q);
	}
}

void array_queue_pool_free(struct graid_array *a)
{
	while (a->pool.idle) {
		struct graid_queue *q = a->pool.idle;

		a->pool.idle = q->pool_next;
		graid_queue_destroy(q);
	}
}
