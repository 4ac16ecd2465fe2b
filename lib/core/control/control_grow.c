/* SPDX-License-Identifier: MIT */
/* The control endpoint's grow op, and the reshape's progress in status (docs/CONTROL.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "api/rebuild_rate.h"
#include "common/internal.h"
#include "control/control.h"

/* At most this many devices in one grow: the library takes at most 16 more roles an open. */
#define GROW_PATHS_MAX 16

/*
 * Field `paths`: a non-empty array of non-empty strings without a NUL, at most
 * GROW_PATHS_MAX; their C strings into @p paths (owned by @p req). -EINVAL with @p why.
 */
static int grow_paths(struct json_object *req, const char **paths, unsigned *n, char *why,
		      size_t size)
{
	struct json_object *list;
	size_t len;

	if (!json_object_object_get_ex(req, "paths", &list) ||
	    !json_object_is_type(list, json_type_array) ||
	    (len = json_object_array_length(list)) == 0 || len > GROW_PATHS_MAX) {
		snprintf(why, size, "field 'paths' must be an array of 1 to %d device paths",
			 GROW_PATHS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		struct json_object *o = json_object_array_get_idx(list, i);

		if (!json_object_is_type(o, json_type_string) ||
		    !*(paths[i] = json_object_get_string(o)) ||
		    strlen(paths[i]) != (size_t)json_object_get_string_len(o)) {
			snprintf(why, size, "field 'paths': entry %zu must be a non-empty string "
				 "without a NUL", i);
			return -EINVAL;
		}
	}
	*n = (unsigned)len;
	return 0;
}

int control_op_grow(struct graid_array *a, struct json_object *req, struct json_object *r,
		    char *why, size_t size)
{
	const char *paths[GROW_PATHS_MAX];
	struct graid_array_info in = { .struct_size = sizeof(in) };
	unsigned n = 0;
	int rc = grow_paths(req, paths, &n, why, size);

	bool paced = json_object_object_get_ex(req, "bytes_per_s", NULL);
	uint64_t rate = 0, was = 0, level = 0;

	if (rc == 0 && paced)
		rc = control_get_uint(req, "bytes_per_s", UINT64_MAX, &rate, why, size);
	/* Field `level` (optional): 6 turns a RAID-5 into a RAID-6 (GRAID_GROW_RAID6). */
	if (rc == 0 && json_object_object_get_ex(req, "level", NULL) &&
	    (rc = control_get_uint(req, "level", 6, &level, why, size)) == 0 && level != 6) {
		snprintf(why, size, "field 'level' must be 6 (a RAID-5 becoming a RAID-6)");
		rc = -EINVAL;
	}
	if (rc)
		return rc;
	/*
	 * The rate before the start, so that the first window is paced already; a refused
	 * grow puts the one in force back (a grow refused must change nothing).
	 */
	if (paced) {
		was = array_rebuild_rate(a);
		array_set_rebuild_rate(a, rate);
	}
	/* Started, not waited for: the endpoint serves one request at a time. */
	rc = graid_array_grow(a, paths, n, level == 6 ? GRAID_GROW_RAID6 : 0);
	if (rc) {
		if (paced)
			array_set_rebuild_rate(a, was);
		snprintf(why, size, "graid_array_grow: %s (the holder's log has the details)",
			 graid_strerror(rc));
		return rc;
	}
	control_json_add(r, "done", json_object_new_string("grow"));
	if (graid_array_info(a, &in) == 0) {
		control_json_add(r, "nmembers", json_object_new_uint64(in.nmembers));
		control_json_add(r, "reshape", control_reshape_json(&in));
	}
	return 0;
}

struct json_object *control_reshape_json(const struct graid_array_info *in)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	control_json_add(o, "reshaping", json_object_new_boolean(in->reshaping));
	control_json_add(o, "running", json_object_new_boolean(in->reshape_running));
	control_json_add(o, "errno", json_object_new_int(-in->reshape_error));
	control_json_add(o, "done_bytes", json_object_new_uint64(in->reshape_done));
	control_json_add(o, "total_bytes", json_object_new_uint64(in->reshape_total));
	control_json_add(o, "bytes_per_s", json_object_new_uint64(in->reshape_bytes_per_sec));
	/* Unknown (no rate yet, or not running): null. */
	if (in->reshape_running && in->reshape_eta_sec != UINT64_MAX)
		control_json_add(o, "eta_s", json_object_new_uint64(in->reshape_eta_sec));
	else
		control_json_add(o, "eta_s", NULL);
	return o;
}
