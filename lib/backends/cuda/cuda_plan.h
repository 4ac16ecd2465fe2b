/* SPDX-License-Identifier: MIT */
/* Pure planning for the CUDA engine: which case a batch is, how it splits into pieces, where
 * each block of a piece lives, and the check verdicts. No CUDA, no allocation: unit-tested. */
#ifndef GRAID_CUDA_PLAN_H
#define GRAID_CUDA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid_backend.h>

#include "cuda_kparams.h"

/* What the caller asked for. */
enum cuda_op {
	CUDA_OP_GEN,
	CUDA_OP_RECOVER,
	CUDA_OP_CHECK,
};

/*
 * Fill the shape part of kp (case, coefficients, which blocks go in and out, map[]) for an
 * operation on stripes of ndata + nparity blocks. nlost/lost are used by CUDA_OP_RECOVER
 * only, and are as graid_backend.h promises (1..nparity, valid, ascending).
 * Returns 0, or -EINVAL for a shape the ABI does not allow.
 */
int cuda_plan_case(struct cuda_kparams *kp, enum cuda_op op, unsigned ndata, unsigned nparity,
		   unsigned nlost, const unsigned *lost);

/* How a batch is cut: whole stripes per piece, or, for stripes bigger than a piece, one
 * stripe per piece and chunk bytes of each block per piece. */
struct cuda_geom {
	size_t stripes;   /* stripes per piece, >= 1 */
	uint64_t chunk;   /* bytes of each block per piece: len, or a multiple of 16 below it */
};

/* Cut stripes of len bytes per block so that a piece moves about target bytes. */
struct cuda_geom cuda_plan_geom(const struct cuda_kparams *kp, uint64_t len, size_t target);

/* Byte offsets in a piece's buffer (the same on the pinned host side and the device side). */
struct cuda_layout {
	size_t table;     /* mapped: nstripes * nblk device pointers */
	size_t in;        /* staged: input blocks, stripe after stripe */
	size_t acc;       /* check: three words per stripe */
	size_t out;       /* staged: output blocks, stripe after stripe */
	size_t h2d_end;   /* bytes [0, h2d_end) go to the device before the kernel */
	size_t size;      /* bytes [acc, size) come back after it */
	uint64_t stride;  /* bytes between blocks in the in and out regions */
};

/* Layout of a piece of nstripes stripes of chunk bytes per block. */
struct cuda_layout cuda_plan_layout(const struct cuda_kparams *kp, size_t nstripes,
				    uint64_t chunk, bool mapped);

/* Verdict of one stripe from its accumulator (GRAID_CHECK_CLEAN, a block, or UNLOCATED). */
int32_t cuda_plan_verdict(const uint32_t acc[3], unsigned ndata, unsigned nparity);

/* Merge accumulator b into a (pieces that hold different bytes of one stripe). */
void cuda_plan_acc_merge(uint32_t a[3], const uint32_t b[3]);

#endif /* GRAID_CUDA_PLAN_H */
