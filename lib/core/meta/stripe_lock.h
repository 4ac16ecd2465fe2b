/* SPDX-License-Identifier: MIT */
/* Stripe locks: one stripe operation at a time per stripe (hashed into buckets). */
#ifndef LIBGRAID_CORE_STRIPE_LOCK_H
#define LIBGRAID_CORE_STRIPE_LOCK_H

#include "array/array.h"

unsigned stripe_bucket(uint64_t stripe);
bool stripe_trylock(struct graid_array *a, uint64_t stripe, unsigned *bucket);
void stripe_unlock(struct graid_array *a, unsigned bucket);
/* Sleep until some stripe lock is released (or a short while passes). */
void stripe_wait_release(struct graid_array *a, uint64_t seen_seq);
/* The same for at most @p ns nanoseconds (below a second). */
void stripe_wait_release_for(struct graid_array *a, uint64_t seen_seq, long ns);
uint64_t stripe_release_seq(struct graid_array *a);

#endif /* LIBGRAID_CORE_STRIPE_LOCK_H */
