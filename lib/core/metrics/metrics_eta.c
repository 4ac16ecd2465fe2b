/* SPDX-License-Identifier: MIT */
/* The seconds a rebuild or catch-up has left, estimated from the progress earlier renders saw. */
#include <pthread.h>
#include <string.h>

#include "metrics/metrics.h"

/*
 * A render has no history of its own: each one leaves here where each role's copy stood, and
 * the next compares. Keyed by array UUID, role and the copy's total (a new copy of the same
 * role has its own total or starts below the last point); the oldest entry makes room.
 */
#define ETA_SLOTS 64
/* The rate is measured over the last one to two of these (at least ETA_MIN_NS). */
#define ETA_WINDOW_NS (120ull * 1000000000ull)
#define ETA_MIN_NS 1000000000ull

struct eta_slot {
	uint8_t uuid[16];
	unsigned role;
	uint64_t total;
	uint64_t t0, done0;      /* where the measured window begins */
	uint64_t t1, done1;      /* a later point, the next window's start */
	uint64_t last;           /* bytes done at the last render */
	uint64_t seen;           /* 0: free */
};

static pthread_mutex_t eta_lock = PTHREAD_MUTEX_INITIALIZER;
static struct eta_slot eta_slots[ETA_SLOTS];

static struct eta_slot *eta_find(const uint8_t uuid[16], unsigned role, uint64_t total)
{
	struct eta_slot *old = &eta_slots[0];

	for (unsigned i = 0; i < ETA_SLOTS; i++) {
		struct eta_slot *e = &eta_slots[i];

		if (e->seen && e->role == role && e->total == total && !memcmp(e->uuid, uuid, 16))
			return e;
		if (e->seen < old->seen)
			old = e;
	}
	memset(old, 0, sizeof(*old));
	memcpy(old->uuid, uuid, 16);
	old->role = role;
	old->total = total;
	return old;
}

double metrics_eta(const uint8_t uuid[16], unsigned role, uint64_t done, uint64_t total,
		   uint64_t now_ns)
{
	struct eta_slot *e;
	double eta = -1;

	pthread_mutex_lock(&eta_lock);
	e = eta_find(uuid, role, total);
	if (!e->seen || done < e->last) {
		/* New, or the copy started over: this point begins the measure. */
		e->t0 = e->t1 = now_ns;
		e->done0 = e->done1 = done;
	} else {
		if (now_ns - e->t0 >= ETA_MIN_NS && done > e->done0)
			eta = (double)(total - done) * ((double)(now_ns - e->t0) / 1e9) /
			      (double)(done - e->done0);
		/* Slide: the rate is the last one to two windows', not the whole copy's. */
		if (now_ns - e->t0 >= 2 * ETA_WINDOW_NS) {
			e->t0 = e->t1;
			e->done0 = e->done1;
		}
		if (now_ns - e->t1 >= ETA_WINDOW_NS) {
			e->t1 = now_ns;
			e->done1 = done;
		}
	}
	e->last = done;
	e->seen = now_ns ? now_ns : 1;
	pthread_mutex_unlock(&eta_lock);
	return eta;
}
