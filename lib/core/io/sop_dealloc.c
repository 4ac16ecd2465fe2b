/* SPDX-License-Identifier: MIT */
/* Discard and write-zeroes of whole stripes: every member deallocates its part. */
#include <errno.h>

#include "io/discard.h"
#include "io/sop_internal.h"
#include "meta/badblocks.h"
#include "meta/meta.h"

/*
 * Every writable member zeroes its part of the stripes (chunks on RAID-1/10) without a data
 * transfer (discard.c). Parity of zeroes is zeroes, so P and Q are deallocated like the data,
 * and a member missing here reads back as zeroes through them. Runs under the stripe locks a
 * write takes (none on RAID-0), after the bitmap was marked: a crash in the middle leaves
 * each block old or zero, and the resync makes parity agree.
 */
void sop_dealloc_locked(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = &q->a->lay;
	const bool mirror = l->level == 1 || l->level == 10;
	struct graid_array *a = q->a;
	unsigned members[GRAID_MAX_MEMBERS], n = a->nmembers, nok = 0, nfail = 0;
	uint64_t moff[GRAID_MAX_MEMBERS], len = (uint64_t)s->nrun * l->chunk;

	s->phase = SOP_WRITING;
	if (mirror) {
		n = layout_copies(l, s->arr_off, members, moff);
		len = s->arr_len;
	} else {
		for (unsigned m = 0; m < n; m++) {
			members[m] = m;
			moff[m] = sop_member_off(l, s->stripe, 0);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		int fd = a->members[members[i]].dev.fd;

		if (!array_role_writable(a, members[i])) {
			nfail++;
		} else if (discard_member(q, members[i], moff[i], len)) {
			nfail++;
		} else {
			nok++;
			/* Zeroes on every member: consistent, and valid data again. */
			badblocks_clear(a, members[i], fd, moff[i], len);
		}
	}
	/* A drive refused it for another host's reservation: not ours to acknowledge. */
	if (array_foreign(a))
		sop_finish(q, s, -ESTALE);
	else if (mirror)
		sop_finish(q, s, nok && !atomic_load(&a->broken) ? 0 : -EIO);
	else if (l->nparity == 0)
		sop_finish(q, s, nfail ? -EIO : 0);
	else
		sop_finish(q, s, atomic_load(&a->broken) ? -EIO : 0);
}
