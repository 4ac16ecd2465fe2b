/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the grow suites (tests/test_reshape_*.c): the library's log kept for asserts,
 * seeded data, the array's size, whole-array checks against a model, a scrub that must be
 * clean, the rate that paces a move.
 */
#ifndef LIBGRAID_GROWUTIL_H
#define LIBGRAID_GROWUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

/* What gu_log_keep() kept since gu_log_clear(): one message a line, cut when full. */
extern char gu_log_text[65536];
/* A graid_log_set() callback that appends each message to gu_log_text (thread-safe). */
void gu_log_keep(void *arg, int level, const char *msg);
void gu_log_clear(void);

/* xorshift64: the next value of @p s. */
uint64_t gu_rng(uint64_t *s);
/* @p n bytes (a multiple of 8) of data drawn from @p seed. */
void gu_fill(uint8_t *p, size_t n, uint64_t seed);

/* The array's size (graid_array_info), and its member count into @p nmembers (may be NULL). */
uint64_t gu_array_bytes(struct graid_array *a, unsigned *nmembers);
/* Data members of a stripe of RAID-@p level over @p n members (0, 5, 6). */
unsigned gu_ndata(int level, unsigned n);
/* @p a is a RAID-@p level of @p n members (graid_array_info); @p when names the moment. */
void gu_assert_level(struct graid_array *a, int level, unsigned n, const char *when);
struct au_set;
/*
 * A RAID-5 of four over files 0-3 of @p s (@p nfiles files of @p bytes made), chunk
 * @p chunk, written whole with data from @p seed, made a Q-last RAID-6 of five with file 4
 * (GRAID_GROW_RAID6, waited for). @return the array's bytes as written; *@p out, *@p size.
 */
uint8_t *gu_make_q_last(struct au_set *s, unsigned nfiles, uint64_t bytes, uint32_t chunk,
			struct graid_array **out, uint64_t *size, uint64_t seed);
/* Every 4 KiB block of the first @p size bytes reads as @p model. */
void gu_check_all(struct graid_array *a, const uint8_t *model, uint64_t size);
/*
 * Every 4 KiB block of the first @p size bytes, read alone, reads as @p model, but the one at
 * array byte @p lost (UINT64_MAX: none), which must fail -EIO; @p when names the moment.
 */
void gu_check_but(struct graid_array *a, const uint8_t *model, uint64_t size, uint64_t lost,
		  const char *when);
/*
 * The resync of an unclean open ended (waited for, up to 20 s), then a scrub finds every
 * stripe's parity right and checked at least one; @p when names the moment in a failure.
 */
void gu_scrub_clean(struct graid_array *a, const char *when);
/* The rebuild's rate limit, which paces a grow's move too (0: none). */
void gu_slow_down(struct graid_array *a, uint64_t bytes_per_sec);
/*
 * A busy rate no drive reaches: the move keeps full speed while requests run, instead of
 * giving the members to them three quarters of the time (suites whose subject is not pacing).
 */
void gu_full_speed_under_load(struct graid_array *a);

/* What gu_io_during() sends. */
struct gu_io_opts {
	uint64_t max_len;      /* bytes a request at most (a multiple of 4 KiB) */
	bool zeroes;           /* one request in eight a write-zeroes */
	unsigned unslow_after; /* the move's rate limit lifted after this many (0: kept) */
};

/*
 * While @p a's reshape job runs (waited for on a thread of its own, its result asserted 0),
 * and for at least 64 requests: random writes (and write-zeroes) of the first @p size bytes,
 * kept in @p model, and reads that must match it; @p seed drawn from. @return how many ran
 * while the job did (the caller asserts enough did).
 */
uint64_t gu_io_during(struct graid_array *a, uint8_t *model, uint64_t size, uint64_t *seed,
		      const struct gu_io_opts *o);

/*
 * The grow of @p a (a RAID-5/6 over files [0, @p nold) of @p s, holding @p model, @p size
 * bytes) by file @p nold, paced, with gu_io_during()'s requests of up to @p max_len bytes
 * while it moves (at least 20 asserted); then every byte checked and a scrub clean, and the
 * same after a close and an open. Closes @p a.
 */
void gu_grow_with_io(struct graid_array *a, struct au_set *s, unsigned nold, uint8_t *model,
		     uint64_t size, uint64_t seed, uint64_t max_len);

#endif
