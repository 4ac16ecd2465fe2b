/* SPDX-License-Identifier: MIT */
/* The array's records on its members (array_meta.c): superblocks, owner checks, member counts. */
#ifndef LIBGRAID_CORE_ARRAY_META_H
#define LIBGRAID_CORE_ARRAY_META_H

#include "array/array.h"

/*
 * Whether every byte @p l places stays readable with the roles of @p state (indexed by role)
 * that are not ACTIVE lost.
 */
bool layout_roles_survivable(const struct layout *l, const uint8_t *state);
/* The same for the array: during a reshape, in both of its geometries. */
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state);
/* Whether the array would still be carried with @p role out as well (the others as now). */
bool array_survives_without(const struct graid_array *a, unsigned role);
void array_fill_sb(const struct graid_array *a, unsigned role, struct superblock *sb,
		   uint32_t flags);
/*
 * Write every writable member's superblock; -ESTALE (nothing written) when another host
 * took the array over (array_owner_check).
 */
int array_write_superblocks(struct graid_array *a, uint32_t flags);
/*
 * A role is about to leave the writable states (failed, unreachable) and a superblock round
 * under the same hold of meta_lock will record it: until that round ends, a write that
 * completes waits for it in array_sb_fence(). meta_lock held; before the state changes.
 */
void array_sb_role_out(struct graid_array *a);
/*
 * A write is about to be acknowledged: if a role has gone out and the superblock round that
 * records it has not ended, wait for it (meta_lock taken and let go; stripe locks may be
 * held, meta_lock must not be). Otherwise a write that skipped that role could be
 * acknowledged while its superblock still says active, and a crash would bring it back.
 */
void array_sb_fence(struct graid_array *a);
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

#endif
