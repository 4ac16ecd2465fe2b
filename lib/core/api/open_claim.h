/* SPDX-License-Identifier: MIT */
/*
 * An open's first phase: the members gathered and voted on, and for a writable open the
 * array claimed (lease, owner record, reservations, a takeover's fence) before any write.
 */
#ifndef LIBGRAID_CORE_OPEN_CLAIM_H
#define LIBGRAID_CORE_OPEN_CLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "api/array_assemble.h"
#include "ownership/lease.h"

/* What a writable open holds of the array before its first write to the array's data. */
struct open_claim {
	struct array_lease *lease; /* held from here on, or NULL where none was asked for */
	uint64_t epoch;            /* this open's owner epoch */
	uint64_t pr_key;           /* the key the members were reserved with, or 0 */
	bool fenced;               /* a takeover's owner record is on the members */
};

/*
 * Gather the members given and choose the array (assemble_gather, assemble_filter). A
 * writable open then takes the lease (where @p lease_spec names one), refuses another
 * host's array unless GRAID_OPEN_TAKEOVER is in @p flags, reserves the members, and for a
 * takeover writes this host's owner record, waits for the old owner to see it and gathers
 * again. Whatever it returns, @p as holds what it gathered (assemble_release() it) and
 * @p cl what it claimed: the caller closes the lease, gives back the reservations unless
 * fenced, and warns that a fence stays (graid_array_open's unwinding).
 * @return 0; -EINVAL no member carries a valid superblock; a writable open that could
 *   open none of those that do for writing: the error of the first (-EACCES, -EROFS...);
 *   -EBUSY the lease or the array is another host's, or a fenced old owner still writes;
 *   -EIO no member took the fence; what assemble_gather(), lease_open(), lease_acquire()
 *   and open_reserve() return.
 */
int open_assemble_claimed(struct assembly *as, const char *const *members, unsigned n,
			  unsigned flags, const char *lease_spec, struct open_claim *cl);

#endif
