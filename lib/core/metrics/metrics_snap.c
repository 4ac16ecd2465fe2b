/* SPDX-License-Identifier: MIT */
/* One array's state read for the metrics: info, every role and spare, health, events, scrub. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "common/internal.h"
#include "jobs/health_state.h"
#include "metrics/metrics.h"

static void snap_uuid(char out[37], const uint8_t u[16])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;

	for (unsigned i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = '\0';
}

/*
 * A holder's metrics take the health watch's last sample: an admin command here would run
 * on the caller's thread (the control endpoint's only one, the HTTP endpoint's), and a hung
 * drive would stall every client. A read-only look has no watch and nobody else to stall:
 * it reads the drive (files and other block devices answer -EOPNOTSUPP at once).
 */
static void snap_health(struct metrics_snap *s, unsigned i, uint64_t now)
{
	struct metrics_member *m = &s->m[i];
	struct graid_array *a = s->a;

	m->h.struct_size = sizeof(m->h);
	if (!a->read_only) {
		pthread_mutex_lock(&a->meta_lock);
		m->health = array_health_cached(a, i, &m->h, &m->health_ns);
		pthread_mutex_unlock(&a->meta_lock);
		return;
	}
	if (m->mi.state == GRAID_MEMBER_MISSING)
		return;
	m->health = graid_array_member_health(a, i, &m->h) == 0;
	m->health_ns = now;
}

/* Roles first, then the spares: graid_array_member_info() says where the list ends. */
static int snap_members(struct metrics_snap *s, unsigned flags)
{
	const unsigned max = s->info.nmembers + GRAID_MAX_SPARES;
	uint64_t now = graid__now_ns();

	s->m = calloc(max, sizeof(*s->m));
	if (!s->m)
		return -ENOMEM;
	for (unsigned i = 0; i < max; i++) {
		struct metrics_member *m = &s->m[i];
		int rc;

		m->mi.struct_size = sizeof(m->mi);
		rc = graid_array_member_info(s->a, i, &m->mi);
		if (rc == -EINVAL && i >= s->info.nmembers)
			break;
		if (rc)
			return rc;
		s->nall = i + 1;
		m->io.struct_size = sizeof(m->io);
		rc = graid_array_stats(s->a, (int)i, &m->io);
		if (rc)
			return rc;
		m->eta_s = -1;
		if (m->mi.catchup_total && m->mi.catchup_done < m->mi.catchup_total &&
		    i < s->info.nmembers)
			m->eta_s = metrics_eta(s->info.uuid, i, m->mi.catchup_done,
					       m->mi.catchup_total, now);
		if (!(flags & GRAID_METRICS_NO_HEALTH))
			snap_health(s, i, now);
	}
	return 0;
}

int metrics_snap_take(struct metrics_snap *s, struct graid_array *a, unsigned flags)
{
	struct graid_array *h = a;
	int rc;

	s->a = a;
	s->now_ns = graid__now_ns();
	s->info.struct_size = sizeof(s->info);
	rc = graid_array_info(a, &s->info);
	if (rc)
		return rc;
	snap_uuid(s->uuid, s->info.uuid);
	if (!s->label[0])
		snprintf(s->label, sizeof(s->label), "%s", s->uuid);
	s->io.struct_size = sizeof(s->io);
	rc = graid_array_stats(a, -1, &s->io);
	if (rc)
		return rc;
	rc = snap_members(s, flags);
	if (rc)
		return rc;
	s->broken = atomic_load(&h->broken);
	s->served = !h->read_only;
	pthread_mutex_lock(&h->event_ring.lock);
	s->event_seq = h->event_ring.last;
	pthread_mutex_unlock(&h->event_ring.lock);
	s->scrubs = atomic_load(&h->scrubs_running);
	pthread_mutex_lock(&h->meta_lock);
	if (h->lay.nstripes && h->scrub_offset) {
		uint64_t rows = h->scrub_offset < h->lay.nstripes ? h->scrub_offset
								   : h->lay.nstripes;

		s->scrub_ratio = (double)rows / (double)h->lay.nstripes;
	}
	pthread_mutex_unlock(&h->meta_lock);
	return 0;
}

void metrics_snap_free(struct metrics_snap *s)
{
	free(s->m);
	s->m = NULL;
}
