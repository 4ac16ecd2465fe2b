/* SPDX-License-Identifier: MIT */
/* Helpers of the CPU engine suites: an engine opened with a thread count, batches checked against the reference. */
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
#include "cpuvarutil.h"

/*
 * The engine's worker threads. Small thresholds force every batch through the split path:
 * runs of stripes when there are many, byte ranges of each stripe when there are few.
 * Criterion runs each test in its own process, so the environment set here is the one the
 * engine reads at open.
 */
struct graid_backend *cv_open_threads(const char *nthreads, const char *min)
{
	struct graid_backend *be;

	setenv("GRAID_CPU_THREADS", nthreads, 1);
	setenv("GRAID_CPU_THREAD_MIN", min, 1);
	cr_assert_eq(graid_backend_open("isal", &be), 0);
	return be;
}

/* Gen, then recover of a case, then check with some stripes spoilt; each against ref. */
void cv_engine_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
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

void cv_engine_shapes(struct graid_backend *be, uint64_t *rng)
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
