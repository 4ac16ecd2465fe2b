/* SPDX-License-Identifier: MIT */
/* A battery of parity cases run against a backend's table of operations, checked byte by
 * byte against a plain reference: shared by the emulated (CPU) and the real (GPU) tests. */
#ifndef GRAID_CUDA_CASES_H
#define GRAID_CUDA_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include <libgraid/graid_backend.h>

/* Counts of what a run did. */
struct cases_tally {
	unsigned passed;
	unsigned failed;
};

/* The log sink given to engines: prints to stderr when GRAID_TEST_VERBOSE is set, and
 * counts errors so tests can expect them. */
void cases_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern unsigned cases_log_errors;
/* Lines at GRAID_LOG_WARNING or more severe (errors included). */
extern unsigned cases_log_warnings;

/* Open an engine with the GRAID_CUDA_* variables set as given (NULL: unset). */
int cases_open(const struct graid_backend_ops *ops, struct graid_engine **e, const char *path,
	       const char *piece_kb, const char *fail_after);

/* How much of the battery to run. */
enum cases_level {
	CASES_TINY,   /* the fixed shapes whose batch is at most CASES_TINY_BYTES (tiny pieces) */
	CASES_LITE,   /* fixed shapes (1..255 data blocks, tails), aligned and unaligned */
	CASES_FULL,   /* and random shapes */
	CASES_BIG,    /* and blocks up to half a MiB, hundreds of stripes */
	CASES_HUGE,   /* and multi-MiB blocks, thousands of stripes (for a real GPU) */
};

/*
 * Bytes of blocks in one batch of a CASES_TINY shape. On a real device every piece is a
 * launch, two copies and a wait: with pieces of 1 KiB, the fixed shapes above this size are
 * most of the battery's pieces (about 258 thousand of 285).
 */
#define CASES_TINY_BYTES (256u << 10)

/*
 * Every operation on many shapes (data blocks 1..255, one and two parity blocks, lengths
 * with and without 16-byte tails, aligned and unaligned blocks, one and many stripes), every
 * recovery case and every check verdict, up to the given level. Appends to tally.
 */
void cases_run(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed,
	       enum cases_level level, struct cases_tally *tally);

/* Several threads running gen on one engine at once. */
void cases_threads(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed,
		   struct cases_tally *tally);

/* One gen of a fixed shape; 0 if the parity matches the reference, else the op's error
 * or -EBADMSG. */
int cases_one_gen(const struct graid_backend_ops *ops, struct graid_engine *e, uint64_t seed);

/* The same gen with its blocks in mem, CASES_ONE_BYTES long (a buffer the test owns). */
#define CASES_ONE_BYTES (4u * 6 * 4096)
int cases_one_gen_at(const struct graid_backend_ops *ops, struct graid_engine *e,
		     uint64_t seed, uint8_t *mem);

/* Record a result, printing a line on failure. */
void cases_expect(struct cases_tally *t, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* GRAID_CUDA_CASES_H */
