/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_register_buffers(): memory the caller keeps for many requests, registered
 * with the queue's ring as fixed buffers. Member I/O straight into or out of it
 * (queue_io -> member_prep_io) then names the buffer by index and the kernel skips pinning
 * the pages on every I/O. The ranges are kept sorted by address for queue_fixed_index().
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include "io/queue.h"
#include "io/queue_fixed.h"

static int queue_fixed_cmp(const void *x, const void *y)
{
	const struct queue_fixed *a = x, *b = y;

	return a->base < b->base ? -1 : a->base > b->base;
}

/*
 * Whether this kernel takes IORING_URING_CMD_FIXED: 6.1 and later. Before, a passthrough
 * command with any flag set is refused (-EINVAL), which would fail the member.
 */
static bool queue_fixed_cmd_ok(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 1);
}

/* The ranges of @p iov, sorted by address, into @p f; how many, or -EINVAL. */
static int queue_fixed_ranges(const struct iovec *iov, unsigned n, struct queue_fixed *f,
			      struct queue_slot *slots)
{
	unsigned nf = 0;

	for (unsigned i = 0; i < n; i++) {
		uintptr_t base = (uintptr_t)iov[i].iov_base;

		if (!iov[i].iov_base && iov[i].iov_len == 0)
			continue; /* an empty slot, for a kernel's buffer */
		if (!iov[i].iov_base || iov[i].iov_len == 0 ||
		    iov[i].iov_len > GRAID_QUEUE_MAX_BUFFER_BYTES || base + iov[i].iov_len < base)
			return -EINVAL;
		f[nf++] = (struct queue_fixed){ .base = base, .end = base + iov[i].iov_len,
						.index = i };
		slots[i] = (struct queue_slot){ .base = base, .len = iov[i].iov_len, .user = true };
	}
	qsort(f, nf, sizeof(*f), queue_fixed_cmp);
	for (unsigned i = 1; i < nf; i++)
		if (f[i].base < f[i - 1].end)
			return -EINVAL;
	return (int)nf;
}

GRAID_API int graid_queue_register_buffers(struct graid_queue *q, const struct iovec *iov,
					   unsigned n)
{
	struct queue_fixed *f;
	struct queue_slot *slots;
	int rc, nf;

	if (!q || !iov || n == 0 || n > GRAID_QUEUE_MAX_BUFFERS)
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST; /* a single-issuer ring takes registrations from its owner only */
	if (q->nslots || q->nreq)
		return -EBUSY;
	f = calloc(n, sizeof(*f));
	slots = calloc(n, sizeof(*slots));
	if (!f || !slots) {
		free(f);
		free(slots);
		return -ENOMEM;
	}
	nf = queue_fixed_ranges(iov, n, f, slots);
	if (nf < 0) {
		free(f);
		free(slots);
		return nf;
	}
	rc = io_uring_register_buffers(&q->ring, iov, n);
	if (rc < 0) {
		graid__log(GRAID_LOG_INFO, "queue: registering %u buffer(s): %s", n,
			   graid_strerror(rc));
		free(f);
		free(slots);
		return rc;
	}
	q->fixed = f;
	q->nfixed = (unsigned)nf;
	q->slots = slots;
	q->nslots = n;
	q->fixed_cmd = queue_fixed_cmd_ok();
	return 0;
}

/*
 * Whether a read into a kernel's buffer can be served as member reads straight into it,
 * for every stripe it could touch: what the library would otherwise do needs the data in
 * its hands (bounce buffers under an I/O timeout, I/O done in place for members in
 * memory, passthrough members on a kernel that cannot name the buffer).
 */
static bool queue_kslot_servable(const struct graid_queue *q)
{
	static atomic_bool told;

	/* Checksums are checked on the bytes read: pages out of this process's sight are not. */
	if (q->a->csum) {
		if (!atomic_exchange(&told, true))
			graid__log(GRAID_LOG_INFO, "reads into a kernel's pages are refused (-EXDEV) "
						   "on an array with checksums: the data must be "
						   "read into memory the library can check");
		return false;
	}
	if (!QUEUE_KSLOT_BIAS || q->inline_any ||
	    atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed))
		return false;
	for (unsigned m = 0; m < q->a->nmembers; m++)
		if (q->a->members[m].dev.nvme.passthru && !q->fixed_cmd)
			return false;
	return true;
}

int queue_fixed_target(const struct graid_queue *q, unsigned buf_index, size_t buf_offset,
		       size_t len, uint8_t **buf, int *kslot)
{
	const struct queue_slot *slot;

	if (buf_index >= q->nslots)
		return -EINVAL;
	slot = &q->slots[buf_index];
	if (slot->user) {
		/* The caller's memory: an ordinary read into it (which then uses the slot). */
		if (buf_offset > slot->len || len > slot->len - buf_offset)
			return -EINVAL;
		*buf = (uint8_t *)(slot->base + buf_offset);
		*kslot = -1;
		return 0;
	}
	if (buf_offset > GRAID_QUEUE_MAX_BUFFER_BYTES || len > GRAID_QUEUE_MAX_BUFFER_BYTES)
		return -EINVAL;
	if (!queue_kslot_servable(q))
		return -EXDEV;
	*buf = (uint8_t *)(QUEUE_KSLOT_BIAS + buf_offset);
	*kslot = (int)buf_index;
	return 0;
}

GRAID_API int graid_queue_unregister_buffers(struct graid_queue *q)
{
	int rc;

	if (!q || !q->nslots)
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	/*
	 * Nor while I/O given up on after the timeout may still use them: kernels that quiesce
	 * the ring to unregister would wait for it here, as long as the member hangs.
	 */
	if (q->nreq || q->nlate || q->nops)
		return -EBUSY;
	rc = io_uring_unregister_buffers(&q->ring);
	if (rc < 0)
		return rc;
	queue_fixed_free(q);
	return 0;
}

void queue_fixed_free(struct graid_queue *q)
{
	free(q->fixed);
	free(q->slots);
	q->fixed = NULL;
	q->slots = NULL;
	q->nfixed = q->nslots = 0;
}
