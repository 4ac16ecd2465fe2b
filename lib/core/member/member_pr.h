/* SPDX-License-Identifier: MIT */
/*
 * Persistent reservations on one member (docs/REMOTE.md, "Reservations"): Write Exclusive
 * through the Linux persistent-reservation ioctls, which the kernel turns into NVMe
 * Reservation commands or SCSI PERSISTENT RESERVE OUT alike. The key is the host's (its
 * machine id's first 8 bytes), so a new owner knows the old owner's key from its record.
 */
#ifndef LIBGRAID_CORE_MEMBER_PR_H
#define LIBGRAID_CORE_MEMBER_PR_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

/*
 * Register @p key for this host (replacing any key this host had there) and take Write
 * Exclusive: then only this host writes the member. 0 held (already held by @p key too);
 * -EBUSY another key holds it; -EOPNOTSUPP the member has no reservations (a file, an NVMe
 * generic character device, a target that refuses them, as Debian 6.12's nvmet does);
 * another -errno for any other failure (logged with the device's status).
 */
int member_pr_reserve(struct member *m, uint64_t key);

/*
 * Take Write Exclusive from @p victim's key (registered with member_pr_reserve() first): the
 * victim's later writes are refused; what it had already started completes. 0; -EBUSY
 * @p victim does not hold it (another key does); -errno.
 */
int member_pr_preempt(struct member *m, uint64_t key, uint64_t victim);

/*
 * What a reserving open or attach makes of @p rc, the outcome of reserving @p m with @p key:
 * 0 held, or (without @p strict) no usable reservations there: the registration undone and
 * logged at info level, the member fenced by the lease and the owner epoch only. Returns 0
 * for both; -EBUSY another key holds it; with @p strict, @p rc itself for any other failure
 * (logged). *@p held: whether it is reserved.
 */
int member_pr_settle(struct member *m, uint64_t key, int rc, bool strict, bool *held);

/* Release @p key's reservation and unregister it; quiet: nothing held is not an error. */
void member_pr_release(struct member *m, uint64_t key);

#endif /* LIBGRAID_CORE_MEMBER_PR_H */
