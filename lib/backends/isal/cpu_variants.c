/* SPDX-License-Identifier: MIT */
/* The table of CPU routine variants, their choice at start-up, and the plans they run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "cpu_variants.h"

/*
 * Widest first: without measurement (a forced choice that is not supported) the first one
 * the CPU supports is taken. The engine times every supported one (cpu_measure.c).
 */
const struct graid_cpu_variant *const graid__cpu_variants[] = {
	&graid__cpu_variant_avx512_gfni,
	&graid__cpu_variant_avx512,
	&graid__cpu_variant_avx2_gfni,
	&graid__cpu_variant_avx2,
	&graid__cpu_variant_ssse3,
	&graid__cpu_variant_swar,
	NULL,
};

const struct graid_cpu_variant *graid__cpu_variant_find(const char *name)
{
	for (unsigned i = 0; graid__cpu_variants[i]; i++)
		if (!strcmp(graid__cpu_variants[i]->name, name))
			return graid__cpu_variants[i]->supported() ? graid__cpu_variants[i]
								   : NULL;
	return NULL;
}

static const struct graid_cpu_variant *cpu_best(void)
{
	for (unsigned i = 0; graid__cpu_variants[i]; i++)
		if (graid__cpu_variants[i]->supported())
			return graid__cpu_variants[i];
	/* The portable variant always runs; the table ends with it. */
	return &graid__cpu_variant_swar;
}

const struct graid_cpu_variant *graid__cpu_variant_pick(const char *want,
							void (*log)(int level,
								    const char *fmt, ...))
{
	const struct graid_cpu_variant *best = cpu_best(), *v;
	char names[128] = "";
	bool known = false;

	if (!want || !*want)
		return best;
	v = graid__cpu_variant_find(want);
	if (v)
		return v;
	for (unsigned i = 0; graid__cpu_variants[i]; i++) {
		known |= !strcmp(graid__cpu_variants[i]->name, want);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", graid__cpu_variants[i]->name);
	}
	if (log)
		log(GRAID_LOG_WARNING, "isal: GRAID_CPU_VARIANT=%s: %s (%s); using %s", want,
		    known ? "not supported by this CPU" : "no such variant", names, best->name);
	return best;
}

/* c * 2^k for k = 0..7: every product by c is an XOR of these (multiplication is linear). */
static void cpu_gf_basis(unsigned char c, unsigned char b[8])
{
	unsigned v = c;

	for (unsigned k = 0; k < 8; k++) {
		b[k] = (unsigned char)v;
		v = (v << 1) ^ (v & 0x80 ? 0x100u | GRAID_GF_POLY_LOW : 0);
	}
}

/* GF2P8AFFINEQB's matrix from the basis products: their transpose, row i in byte 7-i. */
static uint64_t cpu_gf_matrix_of(const unsigned char b[8])
{
	uint64_t m = 0;

	for (unsigned i = 0; i < 8; i++) {
		unsigned row = 0;

		for (unsigned k = 0; k < 8; k++)
			row |= ((b[k] >> i) & 1u) << k;
		m |= (uint64_t)row << (8 * (7 - i));
	}
	return m;
}

uint64_t graid__cpu_gf_matrix(unsigned char c)
{
	unsigned char b[8];

	cpu_gf_basis(c, b);
	return cpu_gf_matrix_of(b);
}

/*
 * Fill every form of constant c into slot i of the plan, from its eight basis products:
 * a plan is made per batch, and graid_gf_mul() 600 times made a small batch's recovery
 * cost five times its arithmetic (docs/CPU-ENGINE.md, "Dispatch").
 */
static void cpu_plan_const(struct graid_cpu_plan *pl, unsigned i, unsigned char c)
{
	unsigned char b[8];

	cpu_gf_basis(c, b);
	pl->gfm[i] = cpu_gf_matrix_of(b);
	pl->mul[i][0] = 0;
	/* v's product is the product of v without its lowest set bit, and that bit's. */
	for (unsigned v = 1; v < 256; v++)
		pl->mul[i][v] = pl->mul[i][v & (v - 1)] ^ b[__builtin_ctz(v)];
	for (unsigned v = 0; v < 16; v++) {
		pl->nib[i][v] = pl->mul[i][v];
		pl->nib[i][16 + v] = pl->mul[i][v << 4];
	}
}

/*
 * List the sources: every data block but x and y (~0u: none), highest index first, then P
 * when with_p; cut them into groups of group_size (0: one group).
 */
static void cpu_plan_sources(struct graid_cpu_plan *pl, unsigned x, unsigned y, bool with_p,
			     unsigned group_size)
{
	pl->nsrc = pl->ngroup = 0;
	/* Steps 0..ndata-1 walk the data down from the highest index; step ndata is P. */
	for (unsigned step = 0; step <= pl->ndata; step++) {
		unsigned k = step < pl->ndata ? pl->ndata - 1 - step : pl->ndata;

		if (step == pl->ndata && !with_p)
			break;
		if (step < pl->ndata && (k == x || k == y)) {
			if (pl->nsrc)
				pl->mul2[pl->nsrc - 1]++;
			continue;
		}
		if (group_size ? pl->nsrc % group_size == 0 : pl->nsrc == 0)
			pl->group[pl->ngroup++] = (uint16_t)pl->nsrc;
		pl->mul2[pl->nsrc] = 0;
		pl->src[pl->nsrc++] = (uint16_t)k;
	}
	/* No sources at all (two of two data blocks lost): one empty group, p = q = 0. */
	if (!pl->ngroup)
		pl->group[pl->ngroup++] = 0;
	pl->group[pl->ngroup] = (uint16_t)pl->nsrc;
}

static void cpu_plan_init(struct graid_cpu_plan *pl, enum graid_cpu_kind kind, unsigned ndata,
			  unsigned nparity)
{
	memset(pl, 0, offsetof(struct graid_cpu_plan, src));
	pl->block = 0;
	pl->stream = false;
	pl->kind = kind;
	pl->ndata = ndata;
	pl->nparity = nparity;
	pl->aux[0] = (uint16_t)ndata;
	pl->aux[1] = (uint16_t)(ndata + 1);
}

void graid__cpu_plan_gen(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			 unsigned group_size)
{
	cpu_plan_init(pl, GRAID_CPU_KIND_GEN, ndata, nparity);
	pl->op = nparity == 2 ? GRAID_CPU_PQ : GRAID_CPU_XOR;
	pl->dst[0] = (uint16_t)ndata;
	pl->dst[1] = (uint16_t)(ndata + 1);
	cpu_plan_sources(pl, ~0u, ~0u, false, group_size);
}

void graid__cpu_plan_check(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			   unsigned group_size)
{
	cpu_plan_init(pl, GRAID_CPU_KIND_CHECK, ndata, nparity);
	pl->op = nparity == 2 ? GRAID_CPU_CHECK_PQ : GRAID_CPU_CHECK_P;
	/* With P alone, XOR it in with the data: the stripe is clean iff the sum is zero. */
	cpu_plan_sources(pl, ~0u, ~0u, nparity == 1, group_size);
}

void graid__cpu_plan_recover(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			     unsigned nlost, const unsigned *lost, unsigned group_size)
{
	const unsigned pidx = ndata, qidx = ndata + 1;
	unsigned a = lost[0], b = nlost > 1 ? lost[1] : ~0u;
	unsigned x = ~0u, y = ~0u;
	bool with_p = false;

	cpu_plan_init(pl, GRAID_CPU_KIND_RECOVER, ndata, nparity);
	pl->nlost = nlost;
	pl->lost[0] = a;
	pl->lost[1] = b;
	pl->dst[0] = (uint16_t)a;
	pl->dst[1] = (uint16_t)(b == ~0u ? a : b);
	if (a == pidx && (b == ~0u || b == qidx)) {
		/* Parity only: generate what is lost from complete data. */
		pl->op = b == qidx ? GRAID_CPU_PQ : GRAID_CPU_XOR;
	} else if (a == qidx) {
		pl->op = GRAID_CPU_Q;
	} else if (b == ~0u) {
		/* One data block: the XOR of P and the other data (RAID-5 and RAID-6 alike). */
		pl->op = GRAID_CPU_XOR;
		x = a;
		with_p = true;
	} else if (b == pidx) {
		pl->op = GRAID_CPU_DP;
		x = a;
		cpu_plan_const(pl, 0, graid_gf_exp2(255u - a)); /* g^-x */
	} else if (b == qidx) {
		pl->op = GRAID_CPU_DQ;
		x = a;
		cpu_plan_const(pl, 0, graid_gf_exp2(a)); /* g^x */
	} else {
		unsigned char ca, cb;

		pl->op = GRAID_CPU_DD;
		x = a;
		y = b;
		graid_gf_two_data_coef(a, b, &ca, &cb);
		cpu_plan_const(pl, 0, ca);
		cpu_plan_const(pl, 1, cb);
	}
	cpu_plan_sources(pl, x, y, with_p, group_size);
}
