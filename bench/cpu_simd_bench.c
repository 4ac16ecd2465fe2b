/* SPDX-License-Identifier: MIT */
/* GB/s of libgraid's own CPU parity routines beside ISA-L's: per routine, width and thread. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include <libgraid/graid.h>
#include <libgraid/graid_backend.h>

/* Internal: the bench drives the variants directly, as the engine does (static library). */
#include "../lib/backends/isal/cpu_measure.h"
#include "../lib/backends/isal/cpu_pool.h"
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
	struct graid_backend *be; /* --count ... engine: through the public API instead */
};

/*
 * The batch hints of the row being run: GRAID_BATCH_F_STREAM for rows from DRAM (their
 * stripes stand for a rebuild's or a resync's, which come from and go to the drives), so
 * the engine and the own routine write by streaming stores there; --no-stream: never.
 */
static uint32_t bench_flags;
static bool bench_no_stream;

static void bench_set_flags(bool dram)
{
	bench_flags = dram && !bench_no_stream ? GRAID_BATCH_F_STREAM : 0;
}

/* --group N: plans with N sources per cache-blocking group instead of the variant's own. */
static int bench_group = -1;
/* --block BYTES: the plans' cache-blocking sub-range (0: the variant's own; at most it). */
static unsigned bench_block;
/*
 * --sse: what a CPU without AVX2 would run. ISA-L's SSE entry points stand for ISA-L (its
 * dispatcher picks them there) and the own column is the ssse3 variant instead of avx2.
 */
static bool bench_sse;

/* --rounds N: alternating rounds of which each figure keeps its best (default BENCH_ROUNDS). */
static int bench_rounds = BENCH_ROUNDS;

/* --own NAME: the own variant the tables compare with ISA-L. */
static const char *bench_own;

/* That variant: by default the one the engine measured fastest at two-block recovery. */
static const char *bench_own_name(void)
{
	if (bench_own)
		return bench_own;
	return bench_sse ? "ssse3" : graid__cpu_choice(NULL)->own[GRAID_CPU_C_REC2]->name;
}

/* ISA-L as the CPU in question would run it. */
static int bench_isal_pq_gen(int n, int len, void **blk)
{
	return bench_sse ? pq_gen_sse(n, len, blk) : pq_gen(n, len, blk);
}

static int bench_isal_pq_check(int n, int len, void **blk)
{
	return bench_sse ? pq_check_sse(n, len, blk) : pq_check(n, len, blk);
}

static int bench_isal_xor_gen(int n, int len, void **blk)
{
	return bench_sse ? xor_gen_sse(n, len, blk) : xor_gen(n, len, blk);
}

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
		j->plan.block = bench_block;
		j->plan.stream = (bench_flags & GRAID_BATCH_F_STREAM) != 0;
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

	if (j->be && j->r == BR_GEN)
		return graid_parity_gen_flags(j->be, s->ndata, 2, s->len, 1, blk, bench_flags) == 0;
	if (j->be && j->r == BR_CHECK)
		return graid_parity_check(j->be, s->ndata, 2, s->len, 1, blk, NULL) == 0;
	if (j->be)
		return graid_parity_recover_flags(j->be, s->ndata, 2, s->len, 1, blk, j->nlost,
						  j->lost, bench_flags) == 0;
	if (j->v)
		return j->v->run(&j->plan, blk, s->len);
	if (j->r == BR_GEN)
		return bench_isal_pq_gen((int)s->nblk, (int)s->len, (void **)blk) == 0;
	if (j->r == BR_CHECK)
		return bench_isal_pq_check((int)s->nblk, (int)s->len, (void **)blk) == 0;
	if (j->r == BR_GEN_P) /* RAID-5: the data and P of the stripe */
		return bench_isal_xor_gen((int)s->nblk - 1, (int)s->len, (void **)blk) == 0;
	for (unsigned i = 0; i < s->ndata; i++)
		src[i] = blk[j->surv[i]];
	for (unsigned l = 0; l < j->nlost; l++)
		dst[l] = blk[j->lost[l]];
	if (bench_sse)
		ec_encode_data_sse((int)s->len, (int)s->ndata, (int)j->nlost,
				   (unsigned char *)j->tbls, src, dst);
	else
		ec_encode_data((int)s->len, (int)s->ndata, (int)j->nlost,
			       (unsigned char *)j->tbls, src, dst);
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
	const bool engine = !strcmp(impl, "engine");
	struct bench_set s;
	struct bench_job *j = calloc(1, sizeof(*j));
	int r;

	if (!strcmp(impl, "isal-sse")) {
		bench_sse = true;
		impl = "isal";
	}

	for (r = 0; r < BR_COUNT; r++)
		if (!strcmp(rkey, bench_routine_key[r]))
			break;
	if (r == BR_COUNT || !j || (strcmp(impl, "isal") && !engine && !bench_variant(impl)) ||
	    (engine && r == BR_GEN_P) || bench_set_alloc(&s, ndata, BENCH_CHUNK, 1, 0) ||
	    bench_job_init(j, (enum bench_routine)r, engine ? NULL : bench_variant(impl), ndata)) {
		fprintf(stderr, "cpu_simd_bench: bad --count arguments\n");
		return 2;
	}
	/* The engine as configured by GRAID_CPU_THREADS and GRAID_CPU_THREAD_MIN. */
	if (engine && graid_backend_open("isal", &j->be)) {
		fprintf(stderr, "cpu_simd_bench: cannot open the isal engine\n");
		return 1;
	}
	bench_job_stripe(j, &s, s.ptr); /* warm: first-touch and lazy binding out of the count */
	printf("%s %s %u+2: %s\n", rkey, impl, ndata, bench_counted(j, &s) ? "ok" : "FAILED");
	graid_backend_close(j->be);
	bench_set_free(&s);
	free(j);
	return 0;
}

static double bench_read_rate(const struct bench_set *s);
static double bench_read_width(const struct bench_set *s, unsigned width);

/*
 * The plain read of the blocks a routine reads (check: data, P and Q; every other routine:
 * ndata blocks, survivors and parity alike), as GB/s of data: the ceiling for a routine that
 * reads those bytes once and writes nothing.
 */
static double bench_read_for(enum bench_routine r, const struct bench_set *s)
{
	struct bench_set all = *s;

	if (r != BR_CHECK)
		return bench_read_rate(s);
	/* Up to 8 data blocks, check streams them and P and Q at once; wider, in groups of 8. */
	all.ndata = s->nblk;
	return bench_read_width(&all, s->ndata <= 8 ? s->nblk : 8) * s->ndata / s->nblk;
}

static void bench_shape(unsigned ndata, bool dram, size_t skew)
{
	const size_t per_stripe = (ndata + 2) * (size_t)BENCH_CHUNK;
	const size_t nstripes = dram ? (size_t)(BENCH_DRAM_BYTES / per_stripe) : 1;
	const struct graid_cpu_variant *c = graid__cpu_variant_find("c");
	const struct graid_cpu_variant *a = graid__cpu_variant_find(bench_own_name());
	struct bench_job *j = malloc(sizeof(*j));
	struct bench_set s;
	double engine_gen = 1;
	char vs_gen[16];

	if (!j || bench_set_alloc(&s, ndata, BENCH_CHUNK, nstripes, skew)) {
		fprintf(stderr, "cpu_simd_bench: out of memory\n");
		exit(1);
	}
	bench_set_flags(dram);
	for (int r = 0; r < BR_COUNT; r++) {
		const struct graid_cpu_variant *impl[3] = { NULL, a, c };
		double g[4] = { 0, 0, 0, 0 };
		double g_isal, g_own, g_c, g_read;
		bool ok = true;

		/*
		 * The three take turns, five rounds, and each keeps its best: on a shared machine
		 * all of them then see the same neighbours, and a quiet moment counts for each.
		 */
		for (int round = 0; round < bench_rounds; round++)
			for (int m = 0; m < 4; m++) {
				double v;

				if (m == 3) {
					v = bench_read_for((enum bench_routine)r, &s);
					g[3] = v > g[3] ? v : g[3];
					continue;
				}
				if (m && !impl[m])
					continue;
				bench_job_init(j, (enum bench_routine)r, impl[m], ndata);
				v = bench_time(j, &s, &ok);
				if (v > g[m])
					g[m] = v;
			}
		g_isal = g[0];
		g_own = g[1];
		g_c = g[2];
		g_read = g[3];
		/* Every routine leaves the stripes consistent; ISA-L confirms it. */
		for (size_t st = 0; st < s.nstripes; st++)
			ok &= pq_check((int)s.nblk, (int)s.len, (void **)(s.ptr + st * s.nblk)) == 0;
		/*
		 * The engine's own gen: ISA-L's, or its variant's, as measured at its open; known
		 * here only when that is ISA-L or the --own variant timed above (else 0: "-").
		 */
		if (r == BR_GEN) {
			const struct graid_cpu_choice *ch = graid__cpu_choice(NULL);
			enum graid_cpu_class cls = ndata <= GRAID_CPU_NARROW_MAX
							   ? GRAID_CPU_C_GEN_NARROW
							   : GRAID_CPU_C_GEN_WIDE;

			/* Streaming narrow P+Q may go to pq_gen (the bench's blocks align). */
			const bool isal = ch->isal[cls] ||
					  (bench_flags && cls == GRAID_CPU_C_GEN_NARROW &&
					   graid__cpu_stream_to_isal(ch));

			engine_gen = isal ? g_isal : ch->own[cls] == a ? g_own : 0;
		}
		if (r == BR_GEN || r == BR_GEN_P || engine_gen <= 0)
			snprintf(vs_gen, sizeof(vs_gen), "%8s", "-");
		else
			snprintf(vs_gen, sizeof(vs_gen), "%7.2fx", g_own / engine_gen);
		printf("| %2u+2 | %-5s | %-11s | %6.1f | %6.1f | %6.1f | %6.1f | %9.2fx | %s | "
		       "%8.2fx |%s\n",
		       ndata, dram ? "DRAM" : "cache", bench_routine_name[r], g_isal, g_own, g_c,
		       g_read, g_isal > 0 ? g_own / g_isal : 0, vs_gen,
		       g_read > 0 ? g_own / g_read : 0, ok ? "" : " MISMATCH");
		fflush(stdout);
	}
	bench_set_free(&s);
	free(j);
}

/*
 * The plain read rate: every data byte of the stripes loaded once and folded into one
 * vector, nothing written. The ceiling for any routine that must read the data.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

__attribute__((target("avx2"))) static uint64_t bench_read_avx2(const struct bench_set *s,
								   unsigned width)
{
	/*
	 * Four accumulators in registers, the loads unrolled by hand: with an array, gcc -O2
	 * kept them on the stack, and the chain of stores and reloads capped the read at about
	 * 32 GB/s in cache, below the routines it is meant to bound.
	 */
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	uint64_t out[4];

	/* width blocks at a time, as the own routines stream them: one block alone is slower. */
	for (size_t st = 0; st < s->nstripes; st++)
		for (unsigned k0 = 0; k0 < s->ndata; k0 += width) {
			const unsigned k1 = k0 + width < s->ndata ? k0 + width : s->ndata;

			for (size_t i = 0; i + 128 <= s->len; i += 128)
				for (unsigned k = k0; k < k1; k++) {
					const __m256i *p = (const __m256i *)(const void *)(
						s->ptr[st * s->nblk + k] + i);

					a0 = _mm256_or_si256(a0, _mm256_loadu_si256(p));
					a1 = _mm256_or_si256(a1, _mm256_loadu_si256(p + 1));
					a2 = _mm256_or_si256(a2, _mm256_loadu_si256(p + 2));
					a3 = _mm256_or_si256(a3, _mm256_loadu_si256(p + 3));
				}
		}
	a0 = _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3));
	_mm256_storeu_si256((__m256i *)(void *)out, a0);
	return out[0] | out[1] | out[2] | out[3];
}
#endif

static uint64_t bench_read_sink;

/* GB/s of a plain read of the first ndata blocks of each stripe, width blocks at once. */
static double bench_read_width(const struct bench_set *s, unsigned width)
{
	double t0 = bench_now(), t;
	size_t bytes = 0;

	(void)width;
	do {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
		bench_read_sink ^= bench_read_avx2(s, width);
#endif
		bytes += s->nstripes * s->ndata * s->len;
		t = bench_now() - t0;
	} while (t < 0.1);
	return (double)bytes / t / 1e9;
}

/* Eight blocks at a time: the groups of the own routines. */
static double bench_read_rate(const struct bench_set *s)
{
	return bench_read_width(s, 8);
}

/* The isal engine through the public API, with GRAID_CPU_THREADS=nthreads. */
static struct graid_backend *bench_engine(unsigned nthreads, const char *thread_min)
{
	struct graid_backend *be;
	char n[16];

	snprintf(n, sizeof(n), "%u", nthreads);
	setenv("GRAID_CPU_THREADS", n, 1);
	if (thread_min)
		setenv("GRAID_CPU_THREAD_MIN", thread_min, 1);
	else
		unsetenv("GRAID_CPU_THREAD_MIN");
	if (graid_backend_open("isal", &be)) {
		fprintf(stderr, "cpu_simd_bench: cannot open the isal engine\n");
		exit(1);
	}
	return be;
}

/* GB/s of the engine's P+Q generation, one stripe per call (thread CPU time, one thread). */
static double bench_engine_gen(struct graid_backend *be, const struct bench_set *s, bool *ok)
{
	double t0 = bench_now(), t;
	size_t bytes = 0;

	do {
		for (size_t st = 0; st < s->nstripes; st++)
			*ok &= graid_parity_gen_flags(be, s->ndata, 2, s->len, 1,
						      s->ptr + st * s->nblk, bench_flags) == 0;
		bytes += s->nstripes * s->ndata * s->len;
		t = bench_now() - t0;
	} while (t < 0.1);
	return (double)bytes / t / 1e9;
}

/*
 * --sweep: P+Q generation of the engine (one thread) beside ISA-L's pq_gen called directly
 * and the plain read rate, at many widths, from cache and from DRAM.
 */
static void bench_sweep(const unsigned *shapes, unsigned nshapes, bool cache, bool dram,
			size_t skew)
{
	static const unsigned dflt[] = { 4, 6, 8, 10, 12, 16, 22, 32, 64 };
	struct graid_backend *be = bench_engine(1, NULL);
	struct bench_job *j = malloc(sizeof(*j));

	if (!nshapes) {
		shapes = dflt;
		nshapes = sizeof(dflt) / sizeof(dflt[0]);
	}
	printf("P+Q generation, 64 KiB blocks (+%zu bytes per block), one stripe per call, GB/s "
	       "of data\n(thread CPU time), one thread, best of %d alternating rounds.\n\n",
	       skew, bench_rounds);
	printf("read: every data byte loaded once, nothing written. %s: the own routine (plan as\n"
	       "given by --block/--group); one group: the same without cache blocking. engine:\n"
	       "graid_parity_gen on the isal engine, one thread, as this CPU runs it.%s\n%s\n",
	       bench_own_name(), bench_sse ? " pq_gen: ISA-L's pq_gen_sse." : "",
	       bench_no_stream ? "" : "DRAM rows: own and engine with GRAID_BATCH_F_STREAM "
				      "(streaming stores; --no-stream: without).\n");
	printf("| shape | mem   | read   | pq_gen | %-6s | 1 group | engine | engine/pq_gen | "
	       "engine/read |\n",
	       bench_own_name());
	printf("|-------|-------|--------|--------|--------|---------|--------|---------------|"
	       "-------------|\n");
	for (int m = 0; m < 2; m++)
		for (unsigned i = 0; i < nshapes; i++) {
			const unsigned ndata = shapes[i];
			const size_t per = (ndata + 2) * (size_t)BENCH_CHUNK;
			struct bench_set s;
			const struct graid_cpu_variant *a = graid__cpu_variant_find(bench_own_name());
			struct bench_job *jl = malloc(sizeof(*jl)), *jn = malloc(sizeof(*jn));
			double g[5] = { 0, 0, 0, 0, 0 };
			bool ok = true;

			if (!(m ? dram : cache) || !a || !jl || !jn) {
				free(jl);
				free(jn);
				continue;
			}
			if (!j || bench_set_alloc(&s, ndata, BENCH_CHUNK,
						  m ? (size_t)(BENCH_DRAM_BYTES / per) : 1, skew)) {
				fprintf(stderr, "cpu_simd_bench: out of memory\n");
				exit(1);
			}
			bench_set_flags(m == 1);
			bench_job_init(j, BR_GEN, NULL, ndata);
			bench_job_init(jl, BR_GEN, a, ndata);
			/* The same routine without blocking: what the blocking buys. */
			bench_job_init(jn, BR_GEN, a, ndata);
			graid__cpu_plan_gen(&jn->plan, ndata, 2, 0);
			jn->plan.stream = jl->plan.stream;
			for (int round = 0; round < bench_rounds; round++) {
				double v[5] = { bench_read_rate(&s), bench_time(j, &s, &ok),
						bench_time(jl, &s, &ok), bench_time(jn, &s, &ok),
						bench_engine_gen(be, &s, &ok) };

				for (int k = 0; k < 5; k++)
					g[k] = v[k] > g[k] ? v[k] : g[k];
			}
			free(jl);
			free(jn);
			for (size_t st = 0; st < s.nstripes; st++)
				ok &= pq_check((int)s.nblk, (int)s.len,
					       (void **)(s.ptr + st * s.nblk)) == 0;
			printf("| %3u+2 | %-5s | %6.1f | %6.1f | %6.1f | %7.1f | %6.1f | %12.2fx | "
			       "%10.2fx |%s\n",
			       ndata, m ? "DRAM" : "cache", g[0], g[1], g[2], g[3], g[4], g[4] / g[1],
			       g[4] / g[0], ok ? "" : " MISMATCH");
			fflush(stdout);
			bench_set_free(&s);
		}
	free(j);
	graid_backend_close(be);
}

/* Wall-clock seconds: threads are measured by the time the caller waits. */
static double bench_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* GB/s of data of one routine through the engine, batches of `batch` stripes (wall time). */
static double bench_engine_rate(struct graid_backend *be, enum bench_routine r,
				const struct bench_set *s, size_t batch, bool *ok)
{
	const unsigned lost[2] = { 1, s->ndata - 2 };
	double t0 = bench_wall(), t;
	size_t bytes = 0;

	do {
		for (size_t st = 0; st + batch <= s->nstripes; st += batch) {
			uint8_t **b = s->ptr + st * s->nblk;

			if (r == BR_GEN)
				*ok &= graid_parity_gen_flags(be, s->ndata, 2, s->len, batch, b,
							      bench_flags) == 0;
			else if (r == BR_REC_DD)
				*ok &= graid_parity_recover_flags(be, s->ndata, 2, s->len, batch, b,
								  2, lost, bench_flags) == 0;
			else
				*ok &= graid_parity_check(be, s->ndata, 2, s->len, batch, b, NULL) ==
				       0;
			bytes += batch * s->ndata * s->len;
		}
		t = bench_wall() - t0;
	} while (t < 0.3);
	return (double)bytes / t / 1e9;
}

/*
 * --threads N: the engine with one thread and with N, on DRAM-sized batches: many stripes
 * per call, and one huge stripe per call (split by byte ranges).
 */
/* The plain read of --threads: each piece reads a run of stripes (the engine's split). */
struct bench_read_job {
	const struct bench_set *s;
	size_t first, count, per_piece;
};

static int bench_read_piece(void *arg, size_t i)
{
	const struct bench_read_job *r = arg;
	struct bench_set part = *r->s;
	size_t st = r->first + i * r->per_piece;

	part.ptr = r->s->ptr + st * r->s->nblk;
	part.nstripes = r->first + r->count - st < r->per_piece ? r->first + r->count - st
								 : r->per_piece;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__atomic_fetch_xor(&bench_read_sink, bench_read_avx2(&part, 8), __ATOMIC_RELAXED);
#endif
	return 0;
}

/* GB/s of a plain read of the batches on a pool of nthreads (the memory's own ceiling). */
static double bench_read_threads(struct graid_cpu_pool *pool, const struct bench_set *s,
				 size_t batch)
{
	const size_t pieces = 4 * graid__cpu_pool_threads(pool);
	double t0 = bench_wall(), t;
	size_t bytes = 0;

	do {
		for (size_t st = 0; st + batch <= s->nstripes; st += batch) {
			struct bench_read_job r = { .s = s, .first = st, .count = batch };

			r.per_piece = (batch + pieces - 1) / pieces;
			graid__cpu_pool_run(pool, (batch + r.per_piece - 1) / r.per_piece,
					    bench_read_piece, &r);
			bytes += batch * s->ndata * s->len;
		}
		t = bench_wall() - t0;
	} while (t < 0.3);
	return (double)bytes / t / 1e9;
}

/*
 * ISA-L called directly on a pool, split as the engine splits: each piece a run of stripes
 * of the batch, or, for a batch of one stripe, a byte range of it. What a caller who runs
 * ISA-L on every core gets, beside the engine on as many threads.
 */
struct bench_isal_job {
	const struct bench_job *j;
	const struct bench_set *s;
	size_t first, count, per_piece; /* stripes of the batch, and per piece */
	size_t range;                   /* a batch of one stripe: bytes per piece; else 0 */
	bool failed;
};

static int bench_isal_piece(void *arg, size_t i)
{
	struct bench_isal_job *r = arg;
	const struct bench_set *s = r->s;
	bool ok = true;

	if (r->range) {
		struct bench_set part = *s;
		uint8_t *blk[BENCH_MAX_BLK];
		const size_t off = i * r->range;

		part.len = s->len - off < r->range ? s->len - off : r->range;
		for (unsigned k = 0; k < s->nblk; k++)
			blk[k] = s->ptr[r->first * s->nblk + k] + off;
		ok = bench_job_stripe(r->j, &part, blk);
	} else {
		const size_t st0 = r->first + i * r->per_piece;
		const size_t end = st0 + r->per_piece < r->first + r->count ? st0 + r->per_piece
									   : r->first + r->count;

		for (size_t st = st0; st < end; st++)
			ok &= bench_job_stripe(r->j, s, s->ptr + st * s->nblk);
	}
	if (!ok)
		__atomic_store_n(&r->failed, true, __ATOMIC_RELAXED);
	return 0;
}

/* GB/s of data of ISA-L's routine for r on a pool, batches of `batch` stripes (wall time). */
static double bench_isal_threads(struct graid_cpu_pool *pool, enum bench_routine r,
				 const struct bench_set *s, size_t batch, bool *ok)
{
	const size_t pieces = 4 * graid__cpu_pool_threads(pool);
	struct bench_job *j = malloc(sizeof(*j));
	double t0, t;
	size_t bytes = 0;

	if (!j || bench_job_init(j, r, NULL, s->ndata)) {
		fprintf(stderr, "cpu_simd_bench: cannot prepare ISA-L's %s\n", bench_routine_name[r]);
		exit(1);
	}
	t0 = bench_wall();
	do {
		for (size_t st = 0; st + batch <= s->nstripes; st += batch) {
			struct bench_isal_job q = { .j = j, .s = s, .first = st, .count = batch };
			size_t n;

			if (batch == 1) {
				/* 64-byte ranges: ISA-L's routines take any multiple of 32. */
				q.range = ((s->len + pieces - 1) / pieces + 63) & ~(size_t)63;
				n = (s->len + q.range - 1) / q.range;
			} else {
				q.per_piece = (batch + pieces - 1) / pieces;
				n = (batch + q.per_piece - 1) / q.per_piece;
			}
			graid__cpu_pool_run(pool, n, bench_isal_piece, &q);
			*ok &= !q.failed;
			bytes += batch * s->ndata * s->len;
		}
		t = bench_wall() - t0;
	} while (t < 0.3);
	free(j);
	return (double)bytes / t / 1e9;
}

/*
 * --threads N: the engine with one thread and with N: batches from DRAM (many stripes per
 * call; one huge stripe per call, split by byte ranges) and batches that stay in the
 * last-level cache; beside a plain read of the same batches on 1 and N threads.
 */
static void bench_threads(unsigned nthreads, const unsigned *shapes, unsigned nshapes,
			  size_t batch_bytes)
{
	static const unsigned dflt[] = { 8, 22 };
	static const enum bench_routine rs[] = { BR_COUNT, BR_GEN, BR_REC_DD, BR_CHECK };
	static const char *const kind_name[] = { "DRAM", "DRAM", "cache" };
	struct graid_backend *be[2] = { bench_engine(1, NULL), bench_engine(nthreads, NULL) };
	struct graid_cpu_pool *pool[2] = { NULL, NULL };

	graid__cpu_pool_create(&pool[1], nthreads, NULL);
	if (!nshapes) {
		shapes = dflt;
		nshapes = 2;
	}
	printf("The isal engine through graid_parity_*: GB/s of data by wall-clock time, best of "
	       "%d alternating rounds;\nbatches of %zu KiB of data: DRAM cycles over 512 MiB, "
	       "cache over one batch.\n\"read\": every data byte loaded once, nothing written, "
	       "split as the engine splits.\n\"ISA-L\": pq_gen, ec_encode_data (after inverting "
	       "the survivors' matrix), pq_check called\ndirectly on %u threads, split as the "
	       "engine splits; \"vs ISA-L\": the engine on %u threads over it.\n%s\n",
	       bench_rounds, batch_bytes >> 10, nthreads, nthreads,
	       bench_no_stream ? "" : "DRAM rows: calls hinted GRAID_BATCH_F_STREAM (--no-stream: "
				      "not).\n");
	printf("| shape | mem   | batch               | routine     | 1 thread | %2u threads | "
	       "ratio | ISA-L %2u thr | vs ISA-L |\n",
	       nthreads, nthreads);
	printf("|-------|-------|---------------------|-------------|----------|------------|"
	       "-------|--------------|----------|\n");
	for (unsigned i = 0; i < nshapes; i++)
		for (int kind = 0; kind < 3; kind++) {
			const unsigned ndata = shapes[i];
			const bool big = kind == 1;
			/* 64 KiB chunks, batch_bytes of data per call; or one stripe of that much. */
			const size_t len = big ? batch_bytes / ndata : BENCH_CHUNK;
			const size_t batch =
				big ? 1 : (batch_bytes + ndata * (size_t)BENCH_CHUNK - 1) /
						  (ndata * (size_t)BENCH_CHUNK);
			const size_t per = (ndata + 2) * len;
			size_t nstripes = kind == 2 ? batch : BENCH_DRAM_BYTES / per;
			struct bench_set s;
			char what[32];

			if (nstripes < batch * (kind == 2 ? 1 : 2))
				nstripes = batch * 2;
			if (bench_set_alloc(&s, ndata, len, nstripes, 0)) {
				fprintf(stderr, "cpu_simd_bench: out of memory\n");
				exit(1);
			}
			snprintf(what, sizeof(what), "%zu x %zu KiB", batch, (len + 1023) >> 10);
			bench_set_flags(kind != 2);
			for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
				const bool read = rs[k] == BR_COUNT;
				double g[3] = { 0, 0, 0 };
				char isal[2][16] = { "-", "-" };
				bool ok = true;

				if (read && big)
					continue;
				/* 1 thread, N threads, and (not for the read) ISA-L on N. */
				for (int round = 0; round < bench_rounds; round++)
					for (int t = 0; t < (read ? 2 : 3); t++) {
						double v = read ? bench_read_threads(pool[t], &s, batch)
							   : t == 2 ? bench_isal_threads(pool[1], rs[k], &s,
											batch, &ok)
								    : bench_engine_rate(be[t], rs[k], &s,
											batch, &ok);

						g[t] = v > g[t] ? v : g[t];
					}
				if (!read) {
					snprintf(isal[0], sizeof(isal[0]), "%.1f", g[2]);
					snprintf(isal[1], sizeof(isal[1]), "%.2fx", g[1] / g[2]);
				}
				printf("| %3u+2 | %-5s | %-19s | %-11s | %8.1f | %10.1f | %4.2fx | %12s | "
				       "%8s |%s\n",
				       ndata, kind_name[kind], what,
				       read ? "read" : bench_routine_name[rs[k]], g[0], g[1], g[1] / g[0],
				       isal[0], isal[1], ok ? "" : " FAILED");
				fflush(stdout);
			}
			bench_set_free(&s);
		}
	graid__cpu_pool_destroy(pool[1]);
	graid_backend_close(be[0]);
	graid_backend_close(be[1]);
}

/*
 * --split-cost N: what splitting costs and gains by call size. The engine with N threads
 * and every batch split (GRAID_CPU_THREAD_MIN=1) against one thread, on two-block recovery
 * of 8+2 batches that stay in cache, 32 KiB to 16 MiB of data a call (wall-clock time).
 */
static void bench_split_cost(unsigned nthreads)
{
	const unsigned ndata = 8, lost[2] = { 1, 6 };
	struct graid_backend *be[2] = { bench_engine(1, "1"), bench_engine(nthreads, "1") };

	printf("Two-block recovery of 8+2 through the engine, the same batch again and again (in "
	       "cache),\nevery batch split over the threads; GB/s of data by wall-clock time, best "
	       "of 7 rounds.\n\n");
	printf("| data per call | stripes x block | 1 thread | %2u threads | ratio |\n", nthreads);
	printf("|---------------|-----------------|----------|------------|-------|\n");
	for (size_t kib = 32; kib <= 16384; kib *= 2) {
		const size_t len = kib * 1024 / ndata < BENCH_CHUNK ? kib * 1024 / ndata : BENCH_CHUNK;
		struct bench_set s;
		double g[2] = { 0, 0 };
		bool ok = true;

		if (bench_set_alloc(&s, ndata, len, kib * 1024 / (ndata * len), 0)) {
			fprintf(stderr, "cpu_simd_bench: out of memory\n");
			exit(1);
		}
		for (int round = 0; round < 7; round++)
			for (int t = 0; t < 2; t++) {
				const size_t reps = (64u << 20) / (kib * 1024);
				double t0 = bench_wall(), v;

				for (size_t r = 0; r < reps; r++)
					ok &= graid_parity_recover(be[t], ndata, 2, len, s.nstripes, s.ptr,
								   2, lost) == 0;
				v = (double)reps * (double)(kib * 1024) / (bench_wall() - t0) / 1e9;
				g[t] = v > g[t] ? v : g[t];
			}
		printf("| %9zu KiB | %6zu x %3zu KiB | %8.1f | %10.1f | %4.2fx |%s\n", kib,
		       s.nstripes, len >> 10, g[0], g[1], g[1] / g[0], ok ? "" : " FAILED");
		fflush(stdout);
		bench_set_free(&s);
	}
	graid_backend_close(be[0]);
	graid_backend_close(be[1]);
}

int main(int argc, char **argv)
{
	unsigned shapes[16] = { 8, 22 }, nshapes = 0, nthreads = 0;
	size_t batch_kib = 16384;
	unsigned split_cost = 0;
	bool cache = true, dram = true, sweep = false;
	size_t skew = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 3 < argc)
			return bench_count(argv[i + 1], argv[i + 2], (unsigned)atoi(argv[i + 3]));
		if (!strcmp(argv[i], "--skew") && i + 1 < argc) {
			skew = (size_t)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--ndata") && i + 1 < argc && nshapes < 16) {
			shapes[nshapes++] = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
			bench_group = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--block") && i + 1 < argc) {
			bench_block = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nthreads = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
			batch_kib = (size_t)atol(argv[++i]);
		} else if (!strcmp(argv[i], "--split-cost") && i + 1 < argc) {
			split_cost = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			bench_rounds = atoi(argv[++i]);
			if (bench_rounds < 1 || bench_rounds > 100) {
				fprintf(stderr, "cpu_simd_bench: --rounds must be 1..100\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--no-stream")) {
			bench_no_stream = true;
		} else if (!strcmp(argv[i], "--own") && i + 1 < argc) {
			bench_own = argv[++i];
			if (!graid__cpu_variant_find(bench_own)) {
				fprintf(stderr, "cpu_simd_bench: --own %s: no such variant here\n",
					bench_own);
				return 2;
			}
		} else if (!strcmp(argv[i], "--sweep")) {
			sweep = true;
		} else if (!strcmp(argv[i], "--sse")) {
			bench_sse = true;
			/* The engine columns too, unless the caller forces a variant himself. */
			setenv("GRAID_CPU_VARIANT", "ssse3", 0);
		} else if (!strcmp(argv[i], "--cache")) {
			dram = false;
		} else if (!strcmp(argv[i], "--dram")) {
			cache = false;
		} else {
			fprintf(stderr,
				"usage: cpu_simd_bench [--cache|--dram] [--ndata N]... [--skew BYTES]"
				" [--group N]\n"
				"                      [--block BYTES] [--sse] [--own VARIANT] "
				"[--no-stream] [--rounds N]\n"
				"       cpu_simd_bench --sweep [--cache|--dram] [--ndata N]... "
				"[--skew BYTES] [--sse] [--no-stream]\n"
				"       cpu_simd_bench --threads N [--ndata N]... [--batch KiB] "
				"[--no-stream] [--rounds N]\n"
				"       cpu_simd_bench --split-cost N\n"
				"       cpu_simd_bench --count gen|genp|dd|dp|dq|d|pq|check "
				"isal|isal-sse|avx2|ssse3|c|engine NDATA\n");
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
	if (split_cost) {
		bench_split_cost(split_cost);
		return 0;
	}
	if (sweep) {
		bench_sweep(shapes, nshapes, cache, dram, skew);
		return 0;
	}
	if (nthreads) {
		if (batch_kib < 64) {
			fprintf(stderr, "cpu_simd_bench: --batch must be at least 64 (KiB)\n");
			return 2;
		}
		bench_threads(nthreads, shapes, nshapes, batch_kib << 10);
		return 0;
	}
	printf("64 KiB blocks, block k of a stripe offset by %zu bytes; GB/s of data (thread CPU "
	       "time), best of %d rounds.\nThreads: 1 for every column (ISA-L, own, c, read).\n"
	       "ISA-L: pq_gen, ec_encode_data (every recovery), pq_check, xor_gen%s.\n"
	       "%s/gen: against the engine's P+Q generation of the same shape (ISA-L's pq_gen,\n"
	       "or %s, as the engine measured at its open). read: a plain read of the blocks the\n"
	       "routine reads (check: data, P and Q; the others: ndata blocks), nothing written,\n"
	       "in GB/s of data: the memory's ceiling for that routine.\n%s\n",
	       skew, bench_rounds, bench_sse ? ", each its _sse entry point" : "", bench_own_name(),
	       bench_own_name(),
	       bench_no_stream ? "Every routine of the own variants writes by plain stores (--no-stream).\n"
			       : "DRAM rows: the own variants write by streaming stores, as the engine "
				 "does for a batch\nhinted GRAID_BATCH_F_STREAM or larger than the "
				 "last-level cache (--no-stream: never).\n");
	printf("| shape | mem   | routine     | ISA-L  | %-6s | c      | read   | %s/ISA-L | "
	       "%s/gen | %s/read |\n",
	       bench_own_name(), bench_own_name(), bench_own_name(), bench_own_name());
	printf("|-------|-------|-------------|--------|--------|--------|--------|------------|"
	       "----------|-----------|\n");
	for (int m = 0; m < 2; m++)
		for (unsigned i = 0; i < (nshapes ? nshapes : 2); i++)
			if (m ? dram : cache)
				bench_shape(shapes[i], m == 1, skew);
	return 0;
}
