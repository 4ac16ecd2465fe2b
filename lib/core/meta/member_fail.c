/* SPDX-License-Identifier: MIT */
/*
 * A member I/O failed: take the member out (or out for a while, when a fabric member's
 * path and not the drive is lost), record it on the others, and wake the array's worker,
 * which gives the role to a spare (md's shape: the I/O path only marks, the worker acts).
 */
#include <errno.h>

#include "array/array.h"
#include "member/member_path.h"
#include "meta/array_meta.h"
#include "meta/events.h"
#include "meta/member_fail.h"

void array_member_out_record(struct graid_array *a, unsigned role)
{
	int rc;

	/*
	 * Set before the round: a write that passes the round's fence (sop_finish) sees it
	 * true until a round has reached a member still in (which clears it: an open then
	 * takes that round as the freshest, with this role out).
	 */
	atomic_store(&a->fail_unrecorded, true);
	rc = array_write_superblocks(a, 0);
	if (rc && rc != -ESTALE && atomic_load(&a->fail_unrecorded))
		graid__log(GRAID_LOG_ERR, "member %u is out but the superblocks that record it "
					  "could not be written (%s): writes are refused (-EIO) until "
					  "they are", role, graid_strerror(rc));
}

/* Outages a fabric member may have from timeouts with its controller live before it fails. */
#define REACH_TIMEOUT_OUTAGES 3u

/*
 * An I/O of @p role failed and the role was active or being rebuilt: take it out as
 * unreachable instead of failed when its controllers say the path, not the drive, is lost.
 * meta_lock held; true when it did.
 */
bool array_member_unreachable(struct graid_array *a, unsigned role, int err)
{
	struct member *m = &a->members[role];
	struct member_paths p;
	enum member_reach reach;
	int st = atomic_load(&m->state);

	if (a->read_only || (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING))
		return false;
	/*
	 * A short transfer (member_io.c: the device ended early) is no lost path: a member
	 * that came back smaller cannot be caught up from the bitmap, it has to be rebuilt.
	 */
	if (err == -ENXIO)
		return false;
	/*
	 * Only while the others carry the array. One role out too many (RAID-0's first) fails
	 * as before: the array stops, and those members stay recorded failed with their own
	 * superblocks in sync, which is what a forced assembly takes back once the path is
	 * healed (a member recorded missing and marked rebuilding could not be forced).
	 */
	if (!array_survives_without(a, role))
		return false;
	/*
	 * An I/O that timed out (the array's I/O timeout, or the kernel's) on a fabric member
	 * whose controller still reads live: the path has most likely gone silent and the
	 * keep-alive has not noticed yet. Out for a while too, not failed: a transient stall
	 * then costs a catch-up, not a rebuild. But a member that keeps timing out with its
	 * controller live is slow, not cut off: after REACH_TIMEOUT_OUTAGES such outages (since
	 * the open, or the role's new device; outages the keep-alive noticed do not count) it
	 * fails, and a spare takes over, instead of cycling out and back for ever.
	 */
	reach = member_reach(m, &p);
	if (reach != REACH_RECONNECTING &&
	    !(err == -ETIMEDOUT && reach == REACH_LIVE &&
	      m->role.timeout_outages < REACH_TIMEOUT_OUTAGES))
		return false;
	if (reach == REACH_LIVE)
		m->role.timeout_outages++;
	/* A full rebuild cut short starts again whole; a catch-up only copies marks again. */
	m->role.reach_full = st == GRAID_MEMBER_REBUILDING && !m->role.catchup;
	array_sb_role_out(a);
	atomic_store(&m->state, GRAID_MEMBER_UNREACHABLE);
	m->role.outages++;
	a->events++;
	m->role.left_events = a->events;
	array_recount(a);
	array_member_out_record(a, role);
	graid__log(GRAID_LOG_WARNING, "member %u (%s) unreachable: %s (controller %s, %s %s, %s); "
				      "array continues degraded, writes recorded for its catch-up",
		   role, m->dev.path, graid_strerror(err), p.ctrl, p.transport, p.address, p.state);
	array_event(a, GRAID_EVENT_MEMBER_UNREACHABLE, (int)role, err, 0, 0);
	/* The worker watches its controllers. */
	pthread_cond_signal(&a->worker_cond);
	return true;
}

/* A member returned an error: take it out, record that on the others, keep serving. */
void array_member_failed(struct graid_array *a, unsigned role, int err)
{
	array_member_io_failed(a, role, -1, err);
}

/* Take the role out after an error of its present device; meta_lock held. */
static void member_fail_locked(struct graid_array *a, unsigned role, int err)
{
	struct member *m = &a->members[role];
	int st;
	bool changed = false, survives;

	atomic_fetch_add(&m->role.errors, 1);
	/* A fabric member whose controllers reconnect is out for a while, not failed. */
	if (array_member_unreachable(a, role, err))
		return;
	survives = array_survives_without(a, role);
	/* Active or being rebuilt: either way it is out now. */
	st = atomic_load(&m->state);
	if (!a->read_only && (st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING))
		array_sb_role_out(a);
	while ((st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING) && !changed)
		changed = atomic_compare_exchange_weak(&m->state, &st, GRAID_MEMBER_FAILED);
	if (changed && a->read_only) {
		/* Read-only: out of this handle's I/O, but nothing is recorded on the members. */
		graid__log(GRAID_LOG_ERR, "member %u (%s) failed: %s (read-only: not recorded)",
			   role, m->dev.path, graid_strerror(err));
		array_recount(a);
	} else if (changed) {
		/* Where the level cannot do without it, array_recount() says the array failed. */
		graid__log(GRAID_LOG_ERR, "member %u (%s) failed: %s%s%s", role, m->dev.path,
			   graid_strerror(err),
			   err == -ENOSPC ? " (the filesystem or thin pool under it is full)" : "",
			   survives ? "; array continues degraded" : "");
		a->events++;
		m->role.left_events = a->events;
		array_recount(a);
		array_member_out_record(a, role);
		array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)role, err, 0, 0);
		array_worker_takeover(a, role);
	}
}

/* @p fd < 0: whichever device the role has. */
void array_member_io_failed(struct graid_array *a, unsigned role, int fd, int err)
{
	struct member *m = &a->members[role];

	pthread_mutex_lock(&a->meta_lock);
	if (err == -EBADE && !a->read_only) {
		/* The drive says another host holds it: the array is that host's, not failed. */
		array_owner_fenced(a, role);
		pthread_mutex_unlock(&a->meta_lock);
		return;
	}
	if (fd >= 0 && m->dev.fd != fd) {
		pthread_mutex_unlock(&a->meta_lock);
		graid__log(GRAID_LOG_INFO, "member %u: a late error of the device it replaced (%s)",
			   role, graid_strerror(err));
		return;
	}
	member_fail_locked(a, role, err);
	pthread_mutex_unlock(&a->meta_lock);
}

/*
 * An I/O on @p fd of @p role passed the I/O timeout: give up on it (true) unless the role is
 * the last copy of something. @p late: count it in the role's late_ios (*counted says if it
 * was). meta_lock held.
 */
static bool member_timed_out_locked(struct graid_array *a, unsigned role, int fd, bool late,
				    bool *counted)
{
	struct member *m = &a->members[role];
	bool give_up = true;
	int st;

	*counted = false;
	st = atomic_load(&m->state);
	if (m->dev.fd != fd) {
		/* The role has another device now; this one is out of the array already. */
	} else if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING) {
		*counted = late; /* out already: still its device */
	} else {
		/* md's failfast rule: never give up on the last copy of anything. */
		give_up = array_survives_without(a, role);
		if (give_up) {
			*counted = late;
			graid__log(GRAID_LOG_ERR, "member %u (%s): an I/O took longer than the array's "
						  "I/O timeout (%llu ms); giving up on it", role, m->dev.path,
				   (unsigned long long)(atomic_load(&a->io_timeout_ns) / 1000000));
			member_fail_locked(a, role, -ETIMEDOUT);
		}
	}
	if (*counted)
		atomic_fetch_add(&m->late_ios, 1);
	if (give_up)
		atomic_fetch_add(&m->timeouts, 1);
	return give_up;
}

bool array_member_timed_out(struct graid_array *a, unsigned role, int fd, bool *counted)
{
	bool give_up;

	pthread_mutex_lock(&a->meta_lock);
	give_up = member_timed_out_locked(a, role, fd, true, counted);
	pthread_mutex_unlock(&a->meta_lock);
	return give_up;
}

void array_member_mark_timed_out(struct graid_array *a, unsigned role, int fd)
{
	bool counted;

	pthread_mutex_lock(&a->meta_lock);
	if (!member_timed_out_locked(a, role, fd, false, &counted))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): its metadata write passed the I/O "
					      "timeout, but the array needs it: kept, without that "
					      "mark until the write ends", role, a->members[role].dev.path);
	pthread_mutex_unlock(&a->meta_lock);
}

void array_member_mark_failed(struct graid_array *a, unsigned role, int fd, int err)
{
	struct member *m = &a->members[role];
	int st;

	pthread_mutex_lock(&a->meta_lock);
	st = atomic_load(&m->state);
	if (err == -EBADE && !a->read_only) {
		array_owner_fenced(a, role); /* another host holds the drive */
	} else if (m->dev.fd != fd || (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)) {
		/* Out already, or the role has another device now. */
	} else if (!array_survives_without(a, role)) {
		graid__log(GRAID_LOG_WARNING, "member %u (%s): its metadata write failed, but the "
					      "array needs it: kept, without that mark", role, m->dev.path);
	} else {
		member_fail_locked(a, role, err);
	}
	pthread_mutex_unlock(&a->meta_lock);
}
