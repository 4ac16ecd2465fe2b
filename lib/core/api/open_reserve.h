/* SPDX-License-Identifier: MIT */
/*
 * A writable open's persistent reservations on its members (docs/REMOTE.md, "Reservations"):
 * taken after the lease and before the first write, so the drives themselves refuse an old
 * owner's writes once this host holds them.
 */
#ifndef LIBGRAID_CORE_OPEN_RESERVE_H
#define LIBGRAID_CORE_OPEN_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "api/array_assemble.h"

/*
 * Hold Write Exclusive with @p key on every member and spare of the array the assembly
 * holds, preempting where a key an owner record names holds it. Members without
 * reservations are logged and left to the lease and the owner epoch, unless @p strict
 * (GRAID_OPEN_RESERVE): then they fail the open.
 * @return 0; -EBUSY a member's reservation is held by a key no owner record of the array
 *   names (logged with the member and the key; members preempted before it stay this
 *   host's until open_unreserve()); -EOPNOTSUPP @p strict and a member without
 *   reservations, or @p key 0 (this host has no machine id); -errno a device's failure.
 */
int open_reserve(const struct assembly *as, uint64_t key, bool strict);

/*
 * Give back what open_reserve() took through the assembly's descriptors: those the array
 * did not take (array_unreserve() releases the rest).
 */
void open_unreserve(const struct assembly *as, uint64_t key);

/*
 * Release the array's reservations (a->pr_key): members, spares, and the devices replaced
 * in their roles (their kept descriptors). After its last write: array_free().
 */
void array_unreserve(struct graid_array *a);

#endif
