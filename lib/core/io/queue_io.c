/* SPDX-License-Identifier: MIT */
/*
 * What a stripe operation asks of its queue: buffers from the queue's cache, member I/O
 * prepared on the queue's ring (or done in place for members in memory), and its end
 * counted on its request. Below the stripe engine (sop*.c, stripe_log.c); the completions go
 * up through queue.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/lost_write_column.h"
#include "io/queue.h"
#include "io/queue_fixed.h"
#include "io/queue_io.h"
#include "io/queue_timeout.h"
#include "member/member_replace.h"
#include "meta/meta.h"

static unsigned queue_buf_class(size_t len)
{
	unsigned k = 0;

	while (k + 1 < QUEUE_BUF_CLASSES && ((size_t)ARRAY_ALIGN << k) < len)
		k++;
	return k;
}

/* Buffers are recycled per queue: the hot path allocates only while the cache warms up. */
uint8_t *queue_buf_get(struct graid_queue *q, size_t len)
{
	unsigned k = queue_buf_class(len);
	size_t cap = (size_t)ARRAY_ALIGN << k;
	void *p;

	if (cap >= len && q->nbufs[k])
		return q->bufs[k][--q->nbufs[k]];
	if (posix_memalign(&p, ARRAY_ALIGN, cap >= len ? cap : len))
		return NULL;
	return p;
}

void queue_buf_put(struct graid_queue *q, uint8_t *p, size_t len)
{
	unsigned k = queue_buf_class(len);

	if (((size_t)ARRAY_ALIGN << k) >= len && q->nbufs[k] < QUEUE_BUF_KEEP)
		q->bufs[k][q->nbufs[k]++] = p;
	else
		free(p);
}

/* Fill the slot's in-flight record; the ring entry is prepared by the caller. */
static struct mio *queue_mio(struct sop *s, unsigned slot, unsigned member, bool write,
			     size_t len, uint64_t off)
{
	struct mio *io = s->mio[slot];

	io->sop = s;
	io->off = write ? off : UINT64_MAX;
	io->slot = (uint16_t)slot;
	io->copy_to = io->copy_from = NULL;
	io->len = (uint32_t)len;
	io->member = (uint16_t)member;
	io->write = write;
	io->fault.unverified = false;
	io->fault.meta_in = write && s->wmeta_on ? s->wmeta : NULL;
	/* Unlocked reads (direct, mirror) may be overtaken by a write of the same blocks. */
	io->fault.racy = !write && !s->locked;
	return io;
}

static void queue_io_prepared(struct graid_queue *q, struct sop *s, struct mio *io,
			      const uint8_t *ptr)
{
	s->pending++;
	q->ios_inflight++;
	queue_timeout_track(q, io, ptr);
}

void queue_inline_setup(struct graid_queue *q)
{
	const char *env = getenv("GRAID_INLINE_IO");

	memset(q->inline_mask, 0, sizeof(q->inline_mask));
	q->inline_any = false;
	/* GRAID_INLINE_IO=0: everything through the ring (to measure what this buys). */
	if (env && strcmp(env, "0") == 0)
		return;
	for (unsigned m = 0; m < q->a->nmembers; m++)
		if (member_io_in_ram(&q->a->members[m])) {
			q->inline_mask[m / 8] |= (uint8_t)(1u << (m % 8));
			q->inline_any = true;
		}
}

/*
 * A member whose I/O this queue does in place. Checked again per I/O: a member replaced or
 * given fault injection since the mask was made goes through the ring.
 */
static bool queue_inline(const struct graid_queue *q, unsigned member)
{
	const struct member *m = &q->a->members[member];

	return q->inline_any && (q->inline_mask[member / 8] & (1u << (member % 8))) &&
	       !m->dev.fault && !m->dev.nvme.passthru && m->dev.fd >= 0;
}

/* array_read_current() for a read of this queue (a window of microseconds in use). */
static bool queue_read_current(const struct graid_queue *q, const struct mio *io,
			       uint64_t member_off)
{
	return array_read_current(q->a, io->member, io->fault.fd, member_off + io->len);
}

/*
 * Do the I/O now and keep its result for the next reap; false (nothing done) when there is
 * no room to keep it, and the caller goes through the ring instead.
 */
static bool queue_io_now(struct graid_queue *q, struct sop *s, struct mio *io, uint8_t *ptr,
			 const struct iovec *iov, unsigned iovcnt, uint64_t member_off)
{
	ssize_t n;

	if (q->ninl == q->inl_cap) {
		unsigned cap = q->inl_cap ? 2 * q->inl_cap : 64;
		struct queue_inline_done *p = realloc(q->inl, cap * sizeof(*p));

		if (!p)
			return false;
		q->inl = p;
		q->inl_cap = cap;
	}
	/* As member_prep: the tags first, then a copy of the role under way gets the write. */
	n = member_io_now_begin(q->a, io->member, io->write, ptr, io->len, iov, iovcnt,
				member_off, &io->fault);
	if (n == 0 && io->write && replace_covers(q->a, io->member))
		replace_dup_write(q->a, io->member, ptr, io->len, iov, iovcnt, member_off, false);
	io->fault.stale = n == 0 && !io->write && !queue_read_current(q, io, member_off);
	if (n == 0)
		n = io->fault.stale ? -ESTALE
				    : member_io_now(q->a, io->fault.fd, io->write, ptr, io->len,
						    iov, iovcnt, member_off);
	q->inl[q->ninl].io = io;
	q->inl[q->ninl++].res = n < 0 ? (int)n : (int)(n > (ssize_t)io->len ? -EIO : n);
	s->pending++;
	q->ios_inflight++;
	return true;
}

/* Words of meta on the stack for a write's generations; longer writes allocate. */
#define QUEUE_META_STACK 256u

/*
 * RAID-5/6 with generations (io/lost_write_column.h): the meta words of a data-area write of
 * @p s into @p stack or a new allocation (*@p heap), or NULL: the default, each block's next
 * generation, or (*@p err set, the failure logged) none: the write is to fail with *@p err.
 */
static uint32_t *queue_write_meta(struct graid_queue *q, struct sop *s, unsigned member,
				  uint64_t member_off, size_t len, uint32_t *stack, bool *heap,
				  int *err)
{
	uint32_t *meta = stack;
	int rc;

	*heap = false;
	*err = 0;
	if (!lwc_active(q->a) || s->dealloc || member_off >= q->a->lay.member_bytes)
		return NULL;
	if (len / 4096u > QUEUE_META_STACK) {
		meta = malloc(len / 4096u * sizeof(*meta));
		if (!meta) {
			*err = -ENOMEM;
			return NULL;
		}
		*heap = true;
	}
	rc = lwc_write_meta(q->a, s, member, member_off, (uint32_t)len, meta);
	if (rc == 0)
		return meta;
	/*
	 * -EOPNOTSUPP: a role with its tags in NVMe metadata, where no generation is kept.
	 * Else the write fails: one more on each block would break its column's record.
	 */
	if (rc != -EOPNOTSUPP) {
		graid__log(GRAID_LOG_ERR,
			   "member %u: the generations of a write at data-area byte %llu could "
			   "not be chosen: %s; the write fails",
			   member, (unsigned long long)member_off, graid_strerror(rc));
		*err = rc;
	}
	if (*heap)
		free(meta);
	*heap = false;
	return NULL;
}

/*
 * A RAID-5/6 write's meta words (queue_write_meta) on its fault record for its prep, which
 * consumes them; once the prep returned, whatever it left there (a prep that failed puts
 * them back) is taken off: @p meta may be on the caller's stack.
 */
static void queue_meta_give(struct mio *io, const uint32_t *meta, int err)
{
	if (meta || err) {
		io->fault.meta_in = meta;
		io->fault.meta_err = err;
	}
}

static void queue_meta_take_back(struct mio *io, const uint32_t *meta, int err)
{
	if (meta || err) {
		io->fault.meta_in = NULL;
		io->fault.meta_err = 0;
	}
}

static int queue_io_member(struct graid_queue *q, struct sop *s, unsigned slot,
			   unsigned member, bool write, uint8_t *ptr, size_t len,
			   uint64_t member_off, const uint32_t *meta, int meta_err);

int queue_io(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
	     bool write, uint8_t *ptr, size_t len, uint64_t member_off)
{
	uint32_t stack[QUEUE_META_STACK], *meta;
	bool heap;
	int rc, err;

	if (!write)
		return queue_io_member(q, s, slot, member, write, ptr, len, member_off, NULL, 0);
	meta = queue_write_meta(q, s, member, member_off, len, stack, &heap, &err);
	rc = queue_io_member(q, s, slot, member, write, ptr, len, member_off, meta, err);
	if (heap)
		free(meta);
	return rc;
}

static int queue_io_member(struct graid_queue *q, struct sop *s, unsigned slot,
			   unsigned member, bool write, uint8_t *ptr, size_t len,
			   uint64_t member_off, const uint32_t *meta, int meta_err)
{
	struct mio *io = queue_mio(s, slot, member, write, len, member_off);
	bool passthru = q->a->members[member].dev.nvme.passthru;
	int rc, index = -1;

	if (!write)
		array_test_before_read(q->a, member);
	if (s->req->kslot >= 0 && !write) {
		/*
		 * A kernel's buffer (graid_queue_read_fixed): by its slot, at the offset in it,
		 * or not at all. Only the request's own (fake) addresses: a read into the
		 * library's memory for such a request would be a plan that needs the data
		 * (sop.c ends those -EXDEV first), and is refused here too.
		 */
		uintptr_t at = (uintptr_t)ptr, from = (uintptr_t)s->req->buf;

		/* Pages this process cannot see cannot be checked against their tags. */
		if (q->a->tags)
			return -EXDEV;
		if (queue_inline(q, member) || (passthru && !q->fixed_cmd) || at < from ||
		    len > s->req->len || at - from > s->req->len - len)
			return -EXDEV;
		index = s->req->kslot;
		ptr = (uint8_t *)((uintptr_t)ptr - QUEUE_KSLOT_BIAS + q->slots[index].base);
	}
	queue_meta_give(io, meta, meta_err);
	if (index < 0 && queue_inline(q, member) &&
	    queue_io_now(q, s, io, ptr, NULL, 0, member_off)) {
		queue_meta_take_back(io, meta, meta_err);
		return 0;
	}
	if (index < 0 && q->nfixed)
		/* Straight into or out of the caller's registered memory: a fixed buffer. */
		index = queue_fixed_index(q, ptr, len, passthru);
	rc = member_prep_io_fixed(&q->ring, q->a, member, write, ptr, (unsigned)len, member_off,
				  index, io, &io->fault);
	queue_meta_take_back(io, meta, meta_err);
	/* Prepared, not yet submitted: a stale read still runs, but its bytes are dropped. */
	if (rc == 0 && !write)
		io->fault.stale = !queue_read_current(q, io, member_off);
	if (rc == 0)
		queue_io_prepared(q, s, io, ptr);
	return rc;
}

int queue_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		 const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t member_off)
{
	struct mio *io = queue_mio(s, slot, member, true, len, member_off);
	uint32_t stack[QUEUE_META_STACK], *meta;
	bool heap;
	int rc, err;

	meta = queue_write_meta(q, s, member, member_off, len, stack, &heap, &err);
	queue_meta_give(io, meta, err);
	if (queue_inline(q, member) && queue_io_now(q, s, io, NULL, iov, iovcnt, member_off))
		rc = 0;
	else if ((rc = member_prep_writev(&q->ring, q->a, member, iov, iovcnt, member_off, io,
					  &io->fault)) == 0)
		queue_io_prepared(q, s, io, NULL);
	queue_meta_take_back(io, meta, err);
	if (heap)
		free(meta);
	return rc;
}

int queue_log_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		     const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t pos)
{
	/* The journal's log, not the data area: it clears no bad block. */
	struct mio *io = queue_mio(s, slot, member, true, len, UINT64_MAX);
	int rc;

	io->off = UINT64_MAX;
	rc = member_prep_log_writev(&q->ring, q->a, member, iov, iovcnt, pos, io, &io->fault);
	if (rc == 0)
		queue_io_prepared(q, s, io, NULL);
	return rc;
}

/*
 * A member that keeps the old bytes while the other members get their part of the update
 * would be wrong beside them (a full ring only waits: member_ring_submit's patience ran out).
 */
bool queue_write_issued(struct graid_queue *q, unsigned member, int rc)
{
	if (rc)
		array_member_failed(q->a, member, -EAGAIN);
	return rc == 0;
}

void queue_sop_done(struct graid_queue *q, struct sop *s, int err)
{
	struct req *r = s->req;

	if (err && !r->err)
		r->err = err;
	r->sops_live--;
	q->nsops--;
	s->next = q->free_sops;
	q->free_sops = s;
}
