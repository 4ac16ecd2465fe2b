/* SPDX-License-Identifier: MIT */
/* The stripe-lock sets of background jobs: every stripe added is held, however many. */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "io/stripe_set.h"

static struct graid_array *ss_array(void)
{
	struct graid_array *a = calloc(1, sizeof(*a));

	cr_assert_not_null(a);
	a->stripes.busy = calloc(STRIPE_LOCK_BUCKETS, sizeof(*a->stripes.busy));
	cr_assert_not_null(a->stripes.busy);
	pthread_mutex_init(&a->stripes.lock, NULL);
	pthread_cond_init(&a->stripes.cond, NULL);
	return a;
}

static void ss_free(struct graid_array *a)
{
	pthread_mutex_destroy(&a->stripes.lock);
	pthread_cond_destroy(&a->stripes.cond);
	free(a->stripes.busy);
	free(a);
}

static unsigned ss_busy(const struct graid_array *a)
{
	unsigned n = 0;

	for (unsigned b = 0; b < STRIPE_LOCK_BUCKETS; b++)
		n += atomic_load(&a->stripes.busy[b]);
	return n;
}

Test(stripe_set, every_stripe_added_is_held_past_a_thousand)
{
	struct graid_array *a = ss_array();
	struct stripe_set *set = calloc(1, sizeof(*set));
	unsigned want = 0;

	/* 5000 stripes: more than the 1024 a set once held (it dropped the rest unlocked). */
	for (uint64_t s = 0; s < 5000; s++)
		stripe_set_add(set, s);
	for (unsigned b = 0; b < STRIPE_LOCK_BUCKETS; b++)
		want += (set->bit[b / 64] >> (b % 64)) & 1;
	stripe_set_lock(a, set);
	for (uint64_t s = 0; s < 5000; s++)
		cr_assert(atomic_load(&a->stripes.busy[stripe_bucket(s)]), "stripe %llu not held",
			  (unsigned long long)s);
	cr_assert_eq(ss_busy(a), want);
	stripe_set_release(a, set);
	cr_assert_eq(ss_busy(a), 0, "a release left buckets held");
	cr_assert_eq(set->n, 0);
	free(set);
	ss_free(a);
}

Test(stripe_set, a_busy_bucket_stops_a_try_and_the_rest_follow_in_order)
{
	struct graid_array *a = ss_array();
	struct stripe_set *set = calloc(1, sizeof(*set));
	unsigned mid;

	for (uint64_t s = 0; s < 64; s++)
		stripe_set_add(set, s);
	mid = stripe_set_find(set, STRIPE_LOCK_BUCKETS / 2);
	cr_assert_lt(mid, STRIPE_LOCK_BUCKETS, "the test wants a bucket in the upper half");
	atomic_store(&a->stripes.busy[mid], true); /* another job holds it */
	cr_assert_not(stripe_set_trylock(a, set));
	/* Held: every bucket below the busy one; nothing above it. */
	for (unsigned b = stripe_set_find(set, 0); b < STRIPE_LOCK_BUCKETS;
	     b = stripe_set_find(set, b + 1))
		cr_assert_eq(atomic_load(&a->stripes.busy[b]), b <= mid, "bucket %u", b);
	atomic_store(&a->stripes.busy[mid], false);
	cr_assert(stripe_set_trylock(a, set));
	cr_assert_eq(ss_busy(a), set->n);
	stripe_set_release(a, set);
	cr_assert_eq(ss_busy(a), 0);
	free(set);
	ss_free(a);
}
