/* SPDX-License-Identifier: MIT */
/* Timing every candidate routine once per process and routing each kind of work to the fastest. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/raid.h>

#include <libgraid/graid_backend.h>

#include "cpu_measure.h"

/*
 * Block size of the timed stripes: small, so the whole timing stays within a few
 * milliseconds and in cache (as the kernel's RAID-6 choice at boot), where the
 * routines' own costs, not the memory's, tell them apart.
 */
#define MEASURE_BLOCK 16384u
/* Blocks laid this far apart put each data block 64 bytes below the next in a page. */
#define MEASURE_ALIAS_STRIDE (MEASURE_BLOCK + 64u)
#define MEASURE_MAX_BLOCKS 24u
/*
 * Each candidate runs for this long, this many times, the candidates of a class taking
 * turns window by window; its best rate counts. Taking turns matters: a core just woken
 * from idle runs every routine slower for the first milliseconds of a process, and a
 * candidate timed whole before the others would lose to them for that alone
 * (docs/CPU-ENGINE.md has the measurements).
 */
#define MEASURE_WINDOW_NS 20000.0
#define MEASURE_ROUNDS 5
/*
 * An own variant this many times slower than the best in round 1 is not timed again: more
 * than the 40-70 % a slow stretch costs one window, so only a variant that cannot win.
 */
#define MEASURE_PRUNE 4.0
/* Back-to-back calls before any window is timed, so the core is busy when timing starts. */
#define MEASURE_WARM_NS 1000000.0
/*
 * pq_gen takes wide generation only this far ahead of the own winner. The 22+2 stripe of
 * the timing fits L2, where pq_gen comes close to the own routine, while from DRAM, where
 * wide stripes are generated in practice, it runs at about half its speed; timing larger
 * blocks instead did not separate them better (docs/CPU-ENGINE.md, "Loads before stores,
 * and Horner's chain", has the figures).
 */
#define MEASURE_WIDE_ISAL_MARGIN 1.25

/* The stripe each class is timed on, and the blocks it loses. */
static const struct {
	unsigned ndata, nparity, nlost, lost[2];
	const char *shape;
} measure_shape[GRAID_CPU_NCLASS] = {
	[GRAID_CPU_C_GEN_NARROW] = { .ndata = 8, .nparity = 2, .shape = "gen 8+2" },
	[GRAID_CPU_C_GEN_WIDE] = { .ndata = 22, .nparity = 2, .shape = "gen 22+2" },
	[GRAID_CPU_C_XOR] = { .ndata = 8, .nparity = 1, .shape = "gen 8+1" },
	[GRAID_CPU_C_REC1] = { .ndata = 8, .nparity = 2, .nlost = 1, .lost = { 3 },
			       .shape = "rec 1 data, 8+2" },
	[GRAID_CPU_C_REC2] = { .ndata = 8, .nparity = 2, .nlost = 2, .lost = { 2, 5 },
			       .shape = "rec 2 data, 8+2" },
	[GRAID_CPU_C_CHECK] = { .ndata = 8, .nparity = 2, .shape = "check 8+2" },
};

static const char *const measure_isal_name[GRAID_CPU_NCLASS] = {
	[GRAID_CPU_C_GEN_NARROW] = "pq_gen", [GRAID_CPU_C_GEN_WIDE] = "pq_gen",
	[GRAID_CPU_C_XOR] = "xor_gen",       [GRAID_CPU_C_REC1] = "xor_gen",
	[GRAID_CPU_C_REC2] = NULL, /* only ec_encode_data, twice the work of a syndrome pass */
	[GRAID_CPU_C_CHECK] = "pq_check",
};

static double measure_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct measure_run {
	enum graid_cpu_class cls;
	const struct graid_cpu_variant *v; /* NULL: ISA-L's routine */
	struct graid_cpu_plan plan;
	uint8_t *blk[MEASURE_MAX_BLOCKS];
	void *isal_ptr[MEASURE_MAX_BLOCKS];
	int isal_n;
};

static void measure_prepare(struct measure_run *r, enum graid_cpu_class c,
			    const struct graid_cpu_variant *v, uint8_t *base, size_t stride)
{
	const unsigned nd = measure_shape[c].ndata, np = measure_shape[c].nparity;
	const unsigned gs = v ? v->group_size : 0;

	r->cls = c;
	r->v = v;
	for (unsigned i = 0; i < nd + np; i++)
		r->blk[i] = base + i * stride;
	switch (c) {
	case GRAID_CPU_C_GEN_NARROW:
	case GRAID_CPU_C_GEN_WIDE:
	case GRAID_CPU_C_XOR:
		graid__cpu_plan_gen(&r->plan, nd, np, gs);
		break;
	case GRAID_CPU_C_REC1:
	case GRAID_CPU_C_REC2:
		graid__cpu_plan_recover(&r->plan, nd, np, measure_shape[c].nlost,
					measure_shape[c].lost, gs);
		break;
	case GRAID_CPU_C_CHECK:
	case GRAID_CPU_NCLASS:
		graid__cpu_plan_check(&r->plan, nd, np, gs);
		break;
	}
	/* ISA-L's pointer list: the stripe, except one lost block (its XOR's output) last. */
	r->isal_n = 0;
	for (unsigned i = 0; i < nd + np; i++)
		if (c != GRAID_CPU_C_REC1 || (i != measure_shape[c].lost[0] && i != nd + 1))
			r->isal_ptr[r->isal_n++] = r->blk[i];
	if (c == GRAID_CPU_C_REC1)
		r->isal_ptr[r->isal_n++] = r->blk[measure_shape[c].lost[0]];
}

static void measure_call(struct measure_run *r)
{
	if (r->v) {
		r->v->run(&r->plan, r->blk, MEASURE_BLOCK);
		return;
	}
	switch (r->cls) {
	case GRAID_CPU_C_GEN_NARROW:
	case GRAID_CPU_C_GEN_WIDE:
		pq_gen(r->isal_n, MEASURE_BLOCK, r->isal_ptr);
		break;
	case GRAID_CPU_C_XOR:
	case GRAID_CPU_C_REC1:
		xor_gen(r->isal_n, MEASURE_BLOCK, r->isal_ptr);
		break;
	case GRAID_CPU_C_CHECK:
		pq_check(r->isal_n, MEASURE_BLOCK, r->isal_ptr);
		break;
	default:
		break;
	}
}

/* GB/s of data blocks in one window of back-to-back calls. */
static double measure_window(struct measure_run *r)
{
	const double bytes = (double)measure_shape[r->cls].ndata * MEASURE_BLOCK;
	double t0 = measure_now(), t;
	unsigned long calls = 0;

	do {
		measure_call(r);
		calls++;
		t = measure_now() - t0;
	} while (t < MEASURE_WINDOW_NS);
	return calls * bytes / t;
}

/*
 * The n prepared runs whose run[k] is set take turns for MEASURE_ROUNDS windows each;
 * gbps[k] becomes each one's best window (left as it is for the others). An own variant
 * (k > 0) that ran at less than a MEASURE_PRUNE-th of the best in the first round sits
 * out the rest: it cannot win, and the portable `c` (6x behind on the AMD VM), whose one
 * call at 22+2 lasts 90 us, made most of the timing's 7.5 ms. Candidate 0 (ISA-L, whose
 * streaming stores make it swing from window to window) always runs every round.
 */
static void measure_turns(struct measure_run *r, const bool *run, unsigned n, double *gbps)
{
	bool live[GRAID_CPU_MAX_CAND];

	for (unsigned k = 0; k < n; k++)
		live[k] = run[k];
	for (int round = 0; round < MEASURE_ROUNDS; round++) {
		double best = 0;

		for (unsigned k = 0; k < n; k++) {
			const double v = live[k] ? measure_window(&r[k]) : 0;

			gbps[k] = v > gbps[k] ? v : gbps[k];
			best = gbps[k] > best ? gbps[k] : best;
		}
		for (unsigned k = 1; round == 0 && k < n; k++)
			if (gbps[k] * MEASURE_PRUNE < best)
				live[k] = false;
	}
}

/* Keep the core busy for MEASURE_WARM_NS on r's calls, timing nothing. */
static void measure_warm(struct measure_run *r)
{
	const double t0 = measure_now();

	while (measure_now() - t0 < MEASURE_WARM_NS)
		measure_call(r);
}

/* Consistent stripes (P and Q right), so check runs its whole clean path. */
static void measure_fill(uint8_t *base, size_t stride)
{
	uint8_t *blk[MEASURE_MAX_BLOCKS];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < MEASURE_MAX_BLOCKS; i++) {
		blk[i] = base + i * stride;
		for (unsigned j = 0; j < MEASURE_BLOCK; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blk[i][j] = (uint8_t)x;
		}
	}
	/*
	 * Every class's stripe but the wide one is 8 data blocks from block 0, and the P of
	 * 8+1 is the P of 8+2: what the timed calls write keeps this 8+2 stripe consistent.
	 */
	graid_gf_ref_gen(8, 2, 0, MEASURE_BLOCK, blk);
}

/* Without memory to time in: the order of the table, ISA-L where it used to be used. */
static void measure_defaults(struct graid_cpu_choice *ch, const struct graid_cpu_variant *best)
{
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++) {
		ch->own[c] = best;
		ch->isal[c] = c == GRAID_CPU_C_GEN_NARROW || c == GRAID_CPU_C_XOR;
	}
	ch->alias_rule = true;
}

void graid__cpu_measure(struct graid_cpu_choice *ch, const struct graid_cpu_variant *forced)
{
	/* aligned_alloc wants a multiple of the alignment (C11; ASan holds to it). */
	const size_t size = (MEASURE_MAX_BLOCKS * MEASURE_ALIAS_STRIDE + 4095u) & ~(size_t)4095u;
	double t0 = measure_now();
	/* One prepared run per candidate, so that they can take turns. */
	struct measure_run *r = malloc(GRAID_CPU_MAX_CAND * sizeof(*r));
	uint8_t *buf = aligned_alloc(4096, size);
	/* pq_gen and the narrow own winner on the aliased layout. */
	const bool both[2] = { true, true };
	double alias[2] = { 0, 0 };

	memset(ch, 0, sizeof(*ch));
	ch->forced = forced ? forced->name : NULL;
	ch->cand[ch->ncand++] = "ISA-L";
	for (unsigned i = 0; graid__cpu_variants[i] && ch->ncand < GRAID_CPU_MAX_CAND; i++)
		ch->cand[ch->ncand++] = graid__cpu_variants[i]->name;
	if (!r || !buf) {
		measure_defaults(ch, forced ? forced : graid__cpu_variant_pick(NULL, NULL));
		free(r);
		free(buf);
		return;
	}
	measure_fill(buf, MEASURE_BLOCK);
	measure_prepare(&r[0], GRAID_CPU_C_GEN_NARROW,
			forced ? forced : graid__cpu_variant_pick(NULL, NULL), buf, MEASURE_BLOCK);
	measure_warm(&r[0]);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++) {
		bool run[GRAID_CPU_MAX_CAND] = { false };
		double own_best = 0;

		for (unsigned k = 0; k < ch->ncand; k++) {
			const struct graid_cpu_variant *v = k ? graid__cpu_variants[k - 1] : NULL;

			run[k] = k == 0 ? measure_isal_name[c] != NULL
					: v->supported() && (!forced || v == forced);
			if (run[k])
				measure_prepare(&r[k], (enum graid_cpu_class)c, v, buf,
						MEASURE_BLOCK);
		}
		measure_turns(r, run, ch->ncand, ch->gbps[c]);
		for (unsigned k = 1; k < ch->ncand; k++)
			if (ch->gbps[c][k] > own_best) {
				own_best = ch->gbps[c][k];
				ch->own[c] = graid__cpu_variants[k - 1];
			}
		ch->isal[c] = ch->gbps[c][0] > own_best * (c == GRAID_CPU_C_GEN_WIDE
								   ? MEASURE_WIDE_ISAL_MARGIN
								   : 1.0);
	}
	/* The layout that stalls pq_gen's streaming stores: does it here? */
	measure_fill(buf, MEASURE_ALIAS_STRIDE);
	measure_prepare(&r[0], GRAID_CPU_C_GEN_NARROW, NULL, buf, MEASURE_ALIAS_STRIDE);
	measure_prepare(&r[1], GRAID_CPU_C_GEN_NARROW, ch->own[GRAID_CPU_C_GEN_NARROW], buf,
			MEASURE_ALIAS_STRIDE);
	measure_turns(r, both, 2, alias);
	ch->alias_isal = alias[0];
	ch->alias_own = alias[1];
	ch->alias_rule = ch->alias_own > ch->alias_isal;
	ch->usec = (measure_now() - t0) / 1e3;
	free(r);
	free(buf);
}

bool graid__cpu_stream_to_isal(const struct graid_cpu_choice *ch)
{
	/*
	 * From DRAM pq_gen ran 5-12 % ahead of the own streaming pass at 8+2 on the AMD VM
	 * (docs/CPU-ENGINE.md, "Streaming stores"); the timing runs in cache, where pq_gen's
	 * streaming stores cost it. Not where GRAID_CPU_PREFER=own keeps ISA-L out, nor on a
	 * CPU with AVX-512 or GFNI: there ISA-L's dispatcher picks a routine that writes by
	 * plain stores (2.30: pq_gen_avx512; 2.32: also pq_gen_avx2_gfni), and the own
	 * streaming pass is the one that streams. A later ISA-L may move this line.
	 */
	return (!ch->prefer || strcmp(ch->prefer, "own") != 0) && !graid__cpu_has_avx512bw() &&
	       !graid__cpu_variant_avx2_gfni.supported();
}

const char *graid__cpu_choice_name(const struct graid_cpu_choice *ch, enum graid_cpu_class c)
{
	return ch->isal[c] ? measure_isal_name[c] : ch->own[c]->name;
}

void graid__cpu_choice_describe(const struct graid_cpu_choice *ch, char *buf, size_t len)
{
	snprintf(buf, len, "CPU: own %s routines%s; gen %s/%s, xor %s, rec %s/%s, check %s",
		 ch->forced ? ch->forced : ch->own[GRAID_CPU_C_REC2]->name,
		 ch->forced ? " (forced)" : ch->prefer ? " (preferred)" : "",
		 graid__cpu_choice_name(ch, GRAID_CPU_C_GEN_NARROW),
		 graid__cpu_choice_name(ch, GRAID_CPU_C_GEN_WIDE),
		 graid__cpu_choice_name(ch, GRAID_CPU_C_XOR),
		 graid__cpu_choice_name(ch, GRAID_CPU_C_REC1),
		 graid__cpu_choice_name(ch, GRAID_CPU_C_REC2),
		 graid__cpu_choice_name(ch, GRAID_CPU_C_CHECK));
}

typedef void (*measure_log_fn)(int level, const char *fmt, ...);

static struct graid_cpu_choice measure_chosen;
static pthread_once_t measure_once = PTHREAD_ONCE_INIT;
static atomic_bool measure_logged;

static void measure_choose(void)
{
	const char *want = getenv("GRAID_CPU_VARIANT");
	const char *prefer = getenv("GRAID_CPU_PREFER");

	/* An unknown or unsupported name is logged by graid__cpu_variant_pick() at open. */
	graid__cpu_measure(&measure_chosen, want && *want ? graid__cpu_variant_find(want)
							  : NULL);
	/*
	 * Tests and comparisons: every class ISA-L has a routine for to ISA-L ("isal"), or
	 * none ("own"), whatever the timing said; the layout rule follows.
	 */
	if (prefer && (!strcmp(prefer, "isal") || !strcmp(prefer, "own"))) {
		for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
			measure_chosen.isal[c] = measure_isal_name[c] && !strcmp(prefer, "isal");
		measure_chosen.alias_rule = !strcmp(prefer, "own");
		measure_chosen.prefer = prefer;
	}
}

static void measure_log(const struct graid_cpu_choice *ch, measure_log_fn log)
{
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++) {
		char line[256];
		int n = snprintf(line, sizeof(line), "%s:", measure_shape[c].shape);

		for (unsigned k = 0; k < ch->ncand && n > 0 && (size_t)n < sizeof(line); k++)
			if (ch->gbps[c][k] > 0)
				n += snprintf(line + n, sizeof(line) - (size_t)n, " %s %.1f",
					      k ? ch->cand[k] : measure_isal_name[c],
					      ch->gbps[c][k]);
		log(GRAID_LOG_INFO, "isal: measured %s -> %s", line,
		    graid__cpu_choice_name(ch, (enum graid_cpu_class)c));
	}
	if (ch->prefer)
		log(GRAID_LOG_INFO, "isal: GRAID_CPU_PREFER=%s overrides the measurement", ch->prefer);
	log(GRAID_LOG_INFO,
	    "isal: pq_gen %.1f, %s %.1f GB/s with a data block 64 bytes below the next in a page: "
	    "such narrow stripes go to %s (%.0f us in all, %u KiB blocks, one thread)",
	    ch->alias_isal, ch->own[GRAID_CPU_C_GEN_NARROW]->name, ch->alias_own,
	    ch->alias_rule ? ch->own[GRAID_CPU_C_GEN_NARROW]->name : "pq_gen", ch->usec,
	    MEASURE_BLOCK >> 10);
}

const struct graid_cpu_choice *graid__cpu_choice(measure_log_fn log)
{
	pthread_once(&measure_once, measure_choose);
	if (log && !atomic_exchange(&measure_logged, true)) {
		const char *want = getenv("GRAID_CPU_VARIANT");

		/* A name this CPU does not run is said once, here: the choice went on without it. */
		if (want && *want && !graid__cpu_variant_find(want))
			(void)graid__cpu_variant_pick(want, log);
		measure_log(&measure_chosen, log);
	}
	return &measure_chosen;
}
