/* SPDX-License-Identifier: MIT */
/* Thousands of random reads and writes per level against an in-memory copy, with members failing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define MODEL_MEMBER_BYTES ((1u << 20) + (6u << 20) + 12288u)

static void model_verify(struct graid_array *a, const uint8_t *model, uint64_t size,
			 const char *when)
{
	const size_t piece = 1u << 20;
	uint8_t *buf = malloc(piece);

	for (uint64_t off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? (size_t)(size - off) : piece;

		cr_assert_eq(graid_array_read(a, buf, n, off), (ssize_t)n, "%s: read at %llu", when,
			     (unsigned long long)off);
		for (size_t i = 0; i < n; i++)
			if (buf[i] != model[off + i])
				cr_assert_fail("%s: byte %llu is %u, expected %u (seed %llu)", when,
					       (unsigned long long)(off + i), buf[i],
					       model[off + i], (unsigned long long)tu_seed());
	}
	free(buf);
}

static void model_ops(struct graid_array *a, uint8_t *model, uint64_t size, uint32_t bs,
		      uint32_t chunk, unsigned nops, uint64_t *rng)
{
	uint8_t *mem = NULL;
	size_t cap = (size_t)chunk * 6 + 4096 + 64;

	cr_assert_eq(posix_memalign((void **)&mem, 4096, cap), 0);
	for (unsigned i = 0; i < nops; i++) {
		uint64_t nblocks = size / bs;
		uint64_t blk = tu_rand(rng) % nblocks;
		uint64_t len = (1 + tu_rand(rng) % (chunk * 5 / bs)) * (uint64_t)bs;
		size_t mis = tu_rand(rng) % 3 ? 0 : 1 + tu_rand(rng) % 63;
		uint8_t *buf = mem + mis;
		uint64_t off;

		/* Bias a third of the operations to stripe-aligned offsets: full-stripe writes. */
		if (tu_rand(rng) % 3 == 0)
			blk -= blk % (chunk / bs);
		off = blk * bs;
		if (len > size - off)
			len = size - off;
		if (tu_rand(rng) & 1) {
			tu_fill(rng, buf, len);
			cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len,
				     "write %llu+%llu (seed %llu)", (unsigned long long)off,
				     (unsigned long long)len, (unsigned long long)tu_seed());
			memcpy(model + off, buf, len);
		} else {
			cr_assert_eq(graid_array_read(a, buf, len, off), (ssize_t)len);
			cr_assert_eq(memcmp(buf, model + off, len), 0,
				     "read %llu+%llu differs (op %u, seed %llu)",
				     (unsigned long long)off, (unsigned long long)len, i,
				     (unsigned long long)tu_seed());
		}
	}
	free(mem);
}

static void model_shuffle(const char **p, unsigned n, uint64_t *rng)
{
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(tu_rand(rng) % (i + 1));
		const char *t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
}

/* Fail `nfail` members (chosen so the level survives) at thirds of the run. */
static void model_run(int level, unsigned n, uint32_t chunk, unsigned nfail)
{
	uint64_t rng = tu_seed() ^ (uint64_t)(level * 977 + n * 31 + chunk);
	struct graid_array_info info = { .struct_size = sizeof(info) };
	unsigned failed[2] = { ~0u, ~0u };
	const char *order[AU_MAX], *present[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;
	unsigned npresent = 0;

	au_make(&s, n, MODEL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0, "create RAID-%d", level);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	model_verify(a, model, info.size, "new array reads as zeroes");
	model_ops(a, model, info.size, info.block_size, chunk, 300, &rng);
	for (unsigned f = 0; f < nfail; f++) {
		/* RAID-10 keeps going only if the second failure hits another mirror pair. */
		failed[f] = f == 0 ? (unsigned)(tu_rand(&rng) % n) : (failed[0] + 2) % n;
		cr_assert_eq(graid_array_fail_member(a, failed[f]), 0);
		model_ops(a, model, info.size, info.block_size, chunk, 300, &rng);
	}
	model_verify(a, model, info.size, "after the random operations");
	cr_assert_eq(graid_array_close(a), 0);

	/* Reopen with every path, shuffled: the failed members are stale and stay out. */
	memcpy(order, s.paths, sizeof(order));
	model_shuffle(order, n, &rng);
	cr_assert_eq(graid_array_open(order, n, NULL, &a), 0, "reopen shuffled");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, nfail, "reopen: %u failed, expected %u", info.nfailed, nfail);
	model_verify(a, model, info.size, "after a shuffled reopen");
	cr_assert_eq(graid_array_close(a), 0);

	/* Reopen without the failed members' paths at all: degraded by absence. */
	for (unsigned i = 0; i < n; i++)
		if (i != failed[0] && i != failed[1])
			present[npresent++] = s.paths[i];
	model_shuffle(present, npresent, &rng);
	cr_assert_eq(graid_array_open(present, npresent, NULL, &a), 0, "degraded reopen");
	model_verify(a, model, info.size, "after a degraded reopen");
	model_ops(a, model, info.size, info.block_size, chunk, 150, &rng);
	model_verify(a, model, info.size, "after writing degraded");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(array_model, raid0_matches_the_model, .timeout = 600) { model_run(0, 3, 16384, 0); }
Test(array_model, raid1_survives_a_failed_copy, .timeout = 600) { model_run(1, 3, 4096, 2); }
Test(array_model, raid5_survives_one_failure, .timeout = 600) { model_run(5, 4, 16384, 1); }
Test(array_model, raid5_small_chunks_survive_one_failure, .timeout = 600) { model_run(5, 5, 4096, 1); }
Test(array_model, raid6_survives_two_failures, .timeout = 600) { model_run(6, 6, 8192, 2); }
Test(array_model, raid6_wide_survives_two_failures, .timeout = 600) { model_run(6, 10, 4096, 2); }
Test(array_model, raid10_survives_a_failure_per_pair, .timeout = 600) { model_run(10, 4, 8192, 2); }
Test(array_model, raid10_odd_members_survive_one_failure, .timeout = 600) { model_run(10, 5, 4096, 1); }
