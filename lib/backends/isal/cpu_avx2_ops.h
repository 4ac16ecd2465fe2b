/* SPDX-License-Identifier: MIT */
/*
 * The primitives of cpu_simd_pass.h on 32-byte AVX2 vectors, shared by the avx2 and
 * avx2-gfni variants. The includer defines SIMD_PREFIX and SIMD_TARGET (which must
 * include AVX2), and may override a primitive, before including cpu_simd_pass.h.
 */
#include <immintrin.h>

typedef __m256i simd_vec;
#define SIMD_BYTES 32
#define SIMD_LD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
/*
 * Plain stores, and streaming ones (to a 32-byte aligned address) for plans that ask for
 * them: batches whose results go to the drives, not back through the caches (the pass
 * says when it takes them; docs/CPU-ENGINE.md, "Streaming stores").
 */
#define SIMD_ST(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define SIMD_STNT(p, v) _mm256_stream_si256((__m256i *)(void *)(p), (v))
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
/* q * g ^ d with d off q's chain (cpu_simd_pass.h, mul2_xor: measured faster here). */
#define SIMD_HORNER_PIN 1
