/* SPDX-License-Identifier: MIT */
/*
 * The I/O of a replace that keeps its member in service: the role's writes sent to the new
 * device too, and the copy's own reads and writes, with the redundancy behind a read the
 * old device cannot serve.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/replace.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "format/layout.h"

#include <libgraid/graid_backend.h>
#include "io/row_heal.h"

/* @p meta: a durable metadata write (the journal, the maps), as the fault model tells apart. */
static int replace_io(struct graid_array *a, struct member *m, bool write, bool meta, void *buf,
		      size_t len, uint64_t off)
{
	if (m->dev.fault) {
		uint64_t stall = 0;

		switch (fault_decide(m->dev.fault, write, meta, off, len, &stall)) {
		case FAULT_KILL:
			raise(SIGKILL);
			return -EIO;
		case FAULT_FAIL:
		case FAULT_TEAR:
			return -EIO;
		case FAULT_CONFLICT:
			return -EBADE;
		case FAULT_STALL: {
			struct timespec ts = { (time_t)(stall / 1000000000u),
					       (long)(stall % 1000000000u) };

			nanosleep(&ts, NULL);
			break;
		}
		default:
			break;
		}
	}
	return member_pio(m, buf, len, a->data_offset + off, write);
}

int replace_pio(struct graid_array *a, struct member *m, bool write, void *buf, size_t len,
		uint64_t off)
{
	return replace_io(a, m, write, false, buf, len, off);
}

/* The copy failed on its new device: the copy thread ends it at its next batch. */
static void replace_dev_failed(struct array_replace *r, int rc)
{
	if (!atomic_exchange(&r->failed, true))
		graid__log(GRAID_LOG_ERR, "replace of member %u: writing %s failed: %s", r->role,
			   r->dev.dev.path, graid_strerror(rc));
}

void replace_dup_write(struct graid_array *a, unsigned role, const void *buf, size_t len,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, bool meta)
{
	struct array_replace *r = a->replace;
	uint8_t *flat = NULL;
	int rc = 0;

	if (!r || r->role != role)
		return;
	pthread_rwlock_rdlock(&r->io_lock);
	if (r->gone || atomic_load(&r->failed))
		goto out;
	if (iov) {
		/* One aligned buffer: the device may be O_DIRECT, the pieces need not be. */
		len = 0;
		for (unsigned i = 0; i < iovcnt; i++)
			len += iov[i].iov_len;
		if (posix_memalign((void **)&flat, ARRAY_ALIGN, len ? len : ARRAY_ALIGN)) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0, at = 0; i < iovcnt; at += iov[i].iov_len, i++)
			memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
		buf = flat;
	}
	rc = replace_io(a, &r->dev, true, meta, (void *)buf, len, off);
out:
	if (rc)
		replace_dev_failed(r, rc);
	pthread_rwlock_unlock(&r->io_lock);
	free(flat);
}

void replace_dup_zero(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	struct array_replace *r = a->replace;
	int rc = 0;

	if (!r || r->role != role)
		return;
	pthread_rwlock_rdlock(&r->io_lock);
	if (!r->gone && !atomic_load(&r->failed))
		rc = member_zero_range(&r->dev, a->data_offset + off, len);
	if (rc)
		replace_dev_failed(r, rc);
	pthread_rwlock_unlock(&r->io_lock);
}

/* A unit lost to every device: zeroed in @p buf, remembered for the new device's log. */
static void replace_lost(struct array_replace *r, uint64_t off)
{
	if (r->nlost < REPLACE_LOST_MAX)
		r->lost[r->nlost] = off;
	/* Past the list the swap refuses: counted so that it knows. */
	r->nlost++;
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
	}
	rc = row_heal_parity(a, blk, era, &lost);
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
