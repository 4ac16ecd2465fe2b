/* SPDX-License-Identifier: MIT */
/* Queues: the asynchronous API, one io_uring each, driving stripe operations to completion. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/badblocks.h"
#include "meta/journal.h"
#include "io/discard.h"
#include "array/stats_count.h"
#include "io/lost_write_column.h"
#include "io/queue.h"
#include "io/quiesce.h"
#include "io/queue_fixed.h"
#include "io/queue_io.h"
#include "io/queue_late.h"
#include "io/queue_ops.h"
#include "io/queue_sop.h"
#include "io/queue_timeout.h"
#include "io/sop.h"
#include "common/signals.h"
#include "meta/csum_report.h"
#include "meta/meta.h"
#include "meta/stripe_lock.h"

/* Member I/Os a queue may have in flight bound its stripe operations (the CQ must not overflow). */
#define QUEUE_SQ_ENTRIES 1024u
#define QUEUE_CQ_ENTRIES 8192u
/* Completions whose tags queue_reap_prefetch() asks for ahead, at most (a deep queue's). */
#define QUEUE_REAP_PREFETCH 64u

/*
 * A read into a kernel's buffer: its failure is judged by nobody here. It may be the
 * buffer's doing (pages not aligned as the member wants them, the slot empty: -EINVAL,
 * -EFAULT), and a member's error is met again by the read the caller then does through
 * memory of its own (the request ends -EXDEV), which repairs or fails as ever: counting it
 * here too would count each media error twice.
 */
static bool queue_kslot_read(const struct sop *s, const struct mio *io)
{
	return s->req->kslot >= 0 && !io->write;
}

/*
 * An unlocked RAID-5/6 read whose blocks held their tags, but whose columns' cached records
 * say something of them is stale (io/lost_write_column.h): not trusted, ended stale.
 */
static bool queue_read_lost_write(struct graid_queue *q, struct mio *io)
{
	if (io->write || !io->fault.racy || io->fault.off == UINT64_MAX || !lwc_active(q->a) ||
	    !lwc_read_suspect(q->a, io->member, io->fault.off, io->len))
		return false;
	io->fault.stale = true;
	return true;
}

static void queue_io_complete(struct graid_queue *q, struct mio *io, int res)
{
	struct sop *s = io->sop;

	/* NVMe passthrough: one CQE per command; the last one stands for the whole I/O. */
	res = member_io_result(q->a, io->member, &io->fault, io->len, res);
	if (res == MEMBER_IO_MORE)
		return;
	if (queue_late_done(q, io, res))
		return; /* given up on after the I/O timeout: its operation went on without it */
	queue_timeout_untrack(q, io);
	q->ios_inflight--;
	res = member_io_done(q->a, io->member, io->write, io->len, &io->fault, res);
	/* After a crash, inside a region still to resync: the data is kept (csum_report.h). */
	if (res == -EBADMSG && csum_report_unresynced(q->a, io->member, &io->fault, io->len))
		res = (int)io->len;
	/* Its column's generations disagree: read again under the stripe lock, which judges. */
	if (res == (int)io->len && queue_read_lost_write(q, io))
		res = -ESTALE;
	if (io->fault.slow_ms)
		array_event(q->a, GRAID_EVENT_MEMBER_SLOW, io->member, 0, 0, io->fault.slow_ms);
	if (res == (int)io->len) {
		if (!io->write && io->copy_to)
			memcpy(io->copy_to, io->copy_from, io->len);
		/* Every in-place write holds valid data (sop.c plans so): no bad block under it. */
		if (io->write && io->off != UINT64_MAX) {
			badblocks_clear(q->a, io->member, io->fault.fd, io->off, io->len);
			csum_report_written(q->a, io->member, &io->fault, io->len);
		}
	} else {
		/*
		 * A stale read is nobody's failure: it is only done again, the role's present
		 * way. A sector it cannot read, on a member otherwise fine: repaired, not failed.
		 */
		if (!io->fault.stale && !queue_kslot_read(s, io) &&
		    !(!io->write && array_member_read_error(q->a, io->member, &io->fault, res) &&
		      sop_note_bad(s, io->member)))
			array_member_io_failed(q->a, io->member, io->fault.fd, res);
		if (io->write)
			s->write_fail++;
		else
			s->read_failed = true;
	}
	if (--s->pending == 0)
		sop_io_done(q, s);
}

/*
 * A checksummed array's reads verify against tags that a random read finds far from the CPU:
 * asked for all at once before the first completion, the waits overlap instead of adding up.
 */
static void queue_reap_prefetch(struct graid_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	for (unsigned i = 0; i < q->ninl; i++)
		member_io_prefetch(q->a, q->inl[i].io->member, q->inl[i].io->write,
				   q->inl[i].io->len, &q->inl[i].io->fault);
	io_uring_for_each_cqe(&q->ring, head, cqe) {
		struct mio *io = io_uring_cqe_get_data(cqe);

		if (n++ == QUEUE_REAP_PREFETCH)
			break;
		if (io && !(cqe->user_data & QUEUE_OP_TAG))
			member_io_prefetch(q->a, io->member, io->write, io->len, &io->fault);
	}
}

static void queue_reap_cqes(struct graid_queue *q)
{
	struct io_uring_cqe *cqe;

	if (q->a->tags)
		queue_reap_prefetch(q);
	/* In-place I/O first; completing one may do more in place, appended behind it. */
	for (unsigned i = 0; i < q->ninl; i++)
		queue_io_complete(q, q->inl[i].io, q->inl[i].res);
	q->ninl = 0;

	while (io_uring_peek_cqe(&q->ring, &cqe) == 0) {
		struct mio *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		if (cqe->user_data & QUEUE_OP_TAG) {
			/* The caller's own operation (graid_queue_sqe); no room: the next reap. */
			if (!queue_op_cqe(q, cqe))
				break;
			io_uring_cqe_seen(&q->ring, cqe);
			continue;
		}
		io_uring_cqe_seen(&q->ring, cqe);
		if (io) /* NULL: the timeout in front of a stalled member's I/O */
			queue_io_complete(q, io, res);
	}
}

/*
 * Completions to reap, or (a ring that defers its completion work) work the kernel holds
 * for this thread, which a look at the ring turns into completions.
 */
static bool queue_ring_has_news(const struct graid_queue *q)
{
	return io_uring_cq_ready(&q->ring) ||
	       (q->one_thread && (IO_URING_READ_ONCE(*q->ring.sq.kflags) & IORING_SQ_TASKRUN));
}

/*
 * Give up on every I/O past the array's I/O timeout. Completions are reaped before each
 * look: an I/O whose completion is waiting in the ring ended in time, and giving up on one
 * (superblock writes) takes a while that the others must not be charged for.
 */
static void queue_expire(struct graid_queue *q)
{
	struct mio *io;

	while (q->t_head) {
		queue_reap_cqes(q);
		io = queue_timeout_due(q);
		if (!io)
			break;
		queue_give_up(q, io);
	}
}

static void queue_cut_done(struct graid_queue *q, struct req *r, struct sop *s, uint64_t at,
			   uint64_t end, size_t req_off)
{
	const struct layout *l = r->rs ? &r->rs->old_lay : &q->a->lay;
	uint64_t unit = (l->level == 1 || l->level == 10) ? l->chunk
							   : (uint64_t)l->chunk * l->ndata;

	s->req = r;
	s->lay = l; /* a reshape's: chosen again under the chunk's lock (sop_reshape_plan) */
	s->stripe = at / unit;
	s->arr_off = at;
	s->req_off = req_off;
	s->arr_len = (size_t)(end - at);
	r->cursor += s->arr_len;
	r->sops_live++;
	q->nsops++;
}

/*
 * A discard or write-zeroes: whole stripes (chunks on RAID-1/10) are deallocated where every
 * writable member can (discard.c), many at once; the rest, and everything where they cannot,
 * is written as zeroes from the queue's zero buffer through the ordinary write path, so
 * parity stays right. Deallocating runs hold their stripe locks (SOP_RUN_MAX of them);
 * RAID-0 takes none, as its writes take none.
 */
static void queue_cut_zero(struct graid_queue *q, struct req *r, struct sop *s, uint64_t unit)
{
	const struct layout *l = &q->a->lay;
	uint64_t at = r->off + r->cursor, left = r->off + r->len - at;
	uint64_t end = (at / unit + 1) * unit, whole = at % unit ? 0 : left / unit, most;
	bool mirror = l->level == 1 || l->level == 10;

	if (end > r->off + r->len)
		end = r->off + r->len;
	if (whole && discard_can_offload(q->a)) {
		most = mirror ? 1 : (l->nparity ? (s->buckets ? SOP_RUN_MAX : 1) : 4096);
		s->dealloc = true;
	} else if (whole >= 2 && l->nparity && s->iov) {
		/* Full-stripe runs of zeroes, as many as the zero buffer holds. */
		most = q->zbuf_len / unit;
		if (q->a->journal && journal_max_run(q->a) < most)
			most = journal_max_run(q->a);
		if (most > SOP_RUN_MAX)
			most = SOP_RUN_MAX;
	} else {
		most = 1;
	}
	if (whole && most > 1) {
		s->nrun = (unsigned)(whole < most ? whole : most);
		end = at + s->nrun * unit;
	}
	/*
	 * Written from the zero buffer, never past its end: a RAID-0 grown since this queue
	 * made it has a wider stripe than the buffer (discard_zbuf_len) was sized for.
	 */
	if (!s->dealloc && end - at > q->zbuf_len) {
		s->nrun = 1;
		end = at + q->zbuf_len;
	}
	queue_cut_done(q, r, s, at, end, 0);
}

/*
 * A reshape's cut: one chunk at most, the same chunk in both geometries, so that one
 * chunk lock covers it and it never straddles the position (both are chunk multiples).
 * Zeroes are written, not deallocated: discard.c deallocates by a->lay's stripes.
 */
static void queue_cut_reshape(struct graid_queue *q, struct req *r, struct sop *s)
{
	uint64_t chunk = r->rs->old_lay.chunk, at = r->off + r->cursor;
	uint64_t end = (at / chunk + 1) * chunk;

	if (end > r->off + r->len)
		end = r->off + r->len;
	s->nrun = 1;
	s->dealloc = false;
	queue_cut_done(q, r, s, at, end, r->zero ? 0 : r->cursor);
}

/* Cut the next stripe of a request into a stripe operation. */
static void queue_cut(struct graid_queue *q, struct req *r, struct sop *s)
{
	const struct layout *l = &q->a->lay;
	uint64_t unit = (l->level == 1 || l->level == 10) ? l->chunk
							   : (uint64_t)l->chunk * l->ndata;
	uint64_t at = r->off + r->cursor;
	uint64_t end = (at / unit + 1) * unit;

	if (r->rs) {
		queue_cut_reshape(q, r, s);
		return;
	}
	if (end > r->off + r->len)
		end = r->off + r->len;
	s->nrun = 1;
	s->dealloc = false;
	if (r->zero) {
		queue_cut_zero(q, r, s, unit);
		return;
	}
	/*
	 * A write of whole RAID-5/6 stripes takes up to SOP_RUN_MAX of them at once: each
	 * member then gets one vectored write instead of one per stripe.
	 */
	if (r->write && l->nparity && at % unit == 0 && r->off + r->len - at >= 2 * unit &&
	    s->iov) {
		uint64_t whole = (r->off + r->len - at) / unit;
		unsigned most = q->a->journal ? journal_max_run(q->a) : SOP_RUN_MAX;

		s->nrun = (unsigned)(whole < most ? whole : most);
		end = at + s->nrun * unit;
	}
	queue_cut_done(q, r, s, at, end, r->cursor);
}

static void queue_pump(struct graid_queue *q)
{
	for (struct req *r = q->active; r; r = r->next) {
		while (r->cursor < r->len && q->nsops < q->max_sops) {
			struct sop *s = queue_sop_alloc(q);

			if (!s)
				return; /* out of memory: try again when something finishes */
			queue_cut(q, r, s);
			sop_start(q, s);
		}
		if (q->nsops >= q->max_sops)
			return;
	}
}

/* Move finished requests from the active list to the done list, in order. */
static void queue_sweep(struct graid_queue *q)
{
	struct req **pp = &q->active;

	q->active_tail = NULL;
	while (*pp) {
		struct req *r = *pp;

		if (r->cursor == r->len && r->sops_live == 0) {
			if (r->plain)
				atomic_fetch_sub(&q->a->plain_inflight, 1);
			else if (r->rs)
				atomic_fetch_sub(&r->rs->inflight, 1);
			/* Zeroed whole: its regions may become unused (after the next flush). */
			if (r->zero && !r->err && !r->rs)
				live_discard_done(q->a, r->off, r->len, &r->live);
			/*
			 * Out of the count only now, with release: a quiesce's drain
			 * (quiesce.c) that sees it gone sees its last touch of the region maps
			 * done (found by review: a discard ending across a coarsening marked a
			 * coarse region, holding data, a candidate to become unused).
			 */
			atomic_fetch_sub_explicit(&q->a->fg_inflight, 1, memory_order_release);
			/* Write-zeroes is a discard here: the same path, no data from the caller. */
			stats_request(q->a, r->zero ? GRAID_IO_DISCARD
						    : r->write ? GRAID_IO_WRITE : GRAID_IO_READ,
				      r->len, r->err != 0, r->start_ns);
			*pp = r->next;
			r->next = NULL;
			if (q->done_tail)
				q->done_tail->next = r;
			else
				q->done = r;
			q->done_tail = r;
		} else {
			q->active_tail = r;
			pp = &r->next;
		}
	}
}

static bool queue_unpark(struct graid_queue *q)
{
	struct sop **pp = &q->parked;
	bool any = false;

	while (*pp) {
		struct sop *s = *pp;

		*pp = s->next;
		if (sop_try_unpark(q, s)) {
			any = true;
		} else {
			s->next = *pp;
			*pp = s;
			pp = &s->next;
		}
	}
	return any;
}

/*
 * Move every request as far as it goes and send the member I/O prepared. 0, or the
 * kernel's errno when it refused the submission: the entries stay in the ring, and the
 * next submit (or a reap, which waits that refusal out) sends them.
 */
static int queue_progress(struct graid_queue *q)
{
	struct sigpipe_guard g;
	int rc;

	queue_pump(q);
	queue_unpark(q);
	sop_compute_batch(q);
	queue_sweep(q);
	if (!io_uring_sq_ready(&q->ring))
		return 0;
	sigpipe_guard_begin(&g);
	rc = io_uring_submit(&q->ring);
	sigpipe_guard_end(&g);
	return rc < 0 ? rc : 0;
}

/*
 * The queue's ring; with GRAID_QUEUE_F_ONE_THREAD, one whose completion work waits for the
 * owner's next look (DEFER_TASKRUN, which needs SINGLE_ISSUER). TASKRUN_FLAG makes the
 * kernel say in the ring when such work waits, so a reap that only polls (min_complete 0)
 * still finds it: liburing's peek enters the kernel for it then, and only then. A kernel
 * without them (before 6.1) refuses the flags: the ring is made as without.
 */
static int queue_ring_init(struct graid_queue *q, unsigned depth, uint32_t flags)
{
	/* Room for the member I/O in flight, and for the caller's operations (queue_ops.c). */
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = QUEUE_CQ_ENTRIES + 2 * depth + 16 };
	int rc;

	/* Big SQEs and CQEs where a member takes NVMe passthrough commands (member_io.c). */
	p.flags |= member_ring_flags(q->a);
	if (flags & GRAID_QUEUE_F_ONE_THREAD) {
		struct io_uring_params d = p;

		d.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			   IORING_SETUP_TASKRUN_FLAG;
		rc = io_uring_queue_init_params(QUEUE_SQ_ENTRIES, &q->ring, &d);
		if (rc != -EINVAL) {
			graid__fork_safe(); /* so that a child's fork_gen differs (fork.c) */
			q->one_thread = rc == 0;
			q->owner = graid__thread_token();
			q->owner_fork_gen = atomic_load_explicit(&graid__fork_gen,
								 memory_order_relaxed);
			return rc;
		}
		graid__log(GRAID_LOG_INFO, "queue: this kernel has no deferred completion work "
					   "(DEFER_TASKRUN): a ring as without GRAID_QUEUE_F_ONE_THREAD");
	}
	return io_uring_queue_init_params(QUEUE_SQ_ENTRIES, &q->ring, &p);
}

GRAID_API int graid_queue_create_flags(struct graid_array *a, unsigned depth, uint32_t flags,
				       struct graid_queue **out)
{
	struct graid_queue *q;
	int rc;

	if (!a || !out || depth == 0 || depth > 4096 || (flags & ~GRAID_QUEUE_F_ALL))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->a = a;
	q->depth = depth;
	q->max_sops = QUEUE_CQ_ENTRIES / (a->nmembers + 1);
	if (q->max_sops > 512)
		q->max_sops = 512;
	if (q->max_sops < 4)
		q->max_sops = 4;
	/* RAID-1 too: graid_array_convert() may make it a RAID-5 of two under this queue. */
	if (a->lay.nparity || a->lay.level == 1) {
		if (posix_memalign((void **)&q->zero, ARRAY_ALIGN, a->lay.chunk)) {
			free(q);
			return -ENOMEM;
		}
		memset(q->zero, 0, a->lay.chunk);
	}
	rc = queue_ring_init(q, depth, flags);
	if (rc < 0) {
		graid__log(GRAID_LOG_ERR, "io_uring setup failed: %s", graid_strerror(rc));
		free(q->zero);
		free(q);
		return rc;
	}
	*out = q;
	return 0;
}

GRAID_API int graid_queue_create(struct graid_array *a, unsigned depth,
				 struct graid_queue **out)
{
	return graid_queue_create_flags(a, depth, 0, out);
}

GRAID_API uint32_t graid_queue_flags(const struct graid_queue *q)
{
	return q && q->one_thread ? GRAID_QUEUE_F_ONE_THREAD : 0;
}

/*
 * A ring that failed for good with @p left of @p what still in it: closed, so that the
 * kernel ends or cancels what it holds (the caller's operations too: a ublk server's
 * fetches would otherwise keep its device from being deleted until the process exits);
 * the queue's memory stays theirs, never freed.
 */
static int queue_destroy_broken(struct graid_queue *q, unsigned left, const char *what, int rc)
{
	graid__log(GRAID_LOG_ERR, "queue: destroyed with %u %s its broken ring (%s) cannot "
				  "finish; the ring is closed, its memory left to them",
		   left, what, graid_strerror(rc));
	io_uring_queue_exit(&q->ring);
	return rc;
}

GRAID_API int graid_queue_destroy(struct graid_queue *q)
{
	struct graid_completion c[16];

	if (!q)
		return 0;
	/* Only its owner can wait for what is in flight; an idle queue anyone may free. */
	if (queue_wrong_thread(q) && (q->nreq || q->nlate || q->nops))
		return -EEXIST;
	/* graid.h promises every request in flight is waited for: "not now" is tried again. */
	while (q->nreq) {
		int rc = graid_queue_reap(q, c, 16, 1);

		if (rc < 0 && !queue_err_transient(rc))
			return queue_destroy_broken(q, q->nreq, "requests", rc);
		if (rc == 0 && !q->done && q->nreq && !q->ios_inflight && !q->parked &&
		    !q->ninl)
			break; /* nothing left that could finish */
	}
	/*
	 * I/O given up on after the timeout is still the kernel's, and so is the memory it
	 * reads into: wait for it (the kernel's own timeouts bound that wait).
	 */
	if (q->nlate)
		graid__log(GRAID_LOG_NOTICE, "queue: waiting for %u I/O given up on after the "
					     "timeout to end", q->nlate);
	while (q->nlate) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_sq_ready(&q->ring) ? member_ring_submit(&q->ring, 0) : 0;

		if (rc >= 0 || queue_err_transient(rc))
			rc = io_uring_wait_cqe(&q->ring, &cqe);

		if (rc < 0 && !queue_err_transient(rc))
			return queue_destroy_broken(q, q->nlate, "late I/O", rc);
		queue_reap_cqes(q);
		q->nop_done = 0; /* the caller's operations' completions: nobody reaps them now */
	}
	/* And with it any fixed buffers; the caller's operations still out are cancelled. */
	io_uring_queue_exit(&q->ring);
	queue_fixed_free(q);
	queue_ops_free(q);
	for (unsigned k = 0; k < QUEUE_BUF_CLASSES; k++)
		for (unsigned i = 0; i < q->nbufs[k]; i++)
			free(q->bufs[k][i]);
	while (q->free_sops) {
		struct sop *s = q->free_sops;

		q->free_sops = s->next;
		queue_sop_free(q, s);
	}
	while (q->free_reqs) {
		struct req *r = q->free_reqs;

		q->free_reqs = r->next;
		free(r);
	}
	free(q->batch_ptrs);
	free(q->inl);
	free(q->zero);
	free(q->zbuf);
	free(q);
	return 0;
}

/* The zero buffer of discards and write-zeroes, made at the first one. */
static int queue_zbuf(struct graid_queue *q)
{
	size_t len = discard_zbuf_len(q->a);

	if (q->zbuf)
		return 0;
	if (posix_memalign((void **)&q->zbuf, ARRAY_ALIGN, len))
		return -ENOMEM;
	memset(q->zbuf, 0, len);
	q->zbuf_len = len;
	return 0;
}

/*
 * RAID-0, 5, 6, 10: whether @p r is cut for a reshape. Counted as plain first and looked at after
 * (both sequentially consistent, as the start's store of a->reshape and its read of the
 * counts): a start either sees this request counted, and waits for it, or this request sees
 * the reshape. One routed by an earlier reshape of this open (finished since) is waited
 * for too: it would place chunks by that one's new geometry, the next one's old.
 */
static void queue_route(struct graid_array *a, struct req *r)
{
	if (a->lay.level == 1)
		return;
	atomic_fetch_add(&a->plain_inflight, 1);
	r->rs = atomic_load(&a->reshape);
	/* Counted by its routing before it leaves the plain count: a start never misses it. */
	if (r->rs) {
		atomic_fetch_add(&r->rs->inflight, 1);
		atomic_fetch_sub(&a->plain_inflight, 1);
	}
	r->plain = !r->rs;
}

/* A request queued (graid_queue_read() and the others); @p kslot as struct req's. */
static int queue_add(struct graid_queue *q, uint8_t *buf, size_t len, uint64_t offset,
		     uint64_t user_data, bool write, bool zero, int kslot)
{
	const struct graid_array *a;
	struct req *r;
	int rc;

	if (!q || (!buf && len && !zero))
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	a = q->a;
	if (offset % a->block_size || len % a->block_size || offset > array_size(a) ||
	    len > array_size(a) - offset)
		return -EINVAL;
	if (write && a->read_only)
		return -EROFS;
	/* Another host took the array over: what this handle would read or write is stale. */
	if (atomic_load_explicit(&a->foreign, memory_order_relaxed))
		return -ESTALE;
	if (q->nreq >= q->depth)
		return -EAGAIN;
	/* Counted in fg_inflight here, or held while the array is quiesced (quiesce.c). */
	rc = quiesce_enter(q->a, q->nreq);
	if (rc)
		return rc;
	if (zero && queue_zbuf(q)) {
		quiesce_leave(q->a);
		return -ENOMEM;
	}
	r = q->free_reqs;
	if (r)
		q->free_reqs = r->next;
	else if (!(r = malloc(sizeof(*r)))) {
		quiesce_leave(q->a);
		return -ENOMEM;
	}
	*r = (struct req){ .user_data = user_data, .buf = zero ? q->zbuf : buf, .len = len,
			   .off = offset, .write = write, .zero = zero, .kslot = kslot,
			   .start_ns = graid__now_ns() };
	queue_route(q->a, r);
	/* A reshape's zeroes clear no live-map region: its rows are in two geometries. */
	if (zero && !r->rs)
		live_discard_begin(q->a, offset, len, &r->live);
	if (q->active_tail)
		q->active_tail->next = r;
	else
		q->active = r;
	q->active_tail = r;
	q->nreq++;
	atomic_fetch_add_explicit(&q->a->fg_started, 1, memory_order_relaxed);
	return 0;
}

GRAID_API int graid_queue_read(struct graid_queue *q, void *buf, size_t len, uint64_t offset,
			       uint64_t user_data)
{
	return queue_add(q, buf, len, offset, user_data, false, false, -1);
}

GRAID_API int graid_queue_read_fixed(struct graid_queue *q, unsigned buf_index,
				     size_t buf_offset, size_t len, uint64_t offset,
				     uint64_t user_data)
{
	uint8_t *buf;
	int kslot, rc;

	if (!q)
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	rc = queue_fixed_target(q, buf_index, buf_offset, len, &buf, &kslot);
	return rc ? rc : queue_add(q, buf, len, offset, user_data, false, false, kslot);
}

GRAID_API int graid_queue_write(struct graid_queue *q, const void *buf, size_t len,
				uint64_t offset, uint64_t user_data)
{
	/* Never written through: a write's buffer is only read (cast for the shared struct). */
	return queue_add(q, (uint8_t *)(uintptr_t)buf, len, offset, user_data, true, false, -1);
}

/* Discard and write-zeroes differ only in what the live-data map records (discard.c). */
GRAID_API int graid_queue_discard(struct graid_queue *q, uint64_t offset, uint64_t len,
				  uint64_t user_data)
{
	if (len > SIZE_MAX)
		return -EINVAL;
	return queue_add(q, NULL, (size_t)len, offset, user_data, true, true, -1);
}

GRAID_API int graid_queue_write_zeroes(struct graid_queue *q, uint64_t offset, uint64_t len,
				       uint64_t user_data)
{
	if (len > SIZE_MAX)
		return -EINVAL;
	return queue_add(q, NULL, (size_t)len, offset, user_data, true, true, -1);
}

GRAID_API int graid_queue_submit(struct graid_queue *q)
{
	int rc;

	if (!q)
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	rc = queue_progress(q);
	return rc ? rc : (int)q->nreq;
}

/*
 * Wait for a CQE (or the oldest I/O's timeout), after sending what a refused submit left
 * in the ring (or nothing completes); 0, or the kernel's errno when it refused again or
 * refused the wait for good (the caller would otherwise spin on a ring that never
 * answers).
 */
static int queue_wait_ring(struct graid_queue *q)
{
	int rc;

	if (io_uring_sq_ready(&q->ring)) {
		rc = member_ring_submit(&q->ring, 0);
		if (rc < 0)
			return rc;
	}
	rc = queue_timeout_wait(q);
	if (rc == 0)
		queue_reap_cqes(q);
	else if (rc != -ETIME && !queue_err_transient(rc))
		return rc;
	return 0;
}

GRAID_API int graid_queue_reap(struct graid_queue *q, struct graid_completion *c,
			       unsigned max, unsigned min_complete)
{
	unsigned n = 0;

	if (!q || (!c && max))
		return -EINVAL;
	if (queue_wrong_thread(q))
		return -EEXIST;
	for (;;) {
		/* What has finished already counts, also for a caller that only polls (min 0). */
		queue_reap_cqes(q);
		queue_expire(q);
		queue_progress(q);
		n += queue_op_take(q, c + n, max - n);
		while (n < max && q->done) {
			struct req *r = q->done;

			q->done = r->next;
			if (!q->done)
				q->done_tail = NULL;
			c[n].user_data = r->user_data;
			c[n].result = r->err ? r->err : (int64_t)r->len;
			n++;
			q->nreq--;
			r->next = q->free_reqs;
			q->free_reqs = r;
		}
		if (n >= min_complete || n >= max || (q->nreq == 0 && q->nops == 0))
			break;
		if (q->ninl) {
			continue; /* done in place, not reaped yet: no waiting for it */
		} else if (q->ios_inflight) {
			int rc = queue_wait_ring(q);

			if (rc < 0)
				return n ? (int)n : rc;
		} else if (q->parked) {
			uint64_t seq = stripe_release_seq(q->a);

			if (queue_unpark(q))
				continue;
			/*
			 * Waiting for a stripe lock and for the caller's operations at once: a
			 * release wakes this wait, and the ring is looked at again every 200 us
			 * (the wait's system call lets the kernel post what ended meanwhile;
			 * locks are contended only across queues).
			 */
			if (!q->nops)
				stripe_wait_release(q->a, seq);
			else if (!queue_ring_has_news(q))
				stripe_wait_release_for(q->a, seq, 200 * 1000);
		} else if (!q->gen_list && !q->rec_list && !q->done && q->nsops == 0 &&
			   !q->active) {
			if (q->nreq || !q->nops)
				break; /* nothing left that could complete */
			/* Only the caller's operations are out: wait for one. */
			int rc = queue_wait_ring(q);

			if (rc < 0)
				return n ? (int)n : rc;
		}
	}
	return (int)n;
}
