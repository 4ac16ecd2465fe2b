/* SPDX-License-Identifier: MIT */
/* Member I/O for background work (rebuild, scrub, resync): one ring per job, groups of I/Os waited for together. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <liburing.h>

#include "io/lost_write_column.h"
#include "io/member_batch.h"
#include "member/member_io.h"
#include "common/signals.h"
#include "meta/badblocks.h"
#include "meta/csum_report.h"
#include "meta/meta.h"

#define MBATCH_RING 256u
/* Half the ring: a stalled member's I/O takes two entries. */
#define MBATCH_INFLIGHT (MBATCH_RING / 2)

int mbatch_open(struct mbatch *mb, struct graid_array *a)
{
	int rc;

	*mb = (struct mbatch){ .a = a };
	rc = io_uring_queue_init(MBATCH_RING, &mb->ring, member_ring_flags(a));
	if (rc < 0)
		return rc;
	mb->open = true;
	return 0;
}

/* The group an I/O belongs to: the one whose array holds it (a handful of groups at most). */
static struct mbgroup *mbatch_owner(struct mbatch *mb, const struct mbio *io)
{
	uintptr_t p = (uintptr_t)io;

	for (unsigned i = 0; i < mb->nactive; i++) {
		struct mbgroup *g = mb->active[i];

		if (p >= (uintptr_t)g->ios && p < (uintptr_t)(g->ios + g->n))
			return g;
	}
	return NULL;
}

static void mbatch_retire(struct mbatch *mb, struct mbgroup *g)
{
	for (unsigned i = 0; i < mb->nactive; i++)
		if (mb->active[i] == g) {
			for (unsigned j = i + 1; j < mb->nactive; j++)
				mb->active[j - 1] = mb->active[j];
			mb->nactive--;
			return;
		}
}

static void mbatch_break(struct mbatch *mb, int rc);

/*
 * Queue pending I/Os, oldest group first, as the in-flight bound allows; submit them, and
 * what an earlier refused submit left in the ring. A refusal that is not "try again" breaks
 * the batch (every unfinished I/O gets it); "try again" leaves them for the next call.
 */
/*
 * Prepare @p io on the ring. A RAID-5/6 write with generations carries the ones the column
 * expects (io/lost_write_column.h): a job's write is never a new write of the data.
 */
static int mbatch_prep(struct mbatch *mb, struct mbio *io)
{
	uint32_t stack[64], *meta = NULL;
	int rc = 0;

	/* A job that chose its words (a grow's new rows, reshape_csum.c) is not asked again. */
	if (io->write && !io->fault.meta_in && lwc_active(mb->a) &&
	    io->off < mb->a->lay.member_bytes) {
		meta = io->len / 4096u <= 64 ? stack : malloc(io->len / 4096u * sizeof(*meta));
		rc = meta ? lwc_write_meta(mb->a, NULL, io->member, io->off, io->len, meta)
			  : -ENOMEM;
		if (rc) {
			if (meta && meta != stack)
				free(meta);
			meta = NULL;
		}
	}
	/*
	 * As queue_write_meta(): no generations chosen, the write fails (not -EOPNOTSUPP).
	 * Words the caller put on the record (a job's own) win; ours are taken off after the
	 * prep, which consumes them (a failed one puts them back): they live on this stack.
	 */
	bool ours = !io->fault.meta_in && (meta || (rc && rc != -EOPNOTSUPP));

	if (ours) {
		io->fault.meta_in = meta;
		io->fault.meta_err = rc && rc != -EOPNOTSUPP ? rc : 0;
	}
	rc = member_prep_io(&mb->ring, mb->a, io->member, io->write, io->buf, io->len, io->off,
			    io, &io->fault);
	if (ours) {
		io->fault.meta_in = NULL;
		io->fault.meta_err = 0;
	}
	if (meta && meta != stack)
		free(meta);
	return rc;
}

static void mbatch_fill(struct mbatch *mb)
{
	struct sigpipe_guard guard;
	int rc;

	for (unsigned i = 0; i < mb->nactive; i++) {
		struct mbgroup *g = mb->active[i];

		while (g->next < g->n && mb->inflight < MBATCH_INFLIGHT) {
			struct mbio *io = &g->ios[g->next];

			if (!io->write)
				array_test_before_read(mb->a, io->member);
			/* Resync takes what it reads as the truth: its tags follow the bytes. */
			io->fault.unverified = mb->unverified && !io->write;
			if (mbatch_prep(mb, io))
				break;
			g->next++;
			/* Prepared, not yet submitted: a stale read still runs; its bytes are dropped. */
			if (!io->write)
				io->fault.stale = !array_read_current(mb->a, io->member, io->fault.fd,
								      io->off + io->len);
			/* Each NVMe command of a split I/O completes on its own: count them all. */
			io->cost = io->fault.pieces ? io->fault.pieces : 1;
			mb->inflight += io->cost;
		}
	}
	if (!io_uring_sq_ready(&mb->ring))
		return;
	sigpipe_guard_begin(&guard);
	rc = io_uring_submit(&mb->ring);
	sigpipe_guard_end(&guard);
	if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -ENOMEM && rc != -EINTR)
		mbatch_break(mb, rc);
}

/* Handle every completion that is there; true if any was. */
static bool mbatch_reap(struct mbatch *mb)
{
	struct io_uring_cqe *cqe;
	bool any = false;

	while (io_uring_peek_cqe(&mb->ring, &cqe) == 0) {
		struct mbio *io = io_uring_cqe_get_data(cqe);
		struct mbgroup *g;
		int res = cqe->res;

		io_uring_cqe_seen(&mb->ring, cqe);
		any = true;
		if (!io)
			continue; /* a stall's timeout */
		res = member_io_result(mb->a, io->member, &io->fault, io->len, res);
		if (res == MEMBER_IO_MORE)
			continue; /* more NVMe commands of this I/O to come */
		io->res = member_io_done(mb->a, io->member, io->write, io->len, &io->fault, res);
		if (io->res == -EBADMSG &&
		    csum_report_unresynced(mb->a, io->member, &io->fault, io->len))
			io->res = (int)io->len;
		if (io->fault.slow_ms)
			array_event(mb->a, GRAID_EVENT_MEMBER_SLOW, io->member, 0, 0,
				    io->fault.slow_ms);
		io->media = false;
		if (io->res == (int)io->len && io->write) {
			badblocks_clear(mb->a, io->member, io->fault.fd, io->off, io->len);
			csum_report_written(mb->a, io->member, &io->fault, io->len);
		}
		/*
		 * A stale read is nobody's failure: the caller plans it again without that role.
		 * A sector a job can rebuild is not its member's end either (row_heal.c).
		 */
		if (io->res < 0 && !io->fault.stale && !io->write && mb->keep_read_errors &&
		    array_read_error_repairable(mb->a, io->member, io->res))
			io->media = true;
		else if (io->res < 0 && !io->fault.stale)
			array_member_io_failed(mb->a, io->member, io->fault.fd, io->res);
		mb->inflight -= io->cost;
		g = mbatch_owner(mb, io);
		if (g && ++g->done == g->n)
			mbatch_retire(mb, g);
	}
	return any;
}

/* A broken ring: fail what never completed, so callers see an error, not a hang. */
static void mbatch_break(struct mbatch *mb, int rc)
{
	mb->broken = true;
	for (unsigned i = 0; i < mb->nactive; i++) {
		struct mbgroup *g = mb->active[i];

		for (size_t k = g->done; k < g->n; k++)
			g->ios[k].res = rc;
		g->done = g->n;
	}
	mb->nactive = 0;
}

int mbatch_start(struct mbatch *mb, struct mbgroup *g, struct mbio *ios, size_t n)
{
	*g = (struct mbgroup){ .ios = ios, .n = n };
	if (mb->broken)
		return -EIO;
	if (n == 0)
		return 0;
	if (mb->nactive == MBATCH_GROUPS)
		return -EBUSY;
	for (size_t i = 0; i < n; i++)
		ios[i].res = -EIO;
	mb->active[mb->nactive++] = g;
	mbatch_fill(mb);
	return 0;
}

bool mbatch_poll(struct mbatch *mb, struct mbgroup *g)
{
	if (g->done < g->n && !mb->broken) {
		mbatch_reap(mb);
		mbatch_fill(mb);
	}
	return g->done == g->n;
}

/*
 * Queue what the bound allows, wait for one completion (or more) and handle them all; a
 * ring that fails breaks the batch (every unfinished I/O gets the error). 0 or -errno.
 */
static int mbatch_wait_once(struct mbatch *mb)
{
	struct io_uring_cqe *cqe;
	int rc;

	if (mb->broken)
		return -EIO;
	mbatch_fill(mb);
	if (mb->broken)
		return -EIO;
	/* Entries a refused submit left in the ring go first, or nothing completes. */
	if (io_uring_sq_ready(&mb->ring)) {
		rc = member_ring_submit(&mb->ring, 0);
		if (rc < 0) {
			mbatch_break(mb, rc);
			return rc;
		}
	}
	do
		rc = io_uring_wait_cqe(&mb->ring, &cqe);
	while (rc == -EINTR);
	if (rc < 0) {
		mbatch_break(mb, rc);
		return rc;
	}
	mbatch_reap(mb);
	return 0;
}

int mbatch_wait(struct mbatch *mb, struct mbgroup *g)
{
	while (g->done < g->n) {
		int rc = mbatch_wait_once(mb);

		if (rc)
			return rc;
	}
	return 0;
}

int mbatch_wait_any(struct mbatch *mb)
{
	int rc;

	if (!mb->broken && !mb->nactive)
		return 0;
	rc = mbatch_wait_once(mb);
	if (rc == 0)
		mbatch_fill(mb);
	return rc;
}

int mbatch_run_on(struct mbatch *mb, struct mbio *ios, size_t n)
{
	struct mbgroup g;
	int rc = mbatch_start(mb, &g, ios, n);

	return rc ? rc : mbatch_wait(mb, &g);
}

void mbatch_close(struct mbatch *mb)
{
	if (!mb->open)
		return;
	while (mb->nactive && !mb->broken)
		mbatch_wait(mb, mb->active[0]);
	io_uring_queue_exit(&mb->ring);
	mb->open = false;
}
