/* SPDX-License-Identifier: MIT */
/* A rebuild's rows that met bad blocks: rebuilt column by column, or zeroed and recorded lost. */
#include <errno.h>
#include <string.h>

#include "io/lost_write_column.h"
#include "jobs/rebuild_heal.h"
#include "meta/bitmap.h"
#include "meta/array_readerr.h"
#include "meta/csum_report.h"
#include "meta/member_fail.h"

bool rebuild_heal_parity_needed(struct graid_array *a, uint64_t row, const bool *have,
				const struct row_bad *bad)
{
	const uint64_t off = row * a->lay.chunk;

	/* A stale block the records locate beside the role out (lost_write_column.h). */
	if (lwc_rebuild_suspect(a, row))
		return true;
	for (unsigned m = 0; m < a->nmembers; m++) {
		struct bbl_cols cols = { { 0 } };

		if (have[m] && (row_bad_cols(bad, m, off, a->lay.chunk, &cols) ||
				badblocks_overlap(a, m, off, a->lay.chunk)))
			return true;
	}
	return false;
}

int rebuild_heal_parity_row(struct graid_array *a, struct mbatch *mb, uint64_t row,
			    uint8_t *const *blk, const bool *have, const unsigned *target,
			    unsigned ntarget, const struct row_bad *bad, struct row_bad *lost)
{
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity, cols = row_heal_cols(a);
	const uint64_t off = row * l->chunk;
	struct bbl_cols era[GRAID_MAX_MEMBERS], gone = { { 0 } };
	struct lwc_scrub_cols sc = { { { 0 } }, { { 0 } }, { { 0 } } };
	bool present[GRAID_MAX_MEMBERS];
	unsigned ngone = 0;
	int rc;

	for (unsigned r = 0; r < nroles; r++) {
		unsigned m = layout_role_member(l, row, r);

		memset(&era[r], 0, sizeof(era[r]));
		present[r] = have[m];
		if (!have[m]) {
			for (unsigned c = 0; c < cols; c++)
				bbl_cols_set(&era[r], c);
			continue;
		}
		row_bad_cols(bad, m, off, l->chunk, &era[r]);
		badblocks_cols(a, m, off, l->chunk, &era[r]);
	}
	/*
	 * Stale blocks judged before anything is rebuilt (issue #41): rebuilt with one in
	 * place, the targets' blocks would come out wrong under fresh tags. A located one
	 * becomes an erasure; a column past the parities is lost (zeroed on the targets below).
	 */
	lwc_rebuild_erasures(a, row, blk, era, &sc);
	gone = sc.lost;
	rc = row_heal_parity(a, blk, era, &gone);
	if (rc == 0)
		rc = row_heal_writeback(a, mb, row, blk, era, &gone, present, bad, NULL);
	for (unsigned c = 0; rc == 0 && c < cols; c++) {
		if (!bbl_cols_test(&gone, c))
			continue;
		ngone++;
		for (unsigned t = 0; rc == 0 && t < ntarget; t++) {
			unsigned r = layout_member_role(l, row, target[t]);

			memset(blk[r] + (size_t)c * BBL_UNIT, 0, BBL_UNIT);
			rc = row_bad_add(lost, target[t], a->members[target[t]].dev.fd,
					 off + (uint64_t)c * BBL_UNIT);
		}
	}
	if (ngone)
		graid__log(GRAID_LOG_ERR, "rebuild: row %llu: %u block(s) of 4 KiB have no copy "
					  "left on any member (an unreadable sector where redundancy "
					  "was already spent): recorded lost on the rebuilt member(s)",
			   (unsigned long long)row, ngone);
	return rc;
}

int rebuild_heal_mirror_chunk(struct graid_array *a, struct mbatch *mb, unsigned target,
			      uint64_t target_off, uint8_t *buf, unsigned src, uint64_t src_off,
			      const struct row_bad *bad, struct row_bad *lost)
{
	const struct layout *l = &a->lay;
	struct bbl_cols cols = { { 0 } };
	unsigned members[GRAID_MAX_MEMBERS], ngone = 0, k;
	uint64_t moff[GRAID_MAX_MEMBERS], arr;
	int rc = 0;

	row_bad_cols(bad, src, src_off, l->chunk, &cols);
	badblocks_cols(a, src, src_off, l->chunk, &cols);
	if (!bbl_cols_any(&cols) || layout_unmap(l, target, target_off, &arr))
		return 0;
	arr -= arr % l->chunk;
	k = layout_copies(l, arr, members, moff);
	for (unsigned c = 0; rc == 0 && c < row_heal_cols(a); c++) {
		uint8_t *unit = buf + (size_t)c * BBL_UNIT;
		uint64_t at = src_off + (uint64_t)c * BBL_UNIT;
		int fd;

		if (!bbl_cols_test(&cols, c))
			continue;
		if (row_heal_unit_from_copy(a, mb, members, moff, k, target, src, c, unit)) {
			struct mbio io = { .member = src, .write = true, .buf = unit,
					   .len = BBL_UNIT, .off = at };

			/* Written back to the copy that lacked it (which clears its record). */
			if (bitmap_start_write(a, arr / l->chunk) == 0)
				rc = mbatch_run_on(mb, &io, 1);
			bitmap_end_write(a, arr / l->chunk);
			if (rc == 0 && io.res == (int)BBL_UNIT)
				array_member_read_repaired(a, src, at / l->chunk, 1);
			continue;
		}
		ngone++;
		csum_report_lost(a, src, at, BBL_UNIT);
		memset(unit, 0, BBL_UNIT);
		rc = row_bad_add(lost, target, a->members[target].dev.fd,
				 target_off + (uint64_t)c * BBL_UNIT);
		fd = row_bad_fd(bad, src, at);
		if (rc == 0 && fd >= 0 && !badblocks_overlap(a, src, at, BBL_UNIT))
			badblocks_add(a, src, fd, at, BBL_UNIT, BBL_F_UNREADABLE);
	}
	if (ngone)
		graid__log(GRAID_LOG_ERR, "rebuild: member %u, data-area byte %llu: %u block(s) "
					  "of 4 KiB have no readable copy left: recorded lost",
			   target, (unsigned long long)target_off, ngone);
	return rc;
}

void rebuild_heal_record_lost(struct graid_array *a, struct row_bad *lost, const bool *failed)
{
	for (unsigned i = 0; i < lost->n;) {
		const struct row_bad_unit *u = &lost->u[i];
		unsigned k = 1;
		int rc;

		/* One record per run of units in a row on one device. */
		while (i + k < lost->n && lost->u[i + k].member == u->member &&
		       lost->u[i + k].fd == u->fd &&
		       lost->u[i + k].off == u->off + (uint64_t)k * BBL_UNIT)
			k++;
		if (!failed[u->member]) {
			rc = badblocks_add(a, u->member, u->fd, u->off, (uint64_t)k * BBL_UNIT,
					   BBL_F_LOST);
			/* -ESTALE: replaced meanwhile, the new device is rebuilt anew. */
			if (rc && rc != -ESTALE)
				array_member_io_failed(a, u->member, u->fd, rc == -ENOSPC ? -EIO : rc);
		}
		i += k;
	}
	row_bad_reset(lost);
}
