/* SPDX-License-Identifier: MIT */
/* Events a consumer cannot miss: numbered and timed, streamed and replayed by subscribe. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
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
#include "healutil.h"
/* The one place every event is sent from: many events at once without many failures. */
#include "meta/events.h"

/* The ring's size as docs/CONTROL.md gives it. */
#define RING 256u

struct ev_env {
	struct au_set s;
	struct graid_array *a;
	char run[300];
	char sock[108];
};

/* A connection's lines, read in bulk (an event stream is long). */
struct conn {
	int fd;
	size_t len;
	char buf[1 << 16];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* RAID-6 of 5 members, its endpoint served from a run directory of the test's own. */
static void env_up(struct ev_env *e, unsigned idle_ms)
{
	struct graid_control_options o = { .struct_size = sizeof(o),
					   .idle_timeout_ms = idle_ms };

	au_make(&e->s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&e->s, 5, 6, 8192, &e->a), 0);
	snprintf(e->run, sizeof(e->run), "%s/run", e->s.dir);
	o.run_dir = e->run;
	cr_assert_eq(graid_array_control_start(e->a, &o), 0);
	cr_assert_eq(graid_array_control_path(e->a, e->run, e->sock, sizeof(e->sock)), 0);
}

static void env_down(struct ev_env *e)
{
	cr_assert_eq(graid_array_close(e->a), 0);
	rmdir(e->run);
	au_remove(&e->s);
}

static struct conn *conn_open(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct conn *c = calloc(1, sizeof(*c));

	cr_assert_not_null(c);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(c->fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s",
		     strerror(errno));
	return c;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c);
}

static void conn_send(struct conn *c, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);

		cr_assert_gt(k, 0, "send: %s", strerror(errno));
		s += k;
		n -= (size_t)k;
	}
}

/* The next line within @p ms, parsed; NULL when none came in time, or at EOF. */
static struct json_object *conn_line(struct conn *c, int ms)
{
	uint64_t until = mono_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		uint64_t now = mono_ns();
		ssize_t n;

		if (nl) {
			struct json_object *o;

			*nl = '\0';
			o = json_tokener_parse(c->buf);
			cr_assert_not_null(o, "a line that is not JSON: %s", c->buf);
			c->len -= (size_t)(nl + 1 - c->buf);
			memmove(c->buf, nl + 1, c->len);
			return o;
		}
		if (now >= until || poll(&p, 1, (int)((until - now) / 1000000u) + 1) <= 0)
			return NULL;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n <= 0)
			return NULL;
		c->len += (size_t)n;
		cr_assert(c->len < sizeof(c->buf) || memchr(c->buf, '\n', c->len),
			  "a line longer than the buffer");
	}
}

static struct json_object *conn_ask(struct conn *c, const char *line)
{
	struct json_object *r;

	conn_send(c, line);
	r = conn_line(c, 10000);
	cr_assert_not_null(r, "no reply to %s", line);
	return r;
}

/* After the server closed: EOF (or a reset) within 10 s, whatever it had sent read first. */
static bool conn_closed_by_peer(struct conn *c)
{
	uint64_t until = mono_ns() + 10000000000ull;
	char buf[4096];

	while (mono_ns() < until) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, key, &v), "no field '%s' in %s", key,
		  json_object_to_json_string(o));
	return v;
}

static uint64_t u64_of(struct json_object *o, const char *key)
{
	return json_object_get_uint64(field(o, key));
}

static const char *str_of(struct json_object *o, const char *key)
{
	return json_object_get_string(field(o, key));
}

/* subscribe (with since unless @p since is negative); the reply's seq. */
static uint64_t subscribe(struct conn *c, int64_t since)
{
	char line[128];
	struct json_object *r;
	uint64_t seq;

	if (since >= 0)
		snprintf(line, sizeof(line),
			 "{\"id\": 7, \"op\": \"subscribe\", \"since\": %" PRId64 "}\n", since);
	else
		snprintf(line, sizeof(line), "{\"id\": 7, \"op\": \"subscribe\"}\n");
	r = conn_ask(c, line);
	cr_assert(json_object_get_boolean(field(r, "ok")), "subscribe refused: %s",
		  json_object_to_json_string(r));
	cr_assert_eq(json_object_get_int(field(r, "id")), 7);
	seq = u64_of(r, "seq");
	json_object_put(r);
	return seq;
}

/* The next event line, which must come within 10 s. */
static struct json_object *next_event(struct conn *c)
{
	struct json_object *o = conn_line(c, 10000);

	cr_assert_not_null(o, "no event line within 10 s");
	return o;
}

struct seen {
	pthread_mutex_t lock;
	unsigned n;
	struct graid_event ev[64];
	uint64_t size_ok;
};

static void on_event(void *arg, const struct graid_event *ev)
{
	struct seen *s = arg;

	pthread_mutex_lock(&s->lock);
	if (ev->struct_size >= offsetof(struct graid_event, time_ns) + sizeof(ev->time_ns))
		s->size_ok++;
	if (s->n < 64)
		s->ev[s->n++] = *ev;
	pthread_mutex_unlock(&s->lock);
}

Test(control_events, callback_events_are_numbered_one_by_one_with_monotonic_time,
     .timeout = 120)
{
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ev_env e;
	uint64_t before, after;
	char *fresh;

	env_up(&e, 0);
	cr_assert_eq(graid_array_set_event_callback(e.a, on_event, &s), 0);
	before = mono_ns();
	cr_assert_eq(graid_array_fail_member(e.a, 3), 0);
	cr_assert_eq(graid_array_fail_member(e.a, 1), 0);
	fresh = heal_new_member(&e.s, "fresh");
	cr_assert_eq(graid_array_replace_member(e.a, 3, fresh), 0);
	cr_assert_eq(graid_array_rebuild(e.a, NULL, NULL), 0);
	after = mono_ns();
	cr_assert_eq(graid_array_set_event_callback(e.a, NULL, NULL), 0);

	/* Two failures, a rebuild started and done: at least four, numbered from 1. */
	cr_assert_geq(s.n, 4, "%u events", s.n);
	cr_assert_eq(s.size_ok, s.n, "struct_size does not reach time_ns");
	for (unsigned i = 0; i < s.n; i++) {
		cr_assert_eq(s.ev[i].seq, i + 1, "event %u has seq %" PRIu64, i, s.ev[i].seq);
		cr_assert_geq(s.ev[i].time_ns, before);
		cr_assert_leq(s.ev[i].time_ns, after);
		if (i)
			cr_assert_geq(s.ev[i].time_ns, s.ev[i - 1].time_ns, "time went back");
	}
	cr_assert_eq(s.ev[0].type, GRAID_EVENT_MEMBER_FAILED);
	cr_assert_eq(s.ev[0].member, 3);
	cr_assert_eq(s.ev[1].type, GRAID_EVENT_DEGRADED);
	cr_assert_eq(s.ev[2].type, GRAID_EVENT_MEMBER_FAILED);
	cr_assert_eq(s.ev[2].member, 1);
	env_down(&e);
}

Test(control_events, subscriber_sees_a_failure_made_through_another_connection,
     .timeout = 120)
{
	struct conn *sub, *op;
	struct json_object *ev, *r;
	struct ev_env e;
	uint64_t before;

	env_up(&e, 0);
	sub = conn_open(e.sock);
	cr_assert_eq(subscribe(sub, -1), 0, "no event yet: seq 0");
	/* Nothing comes before something happens. */
	cr_assert_null(conn_line(sub, 200));
	before = mono_ns();
	op = conn_open(e.sock);
	r = conn_ask(op, "{\"op\": \"fail\", \"role\": 2}\n");
	cr_assert(json_object_get_boolean(field(r, "ok")), "%s", json_object_to_json_string(r));
	json_object_put(r);

	ev = next_event(sub);
	cr_assert_str_eq(str_of(ev, "event"), "member-failed", "%s",
			 json_object_to_json_string(ev));
	cr_assert_eq(u64_of(ev, "seq"), 1);
	cr_assert_eq(json_object_get_int(field(ev, "member")), 2);
	cr_assert_eq(json_object_get_int(field(ev, "error")), 0);
	cr_assert_eq(u64_of(ev, "stripe"), 0);
	cr_assert_eq(u64_of(ev, "count"), 0);
	cr_assert_geq(u64_of(ev, "time_ns"), before);
	cr_assert_leq(u64_of(ev, "time_ns"), mono_ns());
	json_object_put(ev);
	conn_close(op);
	conn_close(sub);
	env_down(&e);
}

Test(control_events, since_replays_the_events_the_ring_holds, .timeout = 120)
{
	struct conn *sub;
	struct json_object *ev;
	struct ev_env e;

	env_up(&e, 0);
	cr_assert_eq(graid_array_fail_member(e.a, 4), 0);
	cr_assert_eq(graid_array_fail_member(e.a, 0), 0);
	array_event(e.a, GRAID_EVENT_SCRUB_MISMATCH, 1, 0, 77, 0);

	/* 1 member-failed, 2 degraded, 3 member-failed, 4 degraded, 5 scrub-mismatch. */
	sub = conn_open(e.sock);
	cr_assert_eq(subscribe(sub, 2), 5);
	ev = next_event(sub);
	cr_assert_eq(u64_of(ev, "seq"), 3, "%s", json_object_to_json_string(ev));
	cr_assert_str_eq(str_of(ev, "event"), "member-failed");
	cr_assert_eq(json_object_get_int(field(ev, "member")), 0);
	json_object_put(ev);
	ev = next_event(sub);
	cr_assert_eq(u64_of(ev, "seq"), 4, "%s", json_object_to_json_string(ev));
	cr_assert_str_eq(str_of(ev, "event"), "degraded");
	cr_assert_eq(u64_of(ev, "count"), 2);
	json_object_put(ev);
	ev = next_event(sub);
	cr_assert_eq(u64_of(ev, "seq"), 5);
	cr_assert_str_eq(str_of(ev, "event"), "scrub-mismatch");
	cr_assert_eq(u64_of(ev, "stripe"), 77);
	json_object_put(ev);
	/* Then only what happens next: nothing replayed twice. */
	cr_assert_null(conn_line(sub, 200));
	array_event(e.a, 99, -1, -5, 0, 0);
	ev = next_event(sub);
	cr_assert_eq(u64_of(ev, "seq"), 6);
	cr_assert_str_eq(str_of(ev, "event"), "event-99", "an unknown type by its number");
	cr_assert_eq(json_object_get_int(field(ev, "member")), -1);
	cr_assert_eq(json_object_get_int(field(ev, "error")), 5, "a positive errno");
	json_object_put(ev);
	conn_close(sub);

	/* since 0: everything from the first. */
	sub = conn_open(e.sock);
	cr_assert_eq(subscribe(sub, 0), 6);
	for (uint64_t i = 1; i <= 6; i++) {
		ev = next_event(sub);
		cr_assert_eq(u64_of(ev, "seq"), i);
		json_object_put(ev);
	}
	conn_close(sub);
	env_down(&e);
}

Test(control_events, since_older_than_the_ring_says_how_many_were_missed, .timeout = 120)
{
	const uint64_t total = RING + 100, since = 10, first_kept = total - RING + 1;
	struct conn *sub;
	struct json_object *ev;
	struct ev_env e;

	env_up(&e, 0);
	for (uint64_t i = 0; i < total; i++)
		array_event(e.a, GRAID_EVENT_BLOCK_REPAIRED, 2, 0, i, 1);
	sub = conn_open(e.sock);
	cr_assert_eq(subscribe(sub, (int64_t)since), total);
	ev = next_event(sub);
	cr_assert_str_eq(str_of(ev, "event"), "missed", "%s", json_object_to_json_string(ev));
	cr_assert_eq(u64_of(ev, "seq"), first_kept - 1);
	cr_assert_eq(u64_of(ev, "missed"), first_kept - 1 - since);
	json_object_put(ev);
	for (uint64_t seq = first_kept; seq <= total; seq++) {
		ev = next_event(sub);
		cr_assert_str_eq(str_of(ev, "event"), "block-repaired");
		cr_assert_eq(u64_of(ev, "seq"), seq);
		cr_assert_eq(u64_of(ev, "stripe"), seq - 1);
		json_object_put(ev);
	}
	cr_assert_null(conn_line(sub, 200));
	conn_close(sub);
	env_down(&e);
}

/*
 * A subscriber that reads nothing while far more events are sent than it could hold: the
 * array's writes and the other clients go on, and when it reads at last it gets what was
 * queued for it, then one line saying how many it missed, then the newest: the count adds
 * up, and what reached it is bounded (what the kernel's socket buffer and the reply limit
 * hold), not every event sent.
 */
Test(control_events, a_subscriber_that_does_not_read_stalls_nothing_and_stays_bounded,
     .timeout = 300)
{
	const uint64_t total = 100000;
	uint64_t want = 1, got_lines = 0, missed_lines = 0, lines_before_missed = 0;
	struct conn *sub, *other;
	struct json_object *r;
	struct ev_env e;
	uint8_t *buf = malloc(65536);

	env_up(&e, 0);
	sub = conn_open(e.sock);
	cr_assert_eq(subscribe(sub, -1), 0);
	other = conn_open(e.sock);
	memset(buf, 0x5a, 65536);
	for (uint64_t i = 1; i <= total; i++) {
		array_event(e.a, GRAID_EVENT_SCRUB_MISMATCH, 0, 0, i, 0);
		if (i % 5000 == 0) {
			uint64_t t = mono_ns();

			cr_assert_eq(graid_array_write(e.a, buf, 65536, (i / 5000) * 65536), 65536);
			cr_assert_lt(mono_ns() - t, 5000000000ull, "a write waited 5 s");
			r = conn_ask(other, "{\"op\": \"hello\"}\n");
			cr_assert(json_object_get_boolean(field(r, "ok")));
			json_object_put(r);
		}
	}
	/* Now it reads: every number accounted for, once. */
	while (want <= total) {
		struct json_object *ev = next_event(sub);
		const char *name = str_of(ev, "event");
		uint64_t seq = u64_of(ev, "seq");

		if (!strcmp(name, "missed")) {
			cr_assert_gt(u64_of(ev, "missed"), 0);
			cr_assert_eq(seq, want - 1 + u64_of(ev, "missed"), "%s",
				     json_object_to_json_string(ev));
			if (!missed_lines)
				lines_before_missed = got_lines;
			missed_lines++;
		} else {
			cr_assert_str_eq(name, "scrub-mismatch");
			cr_assert_eq(seq, want, "seq %" PRIu64 " where %" PRIu64 " was due", seq,
				     want);
			cr_assert_eq(u64_of(ev, "stripe"), seq);
			got_lines++;
		}
		want = seq + 1;
		json_object_put(ev);
	}
	cr_log_info("%" PRIu64 " events sent, %" PRIu64 " reached the subscriber (%" PRIu64
		    " before the first gap), %" PRIu64 " missed lines", total, got_lines,
		    lines_before_missed, missed_lines);
	cr_assert_geq(missed_lines, 1, "all %" PRIu64 " events reached a subscriber that did "
		      "not read: its queue grew with them", total);
	/* About 100 bytes a line: what was queued before the gap is a few MiB at most. */
	cr_assert_lt(lines_before_missed, (8u << 20) / 100, "%" PRIu64 " lines queued",
		     lines_before_missed);
	cr_assert_lt(got_lines, total);
	cr_assert_null(conn_line(sub, 200));
	conn_close(other);
	conn_close(sub);
	free(buf);
	env_down(&e);
}

Test(control_events, a_request_after_subscribe_closes_the_connection, .timeout = 120)
{
	struct conn *sub;
	struct json_object *r;
	struct ev_env e;

	env_up(&e, 0);
	sub = conn_open(e.sock);
	subscribe(sub, -1);
	conn_send(sub, "{\"op\": \"hello\"}\n");
	cr_assert(conn_closed_by_peer(sub), "a request after subscribe was served");
	conn_close(sub);

	/* The same in one send: the subscribe is answered, the request after it is not. */
	sub = conn_open(e.sock);
	conn_send(sub, "{\"op\": \"subscribe\"}\n{\"op\": \"status\"}\n");
	r = conn_line(sub, 10000);
	cr_assert_not_null(r);
	cr_assert(json_object_get_boolean(field(r, "ok")));
	cr_assert(json_object_object_get_ex(r, "seq", NULL));
	json_object_put(r);
	cr_assert(conn_closed_by_peer(sub), "a pipelined request after subscribe was served");
	conn_close(sub);
	env_down(&e);
}

Test(control_events, bad_since_is_refused_and_the_connection_stays, .timeout = 120)
{
	struct conn *c;
	struct json_object *r;
	struct ev_env e;

	env_up(&e, 0);
	c = conn_open(e.sock);
	r = conn_ask(c, "{\"op\": \"subscribe\", \"since\": -1}\n");
	cr_assert(!json_object_get_boolean(field(r, "ok")));
	cr_assert_eq(json_object_get_int(field(r, "errno")), EINVAL);
	cr_assert(strstr(str_of(r, "error"), "since"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	r = conn_ask(c, "{\"op\": \"hello\"}\n");
	cr_assert(json_object_get_boolean(field(r, "ok")), "not a subscriber: still served");
	json_object_put(r);
	conn_close(c);
	env_down(&e);
}

Test(control_events, the_idle_timeout_does_not_close_a_subscriber, .timeout = 120)
{
	struct conn *sub, *idle;
	struct json_object *ev;
	struct ev_env e;

	env_up(&e, 200);
	sub = conn_open(e.sock);
	subscribe(sub, -1);
	idle = conn_open(e.sock);
	usleep(800 * 1000);
	/* The other client, silent as long, was closed: the timeout is in force. */
	cr_assert(conn_closed_by_peer(idle));
	array_event(e.a, GRAID_EVENT_RESYNC_DONE, -1, 0, 0, 12);
	ev = next_event(sub);
	cr_assert_str_eq(str_of(ev, "event"), "resync-done");
	cr_assert_eq(u64_of(ev, "count"), 12);
	json_object_put(ev);
	conn_close(idle);
	conn_close(sub);
	env_down(&e);
}
