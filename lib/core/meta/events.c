/* SPDX-License-Identifier: MIT */
/* The array's event callback: member failures, rebuilds, scrub findings, resyncs. */
#include <errno.h>

#include "array/array.h"
#include "meta/events.h"

GRAID_API int graid_array_set_event_callback(struct graid_array *a, graid_event_fn fn,
					     void *arg)
{
	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->event.lock);
	a->event.fn = fn;
	a->event.arg = arg;
	pthread_mutex_unlock(&a->event.lock);
	return 0;
}

void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count)
{
	struct graid_event ev = { .struct_size = sizeof(ev), .type = type, .member = member,
				  .error = error, .stripe = stripe, .count = count };

	pthread_mutex_lock(&a->event.lock);
	if (a->event.fn)
		a->event.fn(a->event.arg, &ev);
	pthread_mutex_unlock(&a->event.lock);
}
