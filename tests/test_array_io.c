/* SPDX-License-Identifier: MIT */
/* Arrays under concurrency, parity as it lies on the members, and the asynchronous queue. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <isa-l/raid.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define IO_MEMBER_BYTES ((1u << 20) + (2u << 20))

struct io_thread {
	struct graid_array *a;
	unsigned id, nthreads;
	uint64_t size;
	int rounds;
	int failures;
};

/* Block b always holds the pattern of (b, round): threads own the blocks b % nthreads == id. */
static void io_pattern(uint8_t *p, uint64_t block, int round)
{
	for (unsigned i = 0; i < 4096; i += 8) {
		uint64_t v = block * 0x9E3779B97F4A7C15ull ^ (uint64_t)round << 48 ^ i;

		memcpy(p + i, &v, 8);
	}
}

static void *io_writer(void *arg)
{
	struct io_thread *t = arg;
	uint8_t *buf;

	if (posix_memalign((void **)&buf, 4096, 4096))
		return NULL;
	for (int r = 0; r < t->rounds; r++)
		for (uint64_t b = t->id; b < t->size / 4096; b += t->nthreads) {
			io_pattern(buf, b, r);
			if (graid_array_write(t->a, buf, 4096, b * 4096) != 4096)
				t->failures++;
		}
	free(buf);
	return NULL;
}

/* Threads update different blocks of the same stripes at once; parity must stay right. */
Test(array_io, threads_writing_one_stripe_keep_parity_right, .timeout = 600)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct io_thread t[4];
	pthread_t th[4];
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf, *want;

	au_make(&s, 6, IO_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 6, 6, 4096, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (unsigned i = 0; i < 4; i++) {
		t[i] = (struct io_thread){ .a = a, .id = i, .nthreads = 4, .size = info.size,
					   .rounds = 3 };
		pthread_create(&th[i], NULL, io_writer, &t[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(t[i].failures, 0);
	}
	/* Lose two members: every block now comes back through the parity the threads wrote. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	buf = malloc(4096);
	want = malloc(4096);
	for (uint64_t b = 0; b < info.size / 4096; b++) {
		io_pattern(want, b, 2);
		cr_assert_eq(graid_array_read(a, buf, 4096, b * 4096), 4096);
		cr_assert_eq(memcmp(buf, want, 4096), 0, "block %llu wrong after losing two members",
			     (unsigned long long)b);
	}
	free(buf);
	free(want);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Read the member files directly and recompute parity with the documented layout
 * (docs/FORMAT.md: data at 1 MiB, md left-symmetric rotation), independently of the library.
 */
Test(array_io, parity_on_the_members_is_what_the_layout_documents, .timeout = 600)
{
	const unsigned n = 5, chunk = 4096;
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x646973;
	struct graid_array *a;
	struct au_set s;
	uint8_t *data, *blk[5], *mine[5];
	int fd[5];

	au_make(&s, n, IO_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, 6, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	data = malloc(info.size);
	tu_fill(&rng, data, info.size);
	/* Written in odd pieces so partial-stripe paths produce the parity too. */
	for (uint64_t off = 0; off < info.size;) {
		uint64_t len = (1 + tu_rand(&rng) % 7) * 4096;

		if (len > info.size - off)
			len = info.size - off;
		cr_assert_eq(graid_array_write(a, data + off, len, off), (ssize_t)len);
		off += len;
	}
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < n; i++) {
		fd[i] = open(s.path[i], O_RDONLY);
		cr_assert_geq(fd[i], 0);
		cr_assert_eq(posix_memalign((void **)&blk[i], 64, chunk), 0);
		cr_assert_eq(posix_memalign((void **)&mine[i], 64, chunk), 0);
	}
	for (uint64_t st = 0; st < info.size / (chunk * (n - 2)); st++) {
		unsigned p = n - 1 - (unsigned)(st % n), q = (p + 1) % n;

		for (unsigned m = 0; m < n; m++)
			cr_assert_eq(pread(fd[m], blk[m], chunk, (off_t)((1u << 20) + st * chunk)),
				     (ssize_t)chunk);
		for (unsigned d = 0; d < n - 2; d++) {
			unsigned m = (p + 2 + d) % n;

			cr_assert_eq(memcmp(blk[m], data + (st * (n - 2) + d) * chunk, chunk), 0,
				     "stripe %llu data %u not on member %u", (unsigned long long)st,
				     d, m);
			memcpy(mine[d], blk[m], chunk);
		}
		cr_assert_eq(pq_gen((int)n, (int)chunk, (void **)mine), 0);
		cr_assert_eq(memcmp(mine[n - 2], blk[p], chunk), 0, "stripe %llu: P wrong",
			     (unsigned long long)st);
		cr_assert_eq(memcmp(mine[n - 1], blk[q], chunk), 0, "stripe %llu: Q wrong",
			     (unsigned long long)st);
	}
	for (unsigned i = 0; i < n; i++) {
		close(fd[i]);
		free(blk[i]);
		free(mine[i]);
	}
	free(data);
	au_remove(&s);
}

/* A deep queue of mixed reads and writes completes each request once, with its own result. */
Test(array_io, a_deep_queue_completes_every_request_once, .timeout = 600)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x717565;
	struct graid_completion c[64];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model, *bufs;
	unsigned char seen[256] = { 0 };
	unsigned outstanding = 0, done = 0;

	au_make(&s, 6, IO_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 6, 6, 16384, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	cr_assert_eq(posix_memalign((void **)&bufs, 4096, 256 * 8192), 0);
	cr_assert_eq(graid_queue_create(a, 64, &q), 0);
	/* Writes to disjoint 8 KiB slots, so the model does not depend on completion order. */
	for (unsigned i = 0; i < 256; i++) {
		uint64_t off = (uint64_t)i * (info.size / 256 / 8192) * 8192;

		tu_fill(&rng, bufs + i * 8192, 8192);
		memcpy(model + off, bufs + i * 8192, 8192);
		while (graid_queue_write(q, bufs + i * 8192, 8192, off, i) == -EAGAIN) {
			int n = graid_queue_reap(q, c, 64, 1);

			for (int k = 0; k < n; k++) {
				cr_assert_eq(c[k].result, 8192);
				cr_assert_eq(seen[c[k].user_data]++, 0, "completed twice");
				done++;
				outstanding--;
			}
		}
		outstanding++;
		if (i % 16 == 15)
			cr_assert_geq(graid_queue_submit(q), 0);
	}
	while (outstanding) {
		int n = graid_queue_reap(q, c, 64, 1);

		cr_assert_gt(n, 0);
		for (int k = 0; k < n; k++) {
			cr_assert_eq(c[k].result, 8192);
			cr_assert_eq(seen[c[k].user_data]++, 0, "completed twice");
			done++;
			outstanding--;
		}
	}
	cr_assert_eq(done, 256);
	cr_assert_eq(graid_queue_destroy(q), 0);
	for (unsigned i = 0; i < 256; i++) {
		uint64_t off = (uint64_t)i * (info.size / 256 / 8192) * 8192;

		cr_assert_eq(graid_array_read(a, bufs, 8192, off), 8192);
		cr_assert_eq(memcmp(bufs, model + off, 8192), 0, "slot %u", i);
	}
	free(bufs);
	free(model);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(array_io, info_names_members_their_identity_and_counters)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;

	au_make(&s, 4, IO_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.level, 5);
	cr_assert_eq(info.nmembers, 4);
	cr_assert_eq(info.chunk_bytes, 65536);
	cr_assert_eq(info.block_size, 4096);
	cr_assert_eq(info.size, 3ull * (2u << 20));
	cr_assert_str_eq(info.engine, "isal");
	buf = calloc(1, 65536 * 3);
	cr_assert_eq(graid_array_write(a, buf, 65536 * 3, 0), 65536 * 3);
	cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
	cr_assert_str_eq(mi.path, s.path[2]);
	cr_assert_not_null(strstr(mi.identity, "ino"));
	cr_assert_eq(mi.writes, 1, "member 2 writes: %llu", (unsigned long long)mi.writes);
	cr_assert_eq(mi.write_bytes, 65536);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), -EINVAL);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A caller that only polls (min_complete 0) sees its requests finish. */
Test(array_io, polling_with_min_zero_reaps_finished_requests, .timeout = 60)
{
	struct graid_completion c[8];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;
	int got = 0, polls = 0;

	au_make(&s, 4, IO_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 4096, &a), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 8 * 4096), 0);
	memset(buf, 7, 8 * 4096);
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(graid_queue_write(q, buf + i * 4096, 4096, (uint64_t)i * 40960, i), 0);
	cr_assert_geq(graid_queue_submit(q), 0);
	while (got < 8 && polls++ < 2000000) {
		int n = graid_queue_reap(q, c, 8, 0);

		cr_assert_geq(n, 0);
		got += n;
	}
	cr_assert_eq(got, 8, "only %d of 8 requests seen after %d polls", got, polls);
	graid_queue_destroy(q);
	free(buf);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * Many 1 MiB writes in flight on one queue, over a RAID-5 whose stripe (5 x 64 KiB) does not
 * divide 1 MiB: whole-stripe runs and partial stripes of neighbouring requests share stripes
 * and wait for each other's locks. Every byte must land where it was written (a recycled
 * stripe operation once kept its previous plan and wrote a run's data at a parked stripe).
 */
Test(array_io, overlapping_runs_and_partial_stripes_in_flight_land_in_place, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x72756e;
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_completion c[8];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *data, *back;
	uint64_t size;

	au_make(&s, 6, (1u << 20) + (8u << 20));
	cr_assert_eq(au_create(&s, 6, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	size = info.size / (1u << 20) * (1u << 20);
	cr_assert_eq(posix_memalign((void **)&data, 4096, size), 0);
	cr_assert_eq(posix_memalign((void **)&back, 4096, size), 0);
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	/* Twice, so the second pass runs on stripe operations the first one recycled. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t next = 0, done = 0;

		tu_fill(&rng, data, size);
		while (done < size) {
			int n;

			while (next < size &&
			       graid_queue_write(q, data + next, 1u << 20, next, next) == 0)
				next += 1u << 20;
			n = graid_queue_reap(q, c, 8, 1);
			cr_assert_gt(n, 0);
			for (int i = 0; i < n; i++) {
				cr_assert_eq(c[i].result, 1 << 20);
				done += 1u << 20;
			}
		}
	}
	graid_queue_destroy(q);
	cr_assert_eq(graid_array_read(a, back, size, 0), (ssize_t)size);
	for (uint64_t off = 0; off < size; off += 4096)
		cr_assert_eq(memcmp(back + off, data + off, 4096), 0,
			     "block at %llu holds other data (seed %llu)", (unsigned long long)off,
			     (unsigned long long)tu_seed());
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	graid_array_close(a);
	free(data);
	free(back);
	au_remove(&s);
}
