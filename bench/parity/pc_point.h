/* SPDX-License-Identifier: MIT */
/* One point of the sweep: random stripes, the "ref" engine's answer, one engine timed on them. */
#ifndef PC_POINT_H
#define PC_POINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

/** The operations compared. */
enum pc_op {
	PC_OP_GEN,     /**< RAID-6 P and Q */
	PC_OP_RECOVER, /**< RAID-6 rebuild of two lost data blocks (0 and 1) */
};

/** Buffers for the largest batch of the sweep, filled with random bytes once. */
struct pc_buffers {
	uint8_t *stripes;    /**< max_stripes * (max_ndata + 2) blocks of len bytes */
	uint8_t *want;       /**< the reference's output blocks, max_stripes * 2 of them */
	uint8_t **ptrs;      /**< block pointers of the current batch */
	size_t bytes;        /**< size of stripes */
	size_t len;
};

/** A batch shape: stripes of ndata + 2 blocks of len bytes. */
struct pc_shape {
	enum pc_op op;
	unsigned ndata;
	size_t len;
	size_t nstripes;
};

/** What one engine did at one point. */
struct pc_result {
	int rc;             /**< 0, or the engine's negative errno */
	bool identical;     /**< output bit-identical to the "ref" engine's */
	double gbps;        /**< data bytes / median latency */
	double latency_us;  /**< median wall time of one call (one batch) */
	double cpu_s_per_gb;/**< process CPU seconds per GB of data, over the timed calls */
	unsigned calls;     /**< timed calls */
};

/** Allocate (64-byte aligned) and fill buffers for batches up to @p bytes of stripes. */
int pc_buffers_init(struct pc_buffers *b, size_t bytes, size_t want_bytes, size_t nptrs,
		    size_t len, uint64_t seed);
void pc_buffers_free(struct pc_buffers *b);

/**
 * Lay the batch out and compute the reference answer with @p ref: P and Q for
 * generation; for recovery, consistent P and Q first, then the two lost data blocks as
 * "ref" rebuilds them. 0, or a negative errno.
 */
int pc_point_prepare(struct pc_buffers *b, const struct pc_shape *sh,
		     struct graid_backend *ref);

/**
 * Run @p be on the batch: one untimed call whose output is compared with the reference,
 * then timed calls until @p min_time_s has passed and at least @p min_calls were made.
 */
void pc_point_run(struct pc_buffers *b, const struct pc_shape *sh, struct graid_backend *be,
		  double min_time_s, unsigned min_calls, struct pc_result *res);

#endif /* PC_POINT_H */
