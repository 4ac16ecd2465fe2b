/* SPDX-License-Identifier: MIT */
/* Background jobs' bad blocks: failed reads narrowed to 4 KiB units, rows recovered column by column. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "io/row_heal.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"
#include "meta/meta.h"

void row_bad_free(struct row_bad *b)
{
	free(b->u);
	*b = (struct row_bad){ 0 };
}

int row_bad_add(struct row_bad *b, unsigned member, int fd, uint64_t off)
{
	if (b->n == b->cap) {
		unsigned cap = b->cap ? 2 * b->cap : 16;
		struct row_bad_unit *u = realloc(b->u, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		b->u = u;
		b->cap = cap;
	}
	b->u[b->n++] = (struct row_bad_unit){ .member = member, .fd = fd, .off = off };
	return 0;
}

bool row_heal_any_media(const struct mbio *ios, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ios[i].media)
			return true;
	return false;
}

/* One read marked media, again unit by unit. 0, -EAGAIN, -ENOMEM or the ring's -errno. */
static int row_heal_narrow_one(struct mbatch *mb, struct mbio *io, struct row_bad *bad)
{
	struct graid_array *a = mb->a;
	const unsigned units = io->len / BBL_UNIT;
	struct mbio *piece = calloc(units, sizeof(*piece));
	int rc = 0;

	if (!piece)
		return -ENOMEM;
	for (unsigned k = 0; k < units; k++)
		piece[k] = (struct mbio){ .member = io->member, .buf = io->buf + k * BBL_UNIT,
					  .len = BBL_UNIT, .off = io->off + k * BBL_UNIT };
	rc = mbatch_run_on(mb, piece, units);
	for (unsigned k = 0; rc == 0 && k < units; k++) {
		struct mbio *p = &piece[k];

		if (p->res == (int)BBL_UNIT)
			continue;
		if (!p->media) {
			rc = -EAGAIN; /* failed another way (the member is out) or went stale */
		} else if (!array_member_read_error(a, p->member, &p->fault, p->res)) {
			array_member_io_failed(a, p->member, p->fault.fd, p->res);
			rc = -EAGAIN; /* one error too many: the member is out now */
		} else {
			rc = row_bad_add(bad, p->member, p->fault.fd, p->off);
			if (rc == 0)
				bad->u[bad->n - 1].csum = p->fault.csum;
		}
	}
	free(piece);
	if (rc == 0) {
		io->res = (int)io->len;
		io->media = false;
	}
	return rc;
}

int row_heal_narrow(struct mbatch *mb, struct mbio *ios, size_t n, struct row_bad *bad)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		int e;

		if (!ios[i].media)
			continue;
		e = row_heal_narrow_one(mb, &ios[i], bad);
		/* A broken ring ends it; a member out only means "plan again", after the rest. */
		if (e && e != -EAGAIN)
			return e;
		rc = rc ? rc : e;
	}
	return rc;
}

bool row_bad_csum_only(const struct row_bad *b, unsigned member, uint64_t off)
{
	bool csum = false;

	for (unsigned i = 0; i < b->n; i++)
		if (b->u[i].member == member && b->u[i].off == off) {
			if (!b->u[i].csum)
				return false;
			csum = true;
		}
	return csum;
}

bool row_bad_cols(const struct row_bad *b, unsigned member, uint64_t off, uint32_t len,
		  struct bbl_cols *cols)
{
	bool any = false;

	for (unsigned i = 0; i < b->n; i++) {
		const struct row_bad_unit *u = &b->u[i];

		if (u->member != member || u->off < off || u->off >= off + len)
			continue;
		bbl_cols_set(cols, (unsigned)((u->off - off) / BBL_UNIT));
		any = true;
	}
	return any;
}

int row_bad_fd(const struct row_bad *b, unsigned member, uint64_t off)
{
	for (unsigned i = 0; i < b->n; i++)
		if (b->u[i].member == member && b->u[i].off == off)
			return b->u[i].fd;
	return -1;
}

int row_heal_parity(struct graid_array *a, uint8_t *const *blk, const struct bbl_cols *era,
		    struct bbl_cols *lost)
{
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	uint8_t *ptrs[GRAID_MAX_MEMBERS];

	for (unsigned c = 0; c < row_heal_cols(a); c++) {
		unsigned idx[GRAID_MAX_MEMBERS], k = 0;
		int rc;

		for (unsigned r = 0; r < nroles; r++)
			if (bbl_cols_test(&era[r], c))
				idx[k++] = r; /* in role order: the engine wants them sorted */
		if (k == 0 || bbl_cols_test(lost, c))
			continue; /* set already: a caller found it past rebuilding */
		if (k > l->nparity) {
			bbl_cols_set(lost, c);
			continue;
		}
		for (unsigned r = 0; r < nroles; r++)
			ptrs[r] = blk[r] + (size_t)c * BBL_UNIT;
		rc = graid_parity_recover(a->be, l->ndata, l->nparity, BBL_UNIT, 1, ptrs, k, idx);
		if (rc)
			return rc;
	}
	return 0;
}

int row_heal_writeback(struct graid_array *a, struct mbatch *mb, uint64_t row,
		       uint8_t *const *blk, const struct bbl_cols *era, const struct bbl_cols *lost,
		       const bool *present, const struct row_bad *bad, struct row_heal_count *count)
{
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity, cols = row_heal_cols(a);
	const uint64_t base = row * l->chunk;
	struct mbio *ios = calloc((size_t)nroles * cols, sizeof(*ios));
	unsigned units[GRAID_MAX_MEMBERS] = { 0 };
	size_t n = 0;
	int rc;

	if (!ios)
		return -ENOMEM;
	for (unsigned r = 0; r < nroles; r++) {
		unsigned m = layout_role_member(l, row, r);

		if (!present[r])
			continue;
		for (unsigned c = 0; c < cols; c++) {
			uint64_t off = base + (uint64_t)c * BBL_UNIT;
			int fd;

			if (!bbl_cols_test(&era[r], c))
				continue;
			if (!bbl_cols_test(lost, c)) {
				if (!a->read_only)
					ios[n++] = (struct mbio){ .member = m, .write = true,
								  .len = BBL_UNIT, .off = off,
								  .buf = blk[r] + (size_t)c * BBL_UNIT };
				continue;
			}
			if (count)
				count->unrecoverable++;
			csum_report_lost(a, m, off, BBL_UNIT);
			/*
			 * Nothing can rewrite it: the device keeps failing it, and its log says so
			 * (unless it cannot take the record: the device still refuses the block).
			 */
			fd = row_bad_fd(bad, m, off);
			if (fd >= 0 && !a->read_only && !badblocks_overlap(a, m, off, BBL_UNIT))
				badblocks_add(a, m, fd, off, BBL_UNIT, BBL_F_UNREADABLE);
		}
	}
	/* A write like any other: its region marked first (a torn one is resynced). */
	rc = 0;
	if (n) {
		int mark = bitmap_start_write(a, row);

		if (mark == 0)
			rc = mbatch_run_on(mb, ios, n);
		bitmap_end_write(a, row); /* due after a failed mark too */
		if (mark) {
			graid__log(GRAID_LOG_WARNING, "row %llu: its bitmap mark failed (%s): what "
						      "was rebuilt is not written back now",
				   (unsigned long long)row, graid_strerror(mark));
			n = 0;
		}
	}
	/* A rewrite that failed took its member out (mbatch): the others stay repaired. */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (ios[i].res == (int)BBL_UNIT)
			units[ios[i].member]++;
	for (unsigned m = 0; count && m < a->nmembers; m++)
		count->rewritten += units[m];
	for (unsigned m = 0; m < a->nmembers; m++)
		if (units[m]) {
			graid__log(GRAID_LOG_WARNING, "member %u (%s): %u block(s) of row %llu it "
						      "could not read (or had recorded bad) rebuilt "
						      "from the others and written back", m,
				   a->members[m].dev.path, units[m], (unsigned long long)row);
			array_member_read_repaired(a, m, row, units[m]);
		}
	free(ios);
	return rc;
}

bool row_heal_unit_from_copy(struct graid_array *a, struct mbatch *mb, const unsigned *members,
			     const uint64_t *moff, unsigned k, unsigned skip_a, unsigned skip_b,
			     unsigned u, uint8_t *dst)
{
	for (unsigned j = 0; j < k; j++) {
		uint64_t at = moff[j] + (uint64_t)u * BBL_UNIT;
		struct mbio io = { .member = members[j], .buf = dst, .len = BBL_UNIT, .off = at };

		if (members[j] == skip_a || members[j] == skip_b ||
		    !array_role_readable(a, members[j], at + BBL_UNIT) ||
		    badblocks_overlap(a, members[j], at, BBL_UNIT))
			continue;
		if (mbatch_run_on(mb, &io, 1) == 0 && io.res == (int)BBL_UNIT)
			return true;
		/* This copy cannot read it either: counted, and failed past the threshold. */
		if (io.media && !array_member_read_error(a, io.member, &io.fault, io.res))
			array_member_io_failed(a, io.member, io.fault.fd, io.res);
	}
	return false;
}
