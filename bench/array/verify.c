/* SPDX-License-Identifier: MIT */
/* The closing check: known data written, partly rewritten, read back healthy and degraded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ab.h"

#define VERIFY_BLOCK 4096u

static unsigned verify_ndata(const struct ab_geom *g)
{
	switch (g->level) {
	case 0:
		return g->n;
	case 5:
		return g->n - 1;
	case 6:
		return g->n - 2;
	default:
		return 1; /* RAID-1 and RAID-10: a stripe is one chunk */
	}
}

static void verify_fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t o = 0; o + 8 <= len; o += 8) {
		uint64_t v = ab_rand(&seed);

		memcpy(p + o, &v, 8);
	}
}

/*
 * Rewrite about one 4 KiB block in @p every with fresh data, many in flight at once: blocks
 * of one stripe race for its lock, and small writes take the read-modify-write, reconstruct
 * or degraded paths. @p want is updated first and is the write buffer.
 */
static int verify_scatter(struct graid_array *a, uint8_t *want, uint64_t len, unsigned every,
			  uint64_t seed, unsigned *count)
{
	struct ab_aq aq;
	uint64_t rng = seed;
	int rc = ab_aq_open(&aq, a, 32);

	for (uint64_t off = 0; rc == 0 && off < len; off += VERIFY_BLOCK) {
		if (ab_rand(&rng) % every)
			continue;
		verify_fill(want + off, VERIFY_BLOCK, ab_rand(&rng));
		rc = ab_aq_add(&aq, true, want + off, VERIFY_BLOCK, off);
		(*count)++;
	}
	if (aq.q) {
		int drc = ab_aq_drain(&aq);

		if (rc == 0)
			rc = drc;
		if (aq.err)
			fprintf(stderr, "array_bench: verify: 4 KiB write at %llu: %s\n",
				(unsigned long long)aq.err_off, graid_strerror(aq.err));
		ab_aq_close(&aq);
	}
	return rc;
}

static int verify_compare(const char *what, const uint8_t *got, const uint8_t *want, uint64_t len)
{
	uint64_t bad = 0, first = 0;

	if (memcmp(got, want, len) == 0)
		return 0;
	for (uint64_t off = 0; off < len; off += VERIFY_BLOCK)
		if (memcmp(got + off, want + off, VERIFY_BLOCK)) {
			if (!bad)
				first = off;
			bad++;
		}
	fprintf(stderr, "array_bench: verify FAILED (%s): %llu of %llu 4 KiB blocks differ, the "
			"first at array offset %llu\n", what, (unsigned long long)bad,
		(unsigned long long)(len / VERIFY_BLOCK), (unsigned long long)first);
	return -1;
}

static int verify_readback(struct graid_array *a, const char *what, uint8_t *got,
			   const uint8_t *want, uint64_t len)
{
	memset(got, 0xa5, len);
	if (ab_array_stream(a, false, got, 0, len, 1u << 20, false)) {
		fprintf(stderr, "array_bench: verify FAILED (%s): read error\n", what);
		return -1;
	}
	return verify_compare(what, got, want, len);
}

int ab_verify(struct graid_array *a, const struct ab_geom *g, uint64_t max_bytes, uint64_t seed)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t stripe = (uint64_t)verify_ndata(g) * g->chunk;
	uint64_t len;
	uint8_t *want = NULL, *got = NULL;
	unsigned nwrites = 0, nfail = 0;
	const char *steps = "healthy";
	int rc;

	if (graid_array_info(a, &info))
		return -1;
	len = (max_bytes < info.size ? max_bytes : info.size) / stripe * stripe;
	if (len == 0 || posix_memalign((void **)&want, 4096, len) ||
	    posix_memalign((void **)&got, 4096, len)) {
		fprintf(stderr, "array_bench: verify: no room for %llu bytes\n",
			(unsigned long long)len);
		free(want);
		return -1;
	}
	/* Whole-stripe requests: parity is regenerated from the new data alone, so whatever the
	 * JBOD baseline scribbled over these stripes no longer matters. */
	verify_fill(want, len, seed);
	rc = ab_array_stream(a, true, want, 0, len, (uint32_t)stripe, false);
	if (rc == 0)
		rc = verify_scatter(a, want, len, 8, seed + 1, &nwrites);
	if (rc == 0)
		rc = verify_readback(a, "healthy", got, want, len);
	/* Lose one member (RAID-1/5/10: all the redundancy; RAID-6: half of it), write, read. */
	if (rc == 0 && g->level != 0) {
		rc = graid_array_fail_member(a, 1);
		if (rc)
			fprintf(stderr, "array_bench: verify: fail_member(1): %s\n", graid_strerror(rc));
		nfail = 1;
		steps = "healthy, one member failed";
		if (rc == 0)
			rc = verify_scatter(a, want, len, 16, seed + 2, &nwrites);
		if (rc == 0)
			rc = verify_readback(a, "member 1 failed", got, want, len);
	}
	if (rc == 0 && g->level == 6) {
		unsigned second = 1 + g->n / 2;

		rc = graid_array_fail_member(a, second);
		if (rc)
			fprintf(stderr, "array_bench: verify: fail_member(%u): %s\n", second,
				graid_strerror(rc));
		nfail = 2;
		steps = "healthy, one failed, two failed";
		if (rc == 0)
			rc = verify_readback(a, "two members failed", got, want, len);
	}
	if (rc == 0)
		printf("verify ok: RAID-%d, %.2f MiB written in whole stripes, %u scattered 4 KiB "
		       "writes, read back %s (%u failed at the end)\n", g->level,
		       (double)len / (1 << 20), nwrites, steps, nfail);
	free(want);
	free(got);
	return rc ? -1 : 0;
}
