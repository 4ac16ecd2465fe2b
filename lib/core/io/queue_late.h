/* SPDX-License-Identifier: MIT */
/* Giving up on a member I/O past the timeout, and its late end (queue_late.c). */
#ifndef LIBGRAID_CORE_QUEUE_LATE_H
#define LIBGRAID_CORE_QUEUE_LATE_H

#include <stdbool.h>

#include "io/queue.h"

/* Give up on @p io (past the timeout, out of the list) if the others can carry its stripe. */
void queue_give_up(struct graid_queue *q, struct mio *io);
/* A completion of @p io: true when it was a late one, now accounted for (nothing else to do). */
bool queue_late_done(struct graid_queue *q, struct mio *io, int res);

#endif /* LIBGRAID_CORE_QUEUE_LATE_H */
