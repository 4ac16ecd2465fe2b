/* SPDX-License-Identifier: MIT */
/* Every CPU routine variant against graid_gf.h's byte-wise reference, one suite per variant. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "../lib/backends/isal/cpu_measure.h"
#include "../lib/backends/isal/cpu_pool.h"
#include "../lib/backends/isal/cpu_variants.h"
#include "testutil.h"

/* Stripe widths: the edges of the field, the common ones, and the vector-unrolling edges. */
static const unsigned cv_ndata[] = { 1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17, 22,
				     31, 32, 33, 63, 64, 65, 100, 127, 128, 200, 254, 255 };
/* Lengths around every step the variants have: 8/16 (SWAR), 32/128 (AVX2), 4096 (blocks). */
static const size_t cv_len[] = { 1,   7,   8,   15,  16,  17,   31,   32,   33,   63,
				 64,  65,  127, 128, 129, 160,  255,  256,  1000, 4095,
				 4096, 4097, 4096 + 128 + 31, 8192 + 33, 3 * 4096 + 77 };

#define CV_N(a) (sizeof(a) / sizeof((a)[0]))

static const struct graid_cpu_variant *cv_get(const char *name)
{
	for (unsigned i = 0; graid__cpu_variants[i]; i++)
		if (!strcmp(graid__cpu_variants[i]->name, name)) {
			if (!graid__cpu_variants[i]->supported())
				cr_skip_test("CPU variant %s: not supported by this CPU", name);
			return graid__cpu_variants[i];
		}
	cr_skip_test("CPU variant %s: not in this build", name);
	return NULL;
}

/* Group sizes to plan with: the variant's own, and small ones that force cache blocking. */
static unsigned cv_group(const struct graid_cpu_variant *v, uint64_t *rng)
{
	static const unsigned small[] = { 1, 2, 3, 5 };

	if (tu_rand(rng) % 2)
		return v->group_size;
	return small[tu_rand(rng) % CV_N(small)];
}

/*
 * Sub-range sizes for cache blocking: the variant's own (0) half the time, else small ones,
 * so that short blocks cross many sub-range edges.
 */
static unsigned cv_block(uint64_t *rng)
{
	static const unsigned small[] = { 128, 256, 384, 1024 };

	if (tu_rand(rng) % 2)
		return 0;
	return small[tu_rand(rng) % CV_N(small)];
}

static size_t cv_pick_len(uint64_t *rng, unsigned ndata)
{
	size_t len = cv_len[tu_rand(rng) % CV_N(cv_len)];

	/* Wide stripes get the shorter lengths, to keep the suite quick. */
	if (ndata > 64 && len > 4097)
		len = 4097;
	return len;
}

static void cv_gen_case(const struct graid_cpu_variant *v, uint64_t *rng, unsigned ndata,
			unsigned nparity, size_t len, int align, unsigned group)
{
	const unsigned nblk = ndata + nparity;
	struct graid_cpu_plan plan;
	struct tu_stripes s;
	uint8_t *expect, **eptr;
	long bad;

	tu_stripes_alloc(&s, ndata, nparity, len, 1, rng, align);
	expect = tu_stripes_snapshot(&s);
	eptr = tu_snapshot_ptrs(&s, expect);
	graid_gf_ref_gen(ndata, nparity, 0, len, eptr);
	graid__cpu_plan_gen(&plan, ndata, nparity, group);
	plan.block = cv_block(rng);
	/* Half the cases by streaming stores, where the layout takes them. */
	plan.stream = tu_rand(rng) % 2;
	cr_assert(v->run(&plan, s.ptr, len));
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s gen %u+%u len %zu align %d group %u block %u stream %d: block %ld of %u "
		     "differs (seed %llu)",
		     v->name, ndata, nparity, len, align, group, plan.block, plan.stream, bad,
		     nblk, (unsigned long long)tu_seed());
	free(eptr);
	free(expect);
	tu_stripes_free(&s);
}

static void cv_recover_case(const struct graid_cpu_variant *v, uint64_t *rng, unsigned ndata,
			    unsigned nparity, size_t len, int align, unsigned group,
			    unsigned nlost, const unsigned *lost)
{
	struct graid_cpu_plan plan;
	struct tu_stripes s;
	uint8_t *expect;
	long bad;

	tu_stripes_alloc(&s, ndata, nparity, len, 1, rng, align);
	tu_stripes_ref_gen(&s);
	expect = tu_stripes_snapshot(&s);
	for (unsigned l = 0; l < nlost; l++)
		tu_fill(rng, s.ptr[lost[l]], len);
	graid__cpu_plan_recover(&plan, ndata, nparity, nlost, lost, group);
	plan.block = cv_block(rng);
	plan.stream = tu_rand(rng) % 2;
	cr_assert(v->run(&plan, s.ptr, len));
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s recover %u+%u len %zu align %d group %u block %u stream %d lost "
		     "{%u,%u}: block %ld wrong (seed %llu)",
		     v->name, ndata, nparity, len, align, group, plan.block, plan.stream, lost[0],
		     nlost > 1 ? lost[1] : lost[0], bad, (unsigned long long)tu_seed());
	free(expect);
	tu_stripes_free(&s);
}

static void cv_gen_shapes(const char *name)
{
	const struct graid_cpu_variant *v = cv_get(name);
	uint64_t rng = tu_seed() ^ 0x6376676e;

	for (size_t i = 0; i < CV_N(cv_ndata); i++)
		for (unsigned np = 1; np <= 2; np++)
			for (int align = 0; align < 4; align++)
				cv_gen_case(v, &rng, cv_ndata[i], np, cv_pick_len(&rng, cv_ndata[i]),
					    align, cv_group(v, &rng));
	/* Every length of the table at one common width, so no tail path is left to chance. */
	for (size_t l = 0; l < CV_N(cv_len); l++)
		for (int align = 0; align < 4; align++)
			cv_gen_case(v, &rng, 6, 2, cv_len[l], align, cv_group(v, &rng));
	for (int r = 0; r < 60; r++) {
		unsigned ndata = 1 + (unsigned)(tu_rand(&rng) % GRAID_GF_MAX_DATA);

		cv_gen_case(v, &rng, ndata, 1 + (unsigned)(tu_rand(&rng) % 2),
			    1 + tu_rand(&rng) % (ndata > 64 ? 3000 : 20000), (int)(tu_rand(&rng) % 4),
			    cv_group(v, &rng));
	}
}

/* Every loss pattern for narrow stripes; for wide ones the edges and a random sample. */
static void cv_recover_shapes(const char *name)
{
	const struct graid_cpu_variant *v = cv_get(name);
	uint64_t rng = tu_seed() ^ 0x63767263;

	for (size_t i = 0; i < CV_N(cv_ndata); i++) {
		const unsigned n = cv_ndata[i];

		for (unsigned np = 1; np <= 2; np++) {
			const unsigned nblk = n + np;

			for (unsigned a = 0; a < nblk; a++) {
				const bool edge = a < 2 || a + 3 >= nblk;
				unsigned one[1] = { a };

				if (n > 9 && !edge && tu_rand(&rng) % 8)
					continue;
				cv_recover_case(v, &rng, n, np, cv_pick_len(&rng, n),
						(int)(tu_rand(&rng) % 4), cv_group(v, &rng), 1, one);
				for (unsigned b = a + 1; np == 2 && b < nblk; b++) {
					unsigned two[2] = { a, b };

					if (n > 9 && !(edge && b + 3 >= nblk) && tu_rand(&rng) % 16)
						continue;
					cv_recover_case(v, &rng, n, np, cv_pick_len(&rng, n),
							(int)(tu_rand(&rng) % 4), cv_group(v, &rng), 2,
							two);
				}
			}
		}
	}
}

/* Each recovery case at every length of the table: the tails of the finishing steps. */
static void cv_recover_lengths(const char *name)
{
	const struct graid_cpu_variant *v = cv_get(name);
	uint64_t rng = tu_seed() ^ 0x63766c6e;
	const unsigned n = 7;
	const unsigned cases[][3] = {
		{ 2, 1, 4 }, { 2, 0, 6 }, { 2, 2, n }, { 2, 5, n + 1 }, { 2, n, n + 1 },
		{ 1, 3, 0 }, { 1, n, 0 }, { 1, n + 1, 0 },
	};

	for (size_t c = 0; c < CV_N(cases); c++)
		for (size_t l = 0; l < CV_N(cv_len); l++) {
			unsigned lost[2] = { cases[c][1], cases[c][2] };

			cv_recover_case(v, &rng, n, 2, cv_len[l], (int)(tu_rand(&rng) % 4),
					cv_group(v, &rng), cases[c][0], lost);
		}
}

/* A clean stripe passes; one flipped byte anywhere (first, last, in the tail) fails. */
static void cv_check_shapes(const char *name)
{
	const struct graid_cpu_variant *v = cv_get(name);
	uint64_t rng = tu_seed() ^ 0x63766368;

	for (int r = 0; r < 300; r++) {
		unsigned ndata = r < 100 ? 1 + (unsigned)(tu_rand(&rng) % 24)
					 : cv_ndata[tu_rand(&rng) % CV_N(cv_ndata)];
		unsigned np = 1 + (unsigned)(tu_rand(&rng) % 2), nblk = ndata + np;
		size_t len = r % 2 ? cv_pick_len(&rng, ndata) : 1 + tu_rand(&rng) % 9000;
		unsigned group = cv_group(v, &rng);
		struct graid_cpu_plan plan;
		struct tu_stripes s;
		unsigned z = (unsigned)(tu_rand(&rng) % nblk);
		size_t at;

		switch (tu_rand(&rng) % 4) {
		case 0:
			at = 0;
			break;
		case 1:
			at = len - 1;
			break;
		case 2:
			at = len - 1 - tu_rand(&rng) % (len < 40 ? len : 40);
			break;
		default:
			at = tu_rand(&rng) % len;
			break;
		}
		tu_stripes_alloc(&s, ndata, np, len, 1, &rng, (int)(tu_rand(&rng) % 4));
		tu_stripes_ref_gen(&s);
		graid__cpu_plan_check(&plan, ndata, np, group);
		plan.block = cv_block(&rng);
		cr_assert(v->run(&plan, s.ptr, len),
			  "%s check %u+%u len %zu group %u: clean stripe reported bad (seed %llu)",
			  v->name, ndata, np, len, group, (unsigned long long)tu_seed());
		s.ptr[z][at] ^= (uint8_t)(1 + tu_rand(&rng) % 255);
		cr_assert(!v->run(&plan, s.ptr, len),
			  "%s check %u+%u len %zu group %u: block %u byte %zu changed, reported "
			  "clean (seed %llu)",
			  v->name, ndata, np, len, group, z, at, (unsigned long long)tu_seed());
		cr_assert_neq(graid_gf_ref_check(ndata, np, len, s.ptr), GRAID_CHECK_CLEAN);
		tu_stripes_free(&s);
	}
}

/*
 * Wide stripes at the edges of the cache-blocking sub-ranges, with every alignment mode:
 * lengths one short of, at and past one and two sub-ranges, and odd ones.
 */
static void cv_wide_edges(const char *name)
{
	const struct graid_cpu_variant *v = cv_get(name);
	static const unsigned widths[] = { 9, 17, 22, 40, 64, 255 };
	static const size_t lens[] = { 4095, 4096, 4097, 8191, 8192 + 31, 12288 + 77 };
	uint64_t rng = tu_seed() ^ 0x63767764;

	for (size_t w = 0; w < CV_N(widths); w++)
		for (size_t l = 0; l < CV_N(lens); l++) {
			const unsigned n = widths[w];
			const size_t len = n > 64 ? lens[l] / 3 : lens[l];
			const int align = (int)((w + l) % 4);
			unsigned two[2] = { (unsigned)(tu_rand(&rng) % n), n + 1 };

			cv_gen_case(v, &rng, n, 2, len, align, v->group_size);
			cv_recover_case(v, &rng, n, 2, len, align, v->group_size, 2, two);
			two[1] = two[0] + 1 + (unsigned)(tu_rand(&rng) % (n - two[0]));
			cv_recover_case(v, &rng, n, 2, len, align, v->group_size, 2, two);
		}
}

#define CPU_VARIANT_SUITE(variant, name)                                                 \
	Test(cpu_variant_##variant, gen_matches_reference_on_every_width_and_length,      \
	     .timeout = 600)                                                              \
	{                                                                                 \
		cv_gen_shapes(name);                                                      \
	}                                                                                 \
	Test(cpu_variant_##variant, recover_rebuilds_every_loss_case, .timeout = 600)     \
	{                                                                                 \
		cv_recover_shapes(name);                                                  \
	}                                                                                 \
	Test(cpu_variant_##variant, recover_is_exact_at_every_tail_length, .timeout = 600) \
	{                                                                                 \
		cv_recover_lengths(name);                                                 \
	}                                                                                 \
	Test(cpu_variant_##variant, check_passes_clean_and_catches_one_byte,              \
	     .timeout = 600)                                                              \
	{                                                                                 \
		cv_check_shapes(name);                                                    \
	}                                                                                 \
	Test(cpu_variant_##variant, wide_stripes_are_exact_at_sub_range_edges,            \
	     .timeout = 600)                                                              \
	{                                                                                 \
		cv_wide_edges(name);                                                      \
	}

CPU_VARIANT_SUITE(avx512_gfni, "avx512-gfni")
CPU_VARIANT_SUITE(avx512, "avx512")
CPU_VARIANT_SUITE(avx2_gfni, "avx2-gfni")
CPU_VARIANT_SUITE(avx2, "avx2")
CPU_VARIANT_SUITE(ssse3, "ssse3")
CPU_VARIANT_SUITE(c, "c")
