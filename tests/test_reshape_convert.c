/* SPDX-License-Identifier: MIT */
/*
 * RAID-5 -> RAID-6 by adding one member, Q-last (docs/RESHAPE.md, "RAID-5 to RAID-6, Q-last,
 * as built"), on member files: the layout's placement, the superblock's Q_LAST bit, a RAID-5
 * of four converted with known data (every byte back, a scrub clean, then two members failed:
 * every byte still reads, spares rebuilt, clean again; reopened), I/O during the conversion,
 * a close mid-way resumed by the next open, a member failing mid-way, and bad input refused
 * with nothing written. Crashes at any member write are test_reshape_crash.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "cututil.h"
#include "growutil.h"
#include "array/array.h"
#include "format/layout.h"
#include "format/superblock.h"
#include "jobs/reshape_grow.h"

#define CHUNK (16u * 1024)
/* Members of 12 MiB: windows of about 5 MiB, so that a paced job is seen mid-way. */
#define BYTES (12ull << 20)
#define BLK 4096u

/* ---- the layout ------------------------------------------------------------------------ */

/*
 * Q-last over n members: Q on member n-1 in every stripe; data and P exactly where a RAID-5
 * of n-1 members puts them; every role on its own member; unmap the inverse of map.
 */
Test(reshape_convert, q_last_places_data_and_p_as_the_raid5_and_q_on_the_last_member)
{
	for (unsigned n = 4; n <= 9; n++) {
		struct layout q, r5;

		cr_assert_eq(layout_init_id(&q, 6, n, CHUNK, 64 * CHUNK, LAYOUT_Q_LAST), 0);
		cr_assert_eq(layout_init(&r5, 5, n - 1, CHUNK, 64 * CHUNK), 0);
		cr_assert_eq(q.ndata, r5.ndata);
		cr_assert_eq(q.array_bytes, r5.array_bytes, "a RAID-6 Q-last is the RAID-5's size");
		for (uint64_t s = 0; s < q.nstripes; s++) {
			bool seen[16] = { false };

			cr_assert_eq(layout_parity_member(&q, s, 1), n - 1);
			cr_assert_eq(layout_parity_member(&q, s, 0), layout_parity_member(&r5, s, 0));
			for (unsigned d = 0; d < q.ndata; d++)
				cr_assert_eq(layout_data_member(&q, s, d), layout_data_member(&r5, s, d));
			for (unsigned r = 0; r < q.ndata + 2; r++) {
				unsigned m = layout_role_member(&q, s, r);

				cr_assert_lt(m, n);
				cr_assert(!seen[m], "n %u stripe %llu: member %u twice", n,
					  (unsigned long long)s, m);
				seen[m] = true;
				cr_assert_eq(layout_member_role(&q, s, m), r, "n %u stripe %llu role %u",
					     n, (unsigned long long)s, r);
			}
		}
		for (uint64_t off = 0; off < q.array_bytes; off += CHUNK / 2) {
			struct layout_pos p, p5;
			uint64_t back;

			layout_map(&q, off, &p);
			layout_map(&r5, off, &p5);
			cr_assert_eq(p.member, p5.member);
			cr_assert_eq(p.member_off, p5.member_off);
			cr_assert_eq(layout_unmap(&q, p.member, p.member_off, &back), 0);
			cr_assert_eq(back, off);
		}
		cr_assert_eq(layout_unmap(&q, n - 1, 0, &(uint64_t){ 0 }), -ENODATA);
	}
	/* Q-last is a RAID-6 layout only; unknown ids are refused. */
	struct layout l;

	cr_assert_eq(layout_init_id(&l, 5, 4, CHUNK, 64 * CHUNK, LAYOUT_Q_LAST), -EINVAL);
	cr_assert_eq(layout_init_id(&l, 6, 4, CHUNK, 64 * CHUNK, 7), -EINVAL);
	cr_assert_eq(layout_init_id(&l, 6, 4, CHUNK, 64 * CHUNK, LAYOUT_ROTATING), 0);
	cr_assert_eq(l.layout_id, LAYOUT_ROTATING);
}

/* ---- member files ---------------------------------------------------------------------- */

/* The superblock of member file @p path. */
static void read_sb(const char *path, struct superblock *sb, uint8_t *raw)
{
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, raw, GRAID_SB_SIZE, 0), GRAID_SB_SIZE);
	close(fd);
	cr_assert_eq(sb_decode(raw, sb), 0, "%s: no valid superblock", path);
}

/* A RAID-5 of @p nold (and @p nadd more files, not in it) holding the model. */
static uint8_t *make_r5(struct au_set *s, unsigned nold, unsigned nadd, struct graid_array **out,
			uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nold + nadd, BYTES);
	cr_assert_eq(au_create(s, nold, 5, CHUNK, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	return model;
}

static void assert_level(struct graid_array *a, int level, unsigned n)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.level, level);
	cr_assert_eq(info.nmembers, n);
}

/* Every role of @p a ACTIVE again (a spare's rebuild done), within 20 s. */
static void wait_all_active(struct graid_array *a)
{
	for (unsigned i = 0; i < 4000; i++) {
		bool all = true;

		for (unsigned r = 0; r < a->nmembers; r++)
			all &= atomic_load(&a->members[r].state) == GRAID_MEMBER_ACTIVE;
		if (all && !atomic_load(&a->rebuild_bg_running))
			return;
		usleep(5000);
	}
	cr_assert_fail("the spares' rebuilds did not end");
}

/*
 * RAID-5 of four to RAID-6 of five: the same size, every byte, a scrub clean (Q checked);
 * the superblocks say RAID-6 Q-last; two members failed, every byte still reads (Q used);
 * spares rebuilt (the rebuild places Q-last), clean; reopened, clean.
 */
Test(reshape_convert, a_raid5_of_four_becomes_a_raid6_of_five_that_survives_two_failures)
{
	struct graid_array *a;
	struct superblock sb;
	uint8_t raw[GRAID_SB_SIZE];
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model = make_r5(&s, 4, 3, &a, &size, 1);

	gu_log_clear();
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_INFO);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_WAIT | GRAID_GROW_RAID6), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "becoming a RAID-6"), "%s", gu_log_text);
	cr_assert_null(strstr(gu_log_text, "staged copy"), "nothing is staged: %s", gu_log_text);
	cr_assert_eq(gu_array_bytes(a, &n), size, "the size is kept");
	cr_assert_eq(n, 5);
	assert_level(a, 6, 5);
	cr_assert_eq(a->lay.layout_id, LAYOUT_Q_LAST);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the conversion");
	for (unsigned i = 0; i < 5; i++) {
		read_sb(s.paths[i], &sb, raw);
		cr_assert_eq(sb.level, 6);
		cr_assert_eq(sb.nmembers, 5);
		cr_assert_eq(sb.version, GRAID_SB_VERSION_MAJOR_FEATURES);
		cr_assert(sb.flags & GRAID_SB_F_Q_LAST);
		cr_assert(!(sb.flags & GRAID_SB_F_RESHAPE));
		cr_assert_eq(sb_layout_id(&sb), LAYOUT_Q_LAST);
	}
	/* No grow takes a Q-last RAID-6 (its record would describe the rotating layout). */
	{
		uint64_t h = au_file_hash(s.paths[5]);

		gu_log_clear();
		graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
		cr_assert_eq(graid_array_grow(a, &s.paths[5], 1, 0), -EOPNOTSUPP);
		cr_assert_eq(graid_array_grow(a, &s.paths[5], 1, GRAID_GROW_RAID6), -EOPNOTSUPP);
		graid_log_set(NULL, NULL, GRAID_LOG_ERR);
		cr_assert(strstr(gu_log_text, "cannot be grown"), "%s", gu_log_text);
		cr_assert_eq(au_file_hash(s.paths[5]), h, "the device was written");
		assert_level(a, 6, 5);
	}
	/* The bit is the layout: on a RAID-5 it makes no sense and is refused. */
	sb.level = 5;
	sb.nmembers = 4;
	sb_encode(&sb, raw);
	cr_assert_eq(sb_decode(raw, &sb), -EPROTO);
	/* Two members out (one the Q member): every byte from the survivors. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	gu_check_all(a, model, size);
	{
		/* Writes degraded (read-modify-write and reconstruct-write around two holes). */
		uint8_t *buf = aligned_alloc(BLK, 3 * CHUNK);
		uint64_t seed = 3;

		cr_assert_not_null(buf);
		for (unsigned i = 0; i < 64; i++) {
			uint64_t len = (1 + gu_rng(&seed) % (3 * CHUNK / BLK)) * BLK;
			uint64_t off = gu_rng(&seed) % ((size - len) / BLK + 1) * BLK;

			gu_fill(buf, len, gu_rng(&seed));
			cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
			memcpy(model + off, buf, len);
		}
		free(buf);
	}
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_add_spare(a, s.paths[5]), 0);
	cr_assert_eq(graid_array_add_spare(a, s.paths[6]), 0);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the spares' rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 7, NULL, &a), 0);
	assert_level(a, 6, 5);
	cr_assert_eq(a->lay.layout_id, LAYOUT_Q_LAST);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");
	/* Two more out, reading from what is left once more, then closed and looked at. */
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Junk over @p len bytes of member file @p path at @p off (a torn write). */
static void tear(const char *path, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *junk = malloc(len);
	FILE *f = fopen(path, "r+b");

	cr_assert(junk && f);
	gu_fill(junk, len, seed);
	cr_assert_eq(fseeko(f, (off_t)off, SEEK_SET), 0);
	cr_assert_eq(fwrite(junk, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(junk);
}

/*
 * The converted array after the conversion: a crash (no write lands) after a write leaves
 * its row dirty; Q of the row torn on the Q member; the unclean open's resync recomputes P
 * and Q where Q-last puts them (two data members of the row then out: the bytes still
 * read); a discard reads zeroes, with parity a scrub finds right.
 */
Test(reshape_convert, the_raid6_q_last_resyncs_and_discards_in_its_layout)
{
	struct graid_array *a;
	struct au_set s;
	struct layout l;
	uint64_t size, at, row, data_off;
	uint8_t *model = make_r5(&s, 4, 1, &a, &size, 17);
	uint8_t *buf = aligned_alloc(BLK, CHUNK);

	cr_assert_not_null(buf);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_WAIT | GRAID_GROW_RAID6), 0);
	l = a->lay;
	data_off = a->data_offset;
	at = size / 2 / CHUNK * CHUNK;
	gu_fill(buf, CHUNK, 18);
	cr_assert_eq(graid_array_write(a, buf, CHUNK, at), (ssize_t)CHUNK);
	memcpy(model + at, buf, CHUNK);
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cut's failures are expected */
	fault_writes_cut_after(0);
	graid_array_close(a);
	fault_writes_cut_after(-1);
	row = at / ((uint64_t)l.chunk * l.ndata);
	cr_assert_eq(layout_parity_member(&l, row, 1), 4);
	tear(s.path[4], data_off + row * l.chunk, l.chunk, 19);
	gu_log_clear();
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_NOTICE);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, "resync"), "%s", gu_log_text);
	cr_assert_eq(a->lay.layout_id, LAYOUT_Q_LAST);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the unclean open's resync");
	/* A discard of some stripes and a piece of one. */
	cr_assert_eq(graid_array_discard(a, 3 * CHUNK, 9 * CHUNK + BLK), 0);
	memset(model + 3 * CHUNK, 0, 9 * CHUNK + BLK);
	cr_assert_eq(graid_array_write_zeroes(a, size - 7 * CHUNK, 5 * CHUNK), 0);
	memset(model + size - 7 * CHUNK, 0, 5 * CHUNK);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the discard");
	/* Two data members of the written row out: its bytes from P and Q. */
	cr_assert_eq(graid_array_fail_member(a, layout_data_member(&l, row, 0)), 0);
	cr_assert_eq(graid_array_fail_member(a, layout_data_member(&l, row, 1)), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
	au_remove(&s);
}

struct waiter {
	struct graid_array *a;
	atomic_bool done;
	int rc;
};

static void *wait_job(void *arg)
{
	struct waiter *w = arg;

	w->rc = reshape_job_wait(w->a);
	atomic_store(&w->done, true);
	return NULL;
}

/* Reads, writes and write-zeroes while the job computes Q: both sides of the position. */
Test(reshape_convert, writes_and_reads_while_it_converts_are_right_after)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 7, during;
	uint8_t *model = make_r5(&s, 4, 1, &a, &size, 7);

	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = 3 * CHUNK, .zeroes = true });
	cr_assert_gt(during, 20, "too few requests ran during the conversion");
	assert_level(a, 6, 5);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after I/O during the conversion");
	/* Q is right where the writes went: two members out, every byte still there. */
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* The smallest: a RAID-5 of three becomes a RAID-6 of four; 64 KiB chunks. */
Test(reshape_convert, a_raid5_of_three_becomes_a_raid6_of_four)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model;

	au_make(&s, 4, BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 64u * 1024, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	cr_assert_not_null(model);
	gu_fill(model, size, 31);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	cr_assert_eq(graid_array_grow(a, &s.paths[3], 1, GRAID_GROW_WAIT | GRAID_GROW_RAID6), 0);
	cr_assert_eq(gu_array_bytes(a, &n), size);
	cr_assert_eq(n, 4);
	assert_level(a, 6, 4);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "3 -> 4");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * An async queue: writes queued before the conversion and not reaped (the job waits for
 * them), then rounds of 32 writes in flight at once, each straddling two chunks, some
 * below the position (RAID-6), some at or past it (RAID-5), parked on the windows' locks.
 */
Test(reshape_convert, queued_writes_across_the_start_and_the_windows_are_right)
{
	struct graid_completion c[64];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 99, rounds = 0;
	uint8_t *model = make_r5(&s, 4, 1, &a, &size, 21);
	uint8_t *bufs = aligned_alloc(BLK, 32 * (size_t)CHUNK);
	struct waiter w = { 0 };
	pthread_t t;
	unsigned got;

	cr_assert_not_null(bufs);
	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_queue_create(a, 64, &q), 0);
	for (unsigned i = 0; i < 32; i++) {
		uint64_t off = (3 * (uint64_t)i + gu_rng(&seed) % 3) % (size / CHUNK) * CHUNK;

		gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
		memcpy(model + off, bufs + i * (size_t)CHUNK, CHUNK);
		cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, off, i), 0);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	for (got = 0; got < 32;) {
		int n = graid_queue_reap(q, c, 64, 1);

		cr_assert_gt(n, 0);
		for (int i = 0; i < n; i++)
			cr_assert_eq(c[i].result, (int64_t)CHUNK);
		got += (unsigned)n;
	}
	w.a = a;
	cr_assert_eq(pthread_create(&t, NULL, wait_job, &w), 0);
	do {
		uint64_t offs[32];

		for (unsigned i = 0; i < 32; i++) {
			bool dup;

			do {
				offs[i] = (gu_rng(&seed) % (size / CHUNK - 1)) * CHUNK + BLK;
				dup = false;
				for (unsigned k = 0; k < i; k++)
					dup |= offs[i] + CHUNK > offs[k] && offs[k] + CHUNK > offs[i];
			} while (dup);
			gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
			cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, offs[i], i),
				     0);
		}
		cr_assert_geq(graid_queue_submit(q), 0);
		for (got = 0; got < 32;) {
			int n = graid_queue_reap(q, c, 64, 1);

			cr_assert_gt(n, 0);
			for (int i = 0; i < n; i++)
				cr_assert_eq(c[i].result, (int64_t)CHUNK);
			got += (unsigned)n;
		}
		for (unsigned i = 0; i < 32; i++)
			memcpy(model + offs[i], bufs + i * (size_t)CHUNK, CHUNK);
		rounds++;
	} while (!atomic_load(&w.done));
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, 0);
	cr_log_info("%llu rounds of 32 queued writes during the conversion",
		    (unsigned long long)rounds);
	cr_assert_gt(rounds, 2);
	graid_queue_destroy(q);
	assert_level(a, 6, 5);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after queued writes");
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(bufs);
	free(model);
	au_remove(&s);
}

Test(reshape_convert, a_close_mid_way_is_resumed_by_the_next_open)
{
	struct graid_array *a;
	struct superblock sb;
	uint8_t raw[GRAID_SB_SIZE];
	struct au_set s;
	uint64_t size;
	uint8_t *model = make_r5(&s, 4, 1, &a, &size, 5);

	gu_slow_down(a, 64u << 10);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	usleep(300000);
	cr_assert_eq(graid_array_close(a), 0);
	/* Mid-way: the superblocks say RAID-6 Q-last and reshaping. */
	read_sb(s.paths[0], &sb, raw);
	cr_assert_eq(sb.level, 6);
	cr_assert(sb.flags & GRAID_SB_F_RESHAPE);
	cr_assert(sb.flags & GRAID_SB_F_Q_LAST);
	/* A read-only look serves every byte by the recorded position. */
	{
		struct graid_open_options o = { .struct_size = sizeof(o),
						.flags = GRAID_OPEN_READ_ONLY };

		cr_assert_eq(graid_array_open(s.paths, 5, &o, &a), 0);
		gu_check_all(a, model, size);
		cr_assert_eq(graid_array_close(a), 0);
	}
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	gu_check_all(a, model, size);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	assert_level(a, 6, 5);
	cr_assert_eq(gu_array_bytes(a, NULL), size);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "resumed");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Member @p dm failing mid-way: an old one (the job goes on, Q of the rows after it computed
 * from the data recovered through P) or the added one (no Q can be written: the job goes on
 * without it, the rows marked); either way it finishes, the spare rebuilds the role after,
 * every byte reads back, clean, and two members more out lose nothing.
 */
static void fail_mid_way(unsigned dm, uint64_t seed)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, at;
	uint8_t *model = make_r5(&s, 4, 2, &a, &size, seed);
	uint8_t *buf = aligned_alloc(BLK, 2 * CHUNK);

	cr_assert_not_null(buf);
	cr_assert_eq(graid_array_add_spare(a, s.paths[5]), 0);
	gu_slow_down(a, 64u << 10);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	usleep(300000);
	at = atomic_load(&a->reshape_mem->position);
	cr_assert_gt(at, 0, "nothing converted yet");
	cr_assert_lt(at, size, "all converted already");
	cr_assert_eq(graid_array_fail_member(a, dm), 0);
	gu_check_all(a, model, size);
	for (unsigned i = 0; i < 64; i++) {
		uint64_t len = (1 + gu_rng(&seed) % (2 * CHUNK / BLK)) * BLK;
		uint64_t off = gu_rng(&seed) % ((size - len) / BLK + 1) * BLK;

		gu_fill(buf, len, gu_rng(&seed));
		cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
		memcpy(model + off, buf, len);
	}
	gu_check_all(a, model, size);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	assert_level(a, 6, 5);
	gu_check_all(a, model, size);
	wait_all_active(a);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the spare's rebuild");
	cr_assert_eq(graid_array_fail_member(a, dm == 0 ? 1 : 0), 0);
	cr_assert_eq(graid_array_fail_member(a, dm), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
	au_remove(&s);
}

Test(reshape_convert, an_old_member_failing_mid_way_loses_nothing)
{
	fail_mid_way(2, 11);
}

Test(reshape_convert, the_added_member_failing_mid_way_loses_nothing)
{
	fail_mid_way(4, 13);
}

/*
 * Mid-way, the Q member and then one old member out: the unconverted rows are a RAID-5 of
 * the old members missing one, the converted ones a RAID-6 missing two, so the array keeps
 * every byte (found by review: the RAID-5 rule was applied to all five roles, the second
 * fail refused and an I/O error broke the array); two more old members out is refused.
 * Reopened (not forced) it serves every byte and the conversion ends, degraded.
 */
Test(reshape_convert, the_q_member_and_one_old_member_out_mid_way_lose_nothing)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size, at;
	uint8_t *model = make_r5(&s, 4, 1, &a, &size, 17);

	gu_slow_down(a, 64u << 10);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	usleep(300000);
	at = atomic_load(&a->reshape_mem->position);
	cr_assert_gt(at, 0, "nothing converted yet");
	cr_assert_lt(at, size, "all converted already");
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0, "the second member out was refused");
	cr_assert(!atomic_load(&a->broken));
	cr_assert_eq(graid_array_fail_member(a, 2), -EBUSY, "a third member out was taken");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(reshape_job_wait(a), 0);
	assert_level(a, 6, 5);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * Refused before anything is written: the devices offered keep their bytes (the members'
 * own may change under the array's worker, so they are not hashed), the array its level.
 */
Test(reshape_convert, bad_input_is_refused_and_nothing_is_written)
{
	struct graid_array *a;
	struct au_set s, o;
	uint64_t size, h4, h5, hs;
	uint8_t *model = make_r5(&s, 4, 2, &a, &size, 9);
	const char *two[2] = { s.paths[4], s.paths[5] };
	char small[400];
	int fd;

	snprintf(small, sizeof(small), "%s/small", s.dir);
	fd = open(small, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, BYTES / 2), 0);
	close(fd);
	h4 = au_file_hash(s.paths[4]);
	h5 = au_file_hash(s.paths[5]);
	hs = au_file_hash(small);
	gu_log_clear();
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	/* Two devices: a RAID-6 gets exactly one more. */
	cr_assert_eq(graid_array_grow(a, two, 2, GRAID_GROW_RAID6), -EINVAL);
	cr_assert(strstr(gu_log_text, "exactly one"), "%s", gu_log_text);
	/* Too small. */
	cr_assert_eq(graid_array_grow(a, (const char *[]){ small }, 1, GRAID_GROW_RAID6), -EINVAL);
	/* Unknown flags. */
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0x80u), -EINVAL);
	/* A member out: the conversion starts only whole. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	gu_log_clear();
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), -EIO);
	cr_assert(strstr(gu_log_text, "every member in"), "%s", gu_log_text);
	cr_assert_eq(au_file_hash(s.paths[4]), h4);
	cr_assert_eq(au_file_hash(s.paths[5]), h5);
	cr_assert_eq(au_file_hash(small), hs);
	assert_level(a, 5, 4);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	/* Not a RAID-5: a RAID-6 already, and a RAID-0. */
	au_make(&o, 6, BYTES);
	cr_assert_eq(au_create(&o, 5, 6, CHUNK, &a), 0);
	h5 = au_file_hash(o.paths[5]);
	gu_log_clear();
	cr_assert_eq(graid_array_grow(a, &o.paths[5], 1, GRAID_GROW_RAID6), -EOPNOTSUPP);
	cr_assert(strstr(gu_log_text, "RAID-6 already"), "%s", gu_log_text);
	cr_assert_eq(au_file_hash(o.paths[5]), h5);
	assert_level(a, 6, 5);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&o);
	au_make(&o, 4, BYTES);
	cr_assert_eq(au_create(&o, 3, 0, CHUNK, &a), 0);
	gu_log_clear();
	cr_assert_eq(graid_array_grow(a, &o.paths[3], 1, GRAID_GROW_RAID6), -EOPNOTSUPP);
	cr_assert(strstr(gu_log_text, "RAID-0"), "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&o);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	unlink(small);
	free(model);
	au_remove(&s);
}

/*
 * Checksum tags are placed by one geometry: such RAID-5s are refused (a journaled one
 * converts: tests/test_reshape_grow_journal.c).
 */
static void refused_with(unsigned flags, const char *why)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = CHUNK, .backend = "isal",
					  .flags = flags };
	struct graid_array *a;
	struct au_set s;
	uint64_t before;

	au_make(&s, 5, 64ull << 20);
	cr_assert_eq(graid_array_create(s.paths, 4, &cfg, &a), 0);
	before = au_file_hash(s.path[4]);
	gu_log_clear();
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(gu_log_text, why), "%s", gu_log_text);
	cr_assert_eq(au_file_hash(s.path[4]), before, "the device was written");
	assert_level(a, 5, 4);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(reshape_convert, raid5s_with_checksums_are_refused)
{
	refused_with(GRAID_CREATE_CHECKSUMS, "checksums");
}
