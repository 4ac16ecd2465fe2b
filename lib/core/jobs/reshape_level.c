/* SPDX-License-Identifier: MIT */
/*
 * Metadata-only level changes (docs/RESHAPE.md, "Metadata-only level changes, as built"):
 * a RAID-1 of two to the RAID-5 of two and back (level_mirror_locked), and a Q-last RAID-6
 * of n + 1 members back to the RAID-5 of n, described here. Q-last keeps data and P where the RAID-5 had them, and every
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
 * - the dropped member's superblock zeroed after the round once any member took it (a
 *   failed round too: a member that missed it still records the RAID-6, and must never be
 *   assembled with a Q nobody wrote since), so nothing takes it for this array again, and
 *   its descriptor let go as a replaced member's (roles.c);
 * - a round no member took (a->sb_writes unchanged) undone in this handle: every member's
 *   superblock, Q's included, still says RAID-6 with Q active, so the handle stays that,
 *   writing Q. A hot spare that alone took it is not enough to keep the RAID-5 (an open
 *   given the members without that spare would take the RAID-6 and trust Q); an open given
 *   that spare before this handle's next round finds it freshest and opens the RAID-5 (the
 *   members at E its current members, Q left out), which is the same data: P is current
 *   either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format/layout.h"
#include "io/quiesce.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/array_meta.h"
#include "jobs/jobs.h"
#include "jobs/reshape_level.h"

/* The conversions built. */
enum level_change {
	LEVEL_DROP_Q = 1,  /* a Q-last RAID-6 of n + 1 to the RAID-5 of n */
	LEVEL_R1_TO_R5,    /* a RAID-1 of two to the RAID-5 of two */
	LEVEL_R5_TO_R1,    /* a RAID-5 of two to the RAID-1 of two */
};

/*
 * What no state of the array allows, before anything is held: the change (> 0), or the
 * refusal, logged.
 */
static int level_static_check(const struct graid_array *a, int level)
{
	const struct layout *l = &a->lay;
	int change = 0;

	if (level == 5 && l->level == 6 && l->layout_id == LAYOUT_Q_LAST)
		change = LEVEL_DROP_Q;
	else if (level == 5 && l->level == 1 && a->nmembers == 2)
		change = LEVEL_R1_TO_R5;
	else if (level == 1 && l->level == 5 && a->nmembers == 2)
		change = LEVEL_R5_TO_R1;
	if (!change) {
		if (level == 5 && l->level == 1)
			graid__log(GRAID_LOG_ERR, "convert: only a RAID-1 of two members becomes a "
						  "RAID-5 (of two) without moving data; this one has %u",
				   a->nmembers);
		else if (level == 5 && l->level == 6)
			graid__log(GRAID_LOG_ERR, "convert: only a RAID-6 with Q on its last member "
						  "(a RAID-5 converted by adding one) becomes a RAID-5 by "
						  "dropping a member; this one has rotating parity (its Q "
						  "is on every member)");
		else if (level == 1 && l->level == 5)
			graid__log(GRAID_LOG_ERR, "convert: only a RAID-5 of two members is a RAID-1 "
						  "without moving data; this one has %u", a->nmembers);
		else
			graid__log(GRAID_LOG_ERR, "convert: RAID-%d to RAID-%d is not built (built: "
						  "RAID-6 Q-last to RAID-5, RAID-1 of two to RAID-5 and "
						  "back)", l->level, level);
		return -EOPNOTSUPP;
	}
	if (a->csum || a->journal) {
		/*
		 * Tags and journal entries are placed by the level (a mirror's tags judge lost
		 * writes by comparing copies, a parity level's by the row's records): a change
		 * of level would leave them meaning something else. Refused, not converted.
		 */
		graid__log(GRAID_LOG_ERR, "convert: a RAID-%d with %s cannot change level by this "
					  "build", l->level, a->csum ? "checksums" : "a write-hole journal");
		return -EOPNOTSUPP;
	}
	return change;
}

/*
 * What must hold at the change, meta_lock held, the array quiesced: nothing running that
 * places rows by a->lay or reads the member count (-EBUSY), and every role that stays
 * active (-EIO: the RAID-5 would be degraded, or worse; rebuild first). The Q member may
 * be out: that is the usual reason to drop it.
 */
static int level_busy_check(struct graid_array *a, int change)
{
	const char *what = NULL;
	unsigned n = change == LEVEL_DROP_Q ? a->nmembers - 1 : a->nmembers;

	if (atomic_load(&a->reshape) || a->reshape_starting)
		what = "a reshape";
	else if ((what = array_row_job_running(a)))
		;
	else if (change == LEVEL_DROP_Q &&
		 atomic_load(&a->members[n].state) == GRAID_MEMBER_REBUILDING)
		/* A spare took the Q role: its rebuild is due (and keeps the spare's device). */
		what = "the rebuild of the Q member onto a spare";
	if (what) {
		graid__log(GRAID_LOG_ERR, "convert: %s is under way: try again after it", what);
		return -EBUSY;
	}
	for (unsigned r = 0; r < n; r++)
		if (!array_role_alive(a, r)) {
			graid__log(GRAID_LOG_ERR, "convert: member %u (%s) is %s: the array "
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
	/*
	 * A crash cut (fault_write_cut) counts this write too: on files the zeroes are a hole
	 * punched, which the member write path's cut does not see.
	 */
	int rc = fault_write_cut() ? -EIO : member_zero_range(m, 0, GRAID_SB_SIZE);

	if (rc == 0)
		rc = member_flush(m);
	if (rc)
		graid__log(GRAID_LOG_WARNING, "convert: %s: clearing its superblock: %s; the "
					      "members that took the change no longer list it, and "
					      "an open with them leaves it out; clear it before "
					      "giving it with members that missed the change",
			   m->dev.path, graid_strerror(rc));
}

/*
 * The dropped role's slot emptied as a role that never was: its device let go (as a
 * replaced member's, roles.c), its counters, health and bad-block log reset (as
 * grow_install sets an added role's), so that a later grow into the slot starts clean.
 */
static void level_empty_slot(struct graid_array *a, unsigned n)
{
	struct member *q = &a->members[n];
	struct bbl_image empty; /* about 6 KiB: the caller's thread */

	role_retire_device(a, q);
	q->dev.fd = -1;
	q->dev.fault = NULL;
	member_role_reset(&q->role, 0);
	memset(&empty, 0, sizeof(empty));
	badblocks_adopt(a, n, &empty);
	atomic_store(&q->late_ios, 0);
	atomic_store(&q->timeouts, 0);
	atomic_store(&q->state, GRAID_MEMBER_MISSING);
}

/* The change itself, meta_lock held, the array quiesced, the checks passed. */
static int level_drop_q_locked(struct graid_array *a)
{
	unsigned n = a->nmembers - 1;
	struct member *q = &a->members[n];
	bool q_in = array_role_alive(a, n) && q->dev.fd >= 0;
	bool was_takeover = a->takeover_role[n];
	uint64_t was_history = a->history_events, took = a->sb_writes;
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
	if (rc && a->sb_writes == took) {
		/*
		 * No member took any superblock of the round (every one failed, a fabric blip
		 * that keeps the members in, or another host's fence before the first): every
		 * member, Q included, still records the RAID-6 with Q active, so this handle
		 * keeps it, and keeps writing Q, or a crash would leave a stale Q trusted (a
		 * spare that took it alone: the file's comment).
		 */
		a->lay = was;
		a->nmembers = n + 1;
		a->takeover_role[n] = was_takeover;
		array_recount(a);
		a->history_events = was_history;
		graid__log(GRAID_LOG_ERR, "convert: no member took the superblock round (%s): "
					  "the array stays a RAID-6 of %u members",
			   graid_strerror(rc), n + 1);
		return rc;
	}
	if (rc) {
		/*
		 * Some members hold the RAID-5 at E + 1: the freshest, so an open takes it and
		 * leaves the dropped member out (its geometry disagrees); a member that missed
		 * the round (kept in: it reconnects, or the RAID-5 needs it) is taken as current
		 * or, later, caught up as a member of the RAID-5 (array_assemble.c). This handle
		 * keeps the RAID-5 too.
		 */
		graid__log(GRAID_LOG_ERR, "convert: the superblock round failed: %s; the array is "
					  "a RAID-5 of %u (some member records it)", graid_strerror(rc),
			   n);
	}
	/*
	 * The dropped member's superblock cleared whenever any member took the round, a
	 * failed round included: a member that missed the round still records the RAID-6,
	 * and an open of it with the old Q (no Q written since) must not trust that Q. Not
	 * when another host took the array over (-ESTALE): nothing more of ours is written.
	 */
	if (q_in && rc != -ESTALE)
		level_wipe_dropped(q);
	graid__log(GRAID_LOG_NOTICE, "convert: RAID-6 of %u members (Q on %s) is now a RAID-5 "
				     "of %u members; %s is no longer a member",
		   n + 1, q->dev.path, n, q->dev.path);
	level_empty_slot(a, n);
	return rc;
}

/*
 * A RAID-1 of two to the RAID-5 of two, or back, meta_lock held, the array quiesced, the
 * checks passed. Both hold the same bytes at the same member offsets (a RAID-5 of two keeps
 * P = its one data chunk, on the other member), with the same chunk (the RAID-1's own, kept
 * in its superblock), the same member rows, so the same region numbers in the bitmap and
 * the live-data map: only the level changes, in one superblock round at E + 1.
 */
static int level_mirror_locked(struct graid_array *a, int level)
{
	struct layout nl, was = a->lay;
	uint64_t took;
	int rc = layout_init(&nl, level, 2, a->lay.chunk, a->lay.member_bytes);

	if (rc == 0 && (nl.array_bytes != was.array_bytes || nl.nstripes != was.nstripes))
		rc = -EPROTO; /* not the same bytes: a bug, nothing written */
	if (rc == 0 && level == 5 && !a->be)
		rc = -EPROTO; /* the caller opens the parity engine first */
	if (rc) {
		graid__log(GRAID_LOG_ERR, "convert: no RAID-%d of two matches this array: %s",
			   level, graid_strerror(rc));
		return rc;
	}
	took = a->sb_writes;
	a->lay = nl;
	array_recount(a);
	a->events++;
	rc = array_write_superblocks(a, 0);
	if (rc && a->sb_writes == took) {
		/* No member records the new level: this handle keeps the old (same bytes). */
		a->lay = was;
		array_recount(a);
		graid__log(GRAID_LOG_ERR, "convert: no member took the superblock round (%s): "
					  "the array stays a RAID-%d of two", graid_strerror(rc),
			   was.level);
		return rc;
	}
	if (rc)
		graid__log(GRAID_LOG_ERR, "convert: the superblock round failed: %s; the array is "
					  "a RAID-%d of two (some member records it: the next open "
					  "takes it)", graid_strerror(rc), level);
	graid__log(GRAID_LOG_NOTICE, "convert: RAID-%d of two members is now a RAID-%d of two "
				     "(no data moved)", was.level, level);
	return rc;
}

static int level_run(struct graid_array *a, int level)
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
		rc = level_static_check(a, level);
		if (rc > 0) {
			int change = rc;

			rc = level_busy_check(a, change);
			if (rc == 0)
				rc = change == LEVEL_DROP_Q ? level_drop_q_locked(a)
							    : level_mirror_locked(a, level);
		}
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

int reshape_level_check(struct graid_array *a, int level)
{
	int rc = array_may_change(a);

	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	/*
	 * A reshape first: while one runs a->lay is its old geometry (a RAID-5 becoming a
	 * RAID-6 is still level 5 here), which would be refused for the wrong reason.
	 */
	if (atomic_load(&a->reshape) || a->reshape_starting) {
		graid__log(GRAID_LOG_ERR, "convert: a reshape is under way: try again after it");
		rc = -EBUSY;
	} else {
		rc = level_static_check(a, level);
	}
	pthread_mutex_unlock(&a->meta_lock);
	return rc < 0 ? rc : 0;
}

int reshape_level_convert(struct graid_array *a, int level)
{
	int rc = reshape_level_check(a, level);

	return rc ? rc : level_run(a, level);
}
