/* SPDX-License-Identifier: MIT */
/* The control endpoint's grow op over its socket, and the reshape's progress in status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"

#define NOLD 3
#define CHUNK (64u * 1024)
#define BYTES (3ull << 20)

struct cg_env {
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	char run[300];
	char sock[108];
	int fd;
};

/* A RAID-@p level of three (and two files not in it), served, a client connected. */
static void cg_up_level(struct cg_env *e, int level)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_control_options o = { .struct_size = sizeof(o), .run_dir = e->run };

	au_make(&e->s, NOLD + 2, BYTES);
	cr_assert_eq(au_create(&e->s, NOLD, level, CHUNK, &e->a), 0);
	cr_assert_eq(graid_array_info(e->a, &info), 0);
	e->size = info.size;
	snprintf(e->run, sizeof(e->run), "%s/run", e->s.dir);
	cr_assert_eq(graid_array_control_start(e->a, &o), 0);
	cr_assert_eq(graid_array_control_path(e->a, e->run, e->sock, sizeof(e->sock)), 0);
	e->fd = cu_connect(e->sock);
	cr_assert_geq(e->fd, 0, "%s", strerror(-e->fd));
}

/* A RAID-0 of three, as cg_up_level(). */
static void cg_up(struct cg_env *e)
{
	cg_up_level(e, 0);
}

static void cg_down(struct cg_env *e)
{
	close(e->fd);
	cr_assert_eq(graid_array_close(e->a), 0);
	rmdir(e->run);
	au_remove(&e->s);
}

static uint64_t num(struct json_object *o, const char *key)
{
	return json_object_get_uint64(cu_field(o, key));
}

static bool flag(struct json_object *o, const char *key)
{
	return json_object_get_boolean(cu_field(o, key));
}

/* A grow request of @p n of the set's files from index @p first. */
static struct json_object *ask_grow(struct cg_env *e, unsigned first, unsigned n)
{
	char line[2048];
	int at = snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[");

	for (unsigned i = 0; i < n; i++)
		at += snprintf(line + at, sizeof(line) - (size_t)at, "%s\"%s\"", i ? "," : "",
			       e->s.paths[first + i]);
	snprintf(line + at, sizeof(line) - (size_t)at, "]}\n");
	return cu_ask(e->fd, line);
}

static void refused(struct cg_env *e, const char *req, int err)
{
	char line[700];
	struct json_object *r;

	snprintf(line, sizeof(line), "%s\n", req);
	r = cu_ask(e->fd, line);

	cr_assert(!flag(r, "ok"), "%s accepted", req);
	cr_assert_eq(json_object_get_int(cu_field(r, "errno")), err, "%s -> %s", req,
		     json_object_to_json_string(r));
	json_object_put(r);
}

Test(control_grow, grow_adds_the_devices_and_status_follows_the_move)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 256 * 1024 };
	struct cg_env e;
	struct json_object *r, *rs;
	bool seen_running = false;
	uint64_t t0;

	cg_up(&e);
	/* About three seconds: status is asked while it moves. */
	cr_assert_eq(graid_array_set_rebuild_options(e.a, &ro), 0);
	r = ask_grow(&e, NOLD, 1);
	cr_assert(flag(r, "ok"), "%s", json_object_to_json_string(r));
	cr_assert_str_eq(json_object_get_string(cu_field(r, "done")), "grow");
	cr_assert_eq(num(r, "nmembers"), NOLD + 1);
	rs = cu_field(r, "reshape");
	cr_assert(flag(rs, "reshaping"));
	cr_assert_eq(num(rs, "total_bytes"), e.size);
	json_object_put(r);
	t0 = cu_now_ms();
	for (;;) {
		cr_assert_lt(cu_now_ms() - t0, 30000, "the grow did not end in 30 s");
		r = cu_ask(e.fd, "{\"op\":\"status\"}\n");
		rs = cu_field(r, "reshape");
		if (!flag(rs, "reshaping")) {
			cr_assert_eq(num(r, "size"), e.size / NOLD * (NOLD + 1));
			cr_assert_eq(num(r, "nmembers"), NOLD + 1);
			cr_assert(json_object_get_type(cu_field(rs, "eta_s")) == json_type_null);
			json_object_put(r);
			break;
		}
		cr_assert_eq(num(r, "size"), e.size, "the old size while it moves");
		cr_assert_eq(num(rs, "total_bytes"), e.size);
		cr_assert_leq(num(rs, "done_bytes"), e.size);
		cr_assert_eq(num(rs, "errno"), 0);
		if (flag(rs, "running") && num(rs, "bytes_per_s")) {
			cr_assert(json_object_is_type(cu_field(rs, "eta_s"), json_type_int));
			seen_running = true;
		}
		json_object_put(r);
		usleep(100000);
	}
	cr_assert(seen_running, "status never showed the move running with a rate");
	cg_down(&e);
}

Test(control_grow, grow_refuses_bad_fields_and_devices)
{
	char line[600];
	struct cg_env e;

	cg_up(&e);
	refused(&e, "{\"op\":\"grow\"}", EINVAL);
	refused(&e, "{\"op\":\"grow\",\"paths\":[]}", EINVAL);
	refused(&e, "{\"op\":\"grow\",\"paths\":\"/dev/null\"}", EINVAL);
	refused(&e, "{\"op\":\"grow\",\"paths\":[\"\"]}", EINVAL);
	refused(&e, "{\"op\":\"grow\",\"paths\":[7]}", EINVAL);
	refused(&e, "{\"op\":\"grow\",\"paths\":[\"x\"],\"role\":1}", EINVAL);
	/* A member of the array: nothing written. */
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"]}", e.s.paths[1]);
	refused(&e, line, EEXIST);
	/* Still a RAID-0 of three, not reshaping. */
	{
		struct json_object *r = cu_ask(e.fd, "{\"op\":\"status\"}\n");

		cr_assert_eq(num(r, "nmembers"), NOLD);
		cr_assert(!flag(cu_field(r, "reshape"), "reshaping"));
		json_object_put(r);
	}
	cg_down(&e);
}

/*
 * A device given twice (graid.h: -EEXIST "one given twice"), and 17 paths (more than the op
 * takes): refused, nothing written, still not reshaping.
 */
Test(control_grow, grow_refuses_a_device_twice_and_too_many)
{
	char line[4096];
	struct json_object *r;
	struct cg_env e;
	int at;

	cg_up(&e);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\",\"%s\"]}",
		 e.s.paths[NOLD], e.s.paths[NOLD]);
	refused(&e, line, EEXIST);
	at = snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[");
	for (unsigned i = 0; i < 17; i++)
		at += snprintf(line + at, sizeof(line) - (size_t)at, "%s\"/nonexistent/d%u\"",
			       i ? "," : "", i);
	snprintf(line + at, sizeof(line) - (size_t)at, "]}\n");
	r = cu_ask(e.fd, line);
	cr_assert(!flag(r, "ok"));
	cr_assert_eq(json_object_get_int(cu_field(r, "errno")), EINVAL, "%s",
		     json_object_to_json_string(r));
	json_object_put(r);
	r = cu_ask(e.fd, "{\"op\":\"status\"}\n");
	cr_assert_eq(num(r, "nmembers"), NOLD);
	cr_assert(!flag(cu_field(r, "reshape"), "reshaping"));
	json_object_put(r);
	cg_down(&e);
}

/* Whether the holder's reshape ends within @p ms (status asked every 50 ms). */
static bool cg_ends_within(struct cg_env *e, uint64_t ms)
{
	uint64_t t0 = cu_now_ms();

	while (cu_now_ms() - t0 < ms) {
		struct json_object *r = cu_ask(e->fd, "{\"op\":\"status\"}\n");
		bool moving = flag(cu_field(r, "reshape"), "reshaping");

		json_object_put(r);
		if (!moving)
			return true;
		usleep(50000);
	}
	return false;
}

/*
 * Field bytes_per_s: a refused grow leaves the holder's rate as it was (the grow after it,
 * unpaced, ends at once: at 4 KiB/s it would take minutes); an accepted one moves at it.
 */
Test(control_grow, grow_paced_by_its_rate_and_a_refused_one_changes_no_rate)
{
	char line[700];
	struct json_object *r;
	struct cg_env e;

	cg_up(&e);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"bytes_per_s\":4096}",
		 e.s.paths[1]);
	refused(&e, line, EEXIST);
	refused(&e, "{\"op\":\"grow\",\"paths\":[\"x\"],\"bytes_per_s\":-1}", EINVAL);
	r = ask_grow(&e, NOLD, 1);
	cr_assert(flag(r, "ok"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert(cg_ends_within(&e, 20000), "the unpaced grow did not end: a refused grow's "
					      "rate stayed");
	/* 4 -> 5 of 3 MiB at 64 KiB/s a member written: about ten seconds. */
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"bytes_per_s\":65536}\n",
		 e.s.paths[NOLD + 1]);
	r = cu_ask(e.fd, line);
	cr_assert(flag(r, "ok"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert(!cg_ends_within(&e, 1500), "a grow at 64 KiB/s a member ended in 1.5 s");
	cg_down(&e);
}

/*
 * Field `level` 6: a RAID-5 of three becomes a RAID-6 of four (Q-last), the size kept;
 * refused on a RAID-0 (EOPNOTSUPP) and for any other level (EINVAL), nothing changed.
 */
Test(control_grow, grow_with_level_6_turns_a_raid5_into_a_raid6)
{
	char line[600];
	struct cg_env e;
	struct json_object *r;
	uint64_t t0;

	cg_up(&e);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"level\":6}",
		 e.s.paths[NOLD]);
	refused(&e, line, EOPNOTSUPP);
	cg_down(&e);
	cg_up_level(&e, 5);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"level\":5}",
		 e.s.paths[NOLD]);
	refused(&e, line, EINVAL);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"level\":\"6\"}",
		 e.s.paths[NOLD]);
	refused(&e, line, EINVAL);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\",\"%s\"],\"level\":6}",
		 e.s.paths[NOLD], e.s.paths[NOLD + 1]);
	refused(&e, line, EINVAL);
	snprintf(line, sizeof(line), "{\"op\":\"grow\",\"paths\":[\"%s\"],\"level\":6}\n",
		 e.s.paths[NOLD]);
	r = cu_ask(e.fd, line);
	cr_assert(flag(r, "ok"), "%s", json_object_to_json_string(r));
	cr_assert_eq(num(r, "nmembers"), NOLD + 1);
	json_object_put(r);
	t0 = cu_now_ms();
	for (;;) {
		cr_assert_lt(cu_now_ms() - t0, 30000, "the conversion did not end in 30 s");
		r = cu_ask(e.fd, "{\"op\":\"status\"}\n");
		cr_assert_eq(num(r, "size"), e.size, "the size is kept");
		if (!flag(cu_field(r, "reshape"), "reshaping")) {
			json_object_put(r);
			break;
		}
		json_object_put(r);
		usleep(20000);
	}
	{
		struct graid_array_info info = { .struct_size = sizeof(info) };

		cr_assert_eq(graid_array_info(e.a, &info), 0);
		cr_assert_eq(info.level, 6);
		cr_assert_eq(info.nmembers, NOLD + 1);
	}
	cg_down(&e);
}

/* The convert op: a Q-last RAID-6 back to the RAID-5 (graid_array_convert), refusals first. */
Test(control_grow, convert_turns_a_q_last_raid6_back_into_a_raid5)
{
	struct cg_env e;
	struct json_object *r;

	cg_up_level(&e, 5);
	refused(&e, "{\"op\":\"convert\"}", EINVAL);
	refused(&e, "{\"op\":\"convert\",\"level\":\"5\"}", EINVAL);
	refused(&e, "{\"op\":\"convert\",\"level\":11}", EINVAL);
	refused(&e, "{\"op\":\"convert\",\"level\":5}", EOPNOTSUPP); /* a RAID-5 already */
	cr_assert_eq(graid_array_grow(e.a, &e.s.paths[NOLD], 1, GRAID_GROW_RAID6 | GRAID_GROW_WAIT),
		     0);
	refused(&e, "{\"op\":\"convert\",\"level\":6}", EOPNOTSUPP);
	r = cu_ask(e.fd, "{\"op\":\"convert\",\"level\":5}\n");
	cr_assert(flag(r, "ok"), "%s", json_object_to_json_string(r));
	cr_assert_str_eq(json_object_get_string(cu_field(r, "done")), "convert");
	cr_assert_eq(num(r, "level"), 5);
	cr_assert_eq(num(r, "nmembers"), NOLD);
	json_object_put(r);
	r = cu_ask(e.fd, "{\"op\":\"status\"}\n");
	cr_assert_eq(num(r, "size"), e.size, "the size is kept");
	json_object_put(r);
	cg_down(&e);
}
