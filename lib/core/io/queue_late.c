/* SPDX-License-Identifier: MIT */
/*
 * The array's I/O timeout, part two: giving up on a member I/O, and its late end.
 * io_uring cannot take back block I/O the kernel has begun, so "given up on" means: the
 * member is taken out (as for an error -ETIMEDOUT), the stripe operation goes on as if the
 * I/O had failed, and the I/O itself becomes late. A late read still owns its buffer (the
 * kernel may write it any time), so the buffer leaves the operation with it; the I/O's
 * record (the io_uring user_data) leaves its slot, which gets a fresh one, and lives until
 * the kernel ends the I/O. docs/ARRAYS.md ("A per-I/O timeout") has the rules.
 */
#include <stdlib.h>

#include "io/queue.h"
#include "io/queue_io.h"
#include "io/queue_late.h"
#include "io/queue_timeout.h"
#include "io/sop.h"
#include "meta/meta.h"

/* Give up on @p io (already out of the list) if the others can carry its stripe. */
void queue_give_up(struct graid_queue *q, struct mio *io)
{
	struct sop *s = io->sop;
	unsigned slot = io->slot;
	struct mio *fresh = calloc(1, sizeof(*fresh));
	bool counted;

	/*
	 * The record stays the kernel's (it is the io_uring user_data): the slot gets a fresh
	 * one, which later phases of the operation, with other meanings of the slot number
	 * (a role, a member), use as they would have. Without memory for it: waited for.
	 */
	if (!fresh)
		return;
	if (!array_member_timed_out(q->a, io->member, io->fault.fd, &counted)) {
		free(fresh);
		return; /* the last copy of something: waited for, the kernel's timeouts apply */
	}
	fresh->heap = true;
	s->mio[slot] = fresh;
	io->late = true;
	io->late_counted = counted;
	io->late_buf = NULL;
	if (!io->write) {
		/* The kernel may still write it: it goes with the I/O, the operation gets another. */
		io->late_buf = s->buf[slot];
		io->late_len = s->blen[slot];
		s->buf[slot] = NULL;
		s->own[slot] = false;
		io->copy_to = io->copy_from = NULL;
		s->read_failed = true;
	} else {
		s->write_fail++;
	}
	io->sop = NULL; /* the operation goes on, and may be recycled, without it */
	q->nlate++;
	q->ios_inflight--;
	if (--s->pending == 0)
		sop_io_done(q, s);
}

bool queue_late_done(struct graid_queue *q, struct mio *io, int res)
{
	struct member *m = &q->a->members[io->member];

	if (!io->late)
		return false;
	graid__log(GRAID_LOG_INFO, "member %u (%s): an I/O given up on after the timeout ended "
				   "(%s)", io->member, m->dev.path,
		   res < 0 ? graid_strerror(res) : "done");
	/* Its member is out: a write's new tags never take effect. */
	member_io_abandon(q->a, io->member, io->len, &io->fault);
	if (io->late_buf)
		queue_buf_put(q, io->late_buf, io->late_len);
	io->late_buf = NULL;
	if (io->late_counted)
		atomic_fetch_sub(&m->late_ios, 1);
	io->late = false;
	q->nlate--;
	/*
	 * A replacement record is nobody's now; one in an operation's own storage stays there
	 * unused (the slot has another), freed with the operation.
	 */
	if (io->heap)
		free(io);
	return true;
}
