/* SPDX-License-Identifier: MIT */
/* The handle's ring of recent events, read from above the api layer (the control endpoint). */
#ifndef LIBGRAID_CORE_ARRAY_EVENTS_H
#define LIBGRAID_CORE_ARRAY_EVENTS_H

#include <stdint.h>

#include "array/array.h"

/*
 * The events numbered after @p since that the ring still holds, oldest first, at most
 * @p max of them, copied to @p out; *@p last: the newest event's number (0: none yet).
 * Returns how many were copied. Events after @p since that the ring no longer holds are
 * those between @p since and out[0].seq; a reader that copied none while *@p last is past
 * @p since asked for @p max 0. Takes only the ring's lock: any thread, any time the handle
 * is open, never waits on an event being sent.
 */
unsigned array_events_read(struct graid_array *a, uint64_t since, struct graid_event *out,
			   unsigned max, uint64_t *last);

/*
 * Have @p fd (an eventfd, non-blocking) written 1 at each event from now on; -1: none. One
 * watcher a handle (a later call replaces the earlier). Once it returns, no push writes to
 * the earlier descriptor any more: the caller may close it.
 */
void array_events_watch(struct graid_array *a, int fd);
/*
 * In a fork()'s child, which has one thread: forget the parent's watcher without the ring's
 * lock (the fork may have copied it held by a thread the child does not have).
 */
void array_events_forget_watch(struct graid_array *a);

#endif /* LIBGRAID_CORE_ARRAY_EVENTS_H */
