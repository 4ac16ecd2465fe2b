/* SPDX-License-Identifier: MIT */
/* Portable parity routines on 64-bit words (SIMD within a register): the variant every CPU runs. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu_variants.h"

/* Two words per step: two independent Horner chains keep a superscalar core busy. */
#define SWAR_STEP 16u

#define SWAR_LOW7 0x7f7f7f7f7f7f7f7full
#define SWAR_ONES 0x0101010101010101ull

struct swar_stripe {
	const uint8_t *src[GRAID_CPU_MAX_SRC];
	uint8_t *dst[2];
	const uint8_t *aux[2];
};

/* memcpy compiles to one unaligned load or store, and is defined for any alignment. */
static inline uint64_t swar_ld(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void swar_st(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * g * q in each byte: shift the low seven bits up, and add 0x1d to each byte whose top bit
 * fell off. (The top bits moved to bit 0 and multiplied by 0x1d cannot carry across bytes.)
 * Byte-local, so the byte order of the machine does not matter.
 */
static inline uint64_t swar_mul2(uint64_t q)
{
	return ((q & SWAR_LOW7) << 1) ^ (((q >> 7) & SWAR_ONES) * GRAID_GF_POLY_LOW);
}

/* The extra q *= g of lost blocks after a source (rare). */
static inline void swar_mul2_n(uint64_t *q, unsigned n)
{
	for (; n; n--) {
		q[0] = swar_mul2(q[0]);
		q[1] = swar_mul2(q[1]);
	}
}

/* c * v in each byte, from the plan's product table of c. */
static inline uint64_t swar_mulc(uint64_t v, const uint8_t *t)
{
	uint64_t r = 0;

	for (unsigned b = 0; b < 64; b += 8)
		r |= (uint64_t)t[(v >> b) & 0xff] << b;
	return r;
}

/* One step of SWAR_STEP bytes at stripe offset i; false if a check op found a mismatch. */
static inline __attribute__((always_inline)) bool
swar_step(const struct graid_cpu_plan *pl, const struct swar_stripe *st, enum graid_cpu_op op,
	  size_t i)
{
	const bool wq = op != GRAID_CPU_XOR && op != GRAID_CPU_CHECK_P;
	uint64_t p[2] = { 0, 0 }, q[2] = { 0, 0 };
	unsigned j = 0;

	if (pl->nsrc) {
		p[0] = q[0] = swar_ld(st->src[0] + i);
		p[1] = q[1] = swar_ld(st->src[0] + i + 8);
		j = 1;
		if (wq)
			swar_mul2_n(q, pl->mul2[0]);
	}
	/* Groups are for cache blocking; this variant takes all sources in one pass. */
	for (; j < pl->nsrc; j++) {
		const uint64_t d0 = swar_ld(st->src[j] + i), d1 = swar_ld(st->src[j] + i + 8);

		p[0] ^= d0;
		p[1] ^= d1;
		if (wq) {
			q[0] = swar_mul2(q[0]) ^ d0;
			q[1] = swar_mul2(q[1]) ^ d1;
			swar_mul2_n(q, pl->mul2[j]);
		}
	}
	for (unsigned w = 0; w < 2; w++) {
		const size_t o = i + 8 * w;
		uint64_t dx, pxy, qxy;

		switch (op) {
		case GRAID_CPU_XOR:
			swar_st(st->dst[0] + o, p[w]);
			break;
		case GRAID_CPU_PQ:
			swar_st(st->dst[0] + o, p[w]);
			swar_st(st->dst[1] + o, q[w]);
			break;
		case GRAID_CPU_Q:
			swar_st(st->dst[0] + o, q[w]);
			break;
		case GRAID_CPU_DP:
			dx = swar_mulc(q[w] ^ swar_ld(st->aux[1] + o), pl->mul[0]);
			swar_st(st->dst[0] + o, dx);
			swar_st(st->dst[1] + o, p[w] ^ dx);
			break;
		case GRAID_CPU_DQ:
			dx = p[w] ^ swar_ld(st->aux[0] + o);
			swar_st(st->dst[0] + o, dx);
			swar_st(st->dst[1] + o, q[w] ^ swar_mulc(dx, pl->mul[0]));
			break;
		case GRAID_CPU_DD:
			pxy = p[w] ^ swar_ld(st->aux[0] + o);
			qxy = q[w] ^ swar_ld(st->aux[1] + o);
			dx = swar_mulc(pxy, pl->mul[0]) ^ swar_mulc(qxy, pl->mul[1]);
			swar_st(st->dst[0] + o, dx);
			swar_st(st->dst[1] + o, pxy ^ dx);
			break;
		case GRAID_CPU_CHECK_P:
			if (p[w])
				return false;
			break;
		case GRAID_CPU_CHECK_PQ:
			if ((p[w] ^ swar_ld(st->aux[0] + o)) | (q[w] ^ swar_ld(st->aux[1] + o)))
				return false;
			break;
		}
	}
	return true;
}

static inline __attribute__((always_inline)) bool
swar_run_op(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len,
	    enum graid_cpu_op op)
{
	struct swar_stripe st;
	size_t i;

	if (len < SWAR_STEP)
		return graid__cpu_ref_range(pl, blk, 0, len);
	for (unsigned j = 0; j < pl->nsrc; j++)
		st.src[j] = blk[pl->src[j]];
	st.dst[0] = graid_cpu_block(pl, blk, pl->dst[0]);
	st.dst[1] = graid_cpu_block(pl, blk, pl->dst[1]);
	st.aux[0] = graid_cpu_block(pl, blk, pl->aux[0]);
	st.aux[1] = graid_cpu_block(pl, blk, pl->aux[1]);
	for (i = 0; i + SWAR_STEP <= len; i += SWAR_STEP)
		if (!swar_step(pl, &st, op, i))
			return false;
	/* The tail: redo the last step's worth of bytes; no op reads what it writes. */
	if (i != len)
		return swar_step(pl, &st, op, len - SWAR_STEP);
	return true;
}

static bool swar_run(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len)
{
	switch (pl->op) {
	case GRAID_CPU_XOR:
		return swar_run_op(pl, blk, len, GRAID_CPU_XOR);
	case GRAID_CPU_PQ:
		return swar_run_op(pl, blk, len, GRAID_CPU_PQ);
	case GRAID_CPU_Q:
		return swar_run_op(pl, blk, len, GRAID_CPU_Q);
	case GRAID_CPU_DP:
		return swar_run_op(pl, blk, len, GRAID_CPU_DP);
	case GRAID_CPU_DQ:
		return swar_run_op(pl, blk, len, GRAID_CPU_DQ);
	case GRAID_CPU_DD:
		return swar_run_op(pl, blk, len, GRAID_CPU_DD);
	case GRAID_CPU_CHECK_P:
		return swar_run_op(pl, blk, len, GRAID_CPU_CHECK_P);
	case GRAID_CPU_CHECK_PQ:
		return swar_run_op(pl, blk, len, GRAID_CPU_CHECK_PQ);
	}
	return graid__cpu_ref_range(pl, blk, 0, len);
}

static bool swar_supported(void)
{
	return true;
}

const struct graid_cpu_variant graid__cpu_variant_swar = {
	.name = "c",
	.supported = swar_supported,
	.group_size = 0,
	.run = swar_run,
};
