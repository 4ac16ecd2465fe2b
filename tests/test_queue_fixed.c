/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_register_buffers(): member I/O straight into or out of registered memory goes
 * through io_uring's fixed buffers. The proof that it does: the kernel writes a fixed
 * buffer through the pages it pinned at registration, so a read lands in memory the
 * process has since made read-only, where a read into ordinary memory fails (EFAULT).
 * And the data are right at every level, requests outside the ranges work as before, and
 * bad arguments are refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

#define QF_CHUNK (64u * 1024)
#define QF_MEMBER_BYTES (8u << 20)
#define QF_SPAN (256u * 1024) /* bytes each test writes and reads back */

struct qf_bed {
	struct au_set s;
	struct graid_array *a;
	struct graid_queue *q;
	uint8_t *mem; /* 2 x QF_SPAN, page-aligned: the registered range */
};

static void qf_setup(struct qf_bed *b, int level, unsigned n)
{
	au_make(&b->s, n, QF_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, n, level, QF_CHUNK, &b->a), 0);
	cr_assert_eq(graid_queue_create(b->a, 16, &b->q), 0);
	b->mem = mmap(NULL, 2 * QF_SPAN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	cr_assert_neq(b->mem, MAP_FAILED);
}

static void qf_teardown(struct qf_bed *b)
{
	cr_assert_eq(graid_queue_destroy(b->q), 0);
	cr_assert_eq(graid_array_close(b->a), 0);
	munmap(b->mem, 2 * QF_SPAN);
	au_remove(&b->s);
}

/*
 * Register, or skip where pinning is not allowed: io_uring charges the pages to
 * RLIMIT_MEMLOCK (without CAP_IPC_LOCK), which is 64 KiB on some systems.
 */
static void qf_register(struct qf_bed *b, const struct iovec *iov, unsigned n)
{
	int rc = graid_queue_register_buffers(b->q, iov, n);

	if (rc == -ENOMEM || rc == -EPERM) {
		qf_teardown(b);
		cr_skip_test("the kernel would not pin %u range(s) here (%s): RLIMIT_MEMLOCK?", n,
			     graid_strerror(rc));
	}
	cr_assert_eq(rc, 0, "graid_queue_register_buffers: %d", rc);
}

/* One request through the queue, waited for; its result. */
static int64_t qf_one(struct graid_queue *q, bool write, void *buf, size_t len, uint64_t off)
{
	struct graid_completion c;
	int rc = write ? graid_queue_write(q, buf, len, off, 7) : graid_queue_read(q, buf, len, off, 7);

	cr_assert_eq(rc, 0, "queueing: %d", rc);
	cr_assert_geq(graid_queue_submit(q), 0);
	cr_assert_eq(graid_queue_reap(q, &c, 1, 1), 1);
	cr_assert_eq(c.user_data, 7);
	return c.result;
}

static void qf_pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 12));
}

/* Write the first half of the range from registered memory, read it into the second. */
static void qf_round_trip(int level, unsigned n)
{
	struct qf_bed b;
	struct iovec iov;

	qf_setup(&b, level, n);
	iov = (struct iovec){ .iov_base = b.mem, .iov_len = 2 * QF_SPAN };
	qf_register(&b, &iov, 1);
	qf_pattern(b.mem, QF_SPAN, (unsigned)level);
	cr_assert_eq(qf_one(b.q, true, b.mem, QF_SPAN, 3 * QF_CHUNK), QF_SPAN);
	memset(b.mem + QF_SPAN, 0xee, QF_SPAN);
	cr_assert_eq(qf_one(b.q, false, b.mem + QF_SPAN, QF_SPAN, 3 * QF_CHUNK), QF_SPAN);
	cr_assert_eq(memcmp(b.mem, b.mem + QF_SPAN, QF_SPAN), 0, "RAID-%d read back wrong", level);
	/* Small requests inside the range, and one from memory outside any range. */
	cr_assert_eq(qf_one(b.q, false, b.mem + QF_SPAN + 4096, 4096, 3 * QF_CHUNK + 8192), 4096);
	cr_assert_eq(memcmp(b.mem + QF_SPAN + 4096, b.mem + 8192, 4096), 0);
	{
		uint8_t *plain = aligned_alloc(4096, 8192);

		cr_assert_eq(qf_one(b.q, false, plain, 8192, 3 * QF_CHUNK), 8192);
		cr_assert_eq(memcmp(plain, b.mem, 8192), 0);
		free(plain);
	}
	cr_assert_eq(graid_queue_unregister_buffers(b.q), 0);
	/* And without the registration, the same data. */
	memset(b.mem + QF_SPAN, 0, QF_SPAN);
	cr_assert_eq(qf_one(b.q, false, b.mem + QF_SPAN, QF_SPAN, 3 * QF_CHUNK), QF_SPAN);
	cr_assert_eq(memcmp(b.mem, b.mem + QF_SPAN, QF_SPAN), 0);
	qf_teardown(&b);
}

Test(queue_fixed, raid0_round_trip) { qf_round_trip(0, 3); }
Test(queue_fixed, raid1_round_trip) { qf_round_trip(1, 2); }
Test(queue_fixed, raid5_round_trip) { qf_round_trip(5, 4); }
Test(queue_fixed, raid6_round_trip) { qf_round_trip(6, 5); }
Test(queue_fixed, raid10_round_trip) { qf_round_trip(10, 4); }

/*
 * The member reads of a registered range use the pages pinned at registration: they land
 * even after the range was made read-only (a read into ordinary read-only memory fails:
 * the test fails with the fixed path taken out of queue_io).
 */
static void qf_read_only_pages(int level, unsigned n)
{
	struct qf_bed b;
	struct iovec iov;

	qf_setup(&b, level, n);
	qf_pattern(b.mem, QF_SPAN, 9);
	cr_assert_eq(qf_one(b.q, true, b.mem, QF_SPAN, 0), QF_SPAN);
	iov = (struct iovec){ .iov_base = b.mem + QF_SPAN, .iov_len = QF_SPAN };
	qf_register(&b, &iov, 1);
	cr_assert_eq(mprotect(b.mem + QF_SPAN, QF_SPAN, PROT_READ), 0);
	cr_assert_eq(qf_one(b.q, false, b.mem + QF_SPAN, QF_SPAN, 0), QF_SPAN,
		     "RAID-%d: the read did not go through the fixed buffer", level);
	cr_assert_eq(memcmp(b.mem, b.mem + QF_SPAN, QF_SPAN), 0);
	cr_assert_eq(mprotect(b.mem + QF_SPAN, QF_SPAN, PROT_READ | PROT_WRITE), 0);
	qf_teardown(&b);
}

Test(queue_fixed, raid0_reads_land_in_pages_pinned_at_registration) { qf_read_only_pages(0, 3); }
Test(queue_fixed, raid1_reads_land_in_pages_pinned_at_registration) { qf_read_only_pages(1, 2); }
Test(queue_fixed, raid5_reads_land_in_pages_pinned_at_registration) { qf_read_only_pages(5, 4); }

/*
 * Several ranges, given out of address order: each read lands through its own range's
 * index (the lookup's sorted order is not the kernel's), and a read across the boundary of
 * two adjacent ranges, in no one range, goes the ordinary way.
 */
Test(queue_fixed, each_range_is_named_by_its_own_index)
{
	const size_t piece = QF_SPAN / 4;
	struct qf_bed b;
	struct iovec iov[3];

	qf_setup(&b, 5, 4);
	qf_pattern(b.mem, QF_SPAN, 5);
	cr_assert_eq(qf_one(b.q, true, b.mem, QF_SPAN, 0), QF_SPAN);
	/* Highest first; the last two adjacent. */
	iov[0] = (struct iovec){ .iov_base = b.mem + QF_SPAN + 3 * piece, .iov_len = piece };
	iov[1] = (struct iovec){ .iov_base = b.mem + QF_SPAN, .iov_len = piece };
	iov[2] = (struct iovec){ .iov_base = b.mem + QF_SPAN + piece, .iov_len = piece };
	qf_register(&b, iov, 3);
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *dst = iov[i].iov_base;
		size_t at = (size_t)(dst - (b.mem + QF_SPAN));

		cr_assert_eq(mprotect(dst, piece, PROT_READ), 0);
		cr_assert_eq(qf_one(b.q, false, dst, piece, at), (int64_t)piece,
			     "range %u: not read through its own fixed buffer", i);
		cr_assert_eq(memcmp(dst, b.mem + at, piece), 0, "range %u", i);
		cr_assert_eq(mprotect(dst, piece, PROT_READ | PROT_WRITE), 0);
	}
	memset(b.mem + QF_SPAN, 0, 2 * piece);
	cr_assert_eq(qf_one(b.q, false, b.mem + QF_SPAN + piece / 2, piece, piece / 2),
		     (int64_t)piece, "a read across two ranges");
	cr_assert_eq(memcmp(b.mem + QF_SPAN + piece / 2, b.mem + piece / 2, piece), 0);
	qf_teardown(&b);
}

Test(queue_fixed, bad_arguments_are_refused)
{
	struct qf_bed b;
	struct iovec iov[3];
	struct graid_completion c;

	qf_setup(&b, 5, 4);
	iov[0] = (struct iovec){ .iov_base = b.mem, .iov_len = 4096 };
	iov[1] = (struct iovec){ .iov_base = b.mem + 8192, .iov_len = 4096 };
	cr_assert_eq(graid_queue_register_buffers(NULL, iov, 1), -EINVAL);
	cr_assert_eq(graid_queue_register_buffers(b.q, NULL, 1), -EINVAL);
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 0), -EINVAL);
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, GRAID_QUEUE_MAX_BUFFERS + 1), -EINVAL);
	iov[2] = (struct iovec){ .iov_base = b.mem + 4096, .iov_len = 0 };
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 3), -EINVAL, "an empty range");
	iov[2] = (struct iovec){ .iov_base = NULL, .iov_len = 4096 };
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 3), -EINVAL, "a NULL range");
	iov[2] = (struct iovec){ .iov_base = b.mem + 4096, .iov_len = 8192 };
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 3), -EINVAL, "overlapping ranges");
	cr_assert_eq(graid_queue_unregister_buffers(b.q), -EINVAL, "nothing registered");
	cr_assert_eq(graid_queue_unregister_buffers(NULL), -EINVAL);
	/* Refused calls registered nothing: a good one now works, a second is refused. */
	qf_register(&b, iov, 2);
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 2), -EBUSY);
	/* Not with a request in flight. */
	cr_assert_eq(graid_queue_read(b.q, b.mem, 4096, 0, 1), 0);
	cr_assert_eq(graid_queue_unregister_buffers(b.q), -EBUSY);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
	cr_assert_eq(c.result, 4096);
	cr_assert_eq(graid_queue_unregister_buffers(b.q), 0);
	cr_assert_eq(graid_queue_read(b.q, b.mem, 4096, 0, 1), 0);
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 2), -EBUSY);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
	/* Registered again, and left for graid_queue_destroy() to undo. */
	cr_assert_eq(graid_queue_register_buffers(b.q, iov, 2), 0);
	qf_teardown(&b);
}
