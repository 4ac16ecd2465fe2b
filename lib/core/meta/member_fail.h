/* SPDX-License-Identifier: MIT */
/* A member's failures (member_fail.c): taken out, unreachable, timed out; the worker woken. */
#ifndef LIBGRAID_CORE_MEMBER_FAIL_H
#define LIBGRAID_CORE_MEMBER_FAIL_H

#include "array/array.h"

/*
 * A member returned an error: take it out, record it, keep serving (a
 * reservation conflict, -EBADE, is array_owner_fenced() instead).
 */
void array_member_failed(struct graid_array *a, unsigned role, int err);
/*
 * Role @p role was just taken out (its state changed, a->events advanced): record it on the
 * members (a superblock round). Where the round reaches no member still in, the next open
 * could take @p role back as current (every superblock at the old event) and serve its old
 * bytes over writes that went around it: such writes are not acknowledged
 * (a->fail_unrecorded, io/sop_common.c sop_finish) until a round reaches one (the worker
 * writes it again each second). meta_lock held.
 */
void array_member_out_record(struct graid_array *a, unsigned role);
/*
 * An I/O issued on descriptor @p fd of a role failed: fail the role only if it still has
 * that device. A device swapped in since (a spare, a replacement) is not blamed for the
 * late failures of the one it replaced. Retired descriptors stay open until the array
 * closes, so their numbers are not reused meanwhile.
 */
void array_member_io_failed(struct graid_array *a, unsigned role, int fd, int err);
/*
 * A durable metadata write (a mark) on descriptor @p fd of @p role failed
 * with @p err: the role is failed as for an I/O error, unless it has another device now or
 * is the last copy of something (kept, logged); -EBADE fences the array. No lock held.
 */
void array_member_mark_failed(struct graid_array *a, unsigned role, int fd, int err);
/*
 * An I/O error of an active or rebuilding fabric member whose controllers
 * are reconnecting (or -ETIMEDOUT while one still reads live: a path gone silent, not yet
 * noticed) makes it UNREACHABLE instead of failed (true); meta_lock held.
 */
bool array_member_unreachable(struct graid_array *a, unsigned role, int err);
/*
 * An I/O issued on descriptor @p fd of @p role passed the array's I/O
 * timeout. True: the caller may give up on it (the role is out now, as for an error
 * -ETIMEDOUT, or was out or on another device already); *counted: the role's late_ios
 * counts it (it was the role's device), to be taken off when the kernel ends it. False:
 * the others cannot carry the array without the role, so the I/O is waited for.
 * meta_lock not held.
 */
bool array_member_timed_out(struct graid_array *a, unsigned role, int fd, bool *counted);
/*
 * A metadata write on @p fd of @p role (meta_write.c) passed the I/O timeout;
 * the writer counted it in late_ios itself. The role fails as for any I/O past the timeout,
 * unless the others cannot carry the array without it (then it stays, logged). meta_lock
 * not held, nor a lock meta_lock is ever taken under.
 */
void array_member_mark_timed_out(struct graid_array *a, unsigned role, int fd);
/*
 * From the I/O path: @p role failed and a spare may take it. Only marks the
 * work and wakes the worker, which does the takeover (roles.c); meta_lock held. Only that
 * role: one left out on purpose (missing at an open that could not place a member) is not
 * given a spare by someone else's failure.
 */
static inline void array_worker_takeover(struct graid_array *a, unsigned role)
{
	/* a->replace: a copy of the role under way takes it over (jobs/replace.c). */
	if (a->nspares || a->replace) {
		a->takeover_role[role] = true;
		a->takeover_due = true;
		pthread_cond_signal(&a->worker_cond);
	}
}

#endif
