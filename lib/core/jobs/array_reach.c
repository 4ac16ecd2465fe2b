/* SPDX-License-Identifier: MIT */
/*
 * Members that cannot be reached for a while. An NVMe-oF namespace whose every controller
 * is reconnecting (a network outage, a storage host rebooting) is UNREACHABLE, not failed:
 * it is out of I/O, the write-intent bitmap keeps every region written meanwhile, and no
 * spare takes its role. The array's worker looks at its controllers a few times a second:
 * when one is live again the member comes back and copies only the marked regions (a
 * catch-up); when the last controller is deleted (ctrl_loss_tmo passed) it fails and a
 * spare takes over. docs/REMOTE.md describes the model.
 */
#include <errno.h>
#include <string.h>

#include "array/array.h"
#include "meta/bitmap.h"
#include "meta/journal.h"
#include "member/member_path.h"
#include "jobs/jobs.h"
#include "member/member.h"
#include "meta/array_meta.h"
#include "meta/events.h"
#include "meta/meta_write.h"
#include "io/queue_pool.h"

/* How often the worker looks at unreachable members' controllers. */
#define REACH_POLL_NS (250u * 1000 * 1000)

/* Its controller is live again and its superblock says it is still this role's device. */
static void reach_return(struct graid_array *a, unsigned role)
{
	struct member *m = &a->members[role];
	bool catchup = a->bitmap.enabled && a->history_events && !m->role.reach_full;

	m->role.catchup = catchup;
	m->role.rebuild_offset = 0;
	atomic_store(&m->role.copied, 0);
	/* Updates numbered from here on may use it; its journal entries from before may not. */
	if (journal_reset_member(a, m))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): journal checkpoint at return failed",
			   role, m->dev.path);
	atomic_store_explicit(&m->state, GRAID_MEMBER_REBUILDING, memory_order_release);
	a->events++;
	array_recount(a);
	/* Its copy of the bitmap missed the marks made while it was out. */
	if (bitmap_write_all(a))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): bitmap rewrite at return failed",
			   role, m->dev.path);
	array_write_superblocks(a, 0);
	graid__log(GRAID_LOG_NOTICE, "member %u (%s) reachable again: %s", role, m->dev.path,
		   catchup ? "catching up from the write-intent bitmap" : "rebuilding it whole");
	array_event(a, GRAID_EVENT_MEMBER_RETURNED, (int)role, 0, 0, 0);
	array_rebuild_due(a);
}

/* Its last controller is gone: the member failed; a spare may take its role. */
static void reach_give_up(struct graid_array *a, unsigned role, int err, const char *why)
{
	struct member *m = &a->members[role];
	bool survives = array_survives_without(a, role);

	array_sb_role_out(a);
	atomic_store(&m->state, GRAID_MEMBER_FAILED);
	a->events++;
	array_recount(a);
	array_write_superblocks(a, 0);
	graid__log(GRAID_LOG_ERR, "member %u (%s) failed: %s%s", role, m->dev.path, why,
		   survives ? "; array continues degraded" : "");
	array_event(a, GRAID_EVENT_MEMBER_FAILED, (int)role, err, 0, 0);
	array_spare_takeover(a, role);
}

/*
 * Look at every unreachable member once. meta_lock held on entry and on return; dropped
 * while a member's controllers and superblock are read (a reconnecting controller may
 * take seconds to answer), then each state is checked again before it is changed.
 */
void array_reach_poll(struct graid_array *a)
{
	bool late = false;

	if (array_foreign(a))
		return; /* another host's array now: nothing to bring back */
	for (unsigned r = 0; r < a->nmembers; r++)
		late = late || atomic_load(&a->members[r].late_ios);
	if (late) {
		/*
		 * The synchronous calls' idle queues may hold the late ends nobody reaped, and
		 * so may the bitmap's and the map's rings.
		 */
		pthread_mutex_unlock(&a->meta_lock);
		array_queue_pool_reap_late(a);
		meta_rings_reap_late(a);
		pthread_mutex_lock(&a->meta_lock);
	}
	for (unsigned r = 0; r < a->nmembers; r++) {
		struct member *m = &a->members[r];
		struct superblock sb;
		enum member_reach reach;
		uint64_t size = 0;
		int fd = m->dev.fd, rc = 0;

		if (atomic_load(&m->state) != GRAID_MEMBER_UNREACHABLE)
			continue;
		pthread_mutex_unlock(&a->meta_lock);
		reach = member_reach(m, NULL);
		if (reach == REACH_LIVE) {
			rc = member_read_sb(m, &sb);
			if (rc == 0 && memcmp(sb.member_uuid, m->dev.uuid, 16))
				rc = -ESTALE;
			/* Back smaller (its namespace resized): what it lost no bitmap names. */
			if (rc == 0 && member_size_now(m, &size) == 0 &&
			    size < (a->csum ? a->tag_offset + a->tag_bytes
					    : a->data_offset + a->lay.member_bytes))
				rc = -ENXIO;
		}
		pthread_mutex_lock(&a->meta_lock);
		if (atomic_load(&m->state) != GRAID_MEMBER_UNREACHABLE || m->dev.fd != fd)
			continue; /* failed or replaced by hand meanwhile */
		if (reach == REACH_GONE || reach == REACH_LOCAL)
			reach_give_up(a, r, -ENODEV, "its last controller was deleted");
		else if (reach == REACH_LIVE && rc == -ESTALE)
			reach_give_up(a, r, rc, "another namespace answers at its path");
		else if (reach == REACH_LIVE && rc == -ENXIO)
			reach_give_up(a, r, rc, "it came back smaller than the array needs: it "
						"is rebuilt whole once replaced, never caught up");
		else if (reach == REACH_LIVE && rc == 0 && !atomic_load(&a->broken) &&
			 !atomic_load(&m->late_ios))
			reach_return(a, r); /* (a broken array has nothing to catch it up from) */
		/*
		 * With I/O given up on after the I/O timeout not ended yet, it may still land on
		 * the member: a catch-up before that could be overwritten. Look again next time.
		 */
		/* Live but its superblock unreadable: a flap; look again next time. */
	}
}

/* How long the worker may sleep before it looks again (0: no member is unreachable). */
uint64_t array_reach_interval_ns(const struct graid_array *a)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		if (atomic_load(&a->members[r].state) == GRAID_MEMBER_UNREACHABLE)
			return REACH_POLL_NS;
	return 0;
}
