/* SPDX-License-Identifier: MIT */
/* RAID-5/6 runs of whole stripes: no reads, parity from the caller's data, one write a member. */
#include <errno.h>
#include <string.h>

#include "io/queue_io.h"
#include "io/sop_internal.h"
#include "meta/stripe_lock.h"

/*
 * All of a run's stripe locks or none: a run never waits holding some, so it cannot
 * deadlock with anything (stripes of one run may share a bucket: taken once).
 */
bool sop_run_trylock(struct graid_queue *q, struct sop *s)
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
void sop_run_plan(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;
	uint8_t *user = s->req->buf + s->req_off;
	size_t data = (size_t)s->nrun * l->ndata * l->chunk;

	s->lo = 0;
	s->hi = l->chunk;
	for (unsigned p = 0; p < l->nparity; p++)
		if (!sop_own_buf(q, s, l->ndata + p, (size_t)s->nrun * l->chunk)) {
			sop_finish(q, s, -ENOMEM);
			return;
		}
	if (!queue_aligned(user)) {
		if (!sop_own_buf(q, s, 0, data)) {
			sop_finish(q, s, -ENOMEM);
			return;
		}
		memcpy(s->buf[0], user, data);
	}
	s->phase = SOP_COMPUTE;
	s->next = q->gen_list;
	q->gen_list = s;
}

uint8_t *sop_run_chunk(const struct layout *l, const struct sop *s, unsigned j,
		       unsigned role)
{
	if (role >= l->ndata)
		return s->buf[role] + (size_t)j * l->chunk;
	if (s->own[0])
		return s->buf[0] + ((size_t)j * l->ndata + role) * l->chunk;
	return s->req->buf + s->req_off + ((size_t)j * l->ndata + role) * l->chunk;
}

/* Member m's part of every row of the run, in member order: s->nrun chunks. */
struct iovec *sop_run_iov(const struct layout *l, struct sop *s, unsigned m)
{
	struct iovec *iov = s->iov + (size_t)m * SOP_RUN_MAX;

	for (unsigned j = 0; j < s->nrun; j++) {
		iov[j].iov_base = sop_run_chunk(l, s, j, layout_member_role(l, s->stripe + j, m));
		iov[j].iov_len = l->chunk;
	}
	return iov;
}

/* One vectored write per live member covering all the run's rows. */
enum sop_step sop_run_write(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;

	s->phase = SOP_WRITING;
	s->nwrites = 0;
	for (unsigned m = 0; m < q->a->nmembers; m++) {
		struct iovec *iov;

		if (!array_role_writable(q->a, m))
			continue;
		iov = sop_run_iov(l, s, m);
		if (queue_write_issued(q, m, queue_writev(q, s, m, m, iov, s->nrun,
							  (size_t)s->nrun * l->chunk,
							  sop_member_off(l, s->stripe, 0))))
			s->nwrites++;
		else
			s->write_fail++;
	}
	return sop_drained(s);
}
