/* SPDX-License-Identifier: MIT */
/* A queue's stripe-operation records: made with their per-member storage, recycled, freed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/queue_sop.h"

static void queue_sop_free_parts(struct sop *s)
{
	free(s->jpos);
	free(s->jhdr);
	free(s->jiov);
	s->jpos = NULL;
	s->jhdr = NULL;
	s->jiov = NULL;
}

/* The journal's per-member storage, for arrays that keep one. */
static int queue_sop_journal_alloc(struct sop *s, unsigned n)
{
	s->jpos = calloc(n, sizeof(*s->jpos));
	s->jhdr = calloc(n, sizeof(*s->jhdr));
	s->jiov = malloc((size_t)n * (SOP_RUN_MAX + 1) * sizeof(*s->jiov));
	if (s->jpos && s->jhdr && s->jiov)
		return 0;
	queue_sop_free_parts(s);
	return -ENOMEM;
}

struct sop *queue_sop_alloc(struct graid_queue *q)
{
	/* Room for the roles a reshape may add while this queue lives (array.h). */
	unsigned n = q->a->member_cap;
	struct sop *s = q->free_sops;
	uint8_t *p;

	if (s) {
		q->free_sops = s->next;
	} else {
		/* The per-role arrays share the operation's allocation. */
		s = calloc(1, sizeof(*s) + n * (2 * sizeof(uint8_t *) + sizeof(uint32_t) +
						sizeof(bool) + sizeof(struct mio) +
						sizeof(struct mio *)));
		if (!s)
			return NULL;
		if (q->a->journal && queue_sop_journal_alloc(s, n)) {
			free(s);
			return NULL;
		}
		if (q->a->lay.nparity) {
			/* Run storage; without it the operation just never becomes a run. */
			s->iov = malloc((size_t)n * SOP_RUN_MAX * sizeof(*s->iov));
			s->buckets = malloc(SOP_RUN_MAX * sizeof(*s->buckets));
			if (!s->iov || !s->buckets) {
				free(s->iov);
				free(s->buckets);
				s->iov = NULL;
				s->buckets = NULL;
			}
		}
		p = (uint8_t *)(s + 1);
		s->mio_store = (struct mio *)p;
		p += n * sizeof(struct mio);
		s->mio = (struct mio **)p;
		p += n * sizeof(struct mio *);
		for (unsigned i = 0; i < n; i++)
			s->mio[i] = &s->mio_store[i];
		s->buf = (uint8_t **)p;
		p += n * sizeof(uint8_t *);
		s->nbuf = (uint8_t **)p;
		p += n * sizeof(uint8_t *);
		s->blen = (uint32_t *)p;
		p += n * sizeof(uint32_t);
		s->own = (bool *)p;
	}
	memset(s->buf, 0, n * sizeof(uint8_t *));
	memset(s->nbuf, 0, n * sizeof(uint8_t *));
	memset(s->own, 0, n * sizeof(bool));
	return s;
}

void queue_sop_free(struct graid_queue *q, struct sop *s)
{
	/* Records that replaced ones given up on (queue_late.c). */
	for (unsigned i = 0; i < q->a->member_cap; i++)
		if (s->mio[i] != &s->mio_store[i])
			free(s->mio[i]);
	free(s->iov);
	free(s->buckets);
	free(s->wmeta);
	queue_sop_free_parts(s);
	free(s);
}
