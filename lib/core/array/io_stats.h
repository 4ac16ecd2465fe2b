/* SPDX-License-Identifier: MIT */
/* I/O counters of an array and of its members: what the I/O paths add, cheaply (io_stats.c). */
#ifndef LIBGRAID_CORE_IO_STATS_H
#define LIBGRAID_CORE_IO_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "libgraid/graid.h"

/*
 * One kind's counters. Relaxed atomic adds: they order nothing, and a reader sees each
 * counter whole (docs/STATS.md has the measurement behind the choice).
 */
struct io_stat_kind {
	atomic_uint_fast64_t ops, bytes, errors, latency_ns_sum, latency_hist_ns_sum;
	atomic_uint_fast64_t latency[GRAID_LATENCY_BUCKETS];
};

struct io_stats {
	struct io_stat_kind io[GRAID_IO_KINDS];
	_Atomic uint64_t since_ns;
};

/* The histogram bucket of a latency: [2^(i+9), 2^(i+10)) ns, clamped to the first and last. */
static inline unsigned io_stats_bucket(uint64_t ns)
{
	unsigned b;

	if (ns < 1024)
		return 0;
	b = 63u - (unsigned)__builtin_clzll(ns) - 9u;
	return b >= GRAID_LATENCY_BUCKETS ? GRAID_LATENCY_BUCKETS - 1 : b;
}

/* Count one completed I/O of @p kind: @p bytes moved when it succeeded, else an error. */
static inline void io_stats_add(struct io_stats *st, unsigned kind, uint64_t bytes, bool failed,
				uint64_t latency_ns, bool histogram)
{
	struct io_stat_kind *k = &st->io[kind];

	atomic_fetch_add_explicit(&k->ops, 1, memory_order_relaxed);
	if (failed)
		atomic_fetch_add_explicit(&k->errors, 1, memory_order_relaxed);
	else if (bytes)
		atomic_fetch_add_explicit(&k->bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&k->latency_ns_sum, latency_ns, memory_order_relaxed);
	if (histogram) {
		atomic_fetch_add_explicit(&k->latency[io_stats_bucket(latency_ns)], 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&k->latency_hist_ns_sum, latency_ns,
					  memory_order_relaxed);
	}
}

/* Every counter zero, counting from @p now_ns (a role's new device, an open). */
void io_stats_reset(struct io_stats *st, uint64_t now_ns);

#endif
