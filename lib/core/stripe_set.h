/* SPDX-License-Identifier: MIT */
/* A set of stripe locks held at once by background work (rebuild, scrub). */
#ifndef LIBGRAID_CORE_STRIPE_SET_H
#define LIBGRAID_CORE_STRIPE_SET_H

#include "array.h"

#define STRIPE_SET_MAX 1024

struct stripe_set {
	unsigned n;
	unsigned bucket[STRIPE_SET_MAX];
};

/* Take the lock of `stripe` unless this set holds its bucket already (stripes share buckets). */
static inline void stripe_set_take(struct graid_array *a, struct stripe_set *set, uint64_t stripe)
{
	unsigned b = stripe_bucket(stripe);

	for (unsigned i = 0; i < set->n; i++)
		if (set->bucket[i] == b)
			return;
	stripe_lock_wait(a, stripe, &set->bucket[set->n]);
	set->n++;
}

static inline void stripe_set_release(struct graid_array *a, struct stripe_set *set)
{
	for (unsigned i = 0; i < set->n; i++)
		stripe_unlock(a, set->bucket[i]);
	set->n = 0;
}

#endif
