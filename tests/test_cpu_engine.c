/* SPDX-License-Identifier: MIT */
/* The CPU engine through the public API, each route pinned in turn and on skewed layouts, against the reference. */
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
 * The engine on 1 .. max_threads threads with its routes pinned (GRAID_CPU_PREFER),
 * whatever it timed; stream_min: GRAID_CPU_STREAM_MIN, or NULL for the default. The
 * choice is made once per process, and Criterion runs each test in its own.
 */
static void cv_engine_prefer(const char *prefer, const char *stream_min, unsigned max_threads,
			     uint64_t salt)
{
	uint64_t rng = tu_seed() ^ salt;

	setenv("GRAID_CPU_PREFER", prefer, 1);
	if (stream_min)
		setenv("GRAID_CPU_STREAM_MIN", stream_min, 1);
	for (unsigned t = 1; t <= max_threads; t++) {
		char n[8];
		struct graid_backend *be;

		snprintf(n, sizeof(n), "%u", t);
		be = cv_open_threads(n, "1");
		cv_engine_shapes(be, &rng);
		graid_backend_close(be);
	}
}

/* ISA-L's routines wherever it has one (pq_gen, xor_gen, pq_check), and then nowhere. */
Test(cpu_engine, every_route_matches_the_reference_isal, .timeout = 600)
{
	cv_engine_prefer("isal", NULL, 1, 0x72746931);
}

Test(cpu_engine, every_route_matches_the_reference_own, .timeout = 600)
{
	cv_engine_prefer("own", NULL, 1, 0x72746f32);
}

/* Spoil blocks lost[] of a stripe, recover them with flags, compare with want. */
static void cv_skewed_recover(struct graid_backend *be, uint64_t *rng, uint8_t **blk,
			      uint8_t **wblk, unsigned n, size_t len, unsigned nlost,
			      const unsigned *lost, uint32_t flags, size_t skew)
{
	for (unsigned l = 0; l < nlost; l++)
		tu_fill(rng, blk[lost[l]], len);
	cr_assert_eq(graid_parity_recover_flags(be, n, 2, len, 1, blk, nlost, lost, flags), 0);
	for (unsigned i = 0; i < n + 2; i++)
		cr_assert(!memcmp(blk[i], wblk[i], len),
			  "%u+2 skew %zu flags %#x lost {%u,%u}: block %u differs (seed %llu)", n,
			  skew, flags, lost[0], nlost > 1 ? lost[1] : lost[0], i,
			  (unsigned long long)tu_seed());
}

/*
 * Blocks of one buffer, 64 KiB + skew apart: layouts where pq_gen stalls (small skews) go
 * to the own routine, the others stay with ISA-L; both must give the reference's bytes.
 * With flags GRAID_BATCH_F_STREAM, where streaming stores may go and where they must not.
 */
static void cv_skewed(uint32_t flags, uint64_t salt)
{
	static const size_t skews[] = { 0, 32, 64, 96, 512, 2048, 4096 };
	static const unsigned widths[] = { 4, 8, 9, 22 };
	struct graid_backend *be = cv_open_threads("1", "1");
	uint64_t rng = tu_seed() ^ salt;

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
			cr_assert_eq(graid_parity_gen_flags(be, n, 2, len, 1, blk, flags), 0);
			for (unsigned i = 0; i < nblk; i++)
				cr_assert(!memcmp(blk[i], wblk[i], len),
					  "%u+2 skew %zu flags %#x: block %u differs (seed %llu)", n,
					  skews[k], flags, i, (unsigned long long)tu_seed());
			/* Every op of the pass: one data block (XOR), P+Q, Q, data+P, two data. */
			const unsigned cases[5][2] = {
				{ 1, 0 }, { n, n + 1 }, { n + 1, 0 }, { 0, n }, { 0, n - 1 }
			};
			const unsigned counts[5] = { 1, 2, 1, 2, 2 };

			for (unsigned c = 0; c < 5; c++)
				cv_skewed_recover(be, &rng, blk, wblk, n, len, counts[c], cases[c],
						  flags, skews[k]);
			free(buf);
			free(want);
		}
	graid_backend_close(be);
}

Test(cpu_engine, skewed_layouts_match_the_reference)
{
	cv_skewed(0, 0x63767373);
}

Test(cpu_engine, skewed_layouts_match_the_reference_when_streaming)
{
	cv_skewed(GRAID_BATCH_F_STREAM, 0x63767374);
}

/*
 * Every batch streams (GRAID_CPU_STREAM_MIN=1, as a batch larger than the last-level cache
 * does), on one thread and split over two: the reference's bytes.
 */
Test(cpu_engine, every_route_matches_the_reference_when_streaming_isal, .timeout = 600)
{
	cv_engine_prefer("isal", "1", 2, 0x72747333);
}

Test(cpu_engine, every_route_matches_the_reference_when_streaming_own, .timeout = 600)
{
	cv_engine_prefer("own", "1", 2, 0x72747334);
}
