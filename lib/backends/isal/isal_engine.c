/* SPDX-License-Identifier: MIT */
/* The "isal" CPU engine: ISA-L's xor/pq generation, libgraid's own SIMD recovery and check. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/raid.h>

#include <libgraid/graid_backend.h>

#include "cpu_pool.h"
#include "cpu_variants.h"

/* ISA-L's vector routines want 32-byte aligned pointers and lengths. */
#define ISAL_ALIGN 32u
/* ISA-L takes int lengths: longer blocks go through in pieces of this many bytes. */
#define ISAL_PIECE (1u << 30)
#define ISAL_MAX_BLOCKS (GRAID_GF_MAX_DATA + 2)
/*
 * Batches of at least this many data bytes are split over the worker threads; below it,
 * waking a worker costs more than it saves: about 16 us a call here, break-even near 2 MiB
 * in cache (docs/CPU-ENGINE.md). GRAID_CPU_THREAD_MIN sets another.
 */
#define ISAL_THREAD_MIN_DEFAULT (4u << 20)
/*
 * Pieces per thread of a split call: more than one, so that a thread the scheduler
 * holds back (a shared machine) leaves its share to the others instead of to the end.
 */
#define ISAL_PIECES_PER_THREAD 4u
/*
 * pq_gen's streaming stores stall when a data block lies a little below P or Q within a
 * 4 KiB page (a load then matches the low 12 bits of a store still in flight): blocks
 * 64 KiB + 32 or + 64 bytes apart ran at a fifth of the speed, 512 or 2048 bytes apart did
 * not (docs/CPU-ENGINE.md). Such stripes go to the own routine, which does not stall.
 */
#define ISAL_ALIAS_PAGE 4096u
#define ISAL_ALIAS_WINDOW 1024u
/* Byte ranges of a split stripe start on cache lines: no line is written by two threads. */
#define ISAL_RANGE_ALIGN 64u

struct graid_engine {
	void (*log)(int level, const char *fmt, ...);
	const struct graid_cpu_variant *cpu; /* libgraid's routines for this CPU */
	struct graid_cpu_pool *pool;         /* shared; NULL: one thread (GRAID_CPU_THREADS=1) */
	size_t thread_min;                   /* data bytes from which a batch is split */
	atomic_bool told_unaligned;
};

static int isal_probe(struct graid_backend_info *info)
{
	/* Side-effect free: name the variant open would choose, without choosing or logging. */
	const struct graid_cpu_variant *v = graid__cpu_variant_pick(getenv("GRAID_CPU_VARIANT"),
								    NULL);

	if (v->gen_pq_from && v->gen_pq_from <= 2) /* one data block is a copy: every width */
		snprintf(info->device, sizeof(info->device),
			 "CPU: own %s routines (recovery, check, P+Q), ISA-L (xor_gen)", v->name);
	else if (v->gen_pq_from)
		snprintf(info->device, sizeof(info->device),
			 "CPU: own %s routines (recovery, check, P+Q from %u data blocks), ISA-L "
			 "(xor_gen, narrower pq_gen)",
			 v->name, v->gen_pq_from);
	else
		snprintf(info->device, sizeof(info->device),
			 "CPU: own %s routines (recovery, check), ISA-L (xor_gen, pq_gen)", v->name);
	info->flags = GRAID_BACKEND_F_HOST_MEMORY;
	return 0;
}

/*
 * A positive integer from the environment, or dflt when unset. A value that is not one
 * is logged and ignored: a typo must not silently change how the engine runs.
 */
static unsigned long long isal_env_count(struct graid_engine *e, const char *name,
					 unsigned long long dflt)
{
	const char *v = getenv(name);
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return dflt;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n == 0 || v[0] == '-') {
		e->log(GRAID_LOG_WARNING, "isal: %s=%s is not a positive integer; using %llu", name,
		       v, dflt);
		return dflt;
	}
	return n;
}

static int isal_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	struct graid_engine *e = calloc(1, sizeof(*e));
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long nthreads;
	int rc;

	if (!e)
		return -ENOMEM;
	e->log = cfg->log;
	e->cpu = graid__cpu_variant(cfg->log);
	/* Every online CPU by default: a batch big enough to split is worth all of them. */
	nthreads = isal_env_count(e, "GRAID_CPU_THREADS", online > 0 ? (unsigned long long)online
								      : 1);
	if (nthreads > GRAID_CPU_MAX_THREADS)
		nthreads = GRAID_CPU_MAX_THREADS;
	e->thread_min = (size_t)isal_env_count(e, "GRAID_CPU_THREAD_MIN", ISAL_THREAD_MIN_DEFAULT);
	rc = graid__cpu_pool_get(&e->pool, (unsigned)nthreads, e->log);
	if (rc) {
		free(e);
		return rc;
	}
	if (e->pool)
		e->log(GRAID_LOG_INFO, "isal: %u threads for batches of %zu data bytes or more",
		       graid__cpu_pool_threads(e->pool), e->thread_min);
	*out = e;
	return 0;
}

static void isal_close(struct graid_engine *e)
{
	graid__cpu_pool_put(e->pool);
	free(e);
}

/*
 * Split [0, len) of a stripe into a head and tail done byte-wise and a 32-byte aligned body
 * for ISA-L. Returns false when the blocks are not equally misaligned, so no common body
 * exists; the caller then does the whole stripe byte-wise.
 */
static bool isal_split(uint8_t *const *blk, unsigned nblk, size_t len, size_t align,
		       size_t *head, size_t *body)
{
	uintptr_t mis = (uintptr_t)blk[0] & (align - 1);

	for (unsigned i = 1; i < nblk; i++)
		if (((uintptr_t)blk[i] & (align - 1)) != mis)
			return false;
	*head = (align - mis) & (align - 1);
	if (*head > len)
		*head = len;
	*body = (len - *head) & ~(size_t)(align - 1);
	return true;
}

static void isal_note_unaligned(struct graid_engine *e)
{
	if (!atomic_exchange(&e->told_unaligned, true))
		e->log(GRAID_LOG_INFO, "isal: blocks of unequal alignment are generated by "
				       "libgraid's own routines; align blocks to 32 bytes for "
				       "ISA-L's");
}

/* Whether pq_gen would stall on this stripe's layout (see ISAL_ALIAS_WINDOW). */
static bool isal_pq_aliases(uint8_t *const *blk, unsigned ndata)
{
	for (unsigned p = ndata; p < ndata + 2; p++)
		for (unsigned k = 0; k < ndata; k++) {
			uintptr_t d = ((uintptr_t)blk[p] - (uintptr_t)blk[k]) & (ISAL_ALIAS_PAGE - 1);

			if (d && d < ISAL_ALIAS_WINDOW)
				return true;
		}
	return false;
}

static int isal_gen_body(unsigned ndata, unsigned nparity, size_t off, size_t n,
			 uint8_t *const *blk)
{
	void *v[ISAL_MAX_BLOCKS];
	unsigned nblk = ndata + nparity;

	for (size_t done = 0; done < n;) {
		int piece = (int)(n - done < ISAL_PIECE ? n - done : ISAL_PIECE);

		for (unsigned i = 0; i < nblk; i++)
			v[i] = blk[i] + off + done;
		if (nparity == 1 ? xor_gen((int)nblk, piece, v) : pq_gen((int)nblk, piece, v))
			return -EIO;
		done += (size_t)piece;
	}
	return 0;
}

static int isal_gen_serial(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	const unsigned nblk = b->ndata + b->nparity;
	/*
	 * Wide RAID-6 stripes go to libgraid's own routine: pq_gen reads every block at once,
	 * and blocks 64 KiB apart then fight over the same cache sets (docs/CPU-ENGINE.md).
	 * So do narrow ones whose layout stalls pq_gen. xor_gen keeps up at every width and
	 * stays.
	 */
	const bool own = b->nparity == 2 && e->cpu->gen_pq_from &&
			 b->ndata >= e->cpu->gen_pq_from;
	struct graid_cpu_plan plan;
	bool have_plan = false, common;
	size_t head = 0, body = 0;

	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;

		if (b->ndata == 1) {
			/* P = D and Q = g^0 * D = D; ISA-L wants at least two sources. */
			for (unsigned p = 1; p < nblk; p++)
				memmove(blk[p], blk[0], b->len);
			continue;
		}
		common = !own && isal_split(blk, nblk, b->len, ISAL_ALIGN, &head, &body);
		if (!common || (b->nparity == 2 && e->cpu->gen_pq_from &&
				isal_pq_aliases(blk, b->ndata))) {
			/* ISA-L needs a common alignment; libgraid's routines take any. */
			if (!own && !common)
				isal_note_unaligned(e);
			if (!have_plan)
				graid__cpu_plan_gen(&plan, b->ndata, b->nparity,
						    e->cpu->group_size);
			have_plan = true;
			e->cpu->run(&plan, blk, b->len);
			continue;
		}
		graid_gf_ref_gen(b->ndata, b->nparity, 0, head, blk);
		if (body && isal_gen_body(b->ndata, b->nparity, head, body, blk)) {
			e->log(GRAID_LOG_ERR, "isal: %s refused %u blocks of %zu bytes",
			       b->nparity == 1 ? "xor_gen" : "pq_gen", nblk, body);
			return -EIO;
		}
		graid_gf_ref_gen(b->ndata, b->nparity, head + body, b->len - head - body, blk);
	}
	return 0;
}

/*
 * ISA-L's recovery (ec_encode_data on an inverted matrix) and check (pq_check, SSE only in
 * 2.30) are its weak spots; libgraid's own routines do both in one pass over the survivors,
 * with the constants of the lost case applied at the end (see docs/CPU-ENGINE.md).
 */
static int isal_recover_serial(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	const unsigned nblk = b->ndata + b->nparity;
	struct graid_cpu_plan plan;

	graid__cpu_plan_recover(&plan, b->ndata, b->nparity, b->nlost, b->lost,
				e->cpu->group_size);
	for (size_t s = 0; s < b->nstripes; s++)
		e->cpu->run(&plan, b->blocks + s * nblk, b->len);
	return 0;
}

/*
 * The common case (clean) runs at SIMD speed; any mismatch is re-examined byte-wise by the
 * reference, which alone can name the wrong block: the rare path is the obvious one.
 */
static long isal_check_serial(struct graid_engine *e, const struct graid_stripe_batch *b,
			      int32_t *result)
{
	const unsigned nblk = b->ndata + b->nparity;
	struct graid_cpu_plan plan;
	long bad = 0;

	graid__cpu_plan_check(&plan, b->ndata, b->nparity, e->cpu->group_size);
	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;
		int v = GRAID_CHECK_CLEAN;

		if (!e->cpu->run(&plan, blk, b->len))
			v = graid_gf_ref_check(b->ndata, b->nparity, b->len, blk);
		if (result)
			result[s] = v;
		bad += v != GRAID_CHECK_CLEAN;
	}
	return bad;
}

/*
 * Threads. A batch of at least thread_min data bytes is cut into pieces that the pool's
 * threads share: runs of whole stripes when there are enough stripes, else byte ranges of
 * each stripe (a few huge stripes). Every byte of a stripe depends only on the same byte of
 * its other blocks, so a range is a stripe of its own: each piece runs the one-thread code
 * on it, and the results are those of one thread, bit for bit.
 */
enum isal_op { ISAL_GEN, ISAL_RECOVER, ISAL_CHECK };

/* Stripes a check cut into ranges may have: fewer than the pieces of one call. */
#define ISAL_SPLIT_MAX_STRIPES (GRAID_CPU_MAX_THREADS * ISAL_PIECES_PER_THREAD)

struct isal_split {
	struct graid_engine *e;
	const struct graid_stripe_batch *b;
	enum isal_op op;
	int32_t *result;       /* check: verdicts, or NULL */
	size_t per_piece;      /* stripe runs: stripes per piece */
	size_t ranges;         /* byte ranges per stripe; 0: pieces are runs of stripes */
	size_t range;          /* bytes per range, a multiple of ISAL_RANGE_ALIGN */
	atomic_long bad;       /* check, stripe runs: stripes that are not clean */
	/* check, byte ranges: a range of stripe s is not clean (named afterwards, whole) */
	atomic_bool dirty[ISAL_SPLIT_MAX_STRIPES];
};

static int isal_piece(void *arg, size_t i)
{
	struct isal_split *sp = arg;
	const struct graid_stripe_batch *b = sp->b;
	const unsigned nblk = b->ndata + b->nparity;
	struct graid_stripe_batch sub = *b;
	uint8_t *ptr[ISAL_MAX_BLOCKS];
	size_t s0 = 0;
	long bad;

	if (!sp->ranges) {
		s0 = i * sp->per_piece;
		sub.nstripes = b->nstripes - s0 < sp->per_piece ? b->nstripes - s0 : sp->per_piece;
		sub.blocks = b->blocks + s0 * nblk;
	} else {
		const size_t off = (i % sp->ranges) * sp->range;

		s0 = i / sp->ranges;
		for (unsigned k = 0; k < nblk; k++)
			ptr[k] = b->blocks[s0 * nblk + k] + off;
		sub.nstripes = 1;
		sub.len = b->len - off < sp->range ? b->len - off : sp->range;
		sub.blocks = ptr;
	}
	switch (sp->op) {
	case ISAL_GEN:
		return isal_gen_serial(sp->e, &sub);
	case ISAL_RECOVER:
		return isal_recover_serial(sp->e, &sub);
	case ISAL_CHECK:
		break;
	}
	bad = isal_check_serial(sp->e, &sub,
				sp->ranges || !sp->result ? NULL : sp->result + s0);
	if (bad < 0)
		return (int)bad;
	if (sp->ranges && bad)
		atomic_store(&sp->dirty[s0], true);
	else if (!sp->ranges)
		atomic_fetch_add(&sp->bad, bad);
	return 0;
}

/* How to cut batch b for the pool: the number of pieces, or 0 to run it on this thread. */
static size_t isal_split_plan(struct graid_engine *e, const struct graid_stripe_batch *b,
			      struct isal_split *sp)
{
	unsigned nthreads;
	size_t want, per_range;

	/* Small batches first: they are the common case, and the count asks getpid(). */
	if (!e->pool || b->nstripes * b->ndata * b->len < e->thread_min)
		return 0;
	nthreads = graid__cpu_pool_threads(e->pool);
	if (nthreads <= 1)
		return 0;
	want = (size_t)nthreads * ISAL_PIECES_PER_THREAD;
	sp->e = e;
	sp->b = b;
	if (b->nstripes >= want) {
		sp->ranges = 0;
		sp->per_piece = (b->nstripes + want - 1) / want;
		return (b->nstripes + sp->per_piece - 1) / sp->per_piece;
	}
	/* Few stripes: as many ranges of each as make up `want` pieces in all. */
	sp->ranges = (want + b->nstripes - 1) / b->nstripes;
	per_range = (b->len + sp->ranges - 1) / sp->ranges;
	sp->range = (per_range + ISAL_RANGE_ALIGN - 1) & ~(size_t)(ISAL_RANGE_ALIGN - 1);
	sp->ranges = (b->len + sp->range - 1) / sp->range;
	if (sp->ranges * b->nstripes <= 1)
		return 0;
	return sp->ranges * b->nstripes;
}

static int isal_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	struct isal_split sp;
	size_t n = isal_split_plan(e, b, &sp);

	if (!n)
		return isal_gen_serial(e, b);
	sp.op = ISAL_GEN;
	return graid__cpu_pool_run(e->pool, n, isal_piece, &sp);
}

static int isal_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	struct isal_split sp;
	size_t n = isal_split_plan(e, b, &sp);

	if (!n)
		return isal_recover_serial(e, b);
	sp.op = ISAL_RECOVER;
	return graid__cpu_pool_run(e->pool, n, isal_piece, &sp);
}

static long isal_check(struct graid_engine *e, const struct graid_stripe_batch *b,
		       int32_t *result)
{
	const unsigned nblk = b->ndata + b->nparity;
	struct isal_split sp;
	size_t n = isal_split_plan(e, b, &sp);
	long bad = 0;
	int rc;

	if (!n)
		return isal_check_serial(e, b, result);
	sp.op = ISAL_CHECK;
	sp.result = result;
	atomic_init(&sp.bad, 0);
	for (size_t s = 0; sp.ranges && s < b->nstripes; s++)
		atomic_init(&sp.dirty[s], false);
	rc = graid__cpu_pool_run(e->pool, n, isal_piece, &sp);
	if (rc)
		return rc;
	if (!sp.ranges)
		return atomic_load(&sp.bad);
	/* Ranges only say whether a stripe is clean; the reference names the block, whole. */
	for (size_t s = 0; s < b->nstripes; s++) {
		int v = GRAID_CHECK_CLEAN;

		if (atomic_load(&sp.dirty[s]))
			v = graid_gf_ref_check(b->ndata, b->nparity, b->len, b->blocks + s * nblk);
		if (result)
			result[s] = v;
		bad += v != GRAID_CHECK_CLEAN;
	}
	return bad;
}

static const struct graid_backend_ops isal_ops = {
	GRAID_BACKEND_OPS_HEADER,
	.name = "isal",
	.description = "CPU engine: libgraid's SIMD parity routines and ISA-L's",
	.probe = isal_probe,
	.open = isal_open,
	.close = isal_close,
	.gen = isal_gen,
	.recover = isal_recover,
	.check = isal_check,
};

/* Declared in lib/core/internal.h: the isal engine is built into the core library. */
const struct graid_backend_ops *graid__isal_ops(void);

const struct graid_backend_ops *graid__isal_ops(void)
{
	return &isal_ops;
}
