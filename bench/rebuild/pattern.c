/* SPDX-License-Identifier: MIT */
/* Data that names its own array offset: written once, checked after every rebuild and resync. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"

#define PAT_BLOCK 4096u
#define PAT_REQ (1u << 20)
#define PAT_DEPTH 8u

static uint64_t pat_tag(uint64_t off, uint64_t seed)
{
	uint64_t z = off ^ (seed * 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Word i of a block: its tag plus a step, so every word differs and a shifted block shows. */
static uint64_t pat_word(uint64_t tag, unsigned i)
{
	return tag + i * 0x9e3779b97f4a7c15ull;
}

void rb_pattern_fill(uint8_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	for (size_t b = 0; b < len; b += PAT_BLOCK) {
		uint64_t tag = pat_tag(off + b, seed);

		for (unsigned i = 0; i < PAT_BLOCK / 8; i++) {
			uint64_t w = pat_word(tag, i);

			memcpy(buf + b + i * 8, &w, 8);
		}
	}
}

bool rb_pattern_quick(const uint8_t *buf, uint64_t off, uint64_t seed)
{
	uint64_t tag = pat_tag(off, seed), first, last;

	memcpy(&first, buf, 8);
	memcpy(&last, buf + PAT_BLOCK - 8, 8);
	return first == pat_word(tag, 0) && last == pat_word(tag, PAT_BLOCK / 8 - 1);
}

/* The first differing byte of [off, off + len) against the pattern, or -1. */
static long pat_compare(const uint8_t *buf, size_t len, uint64_t off, uint64_t seed,
			uint8_t *want)
{
	rb_pattern_fill(want, len, off, seed);
	if (memcmp(buf, want, len) == 0)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != want[i])
			return (long)i;
	return -1;
}

struct pat_stream {
	struct graid_queue *q;
	uint8_t *buf[PAT_DEPTH];
	uint64_t off[PAT_DEPTH];
	uint8_t *want;
	bool write;
	uint64_t seed;
	unsigned inflight;
	int err;
};

/* Reap at least @p min requests; a read is compared as it lands. */
static int pat_reap(struct pat_stream *s, unsigned min, unsigned *freed, unsigned *nfreed)
{
	struct graid_completion c[PAT_DEPTH];
	int n = graid_queue_reap(s->q, c, PAT_DEPTH, min);

	if (n < 0)
		return n;
	if (n == 0 && min)
		return -EIO; /* requests in flight that never complete */
	for (int k = 0; k < n; k++) {
		unsigned i = (unsigned)c[k].user_data;

		s->inflight--;
		freed[(*nfreed)++] = i;
		if (c[k].result != PAT_REQ) {
			if (!s->err) {
				s->err = c[k].result < 0 ? (int)c[k].result : -EIO;
				fprintf(stderr, "rebuild_bench: %s at array offset %llu: %s\n",
					s->write ? "write" : "read", (unsigned long long)s->off[i],
					graid_strerror(s->err));
			}
			continue;
		}
		if (!s->write && !s->err) {
			long bad = pat_compare(s->buf[i], PAT_REQ, s->off[i], s->seed, s->want);

			if (bad >= 0) {
				s->err = -EIO;
				fprintf(stderr, "rebuild_bench: WRONG DATA at array offset %llu\n",
					(unsigned long long)(s->off[i] + (uint64_t)bad));
			}
		}
	}
	return 0;
}

static int pat_stream(struct graid_array *a, bool write, uint64_t off, uint64_t len,
		      uint64_t seed)
{
	struct pat_stream s = { .write = write, .seed = seed };
	unsigned freed[PAT_DEPTH], nfreed = 0;
	int rc = graid_queue_create(a, PAT_DEPTH, &s.q);

	if (rc)
		return rc;
	for (unsigned i = 0; i < PAT_DEPTH && rc == 0; i++) {
		rc = posix_memalign((void **)&s.buf[i], 4096, PAT_REQ) ? -ENOMEM : 0;
		freed[nfreed++] = i;
	}
	if (rc == 0 && posix_memalign((void **)&s.want, 4096, PAT_REQ))
		rc = -ENOMEM;
	for (uint64_t at = off; rc == 0 && !s.err && at < off + len; at += PAT_REQ) {
		unsigned i;

		if (nfreed == 0) {
			rc = graid_queue_submit(s.q);
			rc = rc < 0 ? rc : pat_reap(&s, 1, freed, &nfreed);
			if (rc)
				break;
		}
		i = freed[--nfreed];
		s.off[i] = at;
		if (write)
			rb_pattern_fill(s.buf[i], PAT_REQ, at, seed);
		rc = write ? graid_queue_write(s.q, s.buf[i], PAT_REQ, at, i)
			   : graid_queue_read(s.q, s.buf[i], PAT_REQ, at, i);
		if (rc == 0)
			s.inflight++;
	}
	if (graid_queue_submit(s.q) < 0 && rc == 0)
		rc = -EIO;
	while (s.inflight && (rc == 0 || rc == -EIO)) {
		nfreed = 0;
		if (pat_reap(&s, s.inflight, freed, &nfreed))
			break;
	}
	graid_queue_destroy(s.q);
	for (unsigned i = 0; i < PAT_DEPTH; i++)
		free(s.buf[i]);
	free(s.want);
	return rc ? rc : s.err;
}

int rb_array_fill(struct graid_array *a, uint64_t off, uint64_t len, uint64_t seed)
{
	return pat_stream(a, true, off, len, seed);
}

int rb_array_verify(struct graid_array *a, uint64_t off, uint64_t len, uint64_t seed)
{
	return pat_stream(a, false, off, len, seed);
}

int rb_array_scrub_clean(struct graid_array *a, const char *what)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	int rc = graid_array_scrub(a, 0, &rep);

	if (rc) {
		fprintf(stderr, "rebuild_bench: scrub after %s: %s\n", what, graid_strerror(rc));
		return rc;
	}
	if (rep.mismatches || rep.skipped) {
		fprintf(stderr, "rebuild_bench: scrub after %s: %llu of %llu stripes inconsistent, "
				"%llu skipped (first: stripe %llu, member %d)\n",
			what, (unsigned long long)rep.mismatches,
			(unsigned long long)rep.stripes_checked, (unsigned long long)rep.skipped,
			(unsigned long long)(rep.named ? rep.stripe[0] : 0),
			rep.named ? rep.member[0] : -1);
		return -EIO;
	}
	return 0;
}
