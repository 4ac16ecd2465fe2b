/* SPDX-License-Identifier: MIT */
/* The fio profiles of BENCHMARKS.md, and the offsets and directions each one issues. */
#include <string.h>

#include "ab.h"

const struct ab_profile ab_profiles[] = {
	{ .name = "4k-randread", .bs = 4096, .read_pct = 100, .seq = false },
	{ .name = "4k-randwrite", .bs = 4096, .read_pct = 0, .seq = false },
	{ .name = "4k-70-30", .bs = 4096, .read_pct = 70, .seq = false },
	{ .name = "64k-randwrite", .bs = 65536, .read_pct = 0, .seq = false },
	{ .name = "1m-seqread", .bs = 1u << 20, .read_pct = 100, .seq = true },
	{ .name = "1m-seqwrite", .bs = 1u << 20, .read_pct = 0, .seq = true },
};

const unsigned ab_nprofiles = sizeof(ab_profiles) / sizeof(ab_profiles[0]);

const struct ab_profile *ab_profile_find(const char *name)
{
	for (unsigned i = 0; i < ab_nprofiles; i++)
		if (strcmp(ab_profiles[i].name, name) == 0)
			return &ab_profiles[i];
	return NULL;
}

/* splitmix64: cheap, and any seed (zero included) gives a good stream. */
uint64_t ab_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void ab_gen_init(struct ab_gen *g, const struct ab_profile *p, uint64_t size, unsigned thread,
		 unsigned nthreads, uint64_t seed)
{
	uint64_t per;

	*g = (struct ab_gen){ .rng = seed ^ ((uint64_t)thread << 32), .bs = p->bs,
			      .read_pct = p->read_pct, .seq = p->seq };
	g->nblocks = size / p->bs;
	/* Sequential threads get disjoint slices, as fio jobs with offset_increment would:
	 * each thread streams, and no two threads fight over the same stripes. */
	per = g->nblocks / (nthreads ? nthreads : 1);
	if (per == 0) {
		g->lo = 0;
		g->hi = g->nblocks * p->bs;
	} else {
		g->lo = (uint64_t)thread * per * p->bs;
		g->hi = g->lo + per * p->bs;
	}
	g->next = g->lo;
}

uint64_t ab_gen_next(struct ab_gen *g, bool *write)
{
	uint64_t off;

	if (g->read_pct >= 100)
		*write = false;
	else if (g->read_pct == 0)
		*write = true;
	else
		*write = ab_rand(&g->rng) % 100 >= g->read_pct;
	if (g->seq) {
		off = g->next;
		g->next += g->bs;
		if (g->next >= g->hi)
			g->next = g->lo;
		return off;
	}
	return (ab_rand(&g->rng) % g->nblocks) * g->bs;
}
