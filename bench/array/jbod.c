/* SPDX-License-Identifier: MIT */
/* The JBOD baseline: the same member files without RAID, driven through liburing directly. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <liburing.h>

#include "ab.h"

int ab_jbod_open(struct ab_jbod *j, const char *const *paths, unsigned n, uint64_t data_off,
		 uint64_t data_bytes)
{
	*j = (struct ab_jbod){ .n = n, .data_off = data_off, .data_bytes = data_bytes,
			       .direct = true };
	for (unsigned i = 0; i < n; i++) {
		/* The library's own choice: O_DIRECT where the filesystem takes it, else buffered. */
		int fd = open(paths[i], O_RDWR | O_CLOEXEC | O_DIRECT);

		if (fd < 0 && errno == EINVAL) {
			fd = open(paths[i], O_RDWR | O_CLOEXEC);
			j->direct = false;
		}
		if (fd < 0) {
			int err = -errno;

			perror(paths[i]);
			j->n = i;
			ab_jbod_close(j);
			return err;
		}
		j->fd[i] = fd;
	}
	return 0;
}

void ab_jbod_close(struct ab_jbod *j)
{
	for (unsigned i = 0; i < j->n; i++)
		close(j->fd[i]);
	j->n = 0;
}

uint64_t ab_jbod_size(const struct ab_jbod *j)
{
	return j->data_bytes * j->n;
}

struct jbod_q {
	struct io_uring ring;
	struct ab_jbod *j;
};

static int jbod_open(void *target, unsigned depth, void **out)
{
	struct jbod_q *jq = calloc(1, sizeof(*jq));
	int rc;

	if (!jq)
		return -ENOMEM;
	jq->j = target;
	rc = io_uring_queue_init(depth, &jq->ring, 0);
	if (rc < 0) {
		free(jq);
		return rc;
	}
	*out = jq;
	return 0;
}

/*
 * Logical block b (of the request's size) lives on member b % n at row b / n: a random
 * offset picks a random member and a random place in its data area, and a sequential
 * stream visits the members in turn, each sequentially.
 */
static int jbod_prep(void *q, bool write, void *buf, uint32_t len, uint64_t off, uint64_t ud)
{
	struct jbod_q *jq = q;
	const struct ab_jbod *j = jq->j;
	uint64_t b = off / len;
	unsigned m = (unsigned)(b % j->n);
	uint64_t moff = j->data_off + (b / j->n) * len;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&jq->ring);

	if (!sqe)
		return -EAGAIN;
	if (write)
		io_uring_prep_write(sqe, j->fd[m], buf, len, moff);
	else
		io_uring_prep_read(sqe, j->fd[m], buf, len, moff);
	io_uring_sqe_set_data64(sqe, ud);
	return 0;
}

static int jbod_submit(void *q)
{
	int rc = io_uring_submit(&((struct jbod_q *)q)->ring);

	return rc < 0 ? rc : 0;
}

static int jbod_reap(void *q, struct ab_completion *c, unsigned max)
{
	struct jbod_q *jq = q;
	struct io_uring_cqe *cqe;
	unsigned n = 0;
	int rc = io_uring_wait_cqe(&jq->ring, &cqe);

	if (rc < 0)
		return rc;
	while (n < max && io_uring_peek_cqe(&jq->ring, &cqe) == 0) {
		c[n].user_data = io_uring_cqe_get_data64(cqe);
		c[n].result = cqe->res;
		io_uring_cqe_seen(&jq->ring, cqe);
		n++;
	}
	return (int)n;
}

static void jbod_close(void *q)
{
	struct jbod_q *jq = q;

	io_uring_queue_exit(&jq->ring);
	free(jq);
}

const struct ab_target_ops ab_jbod_ops = {
	.name = "JBOD",
	.queue_open = jbod_open,
	.prep = jbod_prep,
	.submit = jbod_submit,
	.reap = jbod_reap,
	.queue_close = jbod_close,
};
