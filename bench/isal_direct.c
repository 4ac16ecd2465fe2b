/* SPDX-License-Identifier: MIT */
/* The yardstick: ISA-L's own RAID and erasure-code routines called directly, without libgraid. */
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "isal_direct.h"

/* 255 data blocks + P + Q, the widest stripe libgraid takes. */
#define ISAL_DIRECT_MAX 257
/* Recovery keeps its matrices on the stack; the benchmark's widest stripe is far narrower. */
#define ISAL_DIRECT_MAX_REC 64

int isal_direct_gen(unsigned ndata, unsigned nparity, size_t len, size_t nstripes,
		    uint8_t *const *blocks)
{
	const unsigned nblk = ndata + nparity;
	void *v[ISAL_DIRECT_MAX];

	for (size_t s = 0; s < nstripes; s++) {
		memcpy(v, blocks + s * nblk, nblk * sizeof(*v));
		if (nparity == 1 ? xor_gen((int)nblk, (int)len, v) : pq_gen((int)nblk, (int)len, v))
			return -1;
	}
	return 0;
}

/* Row r of the RAID-6 generator matrix, computed with ISA-L's own gf_mul. */
static unsigned char isal_direct_coef(unsigned ndata, unsigned r, unsigned k)
{
	unsigned char g = 1;

	if (r < ndata)
		return r == k;
	if (r == ndata)
		return 1;
	for (unsigned i = 0; i < k; i++)
		g = gf_mul(g, 2);
	return g;
}

int isal_direct_recover2(unsigned ndata, size_t len, size_t nstripes, uint8_t *const *blocks,
			 const unsigned lost[2])
{
	const unsigned k = ndata, nblk = ndata + 2;
	unsigned char mat[ISAL_DIRECT_MAX_REC * ISAL_DIRECT_MAX_REC];
	unsigned char inv[sizeof(mat)], coef[2 * ISAL_DIRECT_MAX_REC];
	unsigned char tbls[32 * 2 * ISAL_DIRECT_MAX_REC];
	unsigned char *src[ISAL_DIRECT_MAX_REC], *dst[2];
	unsigned surv[ISAL_DIRECT_MAX_REC], nsurv = 0;

	if (k > ISAL_DIRECT_MAX_REC)
		return -1;
	for (unsigned i = 0; i < nblk && nsurv < k; i++)
		if (i != lost[0] && i != lost[1])
			surv[nsurv++] = i;
	for (unsigned i = 0; i < k; i++)
		for (unsigned j = 0; j < k; j++)
			mat[i * k + j] = isal_direct_coef(ndata, surv[i], j);
	if (gf_invert_matrix(mat, inv, (int)k))
		return -1;
	/* A lost data block's generator row is a unit vector: its decode row is that row of inv. */
	for (unsigned l = 0; l < 2; l++)
		memcpy(coef + l * k, inv + lost[l] * k, k);
	ec_init_tables((int)k, 2, coef, tbls);
	for (size_t s = 0; s < nstripes; s++) {
		uint8_t *const *blk = blocks + s * nblk;

		for (unsigned i = 0; i < k; i++)
			src[i] = blk[surv[i]];
		dst[0] = blk[lost[0]];
		dst[1] = blk[lost[1]];
		ec_encode_data((int)len, (int)k, 2, tbls, src, dst);
	}
	return 0;
}
