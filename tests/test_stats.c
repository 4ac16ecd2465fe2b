/* SPDX-License-Identifier: MIT */
/* I/O statistics: exact counts for known I/O, errors, histograms, MEMBER_SLOW (docs/STATS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "array/stats_count.h"
#include "common/internal.h"
#include "member/member_io.h"

#define ST_CHUNK 4096u
#define ST_MEMBER_BYTES (4u << 20)

static struct graid_io_stats st_get(struct graid_array *a, int member)
{
	struct graid_io_stats s = { .struct_size = sizeof(s) };

	cr_assert_eq(graid_array_stats(a, member, &s), 0, "stats of %d", member);
	return s;
}

/* Create, close, open again: counting starts at the open, with no create I/O in it. */
static struct graid_array *st_open(struct au_set *s, unsigned n, int level, const char *victim_opts,
				   unsigned victim)
{
	const char *paths[AU_MAX];
	char spec[512];
	struct graid_array *a;

	au_make(s, n, ST_MEMBER_BYTES);
	cr_assert_eq(au_create(s, n, level, ST_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s->paths, sizeof(paths));
	if (victim_opts) {
		snprintf(spec, sizeof(spec), "faulty:%s:%s", victim_opts, s->path[victim]);
		paths[victim] = spec;
	}
	cr_assert_eq(graid_array_open(paths, n, NULL, &a), 0);
	return a;
}

/*
 * @p stripes full-stripe writes (one request each), then every data chunk of them read
 * back 4 KiB at a time, one flush, one discard of the first stripe. With @p stripes a
 * multiple of the members, rotating parity puts as many data chunks on each member.
 */
static void st_pattern(struct graid_array *a, unsigned ndata, unsigned stripes)
{
	size_t stripe = (size_t)ndata * ST_CHUNK;
	uint8_t *buf = aligned_alloc(4096, stripe);
	uint64_t rng = 7;

	for (unsigned i = 0; i < stripes; i++) {
		tu_fill(&rng, buf, stripe);
		cr_assert_eq(graid_array_write(a, buf, stripe, i * stripe), (ssize_t)stripe);
	}
	for (unsigned i = 0; i < stripes * ndata; i++)
		cr_assert_eq(graid_array_read(a, buf, ST_CHUNK, (uint64_t)i * ST_CHUNK), ST_CHUNK);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(graid_array_discard(a, 0, stripe), 0);
	free(buf);
}

static void st_expect(const struct graid_io_counts *c, uint64_t ops, uint64_t bytes,
		      const char *what)
{
	cr_expect_eq(c->ops, ops, "%s: %llu ops, wanted %llu", what, (unsigned long long)c->ops,
		     (unsigned long long)ops);
	cr_expect_eq(c->bytes, bytes, "%s: %llu bytes, wanted %llu", what,
		     (unsigned long long)c->bytes, (unsigned long long)bytes);
	cr_expect_eq(c->errors, 0, "%s: errors", what);
	cr_expect(ops == 0 || c->latency_ns_sum > 0, "%s: no latency", what);
}

/* The array's own counts: what the callers asked, whatever the level. */
static void st_check_array(struct graid_array *a, unsigned ndata, unsigned stripes)
{
	struct graid_io_stats s = st_get(a, -1);
	uint64_t stripe = (uint64_t)ndata * ST_CHUNK;

	st_expect(&s.io[GRAID_IO_WRITE], stripes, stripes * stripe, "array writes");
	st_expect(&s.io[GRAID_IO_READ], stripes * ndata, stripes * stripe, "array reads");
	st_expect(&s.io[GRAID_IO_FLUSH], 1, 0, "array flushes");
	st_expect(&s.io[GRAID_IO_DISCARD], 1, stripe, "array discards");
	cr_expect_gt(s.since_ns, 0);
}

/* Parity levels: each member one chunk of every full stripe, and its share of the reads. */
static void st_parity(int level, unsigned n, unsigned nparity)
{
	unsigned ndata = n - nparity, stripes = n;
	struct au_set s;
	struct graid_array *a = st_open(&s, n, level, NULL, 0);

	st_pattern(a, ndata, stripes);
	st_check_array(a, ndata, stripes);
	for (unsigned m = 0; m < n; m++) {
		struct graid_io_stats ms = st_get(a, (int)m);
		char what[64];

		snprintf(what, sizeof(what), "RAID-%d member %u writes", level, m);
		st_expect(&ms.io[GRAID_IO_WRITE], stripes, stripes * ST_CHUNK, what);
		/* Over n stripes each member holds parity nparity times, data the rest. */
		snprintf(what, sizeof(what), "RAID-%d member %u reads", level, m);
		st_expect(&ms.io[GRAID_IO_READ], ndata, ndata * ST_CHUNK, what);
		snprintf(what, sizeof(what), "RAID-%d member %u flushes", level, m);
		st_expect(&ms.io[GRAID_IO_FLUSH], 1, 0, what);
		snprintf(what, sizeof(what), "RAID-%d member %u discards", level, m);
		st_expect(&ms.io[GRAID_IO_DISCARD], 1, ST_CHUNK, what);
	}
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(stats, raid5_exact_counts)
{
	st_parity(5, 3, 1);
}

Test(stats, raid6_exact_counts)
{
	st_parity(6, 4, 2);
}

Test(stats, raid1_exact_counts)
{
	struct au_set s;
	struct graid_array *a = st_open(&s, 2, 1, NULL, 0);
	uint64_t reads = 0, read_bytes = 0;
	const unsigned chunks = 4;

	st_pattern(a, 1, chunks);
	st_check_array(a, 1, chunks);
	for (unsigned m = 0; m < 2; m++) {
		struct graid_io_stats ms = st_get(a, (int)m);

		/* Every write to both copies; each read from one of them. */
		st_expect(&ms.io[GRAID_IO_WRITE], chunks, chunks * ST_CHUNK, "RAID-1 member writes");
		st_expect(&ms.io[GRAID_IO_FLUSH], 1, 0, "RAID-1 member flushes");
		st_expect(&ms.io[GRAID_IO_DISCARD], 1, ST_CHUNK, "RAID-1 member discards");
		reads += ms.io[GRAID_IO_READ].ops;
		read_bytes += ms.io[GRAID_IO_READ].bytes;
	}
	cr_expect_eq(reads, chunks);
	cr_expect_eq(read_bytes, chunks * ST_CHUNK);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(stats, bad_arguments)
{
	struct au_set s;
	struct graid_array *a = st_open(&s, 3, 5, NULL, 0);
	struct graid_io_stats st = { .struct_size = sizeof(st) };
	struct graid_stats_options o = { .struct_size = sizeof(o), .flags = 0x80 };

	cr_expect_eq(graid_array_stats(NULL, -1, &st), -EINVAL);
	cr_expect_eq(graid_array_stats(a, -1, NULL), -EINVAL);
	cr_expect_eq(graid_array_stats(a, -2, &st), -EINVAL);
	cr_expect_eq(graid_array_stats(a, 3, &st), -EINVAL, "no hot spare 0");
	st.struct_size = sizeof(size_t);
	cr_expect_eq(graid_array_stats(a, -1, &st), -EINVAL);
	cr_expect_eq(graid_array_set_stats_options(a, &o), -EINVAL, "an unknown flag");
	o.flags = 0;
	o.struct_size = 4;
	cr_expect_eq(graid_array_set_stats_options(a, &o), -EINVAL);
	cr_expect_eq(graid_array_set_stats_options(a, NULL), -EINVAL);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A member that fails a read: its error counted there; the array's read with it on RAID-0. */
Test(stats, member_error_counted)
{
	struct au_set s;
	struct graid_array *a;
	uint8_t *buf = aligned_alloc(4096, 2 * ST_CHUNK);
	struct graid_io_stats as, ms;

	tu_need_fault_injection();
	a = st_open(&s, 2, 0, "read-eio-after=0", 1);
	/* RAID-0, 2 members: array bytes 4096..8191 are member 1's first chunk. */
	cr_assert_lt(graid_array_read(a, buf, ST_CHUNK, ST_CHUNK), 0);
	cr_assert_eq(graid_array_read(a, buf, ST_CHUNK, 0), ST_CHUNK);
	ms = st_get(a, 1);
	cr_expect_eq(ms.io[GRAID_IO_READ].errors, 1);
	cr_expect_eq(ms.io[GRAID_IO_READ].ops, 1);
	cr_expect_eq(ms.io[GRAID_IO_READ].bytes, 0);
	ms = st_get(a, 0);
	cr_expect_eq(ms.io[GRAID_IO_READ].errors, 0);
	cr_expect_eq(ms.io[GRAID_IO_READ].ops, 1);
	as = st_get(a, -1);
	cr_expect_eq(as.io[GRAID_IO_READ].ops, 2);
	cr_expect_eq(as.io[GRAID_IO_READ].errors, 1);
	cr_expect_eq(as.io[GRAID_IO_READ].bytes, ST_CHUNK);
	free(buf);
	graid_array_close(a);
	au_remove(&s);
}

static uint64_t st_hist_sum(const struct graid_io_counts *c)
{
	uint64_t sum = 0;

	for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
		sum += c->latency[b];
	return sum;
}

Test(stats, histograms_sum_to_ops)
{
	struct graid_stats_options o = { .struct_size = sizeof(o),
					 .flags = GRAID_STATS_HISTOGRAMS };
	struct au_set s;
	struct graid_array *a = st_open(&s, 3, 5, NULL, 0);
	struct graid_io_stats st;

	cr_assert_eq(graid_array_set_stats_options(a, &o), 0);
	st_pattern(a, 2, 3);
	for (int m = -1; m < 3; m++) {
		st = st_get(a, m);
		for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
			cr_expect_gt(st.io[k].ops, 0, "member %d kind %u", m, k);
			cr_expect_eq(st_hist_sum(&st.io[k]), st.io[k].ops, "member %d kind %u", m, k);
			/* On all along: the histogram's I/Os are all of them, so are their sums. */
			cr_expect_eq(st.io[k].latency_hist_ns_sum, st.io[k].latency_ns_sum,
				     "member %d kind %u", m, k);
		}
	}
	uint64_t hist_ns = st_get(a, -1).io[GRAID_IO_READ].latency_hist_ns_sum;
	uint64_t all_ns = st_get(a, -1).io[GRAID_IO_READ].latency_ns_sum;

	cr_expect_gt(hist_ns, 0);
	/* Off again: counting goes on, the buckets and their latency sum do not move. */
	o.flags = 0;
	cr_assert_eq(graid_array_set_stats_options(a, &o), 0);
	st_pattern(a, 2, 3);
	st = st_get(a, -1);
	cr_expect_eq(st.io[GRAID_IO_READ].ops, 12);
	cr_expect_eq(st_hist_sum(&st.io[GRAID_IO_READ]), 6);
	cr_expect_eq(st.io[GRAID_IO_READ].latency_hist_ns_sum, hist_ns);
	cr_expect_gt(st.io[GRAID_IO_READ].latency_ns_sum, all_ns);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(stats, bucket_edges)
{
	/* Through the public counts: an I/O in bucket i took [2^(i+9), 2^(i+10)) ns. A member
	 * stalled 20 ms lands in the bucket of [2^24, 2^25) ns = [16.8, 33.6) ms: index 15. */
	struct graid_stats_options o = { .struct_size = sizeof(o),
					 .flags = GRAID_STATS_HISTOGRAMS, .slow_ms = 60000 };
	struct au_set s;
	struct graid_array *a;
	uint8_t *buf = aligned_alloc(4096, ST_CHUNK);
	struct graid_io_stats ms;

	tu_need_fault_injection();
	a = st_open(&s, 2, 0, "stall-us=20000", 1);
	cr_assert_eq(graid_array_set_stats_options(a, &o), 0);
	cr_assert_eq(graid_array_read(a, buf, ST_CHUNK, ST_CHUNK), ST_CHUNK);
	ms = st_get(a, 1);
	cr_expect_eq(ms.io[GRAID_IO_READ].latency[15], 1, "20 ms in bucket 15");
	cr_expect_geq(ms.io[GRAID_IO_READ].latency_ns_sum, 20000000ull);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

struct st_slow {
	unsigned slow[GRAID_MAX_MEMBERS];
	uint64_t ms;
};

static void st_on_event(void *arg, const struct graid_event *ev)
{
	struct st_slow *e = arg;

	if (ev->type == GRAID_EVENT_MEMBER_SLOW && ev->member >= 0) {
		e->slow[ev->member]++;
		e->ms = ev->count;
	}
}

/*
 * The slow member stalls 100 ms, the limit is 50 ms: far above what a healthy member's I/O
 * takes even on a loaded test machine (a few ms of scheduling), far below the stall.
 */
#define ST_STALL "stall-us=100000"
#define ST_STALL_MS 100
#define ST_SLOW_MS 50

/* A member slower than the limit: one MEMBER_SLOW (its role, its ms), not one an I/O. */
Test(stats, member_slow_once_a_minute)
{
	struct graid_stats_options o = { .struct_size = sizeof(o), .slow_ms = ST_SLOW_MS };
	struct au_set s;
	struct graid_array *a;
	struct st_slow ev = { 0 };
	uint8_t *buf = aligned_alloc(4096, 2 * ST_CHUNK);

	tu_need_fault_injection();
	a = st_open(&s, 3, 5, ST_STALL, 2);
	graid_array_set_event_callback(a, st_on_event, &ev);
	/* The default limit is far above the stall: nothing yet. */
	cr_assert_eq(graid_array_read(a, buf, 2 * ST_CHUNK, 0), 2 * ST_CHUNK);
	cr_expect_eq(ev.slow[2] + ev.slow[0] + ev.slow[1], 0);
	cr_assert_eq(graid_array_set_stats_options(a, &o), 0);
	for (unsigned i = 0; i < 10; i++) {
		memset(buf, (int)i, 2 * ST_CHUNK);
		cr_assert_eq(graid_array_write(a, buf, 2 * ST_CHUNK, 0), 2 * ST_CHUNK);
		cr_assert_eq(graid_array_read(a, buf, 2 * ST_CHUNK, 0), 2 * ST_CHUNK);
	}
	cr_expect_eq(ev.slow[2], 1, "member 2: %u MEMBER_SLOW events", ev.slow[2]);
	cr_expect_eq(ev.slow[0], 0);
	cr_expect_eq(ev.slow[1], 0);
	cr_expect_geq(ev.ms, ST_STALL_MS, "its latency, ms: %llu", (unsigned long long)ev.ms);
	free(buf);
	graid_array_set_event_callback(a, NULL, NULL);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A hot spare is numbered after the roles; it does no data I/O while it is a spare. */
Test(stats, hot_spare_numbered_after_the_roles)
{
	struct au_set s;
	struct graid_array *a;
	struct graid_io_stats st;

	au_make(&s, 4, ST_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, ST_CHUNK, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, s.path[3]), 0);
	st_pattern(a, 2, 3);
	st = st_get(a, 3);
	for (unsigned k = 0; k < GRAID_IO_KINDS; k++)
		cr_expect_eq(st.io[k].ops, 0, "the spare, kind %u", k);
	cr_expect_gt(st.since_ns, 0);
	cr_expect_gt(st_get(a, 2).io[GRAID_IO_WRITE].ops, 0, "role 2 wrote");
	cr_expect_eq(graid_array_stats(a, 4, &st), -EINVAL, "one spare only");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* The interval is time, not a count of I/Os: with it cut to 500 ms, one event each 500 ms. */
Test(stats, member_slow_again_after_the_interval)
{
#if GRAID_FAULT_INJECTION
	struct graid_stats_options o = { .struct_size = sizeof(o), .slow_ms = ST_SLOW_MS };
	struct au_set s;
	struct graid_array *a;
	struct st_slow ev = { 0 };
	uint8_t *buf = aligned_alloc(4096, 2 * ST_CHUNK);
	struct timespec t0, t1;
	double secs;

	a = st_open(&s, 3, 5, ST_STALL, 2);
	graid_array_set_event_callback(a, st_on_event, &ev);
	cr_assert_eq(graid_array_set_stats_options(a, &o), 0);
	graid__test_slow_every_ns = 500000000ull;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		cr_assert_eq(graid_array_write(a, buf, 2 * ST_CHUNK, 0), 2 * ST_CHUNK);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (secs < 1.6);
	graid_array_set_event_callback(a, NULL, NULL);
	graid__test_slow_every_ns = 0;
	/*
	 * Some 16 slow writes in 1.6 s: the first sends at once, then one per 500 ms at most,
	 * so 2 to 4 events (one per write without the limit).
	 */
	cr_expect_geq(ev.slow[2], 2, "%u events in %.2f s", ev.slow[2], secs);
	cr_expect_leq(ev.slow[2], 1 + (unsigned)(secs / 0.5), "%u events in %.2f s", ev.slow[2],
		      secs);
	cr_expect_eq(ev.slow[0] + ev.slow[1], 0);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
#else
	cr_skip_test("the interval's seam is in fault-injection builds only");
#endif
}

/* The buckets' edges: [2^(i+9), 2^(i+10)) ns, the first and last open-ended. */
Test(stats, bucket_of_a_latency)
{
	cr_expect_eq(io_stats_bucket(0), 0);
	cr_expect_eq(io_stats_bucket(1023), 0);
	cr_expect_eq(io_stats_bucket(1024), 1);
	cr_expect_eq(io_stats_bucket(2047), 1);
	cr_expect_eq(io_stats_bucket(2048), 2);
	cr_expect_eq(io_stats_bucket(1000000), 10, "1 ms in [2^19, 2^20) ns");
	cr_expect_eq(io_stats_bucket((1ull << 40) - 1), 30);
	cr_expect_eq(io_stats_bucket(1ull << 40), 31);
	cr_expect_eq(io_stats_bucket(UINT64_MAX), 31);
}

/*
 * Two threads past the limit at once: the one whose clock reading is older than the
 * winner's (stored in slow_sent_ns) is inside the interval, sends nothing and leaves the
 * winner's time as it was.
 */
Test(stats, member_slow_older_clock_than_the_sender)
{
	struct au_set s;
	struct graid_array *a = st_open(&s, 3, 5, NULL, 0);
	_Atomic uint64_t *sent = &a->members[1].role.slow_sent_ns;
	uint64_t slow = atomic_load(&a->slow_ns), winner;

	/* The winner read its clock after ours will: a second from now. */
	winner = graid__now_ns() + 1000000000ull;
	atomic_store(sent, winner);
	cr_expect_eq(stats_member(a, 1, GRAID_IO_READ, 4096, false, graid__now_ns() - 2 * slow), 0,
		     "a second MEMBER_SLOW inside the interval");
	cr_expect_eq(atomic_load(sent), winner, "the last sender's time moved back");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * An I/O of the device a role had before a takeover ends after it: it is not the new
 * device's I/O to count, nor its MEMBER_SLOW (member_io_done, as the completion calls it).
 */
Test(stats, late_io_of_a_replaced_device_is_not_counted)
{
	struct au_set s;
	struct graid_array *a = st_open(&s, 3, 5, NULL, 0);
	struct member_io_fault mf = { 0 };
	uint64_t slow = atomic_load(&a->slow_ns);
	struct graid_io_stats before = st_get(a, 1), after;

	mf.start_ns = graid__now_ns() - 2 * slow;
	mf.fd = a->members[1].dev.fd + 1000; /* a descriptor the role no longer has */
	cr_assert_eq(member_io_done(a, 1, false, 4096, &mf, 4096), 4096);
	cr_expect_eq(mf.slow_ms, 0, "MEMBER_SLOW blames the new device");
	after = st_get(a, 1);
	cr_expect_eq(after.io[GRAID_IO_READ].ops, before.io[GRAID_IO_READ].ops,
		     "the old device's read counted as the new one's");
	/* The role's own device: counted, and slow. */
	mf.fd = a->members[1].dev.fd;
	cr_assert_eq(member_io_done(a, 1, false, 4096, &mf, 4096), 4096);
	cr_expect_gt(mf.slow_ms, 0);
	after = st_get(a, 1);
	cr_expect_eq(after.io[GRAID_IO_READ].ops, before.io[GRAID_IO_READ].ops + 1);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
