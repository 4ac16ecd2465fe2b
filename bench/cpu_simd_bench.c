/* SPDX-License-Identifier: MIT */
/* GB/s of libgraid's own CPU parity routines beside ISA-L's, per routine, one thread. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include <libgraid/graid_backend.h>

/* Internal: the bench drives the variants directly, as the engine does (static library). */
#include "../lib/backends/isal/cpu_variants.h"

#define BENCH_CHUNK (64u * 1024u)
/* DRAM runs cycle over this much memory: far more than the last-level cache. */
#define BENCH_DRAM_BYTES (512ull << 20)
#define BENCH_MAX_BLK (GRAID_GF_MAX_DATA + 2)
#define BENCH_ROUNDS 5

enum bench_routine {
	BR_GEN,
	BR_REC_DD,
	BR_REC_DP,
	BR_REC_DQ,
	BR_REC_D,
	BR_REC_PQ,
	BR_CHECK,
	BR_GEN_P,
	BR_COUNT
};

static const char *const bench_routine_name[BR_COUNT] = {
	[BR_GEN] = "gen P+Q",
	[BR_REC_DD] = "rec 2 data",
	[BR_REC_DP] = "rec data+P",
	[BR_REC_DQ] = "rec data+Q",
	[BR_REC_D] = "rec 1 data",
	[BR_REC_PQ] = "rec P+Q",
	[BR_CHECK] = "check",
	[BR_GEN_P] = "gen P only",
};

static const char *const bench_routine_key[BR_COUNT] = {
	[BR_GEN] = "gen", [BR_REC_DD] = "dd", [BR_REC_DP] = "dp", [BR_REC_DQ] = "dq",
	[BR_REC_D] = "d", [BR_REC_PQ] = "pq", [BR_CHECK] = "check", [BR_GEN_P] = "genp",
};

/* nstripes stripes of ndata+2 blocks of len bytes, block k of a stripe skewed by k*skew. */
struct bench_set {
	unsigned ndata, nblk;
	size_t len, nstripes;
	uint8_t *mem;
	uint8_t **ptr;
};

/* What one routine needs besides the stripes: the lost blocks and the prepared tables. */
struct bench_job {
	enum bench_routine r;
	const struct graid_cpu_variant *v; /* NULL: ISA-L */
	unsigned nlost, lost[2];
	struct graid_cpu_plan plan;
	unsigned surv[BENCH_MAX_BLK];
	unsigned char tbls[32 * GRAID_GF_MAX_DATA * 2];
};

/* --group N: plans with N sources per cache-blocking group instead of the variant's own. */
static int bench_group = -1;

static uint64_t bench_rng = 0x9e3779b97f4a7c15ull;

static uint64_t bench_rand(void)
{
	bench_rng ^= bench_rng >> 12;
	bench_rng ^= bench_rng << 25;
	bench_rng ^= bench_rng >> 27;
	return bench_rng * 0x2545f4914f6cdd1dull;
}

/*
 * The thread's CPU time, not wall time: on a shared machine a run that is descheduled
 * would otherwise look slow. (Cache and memory bandwidth are still shared.)
 */
static double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_set_alloc(struct bench_set *s, unsigned ndata, size_t len, size_t nstripes,
			   size_t skew)
{
	size_t stride = (ndata + 2) * len + (ndata + 2) * skew;

	s->ndata = ndata;
	s->nblk = ndata + 2;
	s->len = len;
	s->nstripes = nstripes;
	s->mem = aligned_alloc(4096, stride * nstripes + 4096);
	s->ptr = calloc(nstripes * s->nblk, sizeof(*s->ptr));
	if (!s->mem || !s->ptr)
		return -ENOMEM;
	for (size_t i = 0; i < stride * nstripes; i += 8) {
		uint64_t r = bench_rand();

		memcpy(s->mem + i, &r, 8);
	}
	for (size_t st = 0; st < nstripes; st++)
		for (unsigned k = 0; k < s->nblk; k++)
			s->ptr[st * s->nblk + k] = s->mem + st * stride + k * (len + skew);
	for (size_t st = 0; st < nstripes; st++)
		pq_gen((int)s->nblk, (int)len, (void **)(s->ptr + st * s->nblk));
	return 0;
}

static void bench_set_free(struct bench_set *s)
{
	free(s->mem);
	free(s->ptr);
}

/* Row r of the RAID-6 generator matrix: identity for data, ones for P, g^k for Q. */
static unsigned char bench_gen_coef(unsigned ndata, unsigned r, unsigned k)
{
	if (r < ndata)
		return r == k;
	return r == ndata ? 1 : graid_gf_exp2(k);
}

/* ISA-L's general recovery, as the isal engine did it before: invert, then ec_encode_data. */
static int bench_isal_rec_tables(struct bench_job *j, unsigned ndata)
{
	const unsigned k = ndata;
	unsigned char *mat = malloc((size_t)k * k * 2 + 2u * k), *inv, *coef;
	unsigned nsurv = 0;

	if (!mat)
		return -ENOMEM;
	inv = mat + (size_t)k * k;
	coef = inv + (size_t)k * k;
	for (unsigned i = 0; i < ndata + 2 && nsurv < k; i++)
		if (!(j->nlost > 0 && j->lost[0] == i) && !(j->nlost > 1 && j->lost[1] == i))
			j->surv[nsurv++] = i;
	for (unsigned i = 0; i < k; i++)
		for (unsigned c = 0; c < k; c++)
			mat[i * k + c] = bench_gen_coef(k, j->surv[i], c);
	if (gf_invert_matrix(mat, inv, (int)k)) {
		free(mat);
		return -EIO;
	}
	for (unsigned l = 0; l < j->nlost; l++)
		for (unsigned c = 0; c < k; c++) {
			unsigned char v = 0;

			for (unsigned i = 0; i < k; i++)
				v ^= graid_gf_mul(bench_gen_coef(k, j->lost[l], i), inv[i * k + c]);
			coef[l * k + c] = v;
		}
	ec_init_tables((int)k, (int)j->nlost, coef, j->tbls);
	free(mat);
	return 0;
}

static int bench_job_init(struct bench_job *j, enum bench_routine r,
			  const struct graid_cpu_variant *v, unsigned ndata)
{
	const unsigned pidx = ndata, qidx = ndata + 1;

	memset(j, 0, sizeof(*j));
	j->r = r;
	j->v = v;
	switch (r) {
	case BR_REC_DD:
		j->nlost = 2, j->lost[0] = 1, j->lost[1] = ndata - 2;
		break;
	case BR_REC_DP:
		j->nlost = 2, j->lost[0] = 3, j->lost[1] = pidx;
		break;
	case BR_REC_DQ:
		j->nlost = 2, j->lost[0] = 3, j->lost[1] = qidx;
		break;
	case BR_REC_D:
		j->nlost = 1, j->lost[0] = 3;
		break;
	case BR_REC_PQ:
		j->nlost = 2, j->lost[0] = pidx, j->lost[1] = qidx;
		break;
	default:
		break;
	}
	if (v) {
		const unsigned gs = bench_group >= 0 ? (unsigned)bench_group : v->group_size;

		if (r == BR_GEN || r == BR_GEN_P)
			graid__cpu_plan_gen(&j->plan, ndata, r == BR_GEN ? 2 : 1, gs);
		else if (r == BR_CHECK)
			graid__cpu_plan_check(&j->plan, ndata, 2, gs);
		else
			graid__cpu_plan_recover(&j->plan, ndata, 2, j->nlost, j->lost, gs);
		return 0;
	}
	if (r != BR_GEN && r != BR_CHECK && r != BR_GEN_P)
		return bench_isal_rec_tables(j, ndata);
	return 0;
}

/* One stripe through the job; returns false when a routine reports an error or a mismatch. */
static bool bench_job_stripe(const struct bench_job *j, const struct bench_set *s,
			     uint8_t *const *blk)
{
	unsigned char *src[BENCH_MAX_BLK], *dst[2];

	if (j->v)
		return j->v->run(&j->plan, blk, s->len);
	if (j->r == BR_GEN)
		return pq_gen((int)s->nblk, (int)s->len, (void **)blk) == 0;
	if (j->r == BR_CHECK)
		return pq_check((int)s->nblk, (int)s->len, (void **)blk) == 0;
	if (j->r == BR_GEN_P) /* RAID-5: the data and P of the stripe */
		return xor_gen((int)s->nblk - 1, (int)s->len, (void **)blk) == 0;
	for (unsigned i = 0; i < s->ndata; i++)
		src[i] = blk[j->surv[i]];
	for (unsigned l = 0; l < j->nlost; l++)
		dst[l] = blk[j->lost[l]];
	ec_encode_data((int)s->len, (int)s->ndata, (int)j->nlost, (unsigned char *)j->tbls, src,
		       dst);
	return true;
}

/* GB/s of data (ndata * len per stripe) of one run of at least 0.1 s. */
static double bench_time(const struct bench_job *j, const struct bench_set *s, bool *ok)
{
	double t0 = bench_now(), t;
	size_t bytes = 0;

	do {
		for (size_t st = 0; st < s->nstripes; st++)
			*ok &= bench_job_stripe(j, s, s->ptr + st * s->nblk);
		bytes += s->nstripes * s->ndata * s->len;
		t = bench_now() - t0;
	} while (t < 0.1);
	return (double)bytes / t / 1e9;
}

/* Kept out of line so that callgrind can count exactly the routine's instructions. */
__attribute__((noinline)) bool bench_counted(const struct bench_job *j,
					     const struct bench_set *s);
__attribute__((noinline)) bool bench_counted(const struct bench_job *j,
					     const struct bench_set *s)
{
	return bench_job_stripe(j, s, s->ptr);
}

static const struct graid_cpu_variant *bench_variant(const char *name)
{
	if (!strcmp(name, "isal"))
		return NULL;
	return graid__cpu_variant_find(name);
}

/* --count ROUTINE IMPL NDATA: one call on one 64 KiB stripe, for callgrind. */
static int bench_count(const char *rkey, const char *impl, unsigned ndata)
{
	struct bench_set s;
	struct bench_job *j = malloc(sizeof(*j));
	int r;

	for (r = 0; r < BR_COUNT; r++)
		if (!strcmp(rkey, bench_routine_key[r]))
			break;
	if (r == BR_COUNT || !j || (strcmp(impl, "isal") && !bench_variant(impl)) ||
	    bench_set_alloc(&s, ndata, BENCH_CHUNK, 1, 0) ||
	    bench_job_init(j, (enum bench_routine)r, bench_variant(impl), ndata)) {
		fprintf(stderr, "cpu_simd_bench: bad --count arguments\n");
		return 2;
	}
	bench_job_stripe(j, &s, s.ptr); /* warm: first-touch and lazy binding out of the count */
	printf("%s %s %u+2: %s\n", rkey, impl, ndata, bench_counted(j, &s) ? "ok" : "FAILED");
	bench_set_free(&s);
	free(j);
	return 0;
}

static void bench_shape(unsigned ndata, bool dram, size_t skew)
{
	const size_t per_stripe = (ndata + 2) * (size_t)BENCH_CHUNK;
	const size_t nstripes = dram ? (size_t)(BENCH_DRAM_BYTES / per_stripe) : 1;
	const struct graid_cpu_variant *c = graid__cpu_variant_find("c");
	const struct graid_cpu_variant *a = graid__cpu_variant_find("avx2");
	struct bench_job *j = malloc(sizeof(*j));
	struct bench_set s;
	double engine_gen = 1;
	char vs_gen[16];

	if (!j || bench_set_alloc(&s, ndata, BENCH_CHUNK, nstripes, skew)) {
		fprintf(stderr, "cpu_simd_bench: out of memory\n");
		exit(1);
	}
	for (int r = 0; r < BR_COUNT; r++) {
		const struct graid_cpu_variant *impl[3] = { NULL, a, c };
		double g[3] = { 0, 0, 0 };
		double g_isal, g_avx2, g_c;
		bool ok = true;

		/*
		 * The three take turns, five rounds, and each keeps its best: on a shared machine
		 * all of them then see the same neighbours, and a quiet moment counts for each.
		 */
		for (int round = 0; round < BENCH_ROUNDS; round++)
			for (int m = 0; m < 3; m++) {
				double v;

				if (m && !impl[m])
					continue;
				bench_job_init(j, (enum bench_routine)r, impl[m], ndata);
				v = bench_time(j, &s, &ok);
				if (v > g[m])
					g[m] = v;
			}
		g_isal = g[0];
		g_avx2 = g[1];
		g_c = g[2];
		/* Every routine leaves the stripes consistent; ISA-L confirms it. */
		for (size_t st = 0; st < s.nstripes; st++)
			ok &= pq_check((int)s.nblk, (int)s.len, (void **)(s.ptr + st * s.nblk)) == 0;
		/* The engine's own gen: ISA-L's, or the variant's from gen_pq_from blocks on. */
		if (r == BR_GEN)
			engine_gen = a && a->gen_pq_from && ndata >= a->gen_pq_from ? g_avx2
										    : g_isal;
		if (r == BR_GEN || r == BR_GEN_P)
			snprintf(vs_gen, sizeof(vs_gen), "%8s", "-");
		else
			snprintf(vs_gen, sizeof(vs_gen), "%7.2fx", g_avx2 / engine_gen);
		printf("| %2u+2 | %-5s | %-11s | %6.1f | %6.1f | %6.1f | %9.2fx | %s |%s\n", ndata,
		       dram ? "DRAM" : "cache", bench_routine_name[r], g_isal, g_avx2, g_c,
		       g_isal > 0 ? g_avx2 / g_isal : 0, vs_gen, ok ? "" : " MISMATCH");
		fflush(stdout);
	}
	bench_set_free(&s);
	free(j);
}

int main(int argc, char **argv)
{
	unsigned shapes[8] = { 8, 22 }, nshapes = 0;
	bool cache = true, dram = true;
	size_t skew = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 3 < argc)
			return bench_count(argv[i + 1], argv[i + 2], (unsigned)atoi(argv[i + 3]));
		if (!strcmp(argv[i], "--skew") && i + 1 < argc) {
			skew = (size_t)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--ndata") && i + 1 < argc && nshapes < 8) {
			shapes[nshapes++] = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
			bench_group = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--cache")) {
			dram = false;
		} else if (!strcmp(argv[i], "--dram")) {
			cache = false;
		} else {
			fprintf(stderr,
				"usage: cpu_simd_bench [--cache|--dram] [--ndata N]... [--skew BYTES]"
				" [--group N]\n"
				"       cpu_simd_bench --count gen|genp|dd|dp|dq|d|pq|check "
				"isal|avx2|c NDATA\n");
			return 2;
		}
	}
	if (skew % 32) {
		fprintf(stderr, "cpu_simd_bench: --skew must be a multiple of 32 (ISA-L)\n");
		return 2;
	}
	for (unsigned i = 0; i < (nshapes ? nshapes : 2); i++)
		if (shapes[i] < 4 || shapes[i] > GRAID_GF_MAX_DATA) {
			fprintf(stderr, "cpu_simd_bench: --ndata must be 4..255\n");
			return 2;
		}
	printf("64 KiB blocks, block k of a stripe offset by %zu bytes; GB/s of data (thread CPU "
	       "time), one thread, best of 5 rounds.\n"
	       "ISA-L: pq_gen, ec_encode_data (every recovery), pq_check, xor_gen.\n"
	       "avx2/gen: against the engine's P+Q generation of the same shape (ISA-L's pq_gen,\n"
	       "or avx2 from gen_pq_from data blocks on).\n\n",
	       skew);
	printf("| shape | mem   | routine     | ISA-L  | avx2   | c      | avx2/ISA-L | avx2/gen |\n");
	printf("|-------|-------|-------------|--------|--------|--------|------------|----------|\n");
	for (int m = 0; m < 2; m++)
		for (unsigned i = 0; i < (nshapes ? nshapes : 2); i++)
			if (m ? dram : cache)
				bench_shape(shapes[i], m == 1, skew);
	return 0;
}
