/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_sqe(): the caller's own io_uring operations on a queue's ring. Their
 * completions come back through graid_queue_reap() with the caller's user_data, among the
 * requests'; a reap waits for them even with no request in flight; flags the ring cannot
 * honour are refused; too many in flight is -EAGAIN; and a queue destroyed with some still
 * in flight (polls that never fire) does not hang.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <liburing.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

#define QS_CHUNK (64u * 1024)
#define QS_MEMBER_BYTES (4u << 20)
#define QS_DEPTH 8u

struct qs_bed {
	struct au_set s;
	struct graid_array *a;
	struct graid_queue *q;
};

static void qs_setup(struct qs_bed *b)
{
	au_make(&b->s, 4, QS_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, 4, 5, QS_CHUNK, &b->a), 0);
	cr_assert_eq(graid_queue_create(b->a, QS_DEPTH, &b->q), 0);
}

static void qs_teardown(struct qs_bed *b)
{
	cr_assert_eq(graid_queue_destroy(b->q), 0);
	cr_assert_eq(graid_array_close(b->a), 0);
	au_remove(&b->s);
}

Test(queue_sqe, a_nop_and_a_request_both_come_back)
{
	struct graid_completion c[4];
	struct io_uring_sqe sqe;
	struct qs_bed b;
	uint8_t *buf = aligned_alloc(4096, 8192);
	bool seen_nop = false, seen_read = false;
	int got = 0;

	qs_setup(&b);
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_nop(&sqe);
	sqe.user_data = 0xdead; /* ignored */
	cr_assert_eq(graid_queue_read(b.q, buf, 8192, 0, 1), 0);
	cr_assert_eq(graid_queue_sqe(b.q, &sqe, 0x5150), 0);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	while (got < 2) {
		int n = graid_queue_reap(b.q, c, 4, 1);

		cr_assert_gt(n, 0, "reap: %d after %d", n, got);
		for (int i = 0; i < n; i++) {
			if (c[i].user_data == 0x5150) {
				cr_assert_eq(c[i].result, 0);
				seen_nop = true;
			} else {
				cr_assert_eq(c[i].user_data, 1);
				cr_assert_eq(c[i].result, 8192);
				seen_read = true;
			}
		}
		got += n;
	}
	cr_assert(seen_nop && seen_read);
	cr_assert_eq(graid_queue_reap(b.q, c, 4, 1), 0, "nothing left, nothing waited for");
	free(buf);
	qs_teardown(&b);
}

struct qs_late_write {
	int fd;
};

static void *qs_write_later(void *arg)
{
	struct qs_late_write *w = arg;

	usleep(100 * 1000);
	if (write(w->fd, "hello", 5) != 5)
		abort();
	return NULL;
}

/* No request in flight: a blocking reap waits for the caller's read of a pipe. */
Test(queue_sqe, a_reap_waits_for_an_operation_alone)
{
	struct graid_completion c;
	struct io_uring_sqe sqe;
	struct qs_late_write w;
	struct qs_bed b;
	pthread_t t;
	char got[8] = { 0 };
	int p[2];

	qs_setup(&b);
	cr_assert_eq(pipe(p), 0);
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_read(&sqe, p[0], got, sizeof(got), 0);
	cr_assert_eq(graid_queue_sqe(b.q, &sqe, 77), 0);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	w.fd = p[1];
	cr_assert_eq(pthread_create(&t, NULL, qs_write_later, &w), 0);
	cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
	cr_assert_eq(c.user_data, 77);
	cr_assert_eq(c.result, 5);
	cr_assert_str_eq(got, "hello");
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	qs_teardown(&b);
}

Test(queue_sqe, flags_the_ring_cannot_honour_are_refused)
{
	static const unsigned refused[] = { IOSQE_FIXED_FILE, IOSQE_IO_LINK, IOSQE_IO_HARDLINK,
					    IOSQE_IO_DRAIN, IOSQE_BUFFER_SELECT,
					    IOSQE_CQE_SKIP_SUCCESS };
	struct io_uring_sqe sqe;
	struct qs_bed b;

	qs_setup(&b);
	cr_assert_eq(graid_queue_sqe(NULL, &sqe, 1), -EINVAL);
	cr_assert_eq(graid_queue_sqe(b.q, NULL, 1), -EINVAL);
	for (unsigned i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&sqe, 0, sizeof(sqe));
		io_uring_prep_nop(&sqe);
		sqe.flags = (uint8_t)refused[i];
		cr_assert_eq(graid_queue_sqe(b.q, &sqe, 1), -EINVAL, "flag %#x", refused[i]);
	}
	/* Operations that would reach the member I/O on the ring. */
	{
		static const uint8_t ops[] = { IORING_OP_ASYNC_CANCEL, IORING_OP_POLL_REMOVE,
					       IORING_OP_TIMEOUT_REMOVE, IORING_OP_LINK_TIMEOUT,
					       IORING_OP_FILES_UPDATE };

		for (unsigned i = 0; i < sizeof(ops); i++) {
			memset(&sqe, 0, sizeof(sqe));
			sqe.opcode = ops[i];
			cr_assert_eq(graid_queue_sqe(b.q, &sqe, 1), -EINVAL, "opcode %u", ops[i]);
		}
	}
	cr_assert_eq(graid_queue_reap(b.q, NULL, 0, 0), 0);
	qs_teardown(&b);
}

/* Completions handed out a few at a time keep their order and none is lost. */
Test(queue_sqe, completions_come_back_a_few_at_a_time)
{
	struct graid_completion c[2];
	struct io_uring_sqe sqe;
	struct qs_bed b;
	uint64_t next = 0;

	qs_setup(&b);
	for (uint64_t i = 0; i < 5; i++) {
		memset(&sqe, 0, sizeof(sqe));
		io_uring_prep_nop(&sqe);
		cr_assert_eq(graid_queue_sqe(b.q, &sqe, 100 + i), 0);
	}
	cr_assert_geq(graid_queue_submit(b.q), 0);
	while (next < 5) {
		int n = graid_queue_reap(b.q, c, next < 4 ? 2 : 1, 1);

		cr_assert_gt(n, 0);
		for (int i = 0; i < n; i++)
			cr_assert_eq(c[i].user_data, 100 + next++, "out of order or lost");
	}
	cr_assert_eq(graid_queue_reap(b.q, c, 2, 0), 0);
	qs_teardown(&b);
}

/* Not while an operation is out: a kernel that quiesces the ring would wait for it. */
Test(queue_sqe, buffers_stay_registered_while_an_operation_is_out, .timeout = 30)
{
	struct io_uring_sqe sqe;
	struct qs_bed b;
	struct iovec iov = { 0 };
	int efd = eventfd(0, 0);

	qs_setup(&b);
	cr_assert_eq(graid_queue_register_buffers(b.q, &iov, 1), 0, "one empty slot");
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_poll_add(&sqe, efd, POLLIN);
	cr_assert_eq(graid_queue_sqe(b.q, &sqe, 9), 0);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	cr_assert_eq(graid_queue_unregister_buffers(b.q), -EBUSY);
	cr_assert_eq(eventfd_write(efd, 1), 0);
	{
		struct graid_completion c;

		cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
		cr_assert_eq(c.user_data, 9);
	}
	cr_assert_eq(graid_queue_unregister_buffers(b.q), 0);
	qs_teardown(&b);
	close(efd);
}

/* Twice the depth plus 16 at most; destroying the queue with them out does not hang. */
Test(queue_sqe, too_many_is_eagain_and_destroy_cancels, .timeout = 30)
{
	struct io_uring_sqe sqe;
	struct qs_bed b;
	int efd = eventfd(0, 0);
	unsigned n = 0;
	int rc;

	qs_setup(&b);
	cr_assert_geq(efd, 0);
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_poll_add(&sqe, efd, POLLIN);
	while ((rc = graid_queue_sqe(b.q, &sqe, n)) == 0)
		n++;
	cr_assert_eq(rc, -EAGAIN);
	cr_assert_eq(n, 2 * QS_DEPTH + 16);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	qs_teardown(&b);
	close(efd);
}
