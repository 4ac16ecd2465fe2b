/* SPDX-License-Identifier: MIT */
/*
 * The array's events as a consumer sees them: every state change of the fault model gives
 * its event within a second, in order, numbered with no gap; events sent during the open
 * wait in the handle's ring (graid_array_events); progress at each step exactly once.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define EV_MEMBER_BYTES ((1u << 20) + (8u << 20))
#define EV_CHUNK (64u * 1024)
#define EV_MAX 2048u
#define EV_ANY (-2)

/* Every event a consumer saw, by number: the callback's and those read from the ring. */
struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct graid_event ev[EV_MAX];
	bool have[EV_MAX];
	uint64_t cb_last, newest;
	bool cb_out_of_order;
};

struct want {
	int type, member;
};

static void rec_on_event(void *arg, const struct graid_event *ev)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->lock);
	if (ev->seq < EV_MAX) {
		r->ev[ev->seq] = *ev;
		r->have[ev->seq] = true;
	}
	if (r->cb_last && ev->seq != r->cb_last + 1)
		r->cb_out_of_order = true;
	r->cb_last = ev->seq;
	if (ev->seq > r->newest)
		r->newest = ev->seq;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* What the ring holds after @p since, added to what the callback saw. Returns how many. */
static int rec_read_ring(struct rec *r, struct graid_array *a, uint64_t since)
{
	static struct graid_event buf[256];
	uint64_t last;
	int n = graid_array_events(a, since, buf, 256, &last);

	cr_assert_geq(n, 0);
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(buf[i].seq, since + 1 + (uint64_t)i, "the ring skipped a number");
		cr_assert_lt(buf[i].seq, EV_MAX);
		if (!r->have[buf[i].seq]) {
			r->ev[buf[i].seq] = buf[i];
			r->have[buf[i].seq] = true;
		}
		if (buf[i].seq > r->newest)
			r->newest = buf[i].seq;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* A consumer starting now: the callback first, then what the ring kept from before it. */
static void rec_attach(struct rec *r, struct graid_array *a)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	cr_assert_eq(graid_array_set_event_callback(a, rec_on_event, r), 0);
	rec_read_ring(r, a, 0);
}

static void rec_dump(struct rec *r, uint64_t from);

/* The number of the first event of @p type (and @p member) after @p after; 0 none yet. */
static uint64_t rec_find(struct rec *r, int type, int member, uint64_t after)
{
	for (uint64_t s = after + 1; s <= r->newest && s < EV_MAX; s++)
		if (r->have[s] && r->ev[s].type == type &&
		    (member == EV_ANY || r->ev[s].member == member))
			return s;
	return 0;
}

/* Wait up to @p ms for such an event; its number, or a failed test. */
static uint64_t rec_wait(struct rec *r, int type, int member, uint64_t after, unsigned ms)
{
	struct timespec until;
	uint64_t s;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->lock);
	while (!(s = rec_find(r, type, member, after)))
		if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT) {
			s = rec_find(r, type, member, after);
			break;
		}
	if (!s)
		rec_dump(r, 1);
	pthread_mutex_unlock(&r->lock);
	cr_assert_neq(s, 0, "no %s event (member %d) after #%llu within %u ms",
		      graid_event_name(type), member, (unsigned long long)after, ms);
	return s;
}

/* Every number from 1 to the newest was seen, and the callback saw them in order. */
static void rec_check_gapless(struct rec *r)
{
	pthread_mutex_lock(&r->lock);
	cr_assert_lt(r->newest, EV_MAX);
	for (uint64_t s = 1; s <= r->newest; s++) {
		cr_assert(r->have[s], "event #%llu never seen", (unsigned long long)s);
		cr_assert_eq(r->ev[s].seq, s);
		if (s > 1)
			cr_assert_geq(r->ev[s].time_ns, r->ev[s - 1].time_ns);
	}
	cr_assert_not(r->cb_out_of_order, "the callback skipped or repeated a number");
	pthread_mutex_unlock(&r->lock);
}

static void rec_dump(struct rec *r, uint64_t from)
{
	for (uint64_t s = from; s <= r->newest && s < EV_MAX; s++)
		if (r->have[s])
			cr_log_info("#%llu %s member %d error %d count %llu", (unsigned long long)s,
				    graid_event_name(r->ev[s].type), r->ev[s].member, r->ev[s].error,
				    (unsigned long long)r->ev[s].count);
}

/* The events from @p from on, exactly: these types and members, nothing between. */
static void rec_expect(struct rec *r, uint64_t from, const struct want *w, unsigned n)
{
	pthread_mutex_lock(&r->lock);
	rec_dump(r, from);
	cr_assert_eq(r->newest + 1 - from, n, "%llu events from #%llu, expected %u",
		     (unsigned long long)(r->newest + 1 - from), (unsigned long long)from, n);
	for (unsigned i = 0; i < n; i++) {
		const struct graid_event *e = &r->ev[from + i];

		cr_assert_eq(e->type, w[i].type, "#%llu is %s, expected %s",
			     (unsigned long long)e->seq, graid_event_name(e->type),
			     graid_event_name(w[i].type));
		if (w[i].member != EV_ANY)
			cr_assert_eq(e->member, w[i].member, "#%llu (%s): member %d, expected %d",
				     (unsigned long long)e->seq, graid_event_name(e->type),
				     e->member, w[i].member);
	}
	pthread_mutex_unlock(&r->lock);
}

/*
 * The progress events of kind @p type from @p from to @p to: step, 2 step, ... and 100 last
 * (after 90 where the step is 30), once each.
 */
static void rec_expect_progress(struct rec *r, int type, uint64_t from, uint64_t to,
				unsigned step)
{
	unsigned next = step, last = 0;

	pthread_mutex_lock(&r->lock);
	for (uint64_t s = from; s <= to; s++)
		if (r->ev[s].type == type) {
			cr_assert_lt(last, 100, "progress #%llu after 100%%", (unsigned long long)s);
			last = next < 100 ? next : 100;
			cr_assert_eq(r->ev[s].count, last, "progress #%llu says %llu%%, expected %u%%",
				     (unsigned long long)s, (unsigned long long)r->ev[s].count, last);
			next += step;
		}
	pthread_mutex_unlock(&r->lock);
	cr_assert_eq(last, 100, "progress stopped at %u%%", last);
}

static void ev_fill(struct graid_array *a, uint64_t len)
{
	const size_t step = 256 * 1024;
	uint8_t *buf = malloc(step);

	cr_assert_not_null(buf);
	for (uint64_t off = 0; off < len; off += step) {
		memset(buf, (int)(off >> 18) + 1, step);
		cr_assert_eq(graid_array_write(a, buf, step, off), (ssize_t)step);
	}
	free(buf);
}

static int ev_state(struct graid_array *a, unsigned role)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, role, &mi), 0);
	return mi.state;
}

Test(events, names_follow_the_contract)
{
	static const char *const names[] = {
		NULL, "member-failed", "array-failed", "rebuild-started", "rebuild-done",
		"scrub-mismatch", "resync-done", "member-unreachable", "member-returned",
		"array-foreign", "bad-block", "block-repaired", "health-critical",
		"health-warning", "degraded", "optimal", "rebuild-progress", "rebuild-stopped",
		"scrub-started", "scrub-progress", "scrub-done", "resync-started",
		"spare-activated", "spares-missing", "journal-replayed", "member-slow",
		"checksum-error", "checksum-tag-error", "checksum-unverified",
		"checksum-lost-write", "reshape-started", "reshape-progress", "reshape-paused",
		"reshape-done",
	};

	cr_assert_null(graid_event_name(0));
	cr_assert_null(graid_event_name(-1));
	cr_assert_null(graid_event_name(34));
	for (int t = 1; t < 34; t++) {
		cr_assert_not_null(graid_event_name(t), "type %d has no name", t);
		cr_assert_str_eq(graid_event_name(t), names[t]);
	}
	cr_assert_eq(graid_array_events(NULL, 0, NULL, 0, NULL), -EINVAL);
	cr_assert_eq(graid_array_set_event_options(NULL, NULL), -EINVAL);
}

/*
 * A member failed by request with a hot spare: failed, degraded, the spare activated and
 * rebuilt, its progress at every 10 %, done, optimal again; then a consumer that starts
 * over mid-way reaches the same state from the ring and graid_array_info().
 */
Test(events, member_failed_spare_rebuilt_optimal, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_event_options eo = { .struct_size = sizeof(eo), .progress_percent = 10 };
	static struct rec r, late;
	struct graid_array *a;
	struct au_set s;
	uint64_t s0, s_done;

	au_make(&s, 4, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	ev_fill(a, info.size);
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	cr_assert_eq(graid_array_add_spare(a, s.path[3]), 0);
	rec_attach(&r, a);
	s0 = r.newest + 1;
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	/* Failing it and giving the spare its role happen in the call: their events too. */
	rec_wait(&r, GRAID_EVENT_REBUILD_STARTED, 1, s0 - 1, 1000);
	s_done = rec_wait(&r, GRAID_EVENT_OPTIMAL, -1, s0 - 1, 60000);
	cr_assert_eq(ev_state(a, 1), GRAID_MEMBER_ACTIVE);
	{
		struct want w[17] = {
			{ GRAID_EVENT_MEMBER_FAILED, 1 }, { GRAID_EVENT_DEGRADED, 1 },
			{ GRAID_EVENT_SPARE_ACTIVATED, 1 }, { GRAID_EVENT_REBUILD_STARTED, 1 },
		};

		for (unsigned i = 0; i < 10; i++)
			w[4 + i] = (struct want){ GRAID_EVENT_REBUILD_PROGRESS, 1 };
		w[14] = (struct want){ GRAID_EVENT_REBUILD_DONE, 1 };
		w[15] = (struct want){ GRAID_EVENT_OPTIMAL, -1 };
		rec_expect(&r, s0, w, 16);
	}
	cr_assert_eq(r.ev[s0 + 1].count, 1, "one role out");
	rec_expect_progress(&r, GRAID_EVENT_REBUILD_PROGRESS, s0, s_done, 10);
	rec_check_gapless(&r);

	/* Another consumer, restarted after the degraded event: the rest from the ring. */
	memset(&late, 0, sizeof(late));
	pthread_mutex_init(&late.lock, NULL);
	pthread_cond_init(&late.cond, NULL);
	cr_assert_eq(rec_read_ring(&late, a, s0 + 1), (int)(s_done - s0 - 1));
	cr_assert_eq(late.ev[s_done].type, GRAID_EVENT_OPTIMAL);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "the query says what the last event said: optimal");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* What a callback asked graid_array_member_info() about the member its event named. */
struct ask {
	struct graid_array *a;
	int rc, state;
	bool asked;
};

static void ask_on_event(void *arg, const struct graid_event *ev)
{
	struct ask *q = arg;
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	if (ev->type != GRAID_EVENT_MEMBER_FAILED || ev->member < 0)
		return;
	/* The sender holds the array's metadata lock: the query must not want it. */
	q->rc = graid_array_member_info(q->a, (unsigned)ev->member, &mi);
	q->state = mi.state;
	q->asked = true;
}

/* The callback contract: a callback may query the member its event names. */
Test(events, callback_asks_member_info, .timeout = 30)
{
	static struct ask q;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	q.a = a;
	cr_assert_eq(graid_array_set_event_callback(a, ask_on_event, &q), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert(q.asked);
	cr_assert_eq(q.rc, 0);
	cr_assert_eq(q.state, GRAID_MEMBER_FAILED);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

static void *ev_rebuild(void *arg)
{
	graid_array_rebuild(arg, NULL, NULL); /* or waits for the worker's, which does it */
	return NULL;
}

/*
 * A role a spare takes while a rebuild's pass runs is rebuilt in the next pass: that pass
 * sends its own progress, at each step from the first, named after its role, up to 100.
 */
Test(events, second_rebuild_pass_sends_its_progress, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_event_options eo = { .struct_size = sizeof(eo), .progress_percent = 25 };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 4u << 20 };
	static struct rec r;
	struct graid_array *a;
	struct au_set s;
	uint64_t s0, s2, s_done, last1 = 0;
	pthread_t t;

	au_make(&s, 7, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	ev_fill(a, info.size);
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	rec_attach(&r, a);
	s0 = r.newest + 1;
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_replace_member(a, 1, s.path[5]), 0);
	cr_assert_eq(pthread_create(&t, NULL, ev_rebuild, a), 0);
	/* Role 1's pass runs: role 2 is taken now, too late for it. */
	rec_wait(&r, GRAID_EVENT_REBUILD_PROGRESS, 1, s0 - 1, 30000);
	cr_assert_eq(graid_array_add_spare(a, s.path[6]), 0);
	s2 = rec_wait(&r, GRAID_EVENT_REBUILD_STARTED, 2, s0 - 1, 5000);
	s_done = rec_wait(&r, GRAID_EVENT_OPTIMAL, -1, s2, 60000);
	pthread_join(t, NULL);
	pthread_mutex_lock(&r.lock);
	for (uint64_t q = s0; q <= s_done; q++)
		if (r.ev[q].type == GRAID_EVENT_REBUILD_PROGRESS && r.ev[q].member == 1)
			last1 = q;
	pthread_mutex_unlock(&r.lock);
	cr_assert_gt(last1, s2, "role 1's pass ended before role 2 was taken");
	cr_assert_eq(r.ev[last1].count, 100, "role 1's pass ends at %llu%%",
		     (unsigned long long)r.ev[last1].count);
	/* Role 2's pass: 25, 50, 75, 100 after role 1's last. */
	cr_assert_neq(rec_find(&r, GRAID_EVENT_REBUILD_PROGRESS, 2, last1), 0,
		      "no progress for the role rebuilt in the second pass");
	rec_expect_progress(&r, GRAID_EVENT_REBUILD_PROGRESS, last1 + 1, s_done, 25);
	rec_check_gapless(&r);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* The model's fabric member: unreachable, back (caught up), each event within a second. */
Test(events, member_unreachable_and_back, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	static struct rec r;
	char state[320], spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t s0, s_back, s_opt;

	tu_need_fault_injection();
	au_make(&s, 3, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	ev_fill(a, info.size);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:fabric-state=%s:%s", state, s.path[2]);
	paths[2] = spec;
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	rec_attach(&r, a);
	s0 = r.newest + 1;
	cr_assert_eq(au_ctrl_state(state, "connecting"), 0);
	ev_fill(a, 1u << 20); /* the next write finds the member cut off */
	rec_wait(&r, GRAID_EVENT_DEGRADED, 2, s0 - 1, 1000);
	cr_assert_eq(ev_state(a, 2), GRAID_MEMBER_UNREACHABLE);
	cr_assert_eq(au_ctrl_state(state, "live"), 0);
	s_back = rec_wait(&r, GRAID_EVENT_MEMBER_RETURNED, 2, s0 - 1, 1000);
	s_opt = rec_wait(&r, GRAID_EVENT_OPTIMAL, -1, s_back, 30000);
	{
		struct want w[4 + 10 + 2] = {
			{ GRAID_EVENT_MEMBER_UNREACHABLE, 2 }, { GRAID_EVENT_DEGRADED, 2 },
			{ GRAID_EVENT_MEMBER_RETURNED, 2 },
		};
		unsigned n = 3, progress = 0;

		for (uint64_t q = s_back + 1; q < s_opt; q++)
			progress += r.ev[q].type == GRAID_EVENT_REBUILD_PROGRESS;
		cr_assert_eq(progress, 10, "a catch-up's progress: every 10 %%, %u events", progress);
		for (unsigned i = 0; i < 10; i++)
			w[n++] = (struct want){ GRAID_EVENT_REBUILD_PROGRESS, 2 };
		w[n++] = (struct want){ GRAID_EVENT_REBUILD_DONE, 2 };
		w[n++] = (struct want){ GRAID_EVENT_OPTIMAL, -1 };
		rec_expect(&r, s0, w, n);
	}
	rec_check_gapless(&r);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Opened with a role missing and the recorded spare not given: DEGRADED (member -1) and
 * SPARES_MISSING wait in the ring for a consumer that could set no callback before.
 */
Test(events, opened_degraded_and_spares_missing, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	static struct rec r;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 4, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, s.path[3]), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Role 1 and the spare not given. */
	{
		const char *paths[2] = { s.paths[0], s.paths[2] };

		cr_assert_eq(graid_array_open(paths, 2, NULL, &a), 0);
	}
	rec_attach(&r, a);
	{
		const struct want w[] = {
			{ GRAID_EVENT_DEGRADED, -1 }, { GRAID_EVENT_SPARES_MISSING, -1 },
		};

		rec_expect(&r, 1, w, 2);
	}
	cr_assert_eq(r.ev[1].count, 1, "one role out at open");
	cr_assert_eq(r.ev[2].count, 1, "one spare missing");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 1);
	rec_check_gapless(&r);
	cr_assert_eq(graid_array_close(a), 0);
	/* Opened whole: no event at all. */
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	rec_attach(&r, a);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A member fails with another out already: more than RAID-5 tolerates, ARRAY_FAILED and
 * the second DEGRADED (two out).
 */
Test(events, array_failed, .timeout = 60)
{
	static struct rec r;
	char spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t s0;
	uint8_t *buf;

	tu_need_fault_injection();
	au_make(&s, 3, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=0:%s", s.path[2]);
	paths[2] = spec;
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	rec_attach(&r, a);
	s0 = r.newest + 1;
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 2 * EV_CHUNK), 0);
	memset(buf, 7, 2 * EV_CHUNK);
	cr_assert_lt(graid_array_write(a, buf, 2 * EV_CHUNK, 0), 0);
	free(buf);
	rec_wait(&r, GRAID_EVENT_ARRAY_FAILED, -1, s0 - 1, 1000);
	{
		const struct want w[] = {
			{ GRAID_EVENT_MEMBER_FAILED, 0 }, { GRAID_EVENT_DEGRADED, 0 },
			{ GRAID_EVENT_ARRAY_FAILED, -1 }, { GRAID_EVENT_MEMBER_FAILED, 2 },
		};

		rec_expect(&r, s0, w, 4);
	}
	/* A consumer keeping the last state shows the array failed, not degraded. */
	cr_assert_eq(rec_find(&r, GRAID_EVENT_DEGRADED, EV_ANY, s0 + 2), 0,
		     "DEGRADED after ARRAY_FAILED");
	rec_check_gapless(&r);
	graid_array_close(a);
	au_remove(&s);
}

/* A replacement that fails during its rebuild: REBUILD_STOPPED, with the error. */
Test(events, rebuild_stopped, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	static struct rec r;
	char spec[700];
	struct graid_array *a;
	struct au_set s;
	uint64_t s0, q;
	int rc;

	tu_need_fault_injection();
	au_make(&s, 4, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	ev_fill(a, info.size);
	rec_attach(&r, a);
	s0 = r.newest + 1;
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=1:%s", s.path[3]);
	cr_assert_eq(graid_array_replace_member(a, 1, spec), 0);
	rec_wait(&r, GRAID_EVENT_REBUILD_STARTED, 1, s0 - 1, 1000); /* replaced */
	/* Ours, or the worker's that the replacement queued and ours waited for. */
	rc = graid_array_rebuild(a, NULL, NULL);
	cr_assert(rc == -EIO || rc == 0, "rebuild: %d", rc);
	q = rec_wait(&r, GRAID_EVENT_REBUILD_STOPPED, 1, s0 - 1, 1000);
	cr_assert_eq(r.ev[q].error, -EIO);
	cr_assert_eq(rec_find(&r, GRAID_EVENT_OPTIMAL, EV_ANY, s0 - 1), 0);
	cr_assert_eq(rec_find(&r, GRAID_EVENT_REBUILD_DONE, EV_ANY, s0 - 1), 0);
	rec_check_gapless(&r);
	graid_array_close(a);
	au_remove(&s);
}

/* A scrub: started, progress at each step once (the step the options set), done. */
Test(events, scrub_started_progress_done, .timeout = 60)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_event_options eo = { .struct_size = sizeof(eo), .progress_percent = 25 };
	static struct rec r;
	struct graid_array *a;
	struct au_set s;
	uint64_t s0, s1;

	au_make(&s, 3, EV_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, EV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	ev_fill(a, info.size);
	rec_attach(&r, a);
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	s0 = r.newest + 1;
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	{
		const struct want w[] = {
			{ GRAID_EVENT_SCRUB_STARTED, -1 }, { GRAID_EVENT_SCRUB_PROGRESS, -1 },
			{ GRAID_EVENT_SCRUB_PROGRESS, -1 }, { GRAID_EVENT_SCRUB_PROGRESS, -1 },
			{ GRAID_EVENT_SCRUB_PROGRESS, -1 }, { GRAID_EVENT_SCRUB_DONE, -1 },
		};

		rec_expect(&r, s0, w, 6);
	}
	rec_expect_progress(&r, GRAID_EVENT_SCRUB_PROGRESS, s0, r.newest, 25);
	cr_assert_eq(r.ev[s0 + 5].error, 0);
	cr_assert_eq(r.ev[s0 + 5].count, 0);
	/* No progress events at all. */
	eo.progress_percent = 0;
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	s1 = r.newest + 1;
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	{
		const struct want w[] = {
			{ GRAID_EVENT_SCRUB_STARTED, -1 }, { GRAID_EVENT_SCRUB_DONE, -1 },
		};

		rec_expect(&r, s1, w, 2);
	}
	/* A step that does not divide 100: 30, 60, 90, then 100 all the same. */
	eo.progress_percent = 30;
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	s1 = r.newest + 1;
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(r.ev[r.newest].type, GRAID_EVENT_SCRUB_DONE);
	rec_expect_progress(&r, GRAID_EVENT_SCRUB_PROGRESS, s1, r.newest, 30);
	eo.progress_percent = 101;
	cr_assert_eq(graid_array_set_event_options(a, &eo), -EINVAL);
	rec_check_gapless(&r);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Killed while writing a journaled RAID-5 stripe: the next open replays the journal and
 * resyncs, and its ring says so (JOURNAL_REPLAYED with the count graid_array_info gives,
 * RESYNC_STARTED, RESYNC_DONE).
 */
Test(events, journal_replayed_and_resync_started, .timeout = 120)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = 5, .chunk_bytes = 4096, .backend = "isal",
		.flags = GRAID_CREATE_JOURNAL | GRAID_CREATE_FORCE,
	};
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const size_t stripe = 3 * 4096;
	static struct rec r;
	bool replayed = false;

	tu_need_fault_injection();
	for (unsigned k = 0; k < 4 && !replayed; k++) {
		struct graid_array *a;
		struct au_set s;
		uint8_t *buf;
		int status, rc, tries = 0;
		pid_t pid;

		au_make(&s, 4, 48u << 20);
		cr_assert_eq(graid_array_create(s.paths, 4, &cfg, &a), 0);
		cr_assert_eq(posix_memalign((void **)&buf, 4096, stripe), 0);
		memset(buf, 1, stripe);
		cr_assert_eq(graid_array_write(a, buf, stripe, 0), (ssize_t)stripe);
		cr_assert_eq(graid_array_close(a), 0);
		pid = fork();
		if (pid == 0) {
			const char *paths[4];
			char spec[400];

			graid_log_set(NULL, NULL, 0);
			memcpy(paths, s.paths, sizeof(paths));
			snprintf(spec, sizeof(spec), "faulty:kill-after=%u:%s", k, s.paths[0]);
			paths[0] = spec;
			if (graid_array_open(paths, 4, NULL, &a))
				_exit(3);
			memset(buf, 2, stripe);
			_exit(graid_array_write(a, buf, stripe, 0) == (ssize_t)stripe ? 0 : 4);
		}
		free(buf);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		usleep(150 * 1000);
		au_wait_unlocked(s.paths, 4);
		while ((rc = graid_array_open(s.paths, 4, NULL, &a)) == -EBUSY && tries++ < 100)
			usleep(20 * 1000);
		cr_assert_eq(rc, 0);
		cr_assert_eq(graid_array_info(a, &info), 0);
		rec_attach(&r, a);
		rec_dump(&r, 1);
		if (WIFSIGNALED(status) && info.journal_replayed) {
			uint64_t j = rec_find(&r, GRAID_EVENT_JOURNAL_REPLAYED, -1, 0);
			uint64_t rs = rec_find(&r, GRAID_EVENT_RESYNC_STARTED, -1, 0);

			cr_assert_neq(j, 0, "replayed %llu updates, no event",
				      (unsigned long long)info.journal_replayed);
			cr_assert_eq(r.ev[j].count, info.journal_replayed);
			cr_assert_gt(rs, j, "the resync follows the replay");
			cr_assert_gt(rec_find(&r, GRAID_EVENT_RESYNC_DONE, -1, rs), rs);
			rec_check_gapless(&r);
			replayed = true;
		} else {
			cr_assert_eq(rec_find(&r, GRAID_EVENT_JOURNAL_REPLAYED, EV_ANY, 0), 0);
		}
		cr_assert_eq(graid_array_close(a), 0);
		au_remove(&s);
	}
	cr_assert(replayed, "no kill left the journal anything to replay");
}
