/* SPDX-License-Identifier: MIT */
/* Array state: which failures a level survives, what the superblocks say, the member counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/journal.h"
#include "member/member_path.h"
#include "member/member.h"
#include "meta/array_view.h"
#include "meta/meta.h"

/* Whether every byte is still readable with the roles whose state is not ACTIVE lost. */
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state)
{
	unsigned n = a->nmembers, lost = 0;

	for (unsigned i = 0; i < n; i++)
		lost += state[i] != GRAID_MEMBER_ACTIVE;
	switch (a->lay.level) {
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

void array_fill_sb(const struct graid_array *a, unsigned role, struct graid_sb *sb,
		   uint32_t flags)
{
	memset(sb, 0, sizeof(*sb));
	sb->version = GRAID_SB_VERSION_MAJOR;
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
	sb->flags = flags;
	sb->bitmap_offset = a->bitmap.offset;
	sb->bitmap_bytes = a->bitmap.bytes;
	if (a->journal) {
		sb->log_offset = a->log_area.offset;
		sb->log_bytes = a->log_area.bytes;
	}
	sb->bitmap_region_stripes = a->bitmap.enabled ? a->bitmap.region_stripes : 0;
	if (a->live) {
		sb->live_offset = a->live->offset;
		sb->live_bytes = a->live->bytes;
		sb->live_region_stripes = a->live->region_stripes;
	}
	sb->history_events = a->history_events;
	sb->scrub_offset = a->scrub_offset;
	sb->owner = a->owner;
	for (unsigned i = 0; i < a->nmembers; i++) {
		const struct member *m = &a->members[i];

		sb->member_state[i] = (uint8_t)atomic_load(&m->state);
		/* On disk an unreachable member is missing: it comes back as one (FORMAT.md). */
		if (sb->member_state[i] == GRAID_MEMBER_UNREACHABLE)
			sb->member_state[i] = GRAID_MEMBER_MISSING;
		sb->slot_id[i] = m->slot_id;
		sb->left_events[i] = (uint32_t)m->left_events;
		if (m->catchup && sb->member_state[i] == GRAID_MEMBER_REBUILDING)
			sb->slot_flags[i] = GRAID_SB_SLOT_CATCHUP;
	}
	for (unsigned i = 0; i < a->nspares; i++) {
		sb->member_state[a->nmembers + i] = GRAID_MEMBER_SPARE;
		sb->slot_id[a->nmembers + i] = member_slot_id(a->spares[i].uuid);
	}
	if (role < a->nmembers) {
		memcpy(sb->member_uuid, a->members[role].uuid, 16);
		member_identity_record(&a->members[role].nvme, &sb->nvme);
		if (atomic_load(&a->members[role].state) == GRAID_MEMBER_REBUILDING)
			sb->rebuild_offset = a->members[role].rebuild_offset;
	} else {
		memcpy(sb->member_uuid, a->spares[role - a->nmembers].uuid, 16);
		member_identity_record(&a->spares[role - a->nmembers].nvme, &sb->nvme);
	}
}

/*
 * Write the superblock of every active or rebuilding member and every spare (failed and
 * missing ones are not trusted to take writes). Called with meta_lock held, or before the
 * array is shared.
 */
/*
 * The owner record on one active member. 0 and *@p on_disk filled, or -errno (no member to
 * read, or its superblock unreadable).
 */
static int meta_owner_on_disk(struct graid_array *a, struct graid_sb_owner *on_disk)
{
	struct graid_sb sb;

	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];

		if (m->fd < 0 || !array_role_alive(a, i))
			continue;
		if (member_read_sb(m, &sb))
			return -EIO;
		if (memcmp(sb.array_uuid, a->uuid, 16))
			return -ENODEV; /* another array's (a create over old members) */
		*on_disk = sb.owner;
		return 0;
	}
	return -ENODEV;
}

/* Another host's record won: stop for good (meta_lock held). */
static void meta_mark_foreign(struct graid_array *a, const struct graid_sb_owner *by)
{
	char who[192];

	if (atomic_exchange(&a->foreign, true))
		return;
	owner_describe(by, who, sizeof(who));
	graid__log(GRAID_LOG_ERR, "array: taken over by %s (owner epoch %llu, this handle's "
				  "%llu): it writes nothing more; its I/O fails with ESTALE",
		   who, (unsigned long long)by->epoch, (unsigned long long)a->owner.epoch);
	array_event(a, GRAID_EVENT_ARRAY_FOREIGN, -1, -ESTALE, 0, 0);
}

int array_owner_check(struct graid_array *a, bool ours_written)
{
	struct graid_sb_owner d;

	if (a->read_only || atomic_load(&a->foreign))
		return atomic_load(&a->foreign) ? -ESTALE : 0;
	if (meta_owner_on_disk(a, &d))
		return 0; /* nothing readable to judge by: the next look decides */
	/*
	 * A higher epoch: another host took over. The same epoch with another owner, once
	 * this handle's record was written: another host took over from the same epoch at the
	 * same time, and wrote last; both stop rather than both write.
	 */
	if (d.epoch > a->owner.epoch ||
	    (ours_written && d.epoch == a->owner.epoch &&
	     (!owner_same_host(&d, &a->owner) || d.pid != a->owner.pid))) {
		meta_mark_foreign(a, &d);
		return -ESTALE;
	}
	return 0;
}

void array_owner_watch(struct graid_array *a)
{
	struct graid_sb_owner d;
	int rc;

	if (a->read_only || atomic_load(&a->foreign))
		return;
	pthread_mutex_unlock(&a->meta_lock);
	rc = meta_owner_on_disk(a, &d);
	pthread_mutex_lock(&a->meta_lock);
	if (rc == 0 && (d.epoch > a->owner.epoch ||
			(d.epoch == a->owner.epoch &&
			 (!owner_same_host(&d, &a->owner) || d.pid != a->owner.pid))))
		meta_mark_foreign(a, &d);
}

int array_write_superblocks(struct graid_array *a, uint32_t flags)
{
	struct graid_sb sb;
	int rc;

	/* Never over another host's records: it took the array over (a higher epoch). */
	rc = array_owner_check(a, false);
	if (rc)
		return rc;

	for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
		struct member *m = i < a->nmembers ? &a->members[i] : &a->spares[i - a->nmembers];
		int r;

		if (m->fd < 0 || (i < a->nmembers && !array_role_writable(a, i)))
			continue;
		array_fill_sb(a, i, &sb, flags);
		r = member_write_sb(m, &sb);
		if (r) {
			graid__log(GRAID_LOG_ERR, "member %u (%s): superblock write failed: %s", i,
				   m->path, graid_strerror(r));
			atomic_fetch_add(&m->errors, 1);
			rc = rc ? rc : r;
		}
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

