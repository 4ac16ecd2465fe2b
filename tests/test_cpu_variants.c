/* SPDX-License-Identifier: MIT */
/* Every CPU routine variant against graid_gf.h's byte-wise reference; the engine's threads. */
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
	cr_assert(v->run(&plan, s.ptr, len));
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s gen %u+%u len %zu align %d group %u block %u: block %ld of %u differs "
		     "(seed %llu)",
		     v->name, ndata, nparity, len, align, group, plan.block, bad, nblk,
		     (unsigned long long)tu_seed());
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
	cr_assert(v->run(&plan, s.ptr, len));
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s recover %u+%u len %zu align %d group %u block %u lost {%u,%u}: block "
		     "%ld wrong (seed %llu)",
		     v->name, ndata, nparity, len, align, group, plan.block, lost[0],
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

/* GF2P8AFFINEQB's matrices: every constant times every byte, as graid_gf_mul says. */
Test(cpu_variant_select, gfni_matrices_multiply_as_the_reference)
{
	cr_assert_eq(graid__cpu_gf_matrix(2), GRAID_CPU_GF_MATRIX_2);
	for (unsigned c = 0; c < 256; c++) {
		const uint64_t m = graid__cpu_gf_matrix((unsigned char)c);

		for (unsigned x = 0; x < 256; x++) {
			unsigned y = 0;

			/* The instruction's definition: bit i = parity(byte 7-i of m AND x). */
			for (unsigned i = 0; i < 8; i++)
				y |= (unsigned)__builtin_parity((unsigned)((m >> (8 * (7 - i))) & x) &
								0xffu)
				     << i;
			cr_assert_eq(y, graid_gf_mul((unsigned char)c, (unsigned char)x),
				     "%u * %u", c, x);
		}
	}
}

/* The warnings selection logs, kept to assert on. */
static char cv_logged[512];

static void cv_log(int level, const char *fmt, ...)
{
	va_list ap;
	size_t used = strlen(cv_logged);

	(void)level;
	va_start(ap, fmt);
	vsnprintf(cv_logged + used, sizeof(cv_logged) - used, fmt, ap);
	va_end(ap);
}

static const struct graid_cpu_variant *cv_best(void)
{
	for (unsigned i = 0; graid__cpu_variants[i]; i++)
		if (graid__cpu_variants[i]->supported())
			return graid__cpu_variants[i];
	return NULL;
}

Test(cpu_variant_select, best_supported_is_the_default)
{
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick(NULL, cv_log), cv_best());
	cr_assert_eq(graid__cpu_variant_pick("", cv_log), cv_best());
	cr_assert_str_empty(cv_logged);
	cr_assert_not_null(cv_best());
}

Test(cpu_variant_select, c_is_always_there)
{
	cr_assert_eq(graid__cpu_variant_pick("c", cv_log), &graid__cpu_variant_swar);
	cr_assert_eq(graid__cpu_variant_find("c"), &graid__cpu_variant_swar);
}

Test(cpu_variant_select, unknown_name_warns_and_takes_the_best)
{
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick("sse9", cv_log), cv_best());
	cr_assert(strstr(cv_logged, "sse9") != NULL, "logged: %s", cv_logged);
}

Test(cpu_variant_select, unsupported_name_warns_and_takes_the_best)
{
	if (graid__cpu_variant_avx2.supported())
		cr_skip_test("this CPU has AVX2: nothing unsupported to ask for");
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick("avx2", cv_log), cv_best());
	cr_assert(strstr(cv_logged, "not supported") != NULL, "logged: %s", cv_logged);
}

/* Criterion runs each test in its own process, so the once-per-process choice is fresh. */
Test(cpu_variant_select, environment_forces_the_variant)
{
	setenv("GRAID_CPU_VARIANT", "c", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_swar);
	cr_assert_str_eq(graid__cpu_choice(cv_log)->forced, "c");
}

Test(cpu_variant_select, environment_with_avx2_runs_avx2_where_the_cpu_has_it)
{
	if (!graid__cpu_variant_avx2.supported())
		cr_skip_test("this CPU has no AVX2");
	setenv("GRAID_CPU_VARIANT", "avx2", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_avx2);
}

Test(cpu_variant_select, environment_with_ssse3_runs_ssse3_where_the_cpu_has_it)
{
	if (!graid__cpu_variant_ssse3.supported())
		cr_skip_test("this CPU has no SSSE3");
	setenv("GRAID_CPU_VARIANT", "ssse3", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_ssse3);
}

/* Selection takes the first supported entry, so the table must run widest first. */
Test(cpu_variant_select, table_runs_from_widest_to_portable)
{
	unsigned n = 0;

	while (graid__cpu_variants[n])
		n++;
	cr_assert_eq(n, 6);
	cr_assert_eq(graid__cpu_variants[0], &graid__cpu_variant_avx512_gfni);
	cr_assert_eq(graid__cpu_variants[1], &graid__cpu_variant_avx512);
	cr_assert_eq(graid__cpu_variants[2], &graid__cpu_variant_avx2_gfni);
	cr_assert_eq(graid__cpu_variants[3], &graid__cpu_variant_avx2);
	cr_assert_eq(graid__cpu_variants[4], &graid__cpu_variant_ssse3);
	cr_assert_eq(graid__cpu_variants[5], &graid__cpu_variant_swar);
	/* A CPU with GFNI and AVX-512 BW gets the variant that uses both. */
	if (graid__cpu_variant_avx512_gfni.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx512_gfni);
	else if (graid__cpu_variant_avx512.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx512);
	/* A CPU with AVX2 has SSSE3 too, and must get the wider one. */
	else if (graid__cpu_variant_avx2_gfni.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx2_gfni);
	else if (graid__cpu_variant_avx2.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx2);
	else if (graid__cpu_variant_ssse3.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_ssse3);
}

/*
 * The engine's worker threads. Small thresholds force every batch through the split path:
 * runs of stripes when there are many, byte ranges of each stripe when there are few.
 * Criterion runs each test in its own process, so the environment set here is the one the
 * engine reads at open.
 */
static struct graid_backend *cv_open_threads(const char *nthreads, const char *min)
{
	struct graid_backend *be;

	setenv("GRAID_CPU_THREADS", nthreads, 1);
	setenv("GRAID_CPU_THREAD_MIN", min, 1);
	cr_assert_eq(graid_backend_open("isal", &be), 0);
	return be;
}

/* Gen, then recover of a case, then check with some stripes spoilt; each against ref. */
static void cv_engine_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
			   unsigned nparity, size_t len, size_t nstripes, int align)
{
	const unsigned nblk = ndata + nparity;
	struct tu_stripes s;
	uint8_t *expect, **eptr;
	int32_t *res = calloc(nstripes, sizeof(*res));
	unsigned lost[2] = { (unsigned)(tu_rand(rng) % nblk), 0 };
	unsigned nlost = 1;
	long nbad = 0;

	tu_stripes_alloc(&s, ndata, nparity, len, nstripes, rng, align);
	expect = tu_stripes_snapshot(&s);
	eptr = tu_snapshot_ptrs(&s, expect);
	for (size_t st = 0; st < nstripes; st++)
		graid_gf_ref_gen(ndata, nparity, 0, len, eptr + st * nblk);
	cr_assert_eq(graid_parity_gen(be, ndata, nparity, len, nstripes, s.ptr), 0);
	cr_assert_eq(tu_stripes_diff(&s, expect), -1,
		     "threads gen %u+%u len %zu x%zu align %d differs (seed %llu)", ndata, nparity,
		     len, nstripes, align, (unsigned long long)tu_seed());

	if (nparity == 2 && nblk > 2) {
		lost[1] = (lost[0] + 1 + (unsigned)(tu_rand(rng) % (nblk - 1))) % nblk;
		if (lost[1] < lost[0]) {
			unsigned t = lost[0];

			lost[0] = lost[1];
			lost[1] = t;
		}
		nlost = 2;
	}
	for (size_t st = 0; st < nstripes; st++)
		for (unsigned l = 0; l < nlost; l++)
			tu_fill(rng, s.ptr[st * nblk + lost[l]], len);
	cr_assert_eq(graid_parity_recover(be, ndata, nparity, len, nstripes, s.ptr, nlost, lost),
		     0);
	cr_assert_eq(tu_stripes_diff(&s, expect), -1,
		     "threads recover %u+%u len %zu x%zu lost {%u,%u} wrong (seed %llu)", ndata,
		     nparity, len, nstripes, lost[0], lost[nlost - 1],
		     (unsigned long long)tu_seed());

	for (size_t st = 0; st < nstripes; st++)
		if (tu_rand(rng) % 3 == 0) {
			s.ptr[st * nblk + tu_rand(rng) % nblk][tu_rand(rng) % len] ^= 0x5a;
			nbad++;
		}
	cr_assert_eq(graid_parity_check(be, ndata, nparity, len, nstripes, s.ptr, res), nbad,
		     "threads check %u+%u len %zu x%zu (seed %llu)", ndata, nparity, len, nstripes,
		     (unsigned long long)tu_seed());
	for (size_t st = 0; st < nstripes; st++) {
		int want = graid_gf_ref_check(ndata, nparity, len, s.ptr + st * nblk);

		cr_assert_eq(res[st], want, "threads check stripe %zu: %d, reference %d", st,
			     res[st], want);
	}
	free(res);
	free(eptr);
	free(expect);
	tu_stripes_free(&s);
}

static void cv_engine_shapes(struct graid_backend *be, uint64_t *rng)
{
	/* Few stripes (byte ranges, odd tails) and many (runs), narrow (ISA-L) and wide (own). */
	static const struct {
		unsigned ndata, nparity;
		size_t len, nstripes;
	} fixed[] = {
		{ 8, 2, 65536, 1 },  { 8, 2, 65536 + 13, 2 }, { 22, 2, 65536, 1 },
		{ 22, 2, 4097, 3 },  { 5, 1, 100003, 1 },     { 4, 2, 4096, 257 },
		{ 30, 2, 1000, 40 }, { 255, 2, 4096 + 7, 1 }, { 1, 2, 8191, 2 },
		{ 2, 1, 33, 1 },     { 9, 2, 63, 1 },         { 64, 2, 65, 5 },
	};

	for (size_t i = 0; i < CV_N(fixed); i++)
		for (int align = 0; align < 4; align++)
			cv_engine_case(be, rng, fixed[i].ndata, fixed[i].nparity, fixed[i].len,
				       fixed[i].nstripes, align);
	for (int r = 0; r < 40; r++)
		cv_engine_case(be, rng, 1 + (unsigned)(tu_rand(rng) % 40),
			       1 + (unsigned)(tu_rand(rng) % 2), 1 + tu_rand(rng) % 30000,
			       1 + tu_rand(rng) % 12, (int)(tu_rand(rng) % 4));
}

Test(cpu_threads, split_batches_match_the_reference, .timeout = 600)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	uint64_t rng = tu_seed() ^ 0x63767468;

	cv_engine_shapes(be, &rng);
	graid_backend_close(be);
}

/* The engine on one thread with its routes pinned (GRAID_CPU_PREFER), whatever it timed. */
static void cv_engine_prefer(const char *prefer, uint64_t salt)
{
	uint64_t rng = tu_seed() ^ salt;
	struct graid_backend *be;

	setenv("GRAID_CPU_PREFER", prefer, 1);
	be = cv_open_threads("1", "1");
	cv_engine_shapes(be, &rng);
	graid_backend_close(be);
}

/* ISA-L's routines wherever it has one (pq_gen, xor_gen, pq_check), and then nowhere. */
Test(cpu_engine, every_route_matches_the_reference_isal, .timeout = 600)
{
	cv_engine_prefer("isal", 0x72746931);
}

Test(cpu_engine, every_route_matches_the_reference_own, .timeout = 600)
{
	cv_engine_prefer("own", 0x72746f32);
}

/* The timing gives every class a variant this CPU runs, and ISA-L only where it has one. */
Test(cpu_measure, every_class_gets_a_routine_this_cpu_runs)
{
	struct graid_cpu_choice ch;

	graid__cpu_measure(&ch, NULL);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++) {
		cr_assert_not_null(ch.own[c]);
		cr_assert(ch.own[c]->supported(), "class %u: %s", c, ch.own[c]->name);
		cr_assert(ch.gbps[c][0] > 0 || !ch.isal[c], "class %u: ISA-L not timed", c);
	}
	cr_assert_not(ch.isal[GRAID_CPU_C_REC2]);
	cr_assert(ch.usec > 0);
}

Test(cpu_measure, a_forced_variant_is_the_only_own_candidate)
{
	struct graid_cpu_choice ch;
	char desc[128];

	graid__cpu_measure(&ch, &graid__cpu_variant_swar);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(ch.own[c], &graid__cpu_variant_swar);
	graid__cpu_choice_describe(&ch, desc, sizeof(desc));
	cr_assert(strstr(desc, "own c routines (forced)"), "%s", desc);
}

Test(cpu_threads, split_batches_match_with_the_portable_variant, .timeout = 600)
{
	struct graid_backend *be;
	uint64_t rng = tu_seed() ^ 0x63767463;

	setenv("GRAID_CPU_VARIANT", "c", 1);
	be = cv_open_threads("2", "100");
	cv_engine_shapes(be, &rng);
	graid_backend_close(be);
}

Test(cpu_threads, one_thread_and_bad_values_run_unsplit)
{
	struct graid_backend *be;
	uint64_t rng = tu_seed() ^ 0x63763174;

	be = cv_open_threads("1", "1");
	cv_engine_case(be, &rng, 8, 2, 65536, 3, 0);
	graid_backend_close(be);
	/* Not numbers: logged, and the defaults taken. */
	be = cv_open_threads("lots", "-5");
	cv_engine_case(be, &rng, 8, 2, 65536, 3, 0);
	graid_backend_close(be);
}

/* The thread count of this process, from /proc; -1 where there is no /proc. */
static int cv_threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

Test(cpu_threads, engine_opens_and_closes_many_times_leaving_no_thread, .timeout = 300)
{
	uint64_t rng = tu_seed() ^ 0x6376636c;
	int before, after;

	/* One open first: whatever the library starts once per process is there before counting. */
	graid_backend_close(cv_open_threads("2", "1"));
	before = cv_threads_now();
	for (int i = 0; i < 200; i++) {
		struct graid_backend *be = cv_open_threads(i % 2 ? "4" : "2", "1");

		/* Some close idle, some right after a split call, some never called. */
		if (i % 3 == 0)
			cv_engine_case(be, &rng, 6, 2, 4096 + (size_t)i, 1 + (size_t)i % 5, 0);
		graid_backend_close(be);
	}
	if (before < 0)
		cr_skip_test("no /proc/self/status to count threads");
	/*
	 * Joined at close (ASan's leak check sees any pool memory left behind). The count is
	 * read again for up to a second: a thread of the test runner's own may come and go.
	 */
	after = cv_threads_now();
	for (int t = 0; t < 100 && after != before; t++) {
		usleep(10 * 1000);
		after = cv_threads_now();
	}
	cr_assert_eq(after, before, "%d threads before 200 engines, %d after", before, after);
}

/* The thread count once it is `want`, or what it still is after a second of waiting. */
static int cv_threads_settle(int want)
{
	int n = cv_threads_now();

	/* A thread of the test runner's own may come and go. */
	for (int t = 0; t < 100 && n != want; t++) {
		usleep(10 * 1000);
		n = cv_threads_now();
	}
	return n;
}

/*
 * Engines of one process share one set of workers: two engines of 3 threads add 2 workers,
 * not 4. One asking for another count gets its own; the shared set lives until the last
 * engine using it closes, and works for the one left after the other closes.
 */
Test(cpu_threads, engines_of_one_process_share_their_workers, .timeout = 300)
{
	uint64_t rng = tu_seed() ^ 0x63767368;
	struct graid_backend *a, *b, *c;
	int base;

	/* One open first: whatever the library starts once per process is there before counting. */
	graid_backend_close(cv_open_threads("2", "1"));
	base = cv_threads_now();
	if (base < 0)
		cr_skip_test("no /proc/self/status to count threads");
	a = cv_open_threads("3", "1");
	cr_assert_eq(cv_threads_settle(base + 2), base + 2);
	b = cv_open_threads("3", "1");
	cr_assert_eq(cv_threads_settle(base + 2), base + 2, "a second engine started workers of its own");
	c = cv_open_threads("2", "1");
	cr_assert_eq(cv_threads_settle(base + 3), base + 3, "another thread count gets its own worker");
	cv_engine_case(a, &rng, 8, 2, 65536 + 3, 3, 0);
	graid_backend_close(a);
	cr_assert_eq(cv_threads_settle(base + 3), base + 3, "the first close stopped workers still in use");
	cv_engine_case(b, &rng, 22, 2, 20000, 2, 1);
	cv_engine_case(c, &rng, 6, 2, 4096 + 17, 5, 2);
	graid_backend_close(c);
	graid_backend_close(b);
	cr_assert_eq(cv_threads_settle(base), base);
}

/* Many callers at once on one engine: each gets its own batch right. */
struct cv_caller {
	struct graid_backend *be;
	uint64_t seed;
};

static void *cv_caller_main(void *arg)
{
	struct cv_caller *c = arg;

	for (int r = 0; r < 15; r++)
		cv_engine_case(c->be, &c->seed, 3 + (unsigned)(c->seed % 20), 2,
			       1 + tu_rand(&c->seed) % 20000, 1 + tu_rand(&c->seed) % 7,
			       (int)(tu_rand(&c->seed) % 4));
	return NULL;
}

Test(cpu_threads, concurrent_callers_share_the_pool, .timeout = 600)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	struct cv_caller c[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		c[i].be = be;
		c[i].seed = tu_seed() ^ (0x6376636f + (uint64_t)i);
		cr_assert_eq(pthread_create(&t[i], NULL, cv_caller_main, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	graid_backend_close(be);
}

/* Keeps the pool busy while the test forks, so a fork lands in the middle of a call. */
static atomic_bool cv_stop;

static void *cv_busy_main(void *arg)
{
	struct cv_caller *c = arg;

	while (!atomic_load(&cv_stop))
		cv_engine_case(c->be, &c->seed, 8, 2, 32768, 4, 0);
	return NULL;
}

/*
 * Opens and closes engines while the test forks, so a fork lands while the shared pool's
 * lock is held. The environment is set before the thread starts: it only reads it.
 *
 * Not under AddressSanitizer: gcc 12's does not hold its allocator's locks across fork(),
 * so a child whose parent had another thread inside malloc can block in its own first
 * malloc of that size (its new workers did, in ASan's thread start), a hang of the
 * sanitizer's, not the library's. There the test forks as it did before: one thread keeps
 * the pool busy, and the child uses only the engine it inherited.
 */
#if defined(__SANITIZE_ADDRESS__)
#define CV_FORK_STRESS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CV_FORK_STRESS 0
#endif
#endif
#ifndef CV_FORK_STRESS
#define CV_FORK_STRESS 1
#endif

static void *cv_opener_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&cv_stop)) {
		struct graid_backend *be;

		if (graid_backend_open("isal", &be) == 0)
			graid_backend_close(be);
	}
	return NULL;
}

/*
 * gen, then recovery of two data blocks, against the reference, without asserting: for a
 * forked child, which must report through its exit status and not through Criterion.
 */
static bool cv_child_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
			  size_t len, size_t nstripes)
{
	const unsigned nblk = ndata + 2, lost[2] = { 0, ndata - 1 };
	struct tu_stripes s;
	uint8_t *expect, **eptr;
	bool ok;

	tu_stripes_alloc(&s, ndata, 2, len, nstripes, rng, 1);
	expect = tu_stripes_snapshot(&s);
	eptr = tu_snapshot_ptrs(&s, expect);
	for (size_t st = 0; st < nstripes; st++)
		graid_gf_ref_gen(ndata, 2, 0, len, eptr + st * nblk);
	ok = graid_parity_gen(be, ndata, 2, len, nstripes, s.ptr) == 0 &&
	     tu_stripes_diff(&s, expect) == -1;
	for (size_t st = 0; st < nstripes; st++) {
		memset(s.ptr[st * nblk + lost[0]], 0, len);
		memset(s.ptr[st * nblk + lost[1]], 0, len);
	}
	ok = ok && graid_parity_recover(be, ndata, 2, len, nstripes, s.ptr, 2, lost) == 0 &&
	     tu_stripes_diff(&s, expect) == -1;
	free(eptr);
	free(expect);
	tu_stripes_free(&s);
	return ok;
}

Test(cpu_threads, forked_child_uses_the_engine_without_deadlock, .timeout = 300)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	struct cv_caller busy = { .be = be, .seed = tu_seed() ^ 0x6376666b };
	pthread_t t, opener;

	cr_assert_eq(pthread_create(&t, NULL, cv_busy_main, &busy), 0);
	if (CV_FORK_STRESS)
		cr_assert_eq(pthread_create(&opener, NULL, cv_opener_main, NULL), 0);
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();
		int status;

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			/* The child: the parent's workers are gone; the engine must still work. */
			uint64_t rng = tu_seed() ^ (uint64_t)i;
			struct graid_backend *mine = NULL;
			bool ok;

			/* A deadlock ends in SIGALRM, which the parent sees, not in a hung suite. */
			alarm(60);
			ok = cv_child_case(be, &rng, 22, 65536 + 5, 2) &&
			     cv_child_case(be, &rng, 6, 4096, 9);
			/*
			 * An engine opened in the child must not be handed the parent's shared
			 * pool (its workers stayed behind): it gets workers of its own.
			 */
			ok = ok && (!CV_FORK_STRESS ||
				    (graid_backend_open("isal", &mine) == 0 &&
				     (cv_threads_now() < 0 || cv_threads_now() == 3) &&
				     cv_child_case(mine, &rng, 8, 65536, 4)));
			graid_backend_close(mine);
			graid_backend_close(be);
			_exit(ok ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "forked child %d: status 0x%x (seed %llu)", i, status,
			  (unsigned long long)tu_seed());
	}
	atomic_store(&cv_stop, true);
	pthread_join(t, NULL);
	if (CV_FORK_STRESS)
		pthread_join(opener, NULL);
	graid_backend_close(be);
}

/* The CPUs a thread of this process may run on, from /proc; -1 where unreadable. */
static int cv_task_cpus(const char *tid)
{
	char path[300], line[256];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		cpu_set_t set;
		char *p = line + strlen("Cpus_allowed_list:"), *save = NULL;

		if (strncmp(line, "Cpus_allowed_list:", strlen("Cpus_allowed_list:")))
			continue;
		/* "0-3,6": count by expanding each range. */
		CPU_ZERO(&set);
		for (char *tok = strtok_r(p, ", \t\n", &save); tok;
		     tok = strtok_r(NULL, ", \t\n", &save)) {
			int a, b;

			if (sscanf(tok, "%d-%d", &a, &b) != 2)
				b = a = atoi(tok);
			for (int c = a; c <= b && c < CPU_SETSIZE; c++)
				CPU_SET(c, &set);
		}
		n = CPU_COUNT(&set);
		break;
	}
	fclose(f);
	return n;
}

static void *cv_pinned_open(void *arg)
{
	struct sched_param idle = { .sched_priority = 0 };
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	/* SCHED_IDLE needs no privilege, and differs from the main thread's policy. */
	cr_assert_eq(pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle), 0);
	cr_assert_eq(graid_backend_open("isal", (struct graid_backend **)arg), 0);
	return NULL;
}

/*
 * pthread_create copies the creating thread's CPUs and scheduling: an application that
 * pins the thread opening its arrays, or changes its policy, must not find every engine's
 * workers pinned or scheduled with it.
 */
Test(cpu_threads, workers_take_the_process_cpus_not_the_opener_s)
{
	struct graid_backend *be = NULL;
	cpu_set_t mine;
	pthread_t t;
	DIR *d;
	struct dirent *e;
	int workers = 0, all;

	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	all = CPU_COUNT(&mine);
	if (all < 2)
		cr_skip_test("this process may use one CPU only");
	setenv("GRAID_CPU_THREADS", "3", 1);
	setenv("GRAID_CPU_THREAD_MIN", "1", 1);
	cr_assert_eq(pthread_create(&t, NULL, cv_pinned_open, &be), 0);
	pthread_join(t, NULL);
	cr_assert_not_null(be);
	/* The engine's workers are the only other threads of this process now. */
	d = opendir("/proc/self/task");
	if (!d)
		cr_skip_test("no /proc/self/task");
	while ((e = readdir(d))) {
		int n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == (int)getpid())
			continue;
		n = cv_task_cpus(e->d_name);
		if (n < 0)
			continue;
		workers++;
		cr_assert_eq(n, all, "thread %s may run on %d CPUs, the process on %d", e->d_name,
			     n, all);
		cr_assert_eq(sched_getscheduler(atoi(e->d_name)), sched_getscheduler(0),
			     "thread %s runs under policy %d, the process under %d", e->d_name,
			     sched_getscheduler(atoi(e->d_name)), sched_getscheduler(0));
	}
	closedir(d);
	cr_assert_geq(workers, 2, "found %d worker threads", workers);
	graid_backend_close(be);
}

/* The pool alone: every piece once, an error from any piece comes back. */
struct cv_pieces {
	atomic_int ran[1000];
	size_t fail_at;
};

static int cv_piece(void *arg, size_t i)
{
	struct cv_pieces *p = arg;

	atomic_fetch_add(&p->ran[i], 1);
	return i == p->fail_at ? -EIO : 0;
}

Test(cpu_pool, every_piece_runs_once_and_an_error_comes_back)
{
	static struct cv_pieces p;
	struct graid_cpu_pool *pool;

	cr_assert_eq(graid__cpu_pool_create(&pool, 1, NULL), 0);
	cr_assert_null(pool, "one thread needs no pool");
	cr_assert_eq(graid__cpu_pool_threads(pool), 1);
	cr_assert_eq(graid__cpu_pool_create(&pool, 4, NULL), 0);
	cr_assert_eq(graid__cpu_pool_threads(pool), 4);
	for (size_t fail = 0; fail < 1000; fail += 97) {
		memset(&p, 0, sizeof(p));
		p.fail_at = fail == 0 ? 1000 : fail;
		cr_assert_eq(graid__cpu_pool_run(pool, 1000, cv_piece, &p), fail == 0 ? 0 : -EIO);
		for (size_t i = 0; i < 1000; i++)
			cr_assert_eq(atomic_load(&p.ran[i]), 1, "piece %zu ran %d times", i,
				     atomic_load(&p.ran[i]));
	}
	graid__cpu_pool_destroy(pool);
}

/*
 * Blocks of one buffer, 64 KiB + skew apart: layouts where pq_gen stalls (small skews) go
 * to the own routine, the others stay with ISA-L; both must give the reference's bytes.
 */
Test(cpu_engine, skewed_layouts_match_the_reference)
{
	static const size_t skews[] = { 0, 32, 64, 96, 512, 2048, 4096 };
	static const unsigned widths[] = { 4, 8, 9, 22 };
	struct graid_backend *be = cv_open_threads("1", "1");
	uint64_t rng = tu_seed() ^ 0x63767373;

	for (size_t k = 0; k < CV_N(skews); k++)
		for (size_t w = 0; w < CV_N(widths); w++) {
			const unsigned n = widths[w], nblk = n + 2;
			const size_t len = 65536, stride = len + skews[k];
			/* aligned_alloc wants a size that is a multiple of the alignment. */
			uint8_t *buf = aligned_alloc(4096, (stride * nblk + 4095) & ~(size_t)4095);
			uint8_t *want = malloc(stride * nblk);
			uint8_t *blk[24], *wblk[24];

			cr_assert(buf && want);
			tu_fill(&rng, buf, stride * nblk);
			for (unsigned i = 0; i < nblk; i++) {
				blk[i] = buf + i * stride;
				wblk[i] = want + i * stride;
			}
			memcpy(want, buf, stride * nblk);
			graid_gf_ref_gen(n, 2, 0, len, wblk);
			cr_assert_eq(graid_parity_gen(be, n, 2, len, 1, blk), 0);
			for (unsigned i = 0; i < nblk; i++)
				cr_assert(!memcmp(blk[i], wblk[i], len),
					  "%u+2 skew %zu: block %u differs (seed %llu)", n, skews[k], i,
					  (unsigned long long)tu_seed());
			free(buf);
			free(want);
		}
	graid_backend_close(be);
}
