/* SPDX-License-Identifier: MIT */
/* graid_array_open(): assemble an array from its members' superblocks, trusting nothing stale. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/array_assemble.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/journal.h"
#include "api/array_life.h"
#include "api/open_claim.h"
#include "api/open_reserve.h"
#include "ownership/lease.h"
#include "jobs/jobs.h"
#include "jobs/reshape_grow.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/array_view.h"
#include "meta/array_flush.h"
#include "meta/array_meta.h"
#include "meta/events.h"

/* The caller's lease spec, as far as its struct carries one. */
static const char *open_lease_spec(const struct graid_open_options *opts)
{
	if (!opts || opts->struct_size < offsetof(struct graid_open_options, lease) +
						 sizeof(opts->lease))
		return NULL;
	return opts->lease;
}

/* The caller's flags, as far as its struct carries them. */
static unsigned open_flags(const struct graid_open_options *opts)
{
	if (!opts || opts->struct_size < offsetof(struct graid_open_options, flags) +
						 sizeof(opts->flags))
		return 0;
	return opts->flags;
}

/* Put every member kept into its role (or a spare's slot), in the state it joins with. */
static void open_install(struct graid_array *a, struct assembly *as)
{
	const struct superblock *fresh = as->fresh;

	/*
	 * A role nobody takes stays FAILED if it was (only a replacement ends that), and is
	 * MISSING otherwise: absent now, and welcome back (assemble_place_behind). Unless its
	 * device was given and cannot be trusted as a whole (shrunk, a copy): FAILED, so that
	 * it is never caught up from the bitmap, only rebuilt whole.
	 */
	for (unsigned r = 0; r < a->nmembers; r++) {
		a->members[r].role.slot_id = fresh->slot_id[r];
		a->members[r].role.left_events = fresh->left_events[r];
		if (fresh->member_state[r] == GRAID_MEMBER_FAILED || assemble_role_distrusted(as, r))
			atomic_init(&a->members[r].state, GRAID_MEMBER_FAILED);
	}
	for (unsigned i = 0; i < as->n; i++) {
		struct open_candidate *c = &as->c[i];
		unsigned role = c->sb.role;
		struct member *m;

		if (!c->valid)
			continue;
		if (role >= a->nmembers) {
			if (a->nspares == GRAID_MAX_SPARES) {
				c->valid = false;
				c->verdict = GRAID_GIVEN_SPARES_FULL;
				snprintf(c->why, sizeof(c->why), "the array keeps at most %u spares",
					 GRAID_MAX_SPARES);
				graid__log(GRAID_LOG_WARNING, "open: leaving out %s: %s", c->m.dev.path,
					   c->why);
				continue;
			}
			m = &a->spares[a->nspares++];
		} else {
			m = &a->members[role];
		}
		*m = c->m;
		memcpy(m->dev.uuid, c->sb.member_uuid, 16);
		m->role.slot_id = member_slot_id(m->dev.uuid);
		m->role.catchup = false;
		m->role.left_events = 0;
		m->role.forced = c->join == JOIN_FORCED;
		if (role >= a->nmembers) {
			atomic_init(&m->state, GRAID_MEMBER_SPARE);
		} else if (c->join == JOIN_CURRENT &&
			   fresh->member_state[role] == GRAID_MEMBER_REBUILDING) {
			/* Resume where the checkpoint says; its own superblock holds it. */
			atomic_init(&m->state, GRAID_MEMBER_REBUILDING);
			m->role.rebuild_offset = c->sb.rebuild_offset;
			m->role.catchup = fresh->slot_flags[role] & GRAID_SB_SLOT_CATCHUP;
		} else if (c->join == JOIN_CATCHUP || c->join == JOIN_FULL) {
			atomic_init(&m->state, GRAID_MEMBER_REBUILDING);
			m->role.rebuild_offset = 0;
			m->role.catchup = c->join == JOIN_CATCHUP;
			m->role.rejoined = true;
		} else {
			atomic_init(&m->state, GRAID_MEMBER_ACTIVE);
		}
		c->m.dev.fd = -1; /* now owned by the array */
		c->m.dev.fault = NULL;
	}
}

/* "2, 3" for the roles not active; how many. */
static unsigned open_roles_out(const struct graid_array *a, char *buf, size_t len)
{
	unsigned n = 0;
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned r = 0; r < a->nmembers; r++) {
		int st = atomic_load(&a->members[r].state);

		if (st == GRAID_MEMBER_ACTIVE)
			continue;
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%u%s", n ? ", " : "", r,
					       st == GRAID_MEMBER_REBUILDING ? " (rebuilding)" : "");
		n++;
	}
	return n;
}

/*
 * Members that came back to catch up, with nothing marked in the bitmap, missed no write:
 * in sync as they are. The others are copied their marked regions in the background.
 * @return whether any role is left to rebuild because it came back at this open.
 */
static bool open_settle_returns(struct graid_array *a, const struct assembly *as)
{
	bool work = false, marked = bitmap_dirty_regions(a) != 0;

	for (unsigned i = 0; i < as->n; i++) {
		const struct open_candidate *c = &as->c[i];
		struct member *m;

		if (!c->valid || c->sb.role >= a->nmembers)
			continue;
		m = &a->members[c->sb.role];
		/* Only a member still coming back: one taken out since (its log) stays out. */
		if (atomic_load(&m->state) != GRAID_MEMBER_REBUILDING)
			continue;
		if (m->role.catchup && !marked) {
			m->role.catchup = false;
			atomic_store(&m->state, GRAID_MEMBER_ACTIVE);
			graid__log(GRAID_LOG_NOTICE, "open: role %u (%s) is in sync: nothing was "
						     "written while it was out", c->sb.role, m->dev.path);
		} else if (m->role.catchup || c->join == JOIN_FULL) {
			work = true;
		}
	}
	return work;
}

static bool open_unreachable_given(const struct assembly *as)
{
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].unreachable)
			return true;
	return false;
}

static bool open_any_rejoined(const struct graid_array *a)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		if (a->members[r].role.rejoined)
			return true;
	return false;
}

/*
 * Forced members may hold stale data where the array was written after they left: those
 * regions are resynced. The bitmap names them when it kept its marks since before the
 * earliest forced member left; otherwise every region is marked.
 */
static int open_mark_forced(struct graid_array *a, const struct assembly *as)
{
	for (unsigned i = 0; i < as->n; i++) {
		const struct open_candidate *c = &as->c[i];

		if (!c->valid || c->join != JOIN_FORCED)
			continue;
		if (as->fresh->history_events && as->fresh->history_events <= c->sb.events + 1)
			continue;
		if (a->lay.level == 0) {
			/* No redundancy: nothing can disagree, and nothing can be resynced. */
			graid__log(GRAID_LOG_NOTICE, "open: RAID-0 keeps no redundancy: nothing to "
						     "resync; writes that failed while %s was out "
						     "were reported failed to their writers",
				   c->m.dev.path);
			return 0;
		}
		if (!a->bitmap.enabled) {
			graid__log(GRAID_LOG_WARNING, "open: no write-intent bitmap: scrub the whole "
						      "array with repair to make it consistent");
			return 0;
		}
		graid__log(GRAID_LOG_WARNING, "open: the bitmap does not cover what %s missed: "
					      "every region is resynced", c->m.dev.path);
		return bitmap_mark_all(a);
	}
	return 0;
}

/* The superblock the device now in role @p role was assembled with, or NULL. */
static const struct superblock *open_role_sb(const struct assembly *as, unsigned role)
{
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid && as->c[i].sb.role == role)
			return &as->c[i].sb;
	return NULL;
}

/*
 * Each member's bad-block log, before the roles are counted: a member whose log cannot be
 * read cannot be trusted (a block it recorded lost would read as data), so it is failed
 * and rebuilt whole, as a member that came back shorter is. A member whose own superblock
 * names no log may still hold one (its superblock was rewritten by an older writer, or is
 * one event behind the write that took dropped logs back): a valid log for its own UUID is
 * read as any other. Only where it holds none that can be read (it was out when the array
 * got its logs, and its area may hold anything) does it start with an empty log, written by
 * a writable open.
 */
static int open_bad_blocks(struct graid_array *a, const struct assembly *as, bool writable)
{
	const struct superblock *fresh = as->fresh;
	int rc = badblocks_init(a, fresh->bbl_offset, fresh->bbl_bytes);

	for (unsigned r = 0; rc == 0 && r < a->nmembers; r++) {
		struct member *m = &a->members[r];
		const struct superblock *own = open_role_sb(as, r);
		int st = atomic_load(&m->state);

		if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)
			continue;
		if (badblocks_load(a, r) == 0)
			continue;
		if (own && !own->bbl_bytes) {
			if (writable && badblocks_reset(a, r))
				graid__log(GRAID_LOG_WARNING, "open: role %u (%s): its first (empty) "
							      "bad-block log could not be written", r,
					   m->dev.path);
			continue;
		}
		graid__log(GRAID_LOG_ERR, "open: role %u (%s) is taken out: its bad-block log "
					  "cannot be read, so blocks it may record lost cannot be told "
					  "from data; it is rebuilt whole when replaced", r, m->dev.path);
		atomic_store(&m->state, GRAID_MEMBER_FAILED);
		m->role.catchup = false;
		m->role.rejoined = false;
	}
	return rc == -ENOMEM ? rc : 0;
}

/*
 * An array made before bad-block logs (format 1.3 and older) gets one at a writable open
 * where the reserved area has room for it, before the superblocks name it. Superblocks
 * rewritten by a writer older than 1.4 name no log either, though the members still hold
 * theirs: a member's valid log for its own UUID at the usual place is taken back as it is;
 * only a member without one gets an empty log. Without room the array runs without logs
 * (a read error no redundancy covers then fails its member, as before).
 */
static void open_adopt_bad_blocks(struct graid_array *a)
{
	const uint64_t off = BBL_DEFAULT_OFFSET, end = off + BBL_AREA_BYTES;
	const uint64_t areas[3][2] = {
		{ a->bitmap.map.offset, a->bitmap.map.bytes },
		{ a->live ? a->live->map.offset : 0, a->live ? a->live->map.bytes : 0 },
		{ a->log_area.offset, a->log_area.bytes },
	};
	unsigned kept = 0;
	int rc;

	if (a->bbl || a->lay.level == 0 || a->data_offset < end)
		return;
	for (unsigned i = 0; i < 3; i++)
		if (areas[i][1] && areas[i][0] < end && off < areas[i][0] + areas[i][1])
			return;
	rc = badblocks_init(a, off, BBL_AREA_BYTES);
	for (unsigned r = 0; rc == 0 && r < a->nmembers; r++) {
		int st = atomic_load(&a->members[r].state);

		if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)
			continue;
		if (badblocks_load(a, r) == 0 && badblocks_any(a, r)) {
			kept++; /* its records survived a writer that did not know them */
			continue;
		}
		rc = badblocks_reset(a, r);
	}
	if (rc) {
		graid__log(GRAID_LOG_WARNING, "open: could not set up bad-block logs (%s): the "
					      "array runs without them", graid_strerror(rc));
		badblocks_free(a);
		a->bbl_area.offset = a->bbl_area.bytes = 0;
		return;
	}
	graid__log(GRAID_LOG_NOTICE, "open: bad-block logs set up (format 1.4)%s",
		   kept ? "; members' logs that an older writer had dropped from the superblocks "
			  "are kept" : "");
}

/*
 * A look (read-only open): who holds the array writable on this host now, if anyone alive
 * does, and whether it was left unclean: no clean close recorded, and no live holder here
 * (one would have cleared the flag on its own open). The next writable open resyncs then.
 */
static void open_look_holder(struct graid_array *a, const struct superblock *fresh)
{
	struct sb_owner h;

	if (array_uuid_holder(a->uuid, &h) == 0 && owner_liveness(&h) == OWNER_ALIVE)
		a->holder = h;
	else if (a->view.valid)
		a->holder.pid = a->view.pid; /* published by a live holder: it holds the array */
	a->unclean = !(fresh->flags & GRAID_SB_F_CLEAN) && !a->holder.pid;
}

/* One open's state as it goes through its phases: what open_unwind gives back. */
struct open_ctx {
	struct assembly as;         /* the devices gathered; their descriptors until installed */
	struct open_claim cl;       /* lease, owner epoch, reservations, fence */
	struct graid_array *a;      /* the array being built, freed unless handed out */
	const struct graid_open_options *opts;
	unsigned flags;
	unsigned forced;            /* members taken back by GRAID_OPEN_FORCE */
	bool read_only;
	bool returns;               /* a role came back at this open and is to be rebuilt */
};

/* The arguments graid_array_open() refuses with -EINVAL before it touches any device. */
static bool open_args_valid(const char *const *members, unsigned nmembers,
			    const struct graid_open_options *opts, unsigned flags,
			    struct graid_array **out)
{
	const unsigned all = GRAID_OPEN_RESYNC_BACKGROUND | GRAID_OPEN_READ_ONLY |
			     GRAID_OPEN_FORCE | GRAID_OPEN_TAKEOVER | GRAID_OPEN_RESERVE;

	if (!members || !out || nmembers == 0 || nmembers > GRAID_MAX_MEMBERS)
		return false;
	if (opts && opts->struct_size < offsetof(struct graid_open_options, backend) +
						sizeof(opts->backend))
		return false;
	if (flags & ~all)
		return false;
	return !((flags & GRAID_OPEN_READ_ONLY) &&
		 (flags & (GRAID_OPEN_FORCE | GRAID_OPEN_TAKEOVER | GRAID_OPEN_RESERVE)));
}

/*
 * Whether the roles the array has now let its level run; logged with the roles out where
 * they do not.
 */
static bool open_survivable(const struct graid_array *a, bool read_only)
{
	uint8_t state[GRAID_MAX_MEMBERS];
	char roles[256];
	unsigned out_count;

	for (unsigned r = 0; r < a->nmembers; r++)
		state[r] = (uint8_t)atomic_load(&a->members[r].state);
	if (array_roles_survivable(a, state))
		return true;
	out_count = open_roles_out(a, roles, sizeof(roles));
	graid__log(GRAID_LOG_ERR, "open: only %u of %u members usable; RAID-%d cannot be "
				  "assembled (roles out: %s; nothing was written)%s",
		   a->nmembers - out_count, a->nmembers, a->lay.level, roles,
		   read_only ? "" : "; GRAID_OPEN_FORCE (graidctl assemble --force) takes "
				    "back members the others recorded failed");
	return false;
}

/*
 * Phase 2, the handle: the array allocated with the lease, its layout, every member kept
 * in its role or a spare's slot (their descriptors the array's now), the bad-block logs
 * read, the reservations the array's to release, the roles checked to carry the level and
 * the parity engine open. Nothing is written. A failure leaves o->a for array_free (which
 * closes what it took) and the rest in o for the unwinding.
 */
static int open_build(struct open_ctx *o, unsigned ngiven)
{
	const struct superblock *fresh = o->as.fresh;
	struct graid_array *a = array_alloc(fresh->nmembers,
					    ARRAY_GROW_ROOM_FOR(fresh->level));
	int rc;

	o->a = a;
	if (!a)
		return -ENOMEM;
	a->lease = o->cl.lease; /* released by array_free, after the last write */
	o->cl.lease = NULL;
	rc = layout_init_id(&a->lay, fresh->level, fresh->nmembers, fresh->chunk_bytes,
			    fresh->data_bytes, sb_layout_id(fresh));
	if (rc)
		return rc;
	if (o->flags & GRAID_OPEN_FORCE)
		o->forced = assemble_force(&o->as, a);
	open_install(a, &o->as);
	/* A RAID-0 growing: a->lay the old geometry, requests routed by the record's position. */
	if (o->as.reshape)
		rc = reshape_grow_resume(a, &o->as.reshape_rec, !o->read_only);
	if (rc)
		return rc;
	/* What became of each path given, for graid_array_given_info() (NULL: none kept). */
	a->given = assemble_verdicts(&o->as, a->nmembers);
	a->ngiven = a->given ? ngiven : 0;
	a->data_offset = fresh->data_offset;
	rc = open_bad_blocks(a, &o->as, !o->read_only);
	if (rc)
		return rc;
	/* The array's descriptors carry the reservations now: array_free releases them. */
	a->pr_key = o->cl.pr_key;
	a->pr_strict = o->flags & GRAID_OPEN_RESERVE;
	if (!open_survivable(a, o->read_only))
		return -EIO;
	rc = array_open_engine(a, o->opts ? o->opts->backend : NULL);
	if (rc)
		return rc;
	memcpy(a->uuid, fresh->array_uuid, 16);
	a->block_size = fresh->block_size;
	a->ctime = fresh->ctime;
	a->history_events = fresh->history_events;
	a->scrub_offset = fresh->scrub_offset;
	/* Checksums: the tags of every role, read as they are needed (tag_store.h). */
	a->csum = fresh->flags & GRAID_SB_F_CHECKSUMS;
	a->tag_offset = fresh->tag_offset;
	a->tag_bytes = fresh->tag_bytes;
	/*
	 * Generations before anything runs (the journal's replay, the resync at open), as the
	 * freshest superblock says: a crash in the round that upgrades an older array leaves
	 * some members with the bit and some without, and the freshest's is the array's. An
	 * older checksummed array gets them at its first writable open (open_start).
	 */
	a->csum_gens = a->csum && sb_generations(fresh);
	return tag_store_open(a);
}

/*
 * Phase 3, the maps: the write-intent bitmap (its marks loaded where they mean something),
 * the journal's areas and the live-data map; a writable open writes the whole map to every
 * member, its first write. A failure leaves what was set up to array_free.
 */
static int open_maps(struct graid_array *a, const struct superblock *fresh, bool read_only)
{
	int rc = bitmap_init(a, fresh->bitmap_offset, fresh->bitmap_bytes,
			     fresh->bitmap_region_stripes);

	/* Unclean: marks to resync. Kept history (a role was out): marks to catch up from. */
	if (rc == 0 && (!(fresh->flags & GRAID_SB_F_CLEAN) || fresh->history_events))
		rc = bitmap_load(a);
	if (rc == 0 && fresh->log_bytes)
		rc = journal_init(a, fresh->log_offset, fresh->log_bytes);
	/* Format 1.0/1.1 arrays have no map: everything counts as used. */
	if (rc == 0)
		rc = live_init(a, fresh->live_offset, fresh->live_bytes,
			       fresh->live_region_stripes);
	if (rc == 0)
		rc = live_load(a);
	/* A member that came back, or a new one, gets the whole map: it may have missed bits. */
	if (rc == 0 && !read_only)
		rc = live_write_all(a);
	if (rc)
		return rc;
	a->read_only = read_only;
	if (read_only && a->journal && !(fresh->flags & GRAID_SB_F_CLEAN))
		graid__log(GRAID_LOG_WARNING, "open: read-only after an unclean shutdown: the "
					      "journal is not replayed, degraded reads of stripes being "
					      "written at the crash may be wrong until a writable open");
	return 0;
}

/*
 * Phase 4 of a look (read-only open), its last: no event, no resync, no spare takeover,
 * no catching up; what the superblocks and a live holder say, for graid_array_info. It
 * cannot fail.
 */
static void open_look(struct graid_array *a, const struct superblock *fresh)
{
	a->events = fresh->events;
	a->owner = fresh->owner; /* whose it is, for graid_array_info */
	/*
	 * Not closed cleanly (a crash, or a holder writing now): the marked regions may hold
	 * data newer than its tags, which no resync of this look makes right. A mismatch there
	 * is answered from the data (csum_report_unresynced), as before a writable open's
	 * resync reaches it, not taken for corruption (and failed where no copy verifies).
	 */
	if (!(fresh->flags & GRAID_SB_F_CLEAN) && bitmap_dirty_regions(a))
		bitmap_resync_pending(a, 0);
	array_recount(a);
	array_view_load(a);
	open_look_holder(a, fresh);
}

/*
 * Spares the freshest superblock records that this open did not find (left out, or not
 * given): SPARES_MISSING. Its superblock writes record only the spares found, so a spare
 * lost is reported by the one open that first went without it.
 */
static void open_spares_missing(struct graid_array *a, const struct superblock *fresh)
{
	unsigned recorded = 0;

	for (unsigned s = fresh->nmembers; s < GRAID_SB_MAX_MEMBERS; s++)
		recorded += fresh->member_state[s] == GRAID_MEMBER_SPARE;
	if (recorded > a->nspares) {
		graid__log(GRAID_LOG_WARNING, "open: %u of the %u hot spares recorded not found",
			   recorded - a->nspares, recorded);
		array_event(a, GRAID_EVENT_SPARES_MISSING, -1, 0, 0, recorded - a->nspares);
	}
}

/*
 * Phase 4 of a writable open, in memory: the UUID lock and the holder's view the array's,
 * this host the owner at the open's epoch, returning and forced members settled and marked,
 * the new event, the roles out recorded at it and counted. Its one write is a forced
 * member's marks (bitmap_mark_all); a failure leaves all of it to array_free.
 */
static int open_take(struct open_ctx *o)
{
	struct graid_array *a = o->a;
	const struct superblock *fresh = o->as.fresh;
	int rc = 0;

	a->uuid_lock = o->as.lock; /* held for as long as the array is open */
	o->as.lock.fd = -1;
	array_view_publish(a);
	owner_self(&a->owner);
	a->owner.epoch = o->cl.epoch;
	o->returns = open_settle_returns(a, &o->as);
	if (o->forced)
		rc = open_mark_forced(a, &o->as);
	if (rc)
		return rc;
	/*
	 * Unclean or forced: the marks name what the resync must see, and nothing flushed
	 * before it (the journal's replay flushes, and so may the worker) may clear them. A
	 * journaled array too: its replay settles the updates its log holds, but not what
	 * the marks may also stand for (a forced member's stale stripes, a resync that an
	 * earlier open left unfinished), so its marks are resynced all the same.
	 */
	if (o->forced || !(fresh->flags & GRAID_SB_F_CLEAN))
		bitmap_resync_pending(a, 0);
	/* Open marks the array in use (not clean) with a new event: a crash leaves that mark. */
	a->events = fresh->events + 1;
	/* Roles that were in and are not now are recorded out at this event (divergence check). */
	for (unsigned r = 0; r < a->nmembers; r++) {
		int st = atomic_load(&a->members[r].state);

		if ((st == GRAID_MEMBER_MISSING || st == GRAID_MEMBER_FAILED) &&
		    (fresh->member_state[r] == GRAID_MEMBER_ACTIVE ||
		     fresh->member_state[r] == GRAID_MEMBER_REBUILDING))
			a->members[r].role.left_events = a->events;
	}
	/*
	 * The roles out are counted before anything can flush: a flush's sweep clears no mark
	 * while a role is out, and the journal's replay flushes.
	 */
	pthread_mutex_lock(&a->meta_lock);
	array_recount(a);
	pthread_mutex_unlock(&a->meta_lock);
	array_event_opened(a);
	open_spares_missing(a, fresh);
	return 0;
}

/*
 * Phase 5, the first writes: the journal replayed (before anything else writes, a spare's
 * rebuild too), bad-block logs adopted, the superblocks written at the new event, the
 * worker started, spares given the missing roles and returning members queued for their
 * rebuild. A failure leaves the array to array_free, which stops the worker first.
 */
static int open_start(struct graid_array *a, const struct assembly *as, bool returns)
{
	int rc = 0;

	if (a->journal)
		rc = journal_recover(a, as->fresh->flags & GRAID_SB_F_CLEAN, &a->journal_replayed);
	if (rc)
		return rc;
	if (a->journal_replayed)
		array_event(a, GRAID_EVENT_JOURNAL_REPLAYED, -1, 0, 0, a->journal_replayed);
	open_adopt_bad_blocks(a);
	/*
	 * A checksummed array written by an older version (major 2) gets generations now,
	 * with the superblock round below (docs/INTEGRITY.md, "Lost writes", decision 5): its
	 * tags all hold generation 0 and its parity tags record 0, which agree, so nothing
	 * is rewritten. The journal's replay above ran without them (meta words 0, as the
	 * version that wrote the log); the resync after the round makes records from data.
	 */
	if (a->csum && !a->csum_gens) {
		a->csum_gens = true;
		graid__log(GRAID_LOG_NOTICE, "open: checksummed array upgraded to keep write "
					     "generations (lost-write detection); versions before "
					     "it no longer open it");
	}
	pthread_mutex_lock(&a->meta_lock);
	rc = array_write_superblocks(a, 0);
	/* The worker: spares, catch-ups, unreachable members' controllers (worker.c). */
	if (rc == 0)
		rc = array_worker_start(a);
	/*
	 * A member given but unreachable (its superblock unreadable while its controllers
	 * reconnect) has a role nobody can name yet: no spare takes a missing role until the
	 * array is opened with it reachable.
	 */
	if (open_unreachable_given(as)) {
		a->hold_missing = true; /* a spare added later keeps away too */
		if (a->nspares)
			graid__log(GRAID_LOG_WARNING, "open: a member given is unreachable: no spare "
						      "takes a missing role at this open");
	} else {
		if (rc == 0)
			array_roles_takeover_all(a);
	}
	/* Members that came back are brought up to date in the background, as spares are. */
	if (rc == 0 && returns)
		rc = array_rebuild_background(a);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

/*
 * Phase 6, the last: the bitmap made to say what is true now, and what an unclean or
 * forced open left inconsistent resynced, here or (GRAID_OPEN_RESYNC_BACKGROUND) by the
 * worker. A failure leaves the array to array_free.
 */
static int open_resync(struct graid_array *a, const struct superblock *fresh, unsigned flags,
		       bool forced)
{
	char roles[256];
	unsigned n_out = open_roles_out(a, roles, sizeof(roles));
	int rc = 0;

	if (n_out)
		graid__log(GRAID_LOG_WARNING, "open: RAID-%d running degraded: role%s %s missing, "
					      "failed or not yet in sync", a->lay.level,
			   n_out > 1 ? "s" : "", roles);
	if ((fresh->flags & GRAID_SB_F_CLEAN && !fresh->history_events && !forced) ||
	    open_any_rejoined(a)) {
		/*
		 * Clean: marks left by lazy clearing mean nothing. A member that came back: its
		 * stale copy (left out of the load) must not count at a later load.
		 */
		rc = bitmap_write_all(a);
	}
	if (rc || (fresh->flags & GRAID_SB_F_CLEAN && !forced) || !bitmap_dirty_regions(a)) {
		/* Nothing to resync (marks kept as history are no sweep's to clear anyway). */
		bitmap_resync_pending(a, UINT64_MAX);
		return rc;
	}
	graid__log(GRAID_LOG_NOTICE, "open: %s; %llu dirty regions to resync",
		   forced ? "members were forced in" : "not closed cleanly",
		   (unsigned long long)bitmap_dirty_regions(a));
	/*
	 * resync_from is 0 since before the journal's replay: flushes keep the marks. A RAID-5/6
	 * reshape moving data: the resync runs here, each row in the geometry that holds it
	 * (resync.c, jobs.h reshape_row_layout), before the job moves anything (it starts
	 * after this phase): a window recovering a lost member's chunk from its old row must
	 * find that row's parity whole, not torn by the crash.
	 */
	if (array_reshape_holds_jobs(a) && (flags & GRAID_OPEN_RESYNC_BACKGROUND)) {
		graid__log(GRAID_LOG_NOTICE, "open: a reshape is under way: the resync runs now, "
					     "before it moves data, not in the background");
		flags &= ~GRAID_OPEN_RESYNC_BACKGROUND;
	}
	if (flags & GRAID_OPEN_RESYNC_BACKGROUND) {
		pthread_mutex_lock(&a->meta_lock);
		a->resync_background = true;
		rc = array_worker_start(a);
		pthread_cond_signal(&a->worker_cond);
		pthread_mutex_unlock(&a->meta_lock);
		return rc;
	}
	rc = array_resync(a);
	if (rc == 0)
		rc = array_flush_members(a, NULL);
	return rc;
}

/*
 * Every phase's failure, and success too, ends here. A failed open gives its reservations
 * back (the array's through array_free, after its worker stopped), but not a takeover's:
 * the array is this host's now, and the log says so. What the array did not take (spares
 * past the most it keeps) is given back after success too. Then the assembly's remaining
 * descriptors and locks, the array (NULL once handed out) and a lease it never took.
 */
static void open_unwind(struct open_ctx *o, int rc)
{
	if (rc && o->cl.fenced) {
		graid__log(GRAID_LOG_WARNING, "open: the takeover's owner record stays on the "
					      "members: this host owns the array now (owner epoch "
					      "%llu); open it again here",
			   (unsigned long long)o->cl.epoch);
		if (o->a)
			o->a->pr_key = 0;
	} else if (o->cl.pr_key) {
		open_unreserve(&o->as, o->cl.pr_key);
	}
	assemble_release(&o->as);
	array_free(o->a);
	lease_close(o->cl.lease);
}

GRAID_API int graid_array_open(const char *const *members, unsigned nmembers,
			       const struct graid_open_options *opts, struct graid_array **out)
{
	struct open_ctx o = { .as = { .lock = { .fd = -1 } }, .opts = opts };
	int rc;

	o.flags = open_flags(opts);
	o.read_only = o.flags & GRAID_OPEN_READ_ONLY;
	if (!open_args_valid(members, nmembers, opts, o.flags, out))
		return -EINVAL;
	rc = open_assemble_claimed(&o.as, members, nmembers, o.flags, open_lease_spec(opts),
				   &o.cl);
	if (rc == 0)
		rc = open_build(&o, nmembers);
	if (rc == 0)
		rc = open_maps(o.a, o.as.fresh, o.read_only);
	if (rc == 0 && o.read_only) {
		open_look(o.a, o.as.fresh);
	} else if (rc == 0) {
		rc = open_take(&o);
		if (rc == 0)
			rc = open_start(o.a, &o.as, o.returns);
		if (rc == 0)
			rc = open_resync(o.a, o.as.fresh, o.flags, o.forced);
		/* A reshape this open resumed goes on moving data (jobs/reshape_grow.c). */
		if (rc == 0)
			rc = reshape_job_launch(o.a);
	}
	if (rc == 0) {
		*out = o.a;
		o.a = NULL;
	}
	open_unwind(&o, rc);
	return rc;
}
