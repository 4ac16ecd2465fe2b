/* SPDX-License-Identifier: MIT */
/* The array's events: numbered, kept in the handle's ring, sent to the application's callback. */
#include <errno.h>
#include <unistd.h>

#include "array/array.h"
#include "common/internal.h"
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

/*
 * Under event.lock, so the ring holds the events in the callback's order. The eventfd is
 * written under the ring's lock: a watcher that lets go of it (array_events_watch) then
 * closes it, and no push may write to a number that closing freed. A full eventfd counter
 * (EAGAIN) still wakes its reader.
 */
static void event_keep(struct graid_array *a, const struct graid_event *ev)
{
	uint64_t one = 1;
	int err = 0;

	pthread_mutex_lock(&a->event_ring.lock);
	a->event_ring.ring[ev->seq % ARRAY_EVENT_RING] = *ev;
	a->event_ring.last = ev->seq;
	if (a->event_ring.watch_fd >= 0 &&
	    write(a->event_ring.watch_fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		err = -errno;
	pthread_mutex_unlock(&a->event_ring.lock);
	if (err)
		graid__log(GRAID_LOG_WARNING, "events: cannot wake the event watcher: %s",
			   graid_strerror(err));
}

void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count)
{
	struct graid_event ev = { .struct_size = sizeof(ev), .type = type, .member = member,
				  .error = error, .stripe = stripe, .count = count };

	pthread_mutex_lock(&a->event.lock);
	ev.seq = ++a->event.seq;
	ev.time_ns = graid__now_ns();
	event_keep(a, &ev);
	if (a->event.fn)
		a->event.fn(a->event.arg, &ev);
	pthread_mutex_unlock(&a->event.lock);
}
