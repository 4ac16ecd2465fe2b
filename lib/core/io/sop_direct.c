/* SPDX-License-Identifier: MIT */
/* RAID-0/5/6 stripe operations that need no stripe lock: data chunks read or written straight. */
#include <string.h>

#include "io/sop_internal.h"

enum sop_step sop_direct_read(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
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
		m = layout_data_member(l, s->stripe, d);
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
	return sop_drained(s);
}

/*
 * RAID-0: no copy and no parity to keep in step with, so a write the ring would not take
 * fails the request (-EIO), not its member.
 */
enum sop_step sop_direct_write(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;
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
		if (!sop_io(q, s, d, layout_data_member(l, s->stripe, d), true, src,
			    we - ws, sop_member_off(l, s->stripe, ws)))
			s->write_fail++;
	}
	return sop_drained(s);
}
