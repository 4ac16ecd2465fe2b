/* SPDX-License-Identifier: MIT */
/*
 * Which routine does each kind of parity work on this CPU, chosen by timing every
 * candidate once per process, as Linux's RAID-6 picks its routine at boot.
 */
#ifndef LIBGRAID_ISAL_CPU_MEASURE_H
#define LIBGRAID_ISAL_CPU_MEASURE_H

#include <stdbool.h>

#include "cpu_variants.h"

/* The kinds of work timed apart; each goes to its fastest routine (see cpu_measure.c). */
enum graid_cpu_class {
	GRAID_CPU_C_GEN_NARROW, /* P+Q generation, up to GRAID_CPU_NARROW_MAX data blocks */
	GRAID_CPU_C_GEN_WIDE,   /* P+Q generation, wider */
	GRAID_CPU_C_XOR,        /* P alone (RAID-5 generation) */
	GRAID_CPU_C_REC1,       /* one block lost (an XOR of the others) */
	GRAID_CPU_C_REC2,       /* two blocks lost, or Q */
	GRAID_CPU_C_CHECK,      /* RAID-6 check */
	GRAID_CPU_NCLASS,
};

/* P+Q generation of up to this many data blocks is "narrow" (timed at 8+2; wide at 22+2). */
#define GRAID_CPU_NARROW_MAX 8u
/* Candidates per class: ISA-L's entry point, then every variant of the build. */
#define GRAID_CPU_MAX_CAND 8u

struct graid_cpu_choice {
	/* The fastest own variant per class: what runs where ISA-L lost or cannot go. */
	const struct graid_cpu_variant *own[GRAID_CPU_NCLASS];
	/*
	 * ISA-L's routine was the fastest of the class, by MEASURE_WIDE_ISAL_MARGIN for wide
	 * generation (it has none for two lost blocks).
	 */
	bool isal[GRAID_CPU_NCLASS];
	/*
	 * Narrow stripes whose data block lies just below P or Q in a page go to the own
	 * routine even where pq_gen won: only where pq_gen was timed slower on that layout.
	 */
	bool alias_rule;
	const char *forced;             /* GRAID_CPU_VARIANT's variant, or NULL */
	const char *prefer;             /* GRAID_CPU_PREFER (isal, own) where it overrode */
	double usec;                    /* how long the timing took */
	/* GB/s of data per class and candidate (0: not run here); candidate 0 is ISA-L. */
	double gbps[GRAID_CPU_NCLASS][GRAID_CPU_MAX_CAND];
	const char *cand[GRAID_CPU_MAX_CAND];
	unsigned ncand;
	double alias_isal, alias_own;   /* pq_gen and the narrow own winner, aliased layout */
};

/*
 * This process's choice: made on the first call (a few milliseconds), then kept. The
 * first call with a log logs it at info level. GRAID_CPU_VARIANT=name makes that variant
 * the only own candidate (ISA-L is still timed against it).
 */
const struct graid_cpu_choice *graid__cpu_choice(void (*log)(int level, const char *fmt, ...));

/* Make a choice now, into ch (tests and benchmarks; the engine uses graid__cpu_choice). */
void graid__cpu_measure(struct graid_cpu_choice *ch, const struct graid_cpu_variant *forced);

/*
 * Whether P+Q generation of up to GRAID_CPU_NARROW_MAX data blocks that streams (a batch
 * hinted GRAID_BATCH_F_STREAM or larger than the last-level cache) goes to ISA-L's
 * pq_gen whatever the timing in cache chose: only where pq_gen itself streams.
 */
bool graid__cpu_stream_to_isal(const struct graid_cpu_choice *ch);

/* The name of the routine class c runs: ISA-L's entry point, or the own variant's. */
const char *graid__cpu_choice_name(const struct graid_cpu_choice *ch, enum graid_cpu_class c);

/* One line on the choice, for the probe's device string. */
void graid__cpu_choice_describe(const struct graid_cpu_choice *ch, char *buf, size_t len);

#endif /* LIBGRAID_ISAL_CPU_MEASURE_H */
