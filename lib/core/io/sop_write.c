/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 update's member writes once its parity is computed: in place, or first staged
 * in the write-hole journal (io/stripe_log.h) and then in place.
 */
#include <errno.h>
#include <string.h>

#include "io/queue_io.h"
#include "io/sop_internal.h"
#include "io/stripe_log.h"

/* What role r of a single-stripe update writes, and where in its chunk; false: nothing. */
static bool sop_role_write(const struct layout *l, struct sop *s, unsigned r,
			   uint8_t **src, uint32_t *len, uint32_t *at)
{
	uint32_t ws, we;

	/* A member that could not read its range gets all of it: the drive remaps it. */
	if (r >= l->ndata || (s->plan == PLAN_DEGRADED &&
			      sop_is_bad(s, layout_role_member(l, s->stripe, r)))) {
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

enum sop_step sop_write_in_place(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;

	if (s->plan == PLAN_RUN)
		return sop_run_write(q, s);
	s->phase = SOP_WRITING;
	s->nwrites = 0;
	for (unsigned r = 0; r < sop_nroles(l); r++) {
		unsigned m = layout_role_member(l, s->stripe, r);
		uint8_t *src;
		uint32_t len, at;

		if (!array_role_writable(q->a, m) || !sop_role_write(l, s, r, &src, &len, &at))
			continue;
		if (queue_write_issued(q, m, queue_io(q, s, r, m, true, src, len,
						      sop_member_off(l, s->stripe, at))))
			s->nwrites++;
		else
			s->write_fail++;
	}
	return sop_drained(s);
}

/* Payload of member m's entry in jiov[1..]; returns the piece count (0: m writes nothing). */
static unsigned sop_log_payload(struct graid_queue *q, struct sop *s, unsigned m,
				uint64_t *member_off)
{
	const struct layout *l = s->lay;
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
	r = layout_member_role(l, s->stripe, m);
	if (r >= sop_nroles(l) || !sop_role_write(l, s, r, &src, &len, &at))
		return 0;
	jiov[1].iov_base = src;
	jiov[1].iov_len = len;
	*member_off = sop_member_off(l, s->stripe, at);
	return 1;
}

/* Every member logs its new bytes before any in-place write (stripe_log.h). */
enum sop_step sop_write_logged(struct graid_queue *q, struct sop *s)
{
	uint64_t off[GRAID_MAX_MEMBERS];
	unsigned cnt[GRAID_MAX_MEMBERS];
	int rc;

	/* The geometry's members (stripe_log_write): a grow's added roles are not the old one's. */
	for (unsigned m = 0; m < s->lay->nmembers; m++)
		cnt[m] = sop_log_payload(q, s, m, &off[m]);
	rc = stripe_log_write(q, s, cnt, off);
	if (rc == -EAGAIN)
		return SOP_STEP_LOG_WAIT;
	if (rc)
		return sop_end(q, s, rc);
	return sop_drained(s);
}

/* Parity is computed: RMW applies its difference, then the members are written. */
enum sop_step sop_write_phase(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay;

	if (s->plan == PLAN_RMW)
		for (unsigned p = l->ndata; p < sop_nroles(l); p++)
			sop_xor(s->buf[p], s->nbuf[p], s->hi - s->lo);
	if (!stripe_log_active(q->a))
		return sop_write_in_place(q, s);
	return sop_write_logged(q, s);
}
