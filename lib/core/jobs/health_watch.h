/* SPDX-License-Identifier: MIT */
/* The watch over the members' drive health (its own thread), and one sample taken without meta_lock. */
#ifndef LIBGRAID_CORE_JOBS_HEALTH_WATCH_H
#define LIBGRAID_CORE_JOBS_HEALTH_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

/*
 * Read the health of role or spare @p idx's drive (graid_array_member_health()); meta_lock
 * held, and let go during the drive's command (a fabric controller may take long), so the
 * role may have another device on return: *@p devno and *@p ino say which device was read.
 * 0; -EINVAL @p idx out of range; -ENODEV; -EOPNOTSUPP; -errno.
 */
int array_health_sample(struct graid_array *a, unsigned idx, struct graid_member_health *h,
			dev_t *devno, ino_t *ino);

/*
 * The watch, started with the worker (meta_lock held): its state and its thread. 0, or
 * -ENOMEM (no memory or no thread: nothing is watched).
 */
int array_health_init(struct graid_array *a);
/* Stop its thread (meta_lock not held; waits for a sample in progress) and free it. */
void array_health_free(struct graid_array *a);
/*
 * Nanoseconds until the next sample is due (0: due now), or UINT64_MAX when nothing is
 * watched; meta_lock held.
 */
uint64_t array_health_wait_ns(const struct graid_array *a);
/*
 * Sample every watched member and send the events of the rules that begin to hold; the
 * watch's thread, meta_lock held (let go during each command).
 */
void array_health_watch(struct graid_array *a);
#endif /* LIBGRAID_CORE_JOBS_HEALTH_WATCH_H */
