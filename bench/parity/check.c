/* SPDX-License-Identifier: MIT */
/*
 * parity_bench check and graidctl bench: every usable parity engine on the same RAID-6
 * stripes, checked against ref, timed next to memcpy of the same bytes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libgraid/graid.h>

#include "check.h"
#include "modes.h"

static double bench_check_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
	double t0 = bench_check_now(), t;
	unsigned calls = 0;

	*err = bench_once(be, s, op); /* warm-up: first-call setup is not throughput */
	if (*err < 0)
		return 0;
	t0 = bench_check_now();
	do {
		*err = bench_once(be, s, op);
		if (*err < 0)
			return 0;
		calls++;
		t = bench_check_now() - t0;
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

int pb_check_run(const struct pb_check_opts *o)
{
	struct bench_set s = { .ndata = o->ndata, .len = o->len, .nstripes = o->nstripes };
	struct graid_backend_desc d[32];
	double seconds = o->seconds;
	int n, bad = 0;
	long err;

	for (unsigned i = 0; i < 32; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 32, 0);
	if (n < 0)
		return n;
	if (n > 32)
		n = 32;
	if (bench_setup(&s)) {
		bench_free(&s);
		return -ENOMEM;
	}
	printf("RAID-6 %u+2, %zu-byte blocks, %zu stripes per call (%s of data), %.2f s per "
	       "figure; GB/s of data\n\n", s.ndata, s.len, s.nstripes, o->data, seconds);
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
	return bad ? 1 : 0;
}

/* "64K", "1M", "32": a count or a size with a binary K/M/G suffix. */
static int check_size(const char *s, unsigned long long *v)
{
	char *end;

	*v = strtoull(s, &end, 10);
	if (end == s)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		*v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		*v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		*v <<= 30, end++;
	return *end ? -EINVAL : 0;
}

static void check_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--seconds S] [--ndata N] [--block SIZE] [--stripes N]\n"
		"Time every usable parity engine on the same random RAID-6 stripes: parity\n"
		"generation, recovery of two lost data blocks, and parity check, in GB/s of data,\n"
		"next to memcpy of the same bytes, each engine's output compared with ref's\n"
		"(graidctl bench runs the same).\n"
		"  -t, --seconds S   time spent on each figure (default 0.2)\n"
		"  -d, --ndata N     data blocks per stripe, 1..255 (default 8, i.e. 8+2)\n"
		"  -B, --block SIZE  block (chunk) length (default 64K)\n"
		"  -S, --stripes N   stripes per engine call (default 32)\n"
		"Exit status: 0; 1 an engine failed or its output differed from ref's; 2 usage.\n",
		prog);
}

int pb_check_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 't' },
		{ "ndata", required_argument, NULL, 'd' },
		{ "block", required_argument, NULL, 'B' },
		{ "stripes", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pb_check_opts o = PB_CHECK_DEFAULTS;
	unsigned long long v;
	char data[32], *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "t:d:B:S:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			o.seconds = strtod(optarg, &end);
			if (*end || !(o.seconds > 0 && o.seconds <= 60))
				goto usage;
			break;
		case 'd':
			if (check_size(optarg, &v) || v < 1 || v > 255)
				goto usage;
			o.ndata = (unsigned)v;
			break;
		case 'B':
			if (check_size(optarg, &v) || v < 1 || v > (16u << 20))
				goto usage;
			o.len = (size_t)v;
			break;
		case 'S':
			if (check_size(optarg, &v) || v < 1 || v > 4096)
				goto usage;
			o.nstripes = (size_t)v;
			break;
		case 'h':
			check_usage(stdout, argv[0]);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc ||
	    (double)(o.ndata + 2) * (double)o.len * (double)o.nstripes > 1024.0 * 1024 * 1024)
		goto usage;
	snprintf(data, sizeof(data), "%.2f MiB",
		 (double)o.ndata * (double)o.len * (double)o.nstripes / (1 << 20));
	o.data = data;
	rc = pb_check_run(&o);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], graid_strerror(rc));
		return 2;
	}
	return rc;
usage:
	check_usage(stderr, argv[0]);
	return 2;
}
