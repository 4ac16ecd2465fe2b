/* SPDX-License-Identifier: MIT */
/* The control endpoint's convert op: a metadata-only level change (docs/CONTROL.md). */
#include <errno.h>
#include <stdio.h>

#include <json-c/json.h>

#include "common/internal.h"
#include "control/control.h"

int control_op_convert(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	uint64_t level = 0;
	int rc = control_get_uint(req, "level", 10, &level, why, size);

	if (rc)
		return rc;
	/* Done before the reply: one superblock round with the array quiesced. */
	rc = graid_array_convert(a, (int)level, 0);
	if (rc) {
		snprintf(why, size, "graid_array_convert: %s (the holder's log has the details)",
			 graid_strerror(rc));
		return rc;
	}
	control_json_add(r, "done", json_object_new_string("convert"));
	if (graid_array_info(a, &in) == 0) {
		control_json_add(r, "level", json_object_new_int(in.level));
		control_json_add(r, "nmembers", json_object_new_uint64(in.nmembers));
	}
	return 0;
}
