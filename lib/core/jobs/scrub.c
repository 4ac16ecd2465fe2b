/* SPDX-License-Identifier: MIT */
/* Scrub: compare every stripe's parity or copies; on RAID-6 name the one wrong member and heal it. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "io/lost_write_column.h"
#include "io/lost_write_mirror.h"
#include "io/member_batch.h"
#include "io/row_heal.h"
#include "meta/badblocks.h"
#include "io/row_job.h"
#include "jobs/job_progress.h"
#include "io/stripe_set.h"
#include "meta/array_meta.h"
#include "meta/array_readerr.h"
#include "meta/csum_report.h"
#include "meta/events.h"
#include "member/tag_store.h"

#define SCRUB_BATCH_BYTES (16u << 20)
/* The superblocks get the scrub's checkpoint at least this often. */
#define SCRUB_CHECKPOINT_NS (1000000000ull)

/* Record on the members how far a scrub got (0: no scrub unfinished); not on read-only arrays. */
static void scrub_checkpoint(struct graid_array *a, uint64_t row)
{
	if (a->read_only)
		return;
	pthread_mutex_lock(&a->meta_lock);
	a->scrub_offset = row;
	array_write_superblocks(a, 0);
	pthread_mutex_unlock(&a->meta_lock);
}

/*
 * A stripe is compared only when every member it uses can be read for it (active, or being
 * rebuilt and already past it). On parity levels and RAID-1 every stripe uses every member,
 * so with a role failed or missing there is nothing a scrub could check; with one being
 * rebuilt, the rows already rebuilt can be (RAID-10 still has the pairs that are whole).
 */
static bool scrub_can_check_anything(struct graid_array *a)
{
	if (a->lay.level == 10)
		return true;
	for (unsigned r = 0; r < a->nmembers; r++) {
		int st = atomic_load(&a->members[r].state);

		if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)
			return false;
	}
	return true;
}

struct scrub_ctx {
	struct graid_array *a;
	unsigned flags;
	unsigned stop_gen;          /* scrub_stop_gen when it began: a stop moves it on */
	struct row_bufs buf;        /* buf.rows_max rows, every member's chunk */
	int32_t *verdict;
	struct mbatch mb;           /* one ring for the whole scrub */
	struct stripe_set locks;
	struct row_bad bad;         /* units the batch being checked could not read */
	struct graid_scrub_report rep;
	uint64_t unresynced;        /* stripes left to the resync after an unclean open */
	/* Per row of a batch still to compare: columns settled with its erasures. */
	struct bbl_cols added[ROW_JOB_ROWS_MAX];
};

static void scrub_note(struct scrub_ctx *c, uint64_t row, int32_t member, bool repaired)
{
	struct graid_scrub_report *r = &c->rep;

	r->mismatches++;
	r->repaired += repaired;
	if (r->named < GRAID_SCRUB_NAMED) {
		r->stripe[r->named] = row;
		r->member[r->named] = member;
		r->named++;
	}
	array_event(c->a, GRAID_EVENT_SCRUB_MISMATCH, member, 0, row, 0);
	if (member >= 0)
		graid__log(GRAID_LOG_WARNING, "scrub: stripe %llu: member %d (%s) holds wrong "
					      "data%s", (unsigned long long)row, member,
			   c->a->members[member].dev.path, repaired ? "; rewritten" : "");
	else
		graid__log(GRAID_LOG_WARNING, "scrub: stripe %llu: parity does not match its data, "
					      "no single member to blame%s", (unsigned long long)row,
			   repaired ? "; parity rewritten" : "");
}

/* Rewrite one role's chunk of one row from the buffer. */
static int scrub_write(struct scrub_ctx *c, uint64_t row, unsigned role, uint8_t *buf)
{
	const struct layout *l = &c->a->lay;
	struct mbio io = { .member = layout_role_member(l, row, role), .write = true, .buf = buf,
			   .len = l->chunk, .off = row * l->chunk };
	int rc = mbatch_run_on(&c->mb, &io, 1);

	return rc ? rc : (io.res == (int)l->chunk ? 0 : -EIO);
}

/* Heal one row given the engine's verdict (parity levels). */
static int scrub_repair_row(struct scrub_ctx *c, uint64_t row, uint8_t **blk, int32_t v)
{
	const struct layout *l = &c->a->lay;
	unsigned lost[2] = { (unsigned)v, 0 };
	int rc;

	/* Its repair is a write: marked first, and not made where no member took the mark. */
	if (v >= 0) {
		rc = bitmap_start_write(c->a, row);
		/* The syndromes name the block: rebuild it from the others, exactly as it was. */
		rc = rc ? rc : graid_parity_recover(c->a->be, l->ndata, l->nparity, l->chunk, 1,
						    blk, 1, lost);
		rc = rc ? rc : scrub_write(c, row, (unsigned)v, blk[v]);
		bitmap_end_write(c->a, row);
		return rc;
	}
	/* Nobody to blame (RAID-5, or several blocks on RAID-6): make parity follow the data. */
	rc = bitmap_start_write(c->a, row);
	rc = rc ? rc : graid_parity_gen(c->a->be, l->ndata, l->nparity, l->chunk, 1, blk);
	for (unsigned p = 0; rc == 0 && p < l->nparity; p++)
		rc = scrub_write(c, row, l->ndata + p, blk[l->ndata + p]);
	bitmap_end_write(c->a, row);
	return rc;
}

/* Rewrite 4 KiB column @p col of one role's chunk of one row from @p buf. */
static int scrub_write_col(struct scrub_ctx *c, uint64_t row, unsigned role, unsigned col,
			   uint8_t *buf)
{
	const struct layout *l = &c->a->lay;
	struct mbio io = { .member = layout_role_member(l, row, role), .write = true, .buf = buf,
			   .len = BBL_UNIT, .off = row * l->chunk + (uint64_t)col * BBL_UNIT };
	int rc = mbatch_run_on(&c->mb, &io, 1);

	return rc ? rc : (io.res == (int)BBL_UNIT ? 0 : -EIO);
}

/*
 * A RAID-6 row of a checksummed array whose parity disagrees with its data although every
 * block read held its tag or had none. Column by column, the syndrome vote is followed only
 * where it names a block without a tag: a block whose tag holds is kept, and P and Q of that
 * column are made from the data (docs/INTEGRITY.md, "What is healed, per level", says why). With @p repair the
 * columns are rewritten so. The member a followed vote named, or -1, in *@p named.
 */
static int scrub_csum_row(struct scrub_ctx *c, uint64_t row, uint8_t **blk, bool repair,
			  int32_t *named)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	uint8_t *ptrs[GRAID_MAX_MEMBERS];
	int rc = 0;

	*named = -1;
	for (unsigned col = 0; rc == 0 && col < row_heal_cols(a); col++) {
		const uint64_t off = row * l->chunk + (uint64_t)col * BBL_UNIT;
		int32_t v = GRAID_CHECK_CLEAN;
		uint64_t absent = 0;
		unsigned m = 0;
		long bad;

		for (unsigned r = 0; r < nroles; r++)
			ptrs[r] = blk[r] + (size_t)col * BBL_UNIT;
		bad = graid_parity_check(a->be, l->ndata, l->nparity, BBL_UNIT, 1, ptrs, &v);
		if (bad < 0)
			return (int)bad;
		if (v == GRAID_CHECK_CLEAN)
			continue;
		if (v >= 0) {
			m = layout_role_member(l, row, (unsigned)v);
			rc = tag_store_absent(a, m, off, 1, &absent);
			if (rc)
				return rc;
		}
		if (absent) {
			/* No tag to contradict the syndromes: the block they name is rebuilt. */
			unsigned lost = (unsigned)v;

			if (*named < 0)
				*named = (int32_t)m;
			if (repair)
				rc = graid_parity_recover(a->be, l->ndata, l->nparity, BBL_UNIT, 1,
							  ptrs, 1, &lost);
			if (repair && rc == 0)
				rc = scrub_write_col(c, row, (unsigned)v, col, ptrs[v]);
			continue;
		}
		if (v >= 0)
			graid__log(GRAID_LOG_WARNING, "scrub: stripe %llu: the syndromes name "
						      "member %u (%s) at data-area byte %llu, but "
						      "its checksum holds: its block is kept%s",
				   (unsigned long long)row, m, a->members[m].dev.path,
				   (unsigned long long)off,
				   repair ? ", parity made from the data" : "");
		if (!repair)
			continue;
		rc = graid_parity_gen(a->be, l->ndata, l->nparity, BBL_UNIT, 1, ptrs);
		for (unsigned p = 0; rc == 0 && p < l->nparity; p++)
			rc = scrub_write_col(c, row, l->ndata + p, col, ptrs[l->ndata + p]);
	}
	return rc;
}

/*
 * Read errors of a batch: narrowed to 4 KiB units, the member kept (row_heal.c). A member
 * that failed meanwhile (a device gone, errors past the threshold) ends the scrub: the
 * array is degraded, nothing more can be compared.
 */
static int scrub_narrow(struct scrub_ctx *c, struct mbio *ios, size_t n)
{
	int rc = 0;

	row_bad_reset(&c->bad);
	if (row_heal_any_media(ios, n))
		rc = row_heal_narrow(&c->mb, ios, n, &c->bad);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (ios[i].res != (int)ios[i].len)
			rc = -EIO;
	return rc == -EAGAIN ? -EIO : rc;
}

/*
 * A parity row with units some member could not read, or records bad: rebuilt column by
 * column and written back (not on a read-only array). True when a column had more
 * erasures than parity (a stale block the records locate counted among them), or was held
 * (its tags unreadable): the row cannot be compared. *@p added: the columns where a stale
 * block was added to the erasures (settled here: scrub_lost_writes() skips them).
 */
static bool scrub_heal_parity_row(struct scrub_ctx *c, uint64_t row, uint8_t **blk,
				  struct bbl_cols *added, int *rc)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	struct bbl_cols era[GRAID_MAX_MEMBERS];
	struct lwc_scrub_cols sc = { { { 0 } }, { { 0 } }, { { 0 } } };
	struct row_heal_count count = { 0 };
	bool present[GRAID_MAX_MEMBERS], any = false;

	for (unsigned r = 0; r < nroles; r++) {
		unsigned m = layout_role_member(l, row, r);

		memset(&era[r], 0, sizeof(era[r]));
		present[r] = true;
		any |= row_bad_cols(&c->bad, m, row * l->chunk, l->chunk, &era[r]);
		any |= badblocks_cols(a, m, row * l->chunk, l->chunk, &era[r]);
	}
	memset(added, 0, sizeof(*added));
	if (!any)
		return false;
	/*
	 * A block its records name stale beside an erasure is one too; a column past parity so
	 * is lost (nothing of it written); one whose tags cannot be read, held (left to reads).
	 */
	lwc_scrub_erasures(a, row, blk, era, &sc);
	*added = sc.added;
	for (unsigned r = 0; r < nroles; r++)
		for (unsigned i = 0; i < BBL_COLS_WORDS; i++)
			era[r].w[i] &= ~sc.hold.w[i];
	*rc = row_heal_parity(a, blk, era, &sc.lost);
	/* A read-only array only counts: nothing is written back or recorded. */
	if (*rc == 0)
		*rc = row_heal_writeback(a, &c->mb, row, blk, era, &sc.lost, present, &c->bad,
					 &count);
	c->rep.rewritten += count.rewritten;
	c->rep.unrecoverable += count.unrecoverable;
	return bbl_cols_any(&sc.lost) || bbl_cols_any(&sc.hold);
}

/* A column a lost write left stale, rewritten: a write, marked first as every repair's. */
static int scrub_lw_write(void *arg, uint64_t row, unsigned role, unsigned col, uint8_t *buf)
{
	struct scrub_ctx *c = arg;
	int rc = bitmap_start_write(c->a, row);

	rc = rc ? rc : scrub_write_col(c, row, role, col, buf);
	bitmap_end_write(c->a, row);
	return rc;
}

/*
 * Generations (io/lost_write_column.h): stale blocks and parities the records locate are
 * rebuilt (and with REPAIR written back) before the syndromes are compared; a row with a
 * mismatch they cannot locate is not compared (its parity is all that still knows the lost
 * data). The rows left to compare stay first in checkable[] and c->buf.ptrs, *nc of them.
 */
static int scrub_lost_writes(struct scrub_ctx *c, uint64_t row0, unsigned *checkable,
			     unsigned *nc)
{
	const unsigned nroles = c->a->lay.ndata + c->a->lay.nparity;
	const bool repair = c->flags & GRAID_SCRUB_REPAIR;
	const struct lwc_scrub_io io = { repair ? scrub_lw_write : NULL, c };
	unsigned kept = 0;
	int rc = 0;

	if (!lwc_active(c->a))
		return 0;
	for (unsigned k = 0; k < *nc && rc == 0; k++) {
		uint8_t **blk = c->buf.ptrs + (size_t)k * nroles;
		uint64_t row = row0 + checkable[k];
		bool unlocated;

		rc = lwc_scrub_row(c->a, &io, row, blk, &c->added[k], &unlocated,
				   &c->rep.rewritten);
		if (rc == 0 && unlocated) {
			c->rep.skipped++;
			continue;
		}
		memmove(c->buf.ptrs + (size_t)kept * nroles, blk, nroles * sizeof(*blk));
		c->added[kept] = c->added[k];
		checkable[kept++] = checkable[k];
	}
	*nc = kept;
	return rc;
}

static int scrub_parity_rows(struct scrub_ctx *c, uint64_t row0, unsigned rows)
{
	const struct layout *l = &c->a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	unsigned checkable[ROW_JOB_ROWS_MAX], nc = 0, kept = 0;
	size_t n = 0;
	long bad;
	int rc;

	for (unsigned i = 0; i < rows; i++) {
		bool all = true;

		for (unsigned r = 0; r < nroles; r++)
			all &= array_role_readable(c->a, layout_role_member(l, row0 + i, r),
						   (row0 + i + 1) * l->chunk);
		if (!all) {
			c->rep.skipped++;
			continue;
		}
		/* Still to resync after a crash: a torn write there is the resync's, not ours. */
		if (bitmap_unresynced(c->a, row0 + i)) {
			c->rep.skipped++;
			c->unresynced++;
			continue;
		}
		for (unsigned r = 0; r < nroles; r++) {
			uint8_t *buf = c->buf.data + ((size_t)nc * nroles + r) * l->chunk;

			c->buf.ptrs[nc * nroles + r] = buf;
			c->buf.ios[n++] = (struct mbio){ .member = layout_role_member(l, row0 + i, r),
						     .buf = buf, .len = l->chunk,
						     .off = (row0 + i) * l->chunk };
		}
		checkable[nc++] = i;
	}
	if (nc == 0)
		return 0;
	rc = mbatch_run_on(&c->mb, c->buf.ios, n);
	if (rc == 0)
		rc = scrub_narrow(c, c->buf.ios, n);
	if (rc)
		return rc;
	/* Rows that met bad blocks: healed first; those with a column past parity not compared. */
	for (unsigned k = 0; k < nc; k++) {
		uint8_t **blk = c->buf.ptrs + (size_t)k * nroles;

		if (scrub_heal_parity_row(c, row0 + checkable[k], blk, &c->added[kept], &rc)) {
			c->rep.skipped++;
		} else {
			memmove(c->buf.ptrs + (size_t)kept * nroles, blk, nroles * sizeof(*blk));
			checkable[kept++] = checkable[k];
		}
		if (rc)
			return rc;
	}
	nc = kept;
	rc = scrub_lost_writes(c, row0, checkable, &nc);
	if (rc || nc == 0)
		return rc;
	bad = graid_parity_check(c->a->be, l->ndata, l->nparity, l->chunk, nc, c->buf.ptrs,
				 c->verdict);
	if (bad < 0)
		return (int)bad;
	c->rep.stripes_checked += nc;
	for (unsigned k = 0; k < nc && bad; k++) {
		uint64_t row = row0 + checkable[k];
		int32_t v = c->verdict[k];
		bool repair = c->flags & GRAID_SCRUB_REPAIR;

		if (v == GRAID_CHECK_CLEAN)
			continue;
		if (c->a->tags && l->nparity == 2) {
			int32_t named;

			/* Its rewrites are writes: marked first, as scrub_repair_row()'s. */
			rc = repair ? bitmap_start_write(c->a, row) : 0;
			rc = rc ? rc : scrub_csum_row(c, row, c->buf.ptrs + (size_t)k * nroles,
						      repair, &named);
			if (repair)
				bitmap_end_write(c->a, row);
			if (rc)
				return rc;
			scrub_note(c, row, named, repair);
			continue;
		}
		if (repair) {
			rc = scrub_repair_row(c, row, c->buf.ptrs + (size_t)k * nroles, v);
			if (rc)
				return rc;
		}
		scrub_note(c, row, v >= 0 ? (int32_t)layout_role_member(l, row, (unsigned)v) : -1,
			   repair);
	}
	return 0;
}

/*
 * RAID-1/10: units of a chunk some copy could not read, or records bad, are copied from a
 * copy that has them and written back (not on a read-only array). *lost: a unit no copy
 * has (recorded unreadable where a read failed): the chunk cannot be compared.
 */
static int scrub_mirror_heal(struct scrub_ctx *c, uint64_t stripe, size_t n, bool *lost)
{
	struct graid_array *a = c->a;
	const unsigned cols = row_heal_cols(a);
	struct mbio *ios = c->buf.ios, *w;
	struct bbl_cols gone[GRAID_MAX_MEMBERS];
	unsigned units[GRAID_MAX_MEMBERS] = { 0 };
	uint32_t **gens;
	size_t nw = 0;
	bool any = false;
	int rc = 0;

	*lost = false;
	for (size_t j = 0; j < n; j++) {
		memset(&gone[j], 0, sizeof(gone[j]));
		any |= row_bad_cols(&c->bad, ios[j].member, ios[j].off, ios[j].len, &gone[j]);
		any |= badblocks_cols(a, ios[j].member, ios[j].off, ios[j].len, &gone[j]);
	}
	if (!any)
		return 0;
	w = calloc(n * cols, sizeof(*w));
	gens = calloc(n * cols, sizeof(*gens));
	if (!w || !gens) {
		free(w);
		free(gens);
		return -ENOMEM;
	}
	for (unsigned u = 0; u < cols; u++) {
		const size_t at = (size_t)u * BBL_UNIT;
		bool gone_u[GRAID_MAX_MEMBERS], tag_only[GRAID_MAX_MEMBERS], some = false;
		size_t good;

		for (size_t j = 0; j < n; j++) {
			some |= gone_u[j] = bbl_cols_test(&gone[j], u);
			tag_only[j] = gone_u[j] &&
				      row_bad_csum_only(&c->bad, ios[j].member, ios[j].off + at);
		}
		if (!some)
			continue;
		/* The copy ahead of the others (generations), never a stale one. */
		good = lost_write_mirror_heal_source(a, ios, n, gone_u, tag_only, at);
		for (size_t j = 0; j < n; j++) {
			int fd;

			if (!bbl_cols_test(&gone[j], u))
				continue;
			if (good < n) {
				memcpy(ios[j].buf + at, ios[good].buf + at, BBL_UNIT);
				if (a->read_only)
					continue;
				w[nw] = (struct mbio){ .member = ios[j].member, .write = true,
						       .buf = ios[j].buf + at, .len = BBL_UNIT,
						       .off = ios[j].off + at };
				/*
				 * With generations the copy healed gets the good copy's (the
				 * expected one), not its own + 1, which would put it ahead of
				 * every other copy: a lost write reported where none was.
				 */
				if (lost_write_mirror_gens_of(a, ios[good].member,
							      ios[good].off + at, BBL_UNIT,
							      &gens[nw]) == 0)
					w[nw].fault.meta_in = gens[nw];
				nw++;
				continue;
			}
			*lost = true;
			c->rep.unrecoverable++;
			csum_report_lost(a, ios[j].member, ios[j].off + at, BBL_UNIT);
			fd = row_bad_fd(&c->bad, ios[j].member, ios[j].off + at);
			if (fd >= 0 && !a->read_only &&
			    !badblocks_overlap(a, ios[j].member, ios[j].off + at, BBL_UNIT))
				badblocks_add(a, ios[j].member, fd, ios[j].off + at, BBL_UNIT,
					      BBL_F_UNREADABLE);
		}
	}
	if (nw) {
		if (bitmap_start_write(a, stripe) == 0)
			rc = mbatch_run_on(&c->mb, w, nw);
		bitmap_end_write(a, stripe);
	}
	/* A rewrite that failed took its member out (mbatch): the others stay repaired. */
	for (size_t i = 0; rc == 0 && i < nw; i++)
		if (w[i].res == (int)BBL_UNIT)
			units[w[i].member]++;
	for (unsigned m = 0; m < a->nmembers; m++)
		if (units[m]) {
			c->rep.rewritten += units[m];
			array_member_read_repaired(a, m, stripe, units[m]);
		}
	for (size_t i = 0; i < nw; i++)
		free(gens[i]);
	free(gens);
	free(w);
	return rc;
}

/* RAID-1/10: the copies of every chunk of member rows [row0, row0 + rows) must be equal. */
static int scrub_mirror_rows(struct scrub_ctx *c, uint64_t row0, unsigned rows)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];

	for (unsigned i = 0; i < rows; i++) {
		for (unsigned m = 0; m < a->nmembers; m++) {
			uint64_t arr;
			unsigned k;
			size_t n = 0;
			bool all = true, same = true, lost = false;
			int rc;

			/* Visit each chunk once: from the member holding its first copy. */
			if (layout_unmap(l, m, (row0 + i) * l->chunk, &arr))
				continue;
			k = layout_copies(l, arr, members, moff);
			if (members[0] != m || moff[0] != (row0 + i) * l->chunk)
				continue;
			for (unsigned j = 0; j < k; j++) {
				all &= array_role_readable(a, members[j], moff[j] + l->chunk);
				c->buf.ios[n] = (struct mbio){ .member = members[j],
							   .buf = c->buf.data + n * (size_t)l->chunk,
							   .len = l->chunk, .off = moff[j] };
				n++;
			}
			if (!all) {
				c->rep.skipped++;
				continue;
			}
			if (bitmap_unresynced(a, arr / l->chunk)) {
				c->rep.skipped++;
				c->unresynced++;
				continue;
			}
			stripe_set_add(&c->locks, arr / l->chunk);
			stripe_set_lock(a, &c->locks);
			rc = mbatch_run_on(&c->mb, c->buf.ios, n);
			if (rc == 0)
				rc = scrub_narrow(c, c->buf.ios, n);
			if (rc == 0)
				rc = scrub_mirror_heal(c, arr / l->chunk, n, &lost);
			/* With generations: copies behind the latest healed from it. */
			if (rc == 0 && !lost)
				rc = lost_write_mirror_scrub(a, &c->mb, c->buf.ios, n, arr / l->chunk,
							     &c->rep.rewritten);
			for (size_t j = 1; rc == 0 && !lost && j < n; j++)
				same &= !memcmp(c->buf.ios[0].buf, c->buf.ios[j].buf, l->chunk);
			if (rc == 0 && !same && (c->flags & GRAID_SCRUB_REPAIR)) {
				for (size_t j = 1; j < n; j++) {
					c->buf.ios[j].write = true;
					c->buf.ios[j].buf = c->buf.ios[0].buf;
				}
				/* Its repair is a write: marked first, as the parity levels' are. */
				rc = bitmap_start_write(a, arr / l->chunk);
				if (rc == 0)
					rc = mbatch_run_on(&c->mb, c->buf.ios + 1, n - 1);
				bitmap_end_write(a, arr / l->chunk);
			}
			stripe_set_release(a, &c->locks);
			if (rc)
				return rc;
			if (lost) {
				c->rep.skipped++;
				continue;
			}
			c->rep.stripes_checked++;
			if (!same)
				scrub_note(c, arr / l->chunk, -1, c->flags & GRAID_SCRUB_REPAIR);
		}
	}
	return 0;
}

/*
 * Every row from @p start on, in batches of used rows, each checked under its stripe locks
 * (mirrors: locked row by row); progress reported, and the checkpoint recorded at least
 * every SCRUB_CHECKPOINT_NS and cleared at the end. 0, -ESTALE another host took the array
 * over, -ECANCELED graid_array_scrub_stop() (the checkpoint recorded first), or -errno.
 */
static int scrub_rows(struct scrub_ctx *c, uint64_t start)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	uint64_t last_cp = graid__now_ns();
	int rc = 0;

	for (uint64_t row = start, rows = 0; rc == 0 && row < l->nstripes; row += rows) {
		if (atomic_load(&a->foreign)) {
			rc = -ESTALE; /* another host took the array over */
			break;
		}
		if (atomic_load(&a->scrub_stop_gen) != c->stop_gen) {
			/* Asked to stop: a later GRAID_SCRUB_RESUME starts at this row. */
			scrub_checkpoint(a, row);
			graid__log(GRAID_LOG_NOTICE, "scrub: stopped at row %llu of %llu on request",
				   (unsigned long long)row, (unsigned long long)l->nstripes);
			return -ECANCELED;
		}
		/* Rows of unused regions (live.h) hold zeroes on every member: nothing to check. */
		if (live_row_unused(a, row)) {
			c->rep.unused++;
			rows = 1;
			continue;
		}
		rows = l->nstripes - row < c->buf.rows_max ? l->nstripes - row : c->buf.rows_max;
		for (unsigned i = 1; i < rows; i++)
			if (live_row_unused(a, row + i)) {
				rows = i; /* a batch is one run of used rows */
				break;
			}
		if (l->nparity) {
			for (unsigned i = 0; i < rows; i++)
				stripe_set_add(&c->locks, row + i);
			stripe_set_lock(a, &c->locks);
			rc = scrub_parity_rows(c, row, (unsigned)rows);
			stripe_set_release(a, &c->locks);
		} else {
			rc = scrub_mirror_rows(c, row, (unsigned)rows);
		}
		if (rc == 0 && c->rep.progress)
			c->rep.progress(c->rep.progress_arg, (row + rows) * l->chunk,
					l->nstripes * l->chunk);
		if (rc == 0 && row + rows < l->nstripes &&
		    graid__now_ns() - last_cp >= SCRUB_CHECKPOINT_NS) {
			/* A scrub stopped here (a crash, a kill, a close) resumes from this row. */
			scrub_checkpoint(a, row + rows);
			last_cp = graid__now_ns();
		}
	}
	if (rc == 0 && a->scrub_offset)
		scrub_checkpoint(a, 0); /* done: nothing to resume */
	return rc;
}

/*
 * Count a scrub in (scrubs_running), then look again under meta_lock: a grow that began
 * meanwhile (it refuses to start while scrubs_running, under the same lock) would move rows
 * under it, and a quiesce (io/quiesce.c, array_reshape_holds_jobs) that set its flag before
 * the count is seen here, one after it sees the count. 0, or -EBUSY (still counted in).
 */
static int scrub_count_in(struct graid_array *a)
{
	int rc = 0;

	atomic_fetch_add(&a->scrubs_running, 1);
	pthread_mutex_lock(&a->meta_lock);
	if (a->reshape_starting || array_reshape_holds_jobs(a))
		rc = -EBUSY;
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

GRAID_API int graid_array_scrub(struct graid_array *a, unsigned flags,
				struct graid_scrub_report *rep)
{
	const size_t v1 = offsetof(struct graid_scrub_report, first_row);
	struct scrub_ctx c = { .a = a, .flags = flags };
	struct job_progress prog;
	uint64_t start = 0;
	const struct layout *l;
	int rc = 0;

	/* Callers built before first_row pass the shorter struct: they get what it holds. */
	if (!a || !rep || rep->struct_size < v1 ||
	    (flags & ~(GRAID_SCRUB_REPAIR | GRAID_SCRUB_RESUME)))
		return -EINVAL;
	/* A stop asked from here on is this scrub's. */
	c.stop_gen = atomic_load(&a->scrub_stop_gen);
	l = &a->lay;
	if (l->level == 0)
		return -EOPNOTSUPP;
	if (array_reshape_holds_jobs(a))
		return -EBUSY; /* rows are in two geometries until the reshape has finished */
	if ((flags & GRAID_SCRUB_REPAIR) && a->read_only)
		return -EROFS;
	if (!scrub_can_check_anything(a)) {
		graid__log(GRAID_LOG_ERR, "scrub: RAID-%d is degraded (a member is failed or "
					  "missing): no stripe has every member to compare; replace "
					  "and rebuild first", l->level);
		return -EAGAIN;
	}
	if (flags & GRAID_SCRUB_RESUME) {
		pthread_mutex_lock(&a->meta_lock);
		start = a->scrub_offset < l->nstripes ? a->scrub_offset : 0;
		pthread_mutex_unlock(&a->meta_lock);
		if (start)
			graid__log(GRAID_LOG_NOTICE, "scrub: resuming at row %llu of %llu",
				   (unsigned long long)start, (unsigned long long)l->nstripes);
	}
	job_progress_init(&prog, a, GRAID_EVENT_SCRUB_PROGRESS, rep->progress, rep->progress_arg);
	job_progress_skip(&prog, start * l->chunk, l->nstripes * l->chunk);
	c.rep.progress = job_progress_fn;
	c.rep.progress_arg = &prog;
	array_event(a, GRAID_EVENT_SCRUB_STARTED, -1, 0, 0, 0);
	/* Mirrors compare one row at a time. */
	rc = row_bufs_alloc(&c.buf, a, l->nparity ? row_job_rows(a, SCRUB_BATCH_BYTES) : 1, true);
	if (rc) {
		array_event(a, GRAID_EVENT_SCRUB_DONE, -1, rc, 0, 0); /* every STARTED ends */
		return rc;
	}
	rc = scrub_count_in(a);
	if (rc == 0 && !(c.verdict = malloc(c.buf.rows_max * sizeof(*c.verdict))))
		rc = -ENOMEM;
	if (rc == 0)
		rc = mbatch_open(&c.mb, a);
	/* A latent sector is what a scrub is for: rewritten, its member kept (row_heal.c). */
	c.mb.keep_read_errors = true;
	if (rc == 0)
		rc = scrub_rows(&c, start);
	mbatch_close(&c.mb);
	row_bufs_free(&c.buf);
	row_bad_free(&c.bad);
	free(c.verdict);
	atomic_fetch_sub(&a->scrubs_running, 1);
	/* Rows at the end that the map records unused were passed without a progress call. */
	if (rc == 0)
		job_progress_note(&prog, l->nstripes * l->chunk, l->nstripes * l->chunk);
	array_event(a, GRAID_EVENT_SCRUB_DONE, -1, rc, 0, c.rep.mismatches);
	c.rep.progress = rep->progress;
	c.rep.progress_arg = rep->progress_arg;
	/* A stopped scrub reports what it checked before it stopped, as a finished one does. */
	if (rc == 0 || rc == -ECANCELED) {
		c.rep.first_row = start;
		c.rep.struct_size = rep->struct_size < sizeof(c.rep) ? rep->struct_size
								      : sizeof(c.rep);
		memcpy(rep, &c.rep, c.rep.struct_size);
	}
	if (rc == 0) {
		graid__log(GRAID_LOG_NOTICE, "scrub: %llu stripes checked, %llu mismatched, %llu "
					     "repaired, %llu skipped; %llu unreadable blocks rewritten, "
					     "%llu past redundancy",
			   (unsigned long long)c.rep.stripes_checked,
			   (unsigned long long)c.rep.mismatches, (unsigned long long)c.rep.repaired,
			   (unsigned long long)c.rep.skipped, (unsigned long long)c.rep.rewritten,
			   (unsigned long long)c.rep.unrecoverable);
		if (c.unresynced)
			graid__log(GRAID_LOG_NOTICE, "scrub: %llu of the skipped stripes lie in "
						     "regions still to resync after an unclean "
						     "shutdown: left to the resync, not compared",
				   (unsigned long long)c.unresynced);
	}
	return rc;
}

GRAID_API int graid_array_scrub_stop(struct graid_array *a)
{
	if (!a)
		return -EINVAL;
	atomic_fetch_add(&a->scrub_stop_gen, 1);
	return 0;
}
