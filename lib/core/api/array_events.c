/* SPDX-License-Identifier: MIT */
/* The handle's ring of recent events, read after a given number; its watcher's eventfd. */
#include "api/array_events.h"

unsigned array_events_read(struct graid_array *a, uint64_t since, struct graid_event *out,
			   unsigned max, uint64_t *last)
{
	uint64_t first, n;

	pthread_mutex_lock(&a->event_ring.lock);
	*last = a->event_ring.last;
	first = *last > ARRAY_EVENT_RING ? *last - ARRAY_EVENT_RING + 1 : 1;
	first = first > since ? first : since + 1;
	n = since < *last ? *last - first + 1 : 0;
	n = n < max ? n : max;
	for (uint64_t i = 0; i < n; i++)
		out[i] = a->event_ring.ring[(first + i) % ARRAY_EVENT_RING];
	pthread_mutex_unlock(&a->event_ring.lock);
	return (unsigned)n;
}

void array_events_watch(struct graid_array *a, int fd)
{
	pthread_mutex_lock(&a->event_ring.lock);
	a->event_ring.watch_fd = fd;
	pthread_mutex_unlock(&a->event_ring.lock);
}

void array_events_forget_watch(struct graid_array *a)
{
	a->event_ring.watch_fd = -1;
}
