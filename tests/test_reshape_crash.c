/* SPDX-License-Identifier: MIT */
/*
 * Crashes during a grow with writes going on (issue 42's crash test, docs/RESHAPE.md): for
 * RAID-0 3 -> 4, RAID-5 4 -> 5, RAID-6 6 -> 7, RAID-10 4 -> 6 and 2 -> 3, and RAID-5(4) ->
 * RAID-6(5) Q-last, every member write after the k-th fails
 * without landing (fault_writes_cut_after(): a power cut as the members see it), for every k
 * through the start and the first windows and at random points after, while a writer
 * overwrites random blocks. Then a read-only look and an open of all the files must serve
 * every acknowledged write (the one write the cut caught may read old or new), the open goes
 * on with the grow (or it is started again), and after it every acknowledged write reads
 * back and a scrub finds no stripe wrong. RAID-5 4 -> 5 and RAID-6 6 -> 7 again with
 * checksums: no block failing its tag after the resume either.
 *
 * GRAID_RESHAPE_CRASHES sets the random points per level (default 24: CI's share; under
 * GRAID_SANITIZED, 6 and every fourth of the first writes); the figures of a run with 1,000
 * are in docs/RESHAPE.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "array/array.h"
#include "cututil.h"
#include "jobs/reshape_grow.h"

#if GRAID_FAULT_INJECTION
extern bool graid__test_grow56, graid__test_grow_csum;
#else
static bool graid__test_grow56, graid__test_grow_csum;
#endif

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u
/* The writer's pace: a write, then this long asleep (the move must get on too). */
#define WRITER_NAP_US 300

static void setup(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the member-write cut and the RAID-5/6 grow switch exist only with "
		     "-Dfault_injection");
#endif
	graid__test_grow56 = true;
	graid__test_grow_csum = true;
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_ERR); /* the cut's failures are expected */
}

/* What must read back: the model, but for the one block of the write the cut caught. */
struct crash_model {
	uint8_t *bytes;              /* every acknowledged write */
	uint64_t size;
	int64_t torn;                /* the block of the write that failed, or -1 */
	uint8_t torn_new[BLK];       /* what that write carried */
	struct graid_array *a;
	atomic_bool stop;
	uint64_t seed;
	unsigned acked;
};

/* Overwrite random blocks until told to stop or a write fails (the cut). */
static void *writer(void *arg)
{
	struct crash_model *m = arg;
	uint8_t *blk = aligned_alloc(BLK, BLK);

	while (blk && !atomic_load(&m->stop)) {
		uint64_t b = gu_rng(&m->seed) % (m->size / BLK);

		gu_fill(blk, BLK, gu_rng(&m->seed));
		if (graid_array_write(m->a, blk, BLK, b * BLK) != (ssize_t)BLK) {
			m->torn = (int64_t)b;
			memcpy(m->torn_new, blk, BLK);
			break;
		}
		memcpy(m->bytes + b * BLK, blk, BLK);
		m->acked++;
		usleep(WRITER_NAP_US);
	}
	free(blk);
	return NULL;
}

static void check_model(struct graid_array *a, const struct crash_model *m, long k,
			const char *when)
{
	uint8_t *got = aligned_alloc(BLK, m->size);

	cr_assert_not_null(got);
	cr_assert_eq(graid_array_read(a, got, m->size, 0), (ssize_t)m->size,
		     "crash after write %ld, %s: the read failed", k, when);
	for (uint64_t at = 0; at < m->size; at += BLK) {
		if (!memcmp(got + at, m->bytes + at, BLK))
			continue;
		cr_assert(m->torn == (int64_t)(at / BLK) && !memcmp(got + at, m->torn_new, BLK),
			  "crash after write %ld, %s: block at %llu is neither the last acknowledged "
			  "write nor the one the cut caught", k, when, (unsigned long long)at);
	}
	free(got);
}

/*
 * graid_array_config::flags of the arrays made (GRAID_CREATE_CHECKSUMS: the tags' variants;
 * GRAID_CREATE_JOURNAL: the write-hole journal's, on members with room for its log).
 */
static unsigned crash_cflags;
/* The journal's variants: the role left out of every open after the crash (-1: none). */
static int crash_lose = -1;

/* Each member file's bytes: the journal's log (32 MiB at least) on top of the data's. */
static uint64_t crash_member_bytes(void)
{
	return crash_cflags & GRAID_CREATE_JOURNAL ? BYTES + (33ull << 20) : BYTES;
}

/* The files the opens after the crash are given: all, or all but crash_lose. */
static unsigned crash_paths(const struct au_set *s, unsigned nall, const char **paths)
{
	unsigned np = 0;

	for (unsigned i = 0; i < nall; i++)
		if ((int)i != crash_lose)
			paths[np++] = s->paths[i];
	return np;
}

/* Blocks of the @p n members that failed their tags or were found stale since the open. */
static uint64_t crash_csum_errors(struct graid_array *a, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, i, &mi), 0);
		sum += mi.checksum_errors + mi.checksum_lost_writes;
	}
	return sum;
}

/* Crashes that left: no reshape recorded, one to resume, one finished; looks refused. */
struct crash_tally {
	unsigned again, resumed, finished, refused, acked;
};

/*
 * The grow by @p nadd (@p flags: graid_array_grow()'s, GRAID_GROW_WAIT added) with the cut
 * after member write @p k, the writer going; closed.
 */
static long crash_grow(struct au_set *s, unsigned nold, unsigned nadd, struct crash_model *m,
		       long k, unsigned flags)
{
	pthread_t t;
	long left;

	fault_writes_cut_after(k);
	cr_assert_eq(pthread_create(&t, NULL, writer, m), 0);
	graid_array_grow(m->a, &s->paths[nold], nadd, GRAID_GROW_WAIT | flags);
	/* The writer gets some writes in after a grow that ended too (a cut on a write). */
	usleep(2000);
	atomic_store(&m->stop, true);
	pthread_join(t, NULL);
	graid_array_close(m->a);
	left = fault_writes_cut_left();
	fault_writes_cut_after(-1);
	m->a = NULL;
	return left;
}

/* A look (refused only while the first rows are whole in their staged copy alone). */
static void crash_look(struct au_set *s, unsigned nall, const struct crash_model *m, long k,
		       struct crash_tally *t)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a = NULL;
	const char *paths[AU_MAX];
	unsigned np = crash_paths(s, nall, paths);
	int rc;

	gu_log_text[0] = '\0';
	rc = graid_array_open(paths, np, &ro, &a);
	if (rc == -EOPNOTSUPP) {
		cr_assert(strstr(gu_log_text, "staged copy"), "crash after write %ld: %s", k, gu_log_text);
		t->refused++;
		return;
	}
	cr_assert_eq(rc, 0, "crash after write %ld: the look failed: %d", k, rc);
	check_model(a, m, k, "the look");
	cr_assert_eq(graid_array_close(a), 0);
}

/* The array's level (graid_array_info). */
static int crash_level(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.level;
}

/* The size a RAID-@p level of @p size bytes over @p nold members has over @p nall. */
static uint64_t crash_grown(int level, unsigned nold, unsigned nall, uint64_t size, bool to6)
{
	if (to6)
		return size; /* the added member holds Q */
	/* RAID-10: the old rows of slots, over the new count, in whole chunks. */
	if (level == 10)
		return size / CHUNK * 2 / nold * nall / 2 * CHUNK;
	return size / gu_ndata(level, nold) * gu_ndata(level, nall);
}

/*
 * One crash at member write @p k of a grow of a RAID-@p level of @p nold by @p nadd (@p flags
 * GRAID_GROW_RAID6: the RAID-5's conversion to RAID-6 Q-last); @p total: set to the member
 * writes of a whole grow and its close when k is past them.
 */
static void crash_at(int level, unsigned nold, unsigned nadd, long k, struct crash_tally *t,
		     long *total, unsigned flags)
{
	const bool to6 = flags & GRAID_GROW_RAID6;
	const unsigned nall = nold + nadd;
	struct crash_model *m = calloc(1, sizeof(*m));
	const char *paths[AU_MAX];
	struct au_set s;
	unsigned n, np;
	long left;

	cr_assert_not_null(m);
	au_make(&s, nall, crash_member_bytes());
	np = crash_paths(&s, nall, paths);
	if (crash_cflags) {
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
						  .chunk_bytes = CHUNK, .backend = "isal",
						  .flags = crash_cflags };

		cr_assert_eq(graid_array_create(s.paths, nold, &cfg, &m->a), 0);
	} else {
		cr_assert_eq(au_create(&s, nold, level, CHUNK, &m->a), 0);
	}
	/* The writer runs all through the grow: its pacing is not what this suite tests. */
	gu_full_speed_under_load(m->a);
	m->size = gu_array_bytes(m->a, NULL);
	m->bytes = aligned_alloc(BLK, m->size);
	m->torn = -1;
	m->seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)k;
	cr_assert_not_null(m->bytes);
	gu_fill(m->bytes, m->size, 100 + (uint64_t)k);
	cr_assert_eq(graid_array_write(m->a, m->bytes, m->size, 0), (ssize_t)m->size);
	left = crash_grow(&s, nold, nadd, m, k, flags);
	if (total)
		*total = k - left;
	t->acked += m->acked;
	/*
	 * A look does not replay the journal (it writes nothing): degraded, a stripe the cut
	 * tore may read wrong until a writable open (docs/JOURNAL.md, "Limits"). Not looked at.
	 */
	if (crash_lose < 0)
		crash_look(&s, nall, m, k, t);
	gu_log_text[0] = '\0';
	cr_assert_eq(graid_array_open(paths, np, NULL, &m->a), 0,
		     "crash after write %ld: the open failed: %s", k, gu_log_text);
	check_model(m->a, m, k, "the open");
	if (m->a->reshape_job) {
		cr_assert_eq(reshape_job_wait(m->a), 0, "crash after write %ld: the resume "
							"failed: %s", k, gu_log_text);
		t->resumed++;
	} else if (crash_lose >= 0 &&
		   (to6 ? crash_level(m->a) == 5 : gu_array_bytes(m->a, &n) == m->size)) {
		/* Not started: a grow begins only with every member in. What was written holds. */
		t->again++;
		goto close;
	} else if (to6 ? crash_level(m->a) == 5 : gu_array_bytes(m->a, &n) == m->size) {
		cr_assert_eq(graid_array_grow(m->a, &s.paths[nold], nadd, GRAID_GROW_WAIT | flags), 0,
			     "crash after write %ld: the grow again failed: %s", k, gu_log_text);
		t->again++;
	} else {
		t->finished++;
	}
	cr_assert_eq(gu_array_bytes(m->a, &n), crash_grown(level, nold, nall, m->size, to6),
		     "crash after write %ld", k);
	cr_assert_eq(n, nall);
	if (to6) {
		cr_assert_eq(crash_level(m->a), 6, "crash after write %ld", k);
		cr_assert_eq(m->a->lay.layout_id, LAYOUT_Q_LAST, "crash after write %ld", k);
	}
	check_model(m->a, m, k, "the grow's end");
	if (level && crash_lose < 0) {
		char when[48];

		snprintf(when, sizeof(when), "crash after write %ld", k);
		gu_scrub_clean(m->a, when); /* after the resync by position the open ran */
	}
	/*
	 * Checksums: after the resume (or the grow again) every block read back and scrubbed
	 * with its tag holding and its generation the record's: none failed since the open
	 * (what the crash tore lies in regions the resync settled, not counted as errors).
	 */
	if (crash_cflags & GRAID_CREATE_CHECKSUMS) {
		check_model(m->a, m, k, "the tags after the scrub");
		cr_assert_eq(crash_csum_errors(m->a, nall), 0,
			     "crash after write %ld: blocks failed their tags after the grow", k);
	}
close:
	cr_assert_eq(graid_array_close(m->a), 0);
	free(m->bytes);
	free(m);
	au_remove(&s);
}

/*
 * Every k of the first @p first member writes, then the random points; @p nadd added
 * (@p flags: graid_array_grow()'s).
 */
static void crashes(int level, unsigned nold, unsigned nadd, long first, uint64_t seed,
		    unsigned flags)
{
	const int to = flags & GRAID_GROW_RAID6 ? 6 : level;
	const char *env = getenv("GRAID_RESHAPE_CRASHES");
	/* Sanitized builds (tools/bootstrap's second stage) take every fourth point: CI's time. */
	const long step = getenv("GRAID_SANITIZED") ? 4 : 1;
	unsigned random = env ? (unsigned)strtoul(env, NULL, 10) : step > 1 ? 6 : 24;
	struct crash_tally t = { 0 };
	long total = 0;

	/* GRAID_RESHAPE_CRASH_K=K[:TIMES]: that point alone, to chase a failure. */
	if (getenv("GRAID_RESHAPE_CRASH_K")) {
		char *end;
		long k = strtol(getenv("GRAID_RESHAPE_CRASH_K"), &end, 10);
		unsigned times = *end == ':' ? (unsigned)strtoul(end + 1, NULL, 10) : 1;

		for (unsigned i = 0; i < times; i++)
			crash_at(level, nold, nadd, k, &t, NULL, flags);
		return;
	}
	crash_at(level, nold, nadd, 1L << 40, &t, &total, flags);
	cr_log_info("RAID-%d %u -> RAID-%d %u with the writer: %ld member writes in all", level,
		    nold, to, nold + nadd, total);
	cr_assert_gt(total, first);
	t = (struct crash_tally){ 0 };
	for (long k = 0; k < first; k += step)
		crash_at(level, nold, nadd, k, &t, NULL, flags);
	for (unsigned i = 0; i < random; i++)
		crash_at(level, nold, nadd,
			 first + (long)(gu_rng(&seed) % (uint64_t)(total - first)), &t, NULL, flags);
	cr_log_info("RAID-%d %u -> RAID-%d %u: %ld + %u crashes; after them %u grown again, %u "
		    "resumed, %u finished, %u looks refused (staged); %u writes acknowledged, all "
		    "read back", level, nold, to, nold + nadd, first, random, t.again, t.resumed,
		    t.finished, t.refused, t.acked);
	cr_assert_gt(t.resumed, (first / step + random) / 4, "too few crashes fell in the move");
}

Test(reshape_crash, raid0_3_to_4_with_writes, .init = setup, .timeout = 1800)
{
	crashes(0, 3, 1, 60, 3030, 0);
}

Test(reshape_crash, raid5_4_to_5_with_writes, .init = setup, .timeout = 1800)
{
	crashes(5, 4, 1, 120, 4050, 0);
}

Test(reshape_crash, raid6_6_to_7_with_writes, .init = setup, .timeout = 1800)
{
	crashes(6, 6, 1, 80, 6070, 0);
}

Test(reshape_crash, raid10_4_to_6_with_writes, .init = setup, .timeout = 1800)
{
	crashes(10, 4, 2, 80, 10460, 0);
}

/* An odd count: a chunk's new copies straddle rows, and pairs of old slots split. */
Test(reshape_crash, raid10_2_to_3_with_writes, .init = setup, .timeout = 1800)
{
	crashes(10, 2, 1, 60, 10230, 0);
}

/*
 * With checksums (issue #42): the moved rows' tags written back before each record, the
 * job's reads verified; after every crash and the resume, every acknowledged write reads
 * back with its tags holding, and a scrub (tags and generations checked) is clean.
 */
Test(reshape_crash, raid5_4_to_5_checksummed_with_writes, .init = setup, .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_CHECKSUMS;
	crashes(5, 4, 1, 120, 4051, 0);
}

Test(reshape_crash, raid6_6_to_7_checksummed_with_writes, .init = setup, .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_CHECKSUMS;
	crashes(6, 6, 1, 80, 6071, 0);
}

/* RAID-5 of four to RAID-6 of five, Q on the added member (nothing staged: one pass). */
Test(reshape_crash, raid5_4_to_raid6_5_q_last_with_writes, .init = setup, .timeout = 1800)
{
	crashes(5, 4, 1, 120, 4565, GRAID_GROW_RAID6);
}

/*
 * With the write-hole journal: the writer's updates logged in the geometry they are placed
 * by, the log replayed at the open after each crash, the entries of rows the move had
 * passed left (docs/JOURNAL.md, "Across a grow"); every acknowledged write reads back.
 */
Test(reshape_crash, raid5_4_to_5_journaled_with_writes, .init = setup, .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_JOURNAL;
	crashes(5, 4, 1, 120, 4052, 0);
}

Test(reshape_crash, raid6_6_to_7_journaled_with_writes, .init = setup, .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_JOURNAL;
	crashes(6, 6, 1, 80, 6072, 0);
}

/*
 * What the journal is for: a member lost at the crash. Every open after it goes without
 * member 1, so a stripe the cut tore would rebuild bytes nobody wrote into its other
 * chunks (the write hole); with the journal every acknowledged write reads back, at the
 * degraded open and after the move went on degraded.
 */
Test(reshape_crash, raid5_4_to_5_journaled_a_member_lost_at_the_crash, .init = setup,
     .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_JOURNAL;
	crash_lose = 1;
	crashes(5, 4, 1, 120, 4053, 0);
}

/*
 * A journaled RAID-5 of four becoming a RAID-6 of five: its rows keep their places, so the
 * replay spends nothing; with member 1 left out after the cut too (rows past the position
 * are a RAID-5 missing a member there: the write hole, closed by the journal).
 */
Test(reshape_crash, raid5_4_to_raid6_5_q_last_journaled_with_writes, .init = setup,
     .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_JOURNAL;
	crashes(5, 4, 1, 120, 4566, GRAID_GROW_RAID6);
}

Test(reshape_crash, raid5_4_to_raid6_5_q_last_journaled_a_member_lost_at_the_crash,
     .init = setup, .timeout = 1800)
{
	crash_cflags = GRAID_CREATE_JOURNAL;
	crash_lose = 1;
	crashes(5, 4, 1, 120, 4567, GRAID_GROW_RAID6);
}
