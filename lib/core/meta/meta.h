/* SPDX-License-Identifier: MIT */
/* The array's state and its records on the members: superblocks, failures, flushes, events. */
#ifndef LIBGRAID_CORE_META_H
#define LIBGRAID_CORE_META_H

#include "array/array.h"

/* array_meta.c */
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state);
/* Whether the array would still be carried with @p role out as well (the others as they are now). */
bool array_survives_without(const struct graid_array *a, unsigned role);
void array_fill_sb(const struct graid_array *a, unsigned role, struct graid_sb *sb,
		   uint32_t flags);
/*
 * Write every writable member's superblock; -ESTALE (nothing written) when another host
 * took the array over (array_owner_check).
 */
int array_write_superblocks(struct graid_array *a, uint32_t flags);
/*
 * Whether the array is still this handle's: reads every active member's owner record. A
 * higher owner epoch on any, or on a member this handle wrote its record on anything but
 * that record, marks the array foreign: GRAID_EVENT_ARRAY_FOREIGN, and -ESTALE from here
 * on. 0 while it is ours (or nothing could be read); meta_lock held.
 */
int array_owner_check(struct graid_array *a);
/*
 * Member @p role (or spare slot nmembers + k) refused a write with a reservation conflict
 * (EBADE): another host holds its reservation, so it took the array over. Stop as for a
 * higher epoch (GRAID_EVENT_ARRAY_FOREIGN with -EBADE, -ESTALE from here on); the member
 * is not failed. meta_lock held.
 */
void array_owner_fenced(struct graid_array *a, unsigned role);
/* The worker's look (about once a second): as above, the read without meta_lock; held. */
void array_owner_watch(struct graid_array *a);
/* Recompute nfailed and broken from the member states; meta_lock held. */
void array_recount(struct graid_array *a);
/*
 * member_fail.c: a member returned an error: take it out, record it, keep serving (a
 * reservation conflict, -EBADE, is array_owner_fenced() instead).
 */
void array_member_failed(struct graid_array *a, unsigned role, int err);
/*
 * An I/O issued on descriptor @p fd of a role failed: fail the role only if it still has
 * that device. A device swapped in since (a spare, a replacement) is not blamed for the
 * late failures of the one it replaced. Retired descriptors stay open until the array
 * closes, so their numbers are not reused meanwhile.
 */
void array_member_io_failed(struct graid_array *a, unsigned role, int fd, int err);
/*
 * member_fail.c: a durable metadata write (a mark) on descriptor @p fd of @p role failed
 * with @p err: the role is failed as for an I/O error, unless it has another device now or
 * is the last copy of something (kept, logged); -EBADE fences the array. No lock held.
 */
void array_member_mark_failed(struct graid_array *a, unsigned role, int fd, int err);
/*
 * member_fail.c: an I/O error of an active or rebuilding fabric member whose controllers
 * are reconnecting (or -ETIMEDOUT while one still reads live: a path gone silent, not yet
 * noticed) makes it UNREACHABLE instead of failed (true); meta_lock held.
 */
bool array_member_unreachable(struct graid_array *a, unsigned role, int err);
/*
 * member_fail.c: an I/O issued on descriptor @p fd of @p role passed the array's I/O
 * timeout. True: the caller may give up on it (the role is out now, as for an error
 * -ETIMEDOUT, or was out or on another device already); *counted: the role's late_ios
 * counts it (it was the role's device), to be taken off when the kernel ends it. False:
 * the others cannot carry the array without the role, so the I/O is waited for.
 * meta_lock not held.
 */
bool array_member_timed_out(struct graid_array *a, unsigned role, int fd, bool *counted);
/*
 * member_fail.c: a metadata write on @p fd of @p role (meta_write.c) passed the I/O timeout;
 * the writer counted it in late_ios itself. The role fails as for any I/O past the timeout,
 * unless the others cannot carry the array without it (then it stays, logged). meta_lock
 * not held, nor a lock meta_lock is ever taken under.
 */
void array_member_mark_timed_out(struct graid_array *a, unsigned role, int fd);
/*
 * array_readerr.c: whether a read of @p role that failed with @p err is a media error on a
 * member otherwise reachable (a sector to rebuild and rewrite), not a lost path or device.
 * Counts nothing.
 */
bool array_read_error_repairable(struct graid_array *a, unsigned role, int err);
/*
 * A read of @p role on descriptor @p fd failed with @p err. True: a media error on a member
 * that is otherwise healthy, to be repaired from redundancy (the member stays; the error
 * counts against it); false: the caller fails it as for any error (array_member_io_failed):
 * not a media error, or more of them than READERR_MAX within the hour.
 */
bool array_member_read_error(struct graid_array *a, unsigned role, int fd, int err);
/*
 * @p units 4 KiB blocks of @p role in member row @p row were rebuilt from redundancy and
 * written back (GRAID_EVENT_BLOCK_REPAIRED).
 */
void array_member_read_repaired(struct graid_array *a, unsigned role, uint64_t row,
				uint64_t units);


/*
 * member_fail.c, from the I/O path: @p role failed and a spare may take it. Only marks the
 * work and wakes the worker, which does the takeover (roles.c); meta_lock held. Only that
 * role: one left out on purpose (missing at an open that could not place a member) is not
 * given a spare by someone else's failure.
 */
static inline void array_worker_takeover(struct graid_array *a, unsigned role)
{
	if (a->nspares) {
		a->takeover_role[role] = true;
		a->takeover_due = true;
		pthread_cond_signal(&a->worker_cond);
	}
}


/*
 * array_flush.c: make every completed write durable on every writable member, failing those
 * that cannot, then let the bitmap clear quiet regions. -EIO when the array is broken (too
 * many failed), else 0; *failed (may be NULL) gets how many members failed to flush. What
 * graid_array_flush() wraps; internal callers carry on degraded when a member fails.
 */
int array_flush_members(struct graid_array *a, unsigned *failed);


/* events.c */
void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count);

#endif /* LIBGRAID_CORE_META_H */
