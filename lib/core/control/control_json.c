/* SPDX-License-Identifier: MIT */
/*
 * Building the endpoint's JSON replies without ever asserting on json-c's out-of-memory NULL,
 * and reading requests' fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include "control/control.h"

void control_json_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (o)
		json_object_object_add(o, key, v);
	else
		json_object_put(v);
}

void control_json_push(struct json_object *list, struct json_object *v)
{
	if (!list || json_object_array_add(list, v))
		json_object_put(v);
}

int control_get_uint(struct json_object *req, const char *key, uint64_t max, uint64_t *v,
		     char *why, size_t size)
{
	struct json_object *o;

	/*
	 * json-c saturates an integer past 64 bits to UINT64_MAX (INT64_MIN below): that value
	 * cannot be told from one too large, so it is never taken.
	 */
	max = max < UINT64_MAX ? max : UINT64_MAX - 1;
	if (!json_object_object_get_ex(req, key, &o) || !json_object_is_type(o, json_type_int) ||
	    json_object_get_int64(o) < 0 || (*v = json_object_get_uint64(o)) > max) {
		snprintf(why, size, "field '%s' must be an integer from 0 to %" PRIu64, key, max);
		return -EINVAL;
	}
	return 0;
}
