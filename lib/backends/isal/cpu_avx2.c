/* SPDX-License-Identifier: MIT */
/* AVX2 parity routines: the pass of cpu_simd_pass.h on 32-byte vectors. */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

/*
 * Function-level targets instead of -mavx2 for the file: nothing here can leak AVX2 into a
 * path that runs before the CPU check, and the build needs no per-file flags.
 */
#define SIMD_PREFIX avx2
#define SIMD_TARGET "avx2"
typedef __m256i simd_vec;
#define SIMD_BYTES 32
#define SIMD_LD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
/*
 * Plain stores, not streaming ones: streaming would save the read-for-ownership of the
 * results, but measured here it fell to a third of the speed (for ISA-L's pq_gen too) when
 * blocks lie 64 KiB + 32 or + 64 bytes apart, and its gain elsewhere was within the noise.
 * Recovered data is usually read next, so keeping it in cache is no loss.
 */
#define SIMD_ST(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define SIMD_XOR(a, b) _mm256_xor_si256((a), (b))
#define SIMD_OR(a, b) _mm256_or_si256((a), (b))
#define SIMD_AND(a, b) _mm256_and_si256((a), (b))
#define SIMD_ZERO() _mm256_setzero_si256()
#define SIMD_SET1(b) _mm256_set1_epi8((char)(b))
#define SIMD_ADD8(a, b) _mm256_add_epi8((a), (b))
#define SIMD_CMPGT8(a, b) _mm256_cmpgt_epi8((a), (b))
#define SIMD_SRLI16(v, n) _mm256_srli_epi16((v), (n))
#define SIMD_SHUF(t, i) _mm256_shuffle_epi8((t), (i))
#define SIMD_TABLE(p) \
	_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define SIMD_ALLZERO(v) _mm256_testz_si256((v), (v))

#include "cpu_simd_pass.h"

static bool avx2_supported(void)
{
	/*
	 * GCC's and clang's run-time check also asks the OS whether it saves YMM state. The
	 * init makes it safe even from a constructor that runs before libgcc's own.
	 */
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

#else /* not x86-64 */

static bool avx2_run(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len)
{
	return graid__cpu_ref_range(pl, blk, 0, len);
}

static bool avx2_supported(void)
{
	return false;
}

#endif

const struct graid_cpu_variant graid__cpu_variant_avx2 = {
	.name = "avx2",
	.supported = avx2_supported,
	.group_size = 8,
	/*
	 * Against pq_gen (docs/CPU-ENGINE.md): about even at 8 data blocks (0.85x to 1.17x; its
	 * streaming stores pay from DRAM), 1.4x to 2.6x from 10 on, where its blocks fight over
	 * cache sets.
	 */
	.gen_pq_from = 9,
	.run = avx2_run,
};
