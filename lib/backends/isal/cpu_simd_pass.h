/* SPDX-License-Identifier: MIT */
/*
 * One pass of P/Q syndromes and its finishing steps, written once for every vector width.
 *
 * Not an ordinary header: a variant's file defines the vector type and its primitives, then
 * includes this, which expands to that variant's static functions (SIMD_NAME(run) is the
 * one to put in its graid_cpu_variant). The x86 files are cpu_avx2.c and cpu_ssse3.c; a
 * wider or GFNI variant would be one more such file. Everything here is built for
 * SIMD_TARGET only, by function attribute, so it cannot run before the variant's
 * supported() check.
 *
 * The includer defines:
 *   SIMD_PREFIX           name prefix of the expanded functions (avx2, ssse3, ...)
 *   SIMD_TARGET           the target attribute string ("avx2", "ssse3", ...)
 *   simd_vec, SIMD_BYTES  the vector type and its size in bytes
 *   SIMD_LD(p), SIMD_ST(p, v)          unaligned load and (plain) store
 *   SIMD_STNT(p, v)                    streaming store to a SIMD_BYTES-aligned address
 *   SIMD_XOR, SIMD_OR, SIMD_AND(a, b)  bitwise
 *   SIMD_ZERO(), SIMD_SET1(byte)       constants
 *   SIMD_ADD8(a, b), SIMD_CMPGT8(a, b) per-byte add and signed compare
 *   SIMD_SRLI16(v, n)                  per-16-bit logical right shift
 *   SIMD_SHUF(table, idx)              per-byte table look-up within 16-byte lanes
 *   SIMD_TABLE(p)                      a 16-byte table, repeated in every lane
 *   SIMD_ALLZERO(v)                    whether every bit of v is 0
 * and may define:
 *   SIMD_MUL2(q)          q * g (0x02) per byte, where the ISA has something better than
 *                         the compare / add / and / xor of the default (GFNI: one affine)
 *   SIMD_MULC(v, lo, hi)  v * c per byte, c given by the two consts loaded with
 *   SIMD_KLO(pl, i), SIMD_KHI(pl, i)   (default: the nibble tables of plan constant i and
 *                         two shuffles; GFNI: c's 8x8 bit matrix, one affine, hi unused)
 *   SIMD_XOR3(a, b, c)    a ^ b ^ c in one instruction (AVX-512: vpternlog)
 *   SIMD_HORNER_PIN       keep each source's XOR off q's chain from one source to the
 *                         next (see mul2_xor; AVX2 gains, SSE's two-operand form loses)
 *   SIMD_LDA(p)           an aligned load, for an ISA whose ALU instructions take only
 *                         aligned memory operands (SSE): then stripes whose every source is
 *                         vector-aligned run a second copy of the loops whose loads fold
 *                         into the XORs, one instruction instead of two.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_variants.h"

#define SIMD_CAT2(a, b) a##_##b
#define SIMD_CAT(a, b) SIMD_CAT2(a, b)
#define SIMD_NAME(n) SIMD_CAT(SIMD_PREFIX, n)

#define SIMD_FN __attribute__((target(SIMD_TARGET)))
#define SIMD_INLINE static inline __attribute__((always_inline, target(SIMD_TARGET)))

/* Vectors per unrolled step: 4 p and 4 q accumulators leave room in 16 registers. */
#define SIMD_W 4
#define SIMD_STEP (SIMD_W * SIMD_BYTES)

/*
 * Bytes per sub-range when a wide stripe is done in groups: p and q of one sub-range stay
 * in a stack buffer (2 x 4 KiB, well inside L1) while each group of sources streams by.
 * A plan may ask for a smaller one (tests, to cross many sub-range edges); 8 and 16 KiB
 * were measured no faster (docs/CPU-ENGINE.md) and would cost a caller's stack 2-4x more.
 */
#define SIMD_BLOCK 4096u

#ifdef SIMD_LDA
#define SIMD_LOAD(al, p) ((al) ? SIMD_LDA(p) : SIMD_LD(p))
#else
#define SIMD_LOAD(al, p) SIMD_LD(p)
#endif

#define SIMD_PUT(nt, p, v)                                                                \
	do {                                                                               \
		if (nt)                                                                    \
			SIMD_STNT((p), (v));                                               \
		else                                                                       \
			SIMD_ST((p), (v));                                                 \
	} while (0)

/* One stripe's pointers, in the order of its plan. */
struct SIMD_NAME(stripe) {
	const uint8_t *src[GRAID_CPU_MAX_SRC];
	uint8_t *dst[2];
	const uint8_t *aux[2];
};

/* The two constants of a plan as shuffle tables, loaded once per stripe. */
struct SIMD_NAME(consts) {
	simd_vec c0lo, c0hi, c1lo, c1hi;
};

#ifndef SIMD_XOR3
#define SIMD_XOR3(a, b, c) SIMD_XOR(SIMD_XOR((a), (b)), (c))
#endif
#ifndef SIMD_KLO
#define SIMD_KLO(pl, i) SIMD_TABLE((pl)->nib[i])
#define SIMD_KHI(pl, i) SIMD_TABLE((pl)->nib[i] + 16)
#endif

/*
 * q * g: shift each byte left, and where its top bit was set (a signed byte below zero)
 * reduce by the low byte of the polynomial.
 */
SIMD_INLINE simd_vec SIMD_NAME(mul2)(simd_vec q)
{
#ifdef SIMD_MUL2
	return SIMD_MUL2(q);
#else
	const simd_vec top = SIMD_CMPGT8(SIMD_ZERO(), q);

	return SIMD_XOR(SIMD_ADD8(q, q), SIMD_AND(top, SIMD_SET1(GRAID_GF_POLY_LOW)));
#endif
}

/* q * g ^ d, the step of Horner's rule for each source. */
SIMD_INLINE simd_vec SIMD_NAME(mul2_xor)(simd_vec q, simd_vec d)
{
#ifdef SIMD_MUL2
	return SIMD_XOR(SIMD_MUL2(q), d);
#else
	const simd_vec top = SIMD_CMPGT8(SIMD_ZERO(), q);
#ifdef SIMD_HORNER_PIN
	/*
	 * d joins q + q, not the reduction: then q's chain from one source to the next is
	 * compare, and, xor (three instructions, none waiting on a load) instead of four with
	 * the loaded xor among them. GCC reassociates the XORs as it likes (it put d on the
	 * chain for P+Q generation and check, not for recovery), so the empty asm pins the
	 * order. From DRAM, AVX2 P+Q generation at 12+2 to 64+2 and check went from 0.60-0.72x
	 * to 0.81-0.87x of a plain read on the AMD VM; SSSE3 lost 5-8 % at 8+2 with it
	 * (docs/CPU-ENGINE.md, "Loads before stores, and Horner's chain").
	 */
	simd_vec t = SIMD_XOR(SIMD_ADD8(q, q), d);

	__asm__("" : "+v"(t));
	return SIMD_XOR(t, SIMD_AND(top, SIMD_SET1(GRAID_GF_POLY_LOW)));
#else
	return SIMD_XOR3(SIMD_ADD8(q, q), SIMD_AND(top, SIMD_SET1(GRAID_GF_POLY_LOW)), d);
#endif
#endif
}

/*
 * The extra q *= g of lost blocks after a source: rare, so a branch that the predictor
 * learns once per batch beats any branch-free form.
 */
SIMD_INLINE void SIMD_NAME(mul2_n)(simd_vec *q, const int W, unsigned n)
{
	for (; n; n--)
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			q[w] = SIMD_NAME(mul2)(q[w]);
}

/*
 * c * v by two table look-ups: multiplication distributes over XOR, so
 * c*v = c*(v & 0x0f) ^ c*(v & 0xf0), each a 16-entry table indexed by one nibble.
 */
SIMD_INLINE simd_vec SIMD_NAME(mulc)(simd_vec v, simd_vec lo, simd_vec hi)
{
#ifdef SIMD_MULC
	(void)hi;
	return SIMD_MULC(v, lo, hi);
#else
	const simd_vec m = SIMD_SET1(0x0f);
	const simd_vec l = SIMD_AND(v, m);
	const simd_vec h = SIMD_AND(SIMD_SRLI16(v, 4), m);

	return SIMD_XOR(SIMD_SHUF(lo, l), SIMD_SHUF(hi, h));
#endif
}

/*
 * One position of W vectors (W * SIMD_BYTES bytes at stripe offset i) through group g of
 * the plan. p and q come from the first source (group 0) or the accumulators (later
 * groups), go to the accumulators (not the last group) or through the op's finishing step.
 */
SIMD_INLINE void SIMD_NAME(step)(const struct graid_cpu_plan *pl,
				 const struct SIMD_NAME(stripe) *st,
				 const struct SIMD_NAME(consts) *k, enum graid_cpu_op op,
				 const bool al, const bool nt, const int W, unsigned g, size_t i,
				 simd_vec *accp, simd_vec *accq, simd_vec *bad)
{
	const bool wq = op != GRAID_CPU_XOR && op != GRAID_CPU_CHECK_P;
	/* Only ops with lost data blocks among the sources' indices have extra g's. */
	const bool gaps = op == GRAID_CPU_DP || op == GRAID_CPU_DQ || op == GRAID_CPU_DD;
	const unsigned j_end = pl->group[g + 1];
	unsigned j = pl->group[g];
	simd_vec p[SIMD_W], q[SIMD_W];

	(void)al; /* unused without SIMD_LDA */
	if (g > 0) {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			p[w] = accp[w];
			q[w] = wq ? accq[w] : p[w];
		}
	} else if (pl->nsrc) {
		/* Start from the first source: no multiply of a zero q, no XOR into zero p. */
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			p[w] = q[w] = SIMD_LOAD(al, st->src[0] + i + SIMD_BYTES * w);
		if (gaps)
			SIMD_NAME(mul2_n)(q, W, pl->mul2[0]);
		j = 1;
	} else {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++)
			p[w] = q[w] = SIMD_ZERO();
	}
	for (; j < j_end; j++) {
		const uint8_t *sp = st->src[j] + i;

#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			const simd_vec d = SIMD_LOAD(al, sp + SIMD_BYTES * w);

			p[w] = SIMD_XOR(p[w], d);
			if (wq)
				q[w] = SIMD_NAME(mul2_xor)(q[w], d);
		}
		if (gaps)
			SIMD_NAME(mul2_n)(q, W, pl->mul2[j]);
	}
	if (g + 1 < pl->ngroup) {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			accp[w] = p[w];
			if (wq)
				accq[w] = q[w];
		}
		return;
	}
	/*
	 * Fold in P and Q before the first store. Loaded after it, at the same place in their
	 * pages (where every block of a page-aligned stripe is), they waited on the stores:
	 * with streaming stores, from DRAM, that cost data recovery a fifth of its speed on
	 * the AMD VM, and made streaming it a loss there (docs/CPU-ENGINE.md, "Loads before
	 * stores, and Horner's chain").
	 */
#pragma GCC unroll 4
	for (int w = 0; w < W; w++) {
		const size_t o = i + SIMD_BYTES * (size_t)w;

		if (graid_cpu_reads_aux(op, 0))
			p[w] = SIMD_XOR(p[w], SIMD_LOAD(al, st->aux[0] + o));
		if (graid_cpu_reads_aux(op, 1))
			q[w] = SIMD_XOR(q[w], SIMD_LOAD(al, st->aux[1] + o));
	}
#pragma GCC unroll 4
	for (int w = 0; w < W; w++) {
		const size_t o = i + SIMD_BYTES * (size_t)w;
		simd_vec dx;

		switch (op) {
		case GRAID_CPU_XOR:
			SIMD_PUT(nt, st->dst[0] + o, p[w]);
			break;
		case GRAID_CPU_PQ:
			SIMD_PUT(nt, st->dst[0] + o, p[w]);
			SIMD_PUT(nt, st->dst[1] + o, q[w]);
			break;
		case GRAID_CPU_Q:
			SIMD_PUT(nt, st->dst[0] + o, q[w]);
			break;
		case GRAID_CPU_DP:
			dx = SIMD_NAME(mulc)(q[w], k->c0lo, k->c0hi);
			SIMD_PUT(nt, st->dst[0] + o, dx);
			SIMD_PUT(nt, st->dst[1] + o, SIMD_XOR(p[w], dx));
			break;
		case GRAID_CPU_DQ:
			dx = p[w];
			SIMD_PUT(nt, st->dst[0] + o, dx);
			SIMD_PUT(nt, st->dst[1] + o,
				SIMD_XOR(q[w], SIMD_NAME(mulc)(dx, k->c0lo, k->c0hi)));
			break;
		case GRAID_CPU_DD:
			dx = SIMD_XOR(SIMD_NAME(mulc)(p[w], k->c0lo, k->c0hi),
				      SIMD_NAME(mulc)(q[w], k->c1lo, k->c1hi));
			SIMD_PUT(nt, st->dst[0] + o, dx);
			SIMD_PUT(nt, st->dst[1] + o, SIMD_XOR(p[w], dx));
			break;
		case GRAID_CPU_CHECK_P:
			*bad = SIMD_OR(*bad, p[w]);
			break;
		case GRAID_CPU_CHECK_PQ:
			*bad = SIMD_OR(*bad, SIMD_OR(p[w], q[w]));
			break;
		}
	}
}

/*
 * Bytes [i0, i0+n) of a stripe, n a multiple of SIMD_BYTES (and at most SIMD_BLOCK when
 * the plan has several groups): each group sweeps the whole range before the next starts,
 * so only one group's sources stream at a time. Returns false if a check found a mismatch.
 * nt: the results go by streaming stores (every output vector-aligned at i0).
 */
SIMD_INLINE bool SIMD_NAME(range)(const struct graid_cpu_plan *pl,
				  const struct SIMD_NAME(stripe) *st,
				  const struct SIMD_NAME(consts) *k, enum graid_cpu_op op,
				  const bool al, const bool nt, size_t i0, size_t n,
				  simd_vec *accp, simd_vec *accq)
{
	simd_vec bad = SIMD_ZERO();

	for (unsigned g = 0; g < pl->ngroup; g++) {
		size_t a = 0;

		for (; a + SIMD_STEP <= n; a += SIMD_STEP)
			SIMD_NAME(step)(pl, st, k, op, al, nt, SIMD_W, g, i0 + a,
					accp + a / SIMD_BYTES, accq + a / SIMD_BYTES, &bad);
		for (; a < n; a += SIMD_BYTES)
			SIMD_NAME(step)(pl, st, k, op, al, nt, 1, g, i0 + a,
					accp + a / SIMD_BYTES, accq + a / SIMD_BYTES, &bad);
	}
	return SIMD_ALLZERO(bad);
}

/* Whether every block the pass reads is vector-aligned (never, without SIMD_LDA). */
SIMD_INLINE bool SIMD_NAME(aligned)(const struct SIMD_NAME(stripe) *st, unsigned nsrc)
{
#ifdef SIMD_LDA
	uintptr_t any = (uintptr_t)st->aux[0] | (uintptr_t)st->aux[1];

	for (unsigned j = 0; j < nsrc; j++)
		any |= (uintptr_t)st->src[j];
	return !(any & (SIMD_BYTES - 1));
#else
	(void)st;
	(void)nsrc;
	return false;
#endif
}

/*
 * Whether the plan's results may go by streaming stores on this stripe: the plan asks for
 * them, every output is vector-aligned, and no block the pass reads (sources, and P and Q
 * for recovery) lies a little below an output within a page (the stall of
 * graid_cpu_alias()). The stack accumulators of wide plans are not checked (a stall there
 * would cost speed, never bytes).
 */
SIMD_INLINE bool SIMD_NAME(streams)(const struct graid_cpu_plan *pl,
				    const struct SIMD_NAME(stripe) *st)
{
	if (!pl->stream)
		return false;
	for (unsigned d = 0; d < 2; d++) {
		if (!st->dst[d])
			continue;
		if ((uintptr_t)st->dst[d] & (SIMD_BYTES - 1))
			return false;
		for (unsigned j = 0; j < pl->nsrc; j++)
			if (graid_cpu_alias(st->dst[d], st->src[j]))
				return false;
		for (unsigned a = 0; a < 2; a++)
			if (graid_cpu_reads_aux(pl->op, a) && graid_cpu_alias(st->dst[d], st->aux[a]))
				return false;
	}
	return true;
}

SIMD_INLINE bool SIMD_NAME(run_op)(const struct graid_cpu_plan *pl, uint8_t *const *blk,
				   size_t len, enum graid_cpu_op op)
{
	simd_vec accp[SIMD_BLOCK / SIMD_BYTES], accq[SIMD_BLOCK / SIMD_BYTES];
	struct SIMD_NAME(stripe) st;
	struct SIMD_NAME(consts) k;
	bool al, nt;
	const size_t body = len & ~(size_t)(SIMD_BYTES - 1);
	const size_t block = pl->block ? (pl->block < SIMD_BLOCK ? pl->block : SIMD_BLOCK) &
						 ~(size_t)(SIMD_STEP - 1)
				       : SIMD_BLOCK;
	const size_t chunk = pl->ngroup > 1 ? (block ? block : SIMD_STEP) : body;

	if (len < SIMD_BYTES)
		return graid__cpu_ref_range(pl, blk, 0, len);
	for (unsigned j = 0; j < pl->nsrc; j++)
		st.src[j] = blk[pl->src[j]];
	st.dst[0] = graid_cpu_block(pl, blk, pl->dst[0]);
	st.dst[1] = graid_cpu_block(pl, blk, pl->dst[1]);
	st.aux[0] = graid_cpu_block(pl, blk, pl->aux[0]);
	st.aux[1] = graid_cpu_block(pl, blk, pl->aux[1]);
	k.c0lo = SIMD_KLO(pl, 0);
	k.c0hi = SIMD_KHI(pl, 0);
	k.c1lo = SIMD_KLO(pl, 1);
	k.c1hi = SIMD_KHI(pl, 1);
	al = SIMD_NAME(aligned)(&st, pl->nsrc);
	/* A check writes nothing. */
	nt = op != GRAID_CPU_CHECK_P && op != GRAID_CPU_CHECK_PQ && SIMD_NAME(streams)(pl, &st);
	for (size_t i0 = 0; i0 < body; i0 += chunk) {
		const size_t n = body - i0 < chunk ? body - i0 : chunk;
		bool ok;

		if (nt)
			ok = al ? SIMD_NAME(range)(pl, &st, &k, op, true, true, i0, n, accp, accq)
				: SIMD_NAME(range)(pl, &st, &k, op, false, true, i0, n, accp, accq);
		else
			ok = al ? SIMD_NAME(range)(pl, &st, &k, op, true, false, i0, n, accp, accq)
				: SIMD_NAME(range)(pl, &st, &k, op, false, false, i0, n, accp,
						   accq);
		if (!ok)
			return false;
	}
	/*
	 * Streaming stores are weakly ordered: fence them, so that whatever the caller does
	 * next (a completion another thread reads, the buffer handed to the drive) sees them.
	 */
	if (nt)
		_mm_sfence();
	/*
	 * A tail shorter than a vector: redo the last vector's bytes as a range of their own,
	 * by plain stores (it is not aligned). Bytes it shares with the body come out the
	 * same, since no op reads what it writes.
	 */
	if (body != len)
		return SIMD_NAME(range)(pl, &st, &k, op, false, false, len - SIMD_BYTES,
				       SIMD_BYTES, accp, accq);
	return true;
}

/* One copy of the loops per op, so that each has only its own finishing step inside. */
static SIMD_FN bool SIMD_NAME(run)(const struct graid_cpu_plan *pl, uint8_t *const *blk,
				   size_t len)
{
	switch (pl->op) {
	case GRAID_CPU_XOR:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_XOR);
	case GRAID_CPU_PQ:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_PQ);
	case GRAID_CPU_Q:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_Q);
	case GRAID_CPU_DP:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_DP);
	case GRAID_CPU_DQ:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_DQ);
	case GRAID_CPU_DD:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_DD);
	case GRAID_CPU_CHECK_P:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_CHECK_P);
	case GRAID_CPU_CHECK_PQ:
		return SIMD_NAME(run_op)(pl, blk, len, GRAID_CPU_CHECK_PQ);
	}
	return graid__cpu_ref_range(pl, blk, 0, len);
}
