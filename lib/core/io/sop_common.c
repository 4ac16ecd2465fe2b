/* SPDX-License-Identifier: MIT */
/* What every stripe-operation plan uses: its buffers, its member I/O, its bad members, its end. */
#include <string.h>

#include "io/queue_io.h"
#include "io/sop.h"
#include "io/sop_internal.h"
#include "io/stripe_log.h"
#include "meta/array_meta.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"
#include "meta/live.h"
#include "meta/stripe_lock.h"

bool sop_own_buf(struct graid_queue *q, struct sop *s, unsigned r, size_t len)
{
	s->buf[r] = queue_buf_get(q, len);
	s->own[r] = s->buf[r] != NULL;
	s->blen[r] = (uint32_t)len;
	return s->own[r];
}

void sop_release_bufs(struct graid_queue *q, struct sop *s)
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

/* An operation that failed: the checksum mismatches its bad members met stay unhealed. */
static void sop_csum_lost(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = 0;

	if (l->level == 1 || l->level == 10)
		n = layout_copies(l, s->arr_off, members, moff);
	for (unsigned i = 0; i < s->nbad; i++) {
		uint64_t off = s->stripe * l->chunk, len = (uint64_t)s->nrun * l->chunk;

		for (unsigned k = 0; k < n; k++)
			if (members[k] == s->bad[i]) {
				off = moff[k];
				len = s->arr_len;
			}
		csum_report_lost(q->a, s->bad[i], off, len);
	}
}

void sop_finish(struct graid_queue *q, struct sop *s, int err)
{
	if (err && s->nbad && q->a->tags)
		sop_csum_lost(q, s);
	/* Before its marks end: a crash until the round is done must find them still set. */
	if (s->req->write && !err)
		array_sb_fence(q->a);
	/*
	 * After it: a member out whose round missed a member the array needs (member_fail.h
	 * array_member_out_record): the next open could take it back as current and serve
	 * its old bytes over this write. Not acknowledged.
	 */
	if (s->req->write && !err && atomic_load(&q->a->fail_unrecorded))
		err = -EIO;
	if (s->rs_marked) {
		/* A reshape's operation: marked on both its rows (sop.c sop_mark_write). */
		for (unsigned k = 0; k < 2; k++) {
			bitmap_end_write(q->a, s->rs_rows[k]);
			if (!s->req->zero)
				live_end_write(q->a, s->rs_rows[k]);
		}
		s->rs_marked = false;
	}
	for (unsigned j = 0; s->req->write && !s->req->rs && j < s->nrun; j++)
		bitmap_end_write(q->a, s->stripe + j);
	for (unsigned j = 0; s->req->write && !s->req->rs && !s->req->zero && j < s->nrun; j++)
		live_end_write(q->a, s->stripe + j);
	stripe_log_done(q, s);
	sop_release_bufs(q, s);
	if (s->locked) {
		stripe_unlock(q->a, s->bucket);
		s->locked = false;
	}
	if (s->locked2) {
		stripe_unlock(q->a, s->bucket2);
		s->locked2 = false;
	}
	for (unsigned j = 0; j < s->nlocked; j++)
		stripe_unlock(q->a, s->buckets[j]);
	s->nlocked = 0;
	queue_sop_done(q, s, err);
}

void sop_xor(uint8_t *dst, const uint8_t *src, size_t n)
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

bool sop_note_bad(struct sop *s, unsigned m)
{
	if (sop_is_bad(s, m))
		return true;
	if (s->nbad == sizeof(s->bad) / sizeof(s->bad[0]))
		return false;
	s->bad[s->nbad++] = m;
	return true;
}
