/* SPDX-License-Identifier: MIT */
/* A queue's stripe-operation records (queue_sop.c). */
#ifndef LIBGRAID_CORE_QUEUE_SOP_H
#define LIBGRAID_CORE_QUEUE_SOP_H

#include "io/queue.h"

/* A record from the queue's free list, or a new one sized for the array; NULL without memory. */
struct sop *queue_sop_alloc(struct graid_queue *q);
/* A record off the free list, freed with everything it holds (graid_queue_destroy). */
void queue_sop_free(struct graid_queue *q, struct sop *s);

#endif /* LIBGRAID_CORE_QUEUE_SOP_H */
