/* SPDX-License-Identifier: MIT */
/* graidctl bench: every usable parity engine on the same RAID-6 stripes, checked against ref. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "gctl.h"

void gctl_help_bench(FILE *f)
{
	gctl_print_cmd_usage(f, "bench");
	fprintf(f,
		"\nTime every usable parity engine on the same random RAID-6 stripes: parity\n"
		"generation, recovery of two lost data blocks, and parity check, in GB/s of data,\n"
		"next to memcpy of the same bytes. Every engine's output is compared bit for bit\n"
		"with the reference engine's. Takes a few seconds; for a sweep over layouts and\n"
		"batch sizes use the parity-compare example.\n\n"
		"  -t, --seconds S   time spent on each figure (default 0.2)\n"
		"  -d, --ndata N     data blocks per stripe, 1..255 (default 8, i.e. 8+2)\n"
		"  -B, --block SIZE  block (chunk) length (default 64K)\n"
		"  -S, --stripes N   stripes per engine call (default 32)\n\n"
		"Exit status: 0; 1 an engine failed or its output differed from ref's; 2 usage.\n");
}

struct bench_set {
	unsigned ndata;
	size_t len, nstripes;
	uint8_t *mem;           /* nstripes * (ndata + 2) blocks */
	uint8_t **blocks;       /* pointers into mem, stripe after stripe */
	uint8_t *want_pq;       /* ref's P and Q of every stripe */
	uint8_t *want_lost;     /* data blocks 0 and 1 of every stripe, for the recover check */
	uint8_t *scratch;       /* memcpy baseline destination */
};

static uint8_t *bench_block(struct bench_set *s, size_t stripe, unsigned b)
{
	return s->blocks[stripe * (s->ndata + 2) + b];
}

static int bench_setup(struct bench_set *s)
{
	size_t per = s->ndata + 2, len = (s->len + 63) & ~(size_t)63;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	s->mem = aligned_alloc(64, len * per * s->nstripes);
	s->blocks = calloc(per * s->nstripes, sizeof(*s->blocks));
	s->want_pq = malloc(2 * s->len * s->nstripes);
	s->want_lost = malloc(2 * s->len * s->nstripes);
	s->scratch = aligned_alloc(64, len * s->ndata * s->nstripes);
	if (!s->mem || !s->blocks || !s->want_pq || !s->want_lost || !s->scratch)
		return -ENOMEM;
	for (size_t i = 0; i < per * s->nstripes; i++)
		s->blocks[i] = s->mem + i * len;
	/* xorshift64: fast, and the same data every run so figures compare across runs. */
	for (size_t i = 0; i < len * per * s->nstripes; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(s->mem + i, &x, 8);
	}
	for (size_t st = 0; st < s->nstripes; st++)
		for (unsigned b = 0; b < 2; b++)
			memcpy(s->want_lost + (st * 2 + b) * s->len, bench_block(s, st, b), s->len);
	return 0;
}

static void bench_free(struct bench_set *s)
{
	free(s->mem);
	free(s->blocks);
	free(s->want_pq);
	free(s->want_lost);
	free(s->scratch);
}

/* Compare (or with save, record) P and Q, or the two recovered data blocks, of every stripe. */
static bool bench_same(struct bench_set *s, bool parity, bool save)
{
	for (size_t st = 0; st < s->nstripes; st++) {
		for (unsigned b = 0; b < 2; b++) {
			uint8_t *blk = bench_block(s, st, parity ? s->ndata + b : b);
			uint8_t *ref = (parity ? s->want_pq : s->want_lost) + (st * 2 + b) * s->len;

			if (save)
				memcpy(ref, blk, s->len);
			else if (memcmp(ref, blk, s->len) != 0)
				return false;
		}
	}
	return true;
}

enum bench_op { BENCH_GEN, BENCH_RECOVER, BENCH_CHECK, BENCH_MEMCPY };

static long bench_once(struct graid_backend *be, struct bench_set *s, enum bench_op op)
{
	static const unsigned lost[2] = { 0, 1 };

	switch (op) {
	case BENCH_GEN:
		return graid_parity_gen(be, s->ndata, 2, s->len, s->nstripes, s->blocks);
	case BENCH_RECOVER:
		return graid_parity_recover(be, s->ndata, 2, s->len, s->nstripes, s->blocks, 2,
					    lost);
	case BENCH_CHECK:
		return graid_parity_check(be, s->ndata, 2, s->len, s->nstripes, s->blocks, NULL);
	case BENCH_MEMCPY:
		for (size_t st = 0; st < s->nstripes; st++)
			for (unsigned b = 0; b < s->ndata; b++)
				memcpy(s->scratch + (st * s->ndata + b) * s->len,
				       bench_block(s, st, b), s->len);
		return 0;
	}
	return -EINVAL;
}

/* GB/s of data over at least `seconds` and three calls; negative errno if a call failed. */
static double bench_time(struct graid_backend *be, struct bench_set *s, enum bench_op op,
			 double seconds, long *err)
{
	double t0 = gctl_now(), t;
	unsigned calls = 0;

	*err = bench_once(be, s, op); /* warm-up: first-call setup is not throughput */
	if (*err < 0)
		return 0;
	t0 = gctl_now();
	do {
		*err = bench_once(be, s, op);
		if (*err < 0)
			return 0;
		calls++;
		t = gctl_now() - t0;
	} while (t < seconds || calls < 3);
	return (double)s->ndata * (double)s->len * (double)s->nstripes * calls / t / 1e9;
}

/* One engine: its output checked against ref's, then its three figures. Returns 0 or 1. */
static int bench_engine(const char *name, struct bench_set *s, double seconds, bool is_ref)
{
	double g, r, c;
	struct graid_backend *be;
	const char *verdict = "yes";
	long err;
	int rc = graid_backend_open(name, &be);

	if (rc) {
		printf("%-10s %s\n", name, graid_strerror(rc));
		return 1;
	}
	/* Zeroed outputs: an engine that writes nothing cannot pass on the previous one's. */
	for (size_t st = 0; st < s->nstripes; st++) {
		memset(bench_block(s, st, s->ndata), 0, s->len);
		memset(bench_block(s, st, s->ndata + 1), 0, s->len);
	}
	g = bench_time(be, s, BENCH_GEN, seconds, &err);
	if (err < 0)
		goto failed;
	if (!bench_same(s, true, is_ref))
		verdict = "NO (P/Q differ)";
	for (size_t st = 0; st < s->nstripes; st++) {
		memset(bench_block(s, st, 0), 0, s->len);
		memset(bench_block(s, st, 1), 0, s->len);
	}
	r = bench_time(be, s, BENCH_RECOVER, seconds, &err);
	if (err < 0)
		goto failed;
	if (!bench_same(s, false, false))
		verdict = "NO (recovery differs)";
	c = bench_time(be, s, BENCH_CHECK, seconds, &err);
	if (err < 0)
		goto failed;
	if (err > 0)
		verdict = "NO (check found mismatches)";
	printf("%-10s %10.2f %12.2f %10.2f  %s\n", name, g, r, c, verdict);
	graid_backend_close(be);
	return strcmp(verdict, "yes") == 0 ? 0 : 1;
failed:
	printf("%-10s failed: %s\n", name, graid_strerror((int)err));
	graid_backend_close(be);
	return 1;
}

int gctl_cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 't' },
		{ "ndata", required_argument, NULL, 'd' },
		{ "block", required_argument, NULL, 'B' },
		{ "stripes", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_set s = { .ndata = 8, .len = 64 * 1024, .nstripes = 32 };
	struct graid_backend_desc d[32];
	double seconds = 0.2;
	uint64_t v;
	char *end, size[32];
	int c, n, bad = 0;
	long err;

	while ((c = getopt_long(argc, argv, "t:d:B:S:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0 && seconds <= 60))
				return gctl_usage_err("bench", "bad --seconds '%s' (0 < S <= 60)",
						      optarg);
			break;
		case 'd':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > 255)
				return gctl_usage_err("bench", "bad --ndata '%s' (1..255)", optarg);
			s.ndata = (unsigned)v;
			break;
		case 'B':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > (16u << 20))
				return gctl_usage_err("bench", "bad --block '%s' (1 .. 16M)", optarg);
			s.len = (size_t)v;
			break;
		case 'S':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > 4096)
				return gctl_usage_err("bench", "bad --stripes '%s' (1..4096)", optarg);
			s.nstripes = (size_t)v;
			break;
		default:
			fprintf(stderr, "Try 'graidctl bench --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return gctl_usage_err("bench", "unexpected argument '%s'", argv[optind]);
	if ((double)(s.ndata + 2) * (double)s.len * (double)s.nstripes > 1024.0 * 1024 * 1024)
		return gctl_usage_err("bench", "more than 1 GiB of stripes; use fewer or smaller");
	for (unsigned i = 0; i < 32; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 32, 0);
	if (n < 0) {
		gctl_err("bench: listing engines: %s", graid_strerror(n));
		return GCTL_EXIT_FAILED;
	}
	if (n > 32)
		n = 32;
	if (bench_setup(&s)) {
		gctl_err("bench: out of memory");
		bench_free(&s);
		return GCTL_EXIT_FAILED;
	}
	gctl_size_format((uint64_t)s.ndata * s.len * s.nstripes, size, sizeof(size));
	printf("RAID-6 %u+2, %zu-byte blocks, %zu stripes per call (%s of data), %.2f s per "
	       "figure; GB/s of data\n\n", s.ndata, s.len, s.nstripes, size, seconds);
	printf("%-10s %10s %12s %10s  %s\n", "engine", "gen", "recover 2", "check",
	       "same as ref");
	printf("%-10s %10.2f %12s %10s  %s\n", "memcpy",
	       bench_time(NULL, &s, BENCH_MEMCPY, seconds, &err), "-", "-", "(baseline)");
	/* ref first: its parity is what every other engine is held to. */
	bad |= bench_engine("ref", &s, seconds, true);
	for (int i = 0; i < n; i++) {
		if (d[i].status != 0 || strcmp(d[i].name, "ref") == 0)
			continue;
		bad |= bench_engine(d[i].name, &s, seconds, false);
	}
	bench_free(&s);
	return bad ? GCTL_EXIT_FAILED : GCTL_EXIT_OK;
}
