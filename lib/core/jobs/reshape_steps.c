/* SPDX-License-Identifier: MIT */
/*
 * The two steps every window of a reshape's job and its staging (reshape_stage.c) take: the
 * stripe locks of the rows or chunks they touch, and the next record once their bytes are
 * durable (docs/RESHAPE.md). Apart from reshape_grow.c so that the staging, which
 * reshape_grow.c calls, does not call back into it.
 */
#include <errno.h>
#include <stdatomic.h>

#include "jobs/reshape_job.h"
#include "meta/reshape_rec.h"
#include "meta/stripe_lock.h"

/*
 * Take the stripe locks keyed [c0, c1) (each bucket once, after the @p n already in @p held):
 * RAID-0's chunk numbers, RAID-5/6's rows. Every request into them waits. @return the count.
 */
unsigned grow_lock(struct graid_array *a, uint64_t c0, uint64_t c1, unsigned *held, unsigned n)
{
	for (uint64_t c = c0; c < c1; c++) {
		unsigned b = stripe_bucket(c), got;
		bool have = false;

		for (unsigned k = 0; k < n; k++)
			have |= held[k] == b;
		if (have)
			continue;
		for (;;) {
			uint64_t seq = stripe_release_seq(a);

			if (stripe_trylock(a, c, &got))
				break;
			stripe_wait_release(a, seq);
		}
		held[n++] = got;
	}
	return n;
}

/*
 * Write @p rec as the next record (generation + 1 of the job's) and make it the job's once
 * some member took it. A member that missed it was failed (reshape_rec_write): RAID-0
 * breaks; a RAID-5/6 goes on degraded (reshape_grow56.c). @return 0; -errno.
 */
int grow_record_next(struct graid_array *a, struct reshape_job *j, struct reshape_record *rec)
{
	int rc;

	/*
	 * A member out whose superblock round missed a member the array needs (member_fail.h):
	 * the next open could take it back as current, with its old rows where this record
	 * says new ones are. Not recorded: the job stops and is tried again.
	 */
	if (atomic_load(&a->fail_unrecorded))
		return -EIO;
	rec->generation = j->rec.generation + 1;
	rc = reshape_rec_write(a, &j->io, rec, false);
	if (rc > 0 && atomic_load(&a->broken))
		rc = -EIO;
	if (rc > 0) {
		rc = 0;
		j->rec = *rec;
	}
	return rc;
}
