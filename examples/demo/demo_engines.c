/* SPDX-License-Identifier: MIT */
/*
 * The demo's first part: every parity engine present computes RAID-6 parity on the same
 * random stripes, the results are checked identical, a lost pair of blocks is rebuilt, and
 * throughput is printed beside ISA-L called directly and memcpy of the same bytes, each with
 * the number of CPU threads it ran on: one against one, and all the CPUs against all.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/raid.h>

#include <libgraid/graid.h>

#include "demo.h"

#define DEMO_NDATA 8
#define DEMO_NPARITY 2
#define DEMO_LEN (64u * 1024)
#define DEMO_NSTRIPES 64 /* 32 MiB of data per batch */
#define DEMO_NBLK (DEMO_NDATA + DEMO_NPARITY)
#define DEMO_RUNS 7
#define DEMO_MAX_THREADS 64

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
	unsigned nthreads; /* ISA-L direct: threads sharing the stripes */
};

static int demo_engine_gen(void *arg)
{
	struct demo_ctx *c = arg;

	return graid_parity_gen(c->be, DEMO_NDATA, DEMO_NPARITY, DEMO_LEN, DEMO_NSTRIPES,
				c->blocks);
}

struct demo_share {
	struct demo_ctx *c;
	unsigned t;
	int rc;
};

/* Thread t's share of the stripes, through pq_gen. */
static void *demo_isal_share(void *arg)
{
	struct demo_share *sh = arg;
	const unsigned n = sh->c->nthreads ? sh->c->nthreads : 1;

	sh->rc = 0;
	for (unsigned s = sh->t * DEMO_NSTRIPES / n; s < (sh->t + 1) * DEMO_NSTRIPES / n; s++)
		if (pq_gen(DEMO_NBLK, DEMO_LEN, (void **)(sh->c->blocks + s * DEMO_NBLK)))
			sh->rc = -1;
	return NULL;
}

/* ISA-L called directly, on c->nthreads threads (this one among them). */
static int demo_isal_direct(void *arg)
{
	struct demo_ctx *c = arg;
	struct demo_share sh[DEMO_MAX_THREADS];
	pthread_t tid[DEMO_MAX_THREADS];
	unsigned n = c->nthreads ? c->nthreads : 1, started = 1;
	int rc = 0;

	for (unsigned t = 0; t < n; t++)
		sh[t] = (struct demo_share){ .c = c, .t = t };
	for (unsigned t = 1; t < n; t++)
		if (pthread_create(&tid[t], NULL, demo_isal_share, &sh[t]) == 0)
			started++;
		else
			demo_isal_share(&sh[t]);
	demo_isal_share(&sh[0]);
	for (unsigned t = 1; t < started; t++)
		pthread_join(tid[t], NULL);
	for (unsigned t = 0; t < n; t++)
		rc |= sh[t].rc;
	return rc;
}

/* Open an engine; the CPU engine with GRAID_CPU_THREADS=nthreads (its own pool). */
static int demo_open(const char *name, unsigned nthreads, struct graid_backend **be)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", nthreads);
	if (!strcmp(name, "isal"))
		setenv("GRAID_CPU_THREADS", v, 1);
	return graid_backend_open(name, be);
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

/*
 * One engine's row: its P+Q speed on nthreads CPU threads, and whether its parity and its
 * recovery of two lost blocks per stripe match ISA-L's (expect). Returns 1 on a mismatch.
 */
static int demo_engine_row(const struct graid_backend_desc *d, struct demo_ctx *ctx,
			   const uint8_t *expect, unsigned nthreads)
{
	const size_t nblocks = (size_t)DEMO_NSTRIPES * DEMO_NBLK;
	uint8_t *buf = ctx->blocks[0];
	unsigned lost[2] = { 2, 6 };
	const char *verdict = "identical";
	char tcol[16];
	double gbps;

	if (!strcmp(d->name, "isal"))
		snprintf(tcol, sizeof(tcol), "%u", nthreads);
	else
		snprintf(tcol, sizeof(tcol), "%s", strcmp(d->name, "ref") ? "dev" : "1");
	if (d->status) {
		printf("%-8s %-46s %7s %10s %10s\n", d->name, graid_strerror(d->status), "-", "-",
		       "skipped");
		return 0;
	}
	if (demo_open(d->name, nthreads, &ctx->be))
		return 0;
	for (size_t b = 0; b < nblocks; b += DEMO_NBLK) /* wipe P and Q first */
		memset(buf + (b + DEMO_NDATA) * DEMO_LEN, 0, 2 * DEMO_LEN);
	gbps = demo_time(demo_engine_gen, ctx);
	if (gbps < 0 || memcmp(buf, expect, nblocks * DEMO_LEN))
		verdict = "DIFFERENT";
	/* Lose two data blocks of every stripe, rebuild them, compare again. */
	for (size_t b = 0; b < nblocks; b += DEMO_NBLK) {
		memset(buf + (b + lost[0]) * DEMO_LEN, 0xee, DEMO_LEN);
		memset(buf + (b + lost[1]) * DEMO_LEN, 0xee, DEMO_LEN);
	}
	if (graid_parity_recover(ctx->be, DEMO_NDATA, DEMO_NPARITY, DEMO_LEN, DEMO_NSTRIPES,
				 ctx->blocks, 2, lost) ||
	    memcmp(buf, expect, nblocks * DEMO_LEN))
		verdict = "DIFFERENT";
	printf("%-8s %-46.46s %7s %10.2f %10s\n", d->name, d->device, tcol, gbps, verdict);
	graid_backend_close(ctx->be);
	return verdict[0] == 'D';
}

int demo_engines(void)
{
	const size_t nblocks = (size_t)DEMO_NSTRIPES * DEMO_NBLK;
	struct graid_backend_desc descs[8];
	struct demo_ctx ctx = { 0 };
	uint8_t *buf, *expect = NULL, *scratch;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	const unsigned ncpu = online < 1 ? 1 : online > DEMO_MAX_THREADS ? DEMO_MAX_THREADS
									 : (unsigned)online;
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

	printf("threads: CPU threads of the run (the CPU engine's pool, GRAID_CPU_THREADS; ISA-L\n"
	       "direct splits the stripes over as many); dev: an engine on its own device's\n"
	       "threads. Compare rows of equal thread counts.\n\n");
	printf("%-8s %-46s %7s %10s %10s\n", "engine", "device", "threads", "P+Q GB/s", "result");
	n = graid_backend_list(descs, 8, 0);
	for (int i = 0; i < n && i < 8; i++) {
		const bool cpu = !strcmp(descs[i].name, "isal");

		/* The CPU engine twice, on one thread and on all; every other engine once. */
		failures += demo_engine_row(&descs[i], &ctx, expect, 1);
		if (cpu && ncpu > 1)
			failures += demo_engine_row(&descs[i], &ctx, expect, ncpu);
	}
	unsetenv("GRAID_CPU_THREADS");
	for (unsigned pass = 0; pass < (ncpu > 1 ? 2u : 1u); pass++) {
		ctx.nthreads = pass ? ncpu : 1;
		printf("%-8s %-46s %7u %10.2f %10s\n", "(isa-l)",
		       "pq_gen called directly, same stripes", ctx.nthreads,
		       demo_time(demo_isal_direct, &ctx), "reference");
	}
	printf("%-8s %-46s %7u %10.2f %10s\n", "(memcpy)", "copy of the same data bytes", 1u,
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
