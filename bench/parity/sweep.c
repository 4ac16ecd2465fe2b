/* SPDX-License-Identifier: MIT */
/*
 * parity_bench sweep (formerly the parity-compare example, whose name still runs it):
 * every parity engine present, GPU or CPU, on the same stripes, over a sweep.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#include "modes.h"
#include "pc_chart.h"
#include "pc_point.h"
#include "pc_report.h"

#define PC_MAX_ENGINES 16
#define PC_MAX_LIST 32

struct pc_opts {
	const char *engines;            /* comma-separated; NULL: all that open */
	unsigned layouts[PC_MAX_LIST];  /* data blocks per stripe (RAID-6: + P + Q) */
	unsigned nlayouts;
	unsigned batches[PC_MAX_LIST];  /* stripes per call */
	unsigned nbatches;
	size_t max_bytes;               /* largest batch, in data bytes */
	size_t block;
	bool ops[2];
	double min_time_s;
	unsigned min_calls;
	const char *csv, *png;
	uint64_t seed;
};

struct pc_engine {
	char name[32];
	struct graid_backend *be;
};

static void pc_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  --engines a,b     engines to compare (default: every one that opens)\n"
		"  --layouts 4,8,... data blocks per RAID-6 stripe (default 4,8,16,22,30)\n"
		"  --batches 1,4,... stripes per call (default 1,4,16,64,256,1024)\n"
		"  --max-bytes N     leave out batches of more data than N (default 64M; K, M, G)\n"
		"  --block N         block (chunk) size (default 64K)\n"
		"  --op gen|recover|all  what to compare (default gen)\n"
		"  --min-time S      seconds of timed calls per engine and point (default 0.05)\n"
		"  --csv FILE        results (default parity-compare.csv)\n"
		"  --png FILE        chart, if gnuplot is on PATH (default parity-compare.png)\n"
		"  --seed N          random data seed (default 1)\n"
		"Every result is compared bit for bit with the \"ref\" engine's. Exit status: 0;\n"
		"1 if an engine's output differed or it failed; 2 on bad usage or setup failure.\n",
		argv0);
}

static int pc_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'G': case 'g':
		v <<= 10;
		/* fall through */
	case 'M': case 'm':
		v <<= 10;
		/* fall through */
	case 'K': case 'k':
		v <<= 10;
		end++;
		break;
	}
	if (*end || v == 0)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static int pc_parse_list(const char *s, unsigned *out, unsigned *n, unsigned max_value)
{
	*n = 0;
	while (*s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > max_value || *n == PC_MAX_LIST)
			return -EINVAL;
		out[(*n)++] = (unsigned)v;
		s = end + (*end == ',');
		if (*end && *end != ',')
			return -EINVAL;
	}
	return *n ? 0 : -EINVAL;
}

static int pc_parse(int argc, char **argv, struct pc_opts *o)
{
	static const struct option longopts[] = {
		{ "engines", required_argument, NULL, 'e' },
		{ "layouts", required_argument, NULL, 'l' },
		{ "batches", required_argument, NULL, 'b' },
		{ "max-bytes", required_argument, NULL, 'm' },
		{ "block", required_argument, NULL, 'k' },
		{ "op", required_argument, NULL, 'o' },
		{ "min-time", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'c' },
		{ "png", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, rc = 0;

	*o = (struct pc_opts){
		.layouts = { 4, 8, 16, 22, 30 }, .nlayouts = 5,
		.batches = { 1, 4, 16, 64, 256, 1024 }, .nbatches = 6,
		/* 64 MiB keeps the default sweep under a minute on two cores, "ref" included. */
		.max_bytes = (size_t)64 << 20, .block = 64 * 1024, .ops = { true, false },
		.min_time_s = 0.05, .min_calls = 3,
		.csv = "parity-compare.csv", .png = "parity-compare.png", .seed = 1,
	};
	while (rc == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			o->engines = optarg;
			break;
		case 'l':
			rc = pc_parse_list(optarg, o->layouts, &o->nlayouts, 253);
			break;
		case 'b':
			rc = pc_parse_list(optarg, o->batches, &o->nbatches, 1u << 24);
			break;
		case 'm':
			rc = pc_parse_size(optarg, &o->max_bytes);
			break;
		case 'k':
			rc = pc_parse_size(optarg, &o->block);
			break;
		case 'o':
			o->ops[PC_OP_GEN] = !strcmp(optarg, "gen") || !strcmp(optarg, "all");
			o->ops[PC_OP_RECOVER] = !strcmp(optarg, "recover") || !strcmp(optarg, "all");
			rc = o->ops[0] || o->ops[1] ? 0 : -EINVAL;
			break;
		case 't':
			o->min_time_s = strtod(optarg, NULL);
			rc = o->min_time_s >= 0 ? 0 : -EINVAL;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'p':
			o->png = optarg;
			break;
		case 's':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			pc_usage(stdout, argv[0]);
			exit(0);
		default:
			rc = -EINVAL;
		}
	}
	return rc == 0 && optind == argc ? 0 : -EINVAL;
}

static bool pc_wanted(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return !list;
}

/*
 * The CPU threads an engine computes on, to print beside its figures: engines are only
 * comparable at equal thread counts (or each at all of the machine's).
 */
static const char *pc_threads(const char *name)
{
	static char buf[160];
	const char *env = getenv("GRAID_CPU_THREADS"), *pocl = getenv("POCL_MAX_PTHREAD_COUNT");
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	if (!strcmp(name, "isal"))
		snprintf(buf, sizeof(buf), "%s of %ld CPUs (GRAID_CPU_THREADS%s)",
			 env && *env ? env : "all", online, env && *env ? "" : " unset");
	else if (!strcmp(name, "ref"))
		snprintf(buf, sizeof(buf), "1 (the calling thread)");
	else if (!strcmp(name, "opencl"))
		snprintf(buf, sizeof(buf), "the device's; on PoCL's CPU device %s of %ld CPUs "
			 "(POCL_MAX_PTHREAD_COUNT%s)", pocl && *pocl ? pocl : "all", online,
			 pocl && *pocl ? "" : " unset");
	else
		snprintf(buf, sizeof(buf), "the device's (host: 1 calling thread)");
	return buf;
}

/* Every engine present opens; those that don't are named with the reason, never fatal. */
static unsigned pc_open_engines(const struct pc_opts *o, struct pc_engine *eng)
{
	struct graid_backend_desc d[PC_MAX_ENGINES];
	unsigned ne = 0;
	int n;

	for (unsigned i = 0; i < PC_MAX_ENGINES; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, PC_MAX_ENGINES, 0);
	for (int i = 0; i < n && i < PC_MAX_ENGINES; i++) {
		int rc = d[i].status;

		if (!pc_wanted(o->engines, d[i].name))
			continue;
		if (rc == 0)
			rc = graid_backend_open(d[i].name, &eng[ne].be);
		if (rc) {
			printf("# engine %-7s not here: %s\n", d[i].name, graid_strerror(rc));
			continue;
		}
		snprintf(eng[ne].name, sizeof(eng[ne].name), "%s", d[i].name);
		printf("# engine %-7s %s\n#   threads: %s\n", d[i].name, d[i].device,
		       pc_threads(d[i].name));
		ne++;
	}
	return ne;
}

static void pc_header(int argc, char **argv)
{
	char date[64], line[512], cpu[256] = "unknown";
	time_t t = time(NULL);
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(cpu, sizeof(cpu), "%s", colon + 1 + (colon[1] == ' '));
			break;
		}
	}
	if (f)
		fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
	printf("# parity-compare, libgraid %s\n# date: %s\n# cpu: %s (%ld online)\n# command:",
	       graid_version(), date, cpu, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
}

static bool pc_point_fits(const struct pc_opts *o, unsigned ndata, unsigned nstripes)
{
	return (size_t)nstripes * ndata * o->block <= o->max_bytes;
}

/* Buffers for the largest batch that the sweep will run. */
static int pc_alloc(const struct pc_opts *o, struct pc_buffers *b)
{
	size_t blocks = 0, stripes = 0;

	for (unsigned l = 0; l < o->nlayouts; l++)
		for (unsigned k = 0; k < o->nbatches; k++)
			if (pc_point_fits(o, o->layouts[l], o->batches[k])) {
				size_t nb = (size_t)o->batches[k] * (o->layouts[l] + 2);

				blocks = blocks > nb ? blocks : nb;
				stripes = stripes > o->batches[k] ? stripes : o->batches[k];
			}
	if (blocks == 0)
		return -EINVAL;
	return pc_buffers_init(b, blocks * o->block, stripes * 2 * o->block, blocks, o->block,
			       o->seed);
}

/* The gnuplot script sits beside the PNG, with .gp for its extension. */
static void pc_gp_path(const char *png, char *buf, size_t len)
{
	const char *dot = strrchr(png, '.'), *slash = strrchr(png, '/');
	int stem = dot && (!slash || dot > slash) ? (int)(dot - png) : (int)strlen(png);

	snprintf(buf, len, "%.*s.gp", stem, png);
}

static void pc_chart(const struct pc_opts *o, const struct pc_row *rows, size_t n)
{
	char gp[4096];
	int rc;

	pc_gp_path(o->png, gp, sizeof(gp));
	rc = pc_chart_write(gp, o->png, rows, n);
	if (rc) {
		printf("# chart: cannot write %s: %s\n", gp, graid_strerror(rc));
		return;
	}
	rc = pc_chart_render(gp);
	if (rc == 0)
		printf("# chart: %s (script %s)\n", o->png, gp);
	else if (rc == -ENOENT)
		printf("# chart: gnuplot not found on PATH (Debian: gnuplot-nox); skipped. "
		       "The script is %s\n", gp);
	else
		printf("# chart: gnuplot failed on %s (%s); skipped\n", gp, graid_strerror(rc));
}

int pb_sweep_main(int argc, char **argv)
{
	struct pc_engine eng[PC_MAX_ENGINES];
	struct graid_backend *ref = NULL;
	struct pc_buffers buf;
	struct pc_opts o;
	struct pc_row *rows;
	size_t nrows = 0, skipped = 0;
	unsigned ne, bad = 0;
	int rc;

	if (pc_parse(argc, argv, &o)) {
		pc_usage(stderr, argv[0]);
		return 2;
	}
	pc_header(argc, argv);
	ne = pc_open_engines(&o, eng);
	/* "ref" is the oracle whether or not it is one of the engines compared. */
	rc = graid_backend_open("ref", &ref);
	if (rc == 0)
		rc = pc_alloc(&o, &buf);
	rows = calloc((size_t)2 * o.nlayouts * o.nbatches * (ne ? ne : 1), sizeof(*rows));
	if (rc || !rows) {
		fprintf(stderr, "parity-compare: setup failed: %s\n",
			graid_strerror(rc ? rc : -ENOMEM));
		return 2;
	}
	printf("# %zu KiB blocks; GB/s = data bytes / median call latency; CPU s/GB = process "
	       "CPU time\n# (all threads) over the timed calls per GB of data; recover = two lost "
	       "data blocks.\n\n", o.block >> 10);
	pc_report_head(stdout);
	for (int op = 0; op < 2; op++) {
		for (unsigned l = 0; o.ops[op] && l < o.nlayouts; l++) {
			for (unsigned k = 0; k < o.nbatches; k++) {
				struct pc_shape sh = { .op = (enum pc_op)op, .ndata = o.layouts[l],
						       .len = o.block, .nstripes = o.batches[k] };

				if (!pc_point_fits(&o, sh.ndata, o.batches[k])) {
					skipped++;
					continue;
				}
				rc = pc_point_prepare(&buf, &sh, ref);
				if (rc) {
					fprintf(stderr, "parity-compare: ref failed: %s\n",
						graid_strerror(rc));
					return 2;
				}
				for (unsigned e = 0; e < ne; e++) {
					struct pc_row *w = &rows[nrows++];

					*w = (struct pc_row){ .op = sh.op, .ndata = sh.ndata,
							      .len = sh.len, .nstripes = sh.nstripes,
							      .engine = eng[e].name };
					pc_point_run(&buf, &sh, eng[e].be, o.min_time_s, o.min_calls,
						     &w->res);
					bad += w->res.rc || !w->res.identical;
					pc_report_row(stdout, w);
					fflush(stdout);
				}
			}
		}
	}
	if (skipped)
		printf("# %zu point%s above --max-bytes (%zu MiB of data per batch) left out\n",
		       skipped, skipped == 1 ? "" : "s", o.max_bytes >> 20);
	pc_report_crossover(stdout, rows, nrows);
	rc = pc_report_csv(o.csv, rows, nrows);
	if (rc)
		printf("# csv: cannot write %s: %s\n", o.csv, graid_strerror(rc));
	else
		printf("# csv: %s\n", o.csv);
	if (nrows)
		pc_chart(&o, rows, nrows);
	printf("# %u result%s differed from ref or failed\n", bad, bad == 1 ? "" : "s");
	for (unsigned e = 0; e < ne; e++)
		graid_backend_close(eng[e].be);
	graid_backend_close(ref);
	pc_buffers_free(&buf);
	free(rows);
	return bad ? 1 : 0;
}
