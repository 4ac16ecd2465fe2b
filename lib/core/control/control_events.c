/* SPDX-License-Identifier: MIT */
/* The control endpoint's subscribe op: a connection turned into a stream of the array's events. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "api/array_events.h"
#include "control/control.h"

/* Events read from the ring at a time, on the endpoint thread's stack. */
#define EVENTS_BATCH 32u

/*
 * What a subscribe that succeeded leaves for the connection that sent it: the op runs on
 * the endpoint's thread inside control_request(), which has no way to name the client, and
 * the connection takes it as soon as control_request() returns, on the same thread.
 */
static _Thread_local struct {
	bool asked;
	uint64_t after;
} subscribed;

int op_subscribe(struct graid_array *a, struct json_object *req, struct json_object *r,
		 char *why, size_t size)
{
	struct graid_event none;
	struct json_object *o, *v;
	uint64_t last, since = UINT64_MAX;

	/* As control_ops.c's integers: json-c's saturated 2^64 - 1 cannot be told from more. */
	if (json_object_object_get_ex(req, "since", &o) &&
	    (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0 ||
	     (since = json_object_get_uint64(o)) == UINT64_MAX)) {
		snprintf(why, size, "field 'since' must be an integer from 0 to %" PRIu64,
			 UINT64_MAX - 1);
		return -EINVAL;
	}
	array_events_read(a, 0, &none, 0, &last);
	v = json_object_new_uint64(last);
	if (!v) {
		snprintf(why, size, "out of memory");
		return -ENOMEM;
	}
	json_object_object_add(r, "seq", v);
	/* Past the newest: another handle's numbers (the holder reopened); nothing replayed. */
	subscribed.asked = true;
	subscribed.after = since < last ? since : last;
	return 0;
}

bool control_subscribed(uint64_t *after)
{
	bool asked = subscribed.asked;

	if (asked)
		*after = subscribed.after;
	subscribed.asked = false;
	return asked;
}

static int event_line(const struct graid_event *ev, char *buf, size_t room)
{
	char unknown[32];
	const char *name = graid_event_name(ev->type);

	if (!name) {
		snprintf(unknown, sizeof(unknown), "event-%d", ev->type);
		name = unknown;
	}
	return snprintf(buf, room, "{\"event\":\"%s\",\"seq\":%" PRIu64 ",\"time_ns\":%" PRIu64
			",\"member\":%d,\"error\":%d,\"stripe\":%" PRIu64 ",\"count\":%" PRIu64
			"}\n", name, ev->seq, ev->time_ns, ev->member, ev->error < 0 ? -ev->error :
			ev->error, ev->stripe, ev->count);
}

size_t control_event_lines(struct graid_array *a, uint64_t *after, char *buf, size_t room)
{
	struct graid_event ev[EVENTS_BATCH];
	size_t used = 0;
	uint64_t last;
	unsigned n;

	while ((n = array_events_read(a, *after, ev, EVENTS_BATCH, &last))) {
		/* Numbers the ring no longer holds: said once, with how many, before the rest. */
		if (ev[0].seq > *after + 1) {
			int k = snprintf(buf + used, room - used, "{\"event\":\"missed\",\"seq\":%"
					 PRIu64 ",\"missed\":%" PRIu64 "}\n", ev[0].seq - 1,
					 ev[0].seq - 1 - *after);

			if (k < 0 || (size_t)k >= room - used)
				return used;
			used += (size_t)k;
			*after = ev[0].seq - 1;
		}
		for (unsigned i = 0; i < n; i++) {
			int k = event_line(&ev[i], buf + used, room - used);

			if (k < 0 || (size_t)k >= room - used)
				return used;
			used += (size_t)k;
			*after = ev[i].seq;
		}
	}
	return used;
}
