/* SPDX-License-Identifier: MIT */
/*
 * AVX2 + GFNI parity routines (CPUs with GFNI but no AVX-512: Intel's hybrid cores): every
 * GF(2^8) multiply one GF2P8AFFINEQB on 32 bytes (VEX encoded).
 */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#define SIMD_PREFIX avx2_gfni
#define SIMD_TARGET "avx2,gfni"
#include "cpu_avx2_ops.h"
#define SIMD_AFFINE(v, m) _mm256_gf2p8affine_epi64_epi8((v), (m), 0)
#define SIMD_SET1_64(x) _mm256_set1_epi64x((long long)(x))
#include "cpu_gfni_ops.h"

#include "cpu_simd_pass.h"

static bool avx2_gfni_supported(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni");
}

#else /* not x86-64 */

GRAID_CPU_VARIANT_ABSENT(avx2_gfni)

#endif

const struct graid_cpu_variant graid__cpu_variant_avx2_gfni = {
	.name = "avx2-gfni",
	.supported = avx2_gfni_supported,
	.group_size = 8,
	.run = avx2_gfni_run,
};
