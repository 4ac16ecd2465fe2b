/* SPDX-License-Identifier: MIT */
/* graidctl's commands sent to the process that holds the array, through its control endpoint. */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

#define SERVED_POLL_S 0.5 /* between progress polls: a bar that moves, a holder barely asked */

static struct json_object *served_req(const char *op)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "op", json_object_new_string(op));
	return req;
}

/*
 * Send @p req (consumed). 0 with *@p reply; or -errno of the holder's refusal, @p why its
 * text. A transport failure or an op the holder lacks is said here and *@p ex set to the
 * exit code; a refusal is left to the caller (*@p ex 0), which words it as the unserved
 * command does.
 */
static int served_call(struct gctl_ctl *c, const char *cmd, struct json_object *req,
		       struct json_object **reply, char *why, size_t size, int *ex)
{
	const char *op = gctl_ctl_str(req, "op");
	char opname[32];
	int rc;

	snprintf(opname, sizeof(opname), "%s", op);
	rc = gctl_ctl_call(c, req, reply, why, size);
	json_object_put(req);
	*ex = GCTL_EXIT_OK;
	if (rc == 0)
		return 0;
	if (rc == -EINTR && gctl_ctl_interrupted)
		return rc;
	if (c->broken) {
		gctl_err("%s: the holder's control endpoint %s: %s", cmd, c->path, why);
		*ex = GCTL_EXIT_FAILED;
	} else if (gctl_ctl_unknown_op(rc, why)) {
		gctl_err("%s: the holder, %s, runs libgraid %s, which has no '%s' operation: "
			 "update its libgraid and restart it, or stop it and run this command on "
			 "the members", cmd, c->holder, c->version[0] ? c->version : "(unknown)",
			 opname);
		*ex = GCTL_EXIT_UNSUPPORTED;
	}
	return rc;
}

/* The holder's status reply, or NULL with the reason said and *@p ex the exit code. */
static struct json_object *served_status(struct gctl_ctl *c, const char *cmd, int *ex)
{
	struct json_object *st;
	char why[256];
	int rc = served_call(c, cmd, served_req("status"), &st, why, sizeof(why), ex);

	if (rc == 0)
		return st;
	if (*ex == GCTL_EXIT_OK && rc != -EINTR) {
		gctl_err("%s: the holder's status: %s", cmd, why);
		*ex = GCTL_EXIT_FAILED;
	}
	return NULL;
}

/* Role (or spare) @p role's object in a status reply, or NULL. */
static struct json_object *served_member(struct json_object *st, unsigned role)
{
	struct json_object *m;

	if (!json_object_object_get_ex(st, "members", &m) || !json_object_is_type(m, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(m); i++) {
		struct json_object *o = json_object_array_get_idx(m, i);

		if (gctl_ctl_u64(o, "role") == role)
			return o;
	}
	return NULL;
}

static const char *served_path_or_missing(struct json_object *m)
{
	const char *p = gctl_ctl_str(m, "path");

	return *p ? p : "missing";
}

/* 4 KiB blocks in every role's bad-block log, as the holder counts them. */
static uint64_t served_bad_blocks(struct json_object *st)
{
	uint64_t n = 0;

	for (unsigned r = 0; r < gctl_ctl_u64(st, "nmembers"); r++)
		n += gctl_ctl_u64(served_member(st, r), "bad_block_units");
	return n;
}

/*
 * A device path as the holder must see it: its cwd is not ours, so a relative path is made
 * absolute. An identity spec (a serial, an NVMe name) and a path that does not exist here
 * (the holder may see it; it says if not) go as given.
 */
static const char *served_path(const char *path, char *buf, size_t size)
{
	char cwd[PATH_MAX];

	if (graid_member_is_spec(path) || path[0] == '/')
		return path;
	if (realpath(path, buf) && strlen(buf) < size)
		return buf;
	if (getcwd(cwd, sizeof(cwd)) && (size_t)snprintf(buf, size, "%s/%s", cwd, path) < size)
		return buf;
	return path;
}

/* A role number within the holder's array, or the unserved command's usage error. */
static int served_role_ok(const char *cmd, struct json_object *st, unsigned idx)
{
	unsigned n = (unsigned)gctl_ctl_u64(st, "nmembers");

	if (idx < n)
		return GCTL_EXIT_OK;
	gctl_err("%s: member index %u is out of range: the array has roles 0..%u", cmd, idx, n - 1);
	return GCTL_EXIT_USAGE;
}

int gctl_served_fail(struct gctl_ctl *c, unsigned idx)
{
	struct json_object *st, *reply, *req;
	char path[256], why[256];
	int rc, ex;

	st = served_status(c, "fail", &ex);
	if (!st)
		return ex;
	ex = served_role_ok("fail", st, idx);
	snprintf(path, sizeof(path), "%s", served_path_or_missing(served_member(st, idx)));
	json_object_put(st);
	if (ex != GCTL_EXIT_OK)
		return ex;
	req = served_req("fail");
	json_object_object_add(req, "role", json_object_new_int64(idx));
	rc = served_call(c, "fail", req, &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex != GCTL_EXIT_OK)
			return ex;
		if (rc == -EBUSY)
			gctl_err("fail: member %u (%s): refused: the array cannot lose it without "
				 "losing data", idx, path);
		else
			gctl_err("fail: member %u (%s): %s", idx, path, graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	json_object_put(reply);
	printf("member %u (%s) marked failed\n", idx, path);
	/* A hot spare takes the role and rebuilds in the holder, which keeps the array open. */
	st = served_status(c, "fail", &ex);
	if (st) {
		struct json_object *m = served_member(st, idx);

		if (!strcmp(gctl_ctl_str(m, "state"), "rebuilding"))
			printf("hot spare %s took role %u; it rebuilds in the holder (pid %u): "
			       "'graidctl status' shows how far\n", gctl_ctl_str(m, "path"), idx,
			       c->holder_pid);
		json_object_put(st);
	}
	return GCTL_EXIT_OK;
}

/* The bar's line ended: the holder could not be followed further (the reason is said next). */
static void served_bar_end(struct gctl_progress *p)
{
	if (p->printed)
		putchar('\n');
	p->printed = 0;
	fflush(stdout);
}

/* The progress bar's line ended, and where the work goes on said. */
static int served_detach(struct gctl_progress *p, struct gctl_ctl *c, const char *what,
			 const char *how_to_stop)
{
	served_bar_end(p);
	printf("detached: the %s goes on in the holder (pid %u); 'graidctl status' shows it%s\n",
	       what, c->holder_pid, how_to_stop);
	fflush(stdout);
	return GCTL_EXIT_OK;
}

/*
 * Whether the holder's status says no background rebuild is running; *@p err: the negative
 * errno the last one stopped with (0: none). False when the reply does not say (a holder
 * whose library predates the "rebuild" object).
 */
static bool served_rebuild_idle(struct json_object *st, int *err)
{
	struct json_object *rb, *running, *e;

	*err = 0;
	if (!json_object_object_get_ex(st, "rebuild", &rb) ||
	    !json_object_is_type(rb, json_type_object) ||
	    !json_object_object_get_ex(rb, "running", &running))
		return false;
	if (json_object_object_get_ex(rb, "errno", &e) && json_object_get_int(e) > 0 &&
	    json_object_get_int(e) < 4096)
		*err = -json_object_get_int(e);
	return !json_object_get_boolean(running);
}

/*
 * Follow the rebuild of @p roles in the holder's status until each is active, with the
 * progress bar; Ctrl-C detaches. The exit code of `graidctl rebuild`.
 */
static int served_follow_rebuild(struct gctl_ctl *c, const char *cmd, const unsigned *roles,
				 unsigned n)
{
	struct gctl_progress p;
	int ex = GCTL_EXIT_OK;
	unsigned idle = 0; /* polls in a row that found no rebuild running in the holder */

	gctl_progress_init(&p, "rebuild");
	gctl_ctl_interrupted = 0;
	gctl_ctl_catch_sigint(1);
	for (;;) {
		struct json_object *st = served_status(c, cmd, &ex);
		uint64_t done = 0, total = 0;
		unsigned active = 0;
		int lost = -1, stopped = 0;

		if (!st) {
			if (gctl_ctl_interrupted)
				ex = served_detach(&p, c, "rebuild", "");
			else
				served_bar_end(&p);
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			struct json_object *m = served_member(st, roles[i]);
			const char *state = gctl_ctl_str(m, "state");

			done += gctl_ctl_u64(m, "catchup_done");
			total += gctl_ctl_u64(m, "catchup_total");
			active += !strcmp(state, "active");
			if (!strcmp(state, "failed") || !strcmp(state, "missing") || !m)
				lost = (int)roles[i];
		}
		if (total)
			gctl_progress_update(&p, done, total);
		/*
		 * Roles still rebuilding and no rebuild running for three polls in a row: the
		 * holder's rebuild stopped (its errno, or -ESRCH when it gave none) and nothing
		 * will finish them. A holder that does not say (an older library) is waited for.
		 */
		if (active < n && lost < 0 && served_rebuild_idle(st, &stopped))
			idle++;
		else
			idle = 0;
		if (idle >= 3)
			lost = -2;
		if (lost >= 0 || lost == -2 || active == n) {
			uint64_t bad = served_bad_blocks(st);

			json_object_put(st);
			gctl_progress_finish(&p, lost == -1);
			if (lost == -2) {
				gctl_err("%s: rebuild: the holder (pid %u) stopped rebuilding before "
					 "it finished: %s; 'graidctl status' shows the roles left, the "
					 "holder's log says why, 'graidctl rebuild' starts it again", cmd,
					 c->holder_pid, graid_strerror(stopped ? stopped : -ESRCH));
				ex = GCTL_EXIT_FAILED;
			} else if (lost >= 0) {
				gctl_err("%s: rebuild: role %d failed in the holder (pid %u) before its "
					 "rebuild finished: 'graidctl status' shows it; the holder's log "
					 "says why", cmd, lost, c->holder_pid);
				ex = GCTL_EXIT_FAILED;
			} else {
				ex = gctl_report_bad_block_count(cmd, bad);
			}
			break;
		}
		json_object_put(st);
		if (gctl_ctl_sleep(SERVED_POLL_S)) {
			ex = served_detach(&p, c, "rebuild", "");
			break;
		}
	}
	gctl_ctl_catch_sigint(0);
	return ex;
}

static int served_rate(struct gctl_ctl *c, const char *cmd, uint64_t rate)
{
	struct json_object *req = served_req("rebuild-rate"), *reply;
	char why[256];
	int rc, ex;

	json_object_object_add(req, "bytes_per_s", json_object_new_uint64(rate));
	rc = served_call(c, cmd, req, &reply, why, sizeof(why), &ex);
	if (rc == 0) {
		json_object_put(reply);
		return GCTL_EXIT_OK;
	}
	if (ex == GCTL_EXIT_OK) {
		gctl_err("%s: rate limit: %s", cmd, graid_strerror(rc));
		ex = GCTL_EXIT_FAILED;
	}
	return ex;
}

int gctl_served_rebuild(struct gctl_ctl *c, const char *cmd, uint64_t rate)
{
	struct json_object *reply, *list;
	unsigned roles[GRAID_MAX_MEMBERS], n = 0;
	char why[256];
	int rc, ex;

	if (rate) {
		ex = served_rate(c, cmd, rate);
		if (ex != GCTL_EXIT_OK)
			return ex;
	}
	rc = served_call(c, cmd, served_req("rebuild"), &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex != GCTL_EXIT_OK)
			return ex;
		gctl_err("%s: rebuild: %s%s", cmd, graid_strerror(rc), gctl_level_reason(rc));
		return GCTL_EXIT_FAILED;
	}
	if (json_object_object_get_ex(reply, "rebuilding", &list) &&
	    json_object_is_type(list, json_type_array))
		for (size_t i = 0; i < json_object_array_length(list) && n < GRAID_MAX_MEMBERS; i++)
			roles[n++] = (unsigned)json_object_get_uint64(json_object_array_get_idx(list, i));
	json_object_put(reply);
	return served_follow_rebuild(c, cmd, roles, n);
}

int gctl_served_replace(struct gctl_ctl *c, unsigned idx, const char *newpath, int rebuild,
			uint64_t rate)
{
	struct json_object *st, *reply, *req;
	char state[32], why[256], abs[PATH_MAX];
	int rc, ex;

	st = served_status(c, "replace", &ex);
	if (!st)
		return ex;
	ex = served_role_ok("replace", st, idx);
	snprintf(state, sizeof(state), "%s", gctl_ctl_str(served_member(st, idx), "state"));
	json_object_put(st);
	if (ex != GCTL_EXIT_OK)
		return ex;
	req = served_req("replace");
	json_object_object_add(req, "role", json_object_new_int64(idx));
	json_object_object_add(req, "path",
			       json_object_new_string(served_path(newpath, abs, sizeof(abs))));
	rc = served_call(c, "replace", req, &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex != GCTL_EXIT_OK)
			return ex;
		if (rc == -EBUSY)
			gctl_err("replace: member %u with %s: role %u is %s; only a failed or missing "
				 "role can be replaced (graidctl fail %u first)", idx, newpath, idx,
				 state, idx);
		else if (rc == -EEXIST)
			gctl_err("replace: member %u with %s: refused: %s is a member of this array "
				 "(the holder's log names its role), not a new device; it was not "
				 "written", idx, newpath, newpath);
		else
			gctl_err("replace: member %u with %s: %s%s", idx, newpath, graid_strerror(rc),
				 gctl_level_reason(rc));
		return GCTL_EXIT_FAILED;
	}
	json_object_put(reply);
	printf("%s is member %u%s\n", newpath, idx, rebuild ? ", rebuilding" : "");
	fflush(stdout);
	return rebuild ? gctl_served_rebuild(c, "replace", rate) : GCTL_EXIT_OK;
}

/* Follows a replace in service of role @p idx in the holder until its copy ends. */
static int served_follow_keep(struct gctl_ctl *c, unsigned idx, const char *newabs,
			      const char *old, uint64_t rate)
{
	struct gctl_progress p;
	int ex = GCTL_EXIT_OK;

	gctl_progress_init(&p, "replace");
	gctl_ctl_interrupted = 0;
	gctl_ctl_catch_sigint(1);
	for (;;) {
		struct json_object *st = served_status(c, "replace", &ex), *m;
		const char *state, *path;

		if (!st) {
			if (gctl_ctl_interrupted)
				ex = served_detach(&p, c, "replace", "");
			else
				served_bar_end(&p);
			break;
		}
		m = served_member(st, idx);
		if (gctl_ctl_bool(m, "replacing")) {
			if (gctl_ctl_u64(m, "replace_total"))
				gctl_progress_update(&p, gctl_ctl_u64(m, "replace_done"),
						     gctl_ctl_u64(m, "replace_total"));
			json_object_put(st);
			if (gctl_ctl_sleep(SERVED_POLL_S)) {
				ex = served_detach(&p, c, "replace", "");
				break;
			}
			continue;
		}
		state = gctl_ctl_str(m, "state");
		path = gctl_ctl_str(m, "path");
		/* A spare (no path given): done when the role has another device. */
		if (newabs ? !strcmp(path, newabs) : strcmp(path, old) != 0) {
			gctl_progress_finish(&p, !strcmp(state, "active"));
			if (!strcmp(state, "rebuilding")) {
				printf("member %u failed during the copy: %s takes the role, "
				       "rebuilding\n", idx, path);
				json_object_put(st);
				gctl_ctl_catch_sigint(0);
				return gctl_served_rebuild(c, "replace", rate);
			}
			printf("%s is member %u; the old member is let go at the holder's close\n",
			       path, idx);
		} else {
			gctl_progress_finish(&p, 0);
			gctl_err("replace: the copy of role %u stopped before it finished; the "
				 "member keeps its role ('graidctl status' shows it; the holder's log "
				 "says why)", idx);
			ex = GCTL_EXIT_FAILED;
		}
		json_object_put(st);
		break;
	}
	gctl_ctl_catch_sigint(0);
	return ex;
}

int gctl_served_replace_keep(struct gctl_ctl *c, unsigned idx, const char *newpath,
			     uint64_t rate)
{
	struct json_object *st, *reply, *req;
	char why[256], abs[PATH_MAX], old[256];
	const char *newabs = NULL;
	int rc, ex;

	st = served_status(c, "replace", &ex);
	if (!st)
		return ex;
	ex = served_role_ok("replace", st, idx);
	snprintf(old, sizeof(old), "%s", gctl_ctl_str(served_member(st, idx), "path"));
	json_object_put(st);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (rate && (ex = served_rate(c, "replace", rate)) != GCTL_EXIT_OK)
		return ex;
	req = served_req("replace-in-service");
	json_object_object_add(req, "role", json_object_new_int64(idx));
	if (strcmp(newpath, "spare")) {
		newabs = served_path(newpath, abs, sizeof(abs));
		json_object_object_add(req, "path", json_object_new_string(newabs));
	}
	rc = served_call(c, "replace", req, &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex != GCTL_EXIT_OK)
			return ex;
		gctl_err("replace: member %u with %s, in service: %s", idx, newpath, why);
		return GCTL_EXIT_FAILED;
	}
	json_object_put(reply);
	printf("copying member %u (%s) onto %s while it stays in service\n", idx, old, newpath);
	fflush(stdout);
	return served_follow_keep(c, idx, newabs, old, rate);
}

/* A SCRUBOBJ as the library's report. */
static void served_scrub_report(struct json_object *sc, struct graid_scrub_report *rep)
{
	struct json_object *named;

	rep->stripes_checked = gctl_ctl_u64(sc, "stripes_checked");
	rep->mismatches = gctl_ctl_u64(sc, "mismatches");
	rep->repaired = gctl_ctl_u64(sc, "repaired");
	rep->skipped = gctl_ctl_u64(sc, "skipped");
	rep->first_row = gctl_ctl_u64(sc, "first_row");
	rep->unused = gctl_ctl_u64(sc, "unused");
	rep->rewritten = gctl_ctl_u64(sc, "rewritten");
	rep->named = 0;
	if (!json_object_object_get_ex(sc, "named", &named) ||
	    !json_object_is_type(named, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(named) && rep->named < GRAID_SCRUB_NAMED;
	     i++) {
		struct json_object *o = json_object_array_get_idx(named, i), *m;

		rep->stripe[rep->named] = gctl_ctl_u64(o, "stripe");
		rep->member[rep->named] = json_object_object_get_ex(o, "member", &m) ?
					  json_object_get_int(m) : -1;
		rep->named++;
	}
}

/* The scrub's object in a reply ("scrub"), NULL when null or absent. */
static struct json_object *served_scrub_obj(struct json_object *reply)
{
	struct json_object *sc;

	if (!json_object_object_get_ex(reply, "scrub", &sc) ||
	    !json_object_is_type(sc, json_type_object))
		return NULL;
	return sc;
}

/* A scrub that ended in the holder, said as the unserved scrub says its end. */
static int served_scrub_end(struct gctl_ctl *c, struct json_object *sc, int repair, double t0,
			    struct gctl_progress *p)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	const char *state = gctl_ctl_str(sc, "state");
	struct json_object *st;
	int err = (int)gctl_ctl_u64(sc, "errno"), ex;

	if (!strcmp(state, "failed")) {
		if (err == EAGAIN) {
			if (p->printed)
				putchar('\n');
			gctl_scrub_degraded();
		} else {
			gctl_progress_finish(p, 0);
			gctl_err("scrub: %s%s", graid_strerror(-err), gctl_level_reason(-err));
		}
		return GCTL_EXIT_FAILED;
	}
	if (strcmp(state, "done")) {
		gctl_progress_finish(p, 0);
		gctl_err("scrub: stopped in the holder (pid %u) before it finished ('graidctl scrub "
			 "--stop'); 'graidctl scrub' resumes it", c->holder_pid);
		return GCTL_EXIT_FAILED;
	}
	gctl_progress_finish(p, 1);
	served_scrub_report(sc, &rep);
	gctl_scrub_print(&rep, repair, gctl_now() - t0);
	ex = gctl_scrub_exit(&rep);
	st = served_status(c, "scrub", &err);
	if (st && gctl_report_bad_block_count("scrub", served_bad_blocks(st)) != GCTL_EXIT_OK)
		ex = GCTL_EXIT_DEGRADED;
	json_object_put(st);
	return ex;
}

int gctl_served_scrub(struct gctl_ctl *c, int repair, int resume)
{
	struct json_object *req = served_req("scrub-start"), *reply;
	struct gctl_progress p;
	double t0 = gctl_now();
	char why[256];
	int rc, ex;

	json_object_object_add(req, "repair", json_object_new_boolean(repair));
	json_object_object_add(req, "resume", json_object_new_boolean(resume));
	rc = served_call(c, "scrub", req, &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex != GCTL_EXIT_OK)
			return ex;
		if (rc == -EAGAIN)
			gctl_scrub_degraded();
		else if (rc == -EBUSY)
			gctl_err("scrub: a scrub is already running in the holder (pid %u): 'graidctl "
				 "status' shows it, 'graidctl scrub --stop' stops it", c->holder_pid);
		else
			gctl_err("scrub: %s%s", graid_strerror(rc), gctl_level_reason(rc));
		return GCTL_EXIT_FAILED;
	}
	json_object_put(reply);
	gctl_progress_init(&p, "scrub");
	gctl_ctl_interrupted = 0;
	gctl_ctl_catch_sigint(1);
	for (;;) {
		struct json_object *sc;

		rc = served_call(c, "scrub", served_req("scrub-status"), &reply, why, sizeof(why),
				 &ex);
		if (rc == -EINTR && gctl_ctl_interrupted) {
			ex = served_detach(&p, c, "scrub", "; 'graidctl scrub --stop' stops it");
			break;
		}
		if (rc) {
			served_bar_end(&p);
			if (ex == GCTL_EXIT_OK) {
				gctl_err("scrub: the holder's scrub-status: %s", why);
				ex = GCTL_EXIT_FAILED;
			}
			break;
		}
		sc = served_scrub_obj(reply);
		if (sc && gctl_ctl_u64(sc, "total"))
			gctl_progress_update(&p, gctl_ctl_u64(sc, "done"), gctl_ctl_u64(sc, "total"));
		if (!sc || strcmp(gctl_ctl_str(sc, "state"), "running")) {
			if (sc) {
				ex = served_scrub_end(c, sc, repair, t0, &p);
			} else {
				served_bar_end(&p);
				gctl_err("scrub: the holder (pid %u) has no scrub to report: was its "
					 "endpoint restarted?", c->holder_pid);
				ex = GCTL_EXIT_FAILED;
			}
			json_object_put(reply);
			break;
		}
		json_object_put(reply);
		if (gctl_ctl_sleep(SERVED_POLL_S)) {
			ex = served_detach(&p, c, "scrub", "; 'graidctl scrub --stop' stops it");
			break;
		}
	}
	gctl_ctl_catch_sigint(0);
	return ex;
}

int gctl_served_scrub_stop(struct gctl_ctl *c)
{
	struct json_object *reply, *sc;
	char why[256], done[32], total[32];
	uint64_t d, t;
	int rc, ex;

	rc = served_call(c, "scrub", served_req("scrub-stop"), &reply, why, sizeof(why), &ex);
	if (rc) {
		if (ex == GCTL_EXIT_OK) {
			gctl_err("scrub: stopping the holder's scrub: %s", graid_strerror(rc));
			ex = GCTL_EXIT_FAILED;
		}
		return ex;
	}
	sc = served_scrub_obj(reply);
	if (!gctl_ctl_bool(reply, "stopped") || !sc) {
		printf("no scrub is running in the holder (pid %u)\n", c->holder_pid);
		json_object_put(reply);
		return GCTL_EXIT_OK;
	}
	d = gctl_ctl_u64(sc, "done");
	t = gctl_ctl_u64(sc, "total");
	gctl_size_format(d, done, sizeof(done));
	gctl_size_format(t, total, sizeof(total));
	/* The stop is bounded: the scrub may still be on its batch, or have just ended. */
	if (!strcmp(gctl_ctl_str(sc, "state"), "done"))
		printf("the holder's scrub (pid %u) finished before it could stop\n", c->holder_pid);
	else if (!strcmp(gctl_ctl_str(sc, "state"), "running"))
		printf("the holder's scrub (pid %u) was asked to stop at %.1f%% (%s of %s): it ends "
		       "after its current batch; 'graidctl scrub' resumes it there\n", c->holder_pid,
		       t ? 100.0 * (double)d / (double)t : 0.0, done, total);
	else
		printf("scrub stopped in the holder (pid %u) at %.1f%% (%s of %s); 'graidctl scrub' "
		       "resumes it there\n", c->holder_pid, t ? 100.0 * (double)d / (double)t : 0.0,
		       done, total);
	json_object_put(reply);
	return GCTL_EXIT_OK;
}

/*
 * Send @p op with the device @p path (made absolute: the holder's working directory is not
 * ours). 0, or the library's negative errno in the holder; *@p ex: an exit code when the
 * endpoint itself failed (said already), else GCTL_EXIT_OK.
 */
static int served_device_op(struct gctl_ctl *c, const char *op, const char *path, int *ex)
{
	struct json_object *req = served_req(op), *reply;
	char why[256], abs[PATH_MAX];
	int rc;

	json_object_object_add(req, "path",
			       json_object_new_string(served_path(path, abs, sizeof(abs))));
	rc = served_call(c, "spare", req, &reply, why, sizeof(why), ex);
	if (rc == 0)
		json_object_put(reply);
	return rc;
}

int gctl_served_spare_add(struct gctl_ctl *c, const char *path)
{
	int ex, rc = served_device_op(c, "spare-add", path, &ex);

	if (rc && ex != GCTL_EXIT_OK)
		return ex;
	if (rc == -EEXIST)
		gctl_err("spare: adding %s: refused: it is a member of this array (the holder's "
			 "log names its role); it was not written", path);
	else if (rc)
		gctl_err("spare: adding %s: %s%s", path, graid_strerror(rc), gctl_level_reason(rc));
	if (rc)
		return GCTL_EXIT_FAILED;
	printf("%s added as a hot spare\n", path);
	return GCTL_EXIT_OK;
}

int gctl_served_spare_remove(struct gctl_ctl *c, const char *path)
{
	int ex, rc = served_device_op(c, "spare-remove", path, &ex);

	if (rc && ex != GCTL_EXIT_OK)
		return ex;
	if (rc) {
		gctl_spare_remove_err(path, rc);
		return GCTL_EXIT_FAILED;
	}
	printf("%s removed from the hot spares\n", path);
	return GCTL_EXIT_OK;
}
