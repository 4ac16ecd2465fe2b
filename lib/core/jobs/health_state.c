/* SPDX-License-Identifier: MIT */
/* The health watch's state asked without a command: a slot's last sample, a critical verdict. */
#include "jobs/health_state.h"
#include "member/member.h"

struct member *health_member(struct graid_array *a, unsigned idx)
{
	if (idx < a->nmembers)
		return &a->members[idx];
	return idx < a->nmembers + a->nspares ? &a->spares[idx - a->nmembers] : NULL;
}

bool array_health_cached(struct graid_array *a, unsigned idx, struct graid_member_health *h,
			 uint64_t *at_ns)
{
	struct health_watch *w = a->health;
	struct member *m = health_member(a, idx);

	if (!w || !m || idx >= HEALTH_SLOTS || !w->slot[idx].last_ns ||
	    w->slot[idx].devno != m->dev.devno || w->slot[idx].ino != m->dev.ino)
		return false;
	*h = w->slot[idx].last;
	*at_ns = w->slot[idx].last_ns;
	return true;
}

bool array_health_critical(const struct graid_array *a, unsigned idx)
{
	const struct health_watch *w = a->health;
	const struct member *m;

	if (!w || idx >= HEALTH_SLOTS)
		return false;
	m = health_member((struct graid_array *)a, idx);
	if (!m || w->slot[idx].devno != m->dev.devno || w->slot[idx].ino != m->dev.ino)
		return false;
	return (w->slot[idx].track.crossed & HEALTH_RULES_CRITICAL) != 0;
}

uint32_t array_health_rules(const struct graid_array *a, unsigned idx)
{
	const struct health_watch *w = a->health;
	const struct member *m;

	if (!w || idx >= HEALTH_SLOTS)
		return 0;
	m = health_member((struct graid_array *)a, idx);
	if (!m || w->slot[idx].devno != m->dev.devno || w->slot[idx].ino != m->dev.ino)
		return 0;
	return w->slot[idx].track.crossed |
	       (w->slot[idx].track.io_crossed ? HEALTH_RULE_IO_ERRORS : 0u);
}
