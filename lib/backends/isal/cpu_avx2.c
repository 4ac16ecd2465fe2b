/* SPDX-License-Identifier: MIT */
/* AVX2 parity routines, the only AVX2 code in libgraid: one pass of P/Q syndromes, then finish. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

/*
 * Function-level targets instead of -mavx2 for the file: nothing here can leak AVX2 into a
 * path that runs before the CPU check, and the build needs no per-file flags.
 */
#define AVX2_FN __attribute__((target("avx2")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2")))

/*
 * Bytes per sub-range when a wide stripe is done in groups: p and q of one sub-range stay
 * in a stack buffer (2 x 4 KiB, well inside L1) while each group of sources streams by.
 * A plan may ask for a smaller one (tests, to cross many sub-range edges); 8 and 16 KiB
 * were measured no faster (docs/CPU-ENGINE.md) and would cost a caller's stack 2-4x more.
 */
#define AVX2_BLOCK 4096u
#define AVX2_BLOCK_MAX AVX2_BLOCK

/* One stripe's pointers, in the order of its plan. */
struct avx2_stripe {
	const uint8_t *src[GRAID_CPU_MAX_SRC];
	uint8_t *dst[2];
	const uint8_t *aux[2];
};

/* The two constants of a plan as vpshufb tables, loaded once per stripe. */
struct avx2_consts {
	__m256i c0lo, c0hi, c1lo, c1hi;
};

AVX2_INLINE __m256i avx2_ld(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/*
 * Plain stores, not streaming ones: streaming would save the read-for-ownership of the
 * results, but measured here it fell to a third of the speed (for ISA-L's pq_gen too) when
 * blocks lie 64 KiB + 32 or + 64 bytes apart, and its gain elsewhere was within the noise.
 * Recovered data is usually read next, so keeping it in cache is no loss.
 */
AVX2_INLINE void avx2_st(uint8_t *p, __m256i v)
{
	_mm256_storeu_si256((__m256i *)(void *)p, v);
}

/* A 16-entry vpshufb table, the same in both 128-bit lanes. */
AVX2_INLINE __m256i avx2_table(const uint8_t *t)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)t));
}

/*
 * q * g: shift each byte left, and where its top bit was set (a signed byte below zero)
 * reduce by the low byte of the polynomial.
 */
AVX2_INLINE __m256i avx2_mul2(__m256i q)
{
	const __m256i top = _mm256_cmpgt_epi8(_mm256_setzero_si256(), q);

	return _mm256_xor_si256(_mm256_add_epi8(q, q),
				_mm256_and_si256(top, _mm256_set1_epi8(GRAID_GF_POLY_LOW)));
}

/*
 * The extra q *= g of lost blocks after a source: rare, so a branch that the predictor
 * learns once per batch beats any branch-free form.
 */
AVX2_INLINE void avx2_mul2_n(__m256i *q, const int W, unsigned n)
{
	for (; n; n--)
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			q[w] = avx2_mul2(q[w]);
}

/*
 * c * v by two table look-ups: multiplication distributes over XOR, so
 * c*v = c*(v & 0x0f) ^ c*(v & 0xf0), each a 16-entry table indexed by one nibble.
 */
AVX2_INLINE __m256i avx2_mulc(__m256i v, __m256i lo, __m256i hi)
{
	const __m256i m = _mm256_set1_epi8(0x0f);
	const __m256i l = _mm256_and_si256(v, m);
	const __m256i h = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);

	return _mm256_xor_si256(_mm256_shuffle_epi8(lo, l), _mm256_shuffle_epi8(hi, h));
}

/*
 * One position of W vectors (W*32 bytes at stripe offset i) through group g of the plan.
 * p and q come from the first source (group 0) or the accumulators (later groups), go to
 * the accumulators (not the last group) or through the op's finishing step.
 */
AVX2_INLINE void avx2_step(const struct graid_cpu_plan *pl, const struct avx2_stripe *st,
			   const struct avx2_consts *k, enum graid_cpu_op op, const int W,
			   unsigned g, size_t i, __m256i *accp, __m256i *accq, __m256i *bad)
{
	const bool wq = op != GRAID_CPU_XOR && op != GRAID_CPU_CHECK_P;
	/* Only ops with lost data blocks among the sources' indices have extra g's. */
	const bool gaps = op == GRAID_CPU_DP || op == GRAID_CPU_DQ || op == GRAID_CPU_DD;
	const unsigned j_end = pl->group[g + 1];
	unsigned j = pl->group[g];
	__m256i p[4], q[4];

	if (g > 0) {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			p[w] = _mm256_load_si256(accp + w);
			q[w] = wq ? _mm256_load_si256(accq + w) : p[w];
		}
	} else if (pl->nsrc) {
		/* Start from the first source: no multiply of a zero q, no XOR into zero p. */
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			p[w] = q[w] = avx2_ld(st->src[0] + i + 32 * w);
		if (gaps)
			avx2_mul2_n(q, W, pl->mul2[0]);
		j = 1;
	} else {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			p[w] = q[w] = _mm256_setzero_si256();
	}
	for (; j < j_end; j++) {
		const uint8_t *sp = st->src[j] + i;

#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			const __m256i d = avx2_ld(sp + 32 * w);

			p[w] = _mm256_xor_si256(p[w], d);
			if (wq)
				q[w] = _mm256_xor_si256(avx2_mul2(q[w]), d);
		}
		if (gaps)
			avx2_mul2_n(q, W, pl->mul2[j]);
	}
	if (g + 1 < pl->ngroup) {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			_mm256_store_si256(accp + w, p[w]);
			if (wq)
				_mm256_store_si256(accq + w, q[w]);
		}
		return;
	}
#pragma GCC unroll 4
	for (int w = 0; w < W; w++) {
		const size_t o = i + 32 * (size_t)w;
		__m256i dx, pxy, qxy;

		switch (op) {
		case GRAID_CPU_XOR:
			avx2_st(st->dst[0] + o, p[w]);
			break;
		case GRAID_CPU_PQ:
			avx2_st(st->dst[0] + o, p[w]);
			avx2_st(st->dst[1] + o, q[w]);
			break;
		case GRAID_CPU_Q:
			avx2_st(st->dst[0] + o, q[w]);
			break;
		case GRAID_CPU_DP:
			dx = avx2_mulc(_mm256_xor_si256(q[w], avx2_ld(st->aux[1] + o)), k->c0lo,
				       k->c0hi);
			avx2_st(st->dst[0] + o, dx);
			avx2_st(st->dst[1] + o, _mm256_xor_si256(p[w], dx));
			break;
		case GRAID_CPU_DQ:
			dx = _mm256_xor_si256(p[w], avx2_ld(st->aux[0] + o));
			avx2_st(st->dst[0] + o, dx);
			avx2_st(st->dst[1] + o,
				_mm256_xor_si256(q[w], avx2_mulc(dx, k->c0lo, k->c0hi)));
			break;
		case GRAID_CPU_DD:
			pxy = _mm256_xor_si256(p[w], avx2_ld(st->aux[0] + o));
			qxy = _mm256_xor_si256(q[w], avx2_ld(st->aux[1] + o));
			dx = _mm256_xor_si256(avx2_mulc(pxy, k->c0lo, k->c0hi),
					      avx2_mulc(qxy, k->c1lo, k->c1hi));
			avx2_st(st->dst[0] + o, dx);
			avx2_st(st->dst[1] + o, _mm256_xor_si256(pxy, dx));
			break;
		case GRAID_CPU_CHECK_P:
			*bad = _mm256_or_si256(*bad, p[w]);
			break;
		case GRAID_CPU_CHECK_PQ:
			*bad = _mm256_or_si256(
				*bad, _mm256_or_si256(
					      _mm256_xor_si256(p[w], avx2_ld(st->aux[0] + o)),
					      _mm256_xor_si256(q[w], avx2_ld(st->aux[1] + o))));
			break;
		}
	}
}

/*
 * Bytes [i0, i0+n) of a stripe, n a multiple of 32 (and at most AVX2_BLOCK when the plan
 * has several groups): each group sweeps the whole range before the next starts, so only
 * one group's sources stream at a time. Returns false if a check found a mismatch.
 */
AVX2_INLINE bool avx2_range(const struct graid_cpu_plan *pl, const struct avx2_stripe *st,
			    const struct avx2_consts *k, enum graid_cpu_op op, size_t i0,
			    size_t n, __m256i *accp, __m256i *accq)
{
	__m256i bad = _mm256_setzero_si256();

	for (unsigned g = 0; g < pl->ngroup; g++) {
		size_t a = 0;

		for (; a + 128 <= n; a += 128)
			avx2_step(pl, st, k, op, 4, g, i0 + a, accp + a / 32, accq + a / 32, &bad);
		for (; a < n; a += 32)
			avx2_step(pl, st, k, op, 1, g, i0 + a, accp + a / 32, accq + a / 32, &bad);
	}
	return _mm256_testz_si256(bad, bad);
}

AVX2_INLINE bool avx2_run_op(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len,
			     enum graid_cpu_op op)
{
	_Alignas(32) __m256i accp[AVX2_BLOCK_MAX / 32], accq[AVX2_BLOCK_MAX / 32];
	struct avx2_stripe st;
	struct avx2_consts k;
	const size_t body = len & ~(size_t)31;
	const size_t block = pl->block ? (pl->block < AVX2_BLOCK_MAX ? pl->block : AVX2_BLOCK_MAX)
						 & ~(size_t)127
				       : AVX2_BLOCK;
	const size_t chunk = pl->ngroup > 1 ? (block ? block : 128) : body;

	if (len < 32)
		return graid__cpu_ref_range(pl, blk, 0, len);
	for (unsigned j = 0; j < pl->nsrc; j++)
		st.src[j] = blk[pl->src[j]];
	st.dst[0] = graid_cpu_block(pl, blk, pl->dst[0]);
	st.dst[1] = graid_cpu_block(pl, blk, pl->dst[1]);
	st.aux[0] = graid_cpu_block(pl, blk, pl->aux[0]);
	st.aux[1] = graid_cpu_block(pl, blk, pl->aux[1]);
	k.c0lo = avx2_table(pl->nib[0]);
	k.c0hi = avx2_table(pl->nib[0] + 16);
	k.c1lo = avx2_table(pl->nib[1]);
	k.c1hi = avx2_table(pl->nib[1] + 16);
	for (size_t i0 = 0; i0 < body; i0 += chunk)
		if (!avx2_range(pl, &st, &k, op, i0, body - i0 < chunk ? body - i0 : chunk, accp,
				accq))
			return false;
	/*
	 * A tail shorter than a vector: redo the last 32 bytes as a range of its own. Bytes it
	 * shares with the body come out the same, since no op reads what it writes.
	 */
	if (body != len)
		return avx2_range(pl, &st, &k, op, len - 32, 32, accp, accq);
	return true;
}

/* One copy of the loops per op, so that each has only its own finishing step inside. */
static AVX2_FN bool avx2_run(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len)
{
	switch (pl->op) {
	case GRAID_CPU_XOR:
		return avx2_run_op(pl, blk, len, GRAID_CPU_XOR);
	case GRAID_CPU_PQ:
		return avx2_run_op(pl, blk, len, GRAID_CPU_PQ);
	case GRAID_CPU_Q:
		return avx2_run_op(pl, blk, len, GRAID_CPU_Q);
	case GRAID_CPU_DP:
		return avx2_run_op(pl, blk, len, GRAID_CPU_DP);
	case GRAID_CPU_DQ:
		return avx2_run_op(pl, blk, len, GRAID_CPU_DQ);
	case GRAID_CPU_DD:
		return avx2_run_op(pl, blk, len, GRAID_CPU_DD);
	case GRAID_CPU_CHECK_P:
		return avx2_run_op(pl, blk, len, GRAID_CPU_CHECK_P);
	case GRAID_CPU_CHECK_PQ:
		return avx2_run_op(pl, blk, len, GRAID_CPU_CHECK_PQ);
	}
	return graid__cpu_ref_range(pl, blk, 0, len);
}

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
