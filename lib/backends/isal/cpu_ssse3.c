/* SPDX-License-Identifier: MIT */
/* SSSE3 parity routines: the pass of cpu_simd_pass.h on 16-byte vectors, for x86-64 without AVX2. */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <tmmintrin.h>

/* SSSE3 is the first level with pshufb, which the constant multiplies need. */
#define SIMD_PREFIX ssse3
#define SIMD_TARGET "ssse3"
typedef __m128i simd_vec;
#define SIMD_BYTES 16
#define SIMD_LD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
/* Legacy SSE takes only aligned memory operands: aligned stripes get loads that fold. */
#define SIMD_LDA(p) _mm_load_si128((const __m128i *)(const void *)(p))
#define SIMD_ST(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define SIMD_STNT(p, v) _mm_stream_si128((__m128i *)(void *)(p), (v))
#define SIMD_XOR(a, b) _mm_xor_si128((a), (b))
#define SIMD_OR(a, b) _mm_or_si128((a), (b))
#define SIMD_AND(a, b) _mm_and_si128((a), (b))
#define SIMD_ZERO() _mm_setzero_si128()
#define SIMD_SET1(b) _mm_set1_epi8((char)(b))
#define SIMD_ADD8(a, b) _mm_add_epi8((a), (b))
#define SIMD_CMPGT8(a, b) _mm_cmpgt_epi8((a), (b))
#define SIMD_SRLI16(v, n) _mm_srli_epi16((v), (n))
#define SIMD_SHUF(t, i) _mm_shuffle_epi8((t), (i))
#define SIMD_TABLE(p) SIMD_LD(p)
/* ptest is SSE4.1: compare with zero and gather the byte masks instead. */
#define SIMD_ALLZERO(v) (_mm_movemask_epi8(_mm_cmpeq_epi8((v), _mm_setzero_si128())) == 0xffff)

#include "cpu_simd_pass.h"

static bool ssse3_supported(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("ssse3");
}

#else /* not x86-64 */

GRAID_CPU_VARIANT_ABSENT(ssse3)

#endif

const struct graid_cpu_variant graid__cpu_variant_ssse3 = {
	.name = "ssse3",
	.supported = ssse3_supported,
	.group_size = 8,
	.run = ssse3_run,
};
