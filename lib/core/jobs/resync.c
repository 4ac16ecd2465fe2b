/* SPDX-License-Identifier: MIT */
/* After an unclean shutdown: make the dirty regions consistent again (parity from data, copies from the first). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "meta/bitmap.h"
#include "meta/live.h"
#include "io/member_batch.h"
#include "io/row_job.h"
#include "io/stripe_set.h"
#include "jobs/jobs.h"
#include "meta/meta.h"

/* A batch holds about this much chunk data in memory (all members of its rows). */
#define RESYNC_BATCH_BYTES (8u << 20)

struct resync_ctx {
	struct graid_array *a;
	struct row_bufs buf;        /* buf.rows_max rows, every member's chunk */
	struct mbatch mb;           /* one ring for the whole resync */
	struct stripe_set locks;
	uint64_t done, skipped;
};

/* RAID-5/6 rows: read the data, regenerate parity, write it where it can go. */
static int resync_parity_rows(struct resync_ctx *c, uint64_t row0, unsigned rows)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	uint64_t row_of[ROW_JOB_ROWS_MAX];
	unsigned ng = 0;
	size_t n = 0;
	int rc;

	for (unsigned i = 0; i < rows; i++) {
		bool data_ok = true;

		/* A member being rebuilt counts below its checkpoint: it is in sync there. */
		for (unsigned d = 0; d < l->ndata; d++)
			data_ok &= array_role_readable(a, graid_layout_role_member(l, row0 + i, d),
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
				c->buf.ios[n++] = (struct mbio){ .member = graid_layout_role_member(l, row0 + i, r),
							     .buf = buf, .len = l->chunk,
							     .off = (row0 + i) * l->chunk };
		}
		row_of[ng++] = row0 + i;
	}
	if (ng == 0)
		return 0;
	rc = mbatch_run_on(&c->mb, c->buf.ios, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (c->buf.ios[i].res != (int)l->chunk)
			rc = -EIO;
	if (rc == 0)
		/* The parity goes to the drives, not back to the CPU: past its caches. */
		rc = graid_parity_gen_flags(a->be, l->ndata, l->nparity, l->chunk, ng,
					    c->buf.ptrs, GRAID_BATCH_F_STREAM);
	if (rc)
		return rc;
	n = 0;
	for (unsigned g = 0; g < ng; g++)
		for (unsigned p = l->ndata; p < nroles; p++) {
			unsigned m = graid_layout_role_member(l, row_of[g], p);

			if (array_role_writable(a, m))
				c->buf.ios[n++] = (struct mbio){ .member = m, .write = true,
							     .buf = c->buf.ptrs[g * nroles + p],
							     .len = l->chunk,
							     .off = row_of[g] * l->chunk };
		}
	c->done += ng;
	return mbatch_run_on(&c->mb, c->buf.ios, n);
}

/* RAID-1/10 stripe (a row, or an array chunk for RAID-10): the first live copy wins. */
static int resync_mirror_stripe(struct resync_ctx *c, uint64_t stripe)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS], src = GRAID_LAYOUT_NONE;
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned k = graid_layout_copies(l, stripe * l->chunk, members, moff);
	size_t n = 0;
	int rc;

	/*
	 * A member forced back in (GRAID_OPEN_FORCE) may hold stale copies: any other readable
	 * copy is taken first, and it is the source only where it holds the only one.
	 */
	for (unsigned pass = 0; pass < 2 && src == GRAID_LAYOUT_NONE; pass++)
		for (unsigned j = 0; j < k && src == GRAID_LAYOUT_NONE; j++)
			if (array_role_readable(a, members[j], moff[j] + l->chunk) &&
			    (pass || !a->members[members[j]].forced))
				src = j;
	if (src == GRAID_LAYOUT_NONE) {
		c->skipped++;
		return 0;
	}
	c->buf.ios[0] = (struct mbio){ .member = members[src], .buf = c->buf.data, .len = l->chunk,
				   .off = moff[src] };
	rc = mbatch_run_on(&c->mb, c->buf.ios, 1);
	if (rc || c->buf.ios[0].res != (int)l->chunk)
		return rc ? rc : -EIO;
	for (unsigned j = 0; j < k; j++)
		if (j != src && array_role_writable(a, members[j]))
			c->buf.ios[n++] = (struct mbio){ .member = members[j], .write = true,
						     .buf = c->buf.data, .len = l->chunk,
						     .off = moff[j] };
	c->done++;
	return mbatch_run_on(&c->mb, c->buf.ios, n);
}

static int resync_region(struct resync_ctx *c, uint64_t first, uint64_t end)
{
	int rc = 0;

	for (uint64_t st = first; rc == 0 && st < end; st += c->buf.rows_max) {
		unsigned rows = (unsigned)(end - st < c->buf.rows_max ? end - st : c->buf.rows_max);

		bool unused = true;

		/* Unused regions hold zeroes everywhere, consistent already (live.h). */
		for (unsigned i = 0; unused && i < rows; i++)
			unused = live_stripe_unused(c->a, st + i);
		if (unused)
			continue;
		for (unsigned i = 0; i < rows; i++)
			stripe_set_add(&c->locks, st + i);
		stripe_set_lock(c->a, &c->locks);
		if (c->a->lay.nparity)
			rc = resync_parity_rows(c, st, rows);
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
	rc = row_bufs_alloc(&c.buf, a, row_job_rows(a, RESYNC_BATCH_BYTES), true);
	if (rc)
		return rc;
	/* Most opens find nothing dirty: no ring for them. */
	if (rc == 0 && bitmap_dirty_regions(a))
		rc = mbatch_open(&c.mb, a);
	for (uint64_t r = 0; rc == 0 && r < b->nregions; r++) {
		uint64_t first = r * b->region_stripes, end = first + b->region_stripes;

		if (!(atomic_load(&b->state[r]) & BITMAP_DIRTY)) {
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
	if (rc) {
		graid__log(GRAID_LOG_ERR, "resync failed: %s", graid_strerror(rc));
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
