/* SPDX-License-Identifier: MIT */
/* The scrub the control endpoint runs: a thread of its own, its progress, stopping it, its report. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "common/internal.h"
#include "common/signals.h"
#include "control/control.h"

/*
 * How long scrub-stop waits for the scrub to end at its next batch. The request is served on
 * the endpoint's thread, which serves nobody meanwhile: a batch that takes longer (a member
 * that stalls) is not waited for, the reply says "running" and scrub-status shows the end.
 */
#define SCRUB_STOP_WAIT_NS 5000000000ull

enum scrub_state { SCRUB_RUNNING, SCRUB_DONE, SCRUB_STOPPED, SCRUB_FAILED };

static const char *const scrub_state_names[] = {
	[SCRUB_RUNNING] = "running", [SCRUB_DONE] = "done", [SCRUB_STOPPED] = "stopped",
	[SCRUB_FAILED] = "failed",
};

struct control_scrub {
	struct graid_array *a;
	pthread_mutex_t lock;        /* everything below but the atomics */
	pthread_cond_t ended;        /* state left SCRUB_RUNNING (on CLOCK_MONOTONIC) */
	pthread_t thread;
	bool joinable;               /* a thread started and not joined yet */
	bool joining;                /* a stop is joining it: still its thread until that ends */
	bool started;                /* a scrub was started since the endpoint was */
	enum scrub_state state;
	unsigned flags;
	int err;                     /* what graid_array_scrub() returned, 0 or -errno */
	struct graid_scrub_report rep; /* the finished scrub's (zero while it runs) */
	atomic_bool stop;            /* scrub-stop or the endpoint's stop asked it to end */
	atomic_uint_fast64_t done, total; /* its progress callback's */
};

/* The scrub's progress callback: called in its thread between batches. */
static void scrub_progress(void *arg, uint64_t done, uint64_t total)
{
	struct control_scrub *s = arg;

	atomic_store(&s->done, done);
	atomic_store(&s->total, total);
	/*
	 * A stop asked before graid_array_scrub() had begun was not its to see: asked again
	 * from inside it, it ends at the next batch.
	 */
	if (atomic_load(&s->stop))
		graid_array_scrub_stop(s->a);
}

static void *scrub_main(void *arg)
{
	struct control_scrub *s = arg;
	struct graid_scrub_report rep = { .struct_size = sizeof(rep), .progress = scrub_progress,
					  .progress_arg = s };
	int rc = atomic_load(&s->stop) ? -ECANCELED : graid_array_scrub(s->a, s->flags, &rep);

	pthread_mutex_lock(&s->lock);
	s->err = rc;
	if (rc == 0 || rc == -ECANCELED)
		s->rep = rep;
	s->state = rc == 0 ? SCRUB_DONE : rc == -ECANCELED ? SCRUB_STOPPED : SCRUB_FAILED;
	pthread_cond_broadcast(&s->ended);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int control_scrub_new(struct graid_array *a, struct control_scrub **out)
{
	struct control_scrub *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int rc;

	if (!s)
		return -ENOMEM;
	s->a = a;
	rc = pthread_condattr_init(&ca);
	if (rc == 0) {
		rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		if (rc == 0)
			rc = pthread_cond_init(&s->ended, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (rc) {
		free(s);
		return -rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

/* The ended thread joined; lock held. Its last step was under the lock: the join is short. */
static void scrub_reap(struct control_scrub *s)
{
	if (s->joinable && s->state != SCRUB_RUNNING) {
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
}

int control_scrub_start(struct control_scrub *s, unsigned flags)
{
	int rc;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	scrub_reap(s);
	if (s->joinable) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	s->state = SCRUB_RUNNING;
	s->flags = flags;
	s->err = 0;
	memset(&s->rep, 0, sizeof(s->rep));
	atomic_store(&s->done, 0);
	atomic_store(&s->total, 0);
	atomic_store(&s->stop, false);
	rc = -graid__thread_create(&s->thread, NULL, scrub_main, s);
	if (rc == 0) {
		s->joinable = true;
		s->started = true;
	} else {
		/* Nothing ran: what an earlier scrub left is gone, so none is reported. */
		s->started = false;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Ask the running scrub to end at its next batch; lock held. */
static void scrub_ask_stop(struct control_scrub *s)
{
	atomic_store(&s->stop, true);
	graid_array_scrub_stop(s->a);
}

int control_scrub_stop(struct control_scrub *s, bool *stopped)
{
	struct timespec until;
	uint64_t t;

	*stopped = false;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	*stopped = s->joinable && s->state == SCRUB_RUNNING;
	if (*stopped) {
		scrub_ask_stop(s);
		t = graid__now_ns() + SCRUB_STOP_WAIT_NS;
		until.tv_sec = (time_t)(t / 1000000000u);
		until.tv_nsec = (long)(t % 1000000000u);
		while (s->state == SCRUB_RUNNING &&
		       pthread_cond_timedwait(&s->ended, &s->lock, &until) != ETIMEDOUT)
			;
	}
	scrub_reap(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void control_scrub_ask_stop(struct control_scrub *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->joinable && s->state == SCRUB_RUNNING)
		scrub_ask_stop(s);
	pthread_mutex_unlock(&s->lock);
}

bool control_scrub_is_thread(struct control_scrub *s)
{
	bool self;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	self = (s->joinable || s->joining) && pthread_equal(pthread_self(), s->thread);
	pthread_mutex_unlock(&s->lock);
	return self;
}

void control_scrub_join(struct control_scrub *s)
{
	bool join;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	join = s->joinable;
	if (join && s->state == SCRUB_RUNNING)
		scrub_ask_stop(s);
	s->joinable = false;
	/* A callback the scrub runs meanwhile is still on its thread (-EDEADLK, not a wait). */
	s->joining = join;
	pthread_mutex_unlock(&s->lock);
	/* Not under the lock: the scrub's last step takes it. */
	if (join) {
		pthread_join(s->thread, NULL);
		pthread_mutex_lock(&s->lock);
		s->joining = false;
		pthread_mutex_unlock(&s->lock);
	}
}

void control_scrub_free(struct control_scrub *s)
{
	if (!s)
		return;
	control_scrub_join(s);
	pthread_cond_destroy(&s->ended);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* json-c's adder, skipping what could not be made (out of memory: the library never aborts). */
static void put(struct json_object *o, const char *key, struct json_object *v)
{
	if (o)
		json_object_object_add(o, key, v);
	else
		json_object_put(v);
}

static void put_n(struct json_object *o, const char *key, uint64_t v)
{
	put(o, key, json_object_new_uint64(v));
}

static struct json_object *scrub_named(const struct graid_scrub_report *r)
{
	struct json_object *list = json_object_new_array();

	for (unsigned i = 0; list && i < r->named && i < GRAID_SCRUB_NAMED; i++) {
		struct json_object *o = json_object_new_object();

		put_n(o, "stripe", r->stripe[i]);
		put(o, "member", json_object_new_int(r->member[i]));
		if (json_object_array_add(list, o))
			json_object_put(o);
	}
	return list;
}

struct json_object *control_scrub_json(struct control_scrub *s)
{
	struct json_object *o;
	struct graid_scrub_report r;
	enum scrub_state state;
	unsigned flags;
	char why[128];
	int err;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (!s->started) {
		pthread_mutex_unlock(&s->lock);
		return NULL; /* JSON null: no scrub was started here */
	}
	r = s->rep;
	state = s->state;
	flags = s->flags;
	err = s->err;
	pthread_mutex_unlock(&s->lock);
	o = json_object_new_object();
	put(o, "state", json_object_new_string(scrub_state_names[state]));
	put(o, "repair", json_object_new_boolean(flags & GRAID_SCRUB_REPAIR));
	put_n(o, "done", atomic_load(&s->done));
	put_n(o, "total", atomic_load(&s->total));
	put_n(o, "first_row", r.first_row);
	put_n(o, "stripes_checked", r.stripes_checked);
	put_n(o, "mismatches", r.mismatches);
	put_n(o, "repaired", r.repaired);
	put_n(o, "skipped", r.skipped);
	put_n(o, "unused", r.unused);
	put_n(o, "rewritten", r.rewritten);
	put_n(o, "unrecoverable", r.unrecoverable);
	put(o, "named", scrub_named(&r));
	put(o, "errno", json_object_new_int(state == SCRUB_FAILED ? -err : 0));
	if (state == SCRUB_FAILED) {
		snprintf(why, sizeof(why), "graid_array_scrub: %s (the holder's log has the "
			 "details)", graid_strerror(err));
		put(o, "error", json_object_new_string(why));
	} else {
		put(o, "error", NULL);
	}
	return o;
}
