/* SPDX-License-Identifier: MIT */
/*
 * Media errors repaired in place. A drive that cannot read one sector is not a failed drive:
 * RAID-5 and RAID-6 recompute the sector from the rest of its stripe, RAID-1 and RAID-10
 * read another copy, hand it to the reader and write it back, which makes the drive remap
 * it; the member stays (RAID-0 returns -EIO for that read, and keeps it too). A member whose reads
 * keep failing is failed all the same: more than READERR_MAX errors, a count that halves
 * every hour (md's max_corrected_read_errors rule). Path losses are not media errors: a
 * fabric member without a live controller is judged by array_reach.c.
 */
#include <errno.h>

#include "array/array.h"
#include "member/member_path.h"
#include "meta/array_readerr.h"
#include "meta/events.h"

#define READERR_MAX 20u
#define READERR_HALF_LIFE_NS (3600ull * 1000 * 1000 * 1000)

/* Errors a drive returns for data it cannot read, not for being unreachable. */
static bool readerr_is_media(int err)
{
	return err == -EIO || err == -ENODATA || err == -EILSEQ || err == -EBADMSG;
}

bool array_read_error_repairable(struct graid_array *a, unsigned role, int err)
{
	enum member_reach reach;

	/* Read-only handles too: they rebuild what they read and write nothing back. */
	if (!readerr_is_media(err) || role >= a->nmembers)
		return false;
	reach = member_reach(&a->members[role], NULL);
	return reach == REACH_LOCAL || reach == REACH_LIVE;
}

bool array_member_read_error(struct graid_array *a, unsigned role,
			     const struct member_io_fault *mf, int err)
{
	struct member *m = &a->members[role];
	uint64_t now = graid__now_ns();
	bool repair = false;
	int st;

	/* Parity levels recompute the block, mirrors read another copy; RAID-0 returns -EIO. */
	if (!array_read_error_repairable(a, role, err))
		return false;
	pthread_mutex_lock(&a->meta_lock);
	st = atomic_load(&m->state);
	/*
	 * A block that failed its checksum costs that block, not the member's standing: the
	 * drive read it without complaint (csum_errors counts them, member_io_done).
	 */
	if (mf->csum && err == -EBADMSG) {
		repair = m->dev.fd == mf->fd &&
			 (st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING);
		pthread_mutex_unlock(&a->meta_lock);
		return repair;
	}
	if (m->dev.fd == mf->fd && (st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING)) {
		while (m->role.readerr_count && now - m->role.readerr_decay_ns >= READERR_HALF_LIFE_NS) {
			m->role.readerr_count /= 2;
			m->role.readerr_decay_ns += READERR_HALF_LIFE_NS;
		}
		if (m->role.readerr_count == 0)
			m->role.readerr_decay_ns = now;
		repair = ++m->role.readerr_count <= READERR_MAX;
		if (repair) {
			atomic_fetch_add(&m->role.errors, 1);
			graid__log(GRAID_LOG_WARNING, "member %u (%s): read error (%s); the member "
						      "stays, and what it could not read is rebuilt "
						      "from the others where redundancy is left", role,
				   m->dev.path, graid_strerror(err));
		} else {
			graid__log(GRAID_LOG_ERR, "member %u (%s): more than %u read errors within "
						  "the hour: taking it out", role, m->dev.path,
				   READERR_MAX);
		}
	}
	pthread_mutex_unlock(&a->meta_lock);
	return repair;
}

void array_member_read_repaired(struct graid_array *a, unsigned role, uint64_t row,
				uint64_t units)
{
	atomic_fetch_add(&a->members[role].role.readerr_repaired, units);
	array_event(a, GRAID_EVENT_BLOCK_REPAIRED, (int)role, 0, row, units);
}
