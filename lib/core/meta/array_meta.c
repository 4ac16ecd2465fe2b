/* SPDX-License-Identifier: MIT */
/* Array state: which failures a level survives, what the superblocks say, the member counts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ownership/lease.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/journal.h"
#include "member/member_path.h"
#include "member/member.h"
#include "meta/array_view.h"
#include "meta/array_meta.h"
#include "meta/events.h"
#include "meta/member_fail.h"
#include "member/member_replace.h"

/*
 * Whether every byte @p l places is still readable with the roles of @p state that are not
 * ACTIVE lost (roles 0 .. l->nmembers - 1: a reshape's old geometry has fewer).
 */
bool layout_roles_survivable(const struct layout *l, const uint8_t *state)
{
	unsigned n = l->nmembers, lost = 0;

	for (unsigned i = 0; i < n; i++)
		lost += state[i] != GRAID_MEMBER_ACTIVE;
	switch (l->level) {
	case 0:
		return lost == 0;
	case 1:
		return lost < n;
	case 5:
		return lost <= 1;
	case 6:
		return lost <= 2;
	case 10:
		/* Near-2 puts chunk i on slots 2i and 2i+1; the pairs repeat every n chunks. */
		for (unsigned i = 0; i < n; i++)
			if (state[(2 * i) % n] != GRAID_MEMBER_ACTIVE &&
			    state[(2 * i + 1) % n] != GRAID_MEMBER_ACTIVE)
				return false;
		return true;
	default:
		return false;
	}
}

/*
 * While a reshape runs, bytes are in both geometries: each must keep its own (a RAID-5
 * becoming a RAID-6 loses its unconverted rows with two old members out, whatever the Q
 * member's state; a grow's new rows, with one of any member and an added one out).
 */
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);

	if (rs)
		return layout_roles_survivable(&rs->old_lay, state) &&
		       layout_roles_survivable(&rs->new_lay, state);
	return layout_roles_survivable(&a->lay, state);
}

bool array_survives_without(const struct graid_array *a, unsigned role)
{
	uint8_t state[GRAID_MAX_MEMBERS];

	for (unsigned r = 0; r < a->nmembers; r++)
		state[r] = (uint8_t)atomic_load(&a->members[r].state);
	state[role] = GRAID_MEMBER_FAILED;
	return array_roles_survivable(a, state);
}

/*
 * Superblock slot @p i's device: a role's, a spare's, or after the spares the hot spare a
 * replace in service copies onto, which stays a spare on disk until its swap.
 */
static const struct member *meta_slot_c(const struct graid_array *a, unsigned i)
{
	if (i < a->nmembers)
		return &a->members[i];
	if (i - a->nmembers < a->nspares)
		return &a->spares[i - a->nmembers];
	return replace_spare_held(a);
}

static struct member *meta_slot(struct graid_array *a, unsigned i)
{
	return (struct member *)meta_slot_c(a, i);
}

void array_fill_sb(const struct graid_array *a, unsigned role, struct superblock *sb,
		   uint32_t flags)
{
	memset(sb, 0, sizeof(*sb));
	/*
	 * A checksummed array is major 2, which older readers refuse: they would not keep tags.
	 * One that keeps generations is major 3 with GENERATIONS, which readers before it
	 * refuse: they would write generation 0 and break every record.
	 */
	sb->version = a->csum ? GRAID_SB_VERSION_MAJOR_INCOMPAT : GRAID_SB_VERSION_MAJOR;
	if (a->csum && a->csum_gens)
		sb->version = GRAID_SB_VERSION_MAJOR_FEATURES;
	memcpy(sb->array_uuid, a->uuid, 16);
	sb->level = a->lay.level;
	sb->chunk_bytes = a->lay.chunk;
	sb->nmembers = a->nmembers;
	sb->role = role;
	sb->block_size = a->block_size;
	sb->data_offset = a->data_offset;
	sb->data_bytes = a->lay.member_bytes;
	sb->ctime = a->ctime;
	sb->events = a->events;
	sb->flags = flags | (a->csum ? GRAID_SB_F_CHECKSUMS : 0) |
		    (a->csum && a->csum_gens ? GRAID_SB_F_GENERATIONS : 0);
	/*
	 * A reshape under way: major 3 with RESHAPE, which every reader that cannot place both
	 * geometries refuses. The geometry written is the new one (docs/RESHAPE.md): RAID-0
	 * grows only in nmembers, which is a->nmembers already; level, chunk and data_bytes
	 * are the same in both.
	 */
	const struct array_reshape *rs = atomic_load(&a->reshape);

	if (rs && !atomic_load(&rs->done)) {
		sb->version = GRAID_SB_VERSION_MAJOR_FEATURES;
		sb->flags |= GRAID_SB_F_RESHAPE;
		/* A RAID-5 -> RAID-6 conversion: the new level, and its Q-last layout below. */
		sb->level = rs->new_lay.level;
	}
	if ((rs && !atomic_load(&rs->done) ? rs->new_lay : a->lay).layout_id == LAYOUT_Q_LAST) {
		sb->version = GRAID_SB_VERSION_MAJOR_FEATURES;
		sb->flags |= GRAID_SB_F_Q_LAST;
	}
	sb_tag_area(sb->flags, sb->data_offset, sb->data_bytes, &sb->tag_offset, &sb->tag_bytes);
	sb->bitmap_offset = a->bitmap.map.offset;
	sb->bitmap_bytes = a->bitmap.map.bytes;
	if (a->journal) {
		sb->log_offset = a->log_area.offset;
		sb->log_bytes = a->log_area.bytes;
	}
	sb->bitmap_region_stripes = a->bitmap.enabled ? a->bitmap.map.region_stripes : 0;
	if (a->live) {
		sb->live_offset = a->live->map.offset;
		sb->live_bytes = a->live->map.bytes;
		sb->live_region_stripes = a->live->map.region_stripes;
	}
	sb->bbl_offset = a->bbl_area.offset;
	sb->bbl_bytes = a->bbl_area.bytes;
	sb->history_events = a->history_events;
	sb->scrub_offset = a->scrub_offset;
	sb->owner = a->owner;
	for (unsigned i = 0; i < a->nmembers; i++) {
		const struct member *m = &a->members[i];

		sb->member_state[i] = (uint8_t)atomic_load(&m->state);
		/* On disk an unreachable member is missing: it comes back as one (FORMAT.md). */
		if (sb->member_state[i] == GRAID_MEMBER_UNREACHABLE)
			sb->member_state[i] = GRAID_MEMBER_MISSING;
		sb->slot_id[i] = m->role.slot_id;
		sb->left_events[i] = (uint32_t)m->role.left_events;
		if (m->role.catchup && sb->member_state[i] == GRAID_MEMBER_REBUILDING)
			sb->slot_flags[i] = GRAID_SB_SLOT_CATCHUP;
	}
	const unsigned nslots = a->nmembers + a->nspares + (replace_spare_held(a) != NULL);

	for (unsigned i = a->nmembers; i < nslots; i++) {
		sb->member_state[i] = GRAID_MEMBER_SPARE;
		sb->slot_id[i] = member_slot_id(meta_slot_c(a, i)->dev.uuid);
	}
	if (role < a->nmembers) {
		memcpy(sb->member_uuid, a->members[role].dev.uuid, 16);
		member_identity_record(&a->members[role].dev.nvme, &sb->nvme);
		if (atomic_load(&a->members[role].state) == GRAID_MEMBER_REBUILDING)
			sb->rebuild_offset = a->members[role].role.rebuild_offset;
	} else {
		memcpy(sb->member_uuid, meta_slot_c(a, role)->dev.uuid, 16);
		member_identity_record(&meta_slot_c(a, role)->dev.nvme, &sb->nvme);
	}
}

/*
 * Write the superblock of every active or rebuilding member and every spare (failed and
 * missing ones are not trusted to take writes). Called with meta_lock held, or before the
 * array is shared.
 */
/* Whether @p o is exactly this handle's record (epoch, host, process). */
static bool meta_owner_is_ours(const struct graid_array *a, const struct sb_owner *o)
{
	return o->epoch == a->owner.epoch && o->pid == a->owner.pid &&
	       o->start == a->owner.start && owner_same_host(o, &a->owner);
}

/*
 * What the active members say of the owner. *@p top: the record with the highest epoch;
 * *@p other: on a member this handle wrote its record on (sb_ours), one that is not that
 * record: another owner's at any epoch, or another array's superblock. A member whose
 * superblock cannot be read or does not decode is passed over. False when no member could
 * be judged.
 */
static bool meta_owner_look(struct graid_array *a, struct sb_owner *top,
			    struct sb_owner *other, bool *found_other)
{
	bool any = false;

	*found_other = false;
	memset(top, 0, sizeof(*top));
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];
		bool strict = m->dev.sb_ours; /* this handle's record was written there */
		struct superblock sb;

		if (m->dev.fd < 0 || !array_role_alive(a, i))
			continue;
		/*
		 * Only a record that decodes is evidence: a takeover always writes a valid one.
		 * A read error, or a block that does not decode (a torn read beside this
		 * handle's own write, a corrupt block: one member's fault, not a takeover), is
		 * passed over; the next look decides.
		 */
		if (member_read_sb(m, &sb))
			continue;
		if (memcmp(sb.array_uuid, a->uuid, 16)) {
			/* Made another array's after our record: not ours any more. */
			if (strict && !*found_other) {
				memset(other, 0, sizeof(*other));
				snprintf(other->host, sizeof(other->host), "(member %u now another "
									 "array's)", i);
				*found_other = true;
			}
			continue;
		}
		any = true;
		if (sb.owner.epoch > top->epoch)
			*top = sb.owner;
		if (strict && !*found_other && !meta_owner_is_ours(a, &sb.owner)) {
			*other = sb.owner;
			*found_other = true;
		}
	}
	return any || *found_other;
}

/*
 * Stop for good, once: the array is another host's (@p why says how). The first caller logs
 * it and sends GRAID_EVENT_ARRAY_FOREIGN with @p member and @p err; false for the others.
 */
static bool meta_go_foreign(struct graid_array *a, int member, int err, const char *why)
{
	if (atomic_exchange(&a->foreign, true))
		return false;
	graid__log(GRAID_LOG_ERR, "array: %s; it writes nothing more; its I/O fails with ESTALE",
		   why);
	array_event(a, GRAID_EVENT_ARRAY_FOREIGN, member, err, 0, 0);
	return true;
}

/* Another host's record won: stop for good (meta_lock held). */
static void meta_mark_foreign(struct graid_array *a, const struct sb_owner *by)
{
	char who[192], why[320];

	owner_describe(by, who, sizeof(who));
	snprintf(why, sizeof(why), "taken over by %s (owner epoch %llu, this handle's %llu)",
		 who, (unsigned long long)by->epoch, (unsigned long long)a->owner.epoch);
	meta_go_foreign(a, -1, -ESTALE, why);
}

void array_owner_fenced(struct graid_array *a, unsigned role)
{
	const struct member *m = role < a->nmembers ? &a->members[role]
						    : &a->spares[role - a->nmembers];
	char why[400];

	snprintf(why, sizeof(why), "member %u (%s) refused a write: reservation conflict "
				   "(another host holds the drive's reservation: it took the array "
				   "over)", role, m->dev.path);
	meta_go_foreign(a, (int)role, -EBADE, why);
}

/*
 * The handle's lease, if it has one, is lost: stop for good, as for a takeover, before
 * sanlock (or whoever) would give the array to another host. meta_lock held.
 */
static bool meta_lease_lost(struct graid_array *a)
{
	char how[160], why[1400];

	if (!a->lease || !lease_lost(a->lease, how, sizeof(how)))
		return false;
	/* Stop first, then tell the lock manager. */
	snprintf(why, sizeof(why), "its lease (%s) is lost: %s", a->lease->spec, how);
	meta_go_foreign(a, -1, -ENOLCK, why);
	lease_drop(a->lease);
	return true;
}

/* Judge a look: a higher epoch anywhere, or (strict) any record not ours. */
static int meta_owner_judge(struct graid_array *a, bool looked, const struct sb_owner *top,
			    const struct sb_owner *other, bool found_other)
{
	if (!looked)
		return 0;
	if (top->epoch > a->owner.epoch) {
		meta_mark_foreign(a, top);
		return -ESTALE;
	}
	if (found_other) {
		meta_mark_foreign(a, other);
		return -ESTALE;
	}
	return 0;
}

int array_owner_check(struct graid_array *a)
{
	struct sb_owner top, other;
	bool found_other, looked;

	if (a->read_only)
		return 0;
	/* The lease first: a handle foreign for another reason still gives a lost one back. */
	if (meta_lease_lost(a) || array_foreign(a))
		return -ESTALE;
	looked = meta_owner_look(a, &top, &other, &found_other);
	return meta_owner_judge(a, looked, &top, &other, found_other);
}

void array_owner_watch(struct graid_array *a)
{
	struct sb_owner top, other;
	bool found_other, looked;

	if (a->read_only || meta_lease_lost(a) || array_foreign(a))
		return;
	pthread_mutex_unlock(&a->meta_lock);
	looked = meta_owner_look(a, &top, &other, &found_other);
	pthread_mutex_lock(&a->meta_lock);
	meta_owner_judge(a, looked, &top, &other, found_other);
}

/*
 * Role @p role could not take its superblock: as md fails a device whose superblock write
 * failed, it is taken out (its record of the array's state would be stale, and a later
 * assembly could trust it), unless the array needs it to stay whole (kept, logged). True
 * when it was taken out. meta_lock held.
 */
static bool meta_sb_failed(struct graid_array *a, unsigned role, int err)
{
	struct member *m = &a->members[role];
	int st = atomic_load(&m->state);

	if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)
		return false;
	/*
	 * A fabric member whose controllers reconnect lost its path, not its contents: its
	 * next I/O makes it unreachable (member_fail.c), and it catches up when it is back.
	 */
	if (member_reach(m, NULL) == REACH_RECONNECTING)
		return false;
	if (!array_survives_without(a, role)) {
		graid__log(GRAID_LOG_ERR, "member %u (%s): its superblock write failed (%s), but "
					  "RAID-%d needs it: kept, its superblock is stale",
			   role, m->dev.path, graid_strerror(err), a->lay.level);
		return false;
	}
	array_sb_role_out(a);
	atomic_store(&m->state, GRAID_MEMBER_FAILED);
	graid__log(GRAID_LOG_ERR, "member %u (%s) failed: its superblock write failed (%s)",
		   role, m->dev.path, graid_strerror(err));
	a->events++;
	m->role.left_events = a->events;
	array_recount(a);
	array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)role, err, 0, 0);
	array_worker_takeover(a, role);
	return true;
}

static int meta_write_sbs(struct graid_array *a, uint32_t flags);

void array_sb_role_out(struct graid_array *a)
{
	atomic_fetch_add(&a->sb_out_gen, 1);
}

void array_sb_fence(struct graid_array *a)
{
	/*
	 * The generation is bumped before the role's state changes, so a write that planned
	 * around the role sees it here; the round runs under the meta_lock hold that bumped it.
	 */
	if (atomic_load(&a->sb_out_gen) == atomic_load(&a->sb_out_written))
		return;
	pthread_mutex_lock(&a->meta_lock);
	pthread_mutex_unlock(&a->meta_lock);
}

/*
 * Each round, whatever its result, ends the wait for the role changes made before it: its
 * failures are judged where they happen (meta_sb_failed, array_owner_check), and a wait
 * that outlived them would only hold every later write on meta_lock.
 */
/* Whether a role still in took this handle's last superblock (its write succeeded). */
static bool meta_some_role_took(struct graid_array *a)
{
	for (unsigned i = 0; i < a->nmembers; i++)
		if (array_role_writable(a, i) && a->members[i].dev.fd >= 0 &&
		    a->members[i].dev.sb_ours)
			return true;
	return false;
}

int array_write_superblocks(struct graid_array *a, uint32_t flags)
{
	uint64_t gen = atomic_load(&a->sb_out_gen);
	int rc = meta_write_sbs(a, flags);

	/*
	 * A member still in holds the roles out as they now are, so an open takes the round's
	 * event as the freshest and none of them back as current: writes around them may be
	 * acknowledged (member_fail.h). Before the fence is lifted below: a write it held must
	 * see the flag as it now is.
	 */
	if (rc == 0 || meta_some_role_took(a))
		atomic_store(&a->fail_unrecorded, false);
	/* A nested round (a member that could not take its superblock) may have ended later. */
	if (gen > atomic_load(&a->sb_out_written))
		atomic_store(&a->sb_out_written, gen);
	return rc;
}

static int meta_write_sbs(struct graid_array *a, uint32_t flags)
{
	int failed[GRAID_MAX_MEMBERS] = { 0 }; /* per role: its write's -errno */
	bool again = false;
	struct superblock sb;
	int rc;

	/* Never over another host's records: it took the array over (a higher epoch). */
	rc = array_owner_check(a);
	if (rc)
		return rc;

	for (unsigned i = 0; i < a->nmembers + a->nspares + (replace_spare_held(a) != NULL); i++) {
		struct member *m = meta_slot(a, i);
		int r;

		if (m->dev.fd < 0 || (i < a->nmembers && !array_role_writable(a, i)))
			continue;
		array_fill_sb(a, i, &sb, flags);
		r = member_write_sb(m, &sb);
		m->dev.sb_ours = r == 0;
		if (r == 0 && i < a->nmembers)
			a->sb_writes++;
		if (r == -EBADE) {
			/* Another host's reservation: nothing more of ours goes anywhere. */
			array_owner_fenced(a, i);
			return -ESTALE;
		}
		if (r) {
			graid__log(GRAID_LOG_ERR, "member %u (%s): superblock write failed: %s", i,
				   m->dev.path, graid_strerror(r));
			atomic_fetch_add(&m->role.errors, 1);
			/* A spare's failed write is its own (it takes no role with it). */
			if (i < a->nmembers) {
				failed[i] = r;
				rc = rc ? rc : r;
			}
		}
	}
	/* The members that could not take it go, and the others record that (once more). */
	for (unsigned i = 0; i < a->nmembers; i++)
		if (failed[i] && meta_sb_failed(a, i, failed[i]))
			again = true;
	if (again) {
		int r = array_write_superblocks(a, flags);

		/*
		 * Written to every member still in: the failed ones are out, not an error. A
		 * nested round's error is a member the array needs that missed it, or worse.
		 */
		rc = r;
		for (unsigned i = 0; rc == 0 && i < a->nmembers; i++)
			if (failed[i] && array_role_writable(a, i))
				rc = -EIO; /* a member the array needs did not take it */
	}
	return rc;
}

void array_recount(struct graid_array *a)
{
	uint8_t state[GRAID_MAX_MEMBERS];
	unsigned nf = 0;

	for (unsigned i = 0; i < a->nmembers; i++) {
		state[i] = (uint8_t)atomic_load(&a->members[i].state);
		nf += state[i] != GRAID_MEMBER_ACTIVE;
	}
	atomic_store(&a->nfailed, nf);
	/*
	 * From the first event with a role out until every role is active again the bitmap
	 * clears nothing: it then names every region written meanwhile, which is all a member
	 * that comes back needs (bitmap_sweep).
	 */
	array_view_publish(a);
	if (nf == 0)
		a->history_events = 0;
	else if (a->history_events == 0 && a->bitmap.enabled)
		a->history_events = a->events;
	if (!array_roles_survivable(a, state) && !atomic_exchange(&a->broken, true)) {
		graid__log(GRAID_LOG_ERR, "array: %u of %u members lost, more than RAID-%d "
					  "tolerates: I/O now fails with EIO", nf, a->nmembers,
			   a->lay.level);
		array_event(a, GRAID_EVENT_ARRAY_FAILED, -1, -EIO, 0, 0);
	}
}

