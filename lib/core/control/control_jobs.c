/* SPDX-License-Identifier: MIT */
/* The control endpoint's ops for long-running work: rebuild, and a scrub started, followed and stopped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "common/internal.h"
#include "control/control.h"

/* json-c's adder, skipping what could not be made (out of memory: the library never aborts). */
static void put(struct json_object *o, const char *key, struct json_object *v)
{
	if (o)
		json_object_object_add(o, key, v);
	else
		json_object_put(v);
}

int control_op_rebuild(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct json_object *roles;
	int rc = graid_array_rebuild_start(a);

	(void)req;
	if (rc == 0)
		rc = graid_array_info(a, &in);
	if (rc) {
		snprintf(why, size, "graid_array_rebuild_start: %s (the holder's log has the "
			 "details)", graid_strerror(rc));
		return rc;
	}
	/* What the background rebuild has in hand now: its progress is in status. */
	roles = json_object_new_array();
	for (unsigned i = 0; i < in.nmembers; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };
		struct json_object *n;

		if (graid_array_member_info(a, i, &mi) || mi.state != GRAID_MEMBER_REBUILDING)
			continue;
		n = json_object_new_int((int)i);
		if (!roles || json_object_array_add(roles, n))
			json_object_put(n);
	}
	put(r, "rebuilding", roles);
	return 0;
}

/* An optional boolean field: 0 (absent: false), or -EINVAL naming it. */
static int get_flag(struct json_object *req, const char *key, bool *v, char *why, size_t size)
{
	struct json_object *o;

	*v = false;
	if (!json_object_object_get_ex(req, key, &o))
		return 0;
	if (!json_object_is_type(o, json_type_boolean)) {
		snprintf(why, size, "field '%s' must be true or false", key);
		return -EINVAL;
	}
	*v = json_object_get_boolean(o);
	return 0;
}

/*
 * What graid_array_scrub() would refuse at once, asked before its thread starts so that the
 * reply says it: -EOPNOTSUPP RAID-0, -EAGAIN a role of a level whose every stripe uses every
 * role is neither active nor being rebuilt (RAID-10 still has the pairs that are whole).
 */
static int scrub_refused(struct graid_array *a, char *why, size_t size)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	int rc = graid_array_info(a, &in);

	if (rc) {
		snprintf(why, size, "graid_array_info: %s", graid_strerror(rc));
		return rc;
	}
	if (in.level == 0) {
		snprintf(why, size, "graid_array_scrub: RAID-0 has no redundancy to compare");
		return -EOPNOTSUPP;
	}
	for (unsigned i = 0; in.level != 10 && i < in.nmembers; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		if (graid_array_member_info(a, i, &mi) == 0 && mi.state != GRAID_MEMBER_ACTIVE &&
		    mi.state != GRAID_MEMBER_REBUILDING) {
			snprintf(why, size, "graid_array_scrub: role %u is %s: no stripe has every "
				 "member to compare (replace and rebuild first)", i,
				 member_state_name(mi.state));
			return -EAGAIN;
		}
	}
	return 0;
}

int control_op_scrub_start(struct graid_array *a, struct json_object *req,
			   struct json_object *r, char *why, size_t size)
{
	struct control_scrub *s = a->control_scrub;
	bool repair, resume;
	int rc = get_flag(req, "repair", &repair, why, size);

	if (rc == 0)
		rc = get_flag(req, "resume", &resume, why, size);
	if (rc == 0)
		rc = scrub_refused(a, why, size);
	if (rc)
		return rc;
	rc = control_scrub_start(s, (repair ? GRAID_SCRUB_REPAIR : 0) |
				    (resume ? GRAID_SCRUB_RESUME : 0));
	if (rc == -EBUSY)
		snprintf(why, size, "a scrub started through this endpoint is still running "
			 "(scrub-stop ends it)");
	else if (rc)
		snprintf(why, size, "cannot start the scrub's thread: %s", graid_strerror(rc));
	if (rc)
		return rc;
	put(r, "scrub", control_scrub_json(s));
	return 0;
}

int control_op_scrub_stop(struct graid_array *a, struct json_object *req,
			  struct json_object *r, char *why, size_t size)
{
	struct control_scrub *s = a->control_scrub;
	bool stopped;

	(void)req, (void)why, (void)size;
	control_scrub_stop(s, &stopped);
	put(r, "stopped", json_object_new_boolean(stopped));
	put(r, "scrub", control_scrub_json(s));
	return 0;
}

int control_op_scrub_status(struct graid_array *a, struct json_object *req,
			    struct json_object *r, char *why, size_t size)
{
	(void)req, (void)why, (void)size;
	put(r, "scrub", control_scrub_json(a->control_scrub));
	return 0;
}
