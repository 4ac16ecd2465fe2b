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

/* Number, keep and deliver one event; event.lock held. */
static void event_send(struct graid_array *a, int type, int member, int error,
		       uint64_t stripe, uint64_t count)
{
	struct graid_event ev = { .struct_size = sizeof(ev), .type = type, .member = member,
				  .error = error, .stripe = stripe, .count = count };

	ev.seq = ++a->event.seq;
	ev.time_ns = graid__now_ns();
	event_keep(a, &ev);
	if (a->event.fn)
		a->event.fn(a->event.arg, &ev);
}

/*
 * Roles not ACTIVE, a rebuild's targets included: read from the states themselves, which
 * each sender changed before its event (nfailed may be counted only after it).
 */
static unsigned event_roles_out(struct graid_array *a)
{
	unsigned out = 0;

	for (unsigned r = 0; r < a->nmembers; r++)
		out += atomic_load(&a->members[r].state) != GRAID_MEMBER_ACTIVE;
	return out;
}

/* The kinds sent when a role's state changed: the roles out are reckoned after them. */
static bool event_moves_roles(int type)
{
	return type == GRAID_EVENT_MEMBER_FAILED || type == GRAID_EVENT_MEMBER_UNREACHABLE ||
	       type == GRAID_EVENT_MEMBER_RETURNED || type == GRAID_EVENT_REBUILD_STARTED ||
	       type == GRAID_EVENT_REBUILD_DONE;
}

/*
 * DEGRADED when more roles are out than at the last reckoning (the array not failed),
 * OPTIMAL when none is.
 */
static void event_reckon(struct graid_array *a, int member)
{
	unsigned out = event_roles_out(a);

	/* A failed array is not degraded: ARRAY_FAILED stays the last state a consumer saw. */
	if (out > a->event.out && !atomic_load(&a->broken))
		event_send(a, GRAID_EVENT_DEGRADED, member, 0, 0, out);
	else if (out == 0 && a->event.out)
		event_send(a, GRAID_EVENT_OPTIMAL, -1, 0, 0, 0);
	a->event.out = out;
}

void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count)
{
	pthread_mutex_lock(&a->event.lock);
	event_send(a, type, member, error, stripe, count);
	if (event_moves_roles(type))
		event_reckon(a, member);
	pthread_mutex_unlock(&a->event.lock);
}

void array_event_opened(struct graid_array *a)
{
	pthread_mutex_lock(&a->event.lock);
	a->event.out = 0;
	event_reckon(a, -1);
	pthread_mutex_unlock(&a->event.lock);
}

void array_event_rebuild_stopped(struct graid_array *a, int err)
{
	int first = -1;

	for (unsigned r = 0; r < a->nmembers && first < 0; r++)
		if (atomic_load(&a->members[r].state) == GRAID_MEMBER_REBUILDING)
			first = (int)r;
	for (unsigned r = 0; r < a->nmembers && first < 0; r++)
		if (atomic_load(&a->members[r].state) != GRAID_MEMBER_ACTIVE)
			first = (int)r;
	if (first >= 0)
		array_event(a, GRAID_EVENT_REBUILD_STOPPED, first, err, 0, 0);
}
