/* SPDX-License-Identifier: MIT */
/*
 * RAID-5/6 stripe operations under the stripe lock: the choice between reconstruct-write and
 * read-modify-write, degraded reads and writes (recover first), and writing back what a
 * member could not read.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "io/lost_write_column.h"
#include "io/queue_io.h"
#include "io/sop.h"
#include "io/sop_internal.h"
#include "meta/badblocks.h"

/* The chunk range [lo, hi) the stripe work covers: the union of the request's parts. */
void sop_range(const struct layout *l, struct sop *s)
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
	const struct layout *l = s->lay;

	return sop_own_buf(q, s, r, s->hi - s->lo) &&
	       sop_io(q, s, r, layout_role_member(l, s->stripe, r), false, s->buf[r],
		      s->hi - s->lo, sop_member_off(l, s->stripe, s->lo));
}

/* Data role @p d is written over all of [lo, hi) by this request. */
static bool sop_covers(const struct layout *l, const struct sop *s, unsigned d)
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
	const struct layout *l = s->lay;
	const uint64_t off = s->stripe * l->chunk + s->lo;
	unsigned lost[GRAID_MAX_MEMBERS], n = 0;
	bool covered = s->req->write, untouched = s->req->write;
	uint32_t ws, we;

	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = layout_role_member(l, s->stripe, r);

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

/* Degraded: every survivor is read, and room made for the lost roles to be recovered into. */
static bool sop_plan_degraded(struct graid_queue *q, struct sop *s)
{
	bool ok = true;

	s->plan = PLAN_DEGRADED;
	for (unsigned r = 0; ok && r < sop_nroles(s->lay); r++) {
		bool lost = (s->nlost > 0 && s->lost[0] == r) || (s->nlost > 1 && s->lost[1] == r);

		ok = lost ? sop_own_buf(q, s, r, s->hi - s->lo) : sop_read_role(q, s, r);
	}
	return ok;
}

/* Read-modify-write: the chunks written and the parity are read. */
static bool sop_plan_rmw(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	uint32_t ws, we;
	bool ok = true;

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
	return ok;
}

/* Reconstruct-write: the data chunks not rewritten whole are read. */
static bool sop_plan_rcw(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	uint32_t ws, we;
	bool ok = true;

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
	return ok;
}

/*
 * Choose how to update the stripe, and issue its reads. Reconstruct-write reads the data
 * chunks the write does not cover; read-modify-write reads the chunks it covers and the
 * parity: whichever reads fewer chunks wins, reconstruct-write on a tie (no difference math).
 * With any role lost, every survivor is read and the lost roles are recovered first.
 */
enum sop_step sop_parity_plan(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	unsigned rcw_reads = 0, rmw_reads = l->nparity;
	enum sop_past_parity past;
	uint32_t ws, we;
	unsigned note[LWC_NOTE_MAX], nnote;
	bool ok;

	/* Generations: a stale block or parity becomes a bad member, rebuilt and written back. */
	if (lwc_sop_check(q->a, s, note, &nnote))
		return sop_end(q, s, -EIO);
	for (unsigned i = 0; i < nnote; i++)
		if (!sop_note_bad(s, note[i]))
			return sop_end(q, s, -EIO);
	past = sop_lost_roles(q, s);
	if (past == SOP_PAST_REFUSED)
		return sop_end(q, s, -EIO);
	s->phase = SOP_READING;
	if (past == SOP_PAST_RCW) {
		rmw_reads = UINT_MAX;
	} else if (past == SOP_PAST_RMW) {
		rmw_reads = 0;
		rcw_reads = UINT_MAX;
	} else if (s->nlost || !s->req->write) {
		if (!sop_plan_degraded(q, s))
			s->err = -ENOMEM;
		return sop_drained(s);
	}
	for (unsigned d = 0; past == SOP_PAST_NONE && d < l->ndata; d++) {
		bool touched = sop_span(l, s, d, &ws, &we);

		rcw_reads += !(touched && ws == s->lo && we == s->hi);
		rmw_reads += touched;
	}
	ok = rmw_reads < rcw_reads ? sop_plan_rmw(q, s) : sop_plan_rcw(q, s);
	if (!ok)
		s->err = -ENOMEM;
	return sop_drained(s);
}

/* Put the caller's new data of every written chunk over the chunk's range buffer. */
static void sop_overlay(struct sop *s)
{
	const struct layout *l = s->lay;
	uint32_t ws, we;

	for (unsigned d = 0; d < l->ndata; d++)
		if (sop_span(l, s, d, &ws, &we) && s->buf[d] != sop_user(l, s, d, ws))
			memcpy(s->buf[d] + (ws - s->lo), sop_user(l, s, d, ws), we - ws);
}

/* RMW: turn old data into old ^ new over the written part, zero elsewhere. */
static bool sop_make_deltas(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
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
void sop_compute(struct graid_queue *q, struct sop *s)
{
	s->phase = SOP_COMPUTE;
	if (s->plan == PLAN_DEGRADED) {
		s->next = q->rec_list;
		q->rec_list = s;
		return;
	}
	if (s->plan == PLAN_RCW) {
		sop_overlay(s);
	} else if (!sop_make_deltas(q, s)) {
		sop_finish(q, s, -ENOMEM);
		return;
	}
	s->next = q->gen_list;
	q->gen_list = s;
}

/*
 * A read met media errors: its members' ranges were recovered with the rest; write them
 * back (under the stripe lock still held) so the drives remap the sectors. A repair write
 * that fails takes its member out like any write error.
 */
static enum sop_step sop_repair_write(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;

	s->phase = SOP_WRITING;
	s->repairing = true;
	s->nwrites = 0;
	s->write_fail = 0;
	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = layout_role_member(l, s->stripe, r);

		if (!sop_is_bad(s, m) || !array_role_writable(q->a, m))
			continue;
		if (sop_io(q, s, r, m, true, s->buf[r], s->hi - s->lo,
			   sop_member_off(l, s->stripe, s->lo)))
			s->nwrites++;
		else
			s->write_fail++; /* ring full: the sector stays bad; a later read repairs it */
	}
	return sop_drained(s);
}

/* Recovered: a read copies its part out and is done; a write goes on to generation. */
enum sop_step sop_recovered(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	uint32_t ws, we;

	if (!s->req->write) {
		for (unsigned d = 0; d < l->ndata; d++)
			if (sop_span(l, s, d, &ws, &we))
				memcpy(sop_user(l, s, d, ws), s->buf[d] + (ws - s->lo), we - ws);
		/* A read-only handle writes nothing back: the drive keeps the sector for later. */
		if (s->nbad && !q->a->read_only)
			return sop_repair_write(q, s);
		return sop_end(q, s, 0);
	}
	sop_overlay(s);
	s->next = q->gen_list;
	q->gen_list = s;
	return SOP_STEP_NONE;
}
