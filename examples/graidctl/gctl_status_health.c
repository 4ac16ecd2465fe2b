/* SPDX-License-Identifier: MIT */
/* graidctl status's drive health: the holder's watch's, or read from each drive by a look. */
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl_ctl.h"
#include "gctl_status.h"

/*
 * The holder's HEALTHOBJ shape (docs/CONTROL.md) for a sample this process read: no watch
 * judged it, so rules and verdict are null (a look has no history to judge against).
 */
static struct json_object *health_look_json(const struct graid_member_health *h)
{
	struct json_object *o = json_object_new_object(), *s = json_object_new_object();

	json_object_object_add(s, "source", json_object_new_string(h->source));
	json_object_object_add(s, "critical_warning", json_object_new_uint64(h->critical_warning));
	json_object_object_add(s, "available_spare", json_object_new_uint64(h->available_spare));
	json_object_object_add(s, "spare_threshold", json_object_new_uint64(h->spare_threshold));
	json_object_object_add(s, "percent_used", json_object_new_uint64(h->percent_used));
	json_object_object_add(s, "temperature_c", json_object_new_int(h->temperature_c));
	json_object_object_add(s, "media_errors", json_object_new_uint64(h->media_errors));
	json_object_object_add(s, "error_log_entries",
			       json_object_new_uint64(h->error_log_entries));
	json_object_object_add(s, "sampled_ns", json_object_new_uint64(h->sampled_ns));
	json_object_object_add(s, "age_ms", json_object_new_uint64(0));
	json_object_object_add(o, "sample", s);
	json_object_object_add(o, "rules", NULL);
	json_object_object_add(o, "verdict", NULL);
	return o;
}

void gctl_status_health_look(struct graid_array *a, struct status_view *v)
{
	for (unsigned i = 0; i < v->nroles; i++) {
		struct graid_member_health h = { .struct_size = sizeof(h) };
		struct status_member *m = &v->m[i];

		/* Files and other block devices answer -EOPNOTSUPP at once: no health log. */
		if (!m->ok || !m->mi.path[0] || graid_array_member_health(a, i, &h) != 0)
			continue;
		json_object_put(m->health);
		m->health = health_look_json(&h);
	}
}

/* A sample's age for people: milliseconds under a second, then seconds, minutes. */
static void health_age(uint64_t ms, char *out, size_t size)
{
	if (ms < 1000)
		snprintf(out, size, "%" PRIu64 " ms", ms);
	else if (ms < 120000)
		snprintf(out, size, "%" PRIu64 " s", ms / 1000);
	else
		snprintf(out, size, "%" PRIu64 " min", ms / 60000);
}

/* The rules holding, comma separated, after the verdict: "critical: io-errors". */
static void health_verdict(struct json_object *h, char *out, size_t size)
{
	struct json_object *rules;
	size_t n, used;

	if (!json_object_object_get_ex(h, "rules", &rules) ||
	    !json_object_is_type(rules, json_type_array)) {
		snprintf(out, size, "- (not judged: no watch)");
		return;
	}
	used = (size_t)snprintf(out, size, "%s", gctl_ctl_str(h, "verdict"));
	n = json_object_array_length(rules);
	for (size_t k = 0; k < n && used < size; k++)
		used += (size_t)snprintf(out + used, size - used, "%s%s", k ? "," : ": ",
					 json_object_get_string(json_object_array_get_idx(rules, k)));
}

void gctl_status_health_text(const struct status_view *v)
{
	bool any = false;

	for (unsigned i = 0; i < v->nroles; i++)
		any |= v->m[i].health != NULL;
	if (!any)
		return;
	printf("\nhealth (%s):\n", v->live ? "the holder's watch, its last sample" :
					     "read from each drive now");
	printf("%4s %-8s %5s %9s %5s %5s %10s %7s  %s\n", "role", "source", "crit", "spare/thr",
	       "used", "temp", "media-err", "age", "verdict");
	for (unsigned i = 0; i < v->nroles; i++) {
		struct json_object *h = v->m[i].health, *s = NULL;
		char spare[24] = "-", used[8] = "-", temp[12] = "-", crit[8] = "-", media[24] = "-";
		char age[24] = "-", verdict[160];

		if (!h)
			continue;
		if (json_object_object_get_ex(h, "sample", &s) &&
		    json_object_is_type(s, json_type_object)) {
			snprintf(crit, sizeof(crit), "0x%02x",
				 (unsigned)gctl_ctl_u64(s, "critical_warning"));
			snprintf(spare, sizeof(spare), "%u%%/%u%%",
				 (unsigned)gctl_ctl_u64(s, "available_spare"),
				 (unsigned)gctl_ctl_u64(s, "spare_threshold"));
			snprintf(used, sizeof(used), "%u%%", (unsigned)gctl_ctl_u64(s, "percent_used"));
			snprintf(temp, sizeof(temp), "%d C",
				 json_object_get_int(json_object_object_get(s, "temperature_c")));
			snprintf(media, sizeof(media), "%" PRIu64, gctl_ctl_u64(s, "media_errors"));
			health_age(gctl_ctl_u64(s, "age_ms"), age, sizeof(age));
		}
		health_verdict(h, verdict, sizeof(verdict));
		printf("%4u %-8s %5s %9s %5s %5s %10s %7s  %s\n", i,
		       s && json_object_is_type(s, json_type_object) ? gctl_ctl_str(s, "source") : "-",
		       crit, spare, used, temp, media, age, verdict);
	}
}
