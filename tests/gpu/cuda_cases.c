/* SPDX-License-Identifier: MIT */
/* The parity case battery (see cuda_cases.h): shapes, a byte-wise reference, guard bytes. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_gf.h>

#include "cuda_cases.h"

/* Bytes of canary around every block: an engine that writes past a block's end trips it. */
#define GUARD 64
#define CANARY 0xc3

unsigned cases_log_errors;
unsigned cases_log_warnings;

void cases_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level <= GRAID_LOG_ERR)
		__atomic_add_fetch(&cases_log_errors, 1, __ATOMIC_RELAXED);
	if (level <= GRAID_LOG_WARNING)
		__atomic_add_fetch(&cases_log_warnings, 1, __ATOMIC_RELAXED);
	if (!getenv("GRAID_TEST_VERBOSE"))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[log %d] ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void cases_expect(struct cases_tally *t, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		__atomic_add_fetch(&t->passed, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&t->failed, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void cases_setenv(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

int cases_open(const struct graid_backend_ops *ops, struct graid_engine **e, const char *path,
	       const char *piece_kb, const char *fail_after)
{
	static const struct graid_backend_config cfg = {
		.struct_size = sizeof(cfg),
		.log = cases_log,
	};

	cases_setenv("GRAID_CUDA_PATH", path);
	cases_setenv("GRAID_CUDA_PIECE_KB", piece_kb);
	cases_setenv("GRAID_CUDA_FAIL_AFTER", fail_after);
	return ops->open(e, &cfg);
}

/* splitmix64: small, seedable, good enough for test data. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rnd_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static void rnd_fill(uint64_t *s, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd(s);
}

/* nstripes stripes of blocks in one buffer, each block between canaries. */
struct tset {
	unsigned ndata, nparity, nblk;
	size_t len, nstripes;
	uint8_t *mem;
	size_t memlen;
	uint8_t **blocks;
};

static size_t tset_nblocks(const struct tset *t)
{
	return t->nstripes * t->nblk;
}

static int tset_alloc(struct tset *t, uint64_t *seed, unsigned ndata, unsigned nparity,
		      size_t len, size_t nstripes, bool unaligned)
{
	const size_t slot = (len + 2 * GUARD + 16 + 63) / 64 * 64;
	void *mem;

	t->ndata = ndata;
	t->nparity = nparity;
	t->nblk = ndata + nparity;
	t->len = len;
	t->nstripes = nstripes;
	t->memlen = slot * tset_nblocks(t);
	if (posix_memalign(&mem, 4096, t->memlen))
		return -ENOMEM;
	t->mem = mem;
	t->blocks = malloc(tset_nblocks(t) * sizeof(*t->blocks));
	if (!t->blocks) {
		free(mem);
		return -ENOMEM;
	}
	memset(t->mem, CANARY, t->memlen);
	for (size_t i = 0; i < tset_nblocks(t); i++) {
		t->blocks[i] = t->mem + i * slot + GUARD + (unaligned ? rnd_below(seed, 16) : 0);
		rnd_fill(seed, t->blocks[i], len);
	}
	return 0;
}

static void tset_free(struct tset *t)
{
	free(t->mem);
	free(t->blocks);
}

static bool tset_guards_ok(const struct tset *t)
{
	const size_t slot = t->memlen / tset_nblocks(t);

	for (size_t i = 0; i < tset_nblocks(t); i++) {
		const uint8_t *lo = t->mem + i * slot, *b = t->blocks[i];

		for (const uint8_t *p = lo; p < b; p++)
			if (*p != CANARY)
				return false;
		for (const uint8_t *p = b + t->len; p < lo + slot; p++)
			if (*p != CANARY)
				return false;
	}
	return true;
}

static uint8_t *blk(const struct tset *t, size_t s, unsigned j)
{
	return t->blocks[s * t->nblk + j];
}

/* mul_g[k][x] = g^k * x, from graid_gf.h's plain multiplication (filled once). */
static uint8_t mul_g[GRAID_GF_MAX_DATA][256];
static pthread_once_t mul_g_once = PTHREAD_ONCE_INIT;

static void mul_g_fill(void)
{
	for (unsigned k = 0; k < GRAID_GF_MAX_DATA; k++)
		for (unsigned x = 0; x < 256; x++)
			mul_g[k][x] = graid_gf_mul(graid_gf_exp2(k), (unsigned char)x);
}

/* The plain definition: P = XOR of D_k, Q = sum of g^k * D_k, one byte at a time. */
static void ref_pq(const struct tset *t, size_t s, uint8_t *p, uint8_t *q)
{
	pthread_once(&mul_g_once, mul_g_fill);
	memset(p, 0, t->len);
	if (q)
		memset(q, 0, t->len);
	for (unsigned k = 0; k < t->ndata; k++) {
		const uint8_t *d = blk(t, s, k);

		for (size_t i = 0; i < t->len; i++)
			p[i] ^= d[i];
		if (q)
			for (size_t i = 0; i < t->len; i++)
				q[i] ^= mul_g[k][d[i]];
	}
}

static struct graid_stripe_batch batch_of(const struct tset *t)
{
	struct graid_stripe_batch b;

	memset(&b, 0, sizeof(b));
	b.struct_size = sizeof(b);
	b.ndata = t->ndata;
	b.nparity = t->nparity;
	b.len = t->len;
	b.nstripes = t->nstripes;
	b.blocks = t->blocks;
	return b;
}

/* Copy every block of a to b (same shape). */
static void tset_copy(const struct tset *a, const struct tset *b)
{
	for (size_t i = 0; i < tset_nblocks(a); i++)
		memcpy(b->blocks[i], a->blocks[i], a->len);
}

static bool tset_equal(const struct tset *a, const struct tset *b, size_t *bad)
{
	for (size_t i = 0; i < tset_nblocks(a); i++) {
		if (memcmp(a->blocks[i], b->blocks[i], a->len)) {
			*bad = i;
			return false;
		}
	}
	return true;
}

struct shape {
	unsigned ndata, nparity;
	size_t len, nstripes;
};

static void shape_str(const struct shape *sh, bool unaligned, char *buf, size_t n)
{
	snprintf(buf, n, "%u+%u x %zu B x %zu stripes%s", sh->ndata, sh->nparity, sh->len,
		 sh->nstripes, unaligned ? " (unaligned)" : "");
}

/* Whether every stripe's parity is the reference's; the first bad stripe in *bad. */
static bool parity_matches(const struct tset *t, size_t *bad)
{
	uint8_t *p = malloc(t->len), *q = malloc(t->len);
	bool ok = p && q;

	for (size_t s = 0; ok && s < t->nstripes; s++) {
		ref_pq(t, s, p, t->nparity > 1 ? q : NULL);
		if (memcmp(p, blk(t, s, t->ndata), t->len) ||
		    (t->nparity > 1 && memcmp(q, blk(t, s, t->ndata + 1), t->len))) {
			*bad = s;
			ok = false;
		}
	}
	free(p);
	free(q);
	return ok;
}

/* gen, then the parity compared with the reference. Leaves t with correct parity. */
static bool run_gen(const struct graid_backend_ops *ops, struct graid_engine *e,
		    struct tset *t, const char *what, struct cases_tally *tally)
{
	const struct graid_stripe_batch b = batch_of(t);
	const int rc = ops->gen(e, &b);
	size_t bad = 0;
	bool ok;

	cases_expect(tally, rc == 0, "%s: gen returned %d", what, rc);
	if (rc)
		return false;
	ok = parity_matches(t, &bad);
	cases_expect(tally, ok, "%s: gen parity of stripe %zu differs", what, bad);
	cases_expect(tally, tset_guards_ok(t), "%s: gen wrote outside its blocks", what);
	return ok;
}

static void run_recover(const struct graid_backend_ops *ops, struct graid_engine *e,
			const struct tset *gold, struct tset *t, uint64_t *seed, unsigned nlost,
			unsigned x, unsigned y, const char *what, struct cases_tally *tally)
{
	struct graid_stripe_batch b = batch_of(t);
	size_t bad = 0;
	int rc;

	tset_copy(gold, t);
	for (size_t s = 0; s < t->nstripes; s++) {
		rnd_fill(seed, blk(t, s, x), t->len);
		if (nlost > 1)
			rnd_fill(seed, blk(t, s, y), t->len);
	}
	b.nlost = nlost;
	b.lost[0] = x;
	b.lost[1] = nlost > 1 ? y : 0;
	rc = ops->recover(e, &b);
	cases_expect(tally, rc == 0, "%s: recover {%u%s%.0u} returned %d", what, x,
		     nlost > 1 ? "," : "", nlost > 1 ? y : 0, rc);
	if (rc)
		return;
	cases_expect(tally, tset_equal(gold, t, &bad),
		     "%s: recover {%u%s%.0u}: block %zu of stripe %zu differs", what, x,
		     nlost > 1 ? "," : "", nlost > 1 ? y : 0, bad % t->nblk, bad / t->nblk);
	cases_expect(tally, tset_guards_ok(t), "%s: recover wrote outside its blocks", what);
}

/* Flip one byte of block j at pos by a non-zero pattern. */
static void corrupt(struct tset *t, uint64_t *seed, size_t s, unsigned j, size_t pos)
{
	blk(t, s, j)[pos] ^= (uint8_t)(1 + rnd_below(seed, 255));
}

static void run_check(const struct graid_backend_ops *ops, struct graid_engine *e,
		      const struct tset *gold, struct tset *t, uint64_t *seed, const char *what,
		      struct cases_tally *tally)
{
	const struct graid_stripe_batch b = batch_of(t);
	const bool two = t->nparity > 1;
	int32_t *res = malloc(t->nstripes * sizeof(*res));
	int32_t *want = malloc(t->nstripes * sizeof(*want));
	long rc, nbad = 0;

	if (!res || !want) {
		cases_expect(tally, false, "%s: out of memory", what);
		goto out;
	}
	tset_copy(gold, t);
	for (size_t s = 0; s < t->nstripes; s++)
		res[s] = 12345;
	rc = ops->check(e, &b, res);
	cases_expect(tally, rc == 0, "%s: check of clean stripes returned %ld", what, rc);
	for (size_t s = 0; s < t->nstripes; s++)
		cases_expect(tally, res[s] == GRAID_CHECK_CLEAN,
			     "%s: clean stripe %zu checked as %d", what, s, res[s]);

	/* One kind of damage per stripe, cycling through the kinds. */
	for (size_t s = 0; s < t->nstripes; s++) {
		const unsigned k = rnd_below(seed, t->ndata);
		const size_t pos = rnd_below(seed, (unsigned)t->len);
		const size_t pos2 = t->len > 1 ? (pos + 1 + rnd_below(seed, (unsigned)t->len - 1)) %
							 t->len : pos;

		want[s] = GRAID_CHECK_CLEAN;
		switch (s % 7) {
		case 1: /* one data byte */
			corrupt(t, seed, s, k, pos);
			want[s] = two ? (int32_t)k : GRAID_CHECK_UNLOCATED;
			break;
		case 2: /* one P byte */
			corrupt(t, seed, s, t->ndata, pos);
			want[s] = two ? (int32_t)t->ndata : GRAID_CHECK_UNLOCATED;
			break;
		case 3: /* one Q byte */
			if (two) {
				corrupt(t, seed, s, t->ndata + 1, pos);
				want[s] = (int32_t)t->ndata + 1;
			}
			break;
		case 4: /* two data blocks, at different bytes */
			if (t->ndata > 1 && pos2 != pos) {
				const unsigned k2 = (k + 1 + rnd_below(seed, t->ndata - 1)) % t->ndata;

				corrupt(t, seed, s, k, pos);
				corrupt(t, seed, s, k2, pos2);
				want[s] = GRAID_CHECK_UNLOCATED;
			}
			break;
		case 5: /* every byte of one data block */
			for (size_t i = 0; i < t->len; i++)
				corrupt(t, seed, s, k, i);
			want[s] = two ? (int32_t)k : GRAID_CHECK_UNLOCATED;
			break;
		case 6: /* a data byte and a P byte */
			if (pos2 != pos) {
				corrupt(t, seed, s, k, pos);
				corrupt(t, seed, s, t->ndata, pos2);
				want[s] = GRAID_CHECK_UNLOCATED;
			}
			break;
		default:
			break;
		}
		nbad += want[s] != GRAID_CHECK_CLEAN;
	}
	rc = ops->check(e, &b, res);
	cases_expect(tally, rc == nbad, "%s: check counted %ld bad stripes, want %ld", what, rc,
		     nbad);
	for (size_t s = 0; s < t->nstripes; s++)
		cases_expect(tally, res[s] == want[s], "%s: stripe %zu (damage %zu) checked as %d, want %d",
			     what, s, s % 7, res[s], want[s]);
	/* The count alone, without verdicts. */
	rc = ops->check(e, &b, NULL);
	cases_expect(tally, rc == nbad, "%s: check without results counted %ld, want %ld", what,
		     rc, nbad);
out:
	free(res);
	free(want);
}

static void run_shape(const struct graid_backend_ops *ops, struct graid_engine *e,
		      const struct shape *sh, bool unaligned, uint64_t *seed,
		      struct cases_tally *tally)
{
	struct tset gold, t;
	char what[96];
	const unsigned n = sh->ndata, pj = n, qj = n + 1;

	shape_str(sh, unaligned, what, sizeof(what));
	if (tset_alloc(&gold, seed, n, sh->nparity, sh->len, sh->nstripes, unaligned))
		return cases_expect(tally, false, "%s: out of memory", what);
	if (tset_alloc(&t, seed, n, sh->nparity, sh->len, sh->nstripes, unaligned)) {
		tset_free(&gold);
		return cases_expect(tally, false, "%s: out of memory", what);
	}
	if (!run_gen(ops, e, &gold, what, tally))
		goto out;

	const unsigned mid = rnd_below(seed, n);
	const unsigned singles[] = { 0, n - 1, mid, pj, qj };

	for (unsigned i = 0; i < sizeof(singles) / sizeof(singles[0]); i++)
		if (singles[i] < n + sh->nparity)
			run_recover(ops, e, &gold, &t, seed, 1, singles[i], 0, what, tally);
	if (sh->nparity > 1) {
		unsigned pairs[][2] = { { 0, pj }, { n - 1, pj }, { mid, pj }, { 0, qj },
					{ n - 1, qj }, { mid, qj }, { pj, qj }, { 0, 1 },
					{ 0, n - 1 }, { n - 2, n - 1 }, { 0, 0 } };
		const unsigned npairs = sizeof(pairs) / sizeof(pairs[0]);

		if (n > 1) {
			/* A random pair of data blocks too. */
			pairs[npairs - 1][0] = rnd_below(seed, n - 1);
			pairs[npairs - 1][1] = pairs[npairs - 1][0] + 1 +
					       rnd_below(seed, n - 1 - pairs[npairs - 1][0]);
		}
		for (unsigned i = 0; i < npairs; i++) {
			const unsigned x = pairs[i][0], y = pairs[i][1];

			if (x < y && y < n + 2)
				run_recover(ops, e, &gold, &t, seed, 2, x, y, what, tally);
		}
	}
	run_check(ops, e, &gold, &t, seed, what, tally);
out:
	tset_free(&gold);
	tset_free(&t);
}

void cases_run(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed,
	       enum cases_level level, struct cases_tally *tally)
{
	static const struct shape fixed[] = {
		{ 1, 1, 1, 1 },      { 1, 2, 17, 3 },     { 2, 2, 16, 2 },
		{ 3, 1, 15, 5 },     { 4, 2, 4096, 8 },   { 5, 2, 4093, 7 },
		{ 8, 2, 65536, 7 },  { 8, 1, 512, 37 },   { 17, 2, 1000, 9 },
		{ 32, 2, 4165, 7 },  { 255, 2, 33, 3 },   { 255, 1, 100, 2 },
		{ 254, 2, 16, 2 },   { 7, 2, 1, 14 },     { 2, 2, 31, 130 },
	};
	static const struct shape big[] = {
		{ 8, 2, (1u << 19) + 7, 2 }, { 64, 2, 1u << 15, 2 }, { 10, 2, 1u << 13, 300 },
	};
	static const struct shape huge[] = {
		{ 8, 2, 1u << 22, 4 }, { 255, 2, 1u << 16, 2 }, { 4, 2, 4096, 5000 },
		{ 8, 1, (1u << 20) + 1, 16 },
	};
	uint64_t s = seed;

	for (unsigned i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		const struct shape *sh = &fixed[i];

		if (level == CASES_TINY &&
		    (size_t)(sh->ndata + sh->nparity) * sh->len * sh->nstripes > CASES_TINY_BYTES)
			continue;
		for (int u = 0; u < 2; u++)
			run_shape(ops, e, sh, u, &s, tally);
	}
	for (unsigned i = 0; level >= CASES_FULL && i < 12; i++) {
		const struct shape sh = {
			.ndata = 1 + rnd_below(&s, i % 3 ? 24 : 255),
			.nparity = 1 + rnd_below(&s, 2),
			.len = 1 + rnd_below(&s, 9000),
			.nstripes = 1 + rnd_below(&s, 20),
		};

		run_shape(ops, e, &sh, rnd_below(&s, 2), &s, tally);
	}
	for (unsigned i = 0; level >= CASES_BIG && i < sizeof(big) / sizeof(big[0]); i++)
		run_shape(ops, e, &big[i], false, &s, tally);
	for (unsigned i = 0; level >= CASES_HUGE && i < sizeof(huge) / sizeof(huge[0]); i++)
		run_shape(ops, e, &huge[i], false, &s, tally);
}

int cases_one_gen(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed)
{
	struct graid_stripe_batch b;
	struct tset set;
	size_t bad;
	int rc;

	if (tset_alloc(&set, &seed, 4, 2, 4096, 4, false))
		return -ENOMEM;
	b = batch_of(&set);
	rc = ops->gen(e, &b);
	if (!rc && !parity_matches(&set, &bad))
		rc = -EBADMSG;
	tset_free(&set);
	return rc;
}

int cases_one_gen_at(const struct graid_backend_ops *ops, struct graid_engine *e,
		     uint64_t seed, uint8_t *mem)
{
	uint8_t *blocks[4 * 6];
	struct tset t = { .ndata = 4, .nparity = 2, .nblk = 6, .len = 4096, .nstripes = 4,
			  .mem = mem, .memlen = CASES_ONE_BYTES, .blocks = blocks };
	struct graid_stripe_batch b;
	size_t bad;
	int rc;

	for (size_t i = 0; i < tset_nblocks(&t); i++) {
		blocks[i] = mem + i * t.len;
		rnd_fill(&seed, blocks[i], t.len);
	}
	b = batch_of(&t);
	rc = ops->gen(e, &b);
	if (!rc && !parity_matches(&t, &bad))
		rc = -EBADMSG;
	return rc;
}

struct thread_arg {
	const struct graid_backend_ops *ops;
	struct graid_engine *e;
	uint64_t seed;
	struct cases_tally *tally;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	for (unsigned i = 0; i < 8; i++) {
		struct tset t;
		char what[64];

		snprintf(what, sizeof(what), "thread seed %llu round %u",
			 (unsigned long long)a->seed, i);
		if (tset_alloc(&t, &a->seed, 1 + rnd_below(&a->seed, 12), 2,
			       1 + rnd_below(&a->seed, 20000), 1 + rnd_below(&a->seed, 9), false)) {
			cases_expect(a->tally, false, "%s: out of memory", what);
			continue;
		}
		run_gen(a->ops, a->e, &t, what, a->tally);
		tset_free(&t);
	}
	return NULL;
}

void cases_threads(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed,
		   struct cases_tally *tally)
{
	pthread_t th[4];
	struct thread_arg args[4];

	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ ops, e, seed + 1000 * (i + 1), tally };
		if (pthread_create(&th[i], NULL, thread_main, &args[i]))
			th[i] = 0;
	}
	for (unsigned i = 0; i < 4; i++)
		if (th[i])
			pthread_join(th[i], NULL);
}
