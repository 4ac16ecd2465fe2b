/* SPDX-License-Identifier: MIT */
/* A set of stripe locks held at once by background work (rebuild, scrub, resync). */
#ifndef LIBGRAID_CORE_STRIPE_SET_H
#define LIBGRAID_CORE_STRIPE_SET_H

#include <stdlib.h>

#include "array/array.h"
#include "meta/stripe_lock.h"

#define STRIPE_SET_MAX 1024

/*
 * Deadlock freedom. Foreground stripe operations hold one bucket and never wait while
 * holding it. Background jobs hold many, so they follow two rules:
 * - a set is locked in ascending bucket order (stripe_set_lock), so two jobs each waiting
 *   for the rest of their set can never wait for each other in a circle;
 * - a job that already holds another set (a pipelined rebuild: one batch's writes in flight
 *   while the next batch is locked) only tries (stripe_set_trylock) and, on a busy bucket,
 *   must be able to release what it holds without waiting for anybody before it waits.
 */
struct stripe_set {
	unsigned n;          /* buckets added */
	unsigned held;       /* bucket[0, held) are locked */
	bool sorted;
	unsigned bucket[STRIPE_SET_MAX];
};

/* Add the bucket of `stripe`; call before locking. Duplicates are dropped when locking. */
static inline void stripe_set_add(struct stripe_set *set, uint64_t stripe)
{
	if (set->n < STRIPE_SET_MAX) {
		set->bucket[set->n++] = stripe_bucket(stripe);
		set->sorted = false;
	}
}

static inline int stripe_set_cmp(const void *x, const void *y)
{
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;

	return (a > b) - (a < b);
}

/* Sort and drop duplicates (stripes share buckets); only before anything is held. */
static inline void stripe_set_sort(struct stripe_set *set)
{
	unsigned k = 0;

	if (set->sorted)
		return;
	qsort(set->bucket, set->n, sizeof(set->bucket[0]), stripe_set_cmp);
	for (unsigned i = 0; i < set->n; i++)
		if (k == 0 || set->bucket[k - 1] != set->bucket[i])
			set->bucket[k++] = set->bucket[i];
	set->n = k;
	set->sorted = true;
}

static inline bool stripe_set_try_one(struct graid_array *a, unsigned b)
{
	bool expect = false;

	return atomic_compare_exchange_strong_explicit(&a->stripe_busy[b], &expect, true,
						       memory_order_acquire, memory_order_relaxed);
}

/* Lock what is left of the set without waiting; true when all of it is held. */
static inline bool stripe_set_trylock(struct graid_array *a, struct stripe_set *set)
{
	stripe_set_sort(set);
	while (set->held < set->n && stripe_set_try_one(a, set->bucket[set->held]))
		set->held++;
	return set->held == set->n;
}

/* Lock what is left of the set, waiting as needed; the caller holds no other set. */
static inline void stripe_set_lock(struct graid_array *a, struct stripe_set *set)
{
	while (!stripe_set_trylock(a, set)) {
		uint64_t seq = stripe_release_seq(a);

		if (stripe_set_try_one(a, set->bucket[set->held])) {
			set->held++;
			continue;
		}
		stripe_wait_release(a, seq);
	}
}

/* Unlock everything held and empty the set. */
static inline void stripe_set_release(struct graid_array *a, struct stripe_set *set)
{
	for (unsigned i = 0; i < set->held; i++)
		stripe_unlock(a, set->bucket[i]);
	set->n = 0;
	set->held = 0;
	set->sorted = true;
}

#endif
