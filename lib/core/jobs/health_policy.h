/* SPDX-License-Identifier: MIT */
/*
 * The drive health policy: from a member's successive health samples, which rules a sample
 * newly crosses. Pure (no array, no clock, no I/O): the health watch feeds it and sends the
 * events; tests feed it scripted samples.
 */
#ifndef LIBGRAID_CORE_JOBS_HEALTH_POLICY_H
#define LIBGRAID_CORE_JOBS_HEALTH_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <libgraid/graid.h>

/* The rules (bits of a verdict): the public GRAID_HEALTH_RULE_* bits. docs/HEALTH.md. */
enum health_rule {
	HEALTH_RULE_CRITICAL_BIT = GRAID_HEALTH_RULE_CRITICAL_BIT,
	HEALTH_RULE_SPARE_LOW = GRAID_HEALTH_RULE_SPARE_LOW,
	HEALTH_RULE_WEAR = GRAID_HEALTH_RULE_WEAR,
	HEALTH_RULE_MEDIA_RISING = GRAID_HEALTH_RULE_MEDIA_RISING,
	HEALTH_RULE_MEDIA_BURST = GRAID_HEALTH_RULE_MEDIA_BURST,
	HEALTH_RULE_IO_ERRORS = GRAID_HEALTH_RULE_IO_ERRORS,
};

/* The rules whose crossing predicts a failure soon (critical); the others warn. */
#define HEALTH_RULES_CRITICAL \
	(HEALTH_RULE_CRITICAL_BIT | HEALTH_RULE_SPARE_LOW | HEALTH_RULE_IO_ERRORS)

struct health_policy {
	uint8_t wear_percent;         /* HEALTH_RULE_WEAR at this percent used (0: off) */
	unsigned media_rising_periods; /* HEALTH_RULE_MEDIA_RISING after this many (0: off) */
	uint64_t media_burst;         /* HEALTH_RULE_MEDIA_BURST at this many... (0: off) */
	uint64_t media_window_ns;     /* ...within this long */
	unsigned io_in_row;           /* HEALTH_RULE_IO_ERRORS at this many in a row (0: off) */
	unsigned io_burst;            /* ...or this many (0: off, at most GRAID_HEALTH_IO_BURST_MAX)... */
	uint64_t io_window_ns;        /* ...within this long */
};

/*
 * The defaults: wear 90 %, media errors rising in 2 periods, or 25 within 10 minutes; 3
 * failed I/Os in a row, or 10 within 10 minutes.
 */
extern const struct health_policy health_policy_default;

/* Samples kept for the media-error window: at least 1/15 of the window apart. */
#define HEALTH_HISTORY 16

/* What the policy remembers of one drive between samples. Zeroed: nothing seen yet. */
struct health_track {
	bool have_prev;
	uint8_t prev_critical;   /* the critical warning bits of the last sample */
	uint64_t prev_media;     /* its media error count */
	unsigned rising;         /* consecutive samples in which media errors rose */
	uint32_t crossed;        /* the rules that hold now (each fired when it began to) */
	struct {
		uint64_t ns, media;
	} hist[HEALTH_HISTORY];  /* recent samples, oldest first */
	unsigned nhist;
	bool io_crossed;         /* HEALTH_RULE_IO_ERRORS holds (judged apart: any member) */
};

/*
 * Judge sample @p h (its sampled_ns the time) against @p p: returns the rules that begin to
 * hold with it (each fires once per crossing: again only after it stopped holding). A drive
 * whose counters went back (another drive behind the device, a reset) starts afresh.
 */
uint32_t health_judge(struct health_track *t, const struct health_policy *p,
		      const struct graid_member_health *h);

/*
 * Judge a role's failed I/Os at @p now_ns against @p p's I/O-error rule: @p in_row failed
 * with no success since, and @p err_ns[0 .. @p nerr - 1] the times of the most recent ones
 * (0: a slot not used yet). Returns HEALTH_RULE_IO_ERRORS when the rule begins to hold
 * (once per crossing, as health_judge()), else 0.
 */
uint32_t health_judge_io(struct health_track *t, const struct health_policy *p,
			 unsigned in_row, const uint64_t *err_ns, unsigned nerr, uint64_t now_ns);

/* A rule's name for logs and events ("critical-warning", "spare-low", ...). */
const char *health_rule_name(uint32_t rule);

#endif /* LIBGRAID_CORE_JOBS_HEALTH_POLICY_H */
