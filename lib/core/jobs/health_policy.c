/* SPDX-License-Identifier: MIT */
/* The drive health policy: which rules a member's newest health sample newly crosses. */
#include <string.h>

#include "jobs/health_policy.h"

const struct health_policy health_policy_default = {
	.wear_percent = 90,
	.media_rising_periods = 2,
	.media_burst = 25,
	.media_window_ns = 600ull * 1000 * 1000 * 1000,
	.io_in_row = 3,
	.io_burst = 10,
	.io_window_ns = 600ull * 1000 * 1000 * 1000,
};

/*
 * Keep the sample in the window's history, at most one per 1/15 of the window, so that the
 * 16 kept reach back over the whole window whatever the sampling interval; the oldest goes
 * when it is full.
 */
static void health_remember(struct health_track *t, const struct health_policy *p,
			    const struct graid_member_health *h)
{
	uint64_t step = p->media_window_ns / (HEALTH_HISTORY - 1);

	if (t->nhist && h->sampled_ns - t->hist[t->nhist - 1].ns < step)
		return;
	if (t->nhist == HEALTH_HISTORY) {
		memmove(&t->hist[0], &t->hist[1], (HEALTH_HISTORY - 1) * sizeof(t->hist[0]));
		t->nhist--;
	}
	t->hist[t->nhist].ns = h->sampled_ns;
	t->hist[t->nhist].media = h->media_errors;
	t->nhist++;
}

/*
 * Media errors within the window ending now: the rise since the oldest kept sample inside
 * it. With none inside (samples further apart than the window), the rise since the last
 * kept: over more than the window, which errs towards firing.
 */
static uint64_t health_media_in_window(const struct health_track *t,
				       const struct health_policy *p,
				       const struct graid_member_health *h)
{
	for (unsigned i = 0; i < t->nhist; i++)
		if (h->sampled_ns - t->hist[i].ns <= p->media_window_ns)
			return h->media_errors - t->hist[i].media;
	return t->nhist ? h->media_errors - t->hist[t->nhist - 1].media : 0;
}

/* The rules that hold for this sample (the media ones from the history before it). */
static uint32_t health_holding(struct health_track *t, const struct health_policy *p,
			       const struct graid_member_health *h)
{
	uint32_t hold = 0;

	if (h->critical_warning & ~(t->have_prev ? t->prev_critical : 0))
		hold |= HEALTH_RULE_CRITICAL_BIT;
	else if (h->critical_warning && (t->crossed & HEALTH_RULE_CRITICAL_BIT))
		hold |= HEALTH_RULE_CRITICAL_BIT; /* still warning, no new bit: no new event */
	if (h->spare_threshold && h->available_spare <= h->spare_threshold)
		hold |= HEALTH_RULE_SPARE_LOW;
	if (p->wear_percent && h->percent_used >= p->wear_percent)
		hold |= HEALTH_RULE_WEAR;
	if (t->have_prev && h->media_errors > t->prev_media)
		t->rising++;
	else if (t->have_prev)
		t->rising = 0;
	if (p->media_rising_periods && t->rising >= p->media_rising_periods)
		hold |= HEALTH_RULE_MEDIA_RISING;
	if (p->media_burst && health_media_in_window(t, p, h) >= p->media_burst)
		hold |= HEALTH_RULE_MEDIA_BURST;
	return hold;
}

uint32_t health_judge(struct health_track *t, const struct health_policy *p,
		      const struct graid_member_health *h)
{
	uint32_t hold, fired;

	/* Counters never go back on one drive: another drive, or a reset. Start afresh. */
	if (t->have_prev && h->media_errors < t->prev_media)
		memset(t, 0, sizeof(*t));
	hold = health_holding(t, p, h);
	fired = hold & ~t->crossed;
	/* A new critical bit fires even while an older one holds the rule. */
	if (h->critical_warning & ~(t->have_prev ? t->prev_critical : 0))
		fired |= HEALTH_RULE_CRITICAL_BIT;
	t->crossed = hold;
	t->have_prev = true;
	t->prev_critical = h->critical_warning;
	t->prev_media = h->media_errors;
	health_remember(t, p, h);
	return fired;
}

uint32_t health_judge_io(struct health_track *t, const struct health_policy *p,
			 unsigned in_row, const uint64_t *err_ns, unsigned nerr, uint64_t now_ns)
{
	unsigned recent = 0;
	bool hold;

	for (unsigned i = 0; i < nerr; i++)
		if (err_ns[i] && err_ns[i] <= now_ns && now_ns - err_ns[i] <= p->io_window_ns)
			recent++;
	hold = (p->io_in_row && in_row >= p->io_in_row) || (p->io_burst && recent >= p->io_burst);
	if (hold == t->io_crossed)
		return 0;
	t->io_crossed = hold;
	return hold ? HEALTH_RULE_IO_ERRORS : 0;
}

const char *health_rule_name(uint32_t rule)
{
	switch (rule) {
	case HEALTH_RULE_CRITICAL_BIT: return "critical-warning";
	case HEALTH_RULE_SPARE_LOW: return "spare-low";
	case HEALTH_RULE_WEAR: return "wear";
	case HEALTH_RULE_MEDIA_RISING: return "media-errors-rising";
	case HEALTH_RULE_MEDIA_BURST: return "media-errors-burst";
	case HEALTH_RULE_IO_ERRORS: return "io-errors";
	}
	return "unknown";
}
