/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-5/6 that keeps a write-hole journal (docs/JOURNAL.md, "Across a grow"):
 * requests during the move log their bytes in the geometry they are placed by, the added
 * roles log from the start, and a replay after a crash leaves alone the entries whose old
 * rows the move has written new rows over (replaying them would put old bytes there).
 * The crashes with writes going on are in tests/test_reshape_crash.c (its journaled
 * variants). A journaled RAID-5 also becomes a RAID-6 (Q-last), whose rows keep their
 * places: nothing of its log is spent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "format/layout.h"
#include "jobs/reshape_grow.h"
#include "testutil.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56;
extern _Atomic int graid__test_journal_full;
#else
static bool graid__test_grow56; /* no switch in a release build: setup() skips */
static _Atomic int graid__test_journal_full;
#endif

#define CHUNK (16u * 1024)
/* The journal's log (32 MiB at least) and a few MiB of data on each member. */
#define MEMBER_BYTES (40ull << 20)
#define BLK 4096u

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("RAID-5/6 growing is switched off; its tests turn it on with "
		     "graid__test_grow56, which exists only with -Dfault_injection");
#endif
	graid__test_grow56 = true;
}

static int create_journaled(struct au_set *s, unsigned n, int level, struct graid_array **a)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_JOURNAL | GRAID_CREATE_FORCE };

	return graid_array_create(s->paths, n, &cfg, a);
}

/* A journaled RAID-@p level of @p nold (and @p nadd more files) holding the model. */
static uint8_t *make_journaled(struct au_set *s, int level, unsigned nold, unsigned nadd,
			       struct graid_array **a, uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nold + nadd, MEMBER_BYTES);
	cr_assert_eq(create_journaled(s, nold, level, a), 0);
	*size = gu_array_bytes(*a, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*a, model, *size, 0), (ssize_t)*size);
	return model;
}

/*
 * Writes, write-zeroes and reads while the rows move, in both geometries; all right after
 * (a scrub clean) and reopened; the grown array keeps its journal.
 */
static void io_during(int level, unsigned nold, uint64_t seed)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	unsigned n;
	uint8_t *model = make_journaled(&s, level, nold, 1, &a, &size, seed);

	gu_grow_with_io(a, &s, nold, model, size, seed, 3 * CHUNK);
	cr_assert_eq(graid_array_open(s.paths, nold + 1, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_gt(info.journal_bytes, 0, "the grown array lost its journal");
	cr_assert_eq(gu_array_bytes(a, &n), size / gu_ndata(level, nold) * gu_ndata(level, nold + 1));
	cr_assert_eq(n, nold + 1);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow_journal, raid5_grows_with_writes_and_reads_during_the_move, .init = setup,
     .timeout = 300)
{
	io_during(5, 4, 41);
}

Test(reshape_grow_journal, raid6_grows_with_writes_and_reads_during_the_move, .init = setup,
     .timeout = 300)
{
	io_during(6, 6, 42);
}

/* What killed_after_the_move() does. */
struct kill_plan {
	int level;
	unsigned nold;
	unsigned first_add;  /* a first grow (waited for) in the same open, then all written again */
	unsigned nadd;       /* the grow the process dies in (or after) */
	unsigned stop_pct;   /* of it (100: after it ended) */
	uint64_t seed;
	bool to6;            /* that one a RAID-5's conversion to RAID-6 (GRAID_GROW_RAID6) */
	/*
	 * After the death, array byte 0's chunk (a row the move has passed) overwritten on its
	 * member with bytes nobody wrote: a write the member lost before flushing it.
	 */
	bool lose_chunk0;
};

/*
 * A process writes the whole array (its log keeps the last updates' entries, in the old
 * geometry), grows it, and dies without closing once the move has passed p->stop_pct
 * percent of the array (100: after the grow ended); with p->first_add, a first grow in the
 * same open went before, and the array was written whole again. The next open replays its
 * log: the entries of old rows the move wrote new rows over must be left, or they overwrite
 * moved data.
 */
static void killed_after_the_move(const struct kill_plan *p)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const unsigned nmid = p->nold + p->first_add, nall = nmid + p->nadd;
	struct graid_array *a;
	struct au_set s;
	uint64_t size0, size;
	uint8_t *model;
	int status;
	pid_t pid;

	struct layout_pos at0;
	uint64_t data_offset;

	au_make(&s, nall, MEMBER_BYTES);
	cr_assert_eq(create_journaled(&s, p->nold, p->level, &a), 0);
	size0 = gu_array_bytes(a, NULL);
	layout_map(&a->lay, 0, &at0);
	data_offset = a->data_offset;
	cr_assert_eq(graid_array_close(a), 0);
	/* What the second write covers; the first writes its first size0 bytes. */
	size = p->to6 ? size0 : size0 / gu_ndata(p->level, p->nold) * gu_ndata(p->level, nmid);
	model = aligned_alloc(BLK, size);
	cr_assert_not_null(model);
	gu_fill(model, size, p->seed);

	pid = fork();
	if (pid == 0) {
		graid_log_set(NULL, NULL, 0);
		if (graid_array_open(s.paths, p->nold, NULL, &a) ||
		    graid_array_write(a, model, size0, 0) != (ssize_t)size0)
			_exit(3);
		if (p->first_add &&
		    (graid_array_grow(a, &s.paths[p->nold], p->first_add, GRAID_GROW_WAIT) ||
		     gu_array_bytes(a, NULL) != size ||
		     graid_array_write(a, model, size, 0) != (ssize_t)size))
			_exit(7);
		if (p->stop_pct >= 100)
			_exit(graid_array_grow(a, &s.paths[nmid], p->nadd,
					       GRAID_GROW_WAIT | (p->to6 ? GRAID_GROW_RAID6 : 0)) ? 4 : 0);
		gu_slow_down(a, 8u << 20);
		if (graid_array_grow(a, &s.paths[nmid], p->nadd, p->to6 ? GRAID_GROW_RAID6 : 0))
			_exit(4);
		for (int i = 0; i < 3000; i++) {
			if (graid_array_info(a, &info) || !info.reshaping)
				_exit(5); /* ended before the point: the test proves nothing */
			if (info.reshape_done * 100 >= info.reshape_total * p->stop_pct)
				_exit(0); /* no close: the next open is unclean */
			usleep(10 * 1000);
		}
		_exit(6);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with %d",
		  status);
	au_wait_unlocked(s.paths, nall);
	if (p->lose_chunk0) {
		uint8_t *junk = aligned_alloc(BLK, CHUNK);
		int fd = open(s.path[at0.member], O_WRONLY);

		cr_assert(junk && fd >= 0);
		gu_fill(junk, CHUNK, p->seed + 1000);
		cr_assert_eq(pwrite(fd, junk, CHUNK, (off_t)(data_offset + at0.member_off)),
			     (ssize_t)CHUNK);
		close(fd);
		free(junk);
	}
	gu_log_text[0] = '\0';
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_NOTICE);
	cr_assert_eq(graid_array_open(s.paths, nall, NULL, &a), 0, "%s", gu_log_text);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	gu_check_all(a, model, size);
	if (a->reshape_job)
		cr_assert_eq(reshape_job_wait(a), 0);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after the replay");
	if (p->to6 && p->stop_pct < 100)
		/* Rows kept in place: every entry replayed, none spent. */
		cr_assert(strstr(gu_log_text, "place), 0 spent") &&
			  !strstr(gu_log_text, " 0 updates replayed"), "%s", gu_log_text);
	else if (p->stop_pct < 100)
		/* The log held entries of rows the move had passed: found, and left. */
		cr_assert(strstr(gu_log_text, "spent (a grow had moved their rows)") &&
			  !strstr(gu_log_text, "place), 0 spent"), "%s", gu_log_text);
	else
		/*
		 * The end voided every entry before the superblocks stopped recording the grow:
		 * none is left for a reader that would replay an old-geometry one whole.
		 */
		cr_assert(strstr(gu_log_text, "0 updates replayed, 0 dropped") &&
			  strstr(gu_log_text, "place), 0 spent"), "%s", gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_grow_journal, raid5_entries_of_rows_moved_before_a_crash_are_not_replayed,
     .init = setup, .timeout = 300)
{
	killed_after_the_move(&(struct kill_plan){ .level = 5, .nold = 4, .nadd = 1,
						   .stop_pct = 50, .seed = 43 });
}

Test(reshape_grow_journal, raid6_entries_of_rows_moved_before_a_crash_are_not_replayed,
     .init = setup, .timeout = 300)
{
	killed_after_the_move(&(struct kill_plan){ .level = 6, .nold = 6, .nadd = 1,
						   .stop_pct = 50, .seed = 44 });
}

Test(reshape_grow_journal, the_end_of_a_grow_voids_every_entry_before_it, .init = setup,
     .timeout = 300)
{
	killed_after_the_move(&(struct kill_plan){ .level = 5, .nold = 4, .nadd = 1,
						   .stop_pct = 100, .seed = 45 });
}

/*
 * Two grows in one open, the first adding two members at once (RAID-6 4 -> 6), the second
 * (6 -> 7) cut half-way: the first grow's geometries and the second's old one all met.
 */
Test(reshape_grow_journal, raid6_a_second_grow_in_one_open_cut_half_way, .init = setup,
     .timeout = 300)
{
	killed_after_the_move(&(struct kill_plan){ .level = 6, .nold = 4, .first_add = 2,
						   .nadd = 1, .stop_pct = 50, .seed = 47 });
}

/*
 * A journaled RAID-5 becoming a RAID-6, the process dead half-way, and the member of array
 * byte 0 (a converted row) having lost its last write there: the replay writes every entry
 * back (rows keep their places: none spent), the chunk among them. With the grow's spent
 * rule the chunk would read back as the bytes nobody wrote.
 */
Test(reshape_grow_journal, a_conversion_cut_half_way_replays_a_write_a_member_lost,
     .init = setup, .timeout = 300)
{
	killed_after_the_move(&(struct kill_plan){ .level = 5, .nold = 4, .nadd = 1,
						   .stop_pct = 50, .seed = 49, .to6 = true,
						   .lose_chunk0 = true });
}

/*
 * Requests the grow routes that find the log full (the seam answers -EAGAIN to claims, as
 * a log full of updates in flight does) wait for space holding their locks and chosen
 * geometry, and go on when tried again: rounds of 32 queued one-chunk writes, the first
 * few claims of each refused, until the grow has ended.
 */
Test(reshape_grow_journal, routed_requests_waiting_for_log_space_go_on, .init = setup,
     .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_completion c[64];
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 46;
	uint8_t *model = make_journaled(&s, 5, 4, 1, &a, &size, 46);
	uint8_t *bufs = aligned_alloc(BLK, 32 * (size_t)CHUNK);
	unsigned got, rounds = 0;

	cr_assert_not_null(bufs);
	gu_slow_down(a, 4u << 20);
	cr_assert_eq(graid_queue_create(a, 64, &q), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, 0), 0);
	do {
		uint64_t offs[32];

		for (unsigned i = 0; i < 32; i++) {
			offs[i] = (uint64_t)(rounds * 32 + i) * 7 % (size / CHUNK) * CHUNK;
			gu_fill(bufs + i * (size_t)CHUNK, CHUNK, gu_rng(&seed));
			cr_assert_eq(graid_queue_write(q, bufs + i * (size_t)CHUNK, CHUNK, offs[i], i),
				     0);
		}
		atomic_store(&graid__test_journal_full, 4);
		cr_assert_geq(graid_queue_submit(q), 0);
		for (got = 0; got < 32;) {
			int n = graid_queue_reap(q, c, 64, 1);

			cr_assert_gt(n, 0);
			for (int i = 0; i < n; i++)
				cr_assert_eq(c[i].result, (int64_t)CHUNK);
			got += (unsigned)n;
		}
		cr_assert_leq(atomic_load(&graid__test_journal_full), 0, "no claim was refused");
		for (unsigned i = 0; i < 32; i++)
			memcpy(model + offs[i], bufs + i * (size_t)CHUNK, CHUNK);
		rounds++;
		cr_assert_eq(graid_array_info(a, &info), 0);
	} while (info.reshaping);
	atomic_store(&graid__test_journal_full, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	cr_log_info("%u rounds of 32 queued writes, 4 claims of each refused", rounds);
	cr_assert_gt(rounds, 2);
	graid_queue_destroy(q);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after writes that waited for log space");
	cr_assert_eq(graid_array_close(a), 0);
	free(bufs);
	free(model);
	au_remove(&s);
}

/*
 * A journaled RAID-5 of four becomes a RAID-6 of five (Q on the added member) with writes,
 * write-zeroes and reads during it: all right after, a scrub clean, and with two members
 * out every byte still there (Q right where the writes went).
 */
Test(reshape_grow_journal, a_raid5_becomes_a_raid6_with_writes_during, .init = setup,
     .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size, seed = 48, during;
	uint8_t *model = make_journaled(&s, 5, 4, 1, &a, &size, 48);

	gu_slow_down(a, 2u << 20);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = 3 * CHUNK, .zeroes = true });
	cr_assert_gt(during, 20, "too few requests ran during the conversion");
	gu_assert_level(a, 6, 5, "after the conversion");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_gt(info.journal_bytes, 0, "the converted array lost its journal");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after I/O during the conversion");
	/* The change back is not built with a journal: refused, the level kept. */
	cr_assert_eq(graid_array_convert(a, 5, 0), -EOPNOTSUPP);
	gu_assert_level(a, 6, 5, "after the refused change back");
	cr_assert_eq(graid_array_close(a), 0);
	/* Reopened (a clean close): the same bytes, and with two members out too. */
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
