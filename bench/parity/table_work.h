/* SPDX-License-Identifier: MIT */
/* parity_bench's workload: buffer sets, one batch of each contender, timing and verification. */
#ifndef GRAID_BENCH_PARITY_WORK_H
#define GRAID_BENCH_PARITY_WORK_H

#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#define PB_MAX_THREADS 64

/** What is measured. */
enum pb_op {
	PB_OP_P,    /**< RAID-5 parity: P */
	PB_OP_PQ,   /**< RAID-6 parity: P and Q */
	PB_OP_REC2, /**< RAID-6 recovery of two lost data blocks */
};

/** Who does it. */
enum pb_impl {
	PB_IMPL_ENGINE, /**< a libgraid engine, through the public API */
	PB_IMPL_ISAL,   /**< ISA-L called directly */
	PB_IMPL_MEMCPY, /**< memcpy of the same data bytes: the memory-bandwidth yardstick */
};

/** The shape of one configuration. */
struct pb_shape {
	enum pb_op op;
	unsigned ndata, nparity;
	size_t len;      /**< bytes per block */
	size_t spb;      /**< stripes per call */
	size_t nbatches; /**< calls' worth of stripes in each thread's set: 1 = cache-resident */
};

/** One thread's buffers: a random-filled arena, laid out for the current shape. */
struct pb_set {
	uint8_t *arena;
	size_t arena_size;
	uint8_t **ptrs;       /**< nbatches * spb * (ndata + nparity) block pointers */
	size_t ptrs_cap;
	uint8_t *copy_dst;    /**< memcpy's destination, as large as the set's data */
	size_t pos;           /**< next batch in the rotation */
};

/** The lost blocks of PB_OP_REC2: data blocks 0 and 1. */
extern const unsigned pb_lost[2];

/** Data bytes of one call of @p sh (the figure every GB/s counts). */
size_t pb_batch_data_bytes(const struct pb_shape *sh);

/** Arena bytes a set needs for @p sh: the stripes and memcpy's destination. */
size_t pb_set_bytes(const struct pb_shape *sh);

/** Lay @p set out for @p sh; 0, or -ENOMEM / -EINVAL (arena too small). */
int pb_set_bind(struct pb_set *set, const struct pb_shape *sh);

/**
 * Find how many calls per thread make one sample of @p impl last @p target_s on
 * @p nthreads threads, each on its own set; the first call (one-time costs) is not
 * counted. Returns 0 with @p iters set, or the engine's negative errno.
 */
int pb_calibrate(const struct pb_shape *sh, enum pb_impl impl, struct graid_backend *be,
		 struct pb_set *sets, unsigned nthreads, double target_s, size_t *iters);

/**
 * One timed sample: @p iters calls on each of @p nthreads threads, each on its own set.
 * Stores the aggregate GB/s of data by the wall clock in @p gbps, and GB of data per
 * second of process CPU time in @p cpu_gbps. Returns 0, or the engine's negative errno.
 */
int pb_sample(const struct pb_shape *sh, enum pb_impl impl, struct graid_backend *be,
	      struct pb_set *sets, unsigned nthreads, size_t iters, double *gbps,
	      double *cpu_gbps);

/**
 * Check that @p be's output on batch 0 of @p set is bit-identical to ISA-L direct's.
 * Returns 0 if so; 1 on a mismatch (described in @p why); a negative errno if the engine
 * failed; 2 if ISA-L direct itself disagreed with the original data (a bench bug).
 */
int pb_verify(const struct pb_shape *sh, struct graid_backend *be, struct pb_set *set,
	      char *why, size_t why_len);

#endif /* GRAID_BENCH_PARITY_WORK_H */
