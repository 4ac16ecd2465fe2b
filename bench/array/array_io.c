/* SPDX-License-Identifier: MIT */
/* The array as a load target (graid_queue_*), and a plain queue for prefill and verification. */
#include <errno.h>
#include <stdlib.h>

#include "ab.h"

uint32_t ab_array_queue_flags;

struct aio_q {
	struct graid_queue *q;
	struct graid_completion *c;
	unsigned cap;
};

static int aio_open(void *target, unsigned depth, void **out)
{
	struct aio_q *aq = calloc(1, sizeof(*aq));
	int rc;

	if (!aq)
		return -ENOMEM;
	aq->cap = depth;
	aq->c = calloc(depth, sizeof(*aq->c));
	rc = aq->c ? graid_queue_create_flags(target, depth, ab_array_queue_flags, &aq->q)
		   : -ENOMEM;
	if (rc) {
		free(aq->c);
		free(aq);
		return rc;
	}
	*out = aq;
	return 0;
}

static int aio_prep(void *q, bool write, void *buf, uint32_t len, uint64_t off, uint64_t ud)
{
	struct aio_q *aq = q;

	return write ? graid_queue_write(aq->q, buf, len, off, ud)
		     : graid_queue_read(aq->q, buf, len, off, ud);
}

static int aio_submit(void *q)
{
	int rc = graid_queue_submit(((struct aio_q *)q)->q);

	return rc < 0 ? rc : 0;
}

static int aio_reap(void *q, struct ab_completion *c, unsigned max)
{
	struct aio_q *aq = q;
	int n = graid_queue_reap(aq->q, aq->c, max < aq->cap ? max : aq->cap, 1);

	for (int i = 0; i < n; i++)
		c[i] = (struct ab_completion){ .user_data = aq->c[i].user_data,
					       .result = aq->c[i].result };
	return n;
}

static void aio_close(void *q)
{
	struct aio_q *aq = q;

	graid_queue_destroy(aq->q);
	free(aq->c);
	free(aq);
}

const struct ab_target_ops ab_array_ops = {
	.name = "array",
	.queue_open = aio_open,
	.prep = aio_prep,
	.submit = aio_submit,
	.reap = aio_reap,
	.queue_close = aio_close,
};

int ab_aq_open(struct ab_aq *aq, struct graid_array *a, unsigned depth)
{
	*aq = (struct ab_aq){ .depth = depth };
	return graid_queue_create(a, depth, &aq->q);
}

static int aq_reap(struct ab_aq *aq, unsigned min)
{
	struct graid_completion c[64];
	int n = graid_queue_reap(aq->q, c, 64, min);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (c[i].result < 0 && !aq->err) {
			aq->err = (int)c[i].result;
			aq->err_off = c[i].user_data;
		}
	return n;
}

int ab_aq_add(struct ab_aq *aq, bool write, void *buf, uint32_t len, uint64_t off)
{
	int rc;

	for (;;) {
		rc = write ? graid_queue_write(aq->q, buf, len, off, off)
			   : graid_queue_read(aq->q, buf, len, off, off);
		if (rc != -EAGAIN)
			break;
		rc = graid_queue_submit(aq->q);
		if (rc >= 0)
			rc = aq_reap(aq, 1);
		if (rc <= 0)
			return rc < 0 ? rc : -EIO; /* a full queue that completes nothing */
	}
	return rc;
}

int ab_aq_drain(struct ab_aq *aq)
{
	int left = graid_queue_submit(aq->q);

	while (left > 0) {
		int n = aq_reap(aq, (unsigned)left);

		if (n <= 0)
			return n < 0 ? n : -EIO; /* nothing could complete: the queue lost requests */
		left -= n;
	}
	return left < 0 ? left : aq->err;
}

void ab_aq_close(struct ab_aq *aq)
{
	graid_queue_destroy(aq->q);
	aq->q = NULL;
}

int ab_array_stream(struct graid_array *a, bool write, uint8_t *buf, uint64_t off, uint64_t len,
		    uint32_t req, bool repeat)
{
	struct ab_aq aq;
	int rc = ab_aq_open(&aq, a, 16);

	for (uint64_t at = 0; rc == 0 && at < len; at += req) {
		uint32_t n = len - at < req ? (uint32_t)(len - at) : req;

		rc = ab_aq_add(&aq, write, repeat ? buf : buf + at, n, off + at);
		/* Submit as we go so member I/O overlaps with queuing the rest. */
		if (rc == 0 && (at / req) % 8 == 7) {
			int s = graid_queue_submit(aq.q);

			rc = s < 0 ? s : 0;
		}
	}
	if (aq.q) {
		int drc = ab_aq_drain(&aq);

		if (rc == 0)
			rc = drc;
		if (rc && aq.err)
			fprintf(stderr, "array_bench: %s at array offset %llu: %s\n",
				write ? "write" : "read", (unsigned long long)aq.err_off,
				graid_strerror(aq.err));
		ab_aq_close(&aq);
	}
	return rc;
}
