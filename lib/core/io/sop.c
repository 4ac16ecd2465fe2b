/* SPDX-License-Identifier: MIT */
/* Stripe operations: how one stripe of a read or write is planned, computed and written, per level. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/journal.h"
#include "meta/live.h"
#include "io/queue.h"
#include "meta/meta.h"
#include "meta/stripe_lock.h"

/* ---- geometry of one stripe operation ------------------------------------------------ */

static unsigned sop_nroles(const struct graid_layout *l)
{
	return l->ndata + l->nparity;
}

/* Member offset (inside the data area) of byte x of the stripe's chunks: RAID-0/5/6. */
static uint64_t sop_member_off(const struct graid_layout *l, uint64_t stripe, uint32_t x)
{
	return stripe * l->chunk + x;
}

/* The request's part in data chunk d of the stripe: [*ws, *we) inside the chunk. */
static bool sop_span(const struct graid_layout *l, const struct sop *s, unsigned d,
		     uint32_t *ws, uint32_t *we)
{
	uint64_t cs = (s->stripe * l->ndata + d) * (uint64_t)l->chunk;
	uint64_t a0 = s->arr_off, a1 = s->arr_off + s->arr_len;

	if (a1 <= cs || a0 >= cs + l->chunk)
		return false;
	*ws = a0 > cs ? (uint32_t)(a0 - cs) : 0;
	*we = a1 < cs + l->chunk ? (uint32_t)(a1 - cs) : l->chunk;
	return true;
}

/* The caller's memory for byte x of data chunk d. */
static uint8_t *sop_user(const struct graid_layout *l, const struct sop *s, unsigned d,
			 uint32_t x)
{
	uint64_t cs = (s->stripe * l->ndata + d) * (uint64_t)l->chunk;

	return s->req->buf + s->req_off + (cs + x - s->arr_off);
}

static bool sop_own_buf(struct graid_queue *q, struct sop *s, unsigned r, size_t len)
{
	s->buf[r] = queue_buf_get(q, len);
	s->own[r] = s->buf[r] != NULL;
	s->blen[r] = (uint32_t)len;
	return s->own[r];
}

static void sop_release_bufs(struct graid_queue *q, struct sop *s)
{
	for (unsigned r = 0; r < q->a->nmembers; r++) {
		if (s->own[r])
			queue_buf_put(q, s->buf[r], s->blen[r]);
		if (s->nbuf[r])
			queue_buf_put(q, s->nbuf[r], s->hi - s->lo);
		s->buf[r] = s->nbuf[r] = NULL;
		s->own[r] = false;
	}
}

/* The update's log space and entry headers go back (its in-place writes are over). */
static void sop_journal_release(struct graid_queue *q, struct sop *s)
{
	if (!s->jseq)
		return;
	journal_done(q->a, s->jseq);
	s->jseq = 0;
	for (unsigned m = 0; m < q->a->nmembers; m++)
		if (s->jhdr[m]) {
			queue_buf_put(q, s->jhdr[m], JOURNAL_BLOCK);
			s->jhdr[m] = NULL;
		}
}

static void sop_finish(struct graid_queue *q, struct sop *s, int err)
{
	for (unsigned j = 0; s->req->write && j < s->nrun; j++)
		bitmap_end_write(q->a, s->stripe + j);
	for (unsigned j = 0; s->req->write && !s->req->zero && j < s->nrun; j++)
		live_end_write(q->a, s->stripe + j);
	sop_journal_release(q, s);
	sop_release_bufs(q, s);
	if (s->locked) {
		stripe_unlock(q->a, s->bucket);
		s->locked = false;
	}
	for (unsigned j = 0; j < s->nlocked; j++)
		stripe_unlock(q->a, s->buckets[j]);
	s->nlocked = 0;
	queue_sop_done(q, s, err);
}

/* Issue one member I/O; a full submission ring is reported as a failure of the operation. */
static bool sop_io(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		   bool write, uint8_t *ptr, size_t len, uint64_t moff)
{
	return queue_io(q, s, slot, member, write, ptr, len, moff) == 0;
}

/*
 * A member write of a stripe update put on the ring (@p rc, from a queue_*() call): true.
 * One that could not be (the kernel refused the ring past member_ring_submit's patience; a
 * full ring only waits) takes its member out, since the other members get their part of
 * the update and it would keep the old one: false.
 */
static bool sop_write_issued(struct graid_queue *q, unsigned member, int rc)
{
	if (rc)
		array_member_failed(q->a, member, -EAGAIN);
	return rc == 0;
}

/* After issuing a phase's I/O: nothing issued means the phase is already complete. */
static void sop_wait_or_continue(struct graid_queue *q, struct sop *s)
{
	if (s->pending == 0)
		sop_io_done(q, s);
}

static void sop_xor(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;

		memcpy(&x, dst + i, 8);
		memcpy(&y, src + i, 8);
		x ^= y;
		memcpy(dst + i, &x, 8);
	}
	for (; i < n; i++)
		dst[i] ^= src[i];
}

static bool sop_is_bad(const struct sop *s, unsigned m)
{
	for (unsigned i = 0; i < s->nbad; i++)
		if (s->bad[i] == m)
			return true;
	return false;
}

bool sop_note_bad(struct sop *s, unsigned m)
{
	if (sop_is_bad(s, m))
		return true;
	if (s->nbad == sizeof(s->bad) / sizeof(s->bad[0]))
		return false;
	s->bad[s->nbad++] = m;
	return true;
}

/*
 * With an I/O timeout set, member reads go to the queue's buffers and are copied out: a
 * read given up on may still be written by the kernel, which must never be the caller's
 * memory after the call returned (queue_timeout.c).
 */
static bool sop_bounce_reads(const struct graid_queue *q)
{
	return atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed) != 0;
}

/* ---- RAID-1 and RAID-10: copies ------------------------------------------------------ */

static void sop_lock_and_plan(struct graid_queue *q, struct sop *s);
static void sop_note_repaired(struct graid_queue *q, struct sop *s);

/* The copy read has it: write it over each copy noted bad, still under the stripe lock. */
static void sop_mirror_repair(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = graid_layout_copies(l, s->arr_off, members, moff);
	const uint8_t *src = NULL;

	for (unsigned i = 0; i < n; i++)
		if (members[i] == s->mirror_src)
			src = s->buf[i];
	s->phase = SOP_WRITING;
	s->repairing = true;
	s->nwrites = 0;
	s->write_fail = 0;
	for (unsigned i = 0; src && i < n; i++) {
		if (!sop_is_bad(s, members[i]) || !array_role_writable(q->a, members[i]))
			continue;
		if (sop_io(q, s, i, members[i], true, (uint8_t *)src, s->arr_len, moff[i]))
			s->nwrites++;
		else
			s->write_fail++; /* ring unusable: the sector stays bad; a later read repairs it */
	}
	sop_wait_or_continue(q, s);
}

/*
 * RAID-1/10 read: one copy, spread over them by stripe. A copy that failed to read it, or
 * whose log records part of it, is noted bad and left out; the read then runs under the
 * stripe lock (no write may come between it and the write-back) into the queue's memory,
 * and the good copy is written over the bad ones (sop_mirror_repair).
 */
static void sop_mirror_read(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	unsigned members[GRAID_MAX_MEMBERS], alive[GRAID_MAX_MEMBERS], nalive = 0;
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = graid_layout_copies(l, s->arr_off, members, moff);
	uint8_t *user = s->req->buf + s->req_off;
	unsigned c;

	for (unsigned i = 0; i < n; i++) {
		if (!array_role_readable(q->a, members[i], moff[i] + s->arr_len) ||
		    sop_is_bad(s, members[i]))
			continue;
		if (badblocks_overlap(q->a, members[i], moff[i], s->arr_len)) {
			if (!sop_note_bad(s, members[i]))
				return sop_finish(q, s, -EIO);
			continue;
		}
		alive[nalive++] = i;
	}
	if (nalive == 0)
		return sop_finish(q, s, -EIO);
	if (s->nbad && !s->locked) {
		if (s->req->kslot >= 0)
			return sop_finish(q, s, -EXDEV); /* through the caller's own memory, then */
		return sop_lock_and_plan(q, s);
	}
	s->pending = 0;
	s->read_failed = false;
	s->plan = PLAN_MIRROR_READ;
	s->phase = SOP_READING;
	/* Spread reads over the copies; the stripe number keeps one request's choice stable. */
	c = alive[s->stripe % nalive];
	s->mirror_src = members[c];
	/* Slot c: a read of another copy after this one is given up on takes another slot. */
	if (!s->nbad && (s->req->kslot >= 0 || (queue_aligned(user) && !sop_bounce_reads(q)))) {
		if (!sop_io(q, s, c, members[c], false, user, s->arr_len, moff[c]))
			return sop_finish(q, s, s->req->kslot >= 0 ? -EXDEV : -EAGAIN);
		return;
	}
	if (!sop_own_buf(q, s, c, s->arr_len))
		return sop_finish(q, s, -ENOMEM);
	if (!sop_io(q, s, c, members[c], false, s->buf[c], s->arr_len, moff[c]))
		return sop_finish(q, s, -EAGAIN);
	s->mio[c]->copy_to = user;
	s->mio[c]->copy_from = s->buf[c];
}

/*
 * Under the stripe lock: a rebuild copying this chunk to a new member must not interleave
 * with the write, or the new member could keep the old data.
 */
static void sop_mirror_write_locked(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = graid_layout_copies(l, s->arr_off, members, moff);
	uint8_t *user = s->req->buf + s->req_off, *src = user;

	s->plan = PLAN_MIRROR_WRITE;
	s->phase = SOP_WRITING;
	s->nwrites = 0;
	s->write_fail = 0;
	if (!queue_aligned(user)) {
		if (!sop_own_buf(q, s, 0, s->arr_len))
			return sop_finish(q, s, -ENOMEM);
		memcpy(s->buf[0], user, s->arr_len);
		src = s->buf[0];
	}
	for (unsigned c = 0; c < n; c++) {
		if (!array_role_writable(q->a, members[c]))
			continue;
		if (sop_write_issued(q, members[c],
				     queue_io(q, s, c, members[c], true, src, s->arr_len, moff[c])))
			s->nwrites++;
	}
	if (s->nwrites == 0)
		return sop_finish(q, s, -EIO);
}

/* ---- discard and write-zeroes of whole stripes: members deallocate ------------------- */

/*
 * Every writable member zeroes its part of the stripes (chunks on RAID-1/10) without a data
 * transfer (discard.c). Parity of zeroes is zeroes, so P and Q are deallocated like the data,
 * and a member missing here reads back as zeroes through them. Runs under the stripe locks a
 * write takes (none on RAID-0), after the bitmap was marked: a crash in the middle leaves
 * each block old or zero, and the resync makes parity agree.
 */
static void sop_dealloc_locked(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	const bool mirror = l->level == 1 || l->level == 10;
	struct graid_array *a = q->a;
	unsigned members[GRAID_MAX_MEMBERS], n = a->nmembers, nok = 0, nfail = 0;
	uint64_t moff[GRAID_MAX_MEMBERS], len = (uint64_t)s->nrun * l->chunk;

	s->phase = SOP_WRITING;
	if (mirror) {
		n = graid_layout_copies(l, s->arr_off, members, moff);
		len = s->arr_len;
	} else {
		for (unsigned m = 0; m < n; m++) {
			members[m] = m;
			moff[m] = sop_member_off(l, s->stripe, 0);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		int fd = a->members[members[i]].fd;

		if (!array_role_writable(a, members[i])) {
			nfail++;
		} else if (discard_member(q, members[i], moff[i], len)) {
			nfail++;
		} else {
			nok++;
			/* Zeroes on every member: consistent, and valid data again. */
			badblocks_clear(a, members[i], fd, moff[i], len);
		}
	}
	/* A drive refused it for another host's reservation: not ours to acknowledge. */
	if (array_foreign(a))
		return sop_finish(q, s, -ESTALE);
	if (mirror)
		return sop_finish(q, s, nok && !atomic_load(&a->broken) ? 0 : -EIO);
	if (l->nparity == 0)
		return sop_finish(q, s, nfail ? -EIO : 0);
	sop_finish(q, s, atomic_load(&a->broken) ? -EIO : 0);
}

/* ---- RAID-0/5/6: reads and writes that need no stripe lock ---------------------------- */

static void sop_direct_read(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	const bool bounce = sop_bounce_reads(q);
	uint32_t ws, we;

	s->plan = PLAN_DIRECT_READ;
	s->phase = SOP_READING;
	for (unsigned d = 0; d < l->ndata; d++) {
		uint8_t *dst;
		unsigned m;

		if (!sop_span(l, s, d, &ws, &we))
			continue;
		dst = sop_user(l, s, d, ws);
		m = graid_layout_data_member(l, s->stripe, d);
		if (s->req->kslot >= 0 || (queue_aligned(dst) && !bounce)) {
			if (!sop_io(q, s, d, m, false, dst, we - ws, sop_member_off(l, s->stripe, ws)))
				s->read_failed = true;
			if (s->read_failed && s->req->kslot >= 0)
				break; /* it ends -EXDEV: the other chunks would be read for nothing */
			continue;
		}
		if (!sop_own_buf(q, s, d, we - ws) ||
		    !sop_io(q, s, d, m, false, s->buf[d], we - ws,
			    sop_member_off(l, s->stripe, ws))) {
			s->read_failed = true;
			continue;
		}
		s->mio[d]->copy_to = dst;
		s->mio[d]->copy_from = s->buf[d];
	}
	sop_wait_or_continue(q, s);
}

static void sop_direct_write(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint32_t ws, we;

	s->plan = PLAN_DIRECT_WRITE;
	s->phase = SOP_WRITING;
	for (unsigned d = 0; d < l->ndata; d++) {
		uint8_t *src;

		if (!sop_span(l, s, d, &ws, &we))
			continue;
		src = sop_user(l, s, d, ws);
		if (!queue_aligned(src)) {
			if (!sop_own_buf(q, s, d, we - ws)) {
				s->write_fail++;
				continue;
			}
			memcpy(s->buf[d], src, we - ws);
			src = s->buf[d];
		}
		if (!sop_io(q, s, d, graid_layout_data_member(l, s->stripe, d), true, src,
			    we - ws, sop_member_off(l, s->stripe, ws)))
			s->write_fail++;
	}
	sop_wait_or_continue(q, s);
}

/* ---- RAID-5/6 under the stripe lock ---------------------------------------------------- */

static void sop_plan_locked(struct graid_queue *q, struct sop *s);

static void sop_lock_and_plan(struct graid_queue *q, struct sop *s)
{
	s->phase = SOP_PARKED;
	if (!stripe_trylock(q->a, s->stripe, &s->bucket)) {
		s->next = q->parked;
		q->parked = s;
		return;
	}
	s->locked = true;
	sop_plan_locked(q, s);
}

static bool sop_run_trylock(struct graid_queue *q, struct sop *s);
static void sop_run_plan(struct graid_queue *q, struct sop *s);

static bool sop_journal_try(struct graid_queue *q, struct sop *s);

bool sop_try_unpark(struct graid_queue *q, struct sop *s)
{
	if (s->phase == SOP_JOURNAL_WAIT)
		return sop_journal_try(q, s);
	if (s->nrun > 1) {
		if (!sop_run_trylock(q, s))
			return false;
		if (s->plan == PLAN_DEALLOC)
			sop_dealloc_locked(q, s);
		else
			sop_run_plan(q, s);
		return true;
	}
	if (!stripe_trylock(q->a, s->stripe, &s->bucket))
		return false;
	s->locked = true;
	sop_plan_locked(q, s);
	return true;
}

/*
 * All of a run's stripe locks or none: a run never waits holding some, so it cannot
 * deadlock with anything (stripes of one run may share a bucket: taken once).
 */
static bool sop_run_trylock(struct graid_queue *q, struct sop *s)
{
	s->nlocked = 0;
	for (unsigned j = 0; j < s->nrun; j++) {
		unsigned b = stripe_bucket(s->stripe + j), got;
		bool held = false;

		for (unsigned k = 0; k < s->nlocked; k++)
			held |= s->buckets[k] == b;
		if (held)
			continue;
		if (!stripe_trylock(q->a, s->stripe + j, &got)) {
			for (unsigned k = 0; k < s->nlocked; k++)
				stripe_unlock(q->a, s->buckets[k]);
			s->nlocked = 0;
			return false;
		}
		s->buckets[s->nlocked++] = got;
	}
	return true;
}

/* Whole stripes need no reads: parity from the caller's data, straight to the batch. */
static void sop_run_plan(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint8_t *user = s->req->buf + s->req_off;
	size_t data = (size_t)s->nrun * l->ndata * l->chunk;

	s->lo = 0;
	s->hi = l->chunk;
	for (unsigned p = 0; p < l->nparity; p++)
		if (!sop_own_buf(q, s, l->ndata + p, (size_t)s->nrun * l->chunk))
			return sop_finish(q, s, -ENOMEM);
	if (!queue_aligned(user)) {
		if (!sop_own_buf(q, s, 0, data))
			return sop_finish(q, s, -ENOMEM);
		memcpy(s->buf[0], user, data);
	}
	s->phase = SOP_COMPUTE;
	s->next = q->gen_list;
	q->gen_list = s;
}

static void sop_run_start(struct graid_queue *q, struct sop *s)
{
	if (!s->dealloc)
		s->plan = PLAN_RUN;
	s->phase = SOP_PARKED;
	if (!sop_run_trylock(q, s)) {
		s->next = q->parked;
		q->parked = s;
		return;
	}
	if (s->dealloc)
		return sop_dealloc_locked(q, s);
	sop_run_plan(q, s);
}

/* Whole stripes of a discard: RAID-0 goes at once, the others under their stripe locks. */
static void sop_dealloc_start(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;

	s->plan = PLAN_DEALLOC;
	if (l->nparity == 0 && l->level != 1 && l->level != 10)
		return sop_dealloc_locked(q, s);
	if (s->nrun > 1)
		return sop_run_start(q, s);
	sop_lock_and_plan(q, s);
}

/* The chunk range [lo, hi) the stripe work covers: the union of the request's parts. */
static void sop_range(const struct graid_layout *l, struct sop *s)
{
	uint32_t ws, we;

	s->lo = l->chunk;
	s->hi = 0;
	for (unsigned d = 0; d < l->ndata; d++)
		if (sop_span(l, s, d, &ws, &we)) {
			if (ws < s->lo)
				s->lo = ws;
			if (we > s->hi)
				s->hi = we;
		}
}

static bool sop_read_role(struct graid_queue *q, struct sop *s, unsigned r)
{
	const struct graid_layout *l = &q->a->lay;

	return sop_own_buf(q, s, r, s->hi - s->lo) &&
	       sop_io(q, s, r, graid_layout_role_member(l, s->stripe, r), false, s->buf[r],
		      s->hi - s->lo, sop_member_off(l, s->stripe, s->lo));
}

/* Data role @p d is written over all of [lo, hi) by this request. */
static bool sop_covers(const struct graid_layout *l, const struct sop *s, unsigned d)
{
	uint32_t ws, we;

	return sop_span(l, s, d, &ws, &we) && ws == s->lo && we == s->hi;
}

/* How a stripe whose lost roles are more than parity covers may still be written. */
enum sop_past_parity {
	SOP_PAST_NONE,     /* not past parity: s->lost holds the lost roles */
	SOP_PAST_RCW,      /* every lost data chunk is rewritten whole: RCW reads none of them */
	SOP_PAST_RMW,      /* no lost role is written or parity: RMW reads none of them */
	SOP_PAST_REFUSED,  /* no plan can do without them: -EIO */
};

/*
 * The roles this operation cannot read over [lo, hi) into s->lost: out of the array, or
 * noted bad (a media error, or records in the member's bad-block log). Past parity, a
 * write may still go where it needs none of them: every lost block it writes is written
 * anew (which clears its records), and parity stays true to the data it cannot see.
 */
static enum sop_past_parity sop_lost_roles(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	const uint64_t off = s->stripe * l->chunk + s->lo;
	unsigned lost[GRAID_MAX_MEMBERS], n = 0;
	bool covered = s->req->write, untouched = s->req->write;
	uint32_t ws, we;

	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = graid_layout_role_member(l, s->stripe, r);

		if (badblocks_overlap(q->a, m, off, s->hi - s->lo) && !sop_note_bad(s, m))
			return SOP_PAST_REFUSED;
		if (array_role_readable(q->a, m, (s->stripe + 1) * l->chunk) && !sop_is_bad(s, m))
			continue;
		lost[n++] = r;
		covered = covered && (r >= l->ndata || sop_covers(l, s, r));
		untouched = untouched && r < l->ndata && !sop_span(l, s, r, &ws, &we);
	}
	if (n <= l->nparity) {
		s->nlost = n;
		memcpy(s->lost, lost, n * sizeof(*lost));
		return SOP_PAST_NONE;
	}
	s->nlost = 0;
	return covered ? SOP_PAST_RCW : untouched ? SOP_PAST_RMW : SOP_PAST_REFUSED;
}

/*
 * Choose how to update the stripe, and issue its reads. Reconstruct-write reads the data
 * chunks the write does not cover; read-modify-write reads the chunks it covers and the
 * parity: whichever reads fewer chunks wins, reconstruct-write on a tie (no difference math).
 * With any role lost, every survivor is read and the lost roles are recovered first.
 */
static void sop_plan_locked(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	const unsigned nroles = sop_nroles(l);
	unsigned rcw_reads = 0, rmw_reads = l->nparity;
	enum sop_past_parity past;
	uint32_t ws, we;
	bool ok = true;

	s->pending = 0;
	s->read_failed = false;
	s->write_fail = 0;
	s->err = 0;
	s->nlost = 0;
	if (s->plan == PLAN_DEALLOC)
		return sop_dealloc_locked(q, s);
	if (l->level == 1 || l->level == 10)
		return s->req->write ? sop_mirror_write_locked(q, s) : sop_mirror_read(q, s);
	past = sop_lost_roles(q, s);
	if (past == SOP_PAST_REFUSED)
		return sop_finish(q, s, -EIO);
	s->phase = SOP_READING;
	if (past == SOP_PAST_RCW) {
		rmw_reads = UINT_MAX;
	} else if (past == SOP_PAST_RMW) {
		rmw_reads = 0;
		rcw_reads = UINT_MAX;
	} else if (s->nlost || !s->req->write) {
		s->plan = PLAN_DEGRADED;
		for (unsigned r = 0; ok && r < nroles; r++) {
			bool lost = (s->nlost > 0 && s->lost[0] == r) ||
				    (s->nlost > 1 && s->lost[1] == r);

			ok = lost ? sop_own_buf(q, s, r, s->hi - s->lo) : sop_read_role(q, s, r);
		}
		if (!ok)
			s->err = -ENOMEM;
		return sop_wait_or_continue(q, s);
	}
	for (unsigned d = 0; past == SOP_PAST_NONE && d < l->ndata; d++) {
		bool touched = sop_span(l, s, d, &ws, &we);

		rcw_reads += !(touched && ws == s->lo && we == s->hi);
		rmw_reads += touched;
	}
	if (rmw_reads < rcw_reads) {
		s->plan = PLAN_RMW;
		for (unsigned d = 0; ok && d < l->ndata; d++) {
			if (sop_span(l, s, d, &ws, &we))
				ok = sop_read_role(q, s, d);
			else
				s->buf[d] = q->zero; /* an untouched chunk's difference is zero */
		}
		for (unsigned p = 0; ok && p < l->nparity; p++)
			ok = sop_read_role(q, s, l->ndata + p) &&
			     (s->nbuf[l->ndata + p] = queue_buf_get(q, s->hi - s->lo)) != NULL;
	} else {
		s->plan = PLAN_RCW;
		for (unsigned d = 0; ok && d < l->ndata; d++) {
			bool touched = sop_span(l, s, d, &ws, &we);
			uint8_t *user = touched ? sop_user(l, s, d, s->lo) : NULL;

			if (!(touched && ws == s->lo && we == s->hi))
				ok = sop_read_role(q, s, d);
			else if (queue_aligned(user))
				s->buf[d] = user; /* fully rewritten: parity straight from the caller */
			else if ((ok = sop_own_buf(q, s, d, s->hi - s->lo)))
				memcpy(s->buf[d], user, s->hi - s->lo);
		}
		for (unsigned p = 0; ok && p < l->nparity; p++)
			ok = sop_own_buf(q, s, l->ndata + p, s->hi - s->lo);
	}
	if (!ok)
		s->err = -ENOMEM;
	sop_wait_or_continue(q, s);
}

/* Put the caller's new data of every written chunk over the chunk's range buffer. */
static void sop_overlay(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint32_t ws, we;

	for (unsigned d = 0; d < l->ndata; d++)
		if (sop_span(l, s, d, &ws, &we) && s->buf[d] != sop_user(l, s, d, ws))
			memcpy(s->buf[d] + (ws - s->lo), sop_user(l, s, d, ws), we - ws);
}

/* RMW: turn old data into old ^ new over the written part, zero elsewhere. */
static bool sop_make_deltas(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint32_t ws, we;

	for (unsigned d = 0; d < l->ndata; d++) {
		uint8_t *b = s->buf[d];
		uint8_t *user;

		if (!sop_span(l, s, d, &ws, &we))
			continue;
		user = sop_user(l, s, d, ws);
		memset(b, 0, ws - s->lo);
		memset(b + (we - s->lo), 0, s->hi - we);
		sop_xor(b + (ws - s->lo), user, we - ws);
		if (!queue_aligned(user)) {
			/* The member write needs aligned memory: keep a copy of the new data. */
			s->nbuf[d] = queue_buf_get(q, s->hi - s->lo);
			if (!s->nbuf[d])
				return false;
			memcpy(s->nbuf[d] + (ws - s->lo), user, we - ws);
		}
	}
	return true;
}

/*
 * Reads are done: compute. Recovery and generation wait on the queue's lists to be
 * batched (sop_compute_batch); a degraded write goes from recovery on to generation.
 */
static void sop_compute(struct graid_queue *q, struct sop *s)
{
	s->phase = SOP_COMPUTE;
	if (s->plan == PLAN_DEGRADED) {
		s->next = q->rec_list;
		q->rec_list = s;
		return;
	}
	if (s->plan == PLAN_RCW)
		sop_overlay(q, s);
	else if (!sop_make_deltas(q, s))
		return sop_finish(q, s, -ENOMEM);
	s->next = q->gen_list;
	q->gen_list = s;
}

/* A run's stripe j: the caller's data (or its bounce copy) and slices of the parity buffers. */
static uint8_t *sop_run_chunk(const struct graid_layout *l, const struct sop *s, unsigned j,
			      unsigned role)
{
	if (role >= l->ndata)
		return s->buf[role] + (size_t)j * l->chunk;
	if (s->own[0])
		return s->buf[0] + ((size_t)j * l->ndata + role) * l->chunk;
	return s->req->buf + s->req_off + ((size_t)j * l->ndata + role) * l->chunk;
}

/* The blocks generation runs over: the stripe itself, or (RMW) the differences. */
static void sop_gen_ptrs(const struct graid_layout *l, struct sop *s, uint8_t **out)
{
	if (s->plan == PLAN_RUN) {
		for (unsigned j = 0; j < s->nrun; j++)
			for (unsigned r = 0; r < sop_nroles(l); r++)
				out[j * sop_nroles(l) + r] = sop_run_chunk(l, s, j, r);
		return;
	}
	for (unsigned r = 0; r < sop_nroles(l); r++)
		out[r] = (s->plan == PLAN_RMW && r >= l->ndata) ? s->nbuf[r] : s->buf[r];
}

/* Member m's part of every row of the run, in member order: s->nrun chunks. */
static struct iovec *sop_run_iov(const struct graid_layout *l, struct sop *s, unsigned m)
{
	struct iovec *iov = s->iov + (size_t)m * SOP_RUN_MAX;

	for (unsigned j = 0; j < s->nrun; j++) {
		iov[j].iov_base = sop_run_chunk(l, s, j, graid_layout_member_role(l, s->stripe + j, m));
		iov[j].iov_len = l->chunk;
	}
	return iov;
}

/* One vectored write per live member covering all the run's rows. */
static void sop_run_write(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;

	s->phase = SOP_WRITING;
	s->nwrites = 0;
	for (unsigned m = 0; m < q->a->nmembers; m++) {
		struct iovec *iov;

		if (!array_role_writable(q->a, m))
			continue;
		iov = sop_run_iov(l, s, m);
		if (sop_write_issued(q, m, queue_writev(q, s, m, m, iov, s->nrun,
							(size_t)s->nrun * l->chunk,
							sop_member_off(l, s->stripe, 0))))
			s->nwrites++;
		else
			s->write_fail++;
	}
	sop_wait_or_continue(q, s);
}

/* What role r of a single-stripe update writes, and where in its chunk; false: nothing. */
static bool sop_role_write(const struct graid_layout *l, struct sop *s, unsigned r,
			   uint8_t **src, uint32_t *len, uint32_t *at)
{
	uint32_t ws, we;

	/* A member that could not read its range gets all of it: the drive remaps it. */
	if (r >= l->ndata || (s->plan == PLAN_DEGRADED &&
			      sop_is_bad(s, graid_layout_role_member(l, s->stripe, r)))) {
		*at = s->lo;
		*len = s->hi - s->lo;
		*src = s->buf[r];
		return true;
	}
	if (!sop_span(l, s, r, &ws, &we))
		return false;
	*at = ws;
	*len = we - ws;
	if (s->plan != PLAN_RMW)
		*src = s->buf[r] + (ws - s->lo);
	else if (s->nbuf[r])
		*src = s->nbuf[r] + (ws - s->lo);
	else
		*src = sop_user(l, s, r, ws);
	return true;
}

static void sop_write_in_place(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;

	if (s->plan == PLAN_RUN)
		return sop_run_write(q, s);
	s->phase = SOP_WRITING;
	s->nwrites = 0;
	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = graid_layout_role_member(l, s->stripe, r);
		uint8_t *src;
		uint32_t len, at;

		if (!array_role_writable(q->a, m) || !sop_role_write(l, s, r, &src, &len, &at))
			continue;
		if (sop_write_issued(q, m, queue_io(q, s, r, m, true, src, len,
						    sop_member_off(l, s->stripe, at))))
			s->nwrites++;
		else
			s->write_fail++;
	}
	sop_wait_or_continue(q, s);
}

/* ---- the write-hole journal: every member logs its new bytes before any in-place write --- */

/* Payload of member m's entry in jiov[1..]; returns the piece count (0: m writes nothing). */
static unsigned sop_journal_payload(struct graid_queue *q, struct sop *s, unsigned m,
				    uint64_t *member_off)
{
	const struct graid_layout *l = &q->a->lay;
	struct iovec *jiov = s->jiov + (size_t)m * (SOP_RUN_MAX + 1);
	uint8_t *src;
	uint32_t len, at;
	unsigned r;

	if (!array_role_writable(q->a, m))
		return 0;
	if (s->plan == PLAN_RUN) {
		memcpy(jiov + 1, sop_run_iov(l, s, m), s->nrun * sizeof(*jiov));
		*member_off = sop_member_off(l, s->stripe, 0);
		return s->nrun;
	}
	r = graid_layout_member_role(l, s->stripe, m);
	if (r >= sop_nroles(l) || !sop_role_write(l, s, r, &src, &len, &at))
		return 0;
	jiov[1].iov_base = src;
	jiov[1].iov_len = len;
	*member_off = sop_member_off(l, s->stripe, at);
	return 1;
}

/* Claim log space and write every entry; false: no space yet (the caller parks it). */
static bool sop_journal_try(struct graid_queue *q, struct sop *s)
{
	struct graid_array *a = q->a;
	uint32_t len[GRAID_MAX_MEMBERS];
	uint64_t off[GRAID_MAX_MEMBERS];
	unsigned cnt[GRAID_MAX_MEMBERS];
	uint8_t participants[32] = { 0 };
	struct journal_claim c = { .pos = s->jpos };
	bool all_writable = true;
	int rc;

	if (atomic_load(&a->broken)) {
		sop_finish(q, s, -EIO);
		return true;
	}
	for (unsigned m = 0; m < a->nmembers; m++)
		all_writable &= array_role_writable(a, m);
	if (!all_writable) {
		/*
		 * A member left out of this update may have failed just now: its failure must be
		 * on disk (array_member_failed writes it under meta_lock) before anything is
		 * written without it, or a crash would bring it back beside parity that skipped it.
		 */
		pthread_mutex_lock(&a->meta_lock);
		pthread_mutex_unlock(&a->meta_lock);
	}
	for (unsigned m = 0; m < a->nmembers; m++) {
		struct iovec *jiov = s->jiov + (size_t)m * (SOP_RUN_MAX + 1);

		len[m] = 0;
		cnt[m] = sop_journal_payload(q, s, m, &off[m]);
		for (unsigned i = 1; i <= cnt[m]; i++)
			len[m] += (uint32_t)jiov[i].iov_len;
	}
	rc = journal_claim(a, len, &c);
	if (rc == -EAGAIN)
		return false;
	if (rc) {
		sop_finish(q, s, rc);
		return true;
	}
	s->jseq = c.seq;
	for (unsigned m = 0; m < a->nmembers; m++)
		if (s->jpos[m])
			participants[m / 8] |= (uint8_t)(1u << (m % 8));
	s->phase = SOP_LOGGING;
	for (unsigned m = 0; m < a->nmembers; m++) {
		struct iovec *jiov = s->jiov + (size_t)m * (SOP_RUN_MAX + 1);

		if (!s->jpos[m])
			continue;
		s->jhdr[m] = queue_buf_get(q, JOURNAL_BLOCK);
		if (!s->jhdr[m]) {
			s->err = -ENOMEM;
			break;
		}
		journal_fill_header(a, s->jhdr[m], s->jseq, m, off[m], jiov + 1, cnt[m],
				    participants);
		jiov[0].iov_base = s->jhdr[m];
		jiov[0].iov_len = JOURNAL_BLOCK;
		/* An entry missing: its member must leave before anyone writes in place. */
		if (!sop_write_issued(q, m, queue_log_writev(q, s, m, m, jiov, cnt[m] + 1,
							     JOURNAL_BLOCK + len[m], s->jpos[m])))
			s->write_fail++;
	}
	sop_wait_or_continue(q, s);
	return true;
}

static void sop_write_phase(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;

	if (s->plan == PLAN_RMW)
		for (unsigned p = l->ndata; p < sop_nroles(l); p++)
			sop_xor(s->buf[p], s->nbuf[p], s->hi - s->lo);
	if (!q->a->journal)
		return sop_write_in_place(q, s);
	if (!sop_journal_try(q, s)) {
		s->phase = SOP_JOURNAL_WAIT;
		s->next = q->parked;
		q->parked = s;
	}
}

/* Room for n stripes' block pointers in the queue's scratch; false: out of memory. */
static bool sop_batch_room(struct graid_queue *q, size_t n)
{
	const size_t want = n * sop_nroles(&q->a->lay);
	uint8_t **p;

	if (q->batch_cap >= want)
		return true;
	p = realloc(q->batch_ptrs, want * sizeof(*p));
	if (!p)
		return false;
	q->batch_ptrs = p;
	q->batch_cap = want;
	return true;
}

/* Two degraded operations share one recovery call: same range length, same lost roles. */
static bool sop_same_loss(const struct sop *a, const struct sop *b)
{
	return a->hi - a->lo == b->hi - b->lo && a->nlost == b->nlost &&
	       (a->nlost < 1 || a->lost[0] == b->lost[0]) &&
	       (a->nlost < 2 || a->lost[1] == b->lost[1]);
}

/*
 * A read met media errors: its members' ranges were recovered with the rest; write them
 * back (under the stripe lock still held) so the drives remap the sectors. A repair write
 * that fails takes its member out like any write error.
 */
static void sop_repair_write(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;

	s->phase = SOP_WRITING;
	s->repairing = true;
	s->nwrites = 0;
	s->write_fail = 0;
	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = graid_layout_role_member(l, s->stripe, r);

		if (!sop_is_bad(s, m) || !array_role_writable(q->a, m))
			continue;
		if (sop_io(q, s, r, m, true, s->buf[r], s->hi - s->lo,
			   sop_member_off(l, s->stripe, s->lo)))
			s->nwrites++;
		else
			s->write_fail++; /* ring full: the sector stays bad; a later read repairs it */
	}
	sop_wait_or_continue(q, s);
}

/* Recovered: a read copies its part out and is done; a write goes on to generation. */
static void sop_recovered(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint32_t ws, we;

	if (!s->req->write) {
		for (unsigned d = 0; d < l->ndata; d++)
			if (sop_span(l, s, d, &ws, &we))
				memcpy(sop_user(l, s, d, ws), s->buf[d] + (ws - s->lo), we - ws);
		/* A read-only handle writes nothing back: the drive keeps the sector for later. */
		if (s->nbad && !q->a->read_only)
			return sop_repair_write(q, s);
		return sop_finish(q, s, 0);
	}
	sop_overlay(q, s);
	s->next = q->gen_list;
	q->gen_list = s;
}

/*
 * One engine call for every degraded operation waiting with the same loss pattern and
 * range length (lost roles are stripe-relative, so stripes with the same rotation of the
 * failed members share a call). The lost roles come out in role order (sop_plan_locked),
 * so equal patterns compare equal element by element.
 */
/*
 * Unlink from @p list every operation @p same puts with the list's head (the head too) and
 * return them as one group: the stripes one engine call serves.
 */
static struct sop *sop_take_group(struct sop **list,
				  bool (*same)(const struct sop *, const struct sop *))
{
	struct sop *group = NULL, *head = *list, **pp = list;

	while (*pp) {
		struct sop *s = *pp;

		if (same(s, head)) {
			*pp = s->next;
			s->next = group;
			group = s;
		} else {
			pp = &s->next;
		}
	}
	return group;
}

/* After a group's engine call: each operation fails with @p rc, or goes on to @p next. */
static void sop_group_done(struct graid_queue *q, struct sop *group, int rc,
			   void (*next)(struct graid_queue *, struct sop *))
{
	while (group) {
		struct sop *s = group;

		group = s->next;
		if (rc)
			sop_finish(q, s, rc);
		else
			next(q, s);
	}
}

static void sop_recover_batch(struct graid_queue *q)
{
	const struct graid_layout *l = &q->a->lay;
	const unsigned nroles = sop_nroles(l);

	while (q->rec_list) {
		struct sop *group = sop_take_group(&q->rec_list, sop_same_loss);
		size_t n = 0;
		int rc = 0;

		for (struct sop *s = group; s; s = s->next)
			n++;
		if (!sop_batch_room(q, n)) {
			rc = -ENOMEM;
		} else if (group->nlost) {
			n = 0;
			for (struct sop *s = group; s; s = s->next, n++)
				memcpy(q->batch_ptrs + n * nroles, s->buf, nroles * sizeof(*s->buf));
			rc = graid_parity_recover(q->a->be, l->ndata, l->nparity,
						  group->hi - group->lo, n, q->batch_ptrs,
						  group->nlost, group->lost);
		}
		sop_group_done(q, group, rc, sop_recovered);
	}
}

static bool sop_same_len(const struct sop *a, const struct sop *b)
{
	return a->hi - a->lo == b->hi - b->lo;
}

/* One engine call for every stripe waiting with the same range length. */
void sop_compute_batch(struct graid_queue *q)
{
	const struct graid_layout *l = &q->a->lay;
	const unsigned nroles = sop_nroles(l);

	sop_recover_batch(q);
	while (q->gen_list) {
		struct sop *group = sop_take_group(&q->gen_list, sop_same_len);
		uint32_t len = group->hi - group->lo;
		size_t n = 0;
		int rc;

		for (struct sop *s = group; s; s = s->next)
			n += s->nrun;
		if (!sop_batch_room(q, n)) {
			rc = -ENOMEM;
		} else {
			n = 0;
			for (struct sop *s = group; s; s = s->next) {
				sop_gen_ptrs(l, s, q->batch_ptrs + nroles * n);
				n += s->nrun;
			}
			rc = graid_parity_gen(q->a->be, l->ndata, l->nparity, len, n, q->batch_ptrs);
		}
		sop_group_done(q, group, rc, sop_write_phase);
	}
}

/* ---- driving ------------------------------------------------------------------------ */

void sop_start(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	uint32_t ws, we;
	bool all_alive = true;
	int mark_err = 0;

	s->pending = 0;
	s->read_failed = false;
	s->repairing = false;
	s->nbad = 0;
	s->write_fail = 0;
	s->err = 0;
	s->locked = false;
	s->nlocked = 0;
	s->jseq = 0;
	/* A recycled operation must not keep its last plan: parking and unparking read it. */
	s->plan = PLAN_RCW;
	/*
	 * The region is marked dirty on disk before any member sees this write, and data (not
	 * zeroes) marks its region used, durably. A mark no member took fails the write before
	 * any member sees it (each start is ended by sop_finish all the same).
	 */
	for (unsigned j = 0; s->req->write && j < s->nrun; j++) {
		int rc = bitmap_start_write(q->a, s->stripe + j);

		mark_err = mark_err ? mark_err : rc;
	}
	for (unsigned j = 0; s->req->write && !s->req->zero && j < s->nrun; j++) {
		int rc = live_start_write(q->a, s->stripe + j);

		mark_err = mark_err ? mark_err : rc;
	}
	if (mark_err || atomic_load(&q->a->broken))
		return sop_finish(q, s, mark_err ? mark_err : -EIO);
	if (s->dealloc)
		return sop_dealloc_start(q, s);
	if (s->nrun > 1)
		return sop_run_start(q, s);
	if (l->level == 1 || l->level == 10)
		return s->req->write ? sop_lock_and_plan(q, s) : sop_mirror_read(q, s);
	sop_range(l, s);
	for (unsigned d = 0; d < l->ndata; d++) {
		unsigned m = graid_layout_data_member(l, s->stripe, d);

		if (!sop_span(l, s, d, &ws, &we))
			continue;
		/* A read of a block the member's log records bad: from the others, or -EIO. */
		if (!array_role_readable(q->a, m, (s->stripe + 1) * l->chunk) ||
		    (!s->req->write && badblocks_overlap(q->a, m, sop_member_off(l, s->stripe, ws),
							 we - ws)))
			all_alive = false;
	}
	if (!s->req->write && all_alive)
		return sop_direct_read(q, s);
	/* A kernel's buffer takes member reads straight, nothing recovered into it. */
	if (s->req->kslot >= 0)
		return sop_finish(q, s, -EXDEV);
	if (l->nparity == 0)
		return all_alive ? sop_direct_write(q, s) : sop_finish(q, s, -EIO);
	sop_lock_and_plan(q, s);
}

/* The members this operation wrote back what they could not read, and are still in. */
static void sop_note_repaired(struct graid_queue *q, struct sop *s)
{
	const struct graid_layout *l = &q->a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = 0;

	if (!s->nbad || s->write_fail)
		return;
	if (l->level == 1 || l->level == 10)
		n = graid_layout_copies(l, s->arr_off, members, moff);
	for (unsigned i = 0; i < s->nbad; i++) {
		uint64_t row = s->stripe, units = (s->hi - s->lo + BBL_UNIT - 1) / BBL_UNIT;

		if (!array_role_writable(q->a, s->bad[i]))
			continue;
		for (unsigned k = 0; k < n; k++)
			if (members[k] == s->bad[i]) {
				row = moff[k] / l->chunk;
				units = (s->arr_len + BBL_UNIT - 1) / BBL_UNIT;
			}
		array_member_read_repaired(q->a, s->bad[i], row, units);
	}
}

void sop_io_done(struct graid_queue *q, struct sop *s)
{
	bool broken = atomic_load(&q->a->broken);

	if (s->err)
		return sop_finish(q, s, s->err);
	/*
	 * Another host took the array over while this write was out (a drive refused part of
	 * it for its reservation, or the owner look saw it): whatever landed is not this
	 * handle's to acknowledge, and nothing more of it is written.
	 */
	if (s->req->write && array_foreign(q->a))
		return sop_finish(q, s, -ESTALE);
	/* Nor read again another way: the caller does, through its own memory. */
	if (s->req->kslot >= 0 && s->read_failed)
		return sop_finish(q, s, -EXDEV);
	switch (s->plan) {
	case PLAN_DIRECT_READ:
		if (!s->read_failed)
			return sop_finish(q, s, 0);
		/* A data member failed under us: read it again the degraded way. */
		sop_release_bufs(q, s);
		if (broken || q->a->lay.nparity == 0)
			return sop_finish(q, s, -EIO);
		return sop_lock_and_plan(q, s);
	case PLAN_DIRECT_WRITE:
		return sop_finish(q, s, s->write_fail ? -EIO : 0);
	case PLAN_MIRROR_READ:
		if (s->repairing) {
			sop_note_repaired(q, s);
			return sop_finish(q, s, 0); /* the read had it; a failed write-back is out */
		}
		if (!s->read_failed)
			return s->nbad && !q->a->read_only ? sop_mirror_repair(q, s)
							   : sop_finish(q, s, 0);
		sop_release_bufs(q, s);
		return sop_mirror_read(q, s);
	case PLAN_MIRROR_WRITE:
		/* Done if any copy took the write; the failed copies are out of the array now. */
		return sop_finish(q, s, s->write_fail < s->nwrites && !broken ? 0 : -EIO);
	default:
		break;
	}
	if (s->phase == SOP_LOGGING) {
		/* Every entry is durable (or its member is out): now the members in place. */
		if (broken)
			return sop_finish(q, s, -EIO);
		return sop_write_in_place(q, s);
	}
	if (s->phase == SOP_READING) {
		if (!s->read_failed)
			return sop_compute(q, s);
		/* Plan again with the failed member out (still holding the stripe lock). */
		sop_release_bufs(q, s);
		return sop_plan_locked(q, s);
	}
	/* Writing done. A member that failed now is out; its chunk is what parity says. */
	sop_note_repaired(q, s);
	sop_finish(q, s, broken ? -EIO : 0);
}
