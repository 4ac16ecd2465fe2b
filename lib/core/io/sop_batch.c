/* SPDX-License-Identifier: MIT */
/* Parity generation and recovery batched: one engine call for every stripe of one shape. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/sop_internal.h"

/* Room for n stripes' block pointers in the queue's scratch; false: out of memory. */
static bool sop_batch_room(struct graid_queue *q, size_t n, unsigned nroles)
{
	const size_t want = n * nroles;
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

/*
 * Two operations of one engine call have the same data and parity counts: during a reshape
 * a queue holds operations placed by either geometry (s->lay).
 */
static bool sop_same_shape(const struct sop *a, const struct sop *b)
{
	return a->lay->ndata == b->lay->ndata && a->lay->nparity == b->lay->nparity;
}

/*
 * Two degraded operations share one recovery call: same range length, same lost roles.
 * Lost roles are stripe-relative, so stripes with the same rotation of the failed members
 * share a call; they come out in role order (sop_parity.c), so equal patterns compare equal
 * element by element.
 */
static bool sop_same_loss(const struct sop *a, const struct sop *b)
{
	return sop_same_shape(a, b) && a->hi - a->lo == b->hi - b->lo && a->nlost == b->nlost &&
	       (a->nlost < 1 || a->lost[0] == b->lost[0]) &&
	       (a->nlost < 2 || a->lost[1] == b->lost[1]);
}

static bool sop_same_len(const struct sop *a, const struct sop *b)
{
	return sop_same_shape(a, b) && a->hi - a->lo == b->hi - b->lo;
}

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

void sop_batch_recover(struct graid_queue *q, void (*next)(struct graid_queue *, struct sop *))
{
	while (q->rec_list) {
		struct sop *group = sop_take_group(&q->rec_list, sop_same_loss);
		const struct layout *l = group->lay;
		const unsigned nroles = sop_nroles(l);
		size_t n = 0;
		int rc = 0;

		for (struct sop *s = group; s; s = s->next)
			n++;
		if (!sop_batch_room(q, n, nroles)) {
			rc = -ENOMEM;
		} else if (group->nlost) {
			n = 0;
			for (struct sop *s = group; s; s = s->next, n++)
				memcpy(q->batch_ptrs + n * nroles, s->buf, nroles * sizeof(*s->buf));
			rc = graid_parity_recover(q->a->be, l->ndata, l->nparity,
						  group->hi - group->lo, n, q->batch_ptrs,
						  group->nlost, group->lost);
		}
		sop_group_done(q, group, rc, next);
	}
}

/* The blocks generation runs over: the stripe itself, or (RMW) the differences. */
static void sop_gen_ptrs(const struct layout *l, struct sop *s, uint8_t **out)
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

/* One engine call for every stripe waiting with the same range length. */
void sop_batch_gen(struct graid_queue *q, void (*next)(struct graid_queue *, struct sop *))
{
	while (q->gen_list) {
		struct sop *group = sop_take_group(&q->gen_list, sop_same_len);
		const struct layout *l = group->lay;
		const unsigned nroles = sop_nroles(l);
		uint32_t len = group->hi - group->lo;
		size_t n = 0;
		int rc;

		for (struct sop *s = group; s; s = s->next)
			n += s->nrun;
		if (!sop_batch_room(q, n, nroles)) {
			rc = -ENOMEM;
		} else {
			n = 0;
			for (struct sop *s = group; s; s = s->next) {
				sop_gen_ptrs(l, s, q->batch_ptrs + nroles * n);
				n += s->nrun;
			}
			rc = graid_parity_gen(q->a->be, l->ndata, l->nparity, len, n, q->batch_ptrs);
		}
		sop_group_done(q, group, rc, next);
	}
}
