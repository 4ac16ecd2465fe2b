/* SPDX-License-Identifier: MIT */
/* Checksum mismatches settled: healed (data or tag wrong), given up on, or unverified after a crash. */
#include <errno.h>
#include <sys/uio.h>

#include "format/layout.h"
#include "member/csum_pend.h"
#include "member/tag_store.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"
#include "meta/events.h"

/* Entries taken out of the table at once (a call takes them all, this many at a time). */
#define CSUM_REPORT_MAX 64u

/* Repairs that wrote @p n pending blocks over @p off: each an event, tag or data wrong. */
static void csum_report_healed(struct graid_array *a, unsigned role, uint64_t off,
			       const struct iovec *iov, unsigned iovcnt,
			       const struct csum_pend_entry *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		/*
		 * The repair wrote what the redundancy holds: the same bytes as the member
		 * returned mean they were right all along, and only their tag was not.
		 */
		bool tag = csum_pend_fp(iov, iovcnt, e[i].block * 4096u - off) == e[i].fp;

		if (e[i].lost) {
			csum_report_lost_write(a, (int)role, e[i].block, 1, 0);
			continue;
		}
		graid__log(GRAID_LOG_WARNING, "member %u (%s): block %llu of its data area %s; "
					      "rewritten", role, a->members[role].dev.path,
			   (unsigned long long)e[i].block,
			   tag ? "held the right data under a wrong tag"
			       : "held wrong data (its checksum caught it), rebuilt from the others");
		if (tag)
			atomic_fetch_add(&a->members[role].role.csum_tag_errors, 1);
		array_event(a, tag ? GRAID_EVENT_CSUM_TAG_ERROR : GRAID_EVENT_CSUM_ERROR, (int)role,
			    0, e[i].block, 1);
	}
}

void csum_report_written(struct graid_array *a, unsigned role, const struct member_io_fault *mf,
			 uint32_t len)
{
	struct csum_pend_entry e[CSUM_REPORT_MAX];
	struct iovec one = { .iov_base = mf->buf, .iov_len = len };
	const struct iovec *iov = mf->iov ? mf->iov : &one;
	const unsigned iovcnt = mf->iov ? mf->iovcnt : 1;
	unsigned n;

	if (!a->tags || mf->off == UINT64_MAX)
		return;
	do {
		n = csum_pend_take(&a->members[role].role.csum_pend, mf->off, len, e,
				   CSUM_REPORT_MAX);
		csum_report_healed(a, role, mf->off, iov, iovcnt, e, n);
	} while (n == CSUM_REPORT_MAX);
}

void csum_report_lost(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	struct csum_pend_entry e[CSUM_REPORT_MAX];
	unsigned n;

	if (!a->tags || role >= a->nmembers)
		return;
	do {
		n = csum_pend_take(&a->members[role].role.csum_pend, off, len, e, CSUM_REPORT_MAX);
		for (unsigned i = 0; i < n; i++) {
			if (e[i].lost) {
				csum_report_lost_write(a, (int)role, e[i].block, 1, -EIO);
				continue;
			}
			graid__log(GRAID_LOG_ERR, "member %u (%s): block %llu of its data area "
						  "failed its checksum and could not be rebuilt from "
						  "the others", role, a->members[role].dev.path,
				   (unsigned long long)e[i].block);
			array_event(a, GRAID_EVENT_CSUM_ERROR, (int)role, -EIO, e[i].block, 1);
		}
	} while (n == CSUM_REPORT_MAX);
}

void csum_report_lost_write(struct graid_array *a, int role, uint64_t block, unsigned nblocks,
			    int err)
{
	if (!a->tags || role >= (int)a->nmembers || !nblocks)
		return;
	if (role < 0) {
		graid__log(GRAID_LOG_ERR, "a column at block %llu of the data members lost a "
					  "write that its records cannot place on one member: its "
					  "reads fail until a write covers it",
			   (unsigned long long)block);
		array_event(a, GRAID_EVENT_CSUM_LOST_WRITE, -1, err, block, nblocks);
		return;
	}
	atomic_fetch_add(&a->members[role].role.csum_errors, nblocks);
	atomic_fetch_add(&a->members[role].role.csum_lost_writes, nblocks);
	graid__log(err ? GRAID_LOG_ERR : GRAID_LOG_WARNING,
		   "member %u (%s): block%s %llu..%llu of its data area held an older write than "
		   "the other members record (a write the drive acknowledged and lost); %s",
		   (unsigned)role, a->members[role].dev.path, nblocks == 1 ? "" : "s",
		   (unsigned long long)block, (unsigned long long)(block + nblocks - 1),
		   err ? "could not be rebuilt from the others" : "rebuilt from the others");
	for (unsigned i = 0; i < nblocks; i++)
		array_event(a, GRAID_EVENT_CSUM_LOST_WRITE, role, err, block + i, 1);
}

/* The bitmap's stripe of byte @p off of @p role's data area; false: none (unused slot). */
static bool csum_report_stripe(const struct graid_array *a, unsigned role, uint64_t off,
			       uint64_t *stripe)
{
	const struct layout *l = &a->lay;
	uint64_t at;

	/* RAID-10 marks array chunks; the other levels rows of the members. */
	if (l->level != 10) {
		*stripe = off / l->chunk;
		return true;
	}
	if (layout_unmap(l, role, off, &at))
		return false;
	*stripe = at / l->chunk;
	return true;
}

/* Whether [off, off + len) of @p role's data area lies wholly in regions still to resync. */
static bool csum_report_in_unresynced(const struct graid_array *a, unsigned role, uint64_t off,
				      uint64_t len)
{
	const uint64_t chunk = a->lay.chunk;

	if (off == UINT64_MAX)
		return false;
	/* Chunk by chunk: on RAID-10 the next chunk of a member is another array chunk. */
	for (uint64_t o = off, st; o < off + len; o = (o / chunk + 1) * chunk)
		if (!csum_report_stripe(a, role, o, &st) || !bitmap_unresynced(a, st))
			return false;
	return true;
}

bool csum_report_unresynced(struct graid_array *a, unsigned role, struct member_io_fault *mf,
			    uint32_t len)
{
	struct csum_pend_entry e[CSUM_REPORT_MAX];
	struct iovec one = { .iov_base = mf->buf, .iov_len = len };
	unsigned n, total = 0;

	if (!mf->csum)
		return false;
	/* Else the tags stay as they are (a tag block unreadable): healed the ordinary way. */
	if (!csum_report_in_unresynced(a, role, mf->off, len) ||
	    tag_store_set(a, role, mf->off, mf->iov ? mf->iov : &one, mf->iov ? mf->iovcnt : 1)) {
		graid__log(GRAID_LOG_WARNING, "member %u (%s): data-area bytes %llu..%llu failed "
					      "their checksums", role, a->members[role].dev.path,
			   (unsigned long long)mf->off, (unsigned long long)(mf->off + len));
		return false;
	}
	do {
		n = csum_pend_take(&a->members[role].role.csum_pend, mf->off, len, e,
				   CSUM_REPORT_MAX);
		for (unsigned i = 0; i < n; i++) {
			/* A lost write's entry was not counted when found (csum_pend.h). */
			if (!e[i].lost)
				atomic_fetch_sub(&a->members[role].role.csum_errors, 1);
			array_event(a, GRAID_EVENT_CSUM_UNVERIFIED, (int)role, 0, e[i].block, 1);
		}
		total += n;
	} while (n == CSUM_REPORT_MAX);
	/* Not corruption: the resync would have made these tags from the same bytes. */
	if (total)
		graid__log(GRAID_LOG_INFO, "member %u (%s): %u block(s) of data-area bytes "
					   "%llu..%llu unverified after crash, inside a region still "
					   "to resync: kept as they are, their tags made anew", role,
			   a->members[role].dev.path, total, (unsigned long long)mf->off,
			   (unsigned long long)(mf->off + len));
	mf->csum = false;
	return true;
}
