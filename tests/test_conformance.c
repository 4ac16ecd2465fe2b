/* SPDX-License-Identifier: MIT */
/* Every engine that probes usable, against the byte-wise reference, on fresh seeded random shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "testutil.h"

static struct graid_backend *conf_open(const char *name)
{
	struct graid_backend *be;

	if (!tu_engine_selected(name))
		cr_skip_test("engine %s not selected by GRAID_TEST_BACKENDS", name);
	/* Skips with the probe's reason, or fails where the engine is required here. */
	tu_engine_need(name);
	cr_assert_eq(graid_backend_open(name, &be), 0);
	cr_assert_str_eq(graid_backend_name(be), name);
	return be;
}

/*
 * Close, after asserting that no batch was redone on the CPU: an accelerator opened by name
 * fails over on every error, so its suite would pass on the CPU's results if it failed
 * every batch. Here every failover is a failure.
 */
static void conf_close(struct graid_backend *be)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };

	cr_assert_eq(graid_backend_stats(be, &st), 0);
	cr_assert_eq(st.failovers, 0,
		     "engine %s: %llu of %llu batches failed and were redone on the CPU (the "
		     "log says why; GRAID_LOG_LEVEL=7 for more) (seed %llu)",
		     graid_backend_name(be), (unsigned long long)st.failovers,
		     (unsigned long long)st.batches,
		     (unsigned long long)tu_seed());
	graid_backend_close(be);
}

/* One generation case: the engine's result must equal the reference, data untouched. */
static void conf_gen_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
			  unsigned nparity, size_t len, size_t nstripes, int align)
{
	struct tu_stripes s;
	uint8_t *expect, **eptr;
	long bad;
	int rc;

	tu_stripes_alloc(&s, ndata, nparity, len, nstripes, rng, align);
	expect = tu_stripes_snapshot(&s);
	eptr = tu_snapshot_ptrs(&s, expect);
	for (size_t st = 0; st < nstripes; st++)
		graid_gf_ref_gen(ndata, nparity, 0, len, eptr + st * (ndata + nparity));
	rc = graid_parity_gen(be, ndata, nparity, len, nstripes, s.ptr);
	cr_assert_eq(rc, 0, "gen %u+%u len %zu x%zu align %d: %s (seed %llu)", ndata, nparity,
		     len, nstripes, align, graid_strerror(rc), (unsigned long long)tu_seed());
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s gen %u+%u len %zu x%zu align %d: block %ld differs from reference "
		     "(seed %llu)",
		     graid_backend_name(be), ndata, nparity, len, nstripes, align, bad,
		     (unsigned long long)tu_seed());
	free(eptr);
	free(expect);
	tu_stripes_free(&s);
}

/* One recovery case: clobber the lost blocks, recover, every block must be as before. */
static void conf_recover_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
			      unsigned nparity, size_t len, size_t nstripes, int align,
			      unsigned nlost, const unsigned *lost)
{
	const unsigned nblk = ndata + nparity;
	struct tu_stripes s;
	uint8_t *expect;
	long bad;
	int rc;

	tu_stripes_alloc(&s, ndata, nparity, len, nstripes, rng, align);
	tu_stripes_ref_gen(&s);
	expect = tu_stripes_snapshot(&s);
	for (size_t st = 0; st < nstripes; st++)
		for (unsigned l = 0; l < nlost; l++)
			tu_fill(rng, s.ptr[st * nblk + lost[l]], len);
	rc = graid_parity_recover(be, ndata, nparity, len, nstripes, s.ptr, nlost, lost);
	cr_assert_eq(rc, 0, "recover %u+%u lost {%u,%u}: %s (seed %llu)", ndata, nparity,
		     lost[0], nlost > 1 ? lost[1] : lost[0], graid_strerror(rc),
		     (unsigned long long)tu_seed());
	bad = tu_stripes_diff(&s, expect);
	cr_assert_eq(bad, -1,
		     "%s recover %u+%u len %zu x%zu align %d lost {%u,%u}: block %ld wrong "
		     "(seed %llu)",
		     graid_backend_name(be), ndata, nparity, len, nstripes, align, lost[0],
		     nlost > 1 ? lost[1] : lost[0], bad, (unsigned long long)tu_seed());
	free(expect);
	tu_stripes_free(&s);
}

static const unsigned conf_ndata[] = { 1, 2, 3, 4, 5, 7, 8, 16, 22, 30, 31, 32, 33, 64 };
static const size_t conf_len[] = { 1, 7, 15, 16, 31, 32, 33, 63, 64, 65, 100, 512,
				   4096, 4096 + 13, 65536 - 1, 65536 };

static void conf_gen_shapes(const char *name)
{
	struct graid_backend *be = conf_open(name);
	uint64_t rng = tu_seed() ^ 0x67656e;

	for (size_t i = 0; i < sizeof(conf_ndata) / sizeof(conf_ndata[0]); i++)
		for (unsigned np = 1; np <= 2; np++)
			for (int align = 0; align < 4; align++) {
				size_t len = conf_len[tu_rand(&rng) % (sizeof(conf_len) /
								       sizeof(conf_len[0]))];

				conf_gen_case(be, &rng, conf_ndata[i], np, len,
					      1 + tu_rand(&rng) % 5, align);
			}
	/* Random lengths too, so no fixed table hides a tail bug. */
	for (int r = 0; r < 40; r++)
		conf_gen_case(be, &rng, 1 + tu_rand(&rng) % 40, 1 + tu_rand(&rng) % 2,
			      1 + tu_rand(&rng) % 20000, 1 + tu_rand(&rng) % 9,
			      (int)(tu_rand(&rng) % 4));
	conf_close(be);
}

/* Every loss pattern of small stripes; a sample of them for wide ones. */
static void conf_recover_shapes(const char *name)
{
	static const unsigned ndatas[] = { 1, 2, 3, 4, 6, 8, 13, 32 };
	struct graid_backend *be = conf_open(name);
	uint64_t rng = tu_seed() ^ 0x726563;

	for (size_t i = 0; i < sizeof(ndatas) / sizeof(ndatas[0]); i++) {
		for (unsigned np = 1; np <= 2; np++) {
			unsigned n = ndatas[i], nblk = n + np;

			for (unsigned a = 0; a < nblk; a++) {
				size_t len = conf_len[tu_rand(&rng) % (sizeof(conf_len) /
								       sizeof(conf_len[0]))];
				unsigned one[1] = { a };

				conf_recover_case(be, &rng, n, np, len, 1 + tu_rand(&rng) % 3,
						  (int)(tu_rand(&rng) % 4), 1, one);
				for (unsigned b = a + 1; np == 2 && b < nblk; b++) {
					/* Both orders are accepted; give half reversed. */
					unsigned two[2] = { a, b };

					if (tu_rand(&rng) & 1) {
						two[0] = b;
						two[1] = a;
					}
					if (n > 8 && tu_rand(&rng) % 4)
						continue;
					len = 1 + tu_rand(&rng) % 5000;
					conf_recover_case(be, &rng, n, np, len,
							  1 + tu_rand(&rng) % 3,
							  (int)(tu_rand(&rng) % 4), 2, two);
				}
			}
		}
	}
	conf_close(be);
}

/* Check: clean stripes pass; one wrong block is named (RAID-6); two are not. */
static void conf_check_shapes(const char *name)
{
	struct graid_backend *be = conf_open(name);
	uint64_t rng = tu_seed() ^ 0x636865;

	for (int r = 0; r < 60; r++) {
		unsigned ndata = 1 + tu_rand(&rng) % 24, np = 1 + tu_rand(&rng) % 2;
		unsigned nblk = ndata + np;
		size_t len = 1 + tu_rand(&rng) % 9000, nstripes = 1 + tu_rand(&rng) % 6;
		int align = (int)(tu_rand(&rng) % 4);
		struct tu_stripes s;
		int32_t *res = calloc(nstripes, sizeof(*res));
		int32_t *want = calloc(nstripes, sizeof(*want));
		uint8_t *before;
		long n, nbad = 0;

		tu_stripes_alloc(&s, ndata, np, len, nstripes, &rng, align);
		tu_stripes_ref_gen(&s);
		for (size_t st = 0; st < nstripes; st++) {
			unsigned kind = tu_rand(&rng) % 3; /* clean, one block, two blocks */
			unsigned z = tu_rand(&rng) % nblk;
			size_t at = tu_rand(&rng) % len;

			want[st] = GRAID_CHECK_CLEAN;
			if (kind == 0)
				continue;
			s.ptr[st * nblk + z][at] ^= (uint8_t)(1 + tu_rand(&rng) % 255);
			want[st] = np == 2 ? (int32_t)z : GRAID_CHECK_UNLOCATED;
			nbad++;
			if (kind == 2 && len > 1) {
				unsigned z2 = (z + 1 + tu_rand(&rng) % (nblk - 1)) % nblk;
				size_t at2 = (at + 1 + tu_rand(&rng) % (len - 1)) % len;

				if (z2 == z)
					continue;
				s.ptr[st * nblk + z2][at2] ^= (uint8_t)(1 + tu_rand(&rng) % 255);
				want[st] = GRAID_CHECK_UNLOCATED;
			}
		}
		before = tu_stripes_snapshot(&s);
		n = graid_parity_check(be, ndata, np, len, nstripes, s.ptr, res);
		cr_assert_eq(n, nbad, "%s check %u+%u len %zu: %ld bad, expected %ld (seed %llu)",
			     name, ndata, np, len, n, nbad, (unsigned long long)tu_seed());
		for (size_t st = 0; st < nstripes; st++)
			cr_assert_eq(res[st], want[st],
				     "%s check %u+%u len %zu stripe %zu: verdict %d, expected %d "
				     "(seed %llu)",
				     name, ndata, np, len, st, res[st], want[st],
				     (unsigned long long)tu_seed());
		cr_assert_eq(tu_stripes_diff(&s, before), -1, "check wrote to a block");
		cr_assert_eq(graid_parity_check(be, ndata, np, len, nstripes, s.ptr, NULL), nbad);
		free(before);
		free(res);
		free(want);
		tu_stripes_free(&s);
	}
	conf_close(be);
}

/* Blocks over a MiB with odd tails, and the widest stripes the field allows. */
static void conf_large_and_wide(const char *name)
{
	struct graid_backend *be = conf_open(name);
	uint64_t rng = tu_seed() ^ 0x776964;
	unsigned lost2[2] = { 2, 5 }, lostdq[2] = { 0, 7 };
	unsigned wide2[2] = { 17, 254 }, widepq[2] = { 200, 255 };

	conf_gen_case(be, &rng, 6, 2, (1u << 20) + 13, 2, 0);
	conf_gen_case(be, &rng, 5, 1, (1u << 20) + 4097, 1, 1);
	conf_recover_case(be, &rng, 6, 2, (1u << 20) + 13, 1, 0, 2, lost2);
	conf_recover_case(be, &rng, 6, 2, (3u << 19) + 1, 1, 3, 2, lostdq);
	conf_gen_case(be, &rng, 255, 2, 4096 + 7, 1, 0);
	conf_gen_case(be, &rng, 255, 1, 999, 2, 2);
	conf_gen_case(be, &rng, 128 + tu_rand(&rng) % 127, 2, 1 + tu_rand(&rng) % 3000, 1, 1);
	conf_recover_case(be, &rng, 255, 2, 4096, 1, 0, 2, wide2);
	conf_recover_case(be, &rng, 255, 2, 513, 1, 2, 2, widepq);
	/* Many stripes in one batch: engines must not lose track of any. */
	conf_gen_case(be, &rng, 4, 2, 4096, 257, 0);
	conf_recover_case(be, &rng, 4, 2, 4096, 129, 0, 2, lost2);
	conf_close(be);
}

#define CONFORMANCE_SUITE(engine)                                                        \
	Test(conformance_##engine, gen_matches_reference_on_random_shapes, .timeout = 600) \
	{                                                                                \
		conf_gen_shapes(#engine);                                                \
	}                                                                                \
	Test(conformance_##engine, recover_rebuilds_every_loss_case, .timeout = 600)     \
	{                                                                                \
		conf_recover_shapes(#engine);                                            \
	}                                                                                \
	Test(conformance_##engine, check_names_the_one_wrong_block, .timeout = 600)      \
	{                                                                                \
		conf_check_shapes(#engine);                                              \
	}                                                                                \
	Test(conformance_##engine, large_blocks_and_wide_stripes_match, .timeout = 600)  \
	{                                                                                \
		conf_large_and_wide(#engine);                                            \
	}

CONFORMANCE_SUITE(ref)
CONFORMANCE_SUITE(isal)

/*
 * The CPU engine with every batch split over its worker threads (a threshold of one byte,
 * more threads than this machine's cores): runs of stripes and byte ranges of single
 * stripes must give the bytes of one thread. Each test is its own process: the environment
 * set here is read by this test's open only.
 */
static void conf_isal_threads(void)
{
	setenv("GRAID_CPU_THREADS", "3", 1);
	setenv("GRAID_CPU_THREAD_MIN", "1", 1);
}

Test(conformance_isal_threads, gen_matches_reference_on_random_shapes, .timeout = 600)
{
	conf_isal_threads();
	conf_gen_shapes("isal");
}

Test(conformance_isal_threads, recover_rebuilds_every_loss_case, .timeout = 600)
{
	conf_isal_threads();
	conf_recover_shapes("isal");
}

Test(conformance_isal_threads, check_names_the_one_wrong_block, .timeout = 600)
{
	conf_isal_threads();
	conf_check_shapes("isal");
}

Test(conformance_isal_threads, large_blocks_and_wide_stripes_match, .timeout = 600)
{
	conf_isal_threads();
	conf_large_and_wide("isal");
}
/*
 * The CPU engine with each of its SIMD variants forced (GRAID_CPU_VARIANT), where this CPU
 * runs it, and every kind of work routed to it (GRAID_CPU_PREFER=own), whatever the timing
 * would pick on this machine: the variant against the reference, on every shape and loss
 * case (ISA-L's routes have their own suite, the plain isal one). The engine's description
 * must name the variant, so an unsupported one, which falls back to the best, cannot pass in
 * its place.
 * (The description is the probe's, which reads the environment again; the engine keeps
 * the variant it chose at its first open. Each test is its own process, so the two agree.)
 */
static bool conf_cpu_runs(const char *variant)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	if (!strcmp(variant, "avx512-gfni"))
		return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("gfni");
	if (!strcmp(variant, "avx512"))
		return __builtin_cpu_supports("avx512bw");
	if (!strcmp(variant, "avx2-gfni"))
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni");
	if (!strcmp(variant, "avx2"))
		return __builtin_cpu_supports("avx2");
	if (!strcmp(variant, "ssse3"))
		return __builtin_cpu_supports("ssse3");
#endif
	return !strcmp(variant, "c");
}

static void conf_isal_variant(const char *variant)
{
	struct graid_backend_desc d[16];
	char want[48];
	int n;

	if (!conf_cpu_runs(variant))
		cr_skip_test("CPU variant %s: not run by this CPU", variant);
	setenv("GRAID_CPU_VARIANT", variant, 1);
	setenv("GRAID_CPU_PREFER", "own", 1);
	for (unsigned i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, sizeof(d) / sizeof(d[0]), 0);
	cr_assert_gt(n, 0);
	snprintf(want, sizeof(want), "own %s routines", variant);
	for (int i = 0; i < n; i++)
		if (!strcmp(d[i].name, "isal")) {
			cr_assert(strstr(d[i].device, want), "isal engine: \"%s\", wanted \"%s\"",
				  d[i].device, want);
			return;
		}
	cr_assert_fail("no isal engine in graid_backend_list()");
}

#define CONFORMANCE_ISAL_VARIANT(variant, name)                                        \
	Test(conformance_isal_##variant, gen_matches_reference_on_random_shapes,         \
	     .timeout = 600)                                                             \
	{                                                                                \
		conf_isal_variant(name);                                                  \
		conf_gen_shapes("isal");                                                 \
	}                                                                                \
	Test(conformance_isal_##variant, recover_rebuilds_every_loss_case,               \
	     .timeout = 600)                                                             \
	{                                                                                \
		conf_isal_variant(name);                                                  \
		conf_recover_shapes("isal");                                             \
	}                                                                                \
	Test(conformance_isal_##variant, check_names_the_one_wrong_block, .timeout = 600) \
	{                                                                                \
		conf_isal_variant(name);                                                  \
		conf_check_shapes("isal");                                               \
	}                                                                                \
	Test(conformance_isal_##variant, large_blocks_and_wide_stripes_match,            \
	     .timeout = 600)                                                             \
	{                                                                                \
		conf_isal_variant(name);                                                  \
		conf_large_and_wide("isal");                                             \
	}

CONFORMANCE_ISAL_VARIANT(avx512_gfni, "avx512-gfni")
CONFORMANCE_ISAL_VARIANT(avx512, "avx512")
CONFORMANCE_ISAL_VARIANT(avx2_gfni, "avx2-gfni")
CONFORMANCE_ISAL_VARIANT(avx2, "avx2")
CONFORMANCE_ISAL_VARIANT(ssse3, "ssse3")
CONFORMANCE_ISAL_VARIANT(c, "c")

CONFORMANCE_SUITE(opencl)
CONFORMANCE_SUITE(cuda)
