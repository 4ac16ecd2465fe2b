/* SPDX-License-Identifier: MIT */
/*
 * The primitives of cpu_simd_pass.h on 64-byte AVX-512 (F + BW) vectors, shared by the
 * avx512 and avx512-gfni variants. The includer defines SIMD_PREFIX and SIMD_TARGET
 * (which must include avx512f and avx512bw), and may override a primitive, before
 * including cpu_simd_pass.h.
 */
#include <immintrin.h>

typedef __m512i simd_vec;
#define SIMD_BYTES 64
#define SIMD_LD(p) _mm512_loadu_si512((const void *)(p))
/* Plain stores, and streaming ones (64-byte aligned) where the plan asks, as for AVX2. */
#define SIMD_ST(p, v) _mm512_storeu_si512((void *)(p), (v))
#define SIMD_STNT(p, v) _mm512_stream_si512((void *)(p), (v))
#define SIMD_XOR(a, b) _mm512_xor_si512((a), (b))
#define SIMD_OR(a, b) _mm512_or_si512((a), (b))
#define SIMD_AND(a, b) _mm512_and_si512((a), (b))
/* vpternlog with the truth table of a ^ b ^ c (0x96): one instruction for two XORs. */
#define SIMD_XOR3(a, b, c) _mm512_ternarylogic_epi64((a), (b), (c), 0x96)
#define SIMD_ZERO() _mm512_setzero_si512()
#define SIMD_SET1(b) _mm512_set1_epi8((char)(b))
#define SIMD_ADD8(a, b) _mm512_add_epi8((a), (b))
/* Compares give a mask register here; the pass wants the bytes, 0 or 0xff. */
#define SIMD_CMPGT8(a, b) _mm512_movm_epi8(_mm512_cmpgt_epi8_mask((a), (b)))
#define SIMD_SRLI16(v, n) _mm512_srli_epi16((v), (n))
#define SIMD_SHUF(t, i) _mm512_shuffle_epi8((t), (i))
#define SIMD_TABLE(p) _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define SIMD_ALLZERO(v) (_mm512_test_epi64_mask((v), (v)) == 0)
