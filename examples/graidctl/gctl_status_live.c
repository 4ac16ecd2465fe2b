/* SPDX-License-Identifier: MIT */
/* graidctl status of a served array: the holder's live state, from its control endpoint. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"
#include "gctl_status.h"

/* A member state's name in a reply as enum graid_member_state; -1 unknown. */
static int status_state_value(const char *name)
{
	static const char *const names[] = { "active", "failed", "missing", "rebuilding",
					     "spare", "unreachable" };
	static const int values[] = { GRAID_MEMBER_ACTIVE, GRAID_MEMBER_FAILED,
				      GRAID_MEMBER_MISSING, GRAID_MEMBER_REBUILDING,
				      GRAID_MEMBER_SPARE, GRAID_MEMBER_UNREACHABLE };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return values[i];
	return -1;
}

/* A role's bad-block ranges from a holder's status, in place of the look's. */
static int status_live_bad(struct status_member *m, struct json_object *o)
{
	struct json_object *list;
	size_t n;

	free(m->bad);
	m->bad = NULL;
	m->nbad = 0;
	if (!json_object_object_get_ex(o, "bad_blocks", &list) ||
	    !json_object_is_type(list, json_type_array) || !(n = json_object_array_length(list)))
		return 0;
	m->bad = calloc(n, sizeof(*m->bad));
	if (!m->bad)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct json_object *b = json_object_array_get_idx(list, k), *off;
		struct graid_bad_block *d = &m->bad[m->nbad++];

		d->member_offset = gctl_ctl_u64(b, "member_offset");
		d->len = gctl_ctl_u64(b, "len");
		d->array_offset = json_object_object_get_ex(b, "array_offset", &off) &&
				  json_object_is_type(off, json_type_int) ?
				  json_object_get_uint64(off) : UINT64_MAX;
		d->flags = (gctl_ctl_bool(b, "lost") ? GRAID_BAD_BLOCK_LOST : 0) |
			   (gctl_ctl_bool(b, "unreadable") ? GRAID_BAD_BLOCK_UNREADABLE : 0);
	}
	return 0;
}

/* One role's (or spare's) live state from the holder over what the look saw of it. */
static int status_live_member(struct status_view *v, struct json_object *o)
{
	unsigned r = (unsigned)gctl_ctl_u64(o, "role");
	struct json_object *h;
	struct graid_member_info *mi;
	const char *path = gctl_ctl_str(o, "path");
	int state = status_state_value(gctl_ctl_str(o, "state"));

	if (r >= GRAID_MAX_MEMBERS || state < 0)
		return -EPROTO;
	mi = &v->m[r].mi;
	/* Another device in the role than the look found: nothing the look said of it holds. */
	if (!v->m[r].ok || strcmp(mi->path, path)) {
		memset(mi, 0, sizeof(*mi));
		mi->struct_size = sizeof(*mi);
		v->m[r].ok = 1;
	}
	mi->role = r;
	mi->state = state;
	snprintf(mi->path, sizeof(mi->path), "%s", path);
	snprintf(mi->identity, sizeof(mi->identity), "%s", gctl_ctl_str(o, "identity"));
	mi->direct_io = gctl_ctl_bool(o, "direct_io");
	mi->reads = gctl_ctl_u64(o, "reads");
	mi->writes = gctl_ctl_u64(o, "writes");
	mi->read_bytes = gctl_ctl_u64(o, "read_bytes");
	mi->write_bytes = gctl_ctl_u64(o, "write_bytes");
	mi->errors = gctl_ctl_u64(o, "errors");
	mi->outages = gctl_ctl_u64(o, "outages");
	mi->catchup_done = gctl_ctl_u64(o, "catchup_done");
	mi->catchup_total = gctl_ctl_u64(o, "catchup_total");
	mi->read_repaired = gctl_ctl_u64(o, "read_repaired");
	mi->checksum_errors = gctl_ctl_u64(o, "checksum_errors");
	mi->checksum_tag_errors = gctl_ctl_u64(o, "checksum_tag_errors");
	mi->checksum_lost_writes = gctl_ctl_u64(o, "checksum_lost_writes");
	mi->bad_blocks = gctl_ctl_u64(o, "bad_block_units");
	mi->replacing = gctl_ctl_bool(o, "replacing");
	snprintf(mi->replace_path, sizeof(mi->replace_path), "%s", gctl_ctl_str(o, "replace_path"));
	mi->replace_done = gctl_ctl_u64(o, "replace_done");
	mi->replace_total = gctl_ctl_u64(o, "replace_total");
	json_object_put(v->m[r].health);
	v->m[r].health = json_object_object_get_ex(o, "health", &h) &&
			 json_object_is_type(h, json_type_object) ? json_object_get(h) : NULL;
	if (r < v->info.nmembers)
		v->info.member_state[r] = (uint8_t)state;
	if (r >= v->nroles)
		v->nroles = r + 1;
	return status_live_bad(&v->m[r], o);
}

/* The holder's reshape (RESHAPEOBJ, docs/CONTROL.md); none when its library has none. */
static void status_live_reshape(struct graid_array_info *in, struct json_object *st)
{
	struct json_object *rs, *eta;

	if (!json_object_object_get_ex(st, "reshape", &rs) ||
	    !json_object_is_type(rs, json_type_object))
		return;
	in->reshaping = gctl_ctl_bool(rs, "reshaping");
	in->reshape_running = gctl_ctl_bool(rs, "running");
	in->reshape_error = -(int)gctl_ctl_u64(rs, "errno");
	in->reshape_done = gctl_ctl_u64(rs, "done_bytes");
	in->reshape_total = gctl_ctl_u64(rs, "total_bytes");
	in->reshape_bytes_per_sec = gctl_ctl_u64(rs, "bytes_per_s");
	in->reshape_eta_sec = json_object_object_get_ex(rs, "eta_s", &eta) &&
			      json_object_is_type(eta, json_type_int) ?
			      json_object_get_uint64(eta) : UINT64_MAX;
}

/* The holder's status reply over the look: the array as the process serving it has it. */
static int status_live(struct status_view *v, struct json_object *st)
{
	struct graid_array_info *in = &v->info;
	struct json_object *members;
	const char *state = gctl_ctl_str(st, "state");
	size_t n;
	int rc;

	if (!json_object_object_get_ex(st, "members", &members) ||
	    !json_object_is_type(members, json_type_array) ||
	    gctl_ctl_u64(st, "nmembers") > GRAID_MAX_MEMBERS)
		return -EPROTO;
	/* All checked before any is taken: a reply refused leaves the look's view whole. */
	n = json_object_array_length(members);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(members, i);

		if (gctl_ctl_u64(o, "role") >= GRAID_MAX_MEMBERS ||
		    status_state_value(gctl_ctl_str(o, "state")) < 0)
			return -EPROTO;
	}
	in->level = (int)gctl_ctl_u64(st, "level");
	in->size = gctl_ctl_u64(st, "size");
	in->chunk_bytes = (uint32_t)gctl_ctl_u64(st, "chunk_bytes");
	in->block_size = (uint32_t)gctl_ctl_u64(st, "block_size");
	snprintf(in->engine, sizeof(in->engine), "%s", gctl_ctl_str(st, "engine"));
	in->journal_bytes = gctl_ctl_u64(st, "journal_bytes");
	in->checksums = gctl_ctl_bool(st, "checksums");
	in->used_bytes = gctl_ctl_u64(st, "used_bytes");
	in->events = gctl_ctl_u64(st, "events");
	snprintf(in->owner_host, sizeof(in->owner_host), "%s", gctl_ctl_str(st, "owner_host"));
	in->owner_epoch = gctl_ctl_u64(st, "owner_epoch");
	in->nmembers = (unsigned)gctl_ctl_u64(st, "nmembers");
	in->nfailed = (unsigned)gctl_ctl_u64(st, "nfailed");
	in->unclean = gctl_ctl_bool(st, "unclean");
	in->resync_regions = gctl_ctl_u64(st, "resync_regions");
	if (gctl_ctl_u64(st, "holder_pid")) {
		in->holder_pid = (uint32_t)gctl_ctl_u64(st, "holder_pid");
		snprintf(in->holder, sizeof(in->holder), "%s", gctl_ctl_str(st, "holder"));
	}
	/* Spares the holder no longer has go; those it added since come with the reply. */
	for (unsigned r = in->nmembers; r < v->nroles; r++)
		v->m[r].ok = 0;
	v->nroles = in->nmembers < v->nroles ? in->nmembers : v->nroles;
	for (size_t i = 0; i < n; i++) {
		rc = status_live_member(v, json_object_array_get_idx(members, i));
		if (rc)
			return rc;
	}
	v->bad_bytes = gctl_ctl_u64(st, "bad_block_bytes");
	status_live_reshape(in, st);
	if (json_object_object_get_ex(st, "scrub", &members) &&
	    json_object_is_type(members, json_type_object))
		v->scrub = json_object_get(members);
	if (json_object_object_get_ex(st, "stats", &members) &&
	    json_object_is_type(members, json_type_object))
		v->stats = json_object_get(members);
	v->state = !strcmp(state, "degraded") ? "degraded" : !strcmp(state, "unclean") ?
		   "unclean" : "clean";
	v->live = 1;
	return 0;
}

void gctl_status_ask_holder(struct graid_array *a, struct status_view *v)
{
	struct json_object *req, *st;
	struct gctl_ctl c;
	char path[108], why[256];
	int rc;

	if (graid_array_control_path(a, NULL, path, sizeof(path)))
		return;
	gctl_ctl_init(&c);
	/* A status falls back to the look: a holder that does not answer soon is not waited for. */
	c.timeout_ms = 5000;
	rc = gctl_ctl_connect(&c, path, why, sizeof(why));
	if (rc == -ENOENT || rc == -ECONNREFUSED)
		return;
	if (rc == 0) {
		req = json_object_new_object();
		json_object_object_add(req, "op", json_object_new_string("status"));
		rc = gctl_ctl_call(&c, req, &st, why, sizeof(why));
		json_object_put(req);
		if (rc == 0) {
			rc = status_live(v, st);
			if (rc)
				snprintf(why, sizeof(why), "its status reply is not one graidctl reads");
			json_object_put(st);
		}
		gctl_ctl_close(&c);
	}
	if (rc)
		gctl_err("status: the holder's control endpoint %s: %s; shown as the members' "
			 "superblocks and the holder's lock record it", path, why);
}
