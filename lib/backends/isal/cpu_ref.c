/* SPDX-License-Identifier: MIT */
/*
 * What every CPU routine variant leans on, below all of them: the reference pass over a
 * byte range (a variant's head and tail, or the whole of a shape it does not take) and the
 * AVX-512 feature check both AVX-512 variants share.
 */
#include <libgraid/graid_backend.h>

#include "cpu_variants.h"

bool graid__cpu_ref_range(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t off,
			  size_t n)
{
	unsigned char *v[GRAID_GF_MAX_DATA + 2];

	if (n == 0)
		return true;
	switch (pl->kind) {
	case GRAID_CPU_KIND_GEN:
		graid_gf_ref_gen(pl->ndata, pl->nparity, off, n, blk);
		return true;
	case GRAID_CPU_KIND_RECOVER:
		graid_gf_ref_recover(pl->ndata, pl->nparity, off, n, blk, pl->nlost, pl->lost);
		return true;
	case GRAID_CPU_KIND_CHECK:
		break;
	}
	for (unsigned i = 0; i < pl->ndata + pl->nparity; i++)
		v[i] = blk[i] + off;
	return graid_gf_ref_check(pl->ndata, pl->nparity, n, v) == GRAID_CHECK_CLEAN;
}

#if defined(__x86_64__)
/* GCC's and clang's check also asks the OS whether it saves the ZMM state. */
bool graid__cpu_has_avx512bw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}
#else
bool graid__cpu_has_avx512bw(void)
{
	return false;
}
#endif
