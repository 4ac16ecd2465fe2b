/* SPDX-License-Identifier: MIT */
/*
 * Quiescing an array (docs/ARCHITECTURE.md, "Quiescing an array"). A request is counted in
 * fg_inflight before it looks at the flag, and the quiescer sets the flag before it looks
 * at the count, all sequentially consistent: either the request sees the flag (and waits,
 * uncounted), or the quiescer sees the request counted (and waits for it to end). No lock
 * is taken on the request's path; a held request sleeps in steps of a millisecond, which
 * a quiesce (a few metadata writes) outlasts a handful of times at most.
 */
#include <errno.h>
#include <time.h>

#include "io/quiesce.h"

static const struct timespec quiesce_step = { .tv_sec = 0, .tv_nsec = 1000000 };

int quiesce_enter(struct graid_array *a, unsigned queued)
{
	for (;;) {
		atomic_fetch_add(&a->fg_inflight, 1);
		if (!atomic_load(&a->quiesced))
			return 0;
		atomic_fetch_sub(&a->fg_inflight, 1);
		if (queued)
			return -EAGAIN;
		if (atomic_load(&a->closing))
			return -ECANCELED;
		nanosleep(&quiesce_step, NULL);
	}
}

void quiesce_leave(struct graid_array *a)
{
	atomic_fetch_sub(&a->fg_inflight, 1);
}

int array_quiesce(struct graid_array *a, uint64_t drain_ns)
{
	bool no = false;
	uint64_t waited = 0;

	if (!atomic_compare_exchange_strong(&a->quiesced, &no, true))
		return -EBUSY;
	while (atomic_load(&a->fg_inflight)) {
		int rc = atomic_load(&a->closing) ? -ECANCELED
		       : atomic_load(&a->broken) ? -EIO
		       : waited >= drain_ns ? -EBUSY : 0;

		if (rc) {
			if (rc == -EBUSY)
				graid__log(GRAID_LOG_ERR, "array: %u requests still in flight after "
							  "%llu ms; not quiesced",
					   atomic_load(&a->fg_inflight),
					   (unsigned long long)(drain_ns / 1000000));
			atomic_store(&a->quiesced, false);
			return rc;
		}
		nanosleep(&quiesce_step, NULL);
		waited += (uint64_t)quiesce_step.tv_nsec;
	}
	return 0;
}

void array_unquiesce(struct graid_array *a)
{
	atomic_store(&a->quiesced, false);
}
