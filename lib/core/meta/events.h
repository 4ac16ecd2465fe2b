/* SPDX-License-Identifier: MIT */
/* The array's event callback (events.c). */
#ifndef LIBGRAID_CORE_EVENTS_H
#define LIBGRAID_CORE_EVENTS_H

#include "array/array.h"

/* Deliver an event to the callback graid_array_set_event_callback() registered, if any. */
void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count);

#endif
