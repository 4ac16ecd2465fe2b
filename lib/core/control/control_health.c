/* SPDX-License-Identifier: MIT */
/* HEALTHOBJ of a role or spare in the status op: the health watch's last sample and its rules. */
#include <errno.h>

#include <json-c/json.h>

#include "common/internal.h"
#include "control/control.h"
#include "jobs/health_policy.h"

static void health_put_u64(struct json_object *o, const char *key, uint64_t v)
{
	control_json_add(o, key, json_object_new_uint64(v));
}

/*
 * The sample's figures. From the watch's copy, never the drive: the endpoint's one thread
 * serves every client, and a drive whose command hangs must not hold them all.
 */
static struct json_object *health_sample_json(const struct graid_member_health *h,
					      uint64_t now)
{
	struct json_object *o = json_object_new_object();

	control_json_add(o, "source", json_object_new_string(h->source));
	health_put_u64(o, "critical_warning", h->critical_warning);
	health_put_u64(o, "available_spare", h->available_spare);
	health_put_u64(o, "spare_threshold", h->spare_threshold);
	health_put_u64(o, "percent_used", h->percent_used);
	control_json_add(o, "temperature_c", json_object_new_int(h->temperature_c));
	health_put_u64(o, "media_errors", h->media_errors);
	health_put_u64(o, "error_log_entries", h->error_log_entries);
	health_put_u64(o, "sampled_ns", h->sampled_ns);
	health_put_u64(o, "age_ms", now > h->sampled_ns ? (now - h->sampled_ns) / 1000000u : 0);
	return o;
}

struct json_object *control_health_json(struct graid_array *a, unsigned idx)
{
	struct graid_member_health h = { .struct_size = sizeof(h) };
	struct json_object *o, *list;
	uint32_t rules = 0;
	int rc = graid_array_member_health_last(a, idx, &h, &rules);

	if ((rc && rc != -ENODATA) || (rc == -ENODATA && !rules))
		return NULL;
	o = json_object_new_object();
	control_json_add(o, "sample", rc ? NULL : health_sample_json(&h, graid__now_ns()));
	list = json_object_new_array();
	for (uint32_t bit = 1; bit && bit <= rules; bit <<= 1)
		if (rules & bit)
			control_json_push(list, json_object_new_string(health_rule_name(bit)));
	control_json_add(o, "rules", list);
	control_json_add(o, "verdict", json_object_new_string(
		rules & HEALTH_RULES_CRITICAL ? "critical" : rules ? "warning" : "ok"));
	return o;
}
