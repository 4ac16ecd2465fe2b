/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test suites: seeded random data, guarded buffers, stripe sets. */
#ifndef LIBGRAID_TESTUTIL_H
#define LIBGRAID_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The seed of this test process: GRAID_TEST_SEED if set, else fresh; always printed. */
uint64_t tu_seed(void);
/* xorshift64*: fast, seedable, good enough for test data. */
uint64_t tu_rand(uint64_t *state);
void tu_fill(uint64_t *state, uint8_t *p, size_t n);

/*
 * A block of len bytes that ends exactly at an inaccessible page (over-reads fault) or,
 * with head_guard, starts `misalign` bytes after one (under-reads fault).
 */
struct tu_block {
	uint8_t *p;
	void *map;
	size_t map_len;
};
void tu_block_alloc(struct tu_block *b, size_t len, bool head_guard, size_t misalign);
void tu_block_free(struct tu_block *b);

/* nstripes * (ndata + nparity) guarded blocks of random data, and a pointer table to them. */
struct tu_stripes {
	unsigned ndata, nparity;
	size_t len, nstripes, nblocks;
	struct tu_block *blk;
	uint8_t **ptr;
};
void tu_stripes_alloc(struct tu_stripes *s, unsigned ndata, unsigned nparity, size_t len,
		      size_t nstripes, uint64_t *rng, int align_mode);
void tu_stripes_free(struct tu_stripes *s);
/* Parity of every stripe by the byte-wise reference of graid_gf.h. */
void tu_stripes_ref_gen(struct tu_stripes *s);
/* Copy of all block contents, to compare after an operation. */
uint8_t *tu_stripes_snapshot(const struct tu_stripes *s);
/* Index of the first block differing from a snapshot, or -1. */
long tu_stripes_diff(const struct tu_stripes *s, const uint8_t *snap);

/* Pointers into a snapshot, laid out as s->ptr is (for computing expectations there). */
uint8_t **tu_snapshot_ptrs(const struct tu_stripes *s, uint8_t *snap);

/* Whether an engine opens here; if not, why (for the skip message). */
bool tu_engine_usable(const char *name, int *why);
/* GRAID_TEST_BACKENDS (comma list) restricts which engines the suites exercise. */
bool tu_engine_selected(const char *name);
/*
 * Whether an engine must be usable on this machine: GRAID_TEST_REQUIRE_ENGINES (comma list;
 * tools/bootstrap sets it for CI), where a test of such an engine fails instead of skipping.
 */
bool tu_engine_required(const char *name);
/* Why an engine is not usable, as its probe or the loader says (graid_backend_list()). */
void tu_engine_why(const char *name, char *buf, size_t len);
/*
 * For a test of one engine: returns if it is usable here; else skips the test with the
 * probe's reason, or fails it with that reason when tu_engine_required(name).
 */
void tu_engine_need(const char *name);
/*
 * For a test that opens "faulty:" members or uses the library's read seam: returns in a
 * build with fault injection, else skips the test saying so (-Dfault_injection=disabled,
 * the default of a release build, where "faulty:..." is a path that does not exist).
 */
void tu_need_fault_injection(void);
/*
 * The rounds a long randomized sweep (kills, crashes) runs: @p full, or a quarter of it (at
 * least 4) where GRAID_TEST_SWEEP=short. tools/bootstrap sets that for its sanitizer and
 * release stages, which run the same code after the plain stage's full sweep: there the
 * sweep is to find what those builds alone find (memory errors, undefined behaviour, code
 * the optimizer changed), for which a quarter of the rounds reach the same paths.
 */
int tu_sweep(int full);
/*
 * Write @p text to @p path whole, through a rename, as a drive's log changes at once (the
 * scripted health source, "faulty:health=FILE", reads it at any moment).
 */
void tu_put_file(const char *path, const char *text);

#endif
