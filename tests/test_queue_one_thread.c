/* SPDX-License-Identifier: MIT */
/*
 * GRAID_QUEUE_F_ONE_THREAD: a queue whose ring defers the kernel's completion work until
 * its one thread looks (DEFER_TASKRUN). Completions still come back to a reap that only
 * polls; data round-trips; unknown flags are refused; and every call from another thread
 * is refused with -EEXIST before it changes anything, so the owner finishes what it began.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <liburing.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "io/queue.h"

#define OT_CHUNK (64u * 1024)
#define OT_MEMBER_BYTES (4u << 20)
#define OT_DEPTH 8u

struct ot_bed {
	struct au_set s;
	struct graid_array *a;
	struct graid_queue *q;
};

/* Whether this kernel makes a ring that defers its completion work (Linux 6.1+). */
static bool ot_kernel_defers(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN |
					      IORING_SETUP_TASKRUN_FLAG };
	struct io_uring r;

	if (io_uring_queue_init_params(4, &r, &p) < 0)
		return false;
	io_uring_queue_exit(&r);
	return true;
}

static void ot_setup(struct ot_bed *b)
{
	au_make(&b->s, 5, OT_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, 5, 6, OT_CHUNK, &b->a), 0);
	cr_assert_eq(graid_queue_create_flags(b->a, OT_DEPTH, GRAID_QUEUE_F_ONE_THREAD, &b->q), 0);
}

static void ot_teardown(struct ot_bed *b)
{
	cr_assert_eq(graid_queue_destroy(b->q), 0);
	cr_assert_eq(graid_array_close(b->a), 0);
	au_remove(&b->s);
}

static uint64_t ot_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

Test(queue_one_thread, unknown_flags_are_refused)
{
	struct graid_queue *q = (struct graid_queue *)0x1;
	struct au_set s;
	struct graid_array *a;

	au_make(&s, 3, OT_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, OT_CHUNK, &a), 0);
	cr_assert_eq(graid_queue_create_flags(a, OT_DEPTH, 1u << 1, &q), -EINVAL);
	cr_assert_eq(graid_queue_create_flags(a, OT_DEPTH, ~GRAID_QUEUE_F_ALL, &q), -EINVAL);
	cr_assert_eq(q, (struct graid_queue *)0x1, "nothing written on refusal");
	cr_assert_eq(graid_queue_create_flags(a, OT_DEPTH, 0, &q), 0);
	cr_assert_eq(graid_queue_flags(q), 0);
	cr_assert_eq(graid_queue_destroy(q), 0);
	cr_assert_eq(graid_queue_flags(NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Where the kernel has deferred completion work, the queue runs with it. */
Test(queue_one_thread, the_flag_is_in_effect_where_the_kernel_has_it)
{
	struct ot_bed b;

	const unsigned want = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			      IORING_SETUP_TASKRUN_FLAG;

	ot_setup(&b);
	cr_assert_eq(graid_queue_flags(b.q), ot_kernel_defers() ? GRAID_QUEUE_F_ONE_THREAD : 0,
		     "a kernel with DEFER_TASKRUN: the flag must hold");
	/* And the ring is what the flag says: deferred, single issuer, the flag in the ring. */
	cr_assert_eq(b.q->ring.flags & want, graid_queue_flags(b.q) ? want : 0,
		     "ring flags %#x", b.q->ring.flags);
	ot_teardown(&b);
}

/*
 * A reap with min_complete 0 never waits, and deferred work runs only when the thread
 * enters the kernel for events: the library must do that when the ring says work waits,
 * or a polling caller never sees a timer's completion (or a drive's).
 */
Test(queue_one_thread, a_reap_that_only_polls_sees_deferred_completions, .timeout = 30)
{
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	struct graid_completion c[4];
	struct io_uring_sqe sqe;
	struct ot_bed b;
	uint8_t *buf = aligned_alloc(4096, 3 * OT_CHUNK);
	bool seen_timer = false, seen_read = false;
	uint64_t deadline;

	ot_setup(&b);
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_timeout(&sqe, &ts, 0, 0);
	cr_assert_eq(graid_queue_sqe(b.q, &sqe, 0x71), 0);
	cr_assert_eq(graid_queue_read(b.q, buf, 3 * OT_CHUNK, 0, 1), 0);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	deadline = ot_now_ms() + 5000;
	while (!(seen_timer && seen_read)) {
		int n = graid_queue_reap(b.q, c, 4, 0);

		cr_assert_geq(n, 0, "reap: %d", n);
		for (int i = 0; i < n; i++) {
			if (c[i].user_data == 0x71) {
				cr_assert_eq(c[i].result, -ETIME);
				seen_timer = true;
			} else {
				cr_assert_eq(c[i].user_data, 1);
				cr_assert_eq(c[i].result, 3 * OT_CHUNK);
				seen_read = true;
			}
		}
		cr_assert_lt(ot_now_ms(), deadline, "polling never saw the %s's completion",
			     seen_timer ? "read" : "timer");
		if (!n)
			usleep(1000);
	}
	free(buf);
	ot_teardown(&b);
}

/* Writes and reads of whole and partial stripes round-trip, with blocking reaps. */
Test(queue_one_thread, data_round_trips, .timeout = 60)
{
	const size_t stripe = 3 * OT_CHUNK;
	struct graid_completion c[OT_DEPTH];
	struct ot_bed b;
	uint8_t *w = aligned_alloc(4096, 8 * stripe), *r = aligned_alloc(4096, 8 * stripe);
	unsigned pending = 0;

	for (size_t i = 0; i < 8 * stripe; i++)
		w[i] = (uint8_t)(i * 131 + 7);
	memset(r, 0, 8 * stripe);
	ot_setup(&b);
	/* Two whole stripes, then partial writes of 4 KiB .. 60 KiB across the rest. */
	cr_assert_eq(graid_queue_write(b.q, w, 2 * stripe, 0, 0), 0);
	pending++;
	for (uint64_t off = 2 * stripe, i = 1; off < 8 * stripe; i++) {
		size_t len = (size_t)(i % 15 + 1) * 4096;

		if (off + len > 8 * stripe)
			len = (size_t)(8 * stripe - off);
		if (pending == OT_DEPTH) {
			int n = graid_queue_reap(b.q, c, OT_DEPTH, 1);

			cr_assert_gt(n, 0);
			for (int k = 0; k < n; k++)
				cr_assert_geq(c[k].result, 0, "write %lu: %ld",
					      (unsigned long)c[k].user_data, (long)c[k].result);
			pending -= (unsigned)n;
		}
		cr_assert_eq(graid_queue_write(b.q, w + off, len, off, i), 0);
		pending++;
		off += len;
	}
	cr_assert_geq(graid_queue_submit(b.q), 0);
	while (pending) {
		int n = graid_queue_reap(b.q, c, OT_DEPTH, 1);

		cr_assert_gt(n, 0);
		for (int k = 0; k < n; k++)
			cr_assert_geq(c[k].result, 0);
		pending -= (unsigned)n;
	}
	cr_assert_eq(graid_queue_read(b.q, r, 8 * stripe, 0, 99), 0);
	cr_assert_eq(graid_queue_reap(b.q, c, 1, 1), 1);
	cr_assert_eq(c[0].result, (int64_t)(8 * stripe));
	cr_assert(memcmp(r, w, 8 * stripe) == 0, "the bytes read differ from those written");
	{
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
		cr_assert_gt(rep.stripes_checked, 0);
		cr_assert_eq(rep.mismatches, 0, "parity matches the data");
	}
	free(w);
	free(r);
	ot_teardown(&b);
}

struct ot_other {
	struct ot_bed *b;
	uint8_t *buf;
	int read, write, submit, reap, sqe, destroy, reg, unreg;
};

/* Every entry point, from a thread that is not the queue's owner. */
static void *ot_other_thread(void *arg)
{
	struct ot_other *o = arg;
	struct graid_completion c;
	struct io_uring_sqe sqe;
	struct iovec iov = { o->buf, OT_CHUNK };

	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_nop(&sqe);
	o->read = graid_queue_read(o->b->q, o->buf, 4096, 0, 5);
	o->write = graid_queue_write(o->b->q, o->buf, 4096, 0, 6);
	o->submit = graid_queue_submit(o->b->q);
	o->reap = graid_queue_reap(o->b->q, &c, 1, 1);
	o->sqe = graid_queue_sqe(o->b->q, &sqe, 7);
	o->reg = graid_queue_register_buffers(o->b->q, &iov, 1);
	o->unreg = graid_queue_unregister_buffers(o->b->q);
	o->destroy = graid_queue_destroy(o->b->q);
	return NULL;
}

Test(queue_one_thread, another_thread_is_refused_and_changes_nothing, .timeout = 30)
{
	struct graid_completion c[2];
	struct ot_other o = { 0 };
	struct ot_bed b;
	pthread_t t;
	uint8_t *mine = aligned_alloc(4096, OT_CHUNK);

	ot_setup(&b);
	if (!graid_queue_flags(b.q)) {
		ot_teardown(&b);
		free(mine);
		cr_skip_test("this kernel has no DEFER_TASKRUN: the queue is an ordinary one");
	}
	o.b = &b;
	o.buf = aligned_alloc(4096, OT_CHUNK);
	memset(mine, 0x5a, OT_CHUNK);
	cr_assert_eq(graid_queue_write(b.q, mine, 4096, 0, 1), 0, "queued, not yet sent");
	cr_assert_eq(pthread_create(&t, NULL, ot_other_thread, &o), 0);
	pthread_join(t, NULL);
	cr_assert_eq(o.read, -EEXIST);
	cr_assert_eq(o.write, -EEXIST);
	cr_assert_eq(o.submit, -EEXIST);
	cr_assert_eq(o.reap, -EEXIST);
	cr_assert_eq(o.sqe, -EEXIST);
	cr_assert_eq(o.reg, -EEXIST);
	cr_assert_eq(o.unreg, -EINVAL, "nothing registered is said first");
	cr_assert_eq(o.destroy, -EEXIST, "a request is in the queue: only its owner can wait");
	/* The owner's request is the only one, and it completes. */
	cr_assert_eq(graid_queue_submit(b.q), 1);
	cr_assert_eq(graid_queue_reap(b.q, c, 2, 1), 1);
	cr_assert_eq(c[0].user_data, 1);
	cr_assert_eq(c[0].result, 4096);
	cr_assert_eq(graid_queue_reap(b.q, c, 2, 0), 0, "nothing else was queued");
	memset(o.buf, 0, 4096);
	cr_assert_eq(graid_array_read(b.a, o.buf, 4096, 0), 4096);
	cr_assert(memcmp(o.buf, mine, 4096) == 0);
	/* Idle, it may be freed from anywhere. */
	o = (struct ot_other){ .b = &b, .buf = o.buf };
	cr_assert_eq(pthread_create(&t, NULL, ot_other_thread, &o), 0);
	pthread_join(t, NULL);
	cr_assert_eq(o.destroy, 0, "an idle queue is freed by any thread");
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
	free(o.buf);
	free(mine);
}

struct ot_submit {
	struct graid_queue *q;
	int rc;
};

static void *ot_submit_thread(void *arg)
{
	struct ot_submit *s = arg;

	s->rc = graid_queue_submit(s->q);
	return NULL;
}

/*
 * More member I/O than the ring holds (600 small RAID-6 writes, up to 512 at once, each
 * reading old data, P and Q: 1536 entries for a ring of 1024): a submit from a foreign thread would meet the kernel's refusal when the ring
 * fills half-way, where a refused member I/O fails its member. Refused up front instead,
 * nothing fails, and the owner then completes every write.
 */
Test(queue_one_thread, a_foreign_submit_of_more_than_the_ring_fails_no_member, .timeout = 60)
{
	/* 7 members, 5 data: a 4 KiB write reads 3 (old data, P, Q) rather than the other 4. */
	const unsigned nw = 600, chunk = 16u * 1024, stripe = 5 * chunk;
	struct graid_completion *c = calloc(nw, sizeof(*c));
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct ot_submit sub;
	struct graid_array *a;
	struct graid_queue *q;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, 4096);
	unsigned done = 0;
	pthread_t t;

	memset(buf, 0xa5, 4096);
	au_make(&s, 7, 32u << 20);
	cr_assert_eq(au_create(&s, 7, 6, chunk, &a), 0);
	cr_assert_eq(graid_queue_create_flags(a, 1024, GRAID_QUEUE_F_ONE_THREAD, &q), 0);
	if (!graid_queue_flags(q)) {
		cr_assert_eq(graid_queue_destroy(q), 0);
		cr_assert_eq(graid_array_close(a), 0);
		au_remove(&s);
		cr_skip_test("this kernel has no DEFER_TASKRUN: the queue is an ordinary one");
	}
	/* Written once, so the small writes below read old data and parity first. */
	{
		uint8_t *fill = aligned_alloc(4096, 8 * stripe);

		memset(fill, 0x3c, 8 * stripe);
		for (uint64_t off = 0; off < (uint64_t)nw * stripe; off += 8 * stripe)
			cr_assert_eq(graid_array_write(a, fill, 8 * stripe, off), 8 * stripe);
		free(fill);
	}
	for (unsigned i = 0; i < nw; i++)
		cr_assert_eq(graid_queue_write(q, buf, 4096, (uint64_t)i * stripe, i), 0);
	sub.q = q;
	cr_assert_eq(pthread_create(&t, NULL, ot_submit_thread, &sub), 0);
	pthread_join(t, NULL);
	cr_assert_eq(sub.rc, -EEXIST);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "a member failed on a foreign thread's submit");
	while (done < nw) {
		int n = graid_queue_reap(q, c, nw, 1);

		cr_assert_gt(n, 0, "reap: %d", n);
		for (int k = 0; k < n; k++)
			cr_assert_eq(c[k].result, 4096, "write %lu: %ld",
				     (unsigned long)c[k].user_data, (long)c[k].result);
		done += (unsigned)n;
	}
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert_eq(graid_queue_destroy(q), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(buf);
	free(c);
}

/* A fork()'s child has its parent's pthread_self(), not its ring: refused all the same. */
Test(queue_one_thread, a_forked_child_is_refused, .timeout = 30)
{
	struct graid_completion c;
	struct ot_bed b;
	uint8_t *buf = aligned_alloc(4096, 4096);
	int status;
	pid_t pid;

	ot_setup(&b);
	if (!graid_queue_flags(b.q)) {
		ot_teardown(&b);
		free(buf);
		cr_skip_test("this kernel has no DEFER_TASKRUN: the queue is an ordinary one");
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(graid_queue_read(b.q, buf, 4096, 0, 1) == -EEXIST &&
		      graid_queue_reap(b.q, &c, 1, 0) == -EEXIST ? 0 : 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child's read or reap was not refused with -EEXIST");
	/* The parent's queue is untouched: its own read goes through. */
	cr_assert_eq(graid_queue_read(b.q, buf, 4096, 0, 2), 0);
	cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
	cr_assert_eq(c.result, 4096);
	free(buf);
	ot_teardown(&b);
}

struct ot_made {
	struct graid_array *a;
	struct graid_queue *q;
	pthread_t self;
	int rc, write, submit, reap;
};

/* Makes the queue, completes one write on it, and exits without destroying it. */
static void *ot_maker_thread(void *arg)
{
	struct ot_made *m = arg;
	struct graid_completion c;
	uint8_t *buf = aligned_alloc(4096, 4096);

	m->self = pthread_self();
	memset(buf, 0x6b, 4096);
	m->rc = graid_queue_create_flags(m->a, OT_DEPTH, GRAID_QUEUE_F_ONE_THREAD, &m->q);
	if (m->rc == 0 && graid_queue_write(m->q, buf, 4096, 0, 1) == 0 &&
	    graid_queue_submit(m->q) == 1 && graid_queue_reap(m->q, &c, 1, 1) == 1)
		m->rc = (int)c.result;
	free(buf);
	return NULL;
}

/* A thread made after the maker exited: often the maker's pthread_t, never its ring. */
static void *ot_successor_thread(void *arg)
{
	struct ot_made *m = arg;
	struct graid_completion c;
	uint8_t *buf = aligned_alloc(4096, 4096);

	m->self = pthread_self();
	memset(buf, 0x11, 4096);
	m->write = graid_queue_write(m->q, buf, 4096, 4096, 2);
	m->submit = graid_queue_submit(m->q);
	m->reap = graid_queue_reap(m->q, &c, 1, 0);
	free(buf);
	return NULL;
}

/*
 * glibc hands a thread made after one exits the same control block, so the same pthread_t;
 * the kernel refuses the ring to it (another task). Told apart by the library, it is refused
 * up front, and the member its refused member write would have failed stays in the array.
 */
Test(queue_one_thread, a_thread_with_the_exited_owners_pthread_t_is_refused, .timeout = 30)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct ot_made m = { 0 };
	struct au_set s;
	pthread_t t, maker;
	uint8_t *buf = aligned_alloc(4096, 4096);

	au_make(&s, 5, OT_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, OT_CHUNK, &m.a), 0);
	cr_assert_eq(pthread_create(&t, NULL, ot_maker_thread, &m), 0);
	pthread_join(t, NULL);
	cr_assert_eq(m.rc, 4096, "the maker's own write: %d", m.rc);
	maker = m.self;
	if (!graid_queue_flags(m.q)) {
		cr_assert_eq(graid_queue_destroy(m.q), 0);
		cr_assert_eq(graid_array_close(m.a), 0);
		au_remove(&s);
		free(buf);
		cr_skip_test("this kernel has no DEFER_TASKRUN: the queue is an ordinary one");
	}
	cr_assert_eq(pthread_create(&t, NULL, ot_successor_thread, &m), 0);
	pthread_join(t, NULL);
	if (!pthread_equal(m.self, maker))
		cr_log_warn("the successor got another pthread_t: the test shows less than it can");
	cr_assert_eq(m.write, -EEXIST, "a successor's write: %d", m.write);
	cr_assert_eq(m.submit, -EEXIST);
	cr_assert_eq(m.reap, -EEXIST);
	cr_assert_eq(graid_array_info(m.a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "a member failed on the successor's write");
	cr_assert_eq(graid_queue_destroy(m.q), 0, "idle: anyone may free it");
	cr_assert_eq(graid_array_read(m.a, buf, 4096, 0), 4096);
	cr_assert_eq(buf[0], 0x6b);
	cr_assert_eq(graid_array_read(m.a, buf, 4096, 4096), 4096);
	cr_assert_neq(buf[0], 0x11, "the refused write wrote nothing");
	cr_assert_eq(graid_array_close(m.a), 0);
	au_remove(&s);
	free(buf);
}
