/* SPDX-License-Identifier: MIT */
/* The reference itself, checked against an implementation nobody here wrote: ISA-L called directly. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <isa-l/raid.h>

#include <libgraid/graid.h>

#include "testutil.h"

/* Aligned buffers so ISA-L's own rules (32-byte pointers and lengths) hold. */
static void ref_vs_isal(uint64_t *rng, unsigned ndata, unsigned nparity, size_t len)
{
	unsigned nblk = ndata + nparity;
	uint8_t *mine[GRAID_GF_MAX_DATA + 2];
	void *theirs[GRAID_GF_MAX_DATA + 2];

	for (unsigned i = 0; i < nblk; i++) {
		cr_assert_eq(posix_memalign((void **)&mine[i], 64, len), 0);
		cr_assert_eq(posix_memalign(&theirs[i], 64, len), 0);
		tu_fill(rng, mine[i], len);
		memcpy(theirs[i], mine[i], len);
	}
	graid_gf_ref_gen(ndata, nparity, 0, len, mine);
	cr_assert_eq(nparity == 1 ? xor_gen((int)nblk, (int)len, theirs)
				  : pq_gen((int)nblk, (int)len, theirs), 0);
	for (unsigned p = ndata; p < nblk; p++)
		cr_assert_eq(memcmp(mine[p], theirs[p], len), 0,
			     "%s of %u data blocks x %zu differs from ISA-L's (seed %llu)",
			     p == ndata ? "P" : "Q", ndata, len, (unsigned long long)tu_seed());
	for (unsigned i = 0; i < nblk; i++) {
		free(mine[i]);
		free(theirs[i]);
	}
}

Test(reference, p_and_q_equal_isal_pq_gen_and_xor_gen)
{
	uint64_t rng = tu_seed() ^ 0x495341;
	static const unsigned ndatas[] = { 2, 3, 4, 8, 16, 22, 30, 64, 128, 200, 253 };

	for (size_t i = 0; i < sizeof(ndatas) / sizeof(ndatas[0]); i++)
		for (unsigned np = 1; np <= 2; np++)
			ref_vs_isal(&rng, ndatas[i], np, 32 * (1 + tu_rand(&rng) % 300));
}

/* ISA-L's pq_check agrees with the reference's verdict on clean and damaged stripes. */
Test(reference, check_agrees_with_isal_pq_check)
{
	uint64_t rng = tu_seed() ^ 0x636b;

	for (int r = 0; r < 50; r++) {
		unsigned ndata = 2 + tu_rand(&rng) % 30, nblk = ndata + 2;
		size_t len = 32 * (1 + tu_rand(&rng) % 64);
		uint8_t *b[64];

		for (unsigned i = 0; i < nblk; i++) {
			cr_assert_eq(posix_memalign((void **)&b[i], 64, len), 0);
			tu_fill(&rng, b[i], len);
		}
		graid_gf_ref_gen(ndata, 2, 0, len, b);
		if (r & 1)
			b[tu_rand(&rng) % nblk][tu_rand(&rng) % len] ^= 0x5a;
		cr_assert_eq(pq_check((int)nblk, (int)len, (void **)b) != 0,
			     graid_gf_ref_check(ndata, 2, len, b) != GRAID_CHECK_CLEAN);
		for (unsigned i = 0; i < nblk; i++)
			free(b[i]);
	}
}
