/* SPDX-License-Identifier: MIT */
/* The control endpoint's requests: one JSON line in, one JSON line out (docs/CONTROL.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/rebuild_rate.h"
#include "common/internal.h"
#include "control/control.h"
#include "format/superblock.h"

struct op {
	const char *name;
	const char *fields[4];   /* the request's fields besides "id" and "op" */
	int (*fn)(struct graid_array *a, struct json_object *req, struct json_object *reply,
		  char *why, size_t size);
};

static void put_u64(struct json_object *o, const char *key, uint64_t v)
{
	control_json_add(o, key, json_object_new_uint64(v));
}

static void put_str(struct json_object *o, const char *key, const char *v)
{
	control_json_add(o, key, json_object_new_string(v));
}

/* A role's bad-block log, every range (graidctl lists them all too); [] for a spare. */
static struct json_object *status_bad_blocks(struct graid_array *a, unsigned idx, bool role)
{
	struct json_object *list = json_object_new_array();
	struct graid_bad_block *b = NULL;
	int n = role ? graid_array_bad_blocks(a, idx, NULL, 0) : 0;

	int got = 0;

	/* The total, not what was copied: the log may have grown since it was counted. */
	if (n > 0 && (b = calloc((size_t)n, sizeof(*b))))
		got = graid_array_bad_blocks(a, idx, b, (unsigned)n);
	got = got < n ? got : n;
	for (int i = 0; b && i < got; i++) {
		struct json_object *o = json_object_new_object();

		put_u64(o, "member_offset", b[i].member_offset);
		put_u64(o, "len", b[i].len);
		if (b[i].array_offset != UINT64_MAX)
			put_u64(o, "array_offset", b[i].array_offset);
		else
			control_json_add(o, "array_offset", NULL);
		control_json_add(o, "lost",
				       json_object_new_boolean(b[i].flags & GRAID_BAD_BLOCK_LOST));
		control_json_add(o, "unreadable", json_object_new_boolean(
							b[i].flags & GRAID_BAD_BLOCK_UNREADABLE));
		control_json_push(list, o);
	}
	free(b);
	return list;
}

/* One role or spare, with graidctl status --json's names. */
static struct json_object *status_member(struct graid_array *a, bool role,
					 const struct graid_member_info *mi, uint64_t *bad)
{
	struct json_object *o = json_object_new_object();

	put_u64(o, "role", mi->role);
	put_str(o, "state", member_state_name(mi->state));
	if (mi->path[0])
		put_str(o, "path", mi->path);
	else
		control_json_add(o, "path", NULL);
	/* graidctl's devices given to its own open and left out: the holder's open is not one. */
	control_json_add(o, "left_out", NULL);
	put_str(o, "identity", mi->identity);
	control_json_add(o, "direct_io", json_object_new_boolean(mi->direct_io));
	put_u64(o, "reads", mi->reads);
	put_u64(o, "writes", mi->writes);
	put_u64(o, "read_bytes", mi->read_bytes);
	put_u64(o, "write_bytes", mi->write_bytes);
	put_u64(o, "errors", mi->errors);
	put_u64(o, "outages", mi->outages);
	put_u64(o, "timeouts", mi->timeouts);
	put_u64(o, "catchup_done", mi->catchup_done);
	put_u64(o, "catchup_total", mi->catchup_total);
	put_u64(o, "read_repaired", mi->read_repaired);
	put_u64(o, "checksum_errors", mi->checksum_errors);
	put_u64(o, "checksum_tag_errors", mi->checksum_tag_errors);
	put_u64(o, "checksum_lost_writes", mi->checksum_lost_writes);
	/* A replace in service of this role (graid_array_replace_start). */
	control_json_add(o, "replacing", json_object_new_boolean(mi->replacing));
	if (mi->replacing)
		put_str(o, "replace_path", mi->replace_path);
	else
		control_json_add(o, "replace_path", NULL);
	put_u64(o, "replace_done", mi->replace_done);
	put_u64(o, "replace_total", mi->replace_total);
	put_u64(o, "bad_block_units", mi->bad_blocks);
	*bad += mi->bad_blocks * 4096;
	control_json_add(o, "bad_blocks", status_bad_blocks(a, mi->role, role));
	control_json_add(o, "health", control_health_json(a, mi->role));
	return o;
}

static void status_array(struct json_object *r, const struct graid_array_info *in)
{
	char uuid[37];

	sb_uuid_format(in->uuid, uuid);
	put_str(r, "uuid", uuid);
	control_json_add(r, "level", json_object_new_int(in->level));
	put_u64(r, "size", in->size);
	put_u64(r, "chunk_bytes", in->chunk_bytes);
	put_u64(r, "block_size", in->block_size);
	put_str(r, "engine", in->engine);
	put_u64(r, "journal_bytes", in->journal_bytes);
	control_json_add(r, "checksums", json_object_new_boolean(in->checksums != 0));
	put_u64(r, "used_bytes", in->used_bytes);
	put_u64(r, "events", in->events);
	put_str(r, "owner_host", in->owner_host);
	put_u64(r, "owner_epoch", in->owner_epoch);
	put_u64(r, "nmembers", in->nmembers);
	put_u64(r, "nfailed", in->nfailed);
	control_json_add(r, "unclean", json_object_new_boolean(in->unclean));
	put_u64(r, "resync_regions", in->resync_regions);
	{
		struct json_object *rb = json_object_new_object();

		if (rb) {
			json_object_object_add(rb, "running",
					       json_object_new_boolean(in->rebuild_running));
			json_object_object_add(rb, "errno",
					       json_object_new_int(-in->rebuild_error));
		}
		control_json_add(r, "rebuild", rb);
	}
	control_json_add(r, "reshape", control_reshape_json(in));
	if (in->holder_pid) {
		put_u64(r, "holder_pid", in->holder_pid);
		put_str(r, "holder", in->holder);
	} else {
		control_json_add(r, "holder_pid", NULL);
		control_json_add(r, "holder", NULL);
	}
}

static int op_status(struct graid_array *a, struct json_object *req, struct json_object *r,
		     char *why, size_t size)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct json_object *members;
	const char *state;
	uint64_t bad = 0;
	int rc = graid_array_info(a, &in);

	(void)req;
	if (rc) {
		snprintf(why, size, "status: %s", graid_strerror(rc));
		return rc;
	}
	status_array(r, &in);
	state = in.nfailed ? "degraded" : in.unclean ? "unclean" : "clean";
	members = json_object_new_array();
	/* Roles, then the hot spares, in one list: graidctl's order. */
	for (unsigned i = 0;; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		if (graid_array_member_info(a, i, &mi))
			break;
		if (mi.state == GRAID_MEMBER_REBUILDING)
			state = "degraded";
		control_json_push(members, status_member(a, i < in.nmembers, &mi, &bad));
	}
	put_str(r, "state", state);
	put_u64(r, "bad_block_bytes", bad);
	control_json_add(r, "members", members);
	control_json_add(r, "scrub", control_scrub_json(a->control_scrub));
	control_json_add(r, "stats", control_stats_json(a));
	return 0;
}

static int op_hello(struct graid_array *a, struct json_object *req, struct json_object *r,
		    char *why, size_t size)
{
	(void)a, (void)req, (void)why, (void)size;
	control_json_add(r, "protocol", json_object_new_int(GRAID_CONTROL_PROTOCOL));
	put_str(r, "version", graid_version());
	return 0;
}

/* A string with no NUL in it: json-c's C string of one with \u0000 ends there. */
static bool string_whole(struct json_object *o)
{
	return strlen(json_object_get_string(o)) == (size_t)json_object_get_string_len(o);
}

static int get_path(struct json_object *req, const char **path, char *why, size_t size)
{
	struct json_object *o;

	if (!json_object_object_get_ex(req, "path", &o) || !json_object_is_type(o, json_type_string) ||
	    !*(*path = json_object_get_string(o)) || !string_whole(o)) {
		snprintf(why, size, "field 'path' must be a non-empty string without a NUL");
		return -EINVAL;
	}
	return 0;
}

/* What the library said, as the reply's error text. */
static int lib_result(int rc, struct json_object *r, char *why, size_t size, const char *what)
{
	if (rc)
		snprintf(why, size, "%s: %s (the holder's log has the details)", what,
			 graid_strerror(rc));
	else
		control_json_add(r, "done", json_object_new_string(what));
	return rc;
}

static int op_fail(struct graid_array *a, struct json_object *req, struct json_object *r,
		   char *why, size_t size)
{
	char what[64];
	uint64_t role;
	int rc = control_get_uint(req, "role", GRAID_MAX_MEMBERS - 1, &role, why, size);

	if (rc)
		return rc;
	snprintf(what, sizeof(what), "fail role %" PRIu64, role);
	return lib_result(graid_array_fail_member(a, (unsigned)role), r, why, size, what);
}

static int op_spare_add(struct graid_array *a, struct json_object *req, struct json_object *r,
			char *why, size_t size)
{
	const char *path;
	int rc = get_path(req, &path, why, size);

	if (rc)
		return rc;
	return lib_result(graid_array_add_spare(a, path), r, why, size, "spare-add");
}

static int op_spare_remove(struct graid_array *a, struct json_object *req, struct json_object *r,
			   char *why, size_t size)
{
	const char *path;
	int rc = get_path(req, &path, why, size);

	if (rc)
		return rc;
	rc = graid_array_remove_spare(a, path);
	if (rc == -ENOENT) {
		snprintf(why, size, "graid_array_remove_spare: no hot spare of this array is %.128s "
			 "(one that took a role is a member: fail or replace it)", path);
		return rc;
	}
	return lib_result(rc, r, why, size, "spare-remove");
}

static int op_replace(struct graid_array *a, struct json_object *req, struct json_object *r,
		      char *why, size_t size)
{
	const char *path;
	char what[64];
	uint64_t role;
	int rc = control_get_uint(req, "role", GRAID_MAX_MEMBERS - 1, &role, why, size);

	if (!rc)
		rc = get_path(req, &path, why, size);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "replace role %" PRIu64, role);
	return lib_result(graid_array_replace_member(a, (unsigned)role, path), r, why, size, what);
}

/* A replace in service: the role stays active while a copy of it fills the device. */
static int op_replace_in_service(struct graid_array *a, struct json_object *req,
				 struct json_object *r, char *why, size_t size)
{
	struct json_object *o;
	const char *path = NULL;
	char what[64];
	uint64_t role;
	int rc = control_get_uint(req, "role", GRAID_MAX_MEMBERS - 1, &role, why, size);

	/* No path: the array's last hot spare. */
	if (!rc && json_object_object_get_ex(req, "path", &o))
		rc = get_path(req, &path, why, size);
	if (rc)
		return rc;
	rc = graid_array_replace_start(a, (unsigned)role, path, 0);
	if (rc == -EBUSY) {
		snprintf(why, size, "graid_array_replace_start: role %" PRIu64 " is not active (a "
			 "failed, missing or unreachable role takes op replace)", role);
		return rc;
	}
	if (rc == -ENOENT && !path) {
		snprintf(why, size, "graid_array_replace_start: the array has no hot spare");
		return rc;
	}
	snprintf(what, sizeof(what), "replace-in-service role %" PRIu64, role);
	return lib_result(rc, r, why, size, what);
}

static int op_rebuild_rate(struct graid_array *a, struct json_object *req, struct json_object *r,
			   char *why, size_t size)
{
	uint64_t rate;
	int rc = control_get_uint(req, "bytes_per_s", UINT64_MAX, &rate, why, size);

	if (rc)
		return rc;
	/*
	 * Only the rate: reading the yield and the busy rate to pass them back through
	 * graid_array_set_rebuild_options() would undo a change the holder made between the
	 * read and the write.
	 */
	rc = lib_result(array_set_rebuild_rate(a, rate), r, why, size, "rebuild-rate");
	if (rc)
		return rc;
	put_u64(r, "bytes_per_s", rate);
	return 0;
}

static const struct op ops[] = {
	{ "hello", { NULL }, op_hello },
	{ "status", { NULL }, op_status },
	{ "fail", { "role", NULL }, op_fail },
	{ "spare-add", { "path", NULL }, op_spare_add },
	{ "replace", { "role", "path", NULL }, op_replace },
	{ "replace-in-service", { "role", "path", NULL }, op_replace_in_service },
	{ "rebuild-rate", { "bytes_per_s", NULL }, op_rebuild_rate },
	{ "subscribe", { "since", NULL }, op_subscribe },
	{ "rebuild", { NULL }, control_op_rebuild },
	{ "scrub-start", { "repair", "resume", NULL }, control_op_scrub_start },
	{ "scrub-stop", { NULL }, control_op_scrub_stop },
	{ "scrub-status", { NULL }, control_op_scrub_status },
	{ "metrics", { "name", "health", NULL }, control_op_metrics },
	{ "spare-remove", { "path", NULL }, op_spare_remove },
	{ "stats", { "histograms", NULL }, control_op_stats },
	{ "grow", { "paths", "bytes_per_s", "level", NULL }, control_op_grow },
	{ "convert", { "level", NULL }, control_op_convert },
};

static bool op_has_field(const struct op *op, const char *key)
{
	if (!strcmp(key, "id") || !strcmp(key, "op"))
		return true;
	for (unsigned i = 0; i < 3 && op->fields[i]; i++)
		if (!strcmp(op->fields[i], key))
			return true;
	return false;
}

/* The op the request names, or NULL with *err and @p why saying what is wrong. */
static const struct op *request_op(struct json_object *req, int *err, char *why, size_t size)
{
	struct json_object *o;
	const struct op *op = NULL;
	const char *name;

	if (!json_object_object_get_ex(req, "op", &o) ||
	    !json_object_is_type(o, json_type_string) || !string_whole(o)) {
		snprintf(why, size, "field 'op' must be a string naming the request");
		return NULL;
	}
	*err = EOPNOTSUPP;
	name = json_object_get_string(o);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, name))
			op = &ops[i];
	if (!op) {
		snprintf(why, size, "unknown op '%.64s'", name);
		return NULL;
	}
	*err = EINVAL;
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!op_has_field(op, key)) {
			snprintf(why, size, "op '%s' has no field '%.64s'", op->name, key);
			return NULL;
		}
	}
	return op;
}

/* The reply's line, malloc'd; NULL when out of memory (@p r NULL, or no text made). */
static char *reply_text(struct json_object *r)
{
	const char *s = r ? json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN) : NULL;
	size_t n = s ? strlen(s) : 0;
	char *out = s ? malloc(n + 2) : NULL;

	if (out) {
		memcpy(out, s, n);
		out[n] = '\n';
		out[n + 1] = '\0';
	}
	json_object_put(r);
	return out;
}

static struct json_object *reply_error(struct json_object *id, int err, const char *why)
{
	struct json_object *r = json_object_new_object();

	control_json_add(r, "id", id);
	control_json_add(r, "ok", json_object_new_boolean(0));
	control_json_add(r, "errno", json_object_new_int(err));
	put_str(r, "error", why);
	return r;
}

char *control_refusal(int err, const char *why)
{
	return reply_text(reply_error(NULL, err, why));
}

/* The line parsed as one JSON object and nothing after it; NULL with @p why otherwise. */
static struct json_object *request_parse(const char *line, char *why, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req;
	size_t len = strlen(line);

	if (!tok) {
		snprintf(why, size, "out of memory");
		return NULL;
	}
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (!req) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(why, size, "bad JSON: %s", e == json_tokener_continue ?
			 "the object is not complete on its line" : json_tokener_error_desc(e));
	} else if (!json_object_is_type(req, json_type_object)) {
		snprintf(why, size, "a request must be a JSON object");
	} else if (line[json_tokener_get_parse_end(tok) + strspn(line +
			json_tokener_get_parse_end(tok), " \t\r")] != '\0') {
		snprintf(why, size, "bad JSON: text after the request's object");
	} else {
		json_tokener_free(tok);
		return req;
	}
	json_object_put(req);
	json_tokener_free(tok);
	return NULL;
}

char *control_request(struct graid_array *a, const char *line)
{
	struct json_object *req, *id = NULL, *r;
	const struct op *op;
	char why[256];
	int rc, err = EINVAL;

	req = request_parse(line, why, sizeof(why));
	if (!req)
		return reply_text(reply_error(NULL, EINVAL, why));
	if (json_object_object_get_ex(req, "id", &id))
		id = json_object_get(id);
	op = request_op(req, &err, why, sizeof(why));
	if (!op) {
		json_object_put(req);
		return reply_text(reply_error(id, err, why));
	}
	r = json_object_new_object();
	if (!r) {
		/* Not served: its outcome could not be told. */
		json_object_put(req);
		json_object_put(id);
		return NULL;
	}
	control_json_add(r, "id", id ? json_object_get(id) : NULL);
	control_json_add(r, "ok", json_object_new_boolean(1));
	rc = op->fn(a, req, r, why, sizeof(why));
	json_object_put(req);
	if (rc) {
		json_object_put(r);
		return reply_text(reply_error(id, -rc, why));
	}
	json_object_put(id);
	return reply_text(r);
}
