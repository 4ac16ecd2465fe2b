/* SPDX-License-Identifier: MIT */
/* The control endpoint's metrics op: the holder's graid_metrics_write() text (docs/CONTROL.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/internal.h"
#include "control/control.h"

int control_op_metrics(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size)
{
	struct json_object *v;
	const char *name = NULL;
	unsigned flags = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if (json_object_object_get_ex(req, "name", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    (size_t)json_object_get_string_len(v) != strlen(json_object_get_string(v))) {
			snprintf(why, size, "metrics: \"name\" must be a string");
			return -EINVAL;
		}
		name = json_object_get_string(v);
	}
	if (json_object_object_get_ex(req, "health", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(why, size, "metrics: \"health\" must be true or false");
			return -EINVAL;
		}
		flags |= json_object_get_boolean(v) ? 0 : GRAID_METRICS_NO_HEALTH;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		snprintf(why, size, "metrics: out of memory");
		return -ENOMEM;
	}
	rc = graid_metrics_write(f, &a, name ? &name : NULL, 1, flags);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		snprintf(why, size, "graid_metrics_write: %s%s", graid_strerror(rc),
			 rc == -EINVAL ? " (\"name\": empty, too long or a control character)" : "");
		free(text);
		return rc;
	}
	v = json_object_new_string_len(text, (int)len);
	free(text);
	if (!v) {
		snprintf(why, size, "metrics: out of memory");
		return -ENOMEM;
	}
	json_object_object_add(r, "text", v);
	return 0;
}
