/* SPDX-License-Identifier: MIT */
/* Assembly: read the members' superblocks, hold the array all or none, and place each member. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/array_assemble.h"
#include "member/member_path.h"
#include "member/member.h"
#include "meta/array_meta.h"

/* How long an open waits for a dead holder's members to be let go (io_uring teardown). */
#define ASSEMBLE_HOLDER_WAIT_NS (10ull * 1000 * 1000 * 1000)
#define ASSEMBLE_POLL_US 20000

/* Out of this open, for a reason given in words and as a verdict (graid_array_given_info). */
__attribute__((format(printf, 3, 4)))
static void assemble_leave_out(struct open_candidate *c, int verdict, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->verdict = verdict;
	graid__log(GRAID_LOG_WARNING, "open: leaving out %s: %s", c->m.dev.path, c->why);
	c->valid = false;
}

/* What assembly knows of a candidate before it has read anything of it. */
static void assemble_verdict_reset(struct open_candidate *c)
{
	c->valid = c->has_sb = c->distrusted = c->forcible = false;
	c->verdict = GRAID_GIVEN_MEMBER;
	c->error = 0;
	c->why[0] = '\0';
}

/* The array to assemble: the UUID most members carry; among equals, the freshest. */
static int assemble_pick(const struct open_candidate *c, unsigned n)
{
	int best = -1;
	unsigned best_count = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned count = 0;

		if (!c[i].valid)
			continue;
		for (unsigned j = 0; j < n; j++)
			count += c[j].valid && !memcmp(c[j].sb.array_uuid, c[i].sb.array_uuid, 16);
		if (best < 0 || count > best_count ||
		    (count == best_count && c[i].sb.events > c[best].sb.events)) {
			best = (int)i;
			best_count = count;
		}
	}
	return best;
}

static void assemble_read_sb(struct open_candidate *c)
{
	int rc;

	assemble_verdict_reset(c);
	if (c->m.dev.size < GRAID_SB_SIZE) {
		snprintf(c->m.dev.identity, sizeof(c->m.dev.identity), "too small to be a member");
		assemble_leave_out(c, GRAID_GIVEN_NO_SUPERBLOCK, "%llu bytes is too small to be a "
				   "member", (unsigned long long)c->m.dev.size);
		return;
	}
	rc = member_read_sb(&c->m, &c->sb);
	if (rc == 0) {
		c->valid = c->has_sb = true;
	} else {
		const char *why = rc == -EINVAL	   ? "no libgraid superblock"
				  : rc == -EBADMSG ? "superblock checksum is wrong (corrupt)"
				  : rc == -EPROTO  ? "superblock fields are invalid"
						   : "superblock could not be read";

		snprintf(c->m.dev.identity, sizeof(c->m.dev.identity), "%s", why);
		c->error = rc == -EINVAL ? 0 : rc;
		assemble_leave_out(c, rc == -EINVAL ? GRAID_GIVEN_NO_SUPERBLOCK
						    : GRAID_GIVEN_BAD_SUPERBLOCK, "%s", why);
		if (member_reach(&c->m, NULL) == REACH_RECONNECTING) {
			graid__log(GRAID_LOG_WARNING, "open: %s is unreachable (its NVMe-oF "
						      "controllers reconnect); it joins at the next open "
						      "that reaches it", c->m.dev.path);
			c->unreachable = true;
			c->verdict = GRAID_GIVEN_UNREACHABLE;
			snprintf(c->why, sizeof(c->why), "unreachable (its NVMe-oF controllers "
				 "reconnect)");
		}
	}
}

/*
 * A writable open could not open @p path for writing: look at it read-only, so that what
 * is said of it names its role (a member on a read-only mount, write-protected, another
 * user's). It stays out of this open: its role is missing, and it catches up when given
 * writable again.
 */
static void assemble_not_writable(struct open_candidate *c, const char *path, int err)
{
	struct member look = { .dev.fd = -1 };

	if (member_open_read_only(&look, path) == 0) {
		if (look.dev.size >= GRAID_SB_SIZE && member_read_sb(&look, &c->sb) == 0)
			c->has_sb = true;
		member_close(&look);
	}
	snprintf(c->m.dev.path, sizeof(c->m.dev.path), "%s", path);
	c->error = err;
	if (c->has_sb)
		assemble_leave_out(c, GRAID_GIVEN_NOT_WRITABLE, "not writable (%s): role %u is "
				   "left to catch up when it is given writable", graid_strerror(err),
				   c->sb.role);
	else
		assemble_leave_out(c, GRAID_GIVEN_NOT_WRITABLE, "not writable (%s)",
				   graid_strerror(err));
}

/*
 * Open (without holding) every path and read its superblock; nothing is written here.
 * @p writable: opened for writing; otherwise read-only, for a look.
 */
static int assemble_read_all(struct assembly *as, const char *const *paths, bool writable)
{
	for (unsigned i = 0; i < as->n; i++) {
		struct open_candidate *c = &as->c[i];
		int rc;

		memset(c, 0, sizeof(*c));
		c->m.dev.fd = -1;
		if (!paths[i])
			return -EINVAL;
		rc = writable ? member_open(&c->m, paths[i], false)
			      : member_open_read_only(&c->m, paths[i]);
		c->writable = rc == 0 && (writable || member_may_write(&c->m));
		if (rc && writable && (rc == -EACCES || rc == -EPERM || rc == -EROFS)) {
			assemble_not_writable(c, paths[i], rc);
			continue;
		}
		if (rc) {
			graid__log(GRAID_LOG_WARNING, "open: %s: %s", paths[i], graid_strerror(rc));
			c->verdict = GRAID_GIVEN_UNOPENED;
			c->error = rc;
			snprintf(c->why, sizeof(c->why), "%s", graid_strerror(rc));
			continue;
		}
		for (unsigned j = 0; j < i; j++)
			if (as->c[j].m.dev.fd >= 0 && as->c[j].m.dev.devno == c->m.dev.devno &&
			    as->c[j].m.dev.ino == c->m.dev.ino) {
				assemble_leave_out(c, GRAID_GIVEN_TWICE, "given twice (it is %s)",
						   paths[j]);
				member_close(&c->m);
				break;
			}
		if (c->m.dev.fd >= 0)
			assemble_read_sb(c);
	}
	as->pick = assemble_pick(as->c, as->n);
	return 0;
}

static void assemble_close_all(struct assembly *as)
{
	for (unsigned i = 0; i < as->n; i++) {
		member_close(&as->c[i].m);
		as->c[i].valid = as->c[i].locked = false;
	}
	array_uuid_lock_release(&as->lock);
}

static int assemble_role_order(const void *x, const void *y)
{
	const struct open_candidate *const *a = x, *const *b = y;

	return (*a)->sb.role < (*b)->sb.role ? -1 : (*a)->sb.role > (*b)->sb.role;
}

/*
 * The array's members in one order every opener agrees on (role; spares' slots come after
 * the layout's), locked without waiting: -EBUSY as soon as one is held elsewhere.
 */
static int assemble_lock_members(struct assembly *as)
{
	const uint8_t *uuid = as->c[as->pick].sb.array_uuid;
	struct open_candidate **order = malloc(as->n * sizeof(*order));
	unsigned k = 0;
	int rc = 0;

	if (!order)
		return -ENOMEM;
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid && !memcmp(as->c[i].sb.array_uuid, uuid, 16))
			order[k++] = &as->c[i];
	qsort(order, k, sizeof(*order), assemble_role_order);
	for (unsigned i = 0; rc == 0 && i < k; i++) {
		rc = member_lock(&order[i]->m);
		if (rc == 0) {
			order[i]->locked = true;
		} else if (rc == -EEXIST) {
			graid__log(GRAID_LOG_ERR, "open: %s is held by something outside libgraid "
						  "(mounted, or claimed by md, dm or another program)",
				   order[i]->m.dev.path);
		} else if (rc != -EBUSY) {
			/* Not a holder's doing (its path moved, say): this open goes without it. */
			order[i]->error = rc;
			assemble_leave_out(order[i], GRAID_GIVEN_NOT_HELD, "cannot hold it: %s",
					   graid_strerror(rc));
			rc = 0;
		}
	}
	free(order);
	return rc;
}

/* Who holds the array, by the freshest record among its members; and a description. */
static enum owner_liveness assemble_holder(const struct assembly *as, char *who, size_t len)
{
	const struct superblock *f = NULL;

	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid &&
		    !memcmp(as->c[i].sb.array_uuid, as->c[as->pick].sb.array_uuid, 16) &&
		    (!f || as->c[i].sb.events > f->events))
			f = &as->c[i].sb;
	/* Closed cleanly: its last owner let go, and whoever holds it now has not written yet. */
	if (!f || (f->flags & GRAID_SB_F_CLEAN)) {
		snprintf(who, len, "an opener that has not recorded itself yet");
		return OWNER_UNKNOWN;
	}
	owner_describe(&f->owner, who, len);
	return owner_liveness(&f->owner);
}

int assemble_gather(struct assembly *as, const char *const *paths, unsigned n, bool writable)
{
	uint64_t deadline = graid__now_ns() + ASSEMBLE_HOLDER_WAIT_NS;
	bool told = false;
	uint8_t uuid[16];
	int rc;

	as->n = n;
	as->lock.fd = -1;
	as->c = calloc(n, sizeof(*as->c));
	if (!as->c)
		return -ENOMEM;
	for (;;) {
		struct sb_owner holder;
		enum owner_liveness alive;
		char who[192];

		rc = assemble_read_all(as, paths, writable);
		if (rc || as->pick < 0 || !writable)
			break;
		memcpy(uuid, as->c[as->pick].sb.array_uuid, 16);
		rc = array_uuid_lock_take(&as->lock, uuid, &holder);
		if (rc == -ENOLCK)
			break;
		if (rc == -EBUSY && holder.pid) {
			/* The lock file names its holder, whichever members that one was given. */
			owner_describe(&holder, who, sizeof(who));
			alive = owner_liveness(&holder);
		} else {
			if (rc == 0)
				rc = assemble_lock_members(as);
			if (rc == -EEXIST) {
				rc = -EBUSY; /* not a holder that will let go: no wait */
				break;
			}
			if (rc != -EBUSY)
				break;
			alive = assemble_holder(as, who, sizeof(who));
		}
		assemble_close_all(as);
		if (alive == OWNER_ALIVE) {
			graid__log(GRAID_LOG_ERR, "open: the array is held by %s; nothing was "
						  "written (a change must go through that holder, or "
						  "the holder be stopped first)", who);
			return -EBUSY;
		}
		if (graid__now_ns() > deadline) {
			graid__log(GRAID_LOG_ERR, "open: the array's members are still held after "
						  "%llu s; last recorded holder: %s",
				   ASSEMBLE_HOLDER_WAIT_NS / 1000000000ull, who);
			return -EBUSY;
		}
		if (!told)
			graid__log(GRAID_LOG_NOTICE, "open: the members are held, by %s (%s); "
						     "waiting up to %llu s for them to be let go",
				   who, alive == OWNER_DEAD ? "no longer running" : "not known here",
				   ASSEMBLE_HOLDER_WAIT_NS / 1000000000ull);
		told = true;
		usleep(ASSEMBLE_POLL_US);
	}
	if (rc || as->pick < 0 || !writable)
		return rc;
	/* Held now: what was read before may have changed meanwhile; read it again. */
	for (unsigned i = 0; i < n; i++)
		if (as->c[i].locked)
			assemble_read_sb(&as->c[i]);
		else if (as->c[i].valid)
			/* Not held because it is not the array's (the others were held). */
			assemble_leave_out(&as->c[i], GRAID_GIVEN_OTHER_ARRAY,
					   "member of another array");
	as->pick = assemble_pick(as->c, n);
	if (as->pick >= 0 && memcmp(as->c[as->pick].sb.array_uuid, uuid, 16)) {
		graid__log(GRAID_LOG_ERR, "open: the members changed arrays while being assembled");
		return -EAGAIN;
	}
	return 0;
}

/* Whether @p sb is a hot spare's (its role past the members it records). */
static bool sb_of_spare(const struct superblock *sb)
{
	return sb->role >= sb->nmembers;
}

/* The freshest superblock of the chosen array. */
static const struct superblock *assemble_freshest(const struct assembly *as)
{
	const struct superblock *fresh = &as->c[as->pick].sb;

	for (unsigned i = 0; i < as->n; i++) {
		const struct superblock *sb = &as->c[i].sb;

		if (!as->c[i].valid || memcmp(sb->array_uuid, fresh->array_uuid, 16))
			continue;
		/*
		 * Between equals, one that records no reshape: a grow writes its added roles'
		 * superblocks (recording it) at the members' event before the round that
		 * records it on all at the next, so such a tie is a start cut short before
		 * any member moved on; the old geometry, at position 0, is whole.
		 */
		if (sb->events > fresh->events ||
		    (sb->events == fresh->events && sb_reshape_recorded(fresh) &&
		     !sb_reshape_recorded(sb)))
			fresh = sb;
		/*
		 * Between equals otherwise, a member's over a spare's: a spare can hold the new
		 * level of a level change whose round no member took (the handle kept the old
		 * one and wrote it again at the same event: jobs/reshape_level.c); the members
		 * say what the array is.
		 */
		else if (sb->events == fresh->events &&
			 sb_reshape_recorded(sb) == sb_reshape_recorded(fresh) &&
			 sb_of_spare(fresh) && !sb_of_spare(sb))
			fresh = sb;
	}
	return fresh;
}

/*
 * A member that missed only the superblock round that started a RAID-0, 5, 6 or 10
 * growing: one event behind a freshest superblock that records the reshape, not reshaping
 * itself, with the old member count (fewer roles, its own among them) and all else equal.
 * Its data is where the old geometry puts it, and the reshape's position is still 0 (the
 * job starts only after that round): it is current. The record it holds is checked at open
 * (open_refuse_reshape: the record's old geometry must be its).
 */
static bool assemble_reshape_start_cut(const struct superblock *sb,
				       const struct superblock *fresh)
{
	/* A RAID-5 -> RAID-6 conversion adds one member, Q-last: the old level is 5. */
	bool convert = sb->level == 5 && fresh->level == 6 &&
		       sb_layout_id(fresh) == LAYOUT_Q_LAST && sb->nmembers + 1 == fresh->nmembers;

	return sb_reshape_recorded(fresh) && !sb_reshape_recorded(sb) &&
	       (fresh->level == 0 || fresh->level == 5 || fresh->level == 6 ||
		fresh->level == 10) &&
	       (sb->level == fresh->level || convert) && sb->events + 1 == fresh->events &&
	       sb->nmembers < fresh->nmembers && sb->role < sb->nmembers;
}

/*
 * A member of a Q-last RAID-6 of n + 1 that became the RAID-5 of n (jobs/reshape_level.c):
 * the RAID-6's superblock, behind a freshest RAID-5 of n, neither reshaping, its role one
 * the RAID-5 keeps. Its bytes are the RAID-5's (data and P where Q-last put them), so it
 * is a member of the RAID-5 with the RAID-6's superblock: one event behind, it missed only
 * the conversion's round and is current; further behind, it also missed what came after
 * and is placed as any stale member of the RAID-5 is (assemble_place_behind: caught up or
 * rebuilt, or left out as recorded failed, which ::GRAID_OPEN_FORCE can take back). The
 * dropped member (role n) is not: its geometry disagrees, and it is left out.
 */
static bool assemble_level_drop_cut(const struct superblock *sb, const struct superblock *fresh)
{
	return sb->level == 6 && sb_layout_id(sb) == LAYOUT_Q_LAST && fresh->level == 5 &&
	       sb_layout_id(fresh) == LAYOUT_ROTATING && !sb_reshape_recorded(sb) &&
	       !sb_reshape_recorded(fresh) && sb->nmembers == fresh->nmembers + 1 &&
	       sb->events < fresh->events && sb->role < fresh->nmembers;
}

/*
 * A member of a RAID-1 of two that became the RAID-5 of two, or back (jobs/reshape_level.c):
 * behind, the other of the two levels, two members both, neither reshaping. Both levels
 * hold the same bytes at the same offsets (a RAID-5 of two keeps P = its one data chunk),
 * so it is a member of the fresh level: current one event behind (it missed only the
 * conversion's round), placed as any stale member further behind.
 */
static bool assemble_mirror_level_cut(const struct superblock *sb,
				      const struct superblock *fresh)
{
	return ((sb->level == 1 && fresh->level == 5) || (sb->level == 5 && fresh->level == 1)) &&
	       sb->nmembers == 2 && fresh->nmembers == 2 && !sb_reshape_recorded(sb) &&
	       !sb_reshape_recorded(fresh) && sb->events < fresh->events && sb->role < 2;
}

/*
 * A hot spare whose superblock missed a conversion's round (members are written before
 * spares, and a spare's failed write is no error): one event behind, a spare of the old
 * geometry of either conversion. A spare of the old geometry is one of the new: no data of
 * the array is on it.
 */
static bool assemble_level_spare_cut(const struct superblock *sb, const struct superblock *fresh)
{
	bool drop_q = sb->level == 6 && sb_layout_id(sb) == LAYOUT_Q_LAST && fresh->level == 5 &&
		      sb_layout_id(fresh) == LAYOUT_ROTATING &&
		      sb->nmembers == fresh->nmembers + 1;
	bool mirror = ((sb->level == 1 && fresh->level == 5) ||
		       (sb->level == 5 && fresh->level == 1)) &&
		      sb->nmembers == 2 && fresh->nmembers == 2;

	return (drop_q || mirror) && !sb_reshape_recorded(sb) && !sb_reshape_recorded(fresh) &&
	       sb->events + 1 == fresh->events && sb->role >= sb->nmembers &&
	       sb->member_state[sb->role] == GRAID_MEMBER_SPARE;
}

/*
 * A spare one conversion behind records its slot as the old geometry numbered it, and a
 * Q drop renumbers the spares from the new member count (spare slots follow the members):
 * its slot in the freshest superblock is the spare slot holding its slot id, which is where
 * it sits now (its old number may be another spare's, left out as replaced otherwise). A
 * spare the freshest no longer lists keeps its own number, checked as any spare's.
 */
static void assemble_spare_renumber(struct open_candidate *c, const struct superblock *fresh,
				    uint64_t id)
{
	if (!id || !assemble_level_spare_cut(&c->sb, fresh))
		return;
	for (unsigned j = fresh->nmembers; j < GRAID_SB_MAX_MEMBERS; j++)
		if (fresh->member_state[j] == GRAID_MEMBER_SPARE && fresh->slot_id[j] == id) {
			c->sb.role = j;
			return;
		}
}

/* A superblock of the other level of a conversion (the rules above), a member's. */
static bool assemble_cross_level(const struct superblock *sb, const struct superblock *fresh)
{
	return assemble_level_drop_cut(sb, fresh) || assemble_mirror_level_cut(sb, fresh);
}

static bool assemble_geometry_agrees(const struct superblock *sb, const struct superblock *fresh)
{
	return ((sb->level == fresh->level && sb->nmembers == fresh->nmembers &&
		 sb_layout_id(sb) == sb_layout_id(fresh)) ||
		assemble_reshape_start_cut(sb, fresh) || assemble_cross_level(sb, fresh) ||
		assemble_level_spare_cut(sb, fresh)) &&
	       sb->chunk_bytes == fresh->chunk_bytes &&
	       sb->data_offset == fresh->data_offset &&
	       sb->data_bytes == fresh->data_bytes &&
	       (sb->flags & GRAID_SB_F_CHECKSUMS) == (fresh->flags & GRAID_SB_F_CHECKSUMS) &&
	       (sb->role < fresh->nmembers ||
		fresh->member_state[sb->role] == GRAID_MEMBER_SPARE ||
		assemble_level_spare_cut(sb, fresh));
}

/*
 * A member whose superblock is behind the freshest: it comes back only if it was merely
 * absent (MISSING, never FAILED) and is still the role's device. It then catches up from
 * the bitmap where the bitmap has kept every mark since before it left (its own last
 * event + 1: the open that left it out is the first it missed), else is rebuilt whole.
 */
/*
 * Was the member written after the others recorded it out? Then it holds writes the array
 * never saw (the array was split: each part opened without the other), and neither a
 * catch-up nor a rebuild may silently pick a side. The freshest superblock records the
 * event at which each slot went out; where it does not (format 1.0), the member's own
 * superblock recording out a role that the freshest has in tells the same.
 */
static bool assemble_diverged(const struct open_candidate *c, const struct superblock *fresh)
{
	uint32_t left = fresh->left_events[c->sb.role];

	/*
	 * A member of the other level of a conversion: the round's event step lies between
	 * its events and the others', so left_events alone cannot tell (a member that missed
	 * the round, then was opened alone, is still behind the side that took it): its own
	 * record of a role out that the freshest has in tells it too.
	 */
	if (left && !assemble_cross_level(&c->sb, fresh)) /* serial numbers, 32 bits */
		return (int32_t)((uint32_t)c->sb.events - left) >= 0;
	if (left && (int32_t)((uint32_t)c->sb.events - left) >= 0)
		return true;
	for (unsigned r = 0; r < fresh->nmembers; r++)
		if ((c->sb.member_state[r] == GRAID_MEMBER_MISSING ||
		     c->sb.member_state[r] == GRAID_MEMBER_FAILED) &&
		    fresh->member_state[r] == GRAID_MEMBER_ACTIVE)
			return true;
	return false;
}

static void assemble_place_behind(struct open_candidate *c, const struct superblock *fresh)
{
	uint8_t st = fresh->member_state[c->sb.role];
	uint8_t own = c->sb.member_state[c->sb.role];

	if ((st == GRAID_MEMBER_MISSING || st == GRAID_MEMBER_FAILED) &&
	    assemble_diverged(c, fresh)) {
		graid__log(GRAID_LOG_ERR, "open: %s (role %u) was written after the other members "
					  "recorded it out (event %llu): the array was split and "
					  "this member holds writes the others do not; left out (replace "
					  "it, or assemble from it alone to keep its side)",
			   c->m.dev.path, c->sb.role, (unsigned long long)c->sb.events);
		assemble_leave_out(c, GRAID_GIVEN_DIVERGED, "diverged from the array (split: it "
				   "was written after the others recorded it out)");
		return;
	}
	if (st != GRAID_MEMBER_MISSING) {
		c->forcible = true;
		if (c->sb.events + 1 < fresh->events)
			assemble_leave_out(c, GRAID_GIVEN_STALE, "stale (event %llu; the array is at "
					   "%llu and records role %u %s)",
					   (unsigned long long)c->sb.events,
					   (unsigned long long)fresh->events, c->sb.role,
					   st == GRAID_MEMBER_FAILED ? "failed" : "out");
		else
			assemble_leave_out(c, GRAID_GIVEN_FAILED, "marked failed by the other members");
		return;
	}
	if (own == GRAID_MEMBER_ACTIVE && fresh->history_events &&
	    fresh->history_events <= c->sb.events + 1) {
		c->join = JOIN_CATCHUP;
		graid__log(GRAID_LOG_NOTICE, "open: %s (role %u) comes back from event %llu; it "
					     "catches up from the write-intent bitmap",
			   c->m.dev.path, c->sb.role, (unsigned long long)c->sb.events);
	} else {
		c->join = JOIN_FULL;
		graid__log(GRAID_LOG_NOTICE, "open: %s (role %u) comes back from event %llu; what "
					     "it missed is not known, so it is rebuilt whole",
			   c->m.dev.path, c->sb.role, (unsigned long long)c->sb.events);
	}
}

/*
 * The role's own device, whose contents cannot be trusted as a whole: out, and its role
 * recorded failed (open_install), never caught up from the bitmap. A copy of a member
 * (another NVMe namespace) may be forced back; a shrunk device cannot serve its tail.
 */
__attribute__((format(printf, 4, 5)))
static void assemble_distrust(struct open_candidate *c, const struct superblock *fresh,
			      int verdict, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->verdict = verdict;
	c->valid = false;
	c->distrusted = true;
	c->forcible = verdict == GRAID_GIVEN_IDENTITY;
	if (c->sb.role >= fresh->nmembers) {
		graid__log(GRAID_LOG_WARNING, "open: leaving out spare %s: %s", c->m.dev.path, c->why);
		return;
	}
	graid__log(GRAID_LOG_WARNING, "open: leaving out %s: %s; role %u counts as failed (a "
				      "writable open records it so): it is rebuilt whole once "
				      "replaced (by this device too, once it is whole again), never "
				      "caught up", c->m.dev.path, c->why, c->sb.role);
}

/*
 * Two geometries at the freshest event: the array was split across a level change (one
 * side took the conversion's round, the other opened without it and moved on at the same
 * event). Neither side is provably the other's past, so neither may be taken over the
 * other's writes whichever order the paths come in. The tie a grow leaves (its added roles
 * written at E, recording the reshape) is not one: assemble_freshest settles it. The
 * candidate of the other geometry, or -1.
 */
static int assemble_split_geometry(const struct assembly *as, const struct superblock *fresh)
{
	for (unsigned i = 0; i < as->n; i++) {
		const struct superblock *sb = &as->c[i].sb;

		/* A spare holds no data: never a side of a split (assemble_freshest). */
		if (!as->c[i].valid || memcmp(sb->array_uuid, fresh->array_uuid, 16) ||
		    sb->events != fresh->events || sb_of_spare(sb) ||
		    sb_reshape_recorded(sb) != sb_reshape_recorded(fresh))
			continue;
		if (sb->level != fresh->level || sb->nmembers != fresh->nmembers ||
		    sb_layout_id(sb) != sb_layout_id(fresh))
			return (int)i;
	}
	return -1;
}

/* The candidate whose superblock is @p sb. */
static const struct open_candidate *assemble_owner_of(const struct assembly *as,
						      const struct superblock *sb)
{
	for (unsigned i = 0; i < as->n; i++)
		if (&as->c[i].sb == sb)
			return &as->c[i];
	return &as->c[0];
}

int assemble_filter(struct assembly *as)
{
	const struct superblock *fresh = assemble_freshest(as);
	struct open_candidate *c = as->c;
	int split = assemble_split_geometry(as, fresh);

	as->fresh = fresh;
	if (split >= 0) {
		const struct open_candidate *f = assemble_owner_of(as, fresh);

		graid__log(GRAID_LOG_ERR, "open: the array was split across a level change: at "
					  "event %llu, %s says RAID-%u of %u members and %s says RAID-%u "
					  "of %u; each side moved on without the other, and neither is "
					  "taken over the other's writes; nothing is written (open one "
					  "side's members alone to keep its side, then replace the "
					  "other's)",
			   (unsigned long long)fresh->events, f->m.dev.path, fresh->level,
			   fresh->nmembers, c[split].m.dev.path, c[split].sb.level,
			   c[split].sb.nmembers);
		for (unsigned i = 0; i < as->n; i++)
			if (c[i].valid && !memcmp(c[i].sb.array_uuid, fresh->array_uuid, 16))
				assemble_leave_out(&c[i], GRAID_GIVEN_DIVERGED, "the array was split "
						   "across a level change (RAID-%u of %u and RAID-%u "
						   "of %u at event %llu)", fresh->level,
						   fresh->nmembers, c[split].sb.level,
						   c[split].sb.nmembers,
						   (unsigned long long)fresh->events);
		return -EIO;
	}
	for (unsigned i = 0; i < as->n; i++) {
		const struct superblock *sb = &c[i].sb;
		uint64_t id = member_slot_id(sb->member_uuid);

		bool agrees;

		if (!c[i].valid)
			continue;
		c[i].join = JOIN_CURRENT;
		agrees = assemble_geometry_agrees(sb, fresh);
		if (agrees)
			assemble_spare_renumber(&c[i], fresh, id);
		if (memcmp(sb->array_uuid, fresh->array_uuid, 16))
			assemble_leave_out(&c[i], GRAID_GIVEN_OTHER_ARRAY, "member of another array");
		else if (!agrees)
			assemble_leave_out(&c[i], GRAID_GIVEN_GEOMETRY,
					   "superblock disagrees with the array's geometry");
		else if (fresh->slot_id[sb->role] && fresh->slot_id[sb->role] != id)
			assemble_leave_out(&c[i], GRAID_GIVEN_REPLACED,
					   "its role was given to another device");
		else if (c[i].m.dev.size < sb_member_end(sb))
			assemble_distrust(&c[i], fresh, GRAID_GIVEN_SHRUNK, "smaller than its "
					  "superblock says (%llu bytes; its %s area ends at %llu)",
					  (unsigned long long)c[i].m.dev.size,
					  sb->tag_bytes ? "tag" : "data",
					  (unsigned long long)sb_member_end(sb));
		else if (!member_identity_matches(&c[i].m.dev.nvme, &sb->nvme))
			assemble_distrust(&c[i], fresh, GRAID_GIVEN_IDENTITY, "its superblock was "
					  "written on another NVMe namespace (NSID %u of %s): a copy",
					  sb->nvme.nsid, sb->nvme.subnqn);
		else if (sb->role < fresh->nmembers &&
			 (sb->events + 1 < fresh->events ||
			  (fresh->member_state[sb->role] != GRAID_MEMBER_ACTIVE &&
			   fresh->member_state[sb->role] != GRAID_MEMBER_REBUILDING)))
			/*
			 * One behind is a superblock update cut short (every update is written to
			 * all live members before the next starts): its data is as fresh as the
			 * others', and the freshest superblock's member states say whether it is
			 * still in. Two behind means it missed an update meant for it.
			 */
			assemble_place_behind(&c[i], fresh);
		else if (sb->role >= fresh->nmembers && sb->events + 1 < fresh->events)
			assemble_leave_out(&c[i], GRAID_GIVEN_STALE, "stale spare (event %llu; the "
					   "array is at %llu)", (unsigned long long)sb->events,
					   (unsigned long long)fresh->events);
		for (unsigned j = 0; j < i && c[i].valid; j++)
			if (c[j].valid && c[j].sb.role == sb->role) {
				/* The fresher of the two keeps the role. */
				struct open_candidate *loser =
					c[j].join == JOIN_CURRENT || c[i].join != JOIN_CURRENT ? &c[i]
												: &c[j];

				assemble_leave_out(loser, GRAID_GIVEN_ROLE_TAKEN, "its role is taken "
						   "by another member given (%s)",
						   loser == &c[i] ? c[j].m.dev.path : c[i].m.dev.path);
			}
	}
	return 0;
}

/*
 * Whether @p state carries the array: a->lay is the freshest superblock's geometry here
 * (the routing state is set after the members are installed), so a reshape the record
 * describes has its old geometry checked too (a RAID-5 becoming a RAID-6 needs its
 * unconverted rows whole).
 */
static bool assemble_survivable(const struct assembly *as, const struct graid_array *a,
				const uint8_t *state)
{
	struct layout old;

	if (as->reshape && reshape_geom_layout(&as->reshape_rec.old_geo, &old) == 0 &&
	    !layout_roles_survivable(&old, state))
		return false;
	return array_roles_survivable(a, state);
}

unsigned assemble_force(struct assembly *as, const struct graid_array *a)
{
	uint8_t state[GRAID_MAX_MEMBERS];
	unsigned forced = 0;

	for (unsigned r = 0; r < a->nmembers; r++)
		state[r] = GRAID_MEMBER_MISSING;
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid && as->c[i].sb.role < a->nmembers)
			state[as->c[i].sb.role] = as->c[i].join == JOIN_CURRENT
							  ? as->fresh->member_state[as->c[i].sb.role]
							  : GRAID_MEMBER_REBUILDING;
	while (!assemble_survivable(as, a, state)) {
		struct open_candidate *best = NULL;

		for (unsigned i = 0; i < as->n; i++) {
			struct open_candidate *c = &as->c[i];

			if (c->forcible && c->sb.role < a->nmembers &&
			    state[c->sb.role] != GRAID_MEMBER_ACTIVE &&
			    c->sb.member_state[c->sb.role] == GRAID_MEMBER_ACTIVE &&
			    (!best || c->sb.events > best->sb.events))
				best = c;
		}
		if (!best)
			break;
		/* Whoever held the role before (a replacement being rebuilt) gives it back. */
		for (unsigned i = 0; i < as->n; i++)
			if (as->c[i].valid && as->c[i].sb.role == best->sb.role)
				assemble_leave_out(&as->c[i], GRAID_GIVEN_ROLE_TAKEN, "its role is "
						   "forced to another member (%s)", best->m.dev.path);
		best->valid = true;
		best->forcible = best->distrusted = false;
		best->join = JOIN_FORCED;
		best->verdict = GRAID_GIVEN_MEMBER;
		best->why[0] = '\0';
		state[best->sb.role] = GRAID_MEMBER_ACTIVE;
		graid__log(GRAID_LOG_WARNING, "open: forcing %s back into role %u from event %llu "
					      "(the array is at event %llu, and recorded it %s)",
			   best->m.dev.path, best->sb.role, (unsigned long long)best->sb.events,
			   (unsigned long long)as->fresh->events,
			   as->fresh->member_state[best->sb.role] == GRAID_MEMBER_FAILED ? "failed"
											  : "missing");
		forced++;
	}
	return forced;
}

bool assemble_role_distrusted(const struct assembly *as, unsigned role)
{
	bool distrusted = false;

	for (unsigned i = 0; i < as->n; i++) {
		const struct open_candidate *c = &as->c[i];

		if (c->valid && c->sb.role == role)
			return false; /* another device given holds the role */
		distrusted |= c->distrusted && c->sb.role == role &&
			      !memcmp(c->sb.array_uuid, as->fresh->array_uuid, 16);
	}
	return distrusted;
}

struct graid_given_info *assemble_verdicts(const struct assembly *as, unsigned nmembers)
{
	struct graid_given_info *v = calloc(as->n, sizeof(*v));

	for (unsigned i = 0; v && i < as->n; i++) {
		const struct open_candidate *c = &as->c[i];

		v[i].struct_size = sizeof(v[i]);
		v[i].verdict = c->valid ? (c->sb.role < nmembers ? GRAID_GIVEN_MEMBER
								 : GRAID_GIVEN_SPARE)
					: c->verdict;
		v[i].role = c->has_sb ? (int)c->sb.role : -1;
		v[i].error = c->valid ? 0 : c->error;
		v[i].events = c->has_sb ? c->sb.events : 0;
		v[i].writable = c->writable;
		if (!c->valid)
			snprintf(v[i].why, sizeof(v[i].why), "%s", c->why);
	}
	return v;
}

void assemble_release(struct assembly *as)
{
	if (as->c)
		for (unsigned i = 0; i < as->n; i++)
			member_close(&as->c[i].m);
	array_uuid_lock_release(&as->lock);
	free(as->c);
	as->c = NULL;
}
