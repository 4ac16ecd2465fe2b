/* SPDX-License-Identifier: MIT */
/* One ublk hardware queue: a thread that turns the driver's requests into graid_queue I/O. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "queue.h"

/*
 * The loop watches two rings: the ublk ring (new requests, and the commits' answers) and
 * the graid queue's (member I/O), which the public API does not expose. So:
 * - graid idle: sleep on the ublk ring alone; an idle device costs nothing.
 * - graid busy, ublk quiet: sleep in graid_queue_reap(min_complete 1). Member I/O moves
 *   on at full speed (each stage of a request is sent as the previous one finishes), but
 *   a ublk request that arrives meanwhile waits until one graid request has finished:
 *   head-of-line, at most one request's latency. At queue depth 2 this can serialise two
 *   streams; under a deep queue completions come often and it costs little.
 * - otherwise: a non-blocking turn of each. graid_queue_reap(min_complete 0) returns at
 *   once, but in this libgraid it hands back only requests already finished when it last
 *   looked at member I/O (only a blocking reap looks), so it cannot be the only way to
 *   wait: polling alone would never see a request finish.
 * Once graid offers a descriptor to poll (an eventfd on its ring), both rings can be
 * waited on at once from the ublk ring and the head-of-line wait goes away.
 */

static size_t uq_round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/* An SQE; there is always one, as each tag holds at most one command, plus the polls. */
struct io_uring_sqe *uq_get_sqe(struct uq *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
	}
	return sqe;
}

/*
 * A FETCH_REQ or COMMIT_AND_FETCH_REQ for @tag. The buffer address goes with every
 * command: the driver copies a write's data into it before handing us the request, and a
 * read's data out of it when we commit.
 */
static int uq_prep_io(struct uq *q, unsigned op, unsigned tag, int result)
{
	struct io_uring_sqe *sqe = uq_get_sqe(q);
	struct ublksrv_io_cmd cmd = {
		.q_id = (uint16_t)q->q_id,
		.tag = (uint16_t)tag,
		.result = result,
		.addr = (uint64_t)(uintptr_t)uq_buf(q, tag),
	};

	if (!sqe)
		return -EBUSY;
	usrv_prep_cmd(sqe, q->s->cdev_fd, op, &cmd, sizeof(cmd), tag);
	return 0;
}

/* Hand @tag's result back; the same command asks for the tag's next request. */
void uq_commit(struct uq *q, unsigned tag, int result)
{
	/* The array went foreign: held until the hook has taken the export down. */
	if (result == -ESTALE && q->s->park_foreign && !atomic_load(&q->s->released)) {
		q->held[q->nheld++] = tag;
		return;
	}
	if (q->s->one_ring)
		uone_commit(q, tag, result);
	else if (q->s->batch)
		ubat_commit(q, tag, result); /* sent with the others at the next submit */
	else if (uq_prep_io(q, q->s->op_commit, tag, result))
		fprintf(stderr, "graid-ublk: queue %u: no SQE to commit tag %u\n", q->q_id, tag);
}

/* The hook has run (or the server stops): the held requests fail now. */
void uq_release_held(struct uq *q)
{
	unsigned n = q->nheld;

	q->nheld = 0;
	for (unsigned i = 0; i < n; i++)
		uq_commit(q, q->held[i], -EIO); /* -EIO is never held */
}

/*
 * The tag buffers registered with the graid queue (fixed buffers, if @p mine): member I/O
 * in and out of them then pins no pages. In ranges of at most the kernel's 1 GiB, after
 * @p empty slots (zero copy: one per tag, where the driver puts a request's pages).
 * Without (a kernel or RLIMIT_MEMLOCK that refuses): as before, said once.
 */
int uq_register_bufs(struct uq *q, unsigned empty, bool mine)
{
	size_t total = (size_t)q->s->depth * q->s->buf_bytes, per = GRAID_QUEUE_MAX_BUFFER_BYTES;
	struct iovec *iov;
	unsigned n = empty;
	int rc = -EINVAL;

	per -= per % q->s->buf_bytes; /* whole tags in each range */
	iov = per ? calloc(empty + (total + per - 1) / per, sizeof(*iov)) : NULL;
	if (iov) {
		for (size_t at = 0; mine && at < total; at += per, n++)
			iov[n] = (struct iovec){ .iov_base = q->bufs + at,
						 .iov_len = total - at < per ? total - at : per };
		rc = n ? graid_queue_register_buffers(q->gq, iov, n) : 0;
	}
	free(iov);
	if (rc == 0 && mine)
		fprintf(stderr, "graid-ublk: queue %u: request buffers registered with the "
				"array's queue (%zu MiB)\n", q->q_id, total >> 20);
	else if (rc && mine)
		fprintf(stderr, "graid-ublk: queue %u: tag buffers not registered with the array's "
				"queue (%s)%s\n", q->q_id, graid_strerror(rc),
			empty ? "" : ": member I/O pins them each time");
	else if (rc)
		fprintf(stderr, "graid-ublk: queue %u: no buffer slots in the array's queue: %s\n",
			q->q_id, graid_strerror(rc));
	return rc;
}

static int uq_setup(struct uq *q)
{
	struct usrv *s = q->s;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* The driver places queue q's descriptors at q times the size of a full queue's. */
	size_t stride = uq_round_up(UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc), page);
	void *p;
	int rc;

	q->iods_bytes = uq_round_up(s->depth * sizeof(struct ublksrv_io_desc), page);
	p = mmap(NULL, q->iods_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, s->cdev_fd,
		 (off_t)(UBLKSRV_CMD_BUF_OFFSET + q->q_id * stride));
	if (p == MAP_FAILED) {
		rc = -errno;
		fprintf(stderr, "graid-ublk: queue %u: mmap of the descriptors: %s\n", q->q_id,
			graid_strerror(rc));
		return rc;
	}
	q->iods = p;
	/* Page-aligned, so that graid reads and writes the members straight from them. */
	if (posix_memalign(&p, page, s->depth * s->buf_bytes))
		return -ENOMEM;
	q->bufs = p;
	/* One ring: the ublk commands' completions come back with the requests'. */
	q->ndone = s->one_ring ? 3 * s->depth + 16 : s->depth;
	q->done = calloc(q->ndone, sizeof(*q->done));
	q->held = calloc(s->depth, sizeof(*q->held));
	q->deferred = calloc(s->depth, sizeof(*q->deferred));
	if (!q->done || !q->held || !q->deferred)
		return -ENOMEM;
	/* A command per tag, the stop poll and the release poll; batched: far fewer. */
	rc = s->one_ring ? 0 : io_uring_queue_init(s->depth + 2, &q->ring, IORING_SETUP_SQE128);
	if (rc < 0) {
		fprintf(stderr, "graid-ublk: queue %u: io_uring setup: %s\n", q->q_id,
			graid_strerror(rc));
		return rc;
	}
	q->have_ring = !s->one_ring;
	if (s->batch) {
		rc = ubat_setup(q);
		if (rc)
			return rc;
	}
	/* Made in the queue's thread, which alone uses it until uq_teardown (also here). */
	rc = graid_queue_create_flags(s->array, s->depth, s->queue_flags, &q->gq);
	if (rc) {
		fprintf(stderr, "graid-ublk: queue %u: graid_queue_create: %s\n", q->q_id,
			graid_strerror(rc));
		return rc;
	}
	if (s->queue_flags)
		fprintf(stderr, "graid-ublk: queue %u: completion work %s\n", q->q_id,
			graid_queue_flags(q->gq) & GRAID_QUEUE_F_ONE_THREAD
				? "deferred to this thread's waits (DEFER_TASKRUN)"
				: "run at once (this kernel cannot defer it)");
	if (s->one_ring)
		return uone_setup(q);
	if (s->fixed_buffers)
		uq_register_bufs(q, 0, true);
	return 0;
}

static void uq_teardown(struct uq *q)
{
	/*
	 * Waits for any request still in flight. Those of a broken ring (graid.h) may still
	 * be the kernel's, and so may the tag buffers they use: those are left, not freed.
	 */
	bool bufs_kept = graid_queue_destroy(q->gq) != 0;

	/* Closing the ring cancels what the driver still holds (none after STOP_DEV). */
	if (q->have_ring) {
		if (q->s->batch)
			ubat_unregister(q);
		io_uring_queue_exit(&q->ring);
	}
	if (q->s->batch)
		ubat_free(q);
	if (q->iods)
		munmap((void *)q->iods, q->iods_bytes);
	if (bufs_kept)
		fprintf(stderr, "graid-ublk: queue %u: the array's queue could not finish its "
				"requests; their buffers are left to the kernel\n", q->q_id);
	else
		free(q->bufs);
	free(q->done);
	free(q->held);
	free(q->deferred);
	free(q->unsent);
}

/*
 * FETCH_REQ on every tag, and the poll on the stop eventfd. The driver takes a FETCH_REQ
 * and keeps it until a request comes (not before START_DEV); one it refuses completes at
 * once, which is how a bad command shows before the device is started.
 */
static int uq_fetch_all(struct uq *q)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned head;
	int rc;

	if (q->s->batch) {
		rc = ubat_start(q);
		if (rc)
			return rc;
	}
	for (unsigned tag = 0; !q->s->batch && tag < q->s->depth; tag++) {
		rc = uq_prep_io(q, q->s->op_fetch, tag, -1);
		if (rc)
			return rc;
	}
	sqe = uq_get_sqe(q);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, q->s->stop_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, UQ_STOP_DATA);
	if (q->s->park_foreign) {
		sqe = uq_get_sqe(q);
		if (!sqe)
			return -EBUSY;
		io_uring_prep_poll_add(sqe, q->s->release_fd, POLLIN);
		io_uring_sqe_set_data64(sqe, UQ_RELEASE_DATA);
	}
	rc = io_uring_submit(&q->ring);
	if (rc < 0)
		return rc;
	io_uring_for_each_cqe(&q->ring, head, cqe) {
		if (cqe->user_data != UQ_STOP_DATA && cqe->user_data != UQ_RELEASE_DATA &&
		    cqe->res < 0) {
			fprintf(stderr, "graid-ublk: queue %u: %s refused: %s\n", q->q_id,
				cqe->user_data == UQ_PREP_DATA	  ? "PREP_IO_CMDS"
				: cqe->user_data == UQ_FETCH_DATA ? "FETCH_IO_CMDS"
								  : "FETCH_REQ",
				graid_strerror(cqe->res));
			return cqe->res;
		}
	}
	return 0; /* the CQEs seen (a stop, at most) are left for the loop */
}

/* Queue @p tag's request on the array (true), answer it, or defer it (-EAGAIN). */
static bool uq_serve(struct uq *q, unsigned tag)
{
	struct usrv *s = q->s;
	struct ublksrv_io_desc iod;
	uint64_t offset;
	size_t len;
	int rc;

	iod = q->iods[tag]; /* written by the driver before it completed the command */
	offset = iod.start_sector << 9;
	len = (size_t)iod.nr_sectors << 9;
	switch (ublksrv_get_op(&iod)) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		/* The driver never sends more than max_sectors, the size of the buffer. */
		if (len > s->buf_bytes) {
			rc = -EIO;
			break;
		}
		if (s->one_ring)
			rc = uone_serve(q, tag, ublksrv_get_op(&iod) == UBLK_IO_OP_WRITE, offset,
				       len);
		else if (ublksrv_get_op(&iod) == UBLK_IO_OP_READ)
			rc = graid_queue_read(q->gq, uq_buf(q, tag), len, offset, tag);
		else
			rc = graid_queue_write(q->gq, uq_buf(q, tag), len, offset, tag);
		break;
	case UBLK_IO_OP_DISCARD:
	case UBLK_IO_OP_WRITE_ZEROES:
		/* No data buffer: the array zeroes (deallocating whole stripes where it can). */
		if (ublksrv_get_op(&iod) == UBLK_IO_OP_DISCARD)
			rc = graid_queue_discard(q->gq, offset, len, tag);
		else
			rc = graid_queue_write_zeroes(q->gq, offset, len, tag);
		break;
	case UBLK_IO_OP_FLUSH:
		/*
		 * Synchronous, on this thread: the block layer sends a flush only for writes
		 * it has seen complete, which we committed after graid finished them. The
		 * queue's other tags wait meanwhile; flushes are rare.
		 */
		rc = graid_array_flush(s->array);
		uq_commit(q, tag, rc);
		return false;
	default:
		rc = -EOPNOTSUPP; /* WRITE_SAME and others: never advertised */
		break;
	}
	if (rc == 0) {
		q->inflight++;
		return true;
	}
	/*
	 * "Not now": the array is quiesced for a moment and this queue holds requests of its
	 * own, which the quiesce waits for (graid.h, graid_queue_read()). The tag waits here,
	 * and is queued again once some are reaped; failing it would fail the client's I/O.
	 */
	if (rc == -EAGAIN) {
		q->deferred[q->ndeferred++] = tag;
		return false;
	}
	uq_commit(q, tag, rc); /* -EINVAL (out of range), -EROFS, -ESTALE, ... */
	return false;
}

bool uq_retry_deferred(struct uq *q)
{
	unsigned n = q->ndeferred;
	bool queued = false;

	/* A tag deferred again goes back on the list; the list never holds more than depth. */
	q->ndeferred = 0;
	for (unsigned i = 0; i < n; i++)
		queued |= uq_serve(q, q->deferred[i]);
	return queued;
}

/* A request for @tag to serve, or the end of the slot (queue.h). */
bool uq_on_request(struct uq *q, unsigned tag, int res)
{
	if (res == UBLK_IO_RES_ABORT) {
		/* The device is going away: this tag gets no further request, and no commit. */
		q->lost++;
		return false;
	}
	if (res != UBLK_IO_RES_OK || tag >= q->s->depth) {
		fprintf(stderr, "graid-ublk: queue %u tag %u: the driver answered %d (%s)\n",
			q->q_id, tag, res, res < 0 ? graid_strerror(res) : "unexpected");
		q->lost++;
		return false;
	}
	return uq_serve(q, tag);
}

/* Everything the ublk ring has completed; returns how many CQEs there were. */
static unsigned uq_ublk_cqes(struct uq *q)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	bool queued = false, release = false;

	io_uring_for_each_cqe(&q->ring, head, cqe) {
		if (cqe->user_data == UQ_STOP_DATA)
			q->stop = true;
		else if (cqe->user_data == UQ_RELEASE_DATA)
			release = true;
		else if (q->s->batch && ubat_cqe(q, cqe, &queued))
			; /* new requests (passed to uq_on_request), or a commit's answer */
		else if (uq_on_request(q, (unsigned)cqe->user_data, cqe->res))
			queued = true;
		n++;
	}
	io_uring_cq_advance(&q->ring, n);
	/* Also at a stop: the driver waits for every request it handed out. */
	if (release || (q->stop && q->nheld))
		uq_release_held(q);
	if (queued)
		graid_queue_submit(q->gq);
	return n;
}

/*
 * Finished graid requests, committed to the driver; returns how many, or the reap's
 * error when the array's queue cannot go on (its ring unusable: nothing would ever end).
 * Waits for @min_complete of them (0: never blocks).
 */
static int uq_graid_completions(struct uq *q, unsigned min_complete)
{
	int n;

	if (q->inflight == 0)
		return 0;
	n = graid_queue_reap(q->gq, q->done, q->s->depth, min_complete);
	/* The library's "not now" (graid.h): tried again at the next turn. */
	if (n == -EAGAIN || n == -EBUSY || n == -EINTR || n == -ENOMEM)
		return 0;
	if (n < 0) {
		fprintf(stderr, "graid-ublk: queue %u: graid_queue_reap: %s\n", q->q_id,
			graid_strerror(n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		/*
		 * result: len or a negative errno. A read or write is at most buf_bytes; a
		 * discard may be longer than an int holds, and the driver reads only its sign.
		 */
		int64_t res = q->done[i].result;

		uq_commit(q, (unsigned)q->done[i].user_data, res > INT_MAX ? INT_MAX : (int)res);
	}
	q->inflight -= (unsigned)n;
	return n;
}

static bool uq_ring_error(struct uq *q, int rc)
{
	if (rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY)
		return false;
	fprintf(stderr, "graid-ublk: queue %u: io_uring: %s\n", q->q_id, graid_strerror(rc));
	return true;
}

/* What the ring holds, sent; batched, the answers gathered since the last go with it. */
static int uq_submit(struct uq *q)
{
	if (q->s->batch)
		ubat_flush(q);
	return io_uring_submit(&q->ring);
}

/* The driver ended every tag (the device is gone), or no fetch is left: no request comes. */
bool uq_ended(const struct uq *q)
{
	return q->lost >= q->s->depth || (q->s->batch && q->b.fetch_ended);
}

static int uq_loop(struct uq *q)
{
	for (;;) {
		unsigned progress = uq_ublk_cqes(q);
		int rc = uq_graid_completions(q, 0);

		if (rc < 0)
			return rc;
		progress += (unsigned)rc;
		/* Requests the array said "not now" to, once it took some back (above). */
		if (q->ndeferred && uq_retry_deferred(q)) {
			graid_queue_submit(q->gq);
			progress++;
		}
		if (q->inflight == 0 && !q->ndeferred && (q->stop || uq_ended(q))) {
			uq_submit(q); /* commits of held requests released just now */
			/*
			 * Batched answers still waiting for a commit buffer: another turn, unless
			 * the device is gone (its requests ended with it). Left unsent, they
			 * would hold STOP_DEV forever.
			 */
			if (!q->s->batch || !q->b.commit_n[q->b.cur] || q->b.gone)
				return q->stop || atomic_load(&q->s->stopping) ? 0 : -ENODEV;
		}
		if (q->inflight == 0) {
			/* A deferred tag with nothing in flight: tried again in a millisecond. */
			struct __kernel_timespec second = { .tv_sec = q->ndeferred ? 0 : 1,
							    .tv_nsec = q->ndeferred ? 1000000 : 0 };
			struct io_uring_cqe *cqe;

			/*
			 * Send the commits, and sleep until the driver has something, or a second
			 * passed: then an idle reap accounts for member I/O the array's I/O timeout
			 * gave up on and the kernel has ended since (graid.h); until then that
			 * member is not caught up.
			 */
			if (q->s->batch)
				ubat_flush(q);
			rc = io_uring_submit_and_wait_timeout(&q->ring, &cqe, 1, &second, NULL);
			if (rc == -ETIME) {
				rc = 0;
				graid_queue_reap(q->gq, q->done, q->s->depth, 0);
			}
		} else {
			/* Send the commits; if nothing else moved, wait for graid. */
			rc = uq_submit(q);
			if (rc >= 0 && !progress && !io_uring_cq_ready(&q->ring)) {
				int got = uq_graid_completions(q, 1);

				if (got < 0)
					return got;
			}
		}
		if (uq_ring_error(q, rc))
			return rc;
	}
}

static void uq_report(struct usrv *s, bool ready)
{
	pthread_mutex_lock(&s->lock);
	if (ready)
		s->nready++;
	else
		s->nfailed++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void *uq_thread(void *arg)
{
	struct uq *q = arg;
	char name[16];
	int rc;

	/* graid-ublk-qN in ps, top and perf (and in the VM bed's affinity check). */
	snprintf(name, sizeof(name), "graid-ublk-q%u", q->q_id);
	pthread_setname_np(pthread_self(), name);
	rc = uq_setup(q);

	/* Every command of a queue must come from one thread: the driver checks. */
	if (rc == 0)
		rc = q->s->one_ring ? uone_start(q) : uq_fetch_all(q);
	uq_report(q->s, rc == 0);
	if (rc == 0)
		rc = q->s->one_ring ? uone_loop(q) : uq_loop(q);
	uq_teardown(q);
	q->rc = rc;
	/* A queue that ends on its own (device deleted elsewhere, ring error) stops the rest. */
	if (rc && !atomic_load(&q->s->stopping)) {
		if (rc == -ENODEV)
			fprintf(stderr, "graid-ublk: queue %u: the driver ended every tag\n",
				q->q_id);
		kill(getpid(), SIGTERM);
	}
	return NULL;
}

int uq_start(struct usrv *s, unsigned q_id, const cpu_set_t *cpus, struct uq **out)
{
	struct uq *q = calloc(1, sizeof(*q));
	pthread_attr_t attr;
	int rc = -1;

	if (!q)
		return -ENOMEM;
	q->s = s;
	q->q_id = q_id;
	/* On the CPUs --queue-cpus chose; where they are not ours to use (a cpuset), anywhere. */
	if (cpus && pthread_attr_init(&attr) == 0) {
		if (pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus) == 0)
			rc = -pthread_create(&q->thread, &attr, uq_thread, q);
		pthread_attr_destroy(&attr);
	}
	if (rc)
		rc = -pthread_create(&q->thread, NULL, uq_thread, q);
	if (rc) {
		free(q);
		return rc;
	}
	*out = q;
	return 0;
}

int uq_join(struct uq *q)
{
	int rc;

	pthread_join(q->thread, NULL);
	rc = q->rc;
	free(q);
	return rc;
}
