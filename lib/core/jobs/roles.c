/* SPDX-License-Identifier: MIT */
/*
 * Installing a device into a role: a new device checked and attached, a hot spare taking a
 * failed role, a replacement by request, a member failed by request. The I/O path never
 * calls here: it marks a member failed and wakes the array's worker (member_fail.c), which
 * gives the role to a spare (array_roles_takeover_due).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "meta/badblocks.h"
#include "meta/journal.h"
#include "meta/member_fail.h"
#include "jobs/jobs.h"
#include "member/member_replace.h"
#include "member/member.h"
#include "member/member_pr.h"
#include "member/tag_store.h"
#include "meta/array_meta.h"
#include "meta/events.h"

/* What a device that is open in the array is, for a refusal: "role 2", "a hot spare". */
static void attach_named(const struct graid_array *a, unsigned i, char *buf, size_t len)
{
	if (i < a->nmembers)
		snprintf(buf, len, "role %u (%s)", i,
			 member_state_name(atomic_load(&a->members[i].state)));
	else
		snprintf(buf, len, "a hot spare");
}

/* Is the device @p dev/@p ino open in the array already? Logged, naming what it is there. */
static bool attach_open_in_array(const struct graid_array *a, const char *path, dev_t dev,
				 ino_t ino, int role)
{
	char what[64];

	for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
		const struct member *o = i < a->nmembers ? &a->members[i]
							 : &a->spares[i - a->nmembers];

		if (o->dev.fd < 0 || o->dev.devno != dev || o->dev.ino != ino)
			continue;
		attach_named(a, i, what, sizeof(what));
		if ((int)i == role)
			/* Its late I/O may still land: a new descriptor must wait for a new open. */
			graid__log(GRAID_LOG_ERR, "%s is %s's own device, still open in this array "
						  "since it went out: close the array and open it again "
						  "to put it back", path, what);
		else
			graid__log(GRAID_LOG_ERR, "%s is already in this array: it is %s", path,
				   what);
		return true;
	}
	return false;
}

/*
 * Would the array take the device whose superblock is @p sb back into a role other than
 * @p role, were it given with the members? Then it is a member, not a new device: the
 * device of a role that is out only for being absent (missing or unreachable, still
 * recorded as that device's, not diverged), or one carrying the current superblock of a
 * role that is active (the same device under another name, or a copy). Logged, naming it.
 */
static bool attach_other_role(const struct graid_array *a, const struct superblock *sb,
			      const char *path, int role)
{
	const struct member *o;
	uint64_t id = member_slot_id(sb->member_uuid);
	int st;

	if (memcmp(sb->array_uuid, a->uuid, 16) || sb->role >= a->nmembers ||
	    (int)sb->role == role)
		return false; /* another array's, a spare's slot, or the role's own device */
	o = &a->members[sb->role];
	st = atomic_load(&o->state);
	if (o->role.slot_id && o->role.slot_id != id)
		return false; /* the role was given to another device: this one is free */
	if (st == GRAID_MEMBER_MISSING || st == GRAID_MEMBER_UNREACHABLE) {
		/* Written after the others recorded it out: a split's other side, not ours. */
		if (o->role.left_events &&
		    (int32_t)((uint32_t)sb->events - (uint32_t)o->role.left_events) >= 0)
			return false;
		graid__log(GRAID_LOG_ERR, "%s is the device of role %u of this array, which is %s "
					  "only because it was not given: it rejoins that role when "
					  "given with the members; not taken as a new device%s",
			   path, sb->role, member_state_name(st),
			   role >= 0 ? " (was the new device's path forgotten?)" : "");
		return true;
	}
	if ((st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING) &&
	    sb->events + 1 >= a->events) {
		graid__log(GRAID_LOG_ERR, "%s carries the current superblock of role %u of this "
					  "array, which is %s: it is that member under another name, "
					  "or a copy of it; not taken as a new device", path, sb->role,
			   member_state_name(st));
		return true;
	}
	return false;
}

int member_attach(struct graid_array *a, struct member *m, const char *path, int role)
{
	struct superblock sb;
	dev_t dev;
	ino_t ino;
	uint64_t need;
	int rc;

	memset(m, 0, sizeof(*m));
	m->dev.fd = -1;
	if (member_identity(path, &dev, &ino) == 0 && attach_open_in_array(a, path, dev, ino, role))
		return -EEXIST;
	rc = member_open(m, path, true);
	if (rc)
		return rc;
	rc = -EINVAL;
	/* With checksums the tag area follows the data area: the device holds both. */
	need = a->csum ? a->tag_offset + a->tag_bytes : a->data_offset + a->lay.member_bytes;
	if (m->dev.size < need) {
		graid__log(GRAID_LOG_ERR, "%s: %llu bytes, the array needs %llu", path,
			   (unsigned long long)m->dev.size, (unsigned long long)need);
		goto fail;
	}
	if (attach_open_in_array(a, path, m->dev.devno, m->dev.ino, role)) {
		rc = -EEXIST;
		goto fail;
	}
	if (member_read_sb(m, &sb) == 0) {
		if (memcmp(sb.array_uuid, a->uuid, 16)) {
			graid__log(GRAID_LOG_ERR, "%s belongs to another libgraid array; wipe it "
						  "first", path);
			goto fail;
		}
		if (attach_other_role(a, &sb, path, role)) {
			rc = -EEXIST;
			goto fail;
		}
	}
	/* The array holds its members' reservations: this device too, before its first write. */
	if (a->pr_key) {
		bool held;

		rc = member_pr_settle(m, a->pr_key, member_pr_reserve(m, a->pr_key), a->pr_strict,
				      &held);
		if (rc == -EBUSY)
			graid__log(GRAID_LOG_ERR, "%s: another host holds its reservation", path);
		if (rc)
			goto fail;
	}
	sb_uuid_generate(m->dev.uuid);
	/* Entries from its earlier life (in this array or another) must never replay. */
	rc = journal_reset_member(a, m);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "%s: writing its journal checkpoint: %s", path,
			   graid_strerror(rc));
		goto fail;
	}
	return 0;
fail:
	if (a->pr_key)
		member_pr_release(m, a->pr_key);
	member_close(m);
	return rc;
}

/*
 * Let go of the device a role had, its lock (flock, O_EXCL) and the device itself, so that
 * it can be wiped, pulled or added again (as a spare, say) while the array is served. The
 * descriptor's number stays taken until the array closes: an I/O being prepared may still
 * have read it without the lock, and a number closed and reused by another open would send
 * that I/O to another file. So /dev/null is put in its place (an I/O that still comes reads
 * nothing, as from a dead device, or writes nowhere, on a role that no longer has this
 * device), and the number is closed at close.
 *
 * Held until close instead, as before: a device that I/O given up on after the I/O timeout
 * may still reach (it must not come back to this array, as a spare, and take a stale write
 * after its rebuild), and every device of an array that holds reservations (they are given
 * back at close, outside meta_lock: a reservation command to a drive that hangs would hold
 * the lock for the kernel's timeouts, and a conflict reported by a late I/O on a device
 * given back could pass for another host's takeover). meta_lock held.
 */
void role_retire_device(struct graid_array *a, struct member *m)
{
	unsigned late = atomic_load(&m->late_ios);
	int null_fd = -1;

	if (m->dev.fd < 0 && !m->dev.fault)
		return; /* nothing to keep */
	if (a->retired.n == sizeof(a->retired.fd) / sizeof(a->retired.fd[0])) {
		/*
		 * Out of room to keep numbers: the descriptor and the fault schedule are kept
		 * for ever (leaked until the process ends) rather than freed under an I/O.
		 */
		graid__log(GRAID_LOG_WARNING, "%s: replaced; more replacements than this open "
			   "keeps track of: its descriptor stays open until the process ends",
			   m->dev.path);
		return;
	}
	if (m->dev.fd >= 0 && late)
		graid__log(GRAID_LOG_WARNING, "%s: replaced with %u of its I/Os still in the "
			   "kernel's hands: it stays open until the array closes", m->dev.path, late);
	else if (m->dev.fd >= 0 && !a->pr_key)
		null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		if (dup3(null_fd, m->dev.fd, O_CLOEXEC) < 0)
			graid__log(GRAID_LOG_WARNING, "%s: replaced, but its descriptor cannot be "
				   "let go before the array closes: %s", m->dev.path, strerror(errno));
		else
			a->retired.let_go[a->retired.n] = true;
		close(null_fd);
	}
	a->retired.fd[a->retired.n] = m->dev.fd;
	a->retired.fault[a->retired.n++] = m->dev.fault;
}

/* Move a prepared device into a role as REBUILDING; meta_lock held. */
static void role_install(struct graid_array *a, unsigned role, struct member *nm)
{
	struct member *m = &a->members[role];

	role_retire_device(a, m);
	/*
	 * The new device whole; the prepared one gives up its fault schedule to it. fd and
	 * fault are read without the lock by an I/O being prepared (above): the copy rewrites
	 * them with the values they have, and each then changes in one store of its own.
	 */
	struct member_device d = nm->dev;

	d.fd = m->dev.fd;
	d.fault = m->dev.fault;
	m->dev = d;
	m->dev.fault = nm->dev.fault;
	m->dev.fd = nm->dev.fd;
	nm->dev.fault = NULL;
	m->dev.sb_ours = false; /* a new device: its superblock is not ours until written */
	/*
	 * And the role starts afresh: nothing it knew of its old device is the new one's (a
	 * forced member's doubt, a return, outages, the read errors counted against the old
	 * drive: a replacement would otherwise be taken out for those at its first repaired
	 * read). A new device holds nothing of the role, so all of it is copied: no catch-up.
	 */
	member_role_reset(&m->role, member_slot_id(m->dev.uuid));
	/*
	 * The role's new device joins now: updates numbered from here on may use it, earlier
	 * ones (even in flight) cannot, and recovery must not wait for its entry of them.
	 */
	if (journal_reset_member(a, m))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): journal checkpoint at takeover failed",
			   role, m->dev.path);
	/*
	 * Its tag area holds whatever it held: every tag absent until the rebuild writes the
	 * blocks (tags are the role's; the cache of the old device's tag blocks goes too).
	 */
	if (a->tags && tag_store_role_reset(a, role))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): clearing its checksum tags failed; "
					      "the rebuild writes them", role, m->dev.path);
	/* A new device has no bad blocks of the old one's, and none of its own earlier life. */
	if (badblocks_reset(a, role))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): writing its empty bad-block log "
					      "failed", role, m->dev.path);
	/* Last: a thread that sees REBUILDING then reads fd gets the new one. */
	atomic_store_explicit(&m->state, GRAID_MEMBER_REBUILDING, memory_order_release);
	a->events++;
	array_recount(a);
	array_write_superblocks(a, 0);
	graid__log(GRAID_LOG_NOTICE, "member %u is now %s, rebuilding", role, m->dev.path);
	array_event(a, GRAID_EVENT_REBUILD_STARTED, (int)role, 0, 0, 0);
}

GRAID_API int graid_array_replace_member(struct graid_array *a, unsigned idx,
					 const char *path)
{
	struct member nm;
	int st, rc;

	if (!a || !path || idx >= a->nmembers)
		return -EINVAL;
	if (a->lay.level == 0)
		return -EOPNOTSUPP;
	rc = array_may_change(a);
	if (rc)
		return rc;
	if (array_reshape_holds_jobs(a))
		return -EBUSY;
	pthread_mutex_lock(&a->meta_lock);
	st = atomic_load(&a->members[idx].state);
	if (st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING &&
	    st != GRAID_MEMBER_UNREACHABLE) {
		pthread_mutex_unlock(&a->meta_lock);
		graid__log(GRAID_LOG_ERR, "replace: member %u is %s, not failed, missing or "
					  "unreachable", idx,
			   st == GRAID_MEMBER_ACTIVE ? "active" : "rebuilding");
		return -EBUSY;
	}
	rc = member_attach(a, &nm, path, (int)idx);
	if (rc == 0)
		role_install(a, idx, &nm);
	pthread_mutex_unlock(&a->meta_lock);
	/* Its superblock write found another host's records: not done, for anyone. */
	return rc ? rc : array_foreign(a) ? -ESTALE : 0;
}

bool replace_takeover(struct graid_array *a, unsigned role)
{
	struct array_replace *r = a->replace;
	int st = atomic_load(&a->members[role].state);

	if (!r || r->finished || r->role != role || atomic_load(&r->failed) ||
	    (st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING))
		return false;
	replace_detach(a, r);
	graid__log(GRAID_LOG_NOTICE, "member %u failed during its replace: %s takes the role "
		   "and is rebuilt", role, r->dev.dev.path);
	role_install(a, role, &r->dev);
	r->dev.dev.fd = -1;
	r->finished = true;
	r->error = -ENODEV;
	/* The copy's thread sees the role out and ends; the worker rebuilds the role. */
	array_rebuild_due(a);
	pthread_cond_signal(&a->worker_cond);
	return true;
}

void array_spare_takeover(struct graid_array *a, unsigned role)
{
	int st = atomic_load(&a->members[role].state);

	if (array_foreign(a))
		return; /* another host's array now: its roles are not ours to fill */
	/* A copy of the role under way: its device is nearer to the role than any spare. */
	if (replace_takeover(a, role))
		return;
	if (a->nspares == 0 || (st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING))
		return;
	if (array_reshape_holds_jobs(a)) {
		/*
		 * A RAID-5/6 reshape moving data: the spare's rebuild would place rows by one
		 * geometry. The worker hands it out once the reshape has finished (jobs.h).
		 */
		a->takeover_role[role] = true;
		a->takeover_due = true;
		return;
	}
	a->nspares--;
	array_event(a, GRAID_EVENT_SPARE_ACTIVATED, (int)role, 0, 0, 0);
	role_install(a, role, &a->spares[a->nspares]);
	a->spares[a->nspares].dev.fd = -1;
	array_rebuild_due(a);
	pthread_cond_signal(&a->worker_cond);
}

void array_roles_takeover_due(struct graid_array *a)
{
	a->takeover_due = false;
	for (unsigned r = 0; r < a->nmembers; r++)
		if (a->takeover_role[r]) {
			a->takeover_role[r] = false;
			array_spare_takeover(a, r);
		}
}

void array_roles_takeover_all(struct graid_array *a)
{
	for (unsigned r = 0; r < a->nmembers && a->nspares; r++)
		/* Missing roles wait for their member, which an open could not place yet. */
		if (!a->hold_missing || atomic_load(&a->members[r].state) != GRAID_MEMBER_MISSING)
			array_spare_takeover(a, r);
}

GRAID_API int graid_array_fail_member(struct graid_array *a, unsigned idx)
{
	uint8_t state[GRAID_MAX_MEMBERS];
	int rc;

	if (!a || idx >= a->nmembers)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned i = 0; i < a->nmembers; i++)
		state[i] = (uint8_t)atomic_load(&a->members[i].state);
	/*
	 * A member being rebuilt can be failed too: its rebuild then stops with -EIO. An
	 * unreachable one is failed for good: no catch-up when its controller is back.
	 */
	if (state[idx] == GRAID_MEMBER_UNREACHABLE) {
		atomic_store(&a->members[idx].state, GRAID_MEMBER_FAILED);
		graid__log(GRAID_LOG_NOTICE, "member %u (%s), unreachable, marked failed by "
					     "request", idx, a->members[idx].dev.path);
		a->events++;
		array_recount(a);
		array_write_superblocks(a, 0);
		array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)idx, 0, 0, 0);
		array_spare_takeover(a, idx);
	} else if (state[idx] == GRAID_MEMBER_ACTIVE || state[idx] == GRAID_MEMBER_REBUILDING) {
		state[idx] = GRAID_MEMBER_FAILED;
		if (!array_roles_survivable(a, state)) {
			pthread_mutex_unlock(&a->meta_lock);
			graid__log(GRAID_LOG_ERR, "refusing to fail member %u: RAID-%d would lose "
						  "data", idx, a->lay.level);
			return -EBUSY;
		}
		array_sb_role_out(a);
		atomic_store(&a->members[idx].state, GRAID_MEMBER_FAILED);
		graid__log(GRAID_LOG_NOTICE, "member %u (%s) marked failed by request", idx,
			   a->members[idx].dev.path);
		a->events++;
		a->members[idx].role.left_events = a->events;
		array_recount(a);
		array_member_out_record(a, idx);
		array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)idx, 0, 0, 0);
		array_spare_takeover(a, idx);
	}
	pthread_mutex_unlock(&a->meta_lock);
	return array_foreign(a) ? -ESTALE : 0;
}
