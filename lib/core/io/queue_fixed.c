/* SPDX-License-Identifier: MIT */
/*
 * graid_queue_register_buffers(): memory the caller keeps for many requests, registered
 * with the queue's ring as fixed buffers. Member I/O straight into or out of it
 * (queue_io -> member_prep_io) then names the buffer by index and the kernel skips pinning
 * the pages on every I/O. The ranges are kept sorted by address for queue_fixed_index().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include "io/queue.h"

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

GRAID_API int graid_queue_register_buffers(struct graid_queue *q, const struct iovec *iov,
					   unsigned n)
{
	struct queue_fixed *f;
	int rc;

	if (!q || !iov || n == 0 || n > GRAID_QUEUE_MAX_BUFFERS)
		return -EINVAL;
	if (q->nfixed || q->nreq)
		return -EBUSY;
	f = calloc(n, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		uintptr_t base = (uintptr_t)iov[i].iov_base;

		if (!iov[i].iov_base || iov[i].iov_len == 0 ||
		    iov[i].iov_len > GRAID_QUEUE_MAX_BUFFER_BYTES ||
		    base + iov[i].iov_len < base) {
			free(f);
			return -EINVAL;
		}
		f[i] = (struct queue_fixed){ .base = base, .end = base + iov[i].iov_len,
					     .index = i };
	}
	qsort(f, n, sizeof(*f), queue_fixed_cmp);
	for (unsigned i = 1; i < n; i++) {
		if (f[i].base < f[i - 1].end) {
			free(f);
			return -EINVAL;
		}
	}
	rc = io_uring_register_buffers(&q->ring, iov, n);
	if (rc < 0) {
		graid__log(GRAID_LOG_INFO, "queue: registering %u buffer(s): %s", n,
			   graid_strerror(rc));
		free(f);
		return rc;
	}
	q->fixed = f;
	q->nfixed = n;
	q->fixed_cmd = queue_fixed_cmd_ok();
	return 0;
}

GRAID_API int graid_queue_unregister_buffers(struct graid_queue *q)
{
	int rc;

	if (!q || !q->nfixed)
		return -EINVAL;
	/*
	 * Nor while I/O given up on after the timeout may still use them: kernels that quiesce
	 * the ring to unregister would wait for it here, as long as the member hangs.
	 */
	if (q->nreq || q->nlate)
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
	q->fixed = NULL;
	q->nfixed = 0;
}
