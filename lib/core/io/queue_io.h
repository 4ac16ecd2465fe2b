/* SPDX-License-Identifier: MIT */
/* What a stripe operation asks of its queue (queue_io.c): buffers, member I/O, its end. */
#ifndef LIBGRAID_CORE_QUEUE_IO_H
#define LIBGRAID_CORE_QUEUE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "io/queue.h"

/* A buffer of at least @p len bytes, ARRAY_ALIGN-aligned, from the queue's cache; or NULL. */
uint8_t *queue_buf_get(struct graid_queue *q, size_t len);
void queue_buf_put(struct graid_queue *q, uint8_t *p, size_t len);
/* One member I/O of @p s in its @p slot; 0 or -errno (nothing issued). */
int queue_io(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
	     bool write, uint8_t *ptr, size_t len, uint64_t member_off);
int queue_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		 const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t member_off);
/* A journal entry: at `pos` bytes from the member's start, durable when it completes. */
int queue_log_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		     const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t pos);
/*
 * A member write of a stripe update put on the ring (@p rc, from a queue_*() call above):
 * true. One that could not be takes its member out: false.
 */
bool queue_write_issued(struct graid_queue *q, unsigned member, int rc);
/* The operation is over: counted on its request with @p err, and back on the free list. */
void queue_sop_done(struct graid_queue *q, struct sop *s, int err);
/* Do RAM-backed members' I/O in the calling thread from now on (array_queue_get). */
void queue_inline_setup(struct graid_queue *q);

#endif /* LIBGRAID_CORE_QUEUE_IO_H */
