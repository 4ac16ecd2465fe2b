/* SPDX-License-Identifier: MIT */
/* The array's pool of queues, and the synchronous calls run on them (queue_pool.c). */
#ifndef LIBGRAID_CORE_QUEUE_POOL_H
#define LIBGRAID_CORE_QUEUE_POOL_H

#include <stdint.h>

#include "array/array.h"

/* A pooled queue for a synchronous call, made if none is idle; NULL without memory. */
struct graid_queue *array_queue_get(struct graid_array *a);
void array_queue_put(struct graid_array *a, struct graid_queue *q);
/* The synchronous calls: one request on a pooled queue, waited for. Its result or -errno. */
enum array_sync_kind { SYNC_READ, SYNC_WRITE, SYNC_DISCARD, SYNC_ZEROES };
int64_t array_sync_request(struct graid_array *a, enum array_sync_kind kind, void *buf,
			   uint64_t len, uint64_t offset);
/* Wait for the one request of a synchronous call; never returns while it is queued. */
int array_queue_sync_wait(struct graid_array *a, struct graid_queue *q,
			  struct graid_completion *c);
void array_queue_pool_free(struct graid_array *a);
/*
 * Account for the late I/O (queue_late.c) that idle pooled queues hold: their completions
 * wait in the rings until someone reaps, and until then the members' late_ios stay up.
 * For the worker, while a member waits for its late I/O to end.
 */
void array_queue_pool_reap_late(struct graid_array *a);

#endif /* LIBGRAID_CORE_QUEUE_POOL_H */
