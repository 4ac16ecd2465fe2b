/* SPDX-License-Identifier: MIT */
/* Array state: which failures a level survives, superblock contents, marking members failed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitmap.h"
#include "journal.h"
#include "member_path.h"

unsigned array_tolerance(const struct graid_array *a)
{
	switch (a->lay.level) {
	case 1:
		return a->nmembers - 1;
	case 5:
		return 1;
	case 6:
		return 2;
	case 10:
		return 1; /* at least one; more when the failures hit different mirror pairs */
	default:
		return 0;
	}
}

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
		sb->log_offset = a->journal->offset;
		sb->log_bytes = a->journal->bytes;
	}
	sb->bitmap_region_stripes = a->bitmap.enabled ? a->bitmap.region_stripes : 0;
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
int array_write_superblocks(struct graid_array *a, uint32_t flags)
{
	struct graid_sb sb;
	int rc = 0;

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
	array_live_publish(a);
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

/* A member returned an error: take it out, record that on the others, keep serving. */
void array_member_failed(struct graid_array *a, unsigned role, int err)
{
	array_member_io_failed(a, role, -1, err);
}

/* @p fd < 0: whichever device the role has. */
void array_member_io_failed(struct graid_array *a, unsigned role, int fd, int err)
{
	struct member *m = &a->members[role];
	int st;
	bool changed = false;

	pthread_mutex_lock(&a->meta_lock);
	if (fd >= 0 && m->fd != fd) {
		pthread_mutex_unlock(&a->meta_lock);
		graid__log(GRAID_LOG_INFO, "member %u: a late error of the device it replaced (%s)",
			   role, graid_strerror(err));
		return;
	}
	atomic_fetch_add(&m->errors, 1);
	/* A fabric member whose controllers reconnect is out for a while, not failed. */
	if (array_member_unreachable(a, role, err)) {
		pthread_mutex_unlock(&a->meta_lock);
		return;
	}
	/* Active or being rebuilt: either way it is out now. */
	st = atomic_load(&m->state);
	while ((st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING) && !changed)
		changed = atomic_compare_exchange_weak(&m->state, &st, GRAID_MEMBER_FAILED);
	if (changed && a->read_only) {
		/* Read-only: out of this handle's I/O, but nothing is recorded on the members. */
		graid__log(GRAID_LOG_ERR, "member %u (%s) failed: %s (read-only: not recorded)",
			   role, m->path, graid_strerror(err));
		array_recount(a);
	} else if (changed) {
		graid__log(GRAID_LOG_ERR, "member %u (%s) failed: %s; array continues degraded",
			   role, m->path, graid_strerror(err));
		a->events++;
		m->left_events = a->events;
		array_recount(a);
		array_write_superblocks(a, 0);
		array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)role, err, 0, 0);
		array_spare_takeover(a, role);
	}
	pthread_mutex_unlock(&a->meta_lock);
}

GRAID_API int graid_array_fail_member(struct graid_array *a, unsigned idx)
{
	uint8_t state[GRAID_MAX_MEMBERS];

	if (!a || idx >= a->nmembers)
		return -EINVAL;
	if (a->read_only)
		return -EROFS;
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
					     "request", idx, a->members[idx].path);
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
		atomic_store(&a->members[idx].state, GRAID_MEMBER_FAILED);
		graid__log(GRAID_LOG_NOTICE, "member %u (%s) marked failed by request", idx,
			   a->members[idx].path);
		a->events++;
		a->members[idx].left_events = a->events;
		array_recount(a);
		array_write_superblocks(a, 0);
		array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)idx, 0, 0, 0);
		array_spare_takeover(a, idx);
	}
	pthread_mutex_unlock(&a->meta_lock);
	return 0;
}

struct graid_array *array_alloc(unsigned nmembers)
{
	struct graid_array *a = calloc(1, sizeof(*a) + nmembers * sizeof(struct member));

	if (!a)
		return NULL;
	a->stripe_busy = calloc(STRIPE_LOCK_BUCKETS, sizeof(*a->stripe_busy));
	if (!a->stripe_busy) {
		free(a);
		return NULL;
	}
	a->nmembers = nmembers;
	for (unsigned i = 0; i < nmembers; i++) {
		a->members[i].fd = -1;
		atomic_init(&a->members[i].state, GRAID_MEMBER_MISSING);
	}
	pthread_mutex_init(&a->meta_lock, NULL);
	pthread_mutex_init(&a->wait_lock, NULL);
	pthread_cond_init(&a->wait_cond, NULL);
	pthread_mutex_init(&a->pool_lock, NULL);
	pthread_mutex_init(&a->rebuild_lock, NULL);
	pthread_mutex_init(&a->event_lock, NULL);
	pthread_cond_init(&a->spare_cond, NULL);
	a->uuid_lock.fd = -1;
	for (unsigned i = 0; i < GRAID_MAX_SPARES; i++)
		a->spares[i].fd = -1;
	return a;
}

void array_free(struct graid_array *a)
{
	if (!a)
		return;
	array_spare_stop(a);
	array_queue_pool_free(a);
	for (unsigned i = 0; i < a->nmembers; i++)
		member_close(&a->members[i]);
	for (unsigned i = 0; i < a->nspares; i++)
		member_close(&a->spares[i]);
	for (unsigned i = 0; i < a->nretired; i++) {
		if (a->retired[i] >= 0)
			close(a->retired[i]);
		fault_free(a->retired_fault[i]);
	}
	/* Last of the holds: the member locks went with their descriptors above. */
	array_live_withdraw(a);
	array_live_free(a);
	array_uuid_lock_release(&a->uuid_lock);
	graid_backend_close(a->be);
	bitmap_free(a);
	journal_free(a);
	pthread_mutex_destroy(&a->meta_lock);
	pthread_mutex_destroy(&a->wait_lock);
	pthread_cond_destroy(&a->wait_cond);
	pthread_mutex_destroy(&a->pool_lock);
	pthread_mutex_destroy(&a->rebuild_lock);
	pthread_mutex_destroy(&a->event_lock);
	pthread_cond_destroy(&a->spare_cond);
	free(a->stripe_busy);
	free(a);
}

int array_open_engine(struct graid_array *a, const char *name)
{
	if (a->lay.nparity == 0)
		return 0; /* levels without parity never call an engine */
	return graid_backend_open(name, &a->be);
}
