/* SPDX-License-Identifier: MIT */
/* AVX-512 parity routines: the pass of cpu_simd_pass.h on 64-byte vectors (F + BW). */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#define SIMD_PREFIX avx512
#define SIMD_TARGET "avx512f,avx512bw"
#include "cpu_avx512_ops.h"
/*
 * q * g: the top bits straight into a mask (vpmovb2m), the polynomial's low byte where
 * they were set (a zeroing move), added to q + q: three instructions and one vpternlog
 * with the source's XOR, where AVX2 needs five.
 */
#define SIMD_MUL2(q)                                                                      \
	_mm512_xor_si512(_mm512_add_epi8((q), (q)),                                       \
			 _mm512_maskz_mov_epi8(_mm512_movepi8_mask(q),                    \
					       _mm512_set1_epi8(GRAID_GF_POLY_LOW)))

#include "cpu_simd_pass.h"

#else /* not x86-64 */

GRAID_CPU_VARIANT_ABSENT(avx512)

#endif

static bool avx512_supported(void)
{
	return graid__cpu_has_avx512bw();
}

const struct graid_cpu_variant graid__cpu_variant_avx512 = {
	.name = "avx512",
	.supported = avx512_supported,
	.group_size = 8,
	.run = avx512_run,
};
