/* SPDX-License-Identifier: MIT */
/* The "isal" CPU engine: ISA-L's xor/pq generation, libgraid's own SIMD recovery and check. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/raid.h>

#include <libgraid/graid_backend.h>

#include "cpu_measure.h"
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
/* Byte ranges of a split stripe start on cache lines: no line is written by two threads. */
#define ISAL_RANGE_ALIGN 64u

struct graid_engine {
	void (*log)(int level, const char *fmt, ...);
	const struct graid_cpu_choice *ch;   /* which routine does what, measured per process */
	struct graid_cpu_pool *pool;         /* shared; NULL: one thread (GRAID_CPU_THREADS=1) */
	size_t thread_min;                   /* data bytes from which a batch is split */
	size_t stream_min;                   /* batch bytes from which results stream */
	bool stream_isal;                    /* graid__cpu_stream_to_isal() */
	atomic_bool told_unaligned;
};

static int isal_probe(struct graid_backend_info *info)
{
	/* Times the routines on the process's first call (a few ms); only reads after that. */
	graid__cpu_choice_describe(graid__cpu_choice(NULL), info->device, sizeof(info->device));
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

/* One attribute of cpu0's cache index i from /sys into buf (""  where it is not there). */
static void isal_cache_attr(unsigned i, const char *name, char *buf, size_t len)
{
	char path[96];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/%s", i, name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The last-level cache, in bytes, as the OS describes cpu0's caches (the highest level
 * that holds data); SIZE_MAX where it says nothing: then only the caller's hint streams.
 * Not sysconf's figure: glibc reads it from cpuid, which in a VM on an AMD EPYC gave the
 * whole socket's 256 MiB where this vCPU's share is 32 MiB.
 */
static size_t isal_llc_bytes(void)
{
	unsigned long best_level = 0;
	size_t best = SIZE_MAX;

	for (unsigned i = 0; i < 16; i++) {
		char type[32], level[16], size[32], *end;
		unsigned long long n;
		unsigned long lv;

		isal_cache_attr(i, "type", type, sizeof(type));
		if (!type[0])
			break; /* no index i: the list has ended */
		if (strcmp(type, "Unified") && strcmp(type, "Data"))
			continue;
		isal_cache_attr(i, "level", level, sizeof(level));
		isal_cache_attr(i, "size", size, sizeof(size));
		lv = strtoul(level, NULL, 10);
		n = strtoull(size, &end, 10);
		/* "32768K" (the kernel's form), or "32M". */
		n <<= *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
		if (lv > best_level && n) {
			best_level = lv;
			best = (size_t)n;
		}
	}
	return best;
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
	e->ch = graid__cpu_choice(cfg->log);
	/* Every online CPU by default: a batch big enough to split is worth all of them. */
	nthreads = isal_env_count(e, "GRAID_CPU_THREADS", online > 0 ? (unsigned long long)online
								      : 1);
	if (nthreads > GRAID_CPU_MAX_THREADS)
		nthreads = GRAID_CPU_MAX_THREADS;
	e->thread_min = (size_t)isal_env_count(e, "GRAID_CPU_THREAD_MIN", ISAL_THREAD_MIN_DEFAULT);
	e->stream_min = (size_t)isal_env_count(e, "GRAID_CPU_STREAM_MIN", isal_llc_bytes());
	e->stream_isal = graid__cpu_stream_to_isal(e->ch);
	rc = graid__cpu_pool_get(&e->pool, (unsigned)nthreads, e->log);
	if (rc) {
		free(e);
		return rc;
	}
	if (e->pool)
		e->log(GRAID_LOG_INFO, "isal: %u threads for batches of %zu data bytes or more",
		       graid__cpu_pool_threads(e->pool), e->thread_min);
	if (e->stream_min == SIZE_MAX)
		e->log(GRAID_LOG_INFO, "isal: results stream past the caches when the caller asks "
				       "(no last-level cache size known)");
	else
		e->log(GRAID_LOG_INFO, "isal: results stream past the caches for batches of %zu "
				       "bytes or more, or when the caller asks",
		       e->stream_min);
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

/*
 * Whether pq_gen's streaming stores would stall on this stripe's layout (see
 * graid_cpu_alias()): such stripes go to the own routine, which then does not stream.
 */
static bool isal_pq_aliases(uint8_t *const *blk, unsigned ndata)
{
	for (unsigned p = ndata; p < ndata + 2; p++)
		for (unsigned k = 0; k < ndata; k++)
			if (graid_cpu_alias(blk[p], blk[k]))
				return true;
	return false;
}

/*
 * One of ISA-L's routines (all take int vects, int len, void **array) over bytes
 * [off, off + n) of the blocks v, in pieces of at most ISAL_PIECE bytes. Returns the first
 * non-zero result: a refusal for generation, a mismatch for pq_check.
 */
static int isal_body(int (*fn)(int, int, void **), uint8_t *const *v, unsigned nv, size_t off,
		     size_t n)
{
	void *p[ISAL_MAX_BLOCKS];
	int rc;

	for (size_t done = 0; done < n;) {
		int piece = (int)(n - done < ISAL_PIECE ? n - done : ISAL_PIECE);

		for (unsigned i = 0; i < nv; i++)
			p[i] = v[i] + off + done;
		rc = fn((int)nv, piece, p);
		if (rc)
			return rc;
		done += (size_t)piece;
	}
	return 0;
}

/*
 * ISA-L's pq_gen and xor_gen write by streaming stores in their AVX2 and SSE routines and
 * do not fence them: fence once per call that may have run them, so that what the caller
 * does next (a completion another thread reads, a buffer handed to a drive) comes after
 * their results, as the own pass does for its own (cpu_simd_pass.h).
 */
static inline void isal_fence(void)
{
#if defined(__x86_64__)
	__builtin_ia32_sfence();
#endif
}

/* The class of a generation batch: how the choice routes it. */
static enum graid_cpu_class isal_gen_class(const struct graid_stripe_batch *b)
{
	if (b->nparity == 1)
		return GRAID_CPU_C_XOR;
	return b->ndata <= GRAID_CPU_NARROW_MAX ? GRAID_CPU_C_GEN_NARROW : GRAID_CPU_C_GEN_WIDE;
}

/* stream: the batch's results go by streaming stores where the own routine runs. */
static int isal_gen_serial(struct graid_engine *e, const struct graid_stripe_batch *b,
			   bool stream)
{
	const unsigned nblk = b->ndata + b->nparity;
	const enum graid_cpu_class cls = isal_gen_class(b);
	const struct graid_cpu_variant *own = e->ch->own[cls];
	/*
	 * Where the measurement found ISA-L faster, and streaming narrow P+Q where pq_gen
	 * streams (graid__cpu_stream_to_isal()); never where the layout stalls pq_gen.
	 */
	const bool use_isal = e->ch->isal[cls] ||
			      (stream && cls == GRAID_CPU_C_GEN_NARROW && e->stream_isal);
	const bool alias_rule = b->nparity == 2 && e->ch->alias_rule;
	struct graid_cpu_plan plan;
	bool have_plan = false;
	size_t head = 0, body = 0;

	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;

		if (b->ndata == 1) {
			/* P = D and Q = g^0 * D = D; ISA-L wants at least two sources. */
			for (unsigned p = 1; p < nblk; p++)
				memmove(blk[p], blk[0], b->len);
			continue;
		}
		const bool split = use_isal && isal_split(blk, nblk, b->len, ISAL_ALIGN, &head,
							  &body);

		if (split && !(alias_rule && isal_pq_aliases(blk, b->ndata))) {
			graid_gf_ref_gen(b->ndata, b->nparity, 0, head, blk);
			if (body && isal_body(b->nparity == 1 ? xor_gen : pq_gen, blk, nblk, head,
					      body)) {
				e->log(GRAID_LOG_ERR, "isal: %s refused %u blocks of %zu bytes",
				       b->nparity == 1 ? "xor_gen" : "pq_gen", nblk, body);
				return -EIO;
			}
			graid_gf_ref_gen(b->ndata, b->nparity, head + body, b->len - head - body,
					 blk);
			continue;
		}
		/* ISA-L needs a common alignment; libgraid's routines take any. */
		if (e->ch->isal[cls] && !split)
			isal_note_unaligned(e);
		if (!have_plan) {
			graid__cpu_plan_gen(&plan, b->ndata, b->nparity, own->group_size);
			plan.stream = stream;
			have_plan = true;
		}
		own->run(&plan, blk, b->len);
	}
	if (use_isal)
		isal_fence();
	return 0;
}

/*
 * One lost block is the XOR of the plan's sources: xor_gen, where the measurement found
 * it faster and the blocks share an alignment. Returns false to leave it to the own pass.
 */
static bool isal_recover_xor(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len)
{
	uint8_t *v[ISAL_MAX_BLOCKS];
	size_t head, body;

	for (unsigned j = 0; j < pl->nsrc; j++)
		v[j] = blk[pl->src[j]];
	v[pl->nsrc] = blk[pl->dst[0]];
	/* xor_gen refuses fewer than three vectors: one source is the own pass's. */
	if (pl->nsrc < 2 || !isal_split(v, pl->nsrc + 1, len, ISAL_ALIGN, &head, &body) ||
	    (body && isal_body(xor_gen, v, pl->nsrc + 1, head, body)))
		return false;
	graid__cpu_ref_range(pl, blk, 0, head);
	graid__cpu_ref_range(pl, blk, head + body, len - head - body);
	return true;
}

/*
 * The recovery plan of this thread's last batch. A rebuild or a degraded read asks for the
 * same loss again and again, and making a plan (its constants, its source list) cost
 * more than the arithmetic of a 4 KiB stripe (docs/CPU-ENGINE.md, "Dispatch").
 */
static _Thread_local struct {
	bool valid;
	unsigned ndata, nparity, nlost, lost[2], group_size;
	struct graid_cpu_plan plan;
} isal_last_recover;

static struct graid_cpu_plan *isal_recover_plan(const struct graid_stripe_batch *b,
						unsigned group_size)
{
	unsigned lost1 = b->nlost > 1 ? b->lost[1] : ~0u;

	if (!isal_last_recover.valid || isal_last_recover.ndata != b->ndata ||
	    isal_last_recover.nparity != b->nparity || isal_last_recover.nlost != b->nlost ||
	    isal_last_recover.lost[0] != b->lost[0] || isal_last_recover.lost[1] != lost1 ||
	    isal_last_recover.group_size != group_size) {
		graid__cpu_plan_recover(&isal_last_recover.plan, b->ndata, b->nparity, b->nlost,
					b->lost, group_size);
		isal_last_recover.ndata = b->ndata;
		isal_last_recover.nparity = b->nparity;
		isal_last_recover.nlost = b->nlost;
		isal_last_recover.lost[0] = b->lost[0];
		isal_last_recover.lost[1] = lost1;
		isal_last_recover.group_size = group_size;
		isal_last_recover.valid = true;
	}
	return &isal_last_recover.plan;
}

/*
 * Recovery is libgraid's own (ISA-L has only ec_encode_data on an inverted matrix, twice
 * the work of one syndrome pass), but for one lost block, where xor_gen may be faster.
 */
static int isal_recover_serial(struct graid_engine *e, const struct graid_stripe_batch *b,
			       bool stream)
{
	const unsigned nblk = b->ndata + b->nparity;
	struct graid_cpu_plan *plan;
	enum graid_cpu_class cls;
	const struct graid_cpu_variant *own;

	/* One lost block but Q is an XOR of the others (the plan's GRAID_CPU_XOR). */
	cls = b->nlost == 1 && b->lost[0] != b->ndata + 1u ? GRAID_CPU_C_REC1 : GRAID_CPU_C_REC2;
	own = e->ch->own[cls];
	plan = isal_recover_plan(b, own->group_size);
	plan->stream = stream;
	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;

		if (!(e->ch->isal[cls] && isal_recover_xor(plan, blk, b->len)))
			own->run(plan, blk, b->len);
	}
	if (e->ch->isal[cls])
		isal_fence();
	return 0;
}

/*
 * Whether a RAID-6 stripe is clean by pq_check (the unaligned head and tail by the
 * reference): false also where it cannot take it, with *done false.
 */
static bool isal_check_clean(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len,
			     bool *done)
{
	size_t head, body;

	*done = isal_split(blk, pl->ndata + 2, len, ISAL_ALIGN, &head, &body);
	if (!*done)
		return false;
	if (body && isal_body(pq_check, blk, pl->ndata + 2, head, body))
		return false;
	return graid__cpu_ref_range(pl, blk, 0, head) &&
	       graid__cpu_ref_range(pl, blk, head + body, len - head - body);
}

/*
 * The common case (clean) runs at SIMD speed; any mismatch is re-examined byte-wise by the
 * reference, which alone can name the wrong block: the rare path is the obvious one.
 */
static long isal_check_serial(struct graid_engine *e, const struct graid_stripe_batch *b,
			      int32_t *result)
{
	const unsigned nblk = b->ndata + b->nparity;
	const struct graid_cpu_variant *own = e->ch->own[GRAID_CPU_C_CHECK];
	const bool use_isal = b->nparity == 2 && e->ch->isal[GRAID_CPU_C_CHECK];
	struct graid_cpu_plan plan;
	long bad = 0;

	graid__cpu_plan_check(&plan, b->ndata, b->nparity, own->group_size);
	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;
		int v = GRAID_CHECK_CLEAN;
		bool done = false, clean = use_isal && isal_check_clean(&plan, blk, b->len, &done);

		if (!done)
			clean = own->run(&plan, blk, b->len);
		if (!clean)
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
	bool stream;           /* gen, recover: the whole batch's isal_streams() */
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
		return isal_gen_serial(sp->e, &sub, sp->stream);
	case ISAL_RECOVER:
		return isal_recover_serial(sp->e, &sub, sp->stream);
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

/*
 * Whether batch b's results go past the caches: the caller said they go to the drives
 * (GRAID_BATCH_F_STREAM), or the batch is larger than the last-level cache, so that its
 * first results are gone from it before the caller could read them.
 */
static bool isal_streams(const struct graid_engine *e, const struct graid_stripe_batch *b)
{
	if (b->struct_size >= offsetof(struct graid_stripe_batch, flags) + sizeof(b->flags) &&
	    (b->flags & GRAID_BATCH_F_STREAM))
		return true;
	return b->nstripes * (b->ndata + b->nparity) * b->len >= e->stream_min;
}

static int isal_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	struct isal_split sp;
	const bool stream = isal_streams(e, b);
	size_t n = isal_split_plan(e, b, &sp);

	if (!n)
		return isal_gen_serial(e, b, stream);
	sp.op = ISAL_GEN;
	sp.stream = stream;
	return graid__cpu_pool_run(e->pool, n, isal_piece, &sp);
}

static int isal_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	struct isal_split sp;
	const bool stream = isal_streams(e, b);
	size_t n = isal_split_plan(e, b, &sp);

	if (!n)
		return isal_recover_serial(e, b, stream);
	sp.op = ISAL_RECOVER;
	sp.stream = stream;
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

/* Declared in lib/core/engine/engine.h: the isal engine is built into the core library. */
const struct graid_backend_ops *graid__isal_ops(void);

const struct graid_backend_ops *graid__isal_ops(void)
{
	return &isal_ops;
}
