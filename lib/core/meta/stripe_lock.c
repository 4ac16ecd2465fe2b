/* SPDX-License-Identifier: MIT */
/* Stripe locks: concurrent updates of one stripe are serialised; nothing else is. */
#include <time.h>

#include "array/array.h"
#include "meta/stripe_lock.h"

/*
 * A stripe maps to one of STRIPE_LOCK_BUCKETS flags. Two stripes sharing a bucket wait for
 * each other needlessly, which is rare with 64 Ki buckets and costs only time. A stripe
 * operation holds one bucket at a time, so no lock order is needed and nothing deadlocks.
 * Locks are tried, never waited on inside a queue: a queue whose stripe is busy parks the
 * operation and keeps reaping its other I/O.
 */
unsigned stripe_bucket(uint64_t stripe)
{
	return (unsigned)((stripe * 0x9E3779B97F4A7C15ull) >> 48) & (STRIPE_LOCK_BUCKETS - 1);
}

bool stripe_trylock(struct graid_array *a, uint64_t stripe, unsigned *bucket)
{
	unsigned b = stripe_bucket(stripe);
	bool expect = false;

	if (!atomic_compare_exchange_strong_explicit(&a->stripes.busy[b], &expect, true,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	*bucket = b;
	return true;
}

void stripe_unlock(struct graid_array *a, unsigned bucket)
{
	atomic_store_explicit(&a->stripes.busy[bucket], false, memory_order_release);
	if (atomic_load(&a->stripes.waiters)) {
		pthread_mutex_lock(&a->stripes.lock);
		a->stripes.seq++;
		pthread_cond_broadcast(&a->stripes.cond);
		pthread_mutex_unlock(&a->stripes.lock);
	}
}

uint64_t stripe_release_seq(struct graid_array *a)
{
	uint64_t seq;

	pthread_mutex_lock(&a->stripes.lock);
	seq = a->stripes.seq;
	pthread_mutex_unlock(&a->stripes.lock);
	return seq;
}

void stripe_wait_release(struct graid_array *a, uint64_t seen_seq)
{
	/* A bound, in case a release raced the waiter count. */
	stripe_wait_release_for(a, seen_seq, 2 * 1000 * 1000);
}

void stripe_wait_release_for(struct graid_array *a, uint64_t seen_seq, long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += ns;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	atomic_fetch_add(&a->stripes.waiters, 1);
	pthread_mutex_lock(&a->stripes.lock);
	while (a->stripes.seq == seen_seq)
		if (pthread_cond_timedwait(&a->stripes.cond, &a->stripes.lock, &ts))
			break;
	pthread_mutex_unlock(&a->stripes.lock);
	atomic_fetch_sub(&a->stripes.waiters, 1);
}

