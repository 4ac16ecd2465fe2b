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
