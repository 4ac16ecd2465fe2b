/* SPDX-License-Identifier: MIT */
/*
 * The demo's first part: every parity engine present computes RAID-6 parity on the same
 * random stripes, the results are checked identical, a lost pair of blocks is rebuilt, and
 * throughput is printed beside ISA-L called directly and memcpy of the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/raid.h>

#include <libgraid/graid.h>

#include "demo.h"

#define DEMO_NDATA 8
#define DEMO_NPARITY 2
#define DEMO_LEN (64u * 1024)
#define DEMO_NSTRIPES 64 /* 32 MiB of data per batch */
#define DEMO_NBLK (DEMO_NDATA + DEMO_NPARITY)
#define DEMO_RUNS 7

static int demo_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median GB/s of data over DEMO_RUNS calls of fn. */
static double demo_time(int (*fn)(void *), void *arg)
{
	double gbps[DEMO_RUNS];

	fn(arg); /* warm-up: first-call costs are not what we are measuring */
	for (int r = 0; r < DEMO_RUNS; r++) {
		double t0 = demo_now();

		if (fn(arg))
			return -1;
		gbps[r] = (double)DEMO_NDATA * DEMO_LEN * DEMO_NSTRIPES / (demo_now() - t0) / 1e9;
	}
	qsort(gbps, DEMO_RUNS, sizeof(double), demo_cmp_double);
	return gbps[DEMO_RUNS / 2];
}

struct demo_ctx {
	struct graid_backend *be;
	uint8_t **blocks;
	uint8_t *copy_dst;
};

static int demo_engine_gen(void *arg)
{
	struct demo_ctx *c = arg;

	return graid_parity_gen(c->be, DEMO_NDATA, DEMO_NPARITY, DEMO_LEN, DEMO_NSTRIPES,
				c->blocks);
}

static int demo_isal_direct(void *arg)
{
	struct demo_ctx *c = arg;

	for (int s = 0; s < DEMO_NSTRIPES; s++)
		if (pq_gen(DEMO_NBLK, DEMO_LEN, (void **)(c->blocks + s * DEMO_NBLK)))
			return -1;
	return 0;
}

static int demo_memcpy(void *arg)
{
	struct demo_ctx *c = arg;

	for (int s = 0; s < DEMO_NSTRIPES; s++)
		for (int d = 0; d < DEMO_NDATA; d++)
			memcpy(c->copy_dst + ((size_t)s * DEMO_NDATA + d) * DEMO_LEN,
			       c->blocks[s * DEMO_NBLK + d], DEMO_LEN);
	return 0;
}

int demo_engines(void)
{
	const size_t nblocks = (size_t)DEMO_NSTRIPES * DEMO_NBLK;
	struct graid_backend_desc descs[8];
	struct demo_ctx ctx = { 0 };
	uint8_t *buf, *expect = NULL, *scratch;
	unsigned lost[2] = { 2, 6 };
	int n, failures = 0;

	for (int i = 0; i < 8; i++)
		descs[i].struct_size = sizeof(descs[i]);
	if (posix_memalign((void **)&buf, 64, nblocks * DEMO_LEN) ||
	    posix_memalign((void **)&ctx.copy_dst, 64, (size_t)DEMO_NSTRIPES * DEMO_NDATA * DEMO_LEN))
		return 1;
	expect = malloc(nblocks * DEMO_LEN);
	scratch = malloc(nblocks * DEMO_LEN);
	ctx.blocks = malloc(nblocks * sizeof(*ctx.blocks));
	if (!expect || !scratch || !ctx.blocks)
		return 1;
	srand(12345);
	for (size_t i = 0; i < nblocks * DEMO_LEN; i++)
		buf[i] = (uint8_t)rand();
	for (size_t i = 0; i < nblocks; i++)
		ctx.blocks[i] = buf + i * DEMO_LEN;

	printf("1. Parity engines: RAID-6, %d+%d stripes of %u KiB, %d stripes per batch "
	       "(%u MiB of data)\n\n", DEMO_NDATA, DEMO_NPARITY,
	       DEMO_LEN / 1024, DEMO_NSTRIPES, DEMO_NDATA * DEMO_LEN * DEMO_NSTRIPES >> 20);
	/* The expected parity, from ISA-L called directly: an implementation nobody here wrote. */
	demo_isal_direct(&ctx);
	memcpy(expect, buf, nblocks * DEMO_LEN);

	printf("%-8s %-52s %10s %10s\n", "engine", "device", "P+Q GB/s", "result");
	n = graid_backend_list(descs, 8, 0);
	for (int i = 0; i < n && i < 8; i++) {
		const char *verdict = "identical";
		double gbps;

		if (descs[i].status) {
			printf("%-8s %-52s %10s %10s\n", descs[i].name, graid_strerror(descs[i].status),
			       "-", "skipped");
			continue;
		}
		if (graid_backend_open(descs[i].name, &ctx.be))
			continue;
		for (size_t b = 0; b < nblocks; b += DEMO_NBLK) /* wipe P and Q first */
			memset(buf + (b + DEMO_NDATA) * DEMO_LEN, 0, 2 * DEMO_LEN);
		gbps = demo_time(demo_engine_gen, &ctx);
		if (gbps < 0 || memcmp(buf, expect, nblocks * DEMO_LEN))
			verdict = "DIFFERENT";
		/* Lose two data blocks of every stripe, rebuild them, compare again. */
		for (size_t b = 0; b < nblocks; b += DEMO_NBLK) {
			memset(buf + (b + lost[0]) * DEMO_LEN, 0xee, DEMO_LEN);
			memset(buf + (b + lost[1]) * DEMO_LEN, 0xee, DEMO_LEN);
		}
		if (graid_parity_recover(ctx.be, DEMO_NDATA, DEMO_NPARITY, DEMO_LEN, DEMO_NSTRIPES,
					 ctx.blocks, 2, lost) ||
		    memcmp(buf, expect, nblocks * DEMO_LEN))
			verdict = "DIFFERENT";
		failures += verdict[0] == 'D';
		printf("%-8s %-52.52s %10.2f %10s\n", descs[i].name, descs[i].device, gbps, verdict);
		graid_backend_close(ctx.be);
	}
	printf("%-8s %-52s %10.2f %10s\n", "(isa-l)", "pq_gen called directly, same stripes",
	       demo_time(demo_isal_direct, &ctx), "reference");
	printf("%-8s %-52s %10.2f %10s\n", "(memcpy)", "copy of the same data bytes",
	       demo_time(demo_memcpy, &ctx), "-");
	printf("\n%s: every engine's P and Q %s ISA-L's, and two lost blocks per stripe were "
	       "rebuilt %s.\n", failures ? "FAILED" : "ok",
	       failures ? "did not all match" : "matched", failures ? "wrongly by some" : "exactly");
	free(ctx.blocks);
	free(scratch);
	free(expect);
	free(ctx.copy_dst);
	free(buf);
	return failures ? 1 : 0;
}
