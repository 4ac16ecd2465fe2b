/* SPDX-License-Identifier: MIT */
/*
 * Making completed writes durable on every member (fdatasync, or NVMe Flush), failing the
 * members that cannot, then letting the bitmap and the live-data map record what is now
 * durable. Below the journal, the worker and the public flush, which all call it.
 */
#include <errno.h>

#include "array/array.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/array_flush.h"
#include "array/stats_count.h"
#include "meta/events.h"
#include "meta/member_fail.h"
#include "member/member_replace.h"

int array_flush_members(struct graid_array *a, unsigned *failed)
{
	unsigned nfailed = 0;
	/*
	 * The writes and discards that completed before the members are flushed are the ones
	 * it makes durable: which regions those are is noted now.
	 */
	uint32_t bitmap_epoch = bitmap_flush_begin(a);
	struct live_flush live_f = live_flush_begin(a);
	/*
	 * The tags of those writes before anything records them done: a region the sweep
	 * clears is never resynced, so its tags must be on the members first. Written only:
	 * the loop below flushes every writable member, tags and data in one flush.
	 */
	int tag_rc = a->tags && !a->read_only ? tag_store_write_back(a) : 0;

	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];
		uint64_t start, slow_ms;
		/*
		 * One descriptor for the flush and its verdict: a replace's swap may give the
		 * role another device meanwhile, and a late error of the old one is not the new
		 * one's.
		 */
		int fd = m->dev.fd, err;

		/* Members being rebuilt too: journal checkpoints void their entries after this. */
		if (fd < 0 || !array_role_writable(a, i))
			continue;
		/* fdatasync, or the NVMe Flush command on a generic device (docs/NVME.md). */
		start = graid__now_ns();
		err = member_flush_fd(m, fd);
		slow_ms = stats_member(a, i, GRAID_IO_FLUSH, 0, err != 0, start);
		if (slow_ms)
			array_event(a, GRAID_EVENT_MEMBER_SLOW, (int)i, 0, 0, slow_ms);
		if (err) {
			array_member_io_failed(a, i, fd, err);
			nfailed++;
		}
	}
	/* A replace in service's new device took these writes too: durable there as well. */
	replace_flush(a);
	/*
	 * Every completed write is durable now: quiet regions can lose their marks. Not from a
	 * read-only handle: it writes nothing, and the marks it loaded may be a live writer's.
	 */
	if (tag_rc)
		graid__log(GRAID_LOG_ERR, "flush: checksum tags could not be written (%s): the "
					  "bitmap keeps its marks", graid_strerror(tag_rc));
	if (!a->read_only && !atomic_load(&a->foreign) && !tag_rc) {
		bitmap_sweep(a, bitmap_epoch);
		/* Completed discards are durable now: their regions may be recorded unused. */
		if (!atomic_load(&a->broken))
			live_sweep(a, live_f);
		/* Bad blocks written over since: their records go from the members' logs too. */
		if (badblocks_sync(a))
			graid__log(GRAID_LOG_WARNING, "flush: a member's bad-block log could not be "
						      "rewritten; it keeps records of blocks written since");
	}
	if (failed)
		*failed = nfailed;
	/* A member that failed to flush is out; the survivors hold the data. */
	return atomic_load(&a->broken) ? -EIO : tag_rc;
}
