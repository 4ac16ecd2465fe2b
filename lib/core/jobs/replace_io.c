/* SPDX-License-Identifier: MIT */
/* A replace in service's reads the member cannot serve: the role's blocks from the redundancy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/replace.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "format/layout.h"
#include "format/superblock.h"
#include "member/tag_store.h"
#include "meta/csum_report.h"
#include "meta/events.h"
#include <sys/uio.h>

#include <libgraid/graid_backend.h>
#include "io/lost_write_column.h"
#include "io/row_heal.h"

/* A unit lost to every device: zeroed in @p buf, remembered for the new device's log. */
static void replace_lost(struct array_replace *r, uint64_t off)
{
	pthread_mutex_lock(&r->lost_lock);
	if (r->nlost < REPLACE_LOST_MAX)
		r->lost[r->nlost] = off;
	/* Past the list the swap is refused: counted so that it knows. */
	r->nlost++;
	pthread_mutex_unlock(&r->lost_lock);
}

/*
 * Of @p len bytes of role @p m's data area at @p off, read into @p buf, the 4 KiB units
 * that fail their tags (into @p bad, unit 0 at @p off): a source of the redundancy is only
 * as good as its tags say. false: its tags could not be read (none of it is to be used).
 */
static bool replace_source_check(struct graid_array *a, unsigned m, uint64_t off,
				 uint32_t len, uint8_t *buf, struct bbl_cols *bad)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct tag_bad tb[REPLACE_CSUM_UNITS];
	unsigned nbad = 0;
	int rc;

	if (!a->tags)
		return true;
	rc = tag_store_verify(a, m, off, &iov, 1, tb, REPLACE_CSUM_UNITS, &nbad);
	if (rc && rc != -EBADMSG)
		return false;
	for (unsigned i = 0; i < nbad && i < REPLACE_CSUM_UNITS; i++)
		bbl_cols_set(bad, (unsigned)(tb[i].block - off / BBL_UNIT));
	if (nbad)
		graid__log(GRAID_LOG_WARNING, "replace: %u block(s) of source member %u's data-area "
			   "bytes %llu..%llu failed their checksums: not used (left to its next "
			   "read or scrub)", nbad, m, (unsigned long long)off,
			   (unsigned long long)(off + len));
	return true;
}

/* RAID-1/10: each wanted unit from another copy that reads and records no bad block there. */
static int replace_from_copies(struct graid_array *a, struct array_replace *r, uint64_t off,
			       uint32_t len, const struct bbl_cols *want, uint8_t *buf)
{
	const struct layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS], n;
	uint64_t moff[GRAID_MAX_MEMBERS], arr;

	if (layout_unmap(l, r->role, off, &arr)) {
		memset(buf, 0, len); /* an odd RAID-10's unused slot: nothing to copy */
		return 0;
	}
	n = layout_copies(l, arr, members, moff);
	for (unsigned u = 0; u < len / BBL_UNIT; u++) {
		bool got = false;

		if (!bbl_cols_test(want, u))
			continue;
		for (unsigned k = 0; k < n && !got; k++) {
			unsigned m = members[k];
			uint64_t at = moff[k] + (uint64_t)u * BBL_UNIT;

			if (m == r->role || !array_role_readable(a, m, at + BBL_UNIT) ||
			    badblocks_overlap(a, m, at, BBL_UNIT))
				continue;
			got = replace_pio(a, &a->members[m], false, buf + (size_t)u * BBL_UNIT,
					  BBL_UNIT, at) == 0;
			if (got) {
				struct bbl_cols bad = { { 0 } };

				got = replace_source_check(a, m, at, BBL_UNIT,
							   buf + (size_t)u * BBL_UNIT, &bad) &&
				      !bbl_cols_any(&bad);
			}
		}
		if (!got) {
			memset(buf + (size_t)u * BBL_UNIT, 0, BBL_UNIT);
			replace_lost(r, off + (uint64_t)u * BBL_UNIT);
		}
	}
	return 0;
}

/* RAID-5/6: the row's other chunks read whole, the wanted columns recovered. */
static int replace_from_parity(struct graid_array *a, struct array_replace *r, uint64_t off,
			       uint32_t len, const struct bbl_cols *want, uint8_t *buf)
{
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	const uint64_t row = off / l->chunk, base = row * l->chunk;
	const unsigned first = (unsigned)((off - base) / BBL_UNIT);
	struct bbl_cols era[GRAID_MAX_MEMBERS], lost = { { 0 } };
	struct lwc_scrub_cols sc = { { { 0 } }, { { 0 } }, { { 0 } } };
	uint8_t *blk[GRAID_MAX_MEMBERS], *mem;
	unsigned mine = layout_member_role(l, row, r->role);
	int rc;

	if (posix_memalign((void **)&mem, ARRAY_ALIGN, (size_t)nroles * l->chunk))
		return -ENOMEM;
	memset(era, 0, sizeof(era));
	for (unsigned k = 0; k < nroles; k++) {
		unsigned m = layout_role_member(l, row, k);

		blk[k] = mem + (size_t)k * l->chunk;
		if (k == mine) {
			for (unsigned u = 0; u < len / BBL_UNIT; u++)
				if (bbl_cols_test(want, u))
					bbl_cols_set(&era[k], first + u);
			continue;
		}
		if (!array_role_readable(a, m, base + l->chunk) ||
		    replace_pio(a, &a->members[m], false, blk[k], l->chunk, base)) {
			memset(era[k].w, 0xff, sizeof(era[k].w));
			continue;
		}
		badblocks_cols(a, m, base, l->chunk, &era[k]);
		/* Blocks failing their tags are erasures too, or the rebuild takes their bytes. */
		if (!replace_source_check(a, m, base, l->chunk, blk[k], &era[k]))
			memset(era[k].w, 0xff, sizeof(era[k].w));
	}
	/*
	 * A block the records locate stale beside the erasures is one too (issue #41): the
	 * wanted units rebuilt with it in place would be copied wrong, under fresh tags. Past
	 * the parities the column is lost (recorded on the new device). The role's own chunk
	 * was not read: zeroes, so that the check by Q reads no unset memory.
	 */
	memset(blk[mine], 0, l->chunk);
	lwc_scrub_erasures(a, row, blk, era, &sc);
	lost = sc.lost;
	rc = row_heal_parity(a, blk, era, &lost);
	/* A stale block added in a lost column: nothing rewrites it, its lost write ends -EIO. */
	for (unsigned k = 0; rc == 0 && k < nroles; k++)
		for (unsigned c = 0; k != mine && c < row_heal_cols(a); c++)
			if (bbl_cols_test(&sc.added, c) && bbl_cols_test(&lost, c) &&
			    bbl_cols_test(&era[k], c))
				csum_report_lost(a, layout_role_member(l, row, k),
						 base + (uint64_t)c * BBL_UNIT, BBL_UNIT);
	if (rc == 0)
		for (unsigned u = 0; u < len / BBL_UNIT; u++) {
			if (!bbl_cols_test(want, u))
				continue;
			if (bbl_cols_test(&lost, first + u)) {
				memset(buf + (size_t)u * BBL_UNIT, 0, BBL_UNIT);
				replace_lost(r, off + (uint64_t)u * BBL_UNIT);
			} else {
				memcpy(buf + (size_t)u * BBL_UNIT,
				       blk[mine] + (size_t)(first + u) * BBL_UNIT, BBL_UNIT);
			}
		}
	free(mem);
	return rc;
}

int replace_from_redundancy(struct graid_array *a, struct array_replace *r, uint64_t off,
			    uint32_t len, const struct bbl_cols *want, uint8_t *buf)
{
	if (a->lay.level == 1 || a->lay.level == 10)
		return replace_from_copies(a, r, off, len, want, buf);
	return replace_from_parity(a, r, off, len, want, buf);
}

int replace_csum_check(struct graid_array *a, struct array_replace *r, uint64_t off,
		       uint32_t len, const uint8_t *buf, struct bbl_cols *want,
		       struct bbl_cols *bad, uint32_t *fp)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct tag_bad tb[REPLACE_CSUM_UNITS];
	unsigned nbad = 0;
	int rc = tag_store_verify(a, r->role, off, &iov, 1, tb, REPLACE_CSUM_UNITS, &nbad);

	if (rc != -EBADMSG)
		return rc;
	for (unsigned i = 0; i < nbad && i < REPLACE_CSUM_UNITS; i++) {
		unsigned u = (unsigned)(tb[i].block - off / BBL_UNIT);

		bbl_cols_set(want, u);
		bbl_cols_set(bad, u);
		fp[u] = crc32c(buf + (size_t)u * BBL_UNIT, BBL_UNIT);
	}
	atomic_fetch_add(&a->members[r->role].role.csum_errors, nbad);
	graid__log(GRAID_LOG_WARNING, "replace of member %u: %u block(s) of data-area bytes "
		   "%llu..%llu failed their checksums: taken from the redundancy", r->role, nbad,
		   (unsigned long long)off, (unsigned long long)(off + len));
	return 0;
}

static bool replace_is_lost(struct array_replace *r, uint64_t at)
{
	bool lost = false;

	pthread_mutex_lock(&r->lost_lock);
	for (unsigned i = 0; i < r->nlost && i < REPLACE_LOST_MAX && !lost; i++)
		lost = r->lost[i] == at;
	pthread_mutex_unlock(&r->lost_lock);
	return lost;
}

void replace_csum_settle(struct graid_array *a, struct array_replace *r, uint64_t off,
			 const uint8_t *buf, const struct bbl_cols *bad, const uint32_t *fp)
{
	for (unsigned u = 0; u < a->lay.chunk / BBL_UNIT; u++) {
		const uint8_t *unit = buf + (size_t)u * BBL_UNIT;
		struct iovec iov = { .iov_base = (void *)unit, .iov_len = BBL_UNIT };
		const uint64_t at = off + (uint64_t)u * BBL_UNIT;
		bool tag;

		if (!bbl_cols_test(bad, u))
			continue;
		if (replace_is_lost(r, at)) {
			/*
			 * Zeroes on the new device, recorded bad there. Its tag stays: until the
			 * swap (or with none) the member's wrong bytes are still read, and only
			 * the tag stops them.
			 */
			array_event(a, GRAID_EVENT_CSUM_ERROR, (int)r->role, -EIO, at / BBL_UNIT, 1);
			continue;
		}
		tag = crc32c(unit, BBL_UNIT) == fp[u];
		if (tag_store_set(a, r->role, at, &iov, 1))
			graid__log(GRAID_LOG_WARNING, "replace of member %u: the tag of block %llu "
				   "could not be set; a read of it will heal it", r->role,
				   (unsigned long long)(at / BBL_UNIT));
		if (tag)
			atomic_fetch_add(&a->members[r->role].role.csum_tag_errors, 1);
		array_event(a, tag ? GRAID_EVENT_CSUM_TAG_ERROR : GRAID_EVENT_CSUM_ERROR,
			    (int)r->role, 0, at / BBL_UNIT, 1);
	}
}
