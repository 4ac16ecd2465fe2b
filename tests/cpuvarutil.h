/* SPDX-License-Identifier: MIT */
/* Helpers of the CPU engine suites: an engine opened with a thread count, batches checked against the reference. */
#ifndef LIBGRAID_CPUVARUTIL_H
#define LIBGRAID_CPUVARUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#define CV_N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The isal engine opened with GRAID_CPU_THREADS=@p nthreads and GRAID_CPU_THREAD_MIN=@p min
 * (Criterion runs each test in its own process: the environment set here is the one the
 * engine reads at open).
 */
struct graid_backend *cv_open_threads(const char *nthreads, const char *min);
/*
 * Gen, then recover of a case, then check with some stripes spoilt, each against ref, on
 * @p nstripes stripes of @p ndata + @p nparity blocks of @p len bytes (@p align: how the
 * blocks are misaligned).
 */
void cv_engine_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
		    unsigned nparity, size_t len, size_t nstripes, int align);
/* Few stripes (byte ranges, odd tails) and many (runs), narrow and wide: cv_engine_case each. */
void cv_engine_shapes(struct graid_backend *be, uint64_t *rng);

#endif
