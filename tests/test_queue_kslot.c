/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_read_fixed() into a slot the caller left empty for a kernel's pages (a ublk
 * request's, in graid-ublk): member reads straight into the slot, and the library never
 * touches the data. A host has no driver to fill such a slot, so the test fills it the
 * way the kernel would (io_uring_register_buffers_update_tag on the queue's ring, which
 * this internal suite can reach) with memory it then makes PROT_NONE: a read by the
 * kernel through the pinned pages lands, any CPU access by the library would crash the
 * test. And what cannot be served that way ends -EXDEV with the data untouched and no
 * member failed for the buffer's doing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <criterion/criterion.h>
#include <liburing.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "format/bbl_format.h"
#include "io/queue.h"
#include "io/queue_fixed.h"
#include "jobs/reshape_grow.h"
#include "meta/badblocks.h"
#include "testutil.h"

#if GRAID_FAULT_INJECTION
extern atomic_bool graid__test_grow56_hold;
#else
static atomic_bool graid__test_grow56_hold; /* no seam: the test skips first */
#endif

#define KS_CHUNK (64u * 1024)
#define KS_MEMBER_BYTES (8u << 20)
#define KS_SPAN (256u * 1024)

struct ks_bed {
	struct au_set s;
	const char *paths[AU_MAX];
	char spec[400];
	struct graid_array *a;
	struct graid_queue *q;
	uint8_t *kmem;   /* KS_SPAN: the "kernel's" pages of slot 0 */
	uint8_t *want;   /* what the array holds at offset 0 */
};

static void ks_pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 11));
}

/* GRAID_CREATE_* flags of the arrays ks_setup() makes (a test sets them first). */
static unsigned ks_create_flags;

/* An array of @p level written with a pattern, reopened with member @p faulty given
 * @p opts (NULL: none), and a queue with slot 0 empty and slot 1 the caller's memory. */
static void ks_setup(struct ks_bed *b, int level, unsigned n, int faulty, const char *opts)
{
	struct iovec iov[2];
	struct graid_array *a;
	int rc;

	memset(b, 0, sizeof(*b));
	if (opts)
		tu_need_fault_injection();
	au_make(&b->s, n, KS_MEMBER_BYTES);
	if (ks_create_flags) {
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
						  .chunk_bytes = KS_CHUNK, .backend = "isal",
						  .flags = ks_create_flags };

		cr_assert_eq(graid_array_create(b->s.paths, n, &cfg, &a), 0);
	} else {
		cr_assert_eq(au_create(&b->s, n, level, KS_CHUNK, &a), 0);
	}
	b->want = malloc(KS_SPAN);
	ks_pattern(b->want, KS_SPAN, (unsigned)level);
	cr_assert_eq(graid_array_write(a, b->want, KS_SPAN, 0), (ssize_t)KS_SPAN);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(b->paths, b->s.paths, sizeof(b->paths));
	if (opts) {
		snprintf(b->spec, sizeof(b->spec), "faulty:%s:%s", opts, b->s.path[faulty]);
		b->paths[faulty] = b->spec;
	}
	cr_assert_eq(graid_array_open(b->paths, n, NULL, &b->a), 0);
	cr_assert_eq(graid_queue_create(b->a, 16, &b->q), 0);
	b->kmem = mmap(NULL, 2 * KS_SPAN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	cr_assert_neq(b->kmem, MAP_FAILED);
	iov[0] = (struct iovec){ 0 };
	iov[1] = (struct iovec){ .iov_base = b->kmem + KS_SPAN, .iov_len = KS_SPAN };
	rc = graid_queue_register_buffers(b->q, iov, 2);
	if (rc == -ENOMEM || rc == -EPERM)
		cr_skip_test("the kernel would not pin the memory here (%s): RLIMIT_MEMLOCK?",
			     graid_strerror(rc));
	cr_assert_eq(rc, 0, "register with an empty slot: %d", rc);
}

/* Slot 0 filled as a driver would: pages the process then cannot touch. */
static void ks_fill_slot(struct ks_bed *b)
{
	struct iovec iov = { .iov_base = b->kmem, .iov_len = KS_SPAN };
	__u64 tag = 0;

	memset(b->kmem, 0xee, KS_SPAN);
	cr_assert_eq(io_uring_register_buffers_update_tag(&b->q->ring, 0, &iov, &tag, 1), 1);
	/* A kernel's slot counts offsets from 0; this one from its address. */
	b->q->slots[0].base = (uintptr_t)b->kmem;
	cr_assert_eq(mprotect(b->kmem, KS_SPAN, PROT_NONE), 0);
}

static void ks_teardown(struct ks_bed *b)
{
	cr_assert_eq(graid_queue_destroy(b->q), 0);
	cr_assert_eq(graid_array_close(b->a), 0);
	munmap(b->kmem, 2 * KS_SPAN);
	free(b->want);
	au_remove(&b->s);
}

/* One read_fixed, waited for: its completion's result. */
static int64_t ks_read(struct ks_bed *b, unsigned slot, size_t buf_off, size_t len,
		       uint64_t off)
{
	struct graid_completion c;
	int rc = graid_queue_read_fixed(b->q, slot, buf_off, len, off, 42);

	cr_assert_eq(rc, 0, "graid_queue_read_fixed: %d", rc);
	cr_assert_geq(graid_queue_submit(b->q), 0);
	cr_assert_eq(graid_queue_reap(b->q, &c, 1, 1), 1);
	cr_assert_eq(c.user_data, 42);
	return c.result;
}

static void ks_see(struct ks_bed *b)
{
	cr_assert_eq(mprotect(b->kmem, KS_SPAN, PROT_READ | PROT_WRITE), 0);
}

static unsigned ks_failed(struct graid_array *a, unsigned n)
{
	unsigned failed = 0;

	for (unsigned i = 0; i < n; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, i, &mi), 0);
		failed += mi.state == GRAID_MEMBER_FAILED;
	}
	return failed;
}

static void ks_round_trip(int level, unsigned n)
{
	struct ks_bed b;

	ks_setup(&b, level, n, -1, NULL);
	ks_fill_slot(&b);
	/* The whole span, then a piece at an offset in the slot and in the array. */
	cr_assert_eq(ks_read(&b, 0, 0, KS_SPAN, 0), KS_SPAN, "RAID-%d", level);
	ks_see(&b);
	cr_assert_eq(memcmp(b.kmem, b.want, KS_SPAN), 0, "RAID-%d: data differ", level);
	memset(b.kmem, 0xee, KS_SPAN);
	cr_assert_eq(mprotect(b.kmem, KS_SPAN, PROT_NONE), 0);
	cr_assert_eq(ks_read(&b, 0, 8192, 3 * 4096, KS_CHUNK - 4096), 3 * 4096);
	ks_see(&b);
	cr_assert_eq(memcmp(b.kmem + 8192, b.want + KS_CHUNK - 4096, 3 * 4096), 0);
	cr_assert_eq(b.kmem[8191], 0xee, "written before the offset");
	cr_assert_eq(b.kmem[8192 + 3 * 4096], 0xee, "written past the end");
	/* The caller's own slot: an ordinary read into it. */
	cr_assert_eq(ks_read(&b, 1, 4096, 8192, 4096), 8192);
	cr_assert_eq(memcmp(b.kmem + KS_SPAN + 4096, b.want + 4096, 8192), 0);
	cr_assert_eq(ks_failed(b.a, n), 0);
	ks_teardown(&b);
}

Test(queue_kslot, raid0_reads_straight_into_the_slot) { ks_round_trip(0, 3); }
Test(queue_kslot, raid1_reads_straight_into_the_slot) { ks_round_trip(1, 2); }
Test(queue_kslot, raid5_reads_straight_into_the_slot) { ks_round_trip(5, 4); }
Test(queue_kslot, raid6_reads_straight_into_the_slot) { ks_round_trip(6, 5); }
Test(queue_kslot, raid10_reads_straight_into_the_slot) { ks_round_trip(10, 4); }

/* A failed data member: nothing is recovered into the pages (they stay PROT_NONE), -EXDEV. */
Test(queue_kslot, a_degraded_stripe_ends_exdev)
{
	struct ks_bed b;

	ks_setup(&b, 5, 4, -1, NULL);
	ks_fill_slot(&b);
	cr_assert_eq(graid_array_fail_member(b.a, 1), 0);
	cr_assert_eq(ks_read(&b, 0, 0, KS_SPAN, 0), -EXDEV);
	ks_see(&b);
	/* And the ordinary read recovers it. */
	cr_assert_eq(graid_queue_read_fixed(b.q, 1, 0, KS_SPAN, 0, 1), 0);
	{
		struct graid_completion c;

		cr_assert_geq(graid_queue_submit(b.q), 0);
		cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
		cr_assert_eq(c.result, KS_SPAN);
	}
	cr_assert_eq(memcmp(b.kmem + KS_SPAN, b.want, KS_SPAN), 0);
	ks_teardown(&b);
}

/*
 * A member read failing part-way: -EXDEV, and the member handled as ever (a read error on
 * a member otherwise fine is a media error: it stays in); the ordinary read then gets the
 * data from parity.
 */
Test(queue_kslot, a_member_failing_mid_read_ends_exdev)
{
	struct graid_completion c;
	struct ks_bed b;

	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	ks_setup(&b, 6, 5, 2, "read-eio-after=0");
	ks_fill_slot(&b);
	cr_assert_eq(ks_read(&b, 0, 0, KS_SPAN, 0), -EXDEV);
	cr_assert_eq(ks_failed(b.a, 5), 0, "a media error took the member out");
	/* Held against nobody: the read through own memory meets it and counts it, once. */
	cr_assert_eq(graid_array_member_info(b.a, 2, &mi), 0);
	cr_assert_eq(mi.errors, 0, "counted by the read into the kernel's pages: %llu",
		     (unsigned long long)mi.errors);
	ks_see(&b);
	cr_assert_eq(graid_queue_read_fixed(b.q, 1, 0, KS_SPAN, 0, 1), 0);
	cr_assert_geq(graid_queue_submit(b.q), 0);
	cr_assert_eq(graid_queue_reap(b.q, &c, 1, 1), 1);
	cr_assert_eq(c.result, KS_SPAN);
	cr_assert_eq(memcmp(b.kmem + KS_SPAN, b.want, KS_SPAN), 0);
	ks_teardown(&b);
}

/* A mirror with a copy out reads the other copy, straight into the pages. */
static void ks_mirror_degraded(int level, unsigned n)
{
	struct ks_bed b;

	ks_setup(&b, level, n, -1, NULL);
	ks_fill_slot(&b);
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	cr_assert_eq(ks_read(&b, 0, 0, KS_SPAN, 0), KS_SPAN, "RAID-%d", level);
	ks_see(&b);
	cr_assert_eq(memcmp(b.kmem, b.want, KS_SPAN), 0);
	ks_teardown(&b);
}

Test(queue_kslot, raid1_with_a_copy_out_reads_the_other) { ks_mirror_degraded(1, 2); }
Test(queue_kslot, raid10_with_a_copy_out_reads_the_other) { ks_mirror_degraded(10, 4); }

/* A slot nothing filled: the kernel refuses the reads; the buffer's doing, no member out. */
Test(queue_kslot, an_empty_slot_fails_no_member)
{
	struct ks_bed b;

	ks_setup(&b, 5, 4, -1, NULL);
	cr_assert_eq(ks_read(&b, 0, 0, KS_SPAN, 0), -EXDEV);
	cr_assert_eq(ks_failed(b.a, 4), 0, "a member was failed for an empty slot");
	ks_teardown(&b);
}

/* Under an I/O timeout reads go through the library's memory: refused before anything. */
Test(queue_kslot, an_io_timeout_is_refused_up_front)
{
	struct ks_bed b;

	ks_setup(&b, 5, 4, -1, NULL);
	ks_fill_slot(&b);
	cr_assert_eq(graid_array_set_io_timeout(b.a, 5000), 0);
	cr_assert_eq(graid_queue_read_fixed(b.q, 0, 0, KS_SPAN, 0, 1), -EXDEV);
	cr_assert_eq(graid_queue_reap(b.q, NULL, 0, 0), 0, "a completion followed");
	ks_see(&b);
	ks_teardown(&b);
}

Test(queue_kslot, bad_arguments_are_refused)
{
	struct ks_bed b;

	ks_setup(&b, 5, 4, -1, NULL);
	cr_assert_eq(graid_queue_read_fixed(NULL, 0, 0, 4096, 0, 1), -EINVAL);
	cr_assert_eq(graid_queue_read_fixed(b.q, 2, 0, 4096, 0, 1), -EINVAL, "no slot 2");
	cr_assert_eq(graid_queue_read_fixed(b.q, 1, KS_SPAN - 4096, 8192, 0, 1), -EINVAL,
		     "past the end of the caller's range");
	cr_assert_eq(graid_queue_read_fixed(b.q, 0, 0, 1000, 0, 1), -EINVAL, "misaligned");
	ks_teardown(&b);
	/* No slots at all. */
	{
		struct ks_bed c;
		struct graid_queue *q;

		au_make(&c.s, 4, KS_MEMBER_BYTES);
		cr_assert_eq(au_create(&c.s, 4, 5, KS_CHUNK, &c.a), 0);
		cr_assert_eq(graid_queue_create(c.a, 4, &q), 0);
		cr_assert_eq(graid_queue_read_fixed(q, 0, 0, 4096, 0, 1), -EINVAL);
		cr_assert_eq(graid_queue_destroy(q), 0);
		cr_assert_eq(graid_array_close(c.a), 0);
		au_remove(&c.s);
	}
}

/*
 * Checksums are checked on the bytes read, which pages out of the process's sight do not
 * allow: every read into a kernel's slot is refused up front (the caller reads into its
 * own memory), and such a read is checked there.
 */
Test(queue_kslot, a_checksummed_array_refuses_exdev)
{
	struct ks_bed b;
	uint8_t *own = aligned_alloc(4096, KS_SPAN);

	ks_create_flags = GRAID_CREATE_CHECKSUMS;
	ks_setup(&b, 5, 4, -1, NULL);
	ks_fill_slot(&b);
	cr_assert_eq(graid_queue_read_fixed(b.q, 0, 0, KS_SPAN, 0, 1), -EXDEV);
	cr_assert_eq(graid_array_read(b.a, own, KS_SPAN, 0), (ssize_t)KS_SPAN);
	cr_assert_eq(memcmp(own, b.want, KS_SPAN), 0);
	free(own);
	ks_teardown(&b);
}

/*
 * A RAID-10 growing (the routing set, nothing moved yet: requests take their chunk's lock)
 * whose chunk 0 has a bad block logged on its first copy: a read into a kernel's slot ends
 * -EXDEV, as without a grow, for the caller to read through its own memory (found by
 * review: the locked read went to own memory and ended -EAGAIN, an I/O error to a ublk
 * client for bytes the other copy holds).
 */
Test(queue_kslot, a_raid10_growing_with_a_bad_copy_ends_exdev)
{
	struct ks_bed b;

	tu_need_fault_injection();
	memset(&b, 0, sizeof(b));
	au_make(&b.s, 6, KS_MEMBER_BYTES); /* four in the array, two for the grow */
	cr_assert_eq(au_create(&b.s, 4, 10, KS_CHUNK, &b.a), 0);
	b.want = malloc(KS_SPAN);
	ks_pattern(b.want, KS_SPAN, 10);
	cr_assert_eq(graid_array_write(b.a, b.want, KS_SPAN, 0), (ssize_t)KS_SPAN);
	cr_assert_eq(graid_queue_create(b.a, 16, &b.q), 0);
	b.kmem = mmap(NULL, 2 * KS_SPAN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	cr_assert_neq(b.kmem, MAP_FAILED);
	{
		struct iovec iov[2] = { { 0 },
					{ .iov_base = b.kmem + KS_SPAN, .iov_len = KS_SPAN } };
		int rc = graid_queue_register_buffers(b.q, iov, 2);

		if (rc == -ENOMEM || rc == -EPERM)
			cr_skip_test("the kernel would not pin the memory here (%s)",
				     graid_strerror(rc));
		cr_assert_eq(rc, 0);
	}
	ks_fill_slot(&b);
	cr_assert_eq(badblocks_add(b.a, 0, b.a->members[0].dev.fd, 0, 4096, BBL_F_UNREADABLE), 0);
	atomic_store(&graid__test_grow56_hold, true); /* routing set, nothing moved */
	cr_assert_eq(graid_array_grow(b.a, &b.s.paths[4], 2, 0), 0);
	cr_assert_eq(ks_read(&b, 0, 0, KS_CHUNK, 0), -EXDEV);
	atomic_store(&graid__test_grow56_hold, false);
	cr_assert_eq(reshape_job_wait(b.a), 0);
	ks_see(&b);
	ks_teardown(&b);
}
