/* SPDX-License-Identifier: MIT */
/* libgraid's own CPU parity routines: the per-batch plan they share and the table of variants. */
#ifndef LIBGRAID_ISAL_CPU_VARIANTS_H
#define LIBGRAID_ISAL_CPU_VARIANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid_gf.h>

/* Sources of one pass: up to 255 data blocks, plus P when P is XORed in. */
#define GRAID_CPU_MAX_SRC (GRAID_GF_MAX_DATA + 1)

/*
 * What one pass computes. Every op reads its sources once, accumulating the XOR (p) and,
 * where the op needs Q, the Horner sum (q) of them; the finishing step then writes or tests.
 * No op reads a block it writes, so a pass may redo bytes it has already done.
 */
enum graid_cpu_op {
	GRAID_CPU_XOR,      /* dst0 = p: P of the data, or one data block from P (XOR) */
	GRAID_CPU_PQ,       /* dst0 = p (P), dst1 = q (Q) */
	GRAID_CPU_Q,        /* dst0 = q (Q alone lost) */
	GRAID_CPU_DP,       /* data x and P lost: x = c0 * (q ^ Q), P = p ^ x */
	GRAID_CPU_DQ,       /* data x and Q lost: x = p ^ P, Q = q ^ c0 * x */
	GRAID_CPU_DD,       /* data x < y lost: x = c0 * (p ^ P) ^ c1 * (q ^ Q), y = p ^ P ^ x */
	GRAID_CPU_CHECK_P,  /* clean iff p == 0 (P is a source) */
	GRAID_CPU_CHECK_PQ, /* clean iff p == P and q == Q */
};

/* Whether op reads P (aux 0) or Q (aux 1) besides its sources, to fold into p or q. */
static inline bool graid_cpu_reads_aux(enum graid_cpu_op op, unsigned aux)
{
	switch (op) {
	case GRAID_CPU_DD:
	case GRAID_CPU_CHECK_PQ:
		return true;
	case GRAID_CPU_DQ:
		return aux == 0;
	case GRAID_CPU_DP:
		return aux == 1;
	default:
		return false;
	}
}

/* What a plan was made for: it picks the reference routine that does the short tails. */
enum graid_cpu_kind {
	GRAID_CPU_KIND_GEN,
	GRAID_CPU_KIND_RECOVER,
	GRAID_CPU_KIND_CHECK,
};

/*
 * One batch's work, computed once and shared by every stripe and every variant. Sources
 * are listed from the highest data index down, the order Horner's rule for Q needs.
 */
struct graid_cpu_plan {
	enum graid_cpu_op op;
	enum graid_cpu_kind kind;
	/* The constants c0, c1 as GF2P8AFFINEQB bit matrices (graid__cpu_gf_matrix()). */
	uint64_t gfm[2];
	unsigned ndata, nparity;
	unsigned nlost, lost[2];            /* recover: as the batch gives them (ascending) */
	unsigned nsrc;                      /* sources in src[] */
	uint16_t src[GRAID_CPU_MAX_SRC];    /* block index of each source, Horner order */
	/*
	 * Extra q *= g after each source: one per lost data block between it and the next
	 * source (or below it, for the last), so that Horner's rule still weighs every source
	 * by g^index. A lost block above the first source needs none: q is still 0 there.
	 */
	uint8_t mul2[GRAID_CPU_MAX_SRC];
	/*
	 * Bytes per sub-range when a variant blocks a wide stripe for the cache; 0: the
	 * variant's own, which is also the most it takes. Set after the plan is made:
	 * benchmarks and tests vary it.
	 */
	unsigned block;
	/*
	 * Write the results by streaming stores, past the caches, where the op and a stripe's
	 * layout allow (every op but a check; outputs vector-aligned; no graid_cpu_alias()): for
	 * batches whose results go to the drives and are not read back soon. Set after the
	 * plan is made, like block.
	 */
	bool stream;
	uint16_t dst[2];                    /* blocks written (see enum graid_cpu_op) */
	uint16_t aux[2];                    /* P and Q read by the finishing step */
	/*
	 * Groups of sources for wide stripes: group g is src[group[g]] .. src[group[g+1]-1].
	 * A variant that blocks for the cache keeps p and q in a buffer between groups.
	 */
	unsigned ngroup;
	uint16_t group[GRAID_CPU_MAX_SRC + 1];
	/* The constants c0, c1: nibble tables (low 16, high 16) and full product tables. */
	uint8_t nib[2][32];
	uint8_t mul[2][256];
};

/*
 * A stripe's block by plan index; NULL for an index the plan does not use (Q of a RAID-5
 * stripe): the pointer array has only ndata + nparity entries, and reading past it is
 * reading another stripe's pointers, or past the array.
 */
static inline uint8_t *graid_cpu_block(const struct graid_cpu_plan *pl, uint8_t *const *blk,
				       unsigned idx)
{
	return idx < pl->ndata + pl->nparity ? blk[idx] : NULL;
}

/*
 * Streaming stores stall when a block read lies a little below a block written within a
 * 4 KiB page (a load then matches the low 12 bits of a store still in flight): blocks
 * 64 KiB + 32 or + 64 bytes apart ran at a fifth of the speed, 512 or 2048 bytes apart did
 * not (docs/CPU-ENGINE.md). ISA-L's pq_gen and the own streaming pass both avoid it.
 */
#define GRAID_CPU_ALIAS_PAGE 4096u
#define GRAID_CPU_ALIAS_WINDOW 1024u

/* Whether reading src while streaming to dst would stall (see GRAID_CPU_ALIAS_PAGE). */
static inline bool graid_cpu_alias(const void *dst, const void *src)
{
	uintptr_t d = ((uintptr_t)dst - (uintptr_t)src) & (GRAID_CPU_ALIAS_PAGE - 1);

	return d && d < GRAID_CPU_ALIAS_WINDOW;
}

/* A set of routines for one instruction-set level; all compute the same bytes. */
struct graid_cpu_variant {
	const char *name;                 /* for GRAID_CPU_VARIANT and the log */
	bool (*supported)(void);          /* whether this CPU can run it */
	/* Sources per group when a stripe is wide enough to block for the cache; 0: never. */
	unsigned group_size;
	/*
	 * Apply a plan to bytes [0, len) of one stripe (blk as in graid_gf.h: data, P, Q).
	 * Any alignment and length. Returns false only for a check op that found a mismatch.
	 */
	bool (*run)(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t len);
};

/* The variants this build has (cpu_avx512*.c, cpu_avx2*.c, cpu_ssse3.c, cpu_swar.c). */
extern const struct graid_cpu_variant graid__cpu_variant_avx512_gfni;
extern const struct graid_cpu_variant graid__cpu_variant_avx512;
extern const struct graid_cpu_variant graid__cpu_variant_avx2_gfni;
extern const struct graid_cpu_variant graid__cpu_variant_avx2;
extern const struct graid_cpu_variant graid__cpu_variant_ssse3;
extern const struct graid_cpu_variant graid__cpu_variant_swar;

/* Every variant of this build, best first, NULL-terminated; some may be unsupported. */
extern const struct graid_cpu_variant *const graid__cpu_variants[];

/*
 * The variant to use: `want` (a name, or NULL/"" for the best) if this CPU supports it,
 * else the best with a warning through log. Pure: no caching, so tests can call it.
 */
const struct graid_cpu_variant *graid__cpu_variant_pick(const char *want,
							void (*log)(int level,
								    const char *fmt, ...));
/* A supported variant by name, or NULL. */
const struct graid_cpu_variant *graid__cpu_variant_find(const char *name);

/* Fill a plan. group_size as the variant's (0: one group). Recover: 1..nparity lost. */
void graid__cpu_plan_gen(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			 unsigned group_size);
void graid__cpu_plan_recover(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			     unsigned nlost, const unsigned *lost, unsigned group_size);
void graid__cpu_plan_check(struct graid_cpu_plan *pl, unsigned ndata, unsigned nparity,
			   unsigned group_size);

/*
 * Multiplication by c in GF(2^8) under 0x11d as the 8x8 bit matrix GF2P8AFFINEQB takes:
 * byte 7-i of the result holds row i, whose bit k is bit i of c * 2^k.
 */
uint64_t graid__cpu_gf_matrix(unsigned char c);
/* Whether this CPU and its OS run AVX-512 F and BW (the avx512 variants' base). */
bool graid__cpu_has_avx512bw(void);
/* graid__cpu_gf_matrix(2), for q * g (checked against the function by the tests). */
#define GRAID_CPU_GF_MATRIX_2 0x8001828488102040ull

/*
 * A variant for a CPU without SIMD of that kind (not x86-64): its run() is the reference
 * and its supported() says no, so the table can list every variant on every machine.
 */
#define GRAID_CPU_VARIANT_ABSENT(prefix)                                                  \
	static bool prefix##_run(const struct graid_cpu_plan *pl, uint8_t *const *blk,    \
				 size_t len)                                              \
	{                                                                                 \
		return graid__cpu_ref_range(pl, blk, 0, len);                             \
	}                                                                                 \
	static bool prefix##_supported(void)                                              \
	{                                                                                 \
		return false;                                                             \
	}

/*
 * Bytes [off, off+n) of a stripe by the byte-wise reference of graid_gf.h; variants use it
 * for pieces too short for their vectors. Returns false only for a check that failed.
 */
bool graid__cpu_ref_range(const struct graid_cpu_plan *pl, uint8_t *const *blk, size_t off,
			  size_t n);

#endif /* LIBGRAID_ISAL_CPU_VARIANTS_H */
