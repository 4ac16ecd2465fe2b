/* SPDX-License-Identifier: MIT */
/*
 * A Q-last RAID-6 of n + 1 members back to the RAID-5 of n (docs/RESHAPE.md, "Metadata-only
 * level changes, as built"). Q-last keeps data and P where the RAID-5 had them, and every
 * write keeps P: the first n members are a whole RAID-5 at every moment, so the change is
 * the metadata alone. What makes it safe:
 *
 * - the array quiesced (io/quiesce.h): no request in flight that placed itself by the
 *   RAID-6 (it would write Q to the dropped member, or read by n + 1 roles), jobs held, and
 *   no rebuild pass (rebuild_lock held): a->lay and a->nmembers change with nobody reading;
 * - one superblock round at E + 1 recording the RAID-5 of n (no Q_LAST); a member a crash
 *   leaves at E (the RAID-6 Q-last of n + 1, its role below n) holds the RAID-5's bytes and
 *   is taken as current by assembly (array_assemble.c assemble_level_drop_cut), the dropped
 *   member at E is left out (its geometry disagrees);
 * - the dropped member's superblock zeroed after the round, so nothing takes it for this
 *   array again, and its descriptor let go as a replaced member's (roles.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format/layout.h"
#include "io/quiesce.h"
#include "member/member.h"
#include "meta/array_meta.h"
#include "jobs/jobs.h"
#include "jobs/reshape_level.h"

/* What no state of the array allows, before anything is held: 0 or the refusal, logged. */
static int level_static_check(const struct graid_array *a, int level)
{
	if (level != 5) {
		graid__log(GRAID_LOG_ERR, "convert: RAID-%d to RAID-%d is not built (only a RAID-6 "
					  "with Q on its last member becomes a RAID-5)",
			   a->lay.level, level);
		return -EOPNOTSUPP;
	}
	if (a->lay.level == 1) {
		graid__log(GRAID_LOG_ERR, "convert: a RAID-1 to RAID-5 is not built in this version");
		return -EOPNOTSUPP;
	}
	if (a->lay.level != 6 || a->lay.layout_id != LAYOUT_Q_LAST) {
		graid__log(GRAID_LOG_ERR, "convert: only a RAID-6 with Q on its last member (a "
					  "RAID-5 converted by adding one) becomes a RAID-5 by dropping "
					  "a member; this array is a RAID-%d%s", a->lay.level,
			   a->lay.level == 6 ? " with rotating parity (its Q is on every member)" : "");
		return -EOPNOTSUPP;
	}
	if (a->csum || a->journal) {
		/* Neither can be made by the RAID-5 -> RAID-6 conversion; refused as it refuses. */
		graid__log(GRAID_LOG_ERR, "convert: a RAID-6 with %s cannot become a RAID-5 by "
					  "this build", a->csum ? "checksums" : "a write-hole journal");
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * What must hold at the change, meta_lock held, the array quiesced: nothing running that
 * places rows by a->lay or reads the member count (-EBUSY), and every role that stays
 * active (-EIO: the RAID-5 would be degraded, or worse; rebuild first). The Q member may
 * be out: that is the usual reason to drop it.
 */
static int level_busy_check(struct graid_array *a)
{
	const char *what = NULL;
	unsigned n = a->nmembers - 1;

	if (atomic_load(&a->reshape) || a->reshape_starting)
		what = "a reshape";
	else if (atomic_load(&a->scrubs_running))
		what = "a scrub";
	else if (a->bitmap.enabled && atomic_load(&a->bitmap.resync_from) != UINT64_MAX)
		what = "the resync after an unclean shutdown";
	else if (atomic_load(&a->replace))
		what = "a replace";
	else if (atomic_load(&a->members[n].state) == GRAID_MEMBER_REBUILDING)
		/* A spare took the Q role: its rebuild is due (and keeps the spare's device). */
		what = "the rebuild of the Q member onto a spare";
	if (what) {
		graid__log(GRAID_LOG_ERR, "convert: %s is under way: try again after it", what);
		return -EBUSY;
	}
	for (unsigned r = 0; r < n; r++)
		if (!array_role_alive(a, r)) {
			graid__log(GRAID_LOG_ERR, "convert: member %u (%s) is %s: the RAID-5 left "
						  "would be degraded; rebuild it first",
				   r, a->members[r].dev.path,
				   member_state_name(atomic_load(&a->members[r].state)));
			return -EIO;
		}
	return 0;
}

/* The dropped member's superblock zeroed (an open would leave it out anyway: geometry). */
static void level_wipe_dropped(struct member *m)
{
	int rc = member_zero_range(m, 0, GRAID_SB_SIZE);

	if (rc == 0)
		rc = member_flush(m);
	if (rc)
		graid__log(GRAID_LOG_WARNING, "convert: %s: clearing its superblock: %s; the "
					      "members no longer list it, and an open leaves it out",
			   m->dev.path, graid_strerror(rc));
}

/* The change itself, meta_lock held, the array quiesced, the checks passed. */
static int level_drop_q_locked(struct graid_array *a)
{
	unsigned n = a->nmembers - 1;
	struct member *q = &a->members[n];
	bool q_in = array_role_alive(a, n) && q->dev.fd >= 0;
	struct layout nl, was = a->lay;
	int rc = layout_init_id(&nl, 5, n, a->lay.chunk, a->lay.member_bytes, LAYOUT_ROTATING);

	if (rc == 0 && (nl.array_bytes != was.array_bytes || nl.ndata != was.ndata))
		rc = -EPROTO; /* not the Q-last layout's RAID-5: a bug, nothing written */
	if (rc) {
		graid__log(GRAID_LOG_ERR, "convert: no RAID-5 of %u members matches this array: %s",
			   n, graid_strerror(rc));
		return rc;
	}
	a->lay = nl;
	a->nmembers = n;
	a->takeover_role[n] = false;
	/* No role out now (the checks): the bitmap's history ends, nfailed 0, the view anew. */
	array_recount(a);
	a->events++;
	rc = array_write_superblocks(a, 0);
	if (rc == -ESTALE) {
		/* Another host's now, nothing written: this handle keeps what it had. */
		a->lay = was;
		a->nmembers = n + 1;
		array_recount(a);
		return rc;
	}
	if (rc) {
		/*
		 * Some members may hold the RAID-5 at E + 1: the freshest, so an open takes it and
		 * leaves the dropped member out (its geometry disagrees). This handle keeps the
		 * RAID-5 too; the dropped member is let go without its superblock cleared.
		 */
		graid__log(GRAID_LOG_ERR, "convert: the superblock round failed: %s; the array is "
					  "a RAID-5 of %u for this handle, and for the next open if any "
					  "member took it", graid_strerror(rc), n);
	} else if (q_in) {
		level_wipe_dropped(q);
	}
	graid__log(GRAID_LOG_NOTICE, "convert: RAID-6 of %u members (Q on %s) is now a RAID-5 "
				     "of %u members; %s is no longer a member",
		   n + 1, q->dev.path, n, q->dev.path);
	role_retire_device(a, q);
	q->dev.fd = -1;
	q->dev.fault = NULL;
	atomic_store(&q->state, GRAID_MEMBER_MISSING);
	return rc;
}

static int level_drop_q(struct graid_array *a)
{
	int rc;

	/* No rebuild pass while the roles change (it places rows by a->lay). */
	if (pthread_mutex_trylock(&a->rebuild_lock)) {
		graid__log(GRAID_LOG_ERR, "convert: a rebuild is under way: try again after it");
		return -EBUSY;
	}
	rc = array_quiesce(a, QUIESCE_DRAIN_NS);
	if (rc == 0) {
		pthread_mutex_lock(&a->meta_lock);
		rc = level_static_check(a, 5);
		if (rc == 0)
			rc = level_busy_check(a);
		if (rc == 0)
			rc = level_drop_q_locked(a);
		pthread_mutex_unlock(&a->meta_lock);
		array_unquiesce(a);
	} else {
		graid__log(GRAID_LOG_ERR, "convert: the array could not be quiesced: %s",
			   graid_strerror(rc));
	}
	pthread_mutex_unlock(&a->rebuild_lock);
	/* The worker's jobs held by the quiesce look again now rather than at their next tick. */
	pthread_mutex_lock(&a->meta_lock);
	pthread_cond_broadcast(&a->worker_cond);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

int reshape_level_convert(struct graid_array *a, int level)
{
	int rc = array_may_change(a);

	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	rc = level_static_check(a, level);
	pthread_mutex_unlock(&a->meta_lock);
	return rc ? rc : level_drop_q(a);
}
