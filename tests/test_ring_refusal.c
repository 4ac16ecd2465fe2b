/* SPDX-License-Identifier: MIT */
/*
 * The kernel saying "not now" to a ring (io_uring_enter: -EAGAIN, -EBUSY) is a wait, never a
 * member's failure: graid_queue_submit() returns that errno as graid.h promises, the entries
 * it could not send go out on the next call, a ring full of entries the kernel will not take
 * yet fails no member, and a scrub whose submit is refused finishes instead of hanging.
 * This program stands in for liburing's io_uring_submit() and io_uring_submit_and_wait()
 * (it exports them; the library's calls bind to them) and passes each call on to the real
 * one unless a test told it to refuse.
 */
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <liburing.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define RR_MEMBER_BYTES (24u << 20)
#define RR_BLOCK 4096u

static int rr_refuse_next;     /* refuse this many calls, whatever the ring holds */
static uint64_t rr_refuse_until; /* refuse every call until this CLOCK_MONOTONIC ns */
static int rr_refuse_full;     /* refuse this many calls made with a full submission ring */
static uint64_t rr_refuse_full_until; /* ... and every such call until this CLOCK_MONOTONIC ns */
static int rr_seen_full;       /* calls made with a full submission ring */
static int rr_refused;         /* calls refused */
static unsigned rr_most_ready; /* the most entries a call found waiting */
/*
 * The next io_uring_submit() on a ring of at most RR_SMALL_RING entries (a metadata mark's,
 * meta_write.c: two per member; the queues' are far larger) hands the kernel only this many
 * of the entries waiting, as a kernel short of memory does; the rest stay queued.
 */
static unsigned rr_partial_small;
#define RR_SMALL_RING 16u
/* Every wait for completions on a queue's ring (1024 entries) fails so: a broken ring. */
static int rr_queue_wait_error;
#define RR_QUEUE_RING 1024u

static uint64_t rr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether to refuse this call; counts what it saw. */
static bool rr_refuse(struct io_uring *ring)
{
	bool full = io_uring_sq_space_left(ring) == 0;

	if (io_uring_sq_ready(ring) > rr_most_ready)
		rr_most_ready = io_uring_sq_ready(ring);
	rr_seen_full += full;
	if (rr_refuse_until && rr_now_ns() < rr_refuse_until) {
		rr_refused++;
		return true;
	}
	if (rr_refuse_next > 0) {
		rr_refuse_next--;
		rr_refused++;
		return true;
	}
	if (full && rr_refuse_full_until && rr_now_ns() < rr_refuse_full_until) {
		rr_refused++;
		return true;
	}
	if (full && rr_refuse_full > 0) {
		rr_refuse_full--;
		rr_refused++;
		return true;
	}
	return false;
}

/* Exported (the project builds with -fvisibility=hidden), so the library binds to these. */
#define RR_EXPORT __attribute__((visibility("default")))

RR_EXPORT int io_uring_submit(struct io_uring *ring)
{
	static int (*real)(struct io_uring *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "io_uring_submit");
	if (rr_partial_small && ring->sq.ring_entries <= RR_SMALL_RING &&
	    io_uring_sq_ready(ring) > rr_partial_small) {
		/*
		 * liburing sends up to its private tail: hide the rest from it for this call,
		 * then publish it as liburing would have, for a kernel that stopped short.
		 */
		unsigned tail = ring->sq.sqe_tail;
		int rc;

		ring->sq.sqe_tail = ring->sq.sqe_head + rr_partial_small;
		rr_partial_small = 0;
		rc = real(ring);
		ring->sq.sqe_tail = tail;
		ring->sq.sqe_head = tail;
		io_uring_smp_store_release(ring->sq.ktail, tail);
		return rc;
	}
	return rr_refuse(ring) ? -EAGAIN : real(ring);
}

RR_EXPORT int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	static int (*real)(struct io_uring *, unsigned);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "io_uring_submit_and_wait");
	return rr_refuse(ring) ? -EBUSY : real(ring, wait_nr);
}

RR_EXPORT int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
				 unsigned submit, unsigned wait_nr, sigset_t *sigmask)
{
	static int (*real)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned,
			   sigset_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "__io_uring_get_cqe");
	if (rr_queue_wait_error && ring->sq.ring_entries >= RR_QUEUE_RING)
		return rr_queue_wait_error;
	return real(ring, cqe_ptr, submit, wait_nr, sigmask);
}

RR_EXPORT int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
				 unsigned wait_nr, struct __kernel_timespec *ts, sigset_t *sigmask)
{
	static int (*real)(struct io_uring *, struct io_uring_cqe **, unsigned,
			   struct __kernel_timespec *, sigset_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "io_uring_wait_cqes");
	if (rr_queue_wait_error && ring->sq.ring_entries >= RR_QUEUE_RING)
		return rr_queue_wait_error;
	return real(ring, cqe_ptr, wait_nr, ts, sigmask);
}

/* This process's open io_uring descriptors. */
static unsigned rr_rings_open(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		char link[64], target[64];
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		n += strcmp(target, "anon_inode:[io_uring]") == 0;
	}
	return n;
}

static void rr_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131u) ^ (seed * 7u) ^ (i >> 9));
}

static unsigned rr_failed_members(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.nfailed;
}

/* Read [off, off + len) back and compare with @p want. */
static void rr_check(struct graid_array *a, const uint8_t *want, size_t len, uint64_t off)
{
	uint8_t *back;

	cr_assert_eq(posix_memalign((void **)&back, 4096, len), 0);
	cr_assert_eq(graid_array_read(a, back, len, off), (ssize_t)len);
	cr_assert_eq(memcmp(back, want, len), 0, "the array returned other bytes");
	free(back);
}

/*
 * A RAID-5 of four new members in @p s, created, closed and opened again with member
 * @p m given the `faulty:` options @p opts.
 */
static struct graid_array *rr_open_faulty(struct au_set *s, unsigned m, const char *opts)
{
	struct graid_array *a;
	const char *paths[4];
	char spec[400];

	tu_need_fault_injection(); /* a release build refuses `faulty:` members */
	au_make(s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:%s:%s", opts, s->paths[m]);
	for (unsigned i = 0; i < 4; i++)
		paths[i] = i == m ? spec : s->paths[i];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	return a;
}

/*
 * Write another pattern at @p off first, through the array: the first write to a region marks
 * the write-intent bitmap and the live-data map on a ring of their own (meta_write.c), whose
 * submit would take the refusal these tests mean for the queue's ring.
 */
static void rr_mark_first(struct graid_array *a, uint64_t off)
{
	uint8_t *other;

	cr_assert_eq(posix_memalign((void **)&other, 4096, RR_BLOCK), 0);
	rr_pattern(other, RR_BLOCK, 9);
	cr_assert_eq(graid_array_write(a, other, RR_BLOCK, off), RR_BLOCK);
	free(other);
}

Test(ring_refusal, queue_submit_returns_the_kernels_errno_and_the_next_call_sends_it)
{
	struct graid_completion c;
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;

	au_make(&s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, RR_BLOCK), 0);
	rr_pattern(buf, RR_BLOCK, 1);
	rr_mark_first(a, 8 * RR_BLOCK);
	cr_assert_eq(graid_queue_write(q, buf, RR_BLOCK, 8 * RR_BLOCK, 42), 0);
	rr_refuse_next = 1;
	/* graid.h: "the number of requests in flight; a negative errno from io_uring". */
	cr_assert_eq(graid_queue_submit(q), -EAGAIN);
	cr_assert_eq(rr_refused, 1);
	/* What the kernel did not take is sent by the next call; the write completes whole. */
	cr_assert_eq(graid_queue_submit(q), 1);
	cr_assert_eq(graid_queue_reap(q, &c, 1, 1), 1);
	cr_assert_eq(c.user_data, 42);
	cr_assert_eq(c.result, RR_BLOCK);
	cr_assert_eq(rr_failed_members(a), 0);
	cr_assert_eq(graid_queue_destroy(q), 0);
	rr_check(a, buf, RR_BLOCK, 8 * RR_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/* A reap after a refused submit sends what the ring holds before it waits (it hung before). */
Test(ring_refusal, reap_after_a_refused_submit_sends_and_completes, .timeout = 60)
{
	struct graid_completion c;
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;

	au_make(&s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 6, 65536, &a), 0);
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, RR_BLOCK), 0);
	rr_pattern(buf, RR_BLOCK, 2);
	rr_mark_first(a, 0);
	cr_assert_eq(graid_queue_write(q, buf, RR_BLOCK, 0, 7), 0);
	rr_refuse_next = 1;
	cr_assert_lt(graid_queue_submit(q), 0);
	cr_assert_eq(graid_queue_reap(q, &c, 1, 1), 1);
	cr_assert_eq(c.result, RR_BLOCK);
	cr_assert_eq(rr_failed_members(a), 0);
	cr_assert_eq(graid_queue_destroy(q), 0);
	rr_check(a, buf, RR_BLOCK, 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * Many small RAID-6 writes at once, each in a stripe of its own, fill the submission ring
 * (1024 entries) in one submit: 512 stripe operations in flight (the queue's bound), each
 * reading three chunks first. The kernel refuses the full ring three times. Every write must
 * complete and no member may be failed: before, a healthy member was failed with -EAGAIN
 * for the ring being full.
 */
Test(ring_refusal, a_full_ring_the_kernel_refuses_for_a_while_fails_no_member, .timeout = 120)
{
	enum { N = 1024, STRIPE = 4 * RR_BLOCK }; /* RAID-6 of 6: 4 data chunks a stripe */
	struct graid_completion *c = calloc(N, sizeof(*c));
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;
	size_t len = (size_t)N * STRIPE;
	int done = 0;

	au_make(&s, 6, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 6, 6, RR_BLOCK, &a), 0);
	/* A new array reads as zeroes: the model is zeroes but for the blocks written. */
	cr_assert_eq(posix_memalign((void **)&model, 4096, len), 0);
	memset(model, 0, len);
	cr_assert_eq(graid_queue_create(a, N, &q), 0);
	rr_refuse_full = 3;
	for (unsigned i = 0; i < N; i++) {
		uint8_t *blk = model + (size_t)i * STRIPE + (i % 4) * RR_BLOCK;

		rr_pattern(blk, RR_BLOCK, i);
		cr_assert_eq(graid_queue_write(q, blk, RR_BLOCK, (uint64_t)(blk - model), i), 0);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	while (done < N) {
		int n = graid_queue_reap(q, c, N, 1);

		cr_assert_gt(n, 0, "reap: %d", n);
		for (int k = 0; k < n; k++)
			cr_assert_eq(c[k].result, RR_BLOCK, "write %llu: %lld",
				     (unsigned long long)c[k].user_data, (long long)c[k].result);
		done += n;
	}
	cr_assert_geq(rr_seen_full, 1, "the ring never filled (at most %u entries waiting): the "
		      "test did not test anything", rr_most_ready);
	cr_assert_geq(rr_refused, 1);
	cr_assert_eq(rr_failed_members(a), 0, "a member was failed for the ring being full");
	cr_assert_eq(graid_queue_destroy(q), 0);
	rr_check(a, model, len, 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	free(c);
	au_remove(&s);
}

/* A scrub (its own ring, member_batch.c) whose submits are refused a while finishes. */
Test(ring_refusal, a_scrub_whose_submit_is_refused_finishes, .timeout = 60)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct au_set s;
	uint8_t *data;
	size_t len = 1u << 20;

	au_make(&s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(posix_memalign((void **)&data, 4096, len), 0);
	rr_pattern(data, len, 4);
	cr_assert_eq(graid_array_write(a, data, len, 0), (ssize_t)len);
	rr_refused = 0;
	rr_refuse_next = 2;
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rr_refused, 2);
	cr_assert_gt(rep.stripes_checked, 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(rr_failed_members(a), 0);
	rr_check(a, data, len, 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(data);
	au_remove(&s);
}

/*
 * A synchronous write whose ring the kernel refuses for longer than the library's patience
 * (10 s at a time) must not come back while its request is still queued: it returned an
 * error, the caller reused its buffer, and the write landed later with the new bytes; the
 * next call on the same pooled queue reaped that write's completion as its own (review of
 * issue 20). It waits instead, and completes once the kernel takes the ring again.
 */
Test(ring_refusal, a_sync_write_refused_past_the_patience_waits_and_lands_once, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf, *back;

	au_make(&s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 65536), 0);
	cr_assert_eq(posix_memalign((void **)&back, 4096, 65536), 0);
	memset(buf, 0xAA, 65536);
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536);
	memset(back, 0x11, 65536);
	cr_assert_eq(graid_array_write(a, back, 65536, 8 * 65536), 65536);
	memset(buf, 0xBB, 65536);
	rr_refuse_until = rr_now_ns() + 12ull * 1000000000ull;
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536,
		     "the write returned before the kernel took it");
	cr_assert_geq(rr_now_ns(), rr_refuse_until, "it returned while the ring was refused");
	rr_refuse_until = 0;
	memset(buf, 0xCC, 65536); /* the caller's buffer is its own again */
	memset(back, 0, 65536);
	cr_assert_eq(graid_array_read(a, back, 65536, 8 * 65536), 65536);
	cr_assert_eq(back[0], 0x11, "the next call reaped another request's completion");
	cr_assert_eq(graid_array_read(a, back, 65536, 0), 65536);
	cr_assert_eq(back[0], 0xBB, "block 0 holds 0x%02x, not the write that succeeded",
		     back[0]);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(buf);
	free(back);
}

/*
 * A metadata mark the kernel takes only part of (meta_write.c): the writes it took are
 * waited for, the rest written member by member, and none is counted as late, as if still
 * out on the kernel's side. Before, all four counted: the two never sent never ended, so
 * two members stayed "not caught up" until close, which then waited 10 s for them.
 */
Test(ring_refusal, a_mark_the_kernel_takes_part_of_leaves_nothing_late, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf;

	au_make(&s, 4, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, RR_BLOCK), 0);
	rr_pattern(buf, RR_BLOCK, 3);
	rr_partial_small = 2; /* of the mark's four writes, one to each member */
	cr_assert_eq(graid_array_write(a, buf, RR_BLOCK, 16 * RR_BLOCK), RR_BLOCK);
	cr_assert_eq(rr_partial_small, 0, "the write marked nothing on a ring of its own");
	/* A mark of another region on the same ring: what was not taken must not go with it. */
	cr_assert_eq(graid_array_write(a, buf, RR_BLOCK, 48ull << 20), RR_BLOCK);
	cr_assert_eq(rr_failed_members(a), 0);
	for (unsigned m = 0; m < 4; m++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
		cr_assert_eq(mi.late_ios, 0, "member %u: %u I/O counted late", m, mi.late_ios);
		cr_assert_eq(mi.timeouts, 0, "member %u: %llu given up on", m,
			     (unsigned long long)mi.timeouts);
	}
	rr_check(a, buf, RR_BLOCK, 16 * RR_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	/* Reopened, every member is there and in step, and the block reads back. */
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(rr_failed_members(a), 0);
	rr_check(a, buf, RR_BLOCK, 16 * RR_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * The same with a member that holds its metadata writes 8 s, and an I/O timeout of
 * 300 ms: the kernel takes only that member's write (behind its stall), the others are
 * written member by member, and the stalled one is given up on after the timeout, as
 * when the kernel takes all. Before, the marks written the old way did not count as
 * durable anywhere, and the write waited the whole stall.
 */
Test(ring_refusal, a_mark_the_kernel_takes_part_of_still_keeps_the_io_timeout, .timeout = 60)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	uint64_t t0;
	uint8_t *buf;

	a = rr_open_faulty(&s, 0, "meta-stall-us=8000000");
	cr_assert_eq(graid_array_set_io_timeout(a, 300), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, RR_BLOCK), 0);
	rr_pattern(buf, RR_BLOCK, 5);
	rr_partial_small = 2; /* member 0's stall and its write */
	t0 = rr_now_ns();
	cr_assert_eq(graid_array_write(a, buf, RR_BLOCK, 16 * RR_BLOCK), RR_BLOCK);
	cr_assert_lt(rr_now_ns() - t0, 5000000000ull,
		     "the write waited out the 8 s stall (%.1f s), not the 300 ms timeout",
		     (double)(rr_now_ns() - t0) / 1e9);
	cr_assert_eq(rr_partial_small, 0, "the write marked nothing on a ring of its own");
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_geq(mi.timeouts, 1, "member 0's stalled mark was not given up on");
	rr_check(a, buf, RR_BLOCK, 16 * RR_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * A queue whose ring fails for good with a request out: graid_queue_destroy() says so and
 * leaves the memory to the kernel, but closes the ring, so that the kernel ends or cancels
 * what it holds (a ublk server's fetch commands among them: left open, they kept the
 * device from being deleted until the process exited). Before, the ring stayed open.
 */
Test(ring_refusal, a_queue_destroyed_with_a_broken_ring_closes_it, .timeout = 60)
{
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	unsigned before;
	uint8_t *buf;

	/* Member 1 a drive that holds each I/O 1.5 s: a write is still out at the destroy. */
	a = rr_open_faulty(&s, 1, "stall-us=1500000");
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 65536), 0);
	rr_pattern(buf, 65536, 4);
	rr_mark_first(a, 0);
	before = rr_rings_open();
	cr_assert_eq(graid_queue_create(a, 8, &q), 0);
	cr_assert_eq(rr_rings_open(), before + 1);
	cr_assert_eq(graid_queue_write(q, buf, 65536, 0, 1), 0);
	cr_assert_eq(graid_queue_submit(q), 1);
	rr_queue_wait_error = -EBADF;
	cr_assert_eq(graid_queue_destroy(q), -EBADF);
	rr_queue_wait_error = 0;
	cr_assert_eq(rr_rings_open(), before, "the broken ring was left open");
	/* The buffer was the kernel's until the write ended: wait that out before freeing. */
	usleep(2000 * 1000);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * A RAID-1 write whose copy cannot be put on the ring (the kernel refused the full ring
 * past the library's 10 s of patience) while the other copy could: the write succeeds with
 * the copy that went, and the member that missed it is failed. Before, it stayed in with
 * the old data of that block, and a read spread onto it returned that.
 */
Test(ring_refusal, a_mirror_copy_that_could_not_be_issued_fails_its_member, .timeout = 120)
{
	enum { N = 1024, M = 3 };
	struct graid_completion *c = calloc(N, sizeof(*c));
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_queue *q;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model, *back;
	size_t len = (size_t)N * RR_BLOCK;
	unsigned active = 0;
	int done = 0;

	au_make(&s, M, RR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, M, 1, RR_BLOCK, &a), 0); /* a chunk, and a stripe lock, a write */
	cr_assert_eq(posix_memalign((void **)&model, 4096, len), 0);
	cr_assert_eq(posix_memalign((void **)&back, 4096, len), 0);
	cr_assert_eq(graid_queue_create(a, N, &q), 0);
	/*
	 * Three copies a write: the ring fills two thirds of the way. The first submit that
	 * finds it full is refused past the patience (that copy is not issued); the next one,
	 * half a second later, goes through (the others are).
	 */
	rr_refuse_full_until = rr_now_ns() + 10500ull * 1000000ull;
	for (unsigned i = 0; i < N; i++) {
		rr_pattern(model + (size_t)i * RR_BLOCK, RR_BLOCK, i + 1);
		cr_assert_eq(graid_queue_write(q, model + (size_t)i * RR_BLOCK, RR_BLOCK,
					       (uint64_t)i * RR_BLOCK, i), 0);
	}
	cr_assert_geq(graid_queue_submit(q), 0);
	while (done < N) {
		int n = graid_queue_reap(q, c, N, 1);

		cr_assert_gt(n, 0, "reap: %d", n);
		for (int k = 0; k < n; k++)
			cr_assert_eq(c[k].result, RR_BLOCK, "write %llu: %lld",
				     (unsigned long long)c[k].user_data, (long long)c[k].result);
		done += n;
	}
	rr_refuse_full_until = 0;
	cr_assert_geq(rr_refused, 1, "no submit was refused: the test did not test anything");
	cr_assert_eq(graid_queue_destroy(q), 0);
	/* Every member still in holds every acknowledged write. */
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (unsigned m = 0; m < M; m++) {
		FILE *f;

		if (info.member_state[m] != GRAID_MEMBER_ACTIVE)
			continue;
		active++;
		f = fopen(s.path[m], "rb");
		cr_assert_not_null(f);
		cr_assert_eq(fseek(f, 1 << 20, SEEK_SET), 0); /* the data area, RAID-1: as is */
		cr_assert_eq(fread(back, 1, len, f), len);
		fclose(f);
		cr_assert_eq(memcmp(back, model, len), 0,
			     "member %u is in the array without a write it did not get", m);
	}
	cr_assert_geq(active, 1);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	free(back);
	free(c);
	au_remove(&s);
}
