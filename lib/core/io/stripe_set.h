/* SPDX-License-Identifier: MIT */
/* A set of stripe locks held at once by background work (rebuild, scrub, resync). */
#ifndef LIBGRAID_CORE_STRIPE_SET_H
#define LIBGRAID_CORE_STRIPE_SET_H

#include <string.h>

#include "array/array.h"
#include "meta/stripe_lock.h"

/*
 * Deadlock freedom. Foreground stripe operations hold one bucket and never wait while
 * holding it. Background jobs hold many, so they follow two rules:
 * - a set is locked in ascending bucket order (stripe_set_lock), so two jobs each waiting
 *   for the rest of their set can never wait for each other in a circle;
 * - a job that already holds another set (a pipelined rebuild: one batch's writes in flight
 *   while the next batch is locked) only tries (stripe_set_trylock) and, on a busy bucket,
 *   must be able to release what it holds without waiting for anybody before it waits.
 *
 * The set is a bitmap over every bucket, so it has no capacity to run out of: a stripe
 * added is always locked (two stripes in one bucket are one lock), and ascending order is
 * the order of the bits.
 */
#define STRIPE_SET_WORDS (STRIPE_LOCK_BUCKETS / 64)

struct stripe_set {
	uint64_t bit[STRIPE_SET_WORDS]; /* the buckets added */
	unsigned next;                  /* buckets below this one that are in the set are held */
	unsigned n;                     /* buckets in the set */
};

/* Add the bucket of `stripe`; call before locking. */
static inline void stripe_set_add(struct stripe_set *set, uint64_t stripe)
{
	unsigned b = stripe_bucket(stripe);
	uint64_t m = 1ull << (b % 64);

	if (!(set->bit[b / 64] & m)) {
		set->bit[b / 64] |= m;
		set->n++;
	}
}

/* The first bucket of the set at or after @p from; STRIPE_LOCK_BUCKETS when none. */
static inline unsigned stripe_set_find(const struct stripe_set *set, unsigned from)
{
	for (unsigned w = from / 64; w < STRIPE_SET_WORDS; w++) {
		uint64_t bits = set->bit[w];

		if (w == from / 64)
			bits &= ~0ull << (from % 64);
		if (bits)
			return w * 64 + (unsigned)__builtin_ctzll(bits);
	}
	return STRIPE_LOCK_BUCKETS;
}

static inline bool stripe_set_try_one(struct graid_array *a, unsigned b)
{
	bool expect = false;

	return atomic_compare_exchange_strong_explicit(&a->stripes.busy[b], &expect, true,
						       memory_order_acquire, memory_order_relaxed);
}

/* Lock what is left of the set without waiting; true when all of it is held. */
static inline bool stripe_set_trylock(struct graid_array *a, struct stripe_set *set)
{
	unsigned b;

	while ((b = stripe_set_find(set, set->next)) < STRIPE_LOCK_BUCKETS &&
	       stripe_set_try_one(a, b))
		set->next = b + 1;
	return b == STRIPE_LOCK_BUCKETS;
}

/* Lock what is left of the set, waiting as needed; the caller holds no other set. */
static inline void stripe_set_lock(struct graid_array *a, struct stripe_set *set)
{
	while (!stripe_set_trylock(a, set)) {
		uint64_t seq = stripe_release_seq(a);
		unsigned b = stripe_set_find(set, set->next);

		if (stripe_set_try_one(a, b)) {
			set->next = b + 1;
			continue;
		}
		stripe_wait_release(a, seq);
	}
}

/* Unlock everything held and empty the set. */
static inline void stripe_set_release(struct graid_array *a, struct stripe_set *set)
{
	for (unsigned b = stripe_set_find(set, 0); b < set->next;
	     b = stripe_set_find(set, b + 1))
		stripe_unlock(a, b);
	if (set->n)
		memset(set->bit, 0, sizeof(set->bit));
	set->next = 0;
	set->n = 0;
}

#endif
