/* SPDX-License-Identifier: MIT */
/* The control endpoint's `stats` op: the array's and its members' I/O counters as JSON. */
#include <errno.h>
#include <stdio.h>

#include <json-c/json.h>

#include "array/array.h"
#include "control/control.h"

static const char *const kind_names[GRAID_IO_KINDS] = {
	[GRAID_IO_READ] = "read", [GRAID_IO_WRITE] = "write", [GRAID_IO_FLUSH] = "flush",
	[GRAID_IO_DISCARD] = "discard",
};

/* STATSOBJ (docs/CONTROL.md); latency buckets only while histograms are kept. */
static struct json_object *stats_obj(const struct graid_io_stats *s, bool hist)
{
	struct json_object *o = json_object_new_object();

	control_json_add(o, "since_ns", json_object_new_uint64(s->since_ns));
	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		const struct graid_io_counts *c = &s->io[k];
		struct json_object *ko = json_object_new_object();

		control_json_add(ko, "ops", json_object_new_uint64(c->ops));
		control_json_add(ko, "bytes", json_object_new_uint64(c->bytes));
		control_json_add(ko, "errors", json_object_new_uint64(c->errors));
		control_json_add(ko, "latency_ns_sum", json_object_new_uint64(c->latency_ns_sum));
		if (hist) {
			struct json_object *h = json_object_new_array();

			control_json_add(ko, "latency_hist_ns_sum",
			    json_object_new_uint64(c->latency_hist_ns_sum));

			for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
				control_json_push(h, json_object_new_uint64(c->latency[b]));
			control_json_add(ko, "latency", h);
		}
		control_json_add(o, kind_names[k], ko);
	}
	return o;
}

struct json_object *control_stats_json(struct graid_array *a)
{
	bool hist = atomic_load(&a->stats_flags) & GRAID_STATS_HISTOGRAMS;
	struct json_object *o = json_object_new_object(), *members = json_object_new_array();
	struct graid_io_stats s = { .struct_size = sizeof(s) };

	control_json_add(o, "histograms", json_object_new_boolean(hist));
	control_json_add(o, "slow_ms", json_object_new_uint64(atomic_load(&a->slow_ns) / 1000000u));
	if (graid_array_stats(a, -1, &s) == 0)
		control_json_add(o, "array", stats_obj(&s, hist));
	/* Roles, then the hot spares: the numbers graid_array_stats() takes. */
	for (int i = 0;; i++) {
		struct graid_io_stats ms = { .struct_size = sizeof(ms) };
		struct graid_member_info mi = { .struct_size = sizeof(mi) };
		struct json_object *m;

		if (graid_array_stats(a, i, &ms))
			break;
		m = stats_obj(&ms, hist);
		control_json_add(m, "role", json_object_new_int(i));
		control_json_add(m, "spare", json_object_new_boolean((unsigned)i >= a->nmembers));
		/* The device counted, as status names it; null for a role without one. */
		if (graid_array_member_info(a, (unsigned)i, &mi) == 0 && mi.path[0])
			control_json_add(m, "path", json_object_new_string(mi.path));
		else
			control_json_add(m, "path", NULL);
		control_json_push(members, m);
	}
	control_json_add(o, "members", members);
	return o;
}

int control_op_stats(struct graid_array *a, struct json_object *req, struct json_object *r,
		     char *why, size_t size)
{
	struct json_object *o, *h;

	/* "histograms": turn them on or off first (graidctl iostat -w), the slow limit kept. */
	if (json_object_object_get_ex(req, "histograms", &h)) {
		if (!json_object_is_type(h, json_type_boolean)) {
			snprintf(why, size, "stats: \"histograms\" must be true or false");
			return -EINVAL;
		}
		/* One atomic step: graid_array_set_stats_options() may set the flags meanwhile. */
		if (json_object_get_boolean(h))
			atomic_fetch_or(&a->stats_flags, GRAID_STATS_HISTOGRAMS);
		else
			atomic_fetch_and(&a->stats_flags, ~(unsigned)GRAID_STATS_HISTOGRAMS);
	}
	o = control_stats_json(a);
	if (!o) {
		snprintf(why, size, "stats: out of memory");
		return -ENOMEM;
	}
	/* The reply carries the object's fields at its top level, as status does. */
	json_object_object_foreach(o, key, val)
		control_json_add(r, key, json_object_get(val));
	json_object_put(o);
	return 0;
}
