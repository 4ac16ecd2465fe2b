/* SPDX-License-Identifier: MIT */
/* AVX-512 + GFNI parity routines: every GF(2^8) multiply one GF2P8AFFINEQB on 64 bytes. */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#define SIMD_PREFIX avx512_gfni
#define SIMD_TARGET "avx512f,avx512bw,gfni"
#include "cpu_avx512_ops.h"
#define SIMD_AFFINE(v, m) _mm512_gf2p8affine_epi64_epi8((v), (m), 0)
#define SIMD_SET1_64(x) _mm512_set1_epi64((long long)(x))
#include "cpu_gfni_ops.h"

#include "cpu_simd_pass.h"

static bool avx512_gfni_supported(void)
{
	return graid__cpu_has_avx512bw() && __builtin_cpu_supports("gfni");
}

#else /* not x86-64 */

GRAID_CPU_VARIANT_ABSENT(avx512_gfni)

#endif

const struct graid_cpu_variant graid__cpu_variant_avx512_gfni = {
	.name = "avx512-gfni",
	.supported = avx512_gfni_supported,
	.group_size = 8,
	.run = avx512_gfni_run,
};
