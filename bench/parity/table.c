/* SPDX-License-Identifier: MIT */
/* parity_bench table: GB/s of every engine beside ISA-L called directly and memcpy, on the same bytes. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "bench_team.h"
#include "bench_util.h"
#include "modes.h"
#include "table_work.h"

#define PB_MAX_ENGINES 16
#define PB_MAX_REPS 1000
#define PB_MIB ((size_t)1 << 20)

/* The target: the isal engine within 5% of ISA-L direct at P+Q 8+2 x 64 KiB. */
#define PB_TARGET_NDATA 8
#define PB_TARGET_LEN (64 * 1024)
#define PB_TARGET_RATIO 0.95

#define PB_MAX_LIST 8
static const enum pb_op pb_ops[] = { PB_OP_P, PB_OP_PQ, PB_OP_REC2 };
static const char *const pb_op_names[] = { "P", "P+Q", "rec2" };

struct pb_opts {
	bool quick;
	const char *engines; /* comma-separated, NULL for all */
	unsigned threads;    /* 0: 1 and then 2 */
	const char *csv;
	unsigned reps;
	size_t batch_bytes;  /* data bytes per call, and the cache-resident set */
	size_t dram_bytes;   /* data bytes of the DRAM-sized sets, all threads together */
	double target_s;     /* length of one timed sample */
	unsigned ndatas[PB_MAX_LIST]; /* data blocks per stripe, one layout each */
	unsigned nndata;
	size_t lens[PB_MAX_LIST];     /* block sizes */
	unsigned nlens;
};

struct pb_engine {
	char name[32];
	struct graid_backend *be;
};

/* One row of the table, kept for the target summary. */
struct pb_row {
	enum pb_op op;
	unsigned ndata;
	size_t len;
	bool dram;
	unsigned threads;
	char engine[32];
	double gbps, isal_gbps, ratio, cpu_ratio;
};

struct pb_run {
	struct pb_opts o;
	struct pb_engine eng[PB_MAX_ENGINES];
	unsigned neng;
	struct pb_set sets[PB_MAX_THREADS];
	unsigned thr[2], nthr;
	struct pb_row *rows;
	size_t nrows, rows_cap;
	FILE *csv;
	unsigned failures;
};

static void pb_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--quick] [--engines a,b] [--threads N] [--csv FILE] [--reps N]\n"
		"       [--layouts 4,8,22] [--blocks 4,64]\n"
		"  --quick       small sets, short samples, no 22-wide stripes (a CI smoke run)\n"
		"  --engines L   only these engines (default: every engine that opens)\n"
		"  --threads N   only N threads (default: 1, then 2)\n"
		"  --csv FILE    also write every row to FILE\n"
		"  --reps N      timed samples per figure, median reported (default 5)\n"
		"  --layouts L   data blocks per stripe, e.g. 8 or 4,8,22 (default 4,8,22)\n"
		"  --blocks L    block sizes in KiB, e.g. 64 or 4,64 (default 4,64)\n"
		"Exit status: 0, 1 if an engine's output differed from ISA-L's or it failed,\n"
		"2 on bad usage or setup failure. Never fails on time.\n",
		argv0);
}

/* "4,8,22": up to PB_MAX_LIST numbers in 1..max. */
static int pb_parse_list(const char *s, unsigned *out, unsigned *n, unsigned max)
{
	*n = 0;
	while (*s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 1 || v > max || *n == PB_MAX_LIST || (*end && *end != ','))
			return -EINVAL;
		out[(*n)++] = (unsigned)v;
		s = end + (*end == ',');
	}
	return *n ? 0 : -EINVAL;
}

static int pb_parse(int argc, char **argv, struct pb_opts *o)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "engines", required_argument, NULL, 'e' },
		{ "threads", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'c' },
		{ "reps", required_argument, NULL, 'r' },
		{ "layouts", required_argument, NULL, 'l' },
		{ "blocks", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct pb_opts){ .reps = 5 };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->quick = true;
			break;
		case 'e':
			o->engines = optarg;
			break;
		case 't':
			o->threads = (unsigned)strtoul(optarg, NULL, 10);
			if (o->threads < 1 || o->threads > PB_MAX_THREADS)
				return -EINVAL;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'r':
			o->reps = (unsigned)strtoul(optarg, NULL, 10);
			if (o->reps < 1 || o->reps > PB_MAX_REPS)
				return -EINVAL;
			break;
		case 'l':
			if (pb_parse_list(optarg, o->ndatas, &o->nndata, 64))
				return -EINVAL;
			break;
		case 'b': {
			unsigned kib[PB_MAX_LIST], n;

			if (pb_parse_list(optarg, kib, &n, 1024))
				return -EINVAL;
			for (unsigned i = 0; i < n; i++)
				o->lens[i] = (size_t)kib[i] << 10;
			o->nlens = n;
			break;
		}
		case 'h':
			pb_usage(stdout, argv[0]);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return -EINVAL;
	/* Cache-resident: ~1 MiB of data per thread fits the L2/L3 of any server core.
	 * DRAM-sized: 256 MiB of data, several times any LLC here; --quick keeps 64 MiB. */
	o->batch_bytes = PB_MIB;
	o->dram_bytes = (o->quick ? 64 : 256) * PB_MIB;
	o->target_s = o->quick ? 0.002 : 0.025;
	/* --quick leaves out 22-wide stripes, the slowest to run, but keeps the 8+2 target. */
	if (o->nndata == 0) {
		o->ndatas[0] = 4, o->ndatas[1] = 8, o->ndatas[2] = 22;
		o->nndata = o->quick ? 2 : 3;
	}
	if (o->nlens == 0) {
		o->lens[0] = 4096, o->lens[1] = 65536;
		o->nlens = 2;
	}
	return 0;
}

static bool pb_engine_wanted(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* Every engine the build knows, in its order; those that don't open are listed and skipped. */
static int pb_open_engines(struct pb_run *r)
{
	struct graid_backend_desc d[PB_MAX_ENGINES];
	int n;

	for (unsigned i = 0; i < PB_MAX_ENGINES; i++)
		d[i].struct_size = sizeof(d[i]);
	/*
	 * One compute thread per caller thread for every contender: the CPU engine's own pool
	 * would otherwise add workers that ISA-L direct does not get (unless asked for).
	 */
	setenv("GRAID_CPU_THREADS", "1", 0);
	printf("# threads: thr caller threads for the engine and for ISA-L alike; the CPU "
	       "engine's own pool: GRAID_CPU_THREADS=%s\n", getenv("GRAID_CPU_THREADS"));
	n = graid_backend_list(d, PB_MAX_ENGINES, 0);
	if (n < 0)
		return n;
	for (int i = 0; i < n && i < PB_MAX_ENGINES; i++) {
		struct pb_engine *e = &r->eng[r->neng];
		int rc = d[i].status;

		if (!pb_engine_wanted(r->o.engines, d[i].name))
			continue;
		if (rc == 0)
			rc = graid_backend_open(d[i].name, &e->be);
		if (rc) {
			printf("# engine %-7s skipped: %s\n", d[i].name, graid_strerror(rc));
			continue;
		}
		snprintf(e->name, sizeof(e->name), "%s", d[i].name);
		printf("# engine %-7s %s\n", e->name, d[i].device);
		r->neng++;
	}
	/* A name asked for that this build does not know is worth a line, not a failure. */
	for (const char *p = r->o.engines; p && *p;) {
		size_t l = strcspn(p, ",");
		bool known = false;

		for (int i = 0; i < n && i < PB_MAX_ENGINES; i++)
			known |= strlen(d[i].name) == l && !strncmp(p, d[i].name, l);
		if (!known && l)
			printf("# engine %.*s skipped: not known to this build\n", (int)l, p);
		p += l + (p[l] == ',');
	}
	return 0;
}

static struct pb_shape pb_shape_make(const struct pb_opts *o, enum pb_op op, unsigned ndata,
				     size_t len, bool dram, unsigned nthreads)
{
	struct pb_shape sh = {
		.op = op, .ndata = ndata, .nparity = op == PB_OP_P ? 1 : 2, .len = len,
	};
	size_t stripe = ndata * len, per_thread = o->dram_bytes / nthreads;

	/* About batch_bytes of data per call, rounded to whole stripes, at least one. */
	sh.spb = (o->batch_bytes + stripe / 2) / stripe;
	if (sh.spb == 0)
		sh.spb = 1;
	sh.nbatches = 1;
	if (dram)
		sh.nbatches = (per_thread + pb_batch_data_bytes(&sh) - 1) / pb_batch_data_bytes(&sh);
	return sh;
}

static void pb_fill_job(void *arg, unsigned tid)
{
	struct pb_run *r = arg;

	bench_fill_random(r->sets[tid].arena, r->sets[tid].arena_size, 0x9e3779b97f4a7c15ull + tid);
}

/* Each thread's arena is sized for the largest configuration it takes part in. */
static int pb_alloc_sets(struct pb_run *r)
{
	size_t need[PB_MAX_THREADS] = { 0 };
	unsigned maxthr = 0;

	for (unsigned ti = 0; ti < r->nthr; ti++) {
		maxthr = maxthr > r->thr[ti] ? maxthr : r->thr[ti];
		for (size_t oi = 0; oi < 3; oi++)
			for (size_t ni = 0; ni < r->o.nndata; ni++)
				for (size_t li = 0; li < r->o.nlens; li++) {
					struct pb_shape sh = pb_shape_make(&r->o, pb_ops[oi],
									   r->o.ndatas[ni], r->o.lens[li],
									   true, r->thr[ti]);
					size_t b = pb_set_bytes(&sh);

					for (unsigned t = 0; t < r->thr[ti]; t++)
						need[t] = need[t] > b ? need[t] : b;
				}
	}
	for (unsigned t = 0; t < maxthr; t++) {
		r->sets[t].arena = bench_alloc(64, need[t]);
		r->sets[t].arena_size = need[t];
		if (!r->sets[t].arena)
			return -ENOMEM;
	}
	/* Each thread fills, and so first-touches, its own arena. */
	return bench_team_run(maxthr, pb_fill_job, r) < 0 ? -EAGAIN : 0;
}

static int pb_keep_row(struct pb_run *r, const struct pb_row *row)
{
	if (r->nrows == r->rows_cap) {
		size_t cap = r->rows_cap ? 2 * r->rows_cap : 64;
		struct pb_row *p = realloc(r->rows, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->rows = p;
		r->rows_cap = cap;
	}
	r->rows[r->nrows++] = *row;
	return 0;
}

static void pb_print_table_head(void)
{
	printf("%-4s %-6s %-5s %-5s %3s %7s  %-7s %8s %8s %7s %7s %8s  %s\n", "op", "layout",
	       "block", "set", "thr", "stripes", "engine", "GB/s", "ISA-L", "ratio", "cpu-r",
	       "memcpy", "check");
}

/* "4K", "64K": block sizes are whole KiB. */
static const char *pb_len_name(size_t len, char *buf, size_t n)
{
	snprintf(buf, n, "%zuK", len >> 10);
	return buf;
}

/* The name in a buffer that lives to the end of the caller's block (a compound literal). */
#define PB_LEN_NAME(len) pb_len_name((len), (char[24]){ 0 }, 24)
/* A figure, or "-" where the measurement failed. */
static void pb_fmt_gbps(char *buf, size_t n, int rc, double gbps)
{
	if (rc)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.2f", gbps);
}

/* One engine's figures in one configuration, beside the yardsticks'. */
struct pb_figures {
	const char *engine;
	int rc, irc, mrc;      /* engine, ISA-L direct, memcpy: 0 or a negative errno */
	double gbps, igbps, mgbps;
	double ratio;          /* median over rounds of engine / ISA-L in the same round */
	double cpu_ratio;      /* the same, by process CPU time instead of the wall clock */
	const char *check;
};

static void pb_emit(struct pb_run *r, const struct pb_shape *sh, bool dram, unsigned nthreads,
		    const struct pb_figures *f)
{
	char g[32], ig[32], mg[32], ratio[32] = "-", cpu_ratio[32] = "-";
	struct pb_row row = {
		.op = sh->op, .ndata = sh->ndata, .len = sh->len, .dram = dram,
		.threads = nthreads, .gbps = f->rc ? -1 : f->gbps,
		.isal_gbps = f->irc ? -1 : f->igbps, .ratio = f->rc || f->irc ? -1 : f->ratio,
		.cpu_ratio = f->rc || f->irc ? -1 : f->cpu_ratio,
	};

	snprintf(row.engine, sizeof(row.engine), "%s", f->engine);
	pb_fmt_gbps(g, sizeof(g), f->rc, f->gbps);
	pb_fmt_gbps(ig, sizeof(ig), f->irc, f->igbps);
	pb_fmt_gbps(mg, sizeof(mg), f->mrc, f->mgbps);
	if (row.ratio >= 0) {
		snprintf(ratio, sizeof(ratio), "%.3f", row.ratio);
		snprintf(cpu_ratio, sizeof(cpu_ratio), "%.3f", row.cpu_ratio);
	}
	printf("%-4s %2u+%-3u %-5s %-5s %3u %7zu  %-7s %8s %8s %7s %7s %8s  %s\n",
	       pb_op_names[sh->op], sh->ndata, sh->nparity, PB_LEN_NAME(sh->len),
	       dram ? "dram" : "cache", nthreads, sh->spb, f->engine, g, ig, ratio, cpu_ratio, mg,
	       f->check);
	fflush(stdout);
	if (r->csv)
		fprintf(r->csv, "%s,%u+%u,%u,%u,%zu,%s,%u,%zu,%zu,%s,%s,%s,%s,%s,%s,%s\n",
			pb_op_names[sh->op], sh->ndata, sh->nparity, sh->ndata, sh->nparity,
			sh->len, dram ? "dram" : "cache", nthreads, sh->spb,
			sh->nbatches * pb_batch_data_bytes(sh) * nthreads, f->engine,
			f->rc ? "" : g, f->irc ? "" : ig, row.ratio >= 0 ? ratio : "",
			row.ratio >= 0 ? cpu_ratio : "", f->mrc ? "" : mg, f->check);
	pb_keep_row(r, &row);
}

/*
 * Engine / ISA-L, round by round, then the median: the two samples of a round are taken
 * back to back, so a neighbour's burst on a shared machine mostly hits both or neither.
 * ISA-L's sample of round i is isal[i * stride].
 */
static double pb_paired_ratio(const double *eng, const double *isal, unsigned stride,
			      unsigned reps)
{
	double v[PB_MAX_REPS];

	for (unsigned i = 0; i < reps; i++)
		v[i] = isal[i * stride] > 0 ? eng[i] / isal[i * stride] : 0;
	return bench_median(v, reps);
}

/* ISA-L direct, memcpy, or an engine, in one configuration. */
struct pb_contender {
	enum pb_impl impl;
	struct pb_engine *eng; /* NULL for the yardsticks */
	int rc;
	size_t iters;
	double *samples;       /* GB/s by the wall clock, one per sample */
	double *cpu_samples;   /* GB per second of process CPU time, one per sample */
	double gbps;
	double ratio;          /* engines: paired engine / ISA-L, see pb_paired_ratio() */
	double cpu_ratio;      /* the same by CPU time */
};

static int pb_contender_sample(struct pb_run *r, const struct pb_shape *sh,
			       struct pb_contender *c, unsigned nthreads, unsigned slot)
{
	return pb_sample(sh, c->impl, c->eng ? c->eng->be : NULL, r->sets, nthreads, c->iters,
			 &c->samples[slot], &c->cpu_samples[slot]);
}

/* Verify an engine once; a FAIL line says why. Returns the verdict of pb_verify(). */
static int pb_config_verify(struct pb_run *r, const struct pb_shape *sh, bool dram,
			    struct pb_engine *eng)
{
	char why[160] = "";
	int vrc = pb_verify(sh, eng->be, &r->sets[0], why, sizeof(why));

	if (vrc == 0)
		return 0;
	r->failures++;
	if (vrc < 0)
		snprintf(why, sizeof(why), "engine failed: %s", graid_strerror(vrc));
	printf("FAIL %s %u+%u %s %s engine %s: %s%s\n", pb_op_names[sh->op], sh->ndata,
	       sh->nparity, PB_LEN_NAME(sh->len), dram ? "dram" : "cache", eng->name,
	       vrc == 1 ? "output differs from ISA-L direct at " :
	       vrc == 2 ? "ISA-L direct did not give back the lost data (bench bug) at " : "",
	       why);
	return vrc;
}

/*
 * One configuration: bind the sets, verify each engine, then time every contender with
 * their samples interleaved, so that a slow spell on this shared machine hits them all
 * alike and the ratios hold even when the absolute figures wander.
 */
static int pb_config(struct pb_run *r, enum pb_op op, unsigned ndata, size_t len, bool dram,
		     unsigned nthreads)
{
	struct pb_shape sh = pb_shape_make(&r->o, op, ndata, len, dram, nthreads);
	struct pb_contender c[2 + PB_MAX_ENGINES] = {
		{ .impl = PB_IMPL_ISAL }, { .impl = PB_IMPL_MEMCPY },
	};
	const unsigned nc = 2 + r->neng, niso = r->neng ? r->neng : 1;
	const size_t nsamples = (size_t)(nc + niso) * r->o.reps;
	double *samples = calloc(2 * nsamples, sizeof(*samples));
	int vrc[PB_MAX_ENGINES] = { 0 };

	if (!samples)
		return -ENOMEM;
	for (unsigned t = 0; t < nthreads; t++) {
		int rc = pb_set_bind(&r->sets[t], &sh);

		if (rc) {
			free(samples);
			return rc;
		}
	}
	for (unsigned i = 0; i < nc; i++) {
		/* ISA-L direct keeps niso samples a round, one beside each engine's. */
		c[i].samples = samples + (size_t)(i ? i + niso : 0) * r->o.reps;
		c[i].cpu_samples = c[i].samples + nsamples;
		if (i >= 2) {
			c[i].impl = PB_IMPL_ENGINE;
			c[i].eng = &r->eng[i - 2];
			vrc[i - 2] = pb_config_verify(r, &sh, dram, c[i].eng);
			c[i].rc = vrc[i - 2] < 0 ? vrc[i - 2] : 0;
		}
		if (c[i].rc == 0)
			c[i].rc = pb_calibrate(&sh, c[i].impl, c[i].eng ? c[i].eng->be : NULL,
					       r->sets, nthreads, r->o.target_s, &c[i].iters);
	}
	/*
	 * Each engine's sample comes right after a sample of ISA-L direct of its own, so that
	 * each pair sees the same machine; ISA-L's figure is the median of all its samples.
	 */
	for (unsigned rep = 0; rep < r->o.reps; rep++) {
		if (c[1].rc == 0)
			c[1].rc = pb_contender_sample(r, &sh, &c[1], nthreads, rep);
		for (unsigned k = 0; k < niso; k++) {
			struct pb_contender *e = &c[2 + k];

			if (c[0].rc == 0)
				c[0].rc = pb_contender_sample(r, &sh, &c[0], nthreads,
							      rep * niso + k);
			if (k < r->neng && e->rc == 0)
				e->rc = pb_contender_sample(r, &sh, e, nthreads, rep);
		}
	}
	/* Ratios first: bench_median() sorts the samples and so unpairs the rounds. */
	for (unsigned i = 2; i < nc; i++)
		if (c[i].rc == 0 && c[0].rc == 0)
		{
			c[i].ratio = pb_paired_ratio(c[i].samples, c[0].samples + (i - 2), niso,
						     r->o.reps);
			c[i].cpu_ratio = pb_paired_ratio(c[i].cpu_samples,
							 c[0].cpu_samples + (i - 2), niso,
							 r->o.reps);
		}
	for (unsigned i = 0; i < nc; i++)
		if (c[i].rc == 0)
			c[i].gbps = bench_median(c[i].samples, r->o.reps * (i == 0 ? niso : 1));
	if (c[0].rc)
		printf("# ISA-L direct failed on %s %u+%u %s\n", pb_op_names[op], ndata, sh.nparity,
		       PB_LEN_NAME(len));
	for (unsigned i = 2; i < nc; i++) {
		struct pb_figures f = {
			.engine = c[i].eng->name, .check = vrc[i - 2] ? "FAIL" : "ok",
			.rc = c[i].rc, .gbps = c[i].gbps, .ratio = c[i].ratio,
			.cpu_ratio = c[i].cpu_ratio,
			.irc = c[0].rc, .igbps = c[0].gbps, .mrc = c[1].rc, .mgbps = c[1].gbps,
		};

		if (c[i].rc && vrc[i - 2] >= 0) {
			r->failures++;
			f.check = "FAIL";
			printf("FAIL %s %u+%u %s engine %s failed while timed: %s\n",
			       pb_op_names[op], ndata, sh.nparity, PB_LEN_NAME(len), c[i].eng->name,
			       graid_strerror(c[i].rc));
		}
		pb_emit(r, &sh, dram, nthreads, &f);
	}
	if (r->neng == 0) {
		struct pb_figures f = {
			.engine = "(none)", .check = "-", .rc = -ENODEV,
			.irc = c[0].rc, .igbps = c[0].gbps, .mrc = c[1].rc, .mgbps = c[1].gbps,
		};

		pb_emit(r, &sh, dram, nthreads, &f);
	}
	free(samples);
	return 0;
}

/* The target, read off the table: isal through libgraid vs ISA-L direct, P+Q 8+2x64K. */
static void pb_print_target(const struct pb_run *r)
{
	bool any = false;

	printf("\n# Target: engine isal through libgraid within 5%% of ISA-L direct, "
	       "P+Q 8+2 x 64 KiB\n");
	printf("# %-5s %3s %10s %10s %7s %7s  %s\n", "set", "thr", "isal GB/s", "ISA-L GB/s",
	       "ratio", "cpu-r", "within 5% (by wall clock / by CPU time)");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct pb_row *w = &r->rows[i];

		if (w->op != PB_OP_PQ || w->ndata != PB_TARGET_NDATA || w->len != PB_TARGET_LEN ||
		    strcmp(w->engine, "isal") || w->ratio < 0)
			continue;
		any = true;
		printf("# %-5s %3u %10.2f %10.2f %7.3f %7.3f  %s / %s\n", w->dram ? "dram" : "cache",
		       w->threads, w->gbps, w->isal_gbps, w->ratio, w->cpu_ratio,
		       w->ratio >= PB_TARGET_RATIO ? "yes" : "NO",
		       w->cpu_ratio >= PB_TARGET_RATIO ? "yes" : "NO");
	}
	if (!any)
		printf("# (engine isal not measured in this run)\n");
}

static void pb_print_legend(const struct pb_run *r)
{
	printf("# GB/s: data bytes per second (ndata x block x stripes), all threads together;\n"
	       "#   median of %u samples of >= %.0f ms each, CLOCK_MONOTONIC; 64-byte aligned blocks.\n"
	       "# op: P = RAID-5 parity, on the RAID-6 layouts' data widths with one parity block\n"
	       "#   (8+1 beside 8+2); P+Q = RAID-6 parity; rec2 = RAID-6 recovery of data blocks\n"
	       "#   0 and 1, in place, from the other data blocks, P and Q.\n"
	       "# set: cache = one call's stripes (~%zu KiB of data per thread) called again and\n"
	       "#   again; dram = %zu MiB of data over all threads, walked in order, one call per\n"
	       "#   ~%zu KiB of stripes. stripes = stripes per call.\n"
	       "# ISA-L: xor_gen / pq_gen / ec_encode_data called directly on the same blocks\n"
	       "#   (recovery builds its decode matrix per call, as the engine must).\n"
	       "# ratio: engine / ISA-L, sample by sample (taken back to back), median of those.\n"
	       "# cpu-r: the same ratio with process CPU seconds (all threads) in place of wall\n"
	       "#   seconds: what a quiet machine would show for CPU engines, since other tenants\n"
	       "#   cannot steal CPU time; for an accelerator, host CPU saved, not its speed.\n"
	       "# memcpy: the same data bytes copied to a buffer of the same size.\n"
	       "# check: the engine's output on one call was compared bit for bit with ISA-L's.\n\n",
	       r->o.reps, r->o.target_s * 1e3, r->o.batch_bytes >> 10, r->o.dram_bytes >> 20,
	       r->o.batch_bytes >> 10);
}

int pb_table_main(int argc, char **argv)
{
	static struct pb_run r;
	double t0 = bench_now();
	char load[64];
	int rc;

	if (pb_parse(argc, argv, &r.o)) {
		pb_usage(stderr, argv[0]);
		return 2;
	}
	r.nthr = r.o.threads ? 1 : 2;
	r.thr[0] = r.o.threads ? r.o.threads : 1;
	r.thr[1] = 2;
	bench_print_header(stdout, argc, argv);
	printf("# libgraid %s%s\n", graid_version(),
	       r.o.quick ? " (--quick: small sets, no 22-wide stripes)" : "");
	rc = pb_open_engines(&r);
	if (rc == 0 && r.o.csv) {
		r.csv = fopen(r.o.csv, "w");
		if (!r.csv)
			rc = -errno;
		else
			fprintf(r.csv, "op,layout,ndata,nparity,block_bytes,set,threads,"
				       "stripes_per_call,set_data_bytes,engine,engine_gbps,"
				       "isal_direct_gbps,ratio,cpu_ratio,memcpy_gbps,check\n");
	}
	if (rc == 0)
		rc = pb_alloc_sets(&r);
	if (rc) {
		fprintf(stderr, "parity_bench: setup failed: %s\n", graid_strerror(rc));
		return 2;
	}
	pb_print_legend(&r);
	pb_print_table_head();
	for (size_t oi = 0; rc == 0 && oi < 3; oi++)
		for (size_t ni = 0; rc == 0 && ni < r.o.nndata; ni++)
			for (size_t li = 0; rc == 0 && li < r.o.nlens; li++)
				for (int dram = 0; rc == 0 && dram < 2; dram++)
					for (unsigned ti = 0; rc == 0 && ti < r.nthr; ti++)
						rc = pb_config(&r, pb_ops[oi], r.o.ndatas[ni],
							       r.o.lens[li], dram, r.thr[ti]);
	if (rc) {
		fprintf(stderr, "parity_bench: %s\n", graid_strerror(rc));
		return 2;
	}
	pb_print_target(&r);
	bench_loadavg(load, sizeof(load));
	printf("# %u failure%s; %.1f s; load average now %s\n", r.failures,
	       r.failures == 1 ? "" : "s", bench_now() - t0, load);
	if (r.csv && fclose(r.csv))
		fprintf(stderr, "parity_bench: writing %s failed\n", r.o.csv);
	for (unsigned e = 0; e < r.neng; e++)
		graid_backend_close(r.eng[e].be);
	for (unsigned t = 0; t < PB_MAX_THREADS; t++) {
		free(r.sets[t].arena);
		free(r.sets[t].ptrs);
	}
	free(r.rows);
	return r.failures ? 1 : 0;
}
