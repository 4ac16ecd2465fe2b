/* SPDX-License-Identifier: MIT */
/* The array's event callback (events.c). */
#ifndef LIBGRAID_CORE_EVENTS_H
#define LIBGRAID_CORE_EVENTS_H

#include "array/array.h"

/*
 * Deliver an event to the callback graid_array_set_event_callback() registered, if any.
 * After an event of a role's state (failed, unreachable, returned, rebuild started or
 * done) the roles out are counted: DEGRADED follows when more are out than before,
 * OPTIMAL when none is any more.
 */
void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count);

/* A writable open's roles settled: DEGRADED (member -1) when any is out, the count kept. */
void array_event_opened(struct graid_array *a);

/*
 * A rebuild ended with -errno @p err: REBUILD_STOPPED when a role is still out of sync,
 * naming the first role being rebuilt (else the first out).
 */
void array_event_rebuild_stopped(struct graid_array *a, int err);

#endif
