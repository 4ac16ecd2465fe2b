/* SPDX-License-Identifier: MIT */
/*
 * Discard and write-zeroes against an in-memory copy of the array: random discards, zeroes,
 * writes and reads on every level, degraded, with a member failing mid-run, then a reopen
 * and a scrub; what a refused call leaves; that whole stripes become holes in the members.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define DI_MEMBER_BYTES ((1u << 20) + (4u << 20))

static void di_verify(struct graid_array *a, const uint8_t *model, uint64_t size,
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

/*
 * nops random operations: a third discards or write-zeroes (many of whole stripes, some
 * spanning several), the rest writes and reads. A failing member may fail any of them; the
 * level survives it, so every call must still succeed.
 */
static void di_ops(struct graid_array *a, uint8_t *model, uint64_t size, unsigned nops,
		   uint64_t *rng)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t stripe;
	uint8_t *buf = NULL;
	uint32_t bs;

	cr_assert_eq(graid_array_info(a, &info), 0);
	bs = info.block_size;
	stripe = (uint64_t)info.chunk_bytes *
		 (info.level == 0 ? info.nmembers
				  : info.level == 5 ? info.nmembers - 1
						    : info.level == 6 ? info.nmembers - 2 : 1);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 6 * stripe), 0);
	for (unsigned i = 0; i < nops; i++) {
		unsigned kind = (unsigned)(tu_rand(rng) % 6);
		uint64_t off = tu_rand(rng) % (size / bs) * bs;
		uint64_t len = (1 + tu_rand(rng) % (5 * stripe / bs)) * bs;

		if (tu_rand(rng) % 2)
			off -= off % stripe; /* whole stripes: the deallocating path */
		if (len > size - off)
			len = size - off;
		if (kind < 2) {
			int rc = kind ? graid_array_discard(a, off, len)
				      : graid_array_write_zeroes(a, off, len);

			cr_assert_eq(rc, 0, "%s %llu+%llu: %s (seed %llu)",
				     kind ? "discard" : "write_zeroes", (unsigned long long)off,
				     (unsigned long long)len, graid_strerror(rc),
				     (unsigned long long)tu_seed());
			memset(model + off, 0, len);
		} else if (kind < 4) {
			tu_fill(rng, buf, len);
			cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
			memcpy(model + off, buf, len);
		} else {
			cr_assert_eq(graid_array_read(a, buf, len, off), (ssize_t)len);
			cr_assert_eq(memcmp(buf, model + off, len), 0,
				     "read %llu+%llu differs after op %u (seed %llu)",
				     (unsigned long long)off, (unsigned long long)len, i,
				     (unsigned long long)tu_seed());
		}
	}
	free(buf);
}

static void di_scrub_clean(struct graid_array *a, const char *when)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	if (info.level == 0)
		return;
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0, "%s: scrub", when);
	cr_assert_gt(rep.stripes_checked, 0);
	cr_assert_eq(rep.mismatches, 0, "%s: %llu stripes inconsistent (first %llu)", when,
		     (unsigned long long)rep.mismatches, (unsigned long long)rep.stripe[0]);
}

/*
 * Whole: random work, scrub, then fail @p nfail members one by one with more work between;
 * reopen; then reopen once more with a member that starts failing its writes in the middle
 * of the work (on levels with redundancy), and once more without it.
 */
static void di_run(int level, unsigned n, uint32_t chunk, unsigned nfail)
{
	uint64_t rng = tu_seed() ^ (uint64_t)(level * 131 + n * 7 + chunk);
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX];
	char spec[400];
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;
	unsigned failed[2] = { ~0u, ~0u }, victim;

	au_make(&s, n, DI_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	di_ops(a, model, info.size, 400, &rng);
	di_verify(a, model, info.size, "after discards and writes");
	di_scrub_clean(a, "after discards and writes");
	for (unsigned f = 0; f < nfail; f++) {
		failed[f] = f == 0 ? (unsigned)(tu_rand(&rng) % n) : (failed[0] + 2) % n;
		cr_assert_eq(graid_array_fail_member(a, failed[f]), 0);
		di_ops(a, model, info.size, 200, &rng);
	}
	di_verify(a, model, info.size, "degraded");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
	di_verify(a, model, info.size, "after a reopen");
	cr_assert_eq(graid_array_close(a), 0);
	if (level == 0 || nfail)
		goto out;
	if (!GRAID_FAULT_INJECTION) {
		cr_log_info("the member failing mid-run is left out: this build has no fault "
			    "injection (-Dfault_injection)");
		goto out;
	}

	/* A member whose writes fail after a few: it drops out in the middle of the work. */
	victim = (unsigned)(tu_rand(&rng) % n);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=%u:%s",
		 (unsigned)(20 + tu_rand(&rng) % 60), s.paths[victim]);
	paths[victim] = spec;
	cr_assert_eq(graid_array_open(paths, n, NULL, &a), 0);
	di_ops(a, model, info.size, 300, &rng);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 1, "the faulty member failed during the run");
	di_verify(a, model, info.size, "after a member failed mid-run");
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0, k = 0; i < n; i++)
		if (i != victim)
			paths[k++] = s.paths[i];
	cr_assert_eq(graid_array_open(paths, n - 1, NULL, &a), 0);
	di_verify(a, model, info.size, "reopened without the failed member");
	cr_assert_eq(graid_array_close(a), 0);
out:
	free(model);
	au_remove(&s);
}

Test(discard, raid0_matches_the_model, .timeout = 600) { di_run(0, 3, 16384, 0); }
Test(discard, raid1_matches_the_model, .timeout = 600) { di_run(1, 3, 4096, 0); }
Test(discard, raid1_matches_the_model_degraded, .timeout = 600) { di_run(1, 3, 4096, 2); }
Test(discard, raid5_matches_the_model, .timeout = 600) { di_run(5, 4, 16384, 0); }
Test(discard, raid5_matches_the_model_degraded, .timeout = 600) { di_run(5, 5, 4096, 1); }
Test(discard, raid6_matches_the_model, .timeout = 600) { di_run(6, 6, 8192, 0); }
Test(discard, raid6_matches_the_model_two_failed, .timeout = 600) { di_run(6, 6, 8192, 2); }
Test(discard, raid10_matches_the_model, .timeout = 600) { di_run(10, 4, 8192, 0); }
Test(discard, raid10_matches_the_model_degraded, .timeout = 600) { di_run(10, 5, 4096, 1); }

static uint64_t di_blocks(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* Whole stripes are deallocated on every member file, parity too: they become holes. */
Test(discard, whole_stripes_become_holes_in_every_member)
{
	const uint64_t size = 2u << 20;
	struct au_set s;
	struct graid_array *a;
	uint8_t *buf = malloc(size), *back = malloc(size);
	uint64_t before[4];

	au_make(&s, 4, DI_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 16384, &a), 0);
	memset(buf, 0xa5, size);
	cr_assert_eq(graid_array_write(a, buf, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i < 4; i++)
		before[i] = di_blocks(s.paths[i]);
	cr_assert_eq(graid_array_discard(a, 0, size), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_leq(di_blocks(s.paths[i]) + size / 3 - 65536, before[i],
			      "member %u: %llu bytes allocated before, %llu after", i,
			      (unsigned long long)before[i],
			      (unsigned long long)di_blocks(s.paths[i]));
	cr_assert_eq(graid_array_read(a, back, size, 0), (ssize_t)size);
	memset(buf, 0, size);
	cr_assert_eq(memcmp(back, buf, size), 0);
	di_scrub_clean(a, "after the discard");
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(back);
	au_remove(&s);
}

/*
 * Misaligned or out of range: -EINVAL, and the array reads as before. On a read-only handle
 * (which writes nothing at all, not even superblocks) every member file is byte for byte
 * what it was: -EINVAL and -EROFS alike.
 */
Test(discard, refused_calls_change_nothing)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *buf = malloc(65536), *back;
	uint64_t hash[4];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 4, DI_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 6, 4096, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	memset(buf, 0x3c, 65536);
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536);
	cr_assert_eq(graid_array_discard(a, 512, 4096), -EINVAL);
	cr_assert_eq(graid_array_discard(a, 0, 100), -EINVAL);
	cr_assert_eq(graid_array_write_zeroes(a, info.size - 4096, 8192), -EINVAL);
	cr_assert_eq(graid_array_discard(a, info.size + 4096, 4096), -EINVAL);
	cr_assert_eq(graid_array_discard(NULL, 0, 4096), -EINVAL);
	cr_assert_eq(graid_queue_create(a, 4, &q), 0);
	cr_assert_eq(graid_queue_discard(q, 4096, 4095, 1), -EINVAL);
	cr_assert_eq(graid_queue_write_zeroes(NULL, 0, 4096, 1), -EINVAL);
	cr_assert_eq(graid_queue_destroy(q), 0);
	back = calloc(1, info.size);
	memset(back, 0x3c, 65536);
	di_verify(a, back, info.size, "after refused calls");
	di_scrub_clean(a, "after refused calls");
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 4; i++)
		hash[i] = au_file_hash(s.paths[i]);
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &a), 0);
	cr_assert_eq(graid_array_discard(a, 0, 4096), -EROFS);
	cr_assert_eq(graid_array_write_zeroes(a, 0, 4096), -EROFS);
	cr_assert_eq(graid_array_discard(a, 512, 4096), -EINVAL);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), hash[i], "member %u changed", i);
	free(back);
	free(buf);
	au_remove(&s);
}

/* More members lost than the level tolerates: -EIO, for discards as for writes. */
Test(discard, a_failed_array_returns_eio)
{
	const char *paths[3];
	char spec[2][400];
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	au_make(&s, 3, DI_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 4096, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Two members whose every data write fails: the first discard loses both. */
	for (unsigned i = 0; i < 2; i++) {
		snprintf(spec[i], sizeof(spec[i]), "faulty:write-eio-after=0:%s", s.paths[i]);
		paths[i] = spec[i];
	}
	paths[2] = s.paths[2];
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_discard(a, 0, 65536), -EIO);
	cr_assert_eq(graid_array_discard(a, 0, 65536), -EIO);
	cr_assert_eq(graid_array_write_zeroes(a, 4096, 4096), -EIO);
	graid_array_close(a);
	au_remove(&s);
}

/* Many discards, zeroes and writes in flight on one queue, none overlapping. */
Test(discard, queued_discards_complete_with_their_length)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_completion c[16];
	uint64_t rng = tu_seed();
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;
	const uint64_t piece = 96 * 1024;
	unsigned done = 0;

	au_make(&s, 5, DI_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = malloc(info.size);
	tu_fill(&rng, model, info.size);
	cr_assert_eq(graid_array_write(a, model, info.size, 0), (ssize_t)info.size);
	cr_assert_eq(graid_queue_create(a, 16, &q), 0);
	for (unsigned i = 0; i < 16; i++) {
		uint64_t off = i * piece * 2 + (i % 3) * 4096;
		int rc = i % 2 ? graid_queue_discard(q, off, piece, i)
			       : graid_queue_write_zeroes(q, off, piece, i);

		cr_assert_eq(rc, 0);
		memset(model + off, 0, piece);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	while (done < 16) {
		int got = graid_queue_reap(q, c, 16, 1);

		cr_assert_gt(got, 0);
		for (int k = 0; k < got; k++)
			cr_assert_eq(c[k].result, (int64_t)piece, "request %llu: %lld",
				     (unsigned long long)c[k].user_data, (long long)c[k].result);
		done += (unsigned)got;
	}
	cr_assert_eq(graid_queue_destroy(q), 0);
	di_verify(a, model, info.size, "after the queued discards");
	di_scrub_clean(a, "after the queued discards");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* An array with the write-hole journal writes its zeroes through the journal. */
Test(discard, journaled_arrays_write_their_zeroes, .timeout = 600)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = 8192, .backend = "isal",
					  .flags = GRAID_CREATE_JOURNAL };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x6a;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;

	au_make(&s, 4, DI_MEMBER_BYTES + (32u << 20));
	cr_assert_eq(graid_array_create(s.paths, 4, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	di_ops(a, model, info.size, 300, &rng);
	di_verify(a, model, info.size, "journaled");
	di_scrub_clean(a, "journaled");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	di_verify(a, model, info.size, "journaled, reopened");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
