/* SPDX-License-Identifier: MIT */
/* How a member zeroes a range without sending data (hole punch, Write Zeroes, deallocate). */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "io/discard.h"
#include "array/stats_count.h"
#include "io/queue.h"
#include "member/member_replace.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/meta.h"

static int discard_member_ring(struct graid_array *a, struct io_uring *ring, unsigned role,
			       uint64_t off, uint64_t len);

/*
 * A zero request that writes its zeroes reads them from one buffer per queue; each of its
 * stripe operations covers at most this much (at least one stripe, or one chunk on 1/10).
 */
size_t discard_zbuf_len(const struct graid_array *a)
{
	const struct layout *l = &a->lay;
	size_t unit = (l->level == 1 || l->level == 10) ? l->chunk : (size_t)l->chunk * l->ndata;

	return unit > (1u << 20) ? unit : (1u << 20);
}

/*
 * A member may zero by offload when what it then reads is zeroes for sure: a file (a hole)
 * or a block device (BLKZEROOUT: the kernel sends Write Zeroes, which the drive may serve
 * by deallocating, or writes zeroes). Not an NVMe generic device: its offload would be a
 * Dataset Management deallocate, which the NVMe specification makes advisory (a drive may
 * leave some blocks as they were, even with DLFEAT saying deallocated blocks read as
 * zeroes), and a region recorded unused over old bytes breaks parity unseen; those get
 * their zeroes written through the ordinary path. The write-hole journal wants every
 * in-place change logged first, so a journaled array always writes its zeroes.
 */
static bool discard_member_offloads(const struct member *m)
{
	return m->dev.fd >= 0 && !m->dev.nvme.passthru;
}

bool discard_can_offload(const struct graid_array *a)
{
	if (a->journal)
		return false;
	for (unsigned m = 0; m < a->nmembers; m++)
		if (array_role_writable(a, m) && !discard_member_offloads(&a->members[m]))
			return false;
	return true;
}

/*
 * Synchronous, in the queue's thread (deallocation costs a system call, not a transfer).
 * Injected faults apply as to a write of no bytes, so the fault and crash tests reach here.
 */
int discard_member(struct graid_queue *q, unsigned role, uint64_t off, uint64_t len)
{
	return discard_member_ring(q->a, &q->ring, role, off, len);
}

int discard_member_sync(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	return discard_member_ring(a, NULL, role, off, len);
}

/* @p ring: the caller's io_uring, whose queued entries go out before an injected kill. */
static int discard_member_do(struct graid_array *a, struct io_uring *ring, unsigned role,
			     uint64_t off, uint64_t len)
{
	struct member *m = &a->members[role];
	int fd = m->dev.fd, rc;

	/* Another host's array now (a drive refused a write of this one): nothing more. */
	if (array_foreign(a))
		return -ESTALE;
	if (m->dev.fault) {
		uint64_t stall = 0;

		switch (fault_decide(m->dev.fault, true, false, off, 0, &stall)) {
		case FAULT_KILL:
			/* As member_prep_io: what is queued reaches the members, this never does. */
			if (ring)
				io_uring_submit(ring);
			raise(SIGKILL);
			return -EIO;
		case FAULT_FAIL:
		case FAULT_TEAR:
			rc = -EIO;
			goto failed;
		case FAULT_CONFLICT:
			rc = -EBADE;
			goto failed;
		case FAULT_STALL: {
			struct timespec ts = { (time_t)(stall / 1000000000u),
					       (long)(stall % 1000000000u) };

			nanosleep(&ts, NULL);
			break;
		}
		default:
			break;
		}
	}
	/*
	 * A copy of the role under way: the new device first, as member_prep does, so that a
	 * swap after it leaves the zeroes there; the member then through one descriptor, the
	 * old device's or, once the swap passed, the new one's, never some pieces of each.
	 */
	if (replace_covers(a, role))
		replace_dup_zero(a, role, off, len);
	fd = m->dev.fd;
	if (m->dev.fault)
		fault_zero_stall(m->dev.fault);
	/* Hole punch on a file, BLKZEROOUT on a block device; writes zeroes if refused. */
	/*
	 * Zeroes or unknown bytes: nothing for a tag to hold against (tags are the role's).
	 * Forgotten first: a read racing the zeroing finds no tag, never a stale one.
	 */
	rc = a->tags ? tag_store_forget(a, role, off, len) : 0;
	if (rc == 0)
		rc = member_zero_range_fd(m, fd, a->data_offset + off, len);
	if (rc == 0)
		return 0;
failed:
	array_member_io_failed(a, role, fd, rc);
	return rc;
}

/* Counted as the member's discard, whichever way the member zeroed the range. */
static int discard_member_ring(struct graid_array *a, struct io_uring *ring, unsigned role,
			       uint64_t off, uint64_t len)
{
	uint64_t start = graid__now_ns(), slow_ms;
	int rc = discard_member_do(a, ring, role, off, len);

	slow_ms = stats_member(a, role, GRAID_IO_DISCARD, len, rc != 0, start);
	if (slow_ms)
		array_event(a, GRAID_EVENT_MEMBER_SLOW, (int)role, 0, 0, slow_ms);
	return rc;
}
