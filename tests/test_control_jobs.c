/* SPDX-License-Identifier: MIT */
/* The control endpoint's long-running work over its socket: rebuild, scrub start/stop/status, spare-remove. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"
#include "healutil.h"
#include "testutil.h"

/* RAID-6 of 5 members, 4 KiB chunks: 1024 member rows, scrubbed in batches of a few hundred. */
#define CJ_MEMBERS 5
#define CJ_CHUNK 4096u
#define CJ_ROWS ((4u << 20) / CJ_CHUNK)
#define CJ_DATA_OFFSET (1u << 20)

struct cj_env {
	struct au_set s;
	struct graid_array *a;
	char run[300];
	char sock[108];
	int fd;
};

static void cj_serve(struct cj_env *e)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .run_dir = e->run };

	cr_assert_eq(graid_array_control_start(e->a, &o), 0);
	cr_assert_eq(graid_array_control_path(e->a, e->run, e->sock, sizeof(e->sock)), 0);
	e->fd = cu_connect(e->sock);
	cr_assert_geq(e->fd, 0, "%s", strerror(-e->fd));
}

/*
 * The array created and written whole (rows never written are not read by a scrub), then
 * opened again: each member behind "faulty:@p faulty:" when given (a modelled drive slow
 * enough that a scrub is still running when asked about), after @p between ran on the
 * closed member files (NULL: nothing). Served, and a client connected.
 */
static void cj_up(struct cj_env *e, const char *faulty, void (*between)(struct cj_env *))
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	char spec[CJ_MEMBERS][600];
	const char *paths[CJ_MEMBERS];

	if (faulty)
		tu_need_fault_injection();
	au_make(&e->s, CJ_MEMBERS, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&e->s, CJ_MEMBERS, 6, CJ_CHUNK, &e->a), 0);
	cr_assert_eq(graid_array_info(e->a, &info), 0);
	heal_fill(e->a, info.size, 5);
	cr_assert_eq(graid_array_close(e->a), 0);
	if (between)
		between(e);
	for (unsigned i = 0; i < CJ_MEMBERS; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:%s:%s", faulty ? faulty : "",
			 e->s.paths[i]);
		paths[i] = faulty ? spec[i] : e->s.paths[i];
	}
	cr_assert_eq(graid_array_open(paths, CJ_MEMBERS, NULL, &e->a), 0);
	snprintf(e->run, sizeof(e->run), "%s/run", e->s.dir);
	cj_serve(e);
}

static void cj_down(struct cj_env *e)
{
	close(e->fd);
	if (e->a)
		cr_assert_eq(graid_array_close(e->a), 0);
	rmdir(e->run);
	au_remove(&e->s);
}

/* One reply line within 10 s, parsed. */
static struct json_object *cj_ask(struct cj_env *e, const char *line)
{
	return cu_ask(e->fd, line);
}

static uint64_t num(struct json_object *o, const char *key)
{
	return json_object_get_uint64(cu_field(o, key));
}

static const char *str(struct json_object *o, const char *key)
{
	return json_object_get_string(cu_field(o, key));
}

/* A reply that must be ok, kept. */
static struct json_object *cj_ok(struct cj_env *e, const char *line)
{
	struct json_object *r = cj_ask(e, line);

	cr_assert(json_object_get_boolean(cu_field(r, "ok")), "%s -> %s", line,
		  json_object_to_json_string(r));
	return r;
}

static void cj_refused(struct cj_env *e, const char *line, int err, const char *words)
{
	struct json_object *r = cj_ask(e, line);

	cr_assert(!json_object_get_boolean(cu_field(r, "ok")), "%s was not refused: %s", line,
		  json_object_to_json_string(r));
	cr_assert_eq(json_object_get_int(cu_field(r, "errno")), err, "%s -> %s", line,
		     json_object_to_json_string(r));
	cr_assert(strstr(str(r, "error"), words), "'%s' not in %s", words,
		  json_object_to_json_string(r));
	json_object_put(r);
}

/* scrub-status until its state is no longer "running" (60 s at most): the last SCRUBOBJ. */
static struct json_object *cj_scrub_wait(struct cj_env *e)
{
	uint64_t until = cu_now_ms() + 60000;

	for (;;) {
		struct json_object *r = cj_ok(e, "{\"op\": \"scrub-status\"}\n");
		struct json_object *s = json_object_get(cu_field(r, "scrub"));

		json_object_put(r);
		cr_assert(json_object_is_type(s, json_type_object), "no scrub reported");
		if (strcmp(str(s, "state"), "running"))
			return s;
		json_object_put(s);
		cr_assert_lt(cu_now_ms(), until, "the scrub still runs after 60 s");
		usleep(20 * 1000);
	}
}

/* scrub-status until the running scrub has ended a batch (its progress past 0). */
static void cj_scrub_underway(struct cj_env *e)
{
	uint64_t until = cu_now_ms() + 20000;

	for (;;) {
		struct json_object *r = cj_ok(e, "{\"op\": \"scrub-status\"}\n");
		struct json_object *s = cu_field(r, "scrub");

		cr_assert_str_eq(str(s, "state"), "running", "%s", json_object_to_json_string(r));
		if (num(s, "done") > 0) {
			json_object_put(r);
			return;
		}
		json_object_put(r);
		cr_assert_lt(cu_now_ms(), until, "no batch of the scrub ended in 20 s");
		usleep(20 * 1000);
	}
}

/* Flip a byte of member 2's chunk of row 77, behind the array's back. */
static void cj_rot(struct cj_env *e)
{
	int fd = open(e->s.paths[2], O_RDWR);
	off_t off = (off_t)CJ_DATA_OFFSET + 77 * (off_t)CJ_CHUNK + 100;
	uint8_t b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

Test(control_jobs, scrub_start_runs_in_the_holder_and_scrub_status_reports_what_it_found,
     .timeout = 120)
{
	struct json_object *r, *s, *named;
	struct cj_env e;

	cj_up(&e, NULL, cj_rot);
	r = cj_ok(&e, "{\"op\": \"status\"}\n");
	cr_assert(json_object_is_type(cu_field(r, "scrub"), json_type_null), "%s",
		  json_object_to_json_string(r));
	json_object_put(r);
	r = cj_ok(&e, "{\"op\": \"scrub-status\"}\n");
	cr_assert(json_object_is_type(cu_field(r, "scrub"), json_type_null));
	json_object_put(r);
	cj_refused(&e, "{\"op\": \"scrub-start\", \"repair\": 1}\n", EINVAL, "'repair'");
	cj_refused(&e, "{\"op\": \"scrub-start\", \"fast\": true}\n", EINVAL, "'fast'");

	r = cj_ok(&e, "{\"op\": \"scrub-start\"}\n");
	cr_assert_str_eq(str(cu_field(r, "scrub"), "state"), "running");
	cr_assert_eq(json_object_get_boolean(cu_field(cu_field(r, "scrub"), "repair")), 0);
	json_object_put(r);
	s = cj_scrub_wait(&e);
	cr_assert_str_eq(str(s, "state"), "done", "%s", json_object_to_json_string(s));
	cr_assert_eq(num(s, "stripes_checked"), CJ_ROWS);
	cr_assert_eq(num(s, "mismatches"), 1);
	cr_assert_eq(num(s, "repaired"), 0);
	cr_assert_eq(num(s, "first_row"), 0);
	cr_assert_eq(num(s, "errno"), 0);
	cr_assert(json_object_is_type(cu_field(s, "error"), json_type_null));
	cr_assert_gt(num(s, "total"), 0);
	cr_assert_eq(num(s, "done"), num(s, "total"));
	named = cu_field(s, "named");
	cr_assert_eq(json_object_array_length(named), 1);
	cr_assert_eq(num(json_object_array_get_idx(named, 0), "stripe"), 77);
	cr_assert_eq(json_object_get_int(cu_field(json_object_array_get_idx(named, 0), "member")), 2);
	json_object_put(s);
	/* status carries the same object. */
	r = cj_ok(&e, "{\"op\": \"status\"}\n");
	cr_assert_str_eq(str(cu_field(r, "scrub"), "state"), "done");
	cr_assert_eq(num(cu_field(r, "scrub"), "mismatches"), 1);
	json_object_put(r);

	/* Repaired through the endpoint, then found clean. */
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\", \"repair\": true}\n"));
	s = cj_scrub_wait(&e);
	cr_assert_eq(num(s, "repaired"), 1, "%s", json_object_to_json_string(s));
	cr_assert_eq(json_object_get_boolean(cu_field(s, "repair")), 1);
	json_object_put(s);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	s = cj_scrub_wait(&e);
	cr_assert_eq(num(s, "mismatches"), 0, "%s", json_object_to_json_string(s));
	json_object_put(s);
	cj_down(&e);
}

Test(control_jobs, a_second_scrub_start_is_busy_and_scrub_stop_ends_it_for_resume,
     .timeout = 120)
{
	struct json_object *r, *s;
	struct cj_env e;

	/* 1 MB/s drives: 4 MiB a member, about four seconds of scrub, a second a batch. */
	cj_up(&e, "mbps=1", NULL);
	r = cj_ok(&e, "{\"op\": \"scrub-stop\"}\n");
	cr_assert_eq(json_object_get_boolean(cu_field(r, "stopped")), 0, "nothing was running");
	json_object_put(r);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	cj_refused(&e, "{\"op\": \"scrub-start\"}\n", EBUSY, "still running");
	/* Past its first batch, so that where it stops is past row 0. */
	cj_scrub_underway(&e);
	r = cj_ok(&e, "{\"op\": \"scrub-stop\"}\n");
	cr_assert_eq(json_object_get_boolean(cu_field(r, "stopped")), 1, "%s",
		     json_object_to_json_string(r));
	s = cu_field(r, "scrub");
	cr_assert_str_eq(str(s, "state"), "stopped", "%s", json_object_to_json_string(r));
	cr_assert_lt(num(s, "stripes_checked"), CJ_ROWS, "it ran to its end");
	cr_assert_eq(num(s, "errno"), 0);
	json_object_put(r);

	/* Resumed where it stopped, and run to the end. */
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\", \"resume\": true}\n"));
	s = cj_scrub_wait(&e);
	cr_assert_str_eq(str(s, "state"), "done", "%s", json_object_to_json_string(s));
	cr_assert_gt(num(s, "first_row"), 0, "the resumed scrub began at row 0");
	cr_assert_eq(num(s, "first_row") + num(s, "stripes_checked"), CJ_ROWS);
	json_object_put(s);
	cj_down(&e);
}

static uint64_t cj_reads(struct graid_array *a)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < CJ_MEMBERS; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, i, &mi), 0);
		n += mi.reads;
	}
	return n;
}

Test(control_jobs, control_stop_ends_a_running_scrub_before_it_returns, .timeout = 120)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct cj_env e;
	uint64_t t0, reads;

	cj_up(&e, "mbps=1", NULL);
	reads = cj_reads(e.a);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	cj_scrub_underway(&e);
	cr_assert_gt(cj_reads(e.a), reads, "the scrub's reads are not counted: nothing to watch");
	t0 = cu_now_ms();
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	cr_assert_lt(cu_now_ms() - t0, 3000, "the stop waited for the whole scrub");
	/* Nothing reads the members any more: the scrub's thread is gone. */
	reads = cj_reads(e.a);
	usleep(500 * 1000);
	cr_assert_eq(cj_reads(e.a), reads, "the members are still being read");
	/* It was stopped, not finished: its checkpoint is where a resume begins. */
	cr_assert_eq(graid_array_scrub(e.a, GRAID_SCRUB_RESUME, &rep), 0);
	cr_assert_gt(rep.first_row, 0);
	cr_assert_lt(rep.first_row, CJ_ROWS);
	cj_down(&e);
}

Test(control_jobs, scrub_start_on_a_degraded_array_is_refused, .timeout = 120)
{
	struct cj_env e;

	cj_up(&e, NULL, NULL);
	json_object_put(cj_ok(&e, "{\"op\": \"fail\", \"role\": 3}\n"));
	cj_refused(&e, "{\"op\": \"scrub-start\"}\n", EAGAIN, "role 3 is failed");
	cj_down(&e);
}

Test(control_jobs, rebuild_after_replace_brings_the_role_active, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct json_object *r, *list;
	uint64_t until;
	char line[1024];
	struct cj_env e;

	cj_up(&e, NULL, NULL);
	r = cj_ok(&e, "{\"op\": \"rebuild\"}\n");
	cr_assert_eq(json_object_array_length(cu_field(r, "rebuilding")), 0, "nothing to rebuild");
	json_object_put(r);
	json_object_put(cj_ok(&e, "{\"op\": \"fail\", \"role\": 1}\n"));
	/* Slow enough that the reply finds it still rebuilding. */
	json_object_put(cj_ok(&e, "{\"op\": \"rebuild-rate\", \"bytes_per_s\": 2000000}\n"));
	snprintf(line, sizeof(line), "{\"op\": \"replace\", \"role\": 1, \"path\": \"%s\"}\n",
		 heal_new_member(&e.s, "fresh"));
	json_object_put(cj_ok(&e, line));
	r = cj_ok(&e, "{\"op\": \"rebuild\"}\n");
	list = cu_field(r, "rebuilding");
	cr_assert_eq(json_object_array_length(list), 1, "%s", json_object_to_json_string(r));
	cr_assert_eq(json_object_get_int(json_object_array_get_idx(list, 0)), 1);
	json_object_put(r);
	json_object_put(cj_ok(&e, "{\"op\": \"rebuild-rate\", \"bytes_per_s\": 0}\n"));
	until = cu_now_ms() + 60000;
	for (;;) {
		struct json_object *m;

		r = cj_ok(&e, "{\"op\": \"status\"}\n");
		m = json_object_array_get_idx(cu_field(r, "members"), 1);
		if (!strcmp(str(m, "state"), "active")) {
			cr_assert_eq(num(m, "catchup_done"), num(m, "catchup_total"));
			json_object_put(r);
			break;
		}
		json_object_put(r);
		cr_assert_lt(cu_now_ms(), until, "role 1 not active after 60 s");
		usleep(50 * 1000);
	}
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	heal_verify(e.a, info.size, NULL, 5, "after the rebuild op");
	cj_down(&e);
}

Test(control_jobs, spare_remove_takes_a_spare_off_and_refuses_what_is_none, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct json_object *r;
	char add[1024], rm[1024];
	struct cj_env e;
	const char *spare;

	cj_up(&e, NULL, NULL);
	spare = heal_new_member(&e.s, "spare");
	snprintf(add, sizeof(add), "{\"op\": \"spare-add\", \"path\": \"%s\"}\n", spare);
	snprintf(rm, sizeof(rm), "{\"op\": \"spare-remove\", \"path\": \"%s\"}\n", spare);
	cj_refused(&e, rm, ENOENT, "no hot spare");
	json_object_put(cj_ok(&e, add));
	cr_assert_eq(graid_array_member_info(e.a, CJ_MEMBERS, &mi), 0);
	r = cj_ok(&e, rm);
	cr_assert_str_eq(str(r, "done"), "spare-remove");
	json_object_put(r);
	cr_assert_eq(graid_array_member_info(e.a, CJ_MEMBERS, &mi), -EINVAL, "still a spare");
	r = cj_ok(&e, "{\"op\": \"status\"}\n");
	cr_assert_eq(json_object_array_length(cu_field(r, "members")), CJ_MEMBERS);
	json_object_put(r);
	cj_refused(&e, rm, ENOENT, "no hot spare");
	snprintf(rm, sizeof(rm), "{\"op\": \"spare-remove\", \"path\": \"%s\"}\n", e.s.paths[0]);
	cj_refused(&e, rm, ENOENT, "fail or replace");
	cj_refused(&e, "{\"op\": \"spare-remove\", \"path\": \"\"}\n", EINVAL, "'path'");
	cj_refused(&e, "{\"op\": \"spare-remove\"}\n", EINVAL, "'path'");
	cj_down(&e);
}

static struct graid_array *cj_self_stop_array;
static int cj_self_stop_rc = 1;

/* A scrub's mismatch event, run on the endpoint's scrub thread: it cannot stop that endpoint. */
static void cj_self_stop(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_SCRUB_MISMATCH)
		cj_self_stop_rc = graid_array_control_stop(cj_self_stop_array);
}

Test(control_jobs, a_stop_from_the_scrubs_own_thread_is_refused, .timeout = 120)
{
	struct json_object *s;
	struct cj_env e;

	cj_up(&e, NULL, cj_rot);
	cj_self_stop_array = e.a;
	cr_assert_eq(graid_array_set_event_callback(e.a, cj_self_stop, NULL), 0);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	s = cj_scrub_wait(&e);
	cr_assert_str_eq(str(s, "state"), "done");
	json_object_put(s);
	cr_assert_eq(cj_self_stop_rc, -EDEADLK);
	/* Still served. */
	json_object_put(cj_ok(&e, "{\"op\": \"hello\"}\n"));
	cr_assert_eq(graid_array_set_event_callback(e.a, NULL, NULL), 0);
	cj_down(&e);
}

static void *cj_stopper(void *arg)
{
	cr_assert_eq(graid_array_control_stop(arg), 0);
	return NULL;
}

/*
 * Two stops at once: the second waits for the first, and neither returns before the
 * endpoint's scrub has ended (its reads stop), since a close that follows frees the array.
 */
Test(control_jobs, a_second_stop_returns_only_once_the_scrub_has_ended, .timeout = 120)
{
	struct cj_env e;
	pthread_t t;
	uint64_t reads;

	cj_up(&e, "mbps=1", NULL);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	cj_scrub_underway(&e);
	cr_assert_eq(pthread_create(&t, NULL, cj_stopper, e.a), 0);
	usleep(30 * 1000); /* the first stop is joining by now */
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	reads = cj_reads(e.a);
	usleep(200 * 1000);
	cr_assert_eq(cj_reads(e.a), reads, "the scrub still read after a stop returned");
	pthread_join(t, NULL);
	cj_down(&e);
}

/* A close while another thread stops the endpoint: returns once the scrub is gone too. */
Test(control_jobs, a_close_during_another_threads_stop_waits_for_the_scrub, .timeout = 120)
{
	struct cj_env e;
	pthread_t t;

	cj_up(&e, "mbps=1", NULL);
	json_object_put(cj_ok(&e, "{\"op\": \"scrub-start\"}\n"));
	cj_scrub_underway(&e);
	cr_assert_eq(pthread_create(&t, NULL, cj_stopper, e.a), 0);
	usleep(30 * 1000);
	cr_assert_eq(graid_array_close(e.a), 0);
	e.a = NULL;
	pthread_join(t, NULL);
	cj_down(&e);
}

/*
 * replace-in-service: the role stays active while status shows its copy; then the new
 * device has the role, and the data is whole with two other members out.
 */
Test(control_jobs, replace_in_service_keeps_the_role_active_until_the_swap, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct json_object *r, *m;
	char line[1024], *fresh;
	bool seen = false;
	uint64_t until;
	struct cj_env e;

	cj_up(&e, NULL, NULL);
	cj_refused(&e, "{\"op\": \"replace-in-service\", \"role\": 1}\n", ENOENT, "no hot spare");
	json_object_put(cj_ok(&e, "{\"op\": \"rebuild-rate\", \"bytes_per_s\": 2000000}\n"));
	fresh = heal_new_member(&e.s, "fresh");
	snprintf(line, sizeof(line),
		 "{\"op\": \"replace-in-service\", \"role\": 1, \"path\": \"%s\"}\n", fresh);
	json_object_put(cj_ok(&e, line));
	cj_refused(&e, line, EALREADY, "");
	until = cu_now_ms() + 60000;
	for (;;) {
		r = cj_ok(&e, "{\"op\": \"status\"}\n");
		m = json_object_array_get_idx(cu_field(r, "members"), 1);
		cr_assert_str_eq(str(m, "state"), "active");
		if (!json_object_get_boolean(cu_field(m, "replacing"))) {
			cr_assert_str_eq(str(m, "path"), fresh);
			json_object_put(r);
			break;
		}
		seen = true;
		cr_assert_str_eq(str(m, "replace_path"), fresh);
		cr_assert_leq(num(m, "replace_done"), num(m, "replace_total"));
		json_object_put(r);
		cr_assert_lt(cu_now_ms(), until, "the replace did not end in 60 s");
		usleep(50 * 1000);
	}
	cr_assert(seen, "status never showed the copy");
	cr_assert_eq(graid_array_fail_member(e.a, 0), 0);
	cr_assert_eq(graid_array_fail_member(e.a, 2), 0);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	heal_verify(e.a, info.size, NULL, 5, "after replace-in-service");
	cj_down(&e);
}
