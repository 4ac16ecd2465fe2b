/* SPDX-License-Identifier: MIT */
/* One point of the sweep: random stripes, the "ref" engine's answer, one engine timed on them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_point.h"

/* Recovery rebuilds data blocks 0 and 1: two lost data blocks, the heaviest RAID-6 case. */
static const unsigned pc_lost[2] = { 0, 1 };

/* Timed calls are kept for the median; more than this and only the first ones are. */
#define PC_MAX_SAMPLES 4096

static double pc_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pc_buffers_init(struct pc_buffers *b, size_t bytes, size_t want_bytes, size_t nptrs,
		    size_t len, uint64_t seed)
{
	uint64_t x = seed | 1;

	memset(b, 0, sizeof(*b));
	if (posix_memalign((void **)&b->stripes, 64, bytes) ||
	    posix_memalign((void **)&b->want, 64, want_bytes) ||
	    !(b->ptrs = calloc(nptrs, sizeof(*b->ptrs)))) {
		pc_buffers_free(b);
		return -ENOMEM;
	}
	b->bytes = bytes;
	b->len = len;
	/* xorshift64*: fast enough that filling a GiB does not dominate the run. */
	for (size_t i = 0; i + 8 <= bytes; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		x *= 0x2545f4914f6cdd1dull;
		memcpy(b->stripes + i, &x, 8);
	}
	return 0;
}

void pc_buffers_free(struct pc_buffers *b)
{
	free(b->stripes);
	free(b->want);
	free(b->ptrs);
	memset(b, 0, sizeof(*b));
}

static uint8_t *pc_out_block(const struct pc_buffers *b, const struct pc_shape *sh, size_t s,
			     unsigned o)
{
	unsigned idx = sh->op == PC_OP_GEN ? sh->ndata + o : pc_lost[o];

	return b->ptrs[s * (sh->ndata + 2) + idx];
}

/*
 * So an engine that writes nothing cannot pass: every output byte is made to differ from
 * what is there now (the answer, once pc_point_prepare has run). A constant pattern would
 * not do: an engine that failed earlier can leave that very pattern in the data blocks.
 */
static void pc_clobber(const struct pc_buffers *b, const struct pc_shape *sh)
{
	for (size_t s = 0; s < sh->nstripes; s++)
		for (unsigned o = 0; o < 2; o++) {
			uint8_t *p = pc_out_block(b, sh, s, o);

			for (size_t i = 0; i < sh->len; i++)
				p[i] = (uint8_t)~p[i];
		}
}

/* Put the answer's complement in the output blocks, whatever the last engine left there. */
static void pc_unanswer(const struct pc_buffers *b, const struct pc_shape *sh)
{
	for (size_t s = 0; s < sh->nstripes; s++)
		for (unsigned o = 0; o < 2; o++) {
			uint8_t *p = pc_out_block(b, sh, s, o);
			const uint8_t *w = b->want + (s * 2 + o) * sh->len;

			for (size_t i = 0; i < sh->len; i++)
				p[i] = (uint8_t)~w[i];
		}
}

static int pc_call(struct pc_buffers *b, const struct pc_shape *sh, struct graid_backend *be)
{
	if (sh->op == PC_OP_GEN)
		return graid_parity_gen(be, sh->ndata, 2, sh->len, sh->nstripes, b->ptrs);
	return graid_parity_recover(be, sh->ndata, 2, sh->len, sh->nstripes, b->ptrs, 2,
				    pc_lost);
}

int pc_point_prepare(struct pc_buffers *b, const struct pc_shape *sh,
		     struct graid_backend *ref)
{
	const size_t nblk = sh->nstripes * (sh->ndata + 2);
	int rc;

	if (nblk * sh->len > b->bytes || sh->len != b->len)
		return -EINVAL;
	for (size_t i = 0; i < nblk; i++)
		b->ptrs[i] = b->stripes + i * sh->len;
	rc = graid_parity_gen(ref, sh->ndata, 2, sh->len, sh->nstripes, b->ptrs);
	if (rc == 0 && sh->op == PC_OP_RECOVER) {
		pc_clobber(b, sh);
		rc = pc_call(b, sh, ref);
	}
	for (size_t s = 0; rc == 0 && s < sh->nstripes; s++)
		for (unsigned o = 0; o < 2; o++)
			memcpy(b->want + (s * 2 + o) * sh->len, pc_out_block(b, sh, s, o), sh->len);
	return rc;
}

static bool pc_identical(const struct pc_buffers *b, const struct pc_shape *sh)
{
	for (size_t s = 0; s < sh->nstripes; s++)
		for (unsigned o = 0; o < 2; o++)
			if (memcmp(b->want + (s * 2 + o) * sh->len, pc_out_block(b, sh, s, o),
				   sh->len))
				return false;
	return true;
}

static int pc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void pc_point_run(struct pc_buffers *b, const struct pc_shape *sh, struct graid_backend *be,
		  double min_time_s, unsigned min_calls, struct pc_result *res)
{
	static double lat[PC_MAX_SAMPLES];
	const double data = (double)sh->nstripes * sh->ndata * sh->len;
	double t_start, cpu_start, cpu;
	unsigned n = 0;

	memset(res, 0, sizeof(*res));
	/* The first call pays one-time costs (kernel builds, pinned pools): checked, not timed. */
	pc_unanswer(b, sh);
	res->rc = pc_call(b, sh, be);
	if (res->rc)
		return;
	res->identical = pc_identical(b, sh);
	t_start = pc_clock(CLOCK_MONOTONIC);
	cpu_start = pc_clock(CLOCK_PROCESS_CPUTIME_ID);
	while (n < min_calls || pc_clock(CLOCK_MONOTONIC) - t_start < min_time_s) {
		double t0 = pc_clock(CLOCK_MONOTONIC);

		res->rc = pc_call(b, sh, be);
		if (res->rc)
			return;
		if (n < PC_MAX_SAMPLES)
			lat[n] = pc_clock(CLOCK_MONOTONIC) - t0;
		n++;
	}
	cpu = pc_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
	res->calls = n;
	if (n > PC_MAX_SAMPLES)
		n = PC_MAX_SAMPLES;
	qsort(lat, n, sizeof(*lat), pc_cmp_double);
	res->latency_us = (n % 2 ? lat[n / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2) * 1e6;
	res->gbps = res->latency_us > 0 ? data / (res->latency_us * 1e-6) / 1e9 : 0;
	res->cpu_s_per_gb = cpu / (data * res->calls / 1e9);
}
