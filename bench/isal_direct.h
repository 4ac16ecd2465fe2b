/* SPDX-License-Identifier: MIT */
/* The yardstick: ISA-L's own RAID and erasure-code routines called directly, without libgraid. */
#ifndef GRAID_BENCH_ISAL_DIRECT_H
#define GRAID_BENCH_ISAL_DIRECT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Both take the libgraid batch layout: nstripes * (ndata + nparity) block pointers, stripe
 * after stripe, data blocks then P then Q. Blocks must be 32-byte aligned and len a
 * multiple of 32 (ISA-L's own rules). Return 0, or -1 if ISA-L refused.
 */

/** P (xor_gen) or P and Q (pq_gen) of every stripe. */
int isal_direct_gen(unsigned ndata, unsigned nparity, size_t len, size_t nstripes,
		    uint8_t *const *blocks);

/**
 * Rebuild two lost data blocks @p lost[0] < @p lost[1] of every RAID-6 stripe with
 * ec_encode_data. The decode matrix is built on every call (gf_invert_matrix of the
 * survivors' rows of the RAID-6 generator: identity, all ones, g^k with g = 2 over 0x11d),
 * as a caller recovering one batch with a loss pattern it has just learnt would.
 * At most 64 data blocks.
 */
int isal_direct_recover2(unsigned ndata, size_t len, size_t nstripes, uint8_t *const *blocks,
			 const unsigned lost[2]);

#endif /* GRAID_BENCH_ISAL_DIRECT_H */
