/* SPDX-License-Identifier: MIT */
/* The drive health policy: each rule fires once when it begins to hold, again only after it stopped. */
#include <string.h>

#include <criterion/criterion.h>

#include "jobs/health_policy.h"

#define MIN_NS (60ull * 1000 * 1000 * 1000)

/* A healthy drive's sample at minute @p minute. */
static struct graid_member_health sample(unsigned minute)
{
	struct graid_member_health h;

	memset(&h, 0, sizeof(h));
	h.struct_size = sizeof(h);
	h.sampled_ns = MIN_NS * (minute + 1);
	h.available_spare = 100;
	h.spare_threshold = 10;
	return h;
}

Test(health_policy, a_healthy_drive_fires_nothing)
{
	struct health_track t = { 0 };

	for (unsigned m = 0; m < 40; m++) {
		struct graid_member_health h = sample(m);

		h.percent_used = (uint8_t)m;
		h.error_log_entries = m; /* the error log alone is no verdict */
		cr_assert_eq(health_judge(&t, &health_policy_default, &h), 0, "minute %u", m);
	}
}

Test(health_policy, each_new_critical_bit_fires_once)
{
	struct health_track t = { 0 };
	struct graid_member_health h = sample(0);
	const struct health_policy *p = &health_policy_default;

	h.critical_warning = GRAID_HEALTH_CRIT_RELIABILITY;
	cr_assert_eq(health_judge(&t, p, &h), HEALTH_RULE_CRITICAL_BIT, "a drive already warning");
	h = sample(1);
	h.critical_warning = GRAID_HEALTH_CRIT_RELIABILITY;
	cr_assert_eq(health_judge(&t, p, &h), 0, "the same bit again is no new event");
	h = sample(2);
	h.critical_warning = GRAID_HEALTH_CRIT_RELIABILITY | GRAID_HEALTH_CRIT_TEMPERATURE;
	cr_assert_eq(health_judge(&t, p, &h), HEALTH_RULE_CRITICAL_BIT, "a second bit");
	h = sample(3);
	cr_assert_eq(health_judge(&t, p, &h), 0, "cleared");
	h = sample(4);
	h.critical_warning = GRAID_HEALTH_CRIT_TEMPERATURE;
	cr_assert_eq(health_judge(&t, p, &h), HEALTH_RULE_CRITICAL_BIT, "set again after clearing");
	cr_assert(HEALTH_RULES_CRITICAL & HEALTH_RULE_CRITICAL_BIT);
}

Test(health_policy, spare_at_its_threshold_and_wear_fire_once_per_crossing)
{
	static const struct {
		uint8_t spare, used;
		uint32_t fired;
	} seq[] = {
		{ 50, 80, 0 },
		{ 11, 89, 0 },
		{ 10, 89, HEALTH_RULE_SPARE_LOW },
		{ 9, 90, HEALTH_RULE_WEAR },
		{ 8, 95, 0 },
		{ 60, 95, 0 },   /* spare back above (a drive whose spare recovers: reformatted) */
		{ 5, 100, HEALTH_RULE_SPARE_LOW },
	};
	struct health_track t = { 0 };

	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		struct graid_member_health h = sample(i);

		h.available_spare = seq[i].spare;
		h.percent_used = seq[i].used;
		cr_assert_eq(health_judge(&t, &health_policy_default, &h), seq[i].fired,
			     "step %u", i);
	}
}

Test(health_policy, media_errors_rising_in_two_periods_fires_once_until_they_stop)
{
	static const uint64_t media[] = { 0, 1, 2, 3, 3, 4, 5, 5 };
	static const uint32_t fired[] = { 0, 0, HEALTH_RULE_MEDIA_RISING, 0, 0, 0,
					   HEALTH_RULE_MEDIA_RISING, 0 };
	struct health_track t = { 0 };

	for (unsigned i = 0; i < sizeof(media) / sizeof(media[0]); i++) {
		struct graid_member_health h = sample(i);

		h.media_errors = media[i];
		cr_assert_eq(health_judge(&t, &health_policy_default, &h), fired[i], "minute %u", i);
	}
}

Test(health_policy, twenty_five_media_errors_in_ten_minutes_fire_once)
{
	struct health_policy p = health_policy_default;
	struct health_track t = { 0 };
	uint64_t media = 0;
	unsigned m, first = 0;

	p.media_rising_periods = 0; /* this rule alone */
	/* 5 a minute: the fifth minute's sample has 25 within the window. */
	for (m = 0; m < 8; m++) {
		struct graid_member_health h = sample(m);
		uint32_t f;

		media += m ? 5 : 0;
		h.media_errors = media;
		f = health_judge(&t, &p, &h);
		cr_assert(f == 0 || f == HEALTH_RULE_MEDIA_BURST);
		if (f) {
			cr_assert_eq(first, 0, "fired twice while it held (minute %u)", m);
			first = m;
		}
	}
	cr_assert_eq(first, 5, "fired at minute %u", first);
	/* Quiet for longer than the window: the rule stops holding, a new burst fires again. */
	for (; m < 25; m++) {
		struct graid_member_health h = sample(m);

		h.media_errors = media;
		cr_assert_eq(health_judge(&t, &p, &h), 0, "minute %u", m);
	}
	{
		struct graid_member_health h = sample(m);

		h.media_errors = media + 30;
		cr_assert_eq(health_judge(&t, &p, &h), HEALTH_RULE_MEDIA_BURST);
	}
}

Test(health_policy, fewer_than_the_burst_spread_past_the_window_fire_nothing)
{
	struct health_policy p = health_policy_default;
	struct health_track t = { 0 };

	p.media_rising_periods = 0;
	/* 2 errors every minute for an hour: 20 within any ten minutes, never 25. */
	for (unsigned m = 0; m < 60; m++) {
		struct graid_member_health h = sample(m);

		h.media_errors = 2ull * m;
		cr_assert_eq(health_judge(&t, &p, &h), 0, "minute %u", m);
	}
}

Test(health_policy, counters_that_go_back_start_afresh)
{
	struct health_track t = { 0 };
	struct graid_member_health h = sample(0);

	h.media_errors = 100;
	h.critical_warning = GRAID_HEALTH_CRIT_SPARE;
	cr_assert_eq(health_judge(&t, &health_policy_default, &h), HEALTH_RULE_CRITICAL_BIT);
	/* Another drive behind the device: its own warning is news. */
	h = sample(1);
	h.media_errors = 3;
	h.critical_warning = GRAID_HEALTH_CRIT_SPARE;
	cr_assert_eq(health_judge(&t, &health_policy_default, &h), HEALTH_RULE_CRITICAL_BIT);
}

Test(health_policy, rule_names)
{
	cr_assert_str_eq(health_rule_name(HEALTH_RULE_SPARE_LOW), "spare-low");
	cr_assert_str_eq(health_rule_name(HEALTH_RULE_MEDIA_BURST), "media-errors-burst");
	cr_assert_str_eq(health_rule_name(0), "unknown");
}

/* The window is the window whatever the sampling interval: 10 s samples, 600 s window. */
Test(health_policy, the_burst_window_holds_at_any_sampling_interval)
{
	struct health_policy p = health_policy_default;
	struct health_track t = { 0 };
	uint64_t fired_at = 0;

	p.media_rising_periods = 0;
	/* One error every 10 s: 25 within 600 s at the 250th second, not before. */
	for (unsigned k = 0; k <= 60; k++) {
		struct graid_member_health h = sample(0);

		h.sampled_ns = MIN_NS + k * 10ull * 1000 * 1000 * 1000;
		h.media_errors = k;
		if (health_judge(&t, &p, &h) & HEALTH_RULE_MEDIA_BURST) {
			cr_assert_eq(fired_at, 0, "fired twice");
			fired_at = k * 10;
		}
	}
	cr_assert(fired_at >= 250 && fired_at <= 300, "fired at %lu s", (unsigned long)fired_at);
}

/* Samples further apart than the window: the rise since the last one counts. */
Test(health_policy, samples_further_apart_than_the_window_still_see_a_burst)
{
	struct health_policy p = health_policy_default;
	struct health_track t = { 0 };
	struct graid_member_health h = sample(0);

	p.media_rising_periods = 0;
	p.media_window_ns = 30ull * 1000 * 1000 * 1000; /* 30 s window, samples a minute apart */
	cr_assert_eq(health_judge(&t, &p, &h), 0);
	h = sample(1);
	h.media_errors = 30;
	cr_assert_eq(health_judge(&t, &p, &h), HEALTH_RULE_MEDIA_BURST);
}

/*
 * Failed I/Os: 3 in a row, or 10 within 10 minutes, fire once (critical); errors spread past
 * the window, or the rule off, fire nothing.
 */
Test(health_policy, failed_ios_in_a_row_or_in_a_burst_fire_once_per_crossing)
{
	const struct health_policy *p = &health_policy_default;
	struct health_policy off = health_policy_default;
	struct health_track t = { 0 };
	uint64_t when[GRAID_HEALTH_IO_BURST_MAX] = { 0 };

	cr_assert(HEALTH_RULES_CRITICAL & HEALTH_RULE_IO_ERRORS);
	cr_assert_eq(health_judge_io(&t, p, 2, when, 32, MIN_NS), 0, "2 in a row");
	cr_assert_eq(health_judge_io(&t, p, 3, when, 32, MIN_NS), HEALTH_RULE_IO_ERRORS);
	cr_assert_eq(health_judge_io(&t, p, 4, when, 32, MIN_NS), 0, "fired twice");
	cr_assert_eq(health_judge_io(&t, p, 0, when, 32, MIN_NS), 0);
	cr_assert_eq(health_judge_io(&t, p, 3, when, 32, MIN_NS), HEALTH_RULE_IO_ERRORS,
		     "a new crossing");

	/* 9 errors each a minute apart, one in a row at a time: nothing; the 10th fires. */
	memset(&t, 0, sizeof(t));
	for (unsigned i = 0; i < 9; i++) {
		when[i] = MIN_NS * (i + 1);
		cr_assert_eq(health_judge_io(&t, p, 1, when, 32, when[i]), 0, "error %u", i);
	}
	when[9] = MIN_NS * 10;
	cr_assert_eq(health_judge_io(&t, p, 1, when, 32, when[9]), HEALTH_RULE_IO_ERRORS);
	/* Ten minutes on, the oldest is out of the window: the rule stops holding. */
	cr_assert_eq(health_judge_io(&t, p, 0, when, 32, MIN_NS * 11 + 1), 0);
	cr_assert(!t.io_crossed);

	/* Spread wider than the window: never ten within it. */
	memset(&t, 0, sizeof(t));
	memset(when, 0, sizeof(when));
	for (unsigned i = 0; i < 32; i++) {
		when[i] = MIN_NS * 2 * (i + 1);
		cr_assert_eq(health_judge_io(&t, p, 1, when, 32, when[i]), 0, "error %u", i);
	}

	off.io_in_row = 0;
	off.io_burst = 0;
	memset(&t, 0, sizeof(t));
	cr_assert_eq(health_judge_io(&t, &off, 100, when, 32, when[31]), 0, "the rule off");
	cr_assert_str_eq(health_rule_name(HEALTH_RULE_IO_ERRORS), "io-errors");
}
