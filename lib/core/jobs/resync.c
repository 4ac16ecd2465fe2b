/* SPDX-License-Identifier: MIT */
/* After an unclean shutdown: make the dirty regions consistent again (parity from data, copies from their source). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "meta/bitmap.h"
#include "meta/live.h"
#include "io/lost_write_mirror.h"
#include "io/member_batch.h"
#include "io/mirror_source.h"
#include "io/row_heal.h"
#include "meta/badblocks.h"
#include "io/row_job.h"
#include "io/stripe_set.h"
#include "jobs/jobs.h"
#include "meta/array_meta.h"
#include "meta/array_readerr.h"
#include "meta/events.h"

/* A batch holds about this much chunk data in memory (all members of its rows). */
#define RESYNC_BATCH_BYTES (8u << 20)

struct resync_ctx {
	struct graid_array *a;
	struct row_bufs buf;        /* buf.rows_max rows, every member's chunk */
	struct mbatch mb;           /* one ring for the whole resync */
	struct stripe_set locks;
	struct row_bad bad;         /* units the batch being resynced could not read */
	uint64_t done, skipped;
};

/*
 * A RAID-5/6 row whose data could not all be read (a unit some member could not read, or
 * records bad): its parity is read too, what that allows is rebuilt column by column and
 * written back, parity is made anew from the data and written, except in columns past
 * redundancy, where nothing is known and nothing is written (their units are recorded).
 * In a region dirty after a crash the parity a block is rebuilt from may be stale: the
 * write hole, which the journal closes (docs/JOURNAL.md).
 */
static int resync_heal_row(struct resync_ctx *c, uint64_t row, uint8_t **blk)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity, cols = row_heal_cols(a);
	struct bbl_cols era[GRAID_MAX_MEMBERS], lost = { { 0 } };
	bool present[GRAID_MAX_MEMBERS];
	struct mbio pio[2], *w = NULL;
	size_t np = 0, nw = 0;
	int rc;

	for (unsigned p = l->ndata; p < nroles; p++) {
		unsigned m = layout_role_member(l, row, p);

		present[p] = array_role_readable(a, m, (row + 1) * l->chunk);
		if (present[p])
			pio[np++] = (struct mbio){ .member = m, .buf = blk[p], .len = l->chunk,
						   .off = row * l->chunk };
	}
	rc = mbatch_run_on(&c->mb, pio, np);
	if (rc == 0 && row_heal_any_media(pio, np))
		rc = row_heal_narrow(&c->mb, pio, np, &c->bad);
	for (size_t i = 0; rc == 0 && i < np; i++)
		if (pio[i].res != (int)l->chunk)
			rc = -EIO;
	for (unsigned r = 0; rc == 0 && r < nroles; r++) {
		unsigned m = layout_role_member(l, row, r);

		memset(&era[r], 0, sizeof(era[r]));
		if (r < l->ndata)
			present[r] = true; /* every data role was read (resync_parity_rows) */
		if (!present[r]) {
			for (unsigned k = 0; k < cols; k++)
				bbl_cols_set(&era[r], k);
			continue;
		}
		row_bad_cols(&c->bad, m, row * l->chunk, l->chunk, &era[r]);
		badblocks_cols(a, m, row * l->chunk, l->chunk, &era[r]);
	}
	if (rc == 0)
		rc = row_heal_parity(a, blk, era, &lost);
	if (rc == 0)
		rc = row_heal_writeback(a, &c->mb, row, blk, era, &lost, present, &c->bad, NULL);
	if (rc == 0)
		rc = graid_parity_gen(a->be, l->ndata, l->nparity, l->chunk, 1, blk);
	/* The parity, in runs of columns that are known: the others are left as they are. */
	if (rc == 0 && !(w = calloc((size_t)l->nparity * cols, sizeof(*w))))
		rc = -ENOMEM;
	for (unsigned p = l->ndata; rc == 0 && p < nroles; p++) {
		unsigned m = layout_role_member(l, row, p);

		for (unsigned k = 0; array_role_writable(a, m) && k < cols; k++) {
			struct mbio *prev = nw ? &w[nw - 1] : NULL;
			uint64_t off = row * l->chunk + (uint64_t)k * BBL_UNIT;

			if (bbl_cols_test(&lost, k))
				continue;
			if (prev && prev->member == m && prev->off + prev->len == off) {
				prev->len += BBL_UNIT;
				continue;
			}
			w[nw++] = (struct mbio){ .member = m, .write = true, .len = BBL_UNIT,
						 .buf = blk[p] + (size_t)k * BBL_UNIT, .off = off };
		}
	}
	if (rc == 0)
		rc = mbatch_run_on(&c->mb, w, nw);
	free(w);
	if (rc == 0 && bbl_cols_any(&lost))
		c->skipped++;
	return rc;
}

/*
 * RAID-5/6 rows of layout @p l (a->lay, or a reshape's geometry of these rows): read the
 * data, regenerate parity, write it where it can go.
 */
static int resync_parity_rows(struct resync_ctx *c, const struct layout *l, uint64_t row0,
			      unsigned rows)
{
	struct graid_array *a = c->a;
	const unsigned nroles = l->ndata + l->nparity;
	uint64_t row_of[ROW_JOB_ROWS_MAX];
	unsigned ng = 0, kept = 0;
	size_t n = 0;
	int rc;

	for (unsigned i = 0; i < rows; i++) {
		bool data_ok = true;

		/* A member being rebuilt counts below its checkpoint: it is in sync there. */
		for (unsigned d = 0; d < l->ndata; d++)
			data_ok &= array_role_readable(a, layout_role_member(l, row0 + i, d),
						       (row0 + i + 1) * l->chunk);
		if (!data_ok) {
			/* The write hole: a lost data chunk here can only come from this parity. */
			c->skipped++;
			continue;
		}
		for (unsigned r = 0; r < nroles; r++) {
			uint8_t *buf = c->buf.data + ((size_t)ng * nroles + r) * l->chunk;

			c->buf.ptrs[ng * nroles + r] = buf;
			if (r < l->ndata)
				c->buf.ios[n++] = (struct mbio){ .member = layout_role_member(l, row0 + i, r),
							     .buf = buf, .len = l->chunk,
							     .off = (row0 + i) * l->chunk };
		}
		row_of[ng++] = row0 + i;
	}
	if (ng == 0)
		return 0;
	rc = mbatch_run_on(&c->mb, c->buf.ios, n);
	/* Sectors a member cannot read: narrowed, the member kept (row_heal.c). */
	row_bad_reset(&c->bad);
	if (rc == 0 && row_heal_any_media(c->buf.ios, n))
		rc = row_heal_narrow(&c->mb, c->buf.ios, n, &c->bad);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (c->buf.ios[i].res != (int)l->chunk)
			rc = -EIO;
	/* Rows that met bad blocks go their own way; the others stay one batch. */
	for (unsigned g = 0; rc == 0 && g < ng; g++) {
		uint8_t **blk = c->buf.ptrs + (size_t)g * nroles;
		bool heal = false;

		for (unsigned r = 0; r < l->ndata && !heal; r++) {
			unsigned m = layout_role_member(l, row_of[g], r);
			struct bbl_cols cols = { { 0 } };

			heal = row_bad_cols(&c->bad, m, row_of[g] * l->chunk, l->chunk, &cols) ||
			       badblocks_overlap(a, m, row_of[g] * l->chunk, l->chunk);
		}
		if (heal && l != &a->lay) {
			/* Healing places units by a->lay alone: not built across a reshape. */
			c->skipped++;
		} else if (heal) {
			rc = resync_heal_row(c, row_of[g], blk);
			c->done++;
		} else {
			memmove(c->buf.ptrs + (size_t)kept * nroles, blk, nroles * sizeof(*blk));
			row_of[kept++] = row_of[g];
		}
	}
	ng = kept;
	if (rc == 0 && ng)
		/* The parity goes to the drives, not back to the CPU: past its caches. */
		rc = graid_parity_gen_flags(a->be, l->ndata, l->nparity, l->chunk, ng,
					    c->buf.ptrs, GRAID_BATCH_F_STREAM);
	if (rc)
		return rc;
	n = 0;
	for (unsigned g = 0; g < ng; g++)
		for (unsigned p = l->ndata; p < nroles; p++) {
			unsigned m = layout_role_member(l, row_of[g], p);

			if (array_role_writable(a, m))
				c->buf.ios[n++] = (struct mbio){ .member = m, .write = true,
							     .buf = c->buf.ptrs[g * nroles + p],
							     .len = l->chunk,
							     .off = row_of[g] * l->chunk };
		}
	c->done += ng;
	return mbatch_run_on(&c->mb, c->buf.ios, n);
}

/*
 * A RAID-1/10 stripe whose source copy (members[src]) could not read some units, or
 * records them bad: each such unit is taken from another copy that has it and written
 * back to the source too; a unit no copy has is left as it is on every copy (recorded
 * unreadable where the read failed). Then every other copy gets the chunk, around those.
 */
static int resync_mirror_heal(struct resync_ctx *c, const unsigned *members,
			      const uint64_t *moff, unsigned k, unsigned src)
{
	struct graid_array *a = c->a;
	const unsigned cols = row_heal_cols(a);
	struct bbl_cols gone = { { 0 } }, fixed = { { 0 } };
	struct mbio *w = calloc((size_t)k * cols, sizeof(*w));
	unsigned order[GRAID_MAX_MEMBERS], om[GRAID_MAX_MEMBERS];
	uint64_t oo[GRAID_MAX_MEMBERS];
	uint32_t *gens = NULL;
	size_t nw = 0;
	int rc = 0;

	if (!w)
		return -ENOMEM;
	/*
	 * A unit the source lacks comes from the copy a read of it took instead (the next in
	 * mirror_source_order), so what that read returned is what every copy gets.
	 */
	mirror_source_order(a, members, k, order);
	for (unsigned i = 0; i < k; i++) {
		om[i] = members[order[i]];
		oo[i] = moff[order[i]];
	}
	row_bad_cols(&c->bad, members[src], moff[src], a->lay.chunk, &gone);
	badblocks_cols(a, members[src], moff[src], a->lay.chunk, &gone);
	for (unsigned u = 0; rc == 0 && u < cols; u++) {
		uint8_t *unit = c->buf.data + (size_t)u * BBL_UNIT;
		int fd;

		if (!bbl_cols_test(&gone, u))
			continue;
		if (row_heal_unit_from_copy(a, &c->mb, om, oo, k, members[src], members[src], u,
					    unit))
			bbl_cols_set(&fixed, u);
		fd = row_bad_fd(&c->bad, members[src], moff[src] + (uint64_t)u * BBL_UNIT);
		if (!bbl_cols_test(&fixed, u) && fd >= 0 &&
		    !badblocks_overlap(a, members[src], moff[src] + (uint64_t)u * BBL_UNIT, BBL_UNIT))
			badblocks_add(a, members[src], fd, moff[src] + (uint64_t)u * BBL_UNIT, BBL_UNIT,
				      BBL_F_UNREADABLE);
	}
	/* The source gets the units it lacked; the others every unit somebody had. */
	for (unsigned j = 0; rc == 0 && j < k; j++) {
		if (!array_role_writable(a, members[j]))
			continue;
		for (unsigned u = 0; u < cols; u++) {
			struct mbio *prev = nw ? &w[nw - 1] : NULL;
			uint64_t off = moff[j] + (uint64_t)u * BBL_UNIT;

			if (j == src ? !bbl_cols_test(&fixed, u)
				     : bbl_cols_test(&gone, u) && !bbl_cols_test(&fixed, u))
				continue;
			if (prev && prev->member == members[j] && prev->off + prev->len == off) {
				prev->len += BBL_UNIT;
				continue;
			}
			w[nw++] = (struct mbio){ .member = members[j], .write = true, .len = BBL_UNIT,
						 .buf = c->buf.data + (size_t)u * BBL_UNIT, .off = off };
		}
	}
	/* With generations every unit written gets the source's (lost_write_mirror.h). */
	if (rc == 0 && lost_write_mirror_gens_of(a, members[src], moff[src], a->lay.chunk, &gens))
		gens = NULL;
	for (size_t i = 0; gens && i < nw; i++)
		w[i].fault.meta_in = gens + (w[i].buf - c->buf.data) / BBL_UNIT;
	if (rc == 0)
		rc = mbatch_run_on(&c->mb, w, nw);
	free(gens);
	for (size_t i = 0; rc == 0 && i < nw; i++)
		if (w[i].member == members[src] && w[i].res == (int)w[i].len)
			array_member_read_repaired(a, members[src], moff[src] / a->lay.chunk,
						   w[i].len / BBL_UNIT);
	free(w);
	c->done++;
	return rc;
}

/*
 * RAID-1/10 stripe (a row, or an array chunk for RAID-10, placed by the geometry that holds
 * it while a grow moves chunks: its lock held): every copy made equal to the one
 * mirror_source() names, which reads in a region still to resync were served from. If it
 * cannot be read at all the resync fails (the region stays marked, for the next open);
 * a member that failed meanwhile is no longer readable, and the next copy is the source for
 * the resync and the reads alike.
 */
static int resync_mirror_stripe(struct resync_ctx *c, uint64_t stripe)
{
	struct graid_array *a = c->a;
	const struct layout *l = reshape_chunk_layout(a, stripe);
	unsigned members[GRAID_MAX_MEMBERS], src;
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned k = layout_copies(l, stripe * l->chunk, members, moff);
	uint32_t *gens = NULL;
	size_t n = 0;
	int rc;

	/* The copy reads have been served from since the open (sop_mirror_read): one choice. */
	src = mirror_source(a, members, moff, k, 0, NULL);
	if (src == GRAID_LAYOUT_NONE) {
		c->skipped++;
		return 0;
	}
	c->buf.ios[0] = (struct mbio){ .member = members[src], .buf = c->buf.data, .len = l->chunk,
				   .off = moff[src] };
	rc = mbatch_run_on(&c->mb, c->buf.ios, 1);
	row_bad_reset(&c->bad);
	if (rc == 0 && c->buf.ios[0].media)
		rc = row_heal_narrow(&c->mb, c->buf.ios, 1, &c->bad);
	if (rc || c->buf.ios[0].res != (int)l->chunk)
		return rc ? (rc == -EAGAIN ? -EIO : rc) : -EIO;
	if (c->bad.n || badblocks_overlap(a, members[src], moff[src], l->chunk))
		return resync_mirror_heal(c, members, moff, k, src);
	/* With generations every copy gets the source's (none readable: their own + 1). */
	if (lost_write_mirror_gens_of(a, members[src], moff[src], l->chunk, &gens))
		gens = NULL;
	for (unsigned j = 0; j < k; j++)
		if (j != src && array_role_writable(a, members[j])) {
			c->buf.ios[n] = (struct mbio){ .member = members[j], .write = true,
						   .buf = c->buf.data, .len = l->chunk,
						   .off = moff[j] };
			c->buf.ios[n++].fault.meta_in = gens;
		}
	c->done++;
	rc = mbatch_run_on(&c->mb, c->buf.ios, n);
	free(gens);
	return rc;
}

/*
 * A RAID-5/6 reshape's rows [@p st, + @p rows), their locks held: each run of rows in one
 * geometry resynced in it, rows dead in both left to the window that writes them whole
 * (jobs.h reshape_row_layout). The live-data map is not asked: its regions are rows, which
 * held other data in the old geometry.
 */
static int resync_reshape_rows(struct resync_ctx *c, const struct array_reshape *rs,
			       uint64_t st, unsigned rows)
{
	int rc = 0;

	for (unsigned i = 0; rc == 0 && i < rows;) {
		const struct layout *l = reshape_row_layout(rs, st + i);
		unsigned n = 1;

		while (i + n < rows && reshape_row_layout(rs, st + i + n) == l)
			n++;
		if (l)
			rc = resync_parity_rows(c, l, st + i, n);
		i += n;
	}
	return rc;
}

static int resync_region(struct resync_ctx *c, uint64_t first, uint64_t end)
{
	const struct array_reshape *rs = c->a->lay.nparity ? atomic_load(&c->a->reshape) : NULL;
	int rc = 0;

	for (uint64_t st = first; rc == 0 && st < end; st += c->buf.rows_max) {
		unsigned rows = (unsigned)(end - st < c->buf.rows_max ? end - st : c->buf.rows_max);

		bool unused = true;

		/* Unused regions hold zeroes everywhere, consistent already (live.h). */
		for (unsigned i = 0; unused && !rs && i < rows; i++)
			unused = live_stripe_unused(c->a, st + i);
		if (unused && !rs)
			continue;
		for (unsigned i = 0; i < rows; i++)
			stripe_set_add(&c->locks, st + i);
		stripe_set_lock(c->a, &c->locks);
		if (rs)
			rc = resync_reshape_rows(c, rs, st, rows);
		else if (c->a->lay.nparity)
			rc = resync_parity_rows(c, &c->a->lay, st, rows);
		else
			for (unsigned i = 0; rc == 0 && i < rows; i++)
				rc = resync_mirror_stripe(c, st + i);
		stripe_set_release(c->a, &c->locks);
	}
	return rc;
}

int array_resync(struct graid_array *a)
{
	struct bitmap *b = &a->bitmap;
	struct resync_ctx c = { .a = a };
	uint64_t nst = bitmap_stripes(a), regions = 0;
	uint64_t next_look = graid__now_ns() + 1000000000ull;
	int rc = 0;

	if (!b->enabled)
		return 0;
	/* No flush clears a mark this pass has not reached (graid_array_open may have said so). */
	bitmap_resync_pending(a, 0);
	array_event(a, GRAID_EVENT_RESYNC_STARTED, -1, 0, 0, bitmap_dirty_regions(a));
	rc = row_bufs_alloc(&c.buf, a, row_job_rows(a, RESYNC_BATCH_BYTES), true);
	if (rc) {
		array_event(a, GRAID_EVENT_RESYNC_DONE, -1, rc, 0, 0); /* every STARTED ends */
		return rc;
	}
	/* Most opens find nothing dirty: no ring for them. */
	if (rc == 0 && bitmap_dirty_regions(a))
		rc = mbatch_open(&c.mb, a);
	c.mb.keep_read_errors = true; /* a member's bad sector costs a block, not the member */
	/*
	 * Data is the truth in a dirty region (its tags may be older or newer than it after a
	 * crash): every block read has its tag made from it, and the parity and copies written
	 * get theirs from their writes.
	 */
	c.mb.unverified = true;
	for (uint64_t r = 0; rc == 0 && r < b->map.nregions; r++) {
		uint64_t first = r * b->map.region_stripes, end = first + b->map.region_stripes;

		if (!bitmap_region_marked(a, r)) {
			bitmap_resync_pending(a, r + 1);
			continue;
		}
		if (array_foreign(a)) {
			rc = -ESTALE; /* another host took the array over */
			break;
		}
		/* A long resync in the worker: it looks at the owner record as the idle worker does. */
		if (graid__now_ns() >= next_look) {
			pthread_mutex_lock(&a->meta_lock);
			rc = array_owner_check(a);
			pthread_mutex_unlock(&a->meta_lock);
			next_look = graid__now_ns() + 1000000000ull;
			if (rc)
				break; /* -ESTALE: another host took the array over */
		}
		rc = resync_region(&c, first, end < nst ? end : nst);
		regions++;
		/* Its writes have ended: the next flush to begin makes them durable. */
		if (rc == 0)
			bitmap_resync_pending(a, r + 1);
	}
	mbatch_close(&c.mb);
	row_bufs_free(&c.buf);
	row_bad_free(&c.bad);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "resync failed: %s", graid_strerror(rc));
		array_event(a, GRAID_EVENT_RESYNC_DONE, -1, rc, 0, c.done);
		return rc;
	}
	if (c.skipped)
		graid__log(GRAID_LOG_WARNING, "resync: %llu stripes could not be made consistent "
					      "(a member is missing); they may hold the write hole",
			   (unsigned long long)c.skipped);
	/*
	 * Everything marked is consistent now; the marks go at the flushes that make the
	 * resync's writes, and the writes since, durable (bitmap_sweep). A resync that failed
	 * leaves the regions it did not reach marked for the next open (graid_array_close).
	 */
	bitmap_resync_pending(a, UINT64_MAX);
	graid__log(GRAID_LOG_NOTICE, "resync: %llu dirty regions, %llu stripes made consistent",
		   (unsigned long long)regions, (unsigned long long)c.done);
	array_event(a, GRAID_EVENT_RESYNC_DONE, -1, 0, 0, c.done);
	return 0;
}
