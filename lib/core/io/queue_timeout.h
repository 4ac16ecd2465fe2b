/* SPDX-License-Identifier: MIT */
/* The array's I/O timeout on a queue (queue_timeout.c): which I/Os may be given up on, when. */
#ifndef LIBGRAID_CORE_QUEUE_TIMEOUT_H
#define LIBGRAID_CORE_QUEUE_TIMEOUT_H

#include <stdint.h>

#include "io/queue.h"

/* A member I/O just prepared, whose target is @p ptr: keep it in the list if it may be given up on. */
void queue_timeout_track(struct graid_queue *q, struct mio *io, const uint8_t *ptr);
/* It ended: out of the list. */
void queue_timeout_untrack(struct graid_queue *q, struct mio *io);
/* The oldest I/O when it is past the timeout, taken out of the list; else NULL. */
struct mio *queue_timeout_due(struct graid_queue *q);
/* Wait for a completion, or until the oldest I/O is due; io_uring_wait_cqe's result. */
int queue_timeout_wait(struct graid_queue *q);

#endif /* LIBGRAID_CORE_QUEUE_TIMEOUT_H */
