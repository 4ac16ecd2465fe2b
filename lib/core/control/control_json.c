/* SPDX-License-Identifier: MIT */
/* Building the endpoint's JSON replies without ever asserting on json-c's out-of-memory NULL. */
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
