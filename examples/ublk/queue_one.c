/* SPDX-License-Identifier: MIT */
/*
 * One ring: the ublk commands go through the graid queue's own ring (graid_queue_sqe), so
 * one graid_queue_reap() waits for new requests and finished ones at once: one system call
 * a turn, and no request waits behind another's member I/O (queue.c's two rings do).
 *
 * With zero copy (UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_AUTO_BUF_REG | UBLK_F_USER_COPY, Linux
 * 6.16+; docs/UBLK-ZERO-COPY.md) the driver registers each new request's pages in that
 * ring's buffer table, at the slot its tag names, and member reads land in them
 * (graid_queue_read_fixed): the copy into the client's pages that the driver made on
 * every read is gone. What cannot be read that way (a degraded stripe, a read that failed
 * part-way: -EXDEV) is read into the tag's buffer and copied out with pwrite() on
 * /dev/ublkcN. A write's data is copied in with pread() on /dev/ublkcN first: parity
 * needs it in memory, so the copy the driver made before is made here. /dev/ublkcN takes
 * no non-blocking reads, so through io_uring that read would go to a worker thread.
 *
 * Without zero copy the commands carry the tag buffers' addresses and the driver copies,
 * as on queue.c's ring.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

int uone_setup(struct uq *q)
{
	unsigned empty = q->s->zero_copy ? q->s->depth : 0;
	int rc;

	q->unsent = calloc(q->s->depth, sizeof(*q->unsent));
	if (!q->unsent)
		return -ENOMEM;
	rc = uq_register_bufs(q, empty, q->s->fixed_buffers);
	/* The tag buffers could not be pinned (RLIMIT_MEMLOCK?): zero copy needs the slots. */
	if (rc && empty && q->s->fixed_buffers)
		rc = uq_register_bufs(q, empty, false);
	return empty ? rc : 0;
}

/*
 * A command for @p tag through the graid queue: FETCH_REQ, or COMMIT_AND_FETCH_REQ with
 * @p result. The SQE's own addr (not the command's, which user copy wants 0) names the
 * slot where the driver registers the next request's pages: the tag's. FALLBACK: if that
 * fails, the request comes anyway, marked NEED_REG_BUF.
 */
static int uone_cmd(struct uq *q, unsigned op, unsigned tag, int result)
{
	struct ublksrv_io_cmd cmd = {
		.q_id = (uint16_t)q->q_id,
		.tag = (uint16_t)tag,
		.result = result,
		/* Without zero copy: where the driver copies a write's data to, a read's from. */
		.addr = q->s->zero_copy ? 0 : (uint64_t)(uintptr_t)uq_buf(q, tag),
	};
	struct io_uring_sqe sqe[2]; /* usrv_prep_cmd clears two: the SQE128 form */

	usrv_prep_cmd(sqe, q->s->cdev_fd, op, &cmd, sizeof(cmd), 0);
	if (q->s->zero_copy)
		sqe[0].addr = gu_auto_buf_reg(tag, UBLK_AUTO_BUF_REG_FALLBACK);
	return graid_queue_sqe(q->gq, sqe, UQ_ONE_OP | tag);
}

static int uone_poll(struct uq *q, int fd, uint64_t user_data)
{
	struct io_uring_sqe sqe;

	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_poll_add(&sqe, fd, POLLIN);
	return graid_queue_sqe(q->gq, &sqe, user_data);
}

int uone_start(struct uq *q)
{
	struct graid_completion *c = q->done;
	int rc = 0, n;

	for (unsigned tag = 0; rc == 0 && tag < q->s->depth; tag++)
		rc = uone_cmd(q, q->s->op_fetch, tag, -1);
	if (rc == 0)
		rc = uone_poll(q, q->s->stop_fd, UQ_ONE_STOP);
	if (rc == 0 && q->s->park_foreign)
		rc = uone_poll(q, q->s->release_fd, UQ_ONE_RELEASE);
	if (rc == 0)
		rc = graid_queue_submit(q->gq);
	if (rc < 0) {
		fprintf(stderr, "graid-ublk: queue %u: sending FETCH_REQ: %s\n", q->q_id,
			graid_strerror(rc));
		return rc;
	}
	/* A FETCH_REQ the driver refuses completes at once (none comes before START_DEV). */
	n = graid_queue_reap(q->gq, c, q->ndone, 0);
	for (int i = 0; i < n; i++) {
		if (c[i].user_data == UQ_ONE_STOP) {
			q->stop = true;
		} else if (c[i].result < 0) {
			fprintf(stderr, "graid-ublk: queue %u: %s refused: %s\n", q->q_id,
				c[i].user_data == UQ_ONE_RELEASE ? "the release poll" : "FETCH_REQ",
				graid_strerror((int)c[i].result));
			return (int)c[i].result;
		}
		/* The release poll cannot fire before the device serves: the hook runs then. */
	}
	return 0;
}

/* Read @p tag's request into the tag's buffer, to be copied out when it is done. */
static int uone_read_copy(struct uq *q, unsigned tag)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];

	return graid_queue_read(q->gq, uq_buf(q, tag), (size_t)iod->nr_sectors << 9,
				iod->start_sector << 9, tag | UQ_ONE_COPY);
}

int uone_serve(struct uq *q, unsigned tag, bool write, uint64_t offset, size_t len)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	uint8_t *buf = uq_buf(q, tag);
	ssize_t n;
	int rc;

	if (!q->s->zero_copy) /* the driver copies: as queue.c */
		return write ? graid_queue_write(q->gq, buf, len, offset, tag)
			     : graid_queue_read(q->gq, buf, len, offset, tag);
	if (!write) {
		/* Straight into the request's pages, where the driver registered them. */
		if (!(iod->op_flags & UBLK_IO_F_NEED_REG_BUF)) {
			rc = graid_queue_read_fixed(q->gq, tag, 0, len, offset, tag);
			if (rc != -EXDEV)
				return rc;
		}
		return uone_read_copy(q, tag);
	}
	n = pread(q->s->cdev_fd, buf, len, (off_t)gu_user_copy_pos(q->q_id, tag));
	if (n != (ssize_t)len) {
		fprintf(stderr, "graid-ublk: queue %u tag %u: copying the write's data in: %s\n",
			q->q_id, tag, n < 0 ? graid_strerror(-errno) : "short");
		return -EIO;
	}
	return graid_queue_write(q->gq, buf, len, offset, tag);
}

/*
 * A commit the ring did not take (full, the kernel refusing for a while) is kept and sent
 * again every turn: a request left unanswered would hold STOP_DEV forever.
 */
void uone_commit(struct uq *q, unsigned tag, int result)
{
	int rc = uone_cmd(q, q->s->op_commit, tag, result);

	if (rc == 0)
		return;
	if (q->nunsent == 0)
		fprintf(stderr, "graid-ublk: queue %u: committing tag %u: %s; trying again\n",
			q->q_id, tag, graid_strerror(rc));
	q->unsent[q->nunsent++] = (struct uq_unsent){ .tag = tag, .result = result };
}

static void uone_retry_commits(struct uq *q)
{
	unsigned n = q->nunsent, kept = 0;

	for (unsigned i = 0; i < n; i++)
		if (uone_cmd(q, q->s->op_commit, q->unsent[i].tag, q->unsent[i].result))
			q->unsent[kept++] = q->unsent[i];
	q->nunsent = kept;
}

/* A graid request finished: its answer, after the copy out where there is one. */
static void uone_finished(struct uq *q, const struct graid_completion *c)
{
	unsigned tag = (unsigned)(c->user_data & UQ_TAG_MASK);
	int64_t res = c->result;

	q->inflight--;
	if (c->user_data & UQ_ONE_COPY)
		q->copied_reads++;
	else if (q->s->zero_copy && res != -EXDEV &&
		 ublksrv_get_op(&q->iods[tag]) == UBLK_IO_OP_READ)
		q->zc_reads++;
	if ((c->user_data & UQ_ONE_COPY) && res > 0) {
		/* Read into the tag's buffer: out to the request's pages. */
		ssize_t n = pwrite(q->s->cdev_fd, uq_buf(q, tag), (size_t)res,
				   (off_t)gu_user_copy_pos(q->q_id, tag));

		if (n != res) {
			fprintf(stderr, "graid-ublk: queue %u tag %u: copying the read out: %s\n",
				q->q_id, tag, n < 0 ? graid_strerror(-errno) : "short");
			res = -EIO;
		}
	} else if (res == -EXDEV && ublksrv_get_op(&q->iods[tag]) == UBLK_IO_OP_READ) {
		/* Not readable straight into the pages: the library reads it into ours. */
		int rc = uone_read_copy(q, tag);

		if (rc == 0) {
			q->inflight++;
			return;
		}
		/* The array quiesced meanwhile: served again from the start (queue.c uq_serve). */
		if (rc == -EAGAIN) {
			q->deferred[q->ndeferred++] = tag;
			return;
		}
		res = rc;
	}
	uq_commit(q, tag, res > INT_MAX ? INT_MAX : (int)res);
}

int uone_loop(struct uq *q)
{
	for (;;) {
		bool release = false;
		int n;

		if (q->nunsent)
			uone_retry_commits(q);
		/* Requests the array said "not now" to (queue.c uq_serve): sent by the reap. */
		if (q->ndeferred)
			uq_retry_deferred(q);
		if (q->inflight == 0 && !q->nunsent && !q->ndeferred && (q->stop || uq_ended(q))) {
			graid_queue_submit(q->gq); /* the answers to held requests, released now */
			if (q->s->zero_copy)
				fprintf(stderr, "graid-ublk: queue %u: %" PRIu64 " reads straight "
						"into the client's pages, %" PRIu64 " copied out\n",
					q->q_id, q->zc_reads, q->copied_reads);
			return q->stop || atomic_load(&q->s->stopping) ? 0 : -ENODEV;
		}
		/*
		 * Sends what the last turn queued (commits, member I/O), then waits; with a
		 * commit still to send, only looks (and comes back in a millisecond).
		 */
		if (q->nunsent || q->ndeferred)
			usleep(1000);
		n = graid_queue_reap(q->gq, q->done, q->ndone, q->nunsent || q->ndeferred ? 0 : 1);
		if (n == -EAGAIN || n == -EBUSY || n == -EINTR || n == -ENOMEM)
			continue;
		if (n < 0) {
			fprintf(stderr, "graid-ublk: queue %u: graid_queue_reap: %s\n", q->q_id,
				graid_strerror(n));
			return n;
		}
		for (int i = 0; i < n; i++) {
			const struct graid_completion *c = &q->done[i];

			if (c->user_data == UQ_ONE_STOP)
				q->stop = true;
			else if (c->user_data == UQ_ONE_RELEASE)
				release = true;
			else if (c->user_data & UQ_ONE_OP)
				uq_on_request(q, (unsigned)(c->user_data & UQ_TAG_MASK),
					      (int)c->result);
			else
				uone_finished(q, c);
		}
		if (release || (q->stop && q->nheld))
			uq_release_held(q);
	}
}
