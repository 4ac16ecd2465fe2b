/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow's windows, a batch of new rows at a time on the job's ring
 * (docs/RESHAPE.md, "RAID-5/6 growing, as built"), with each phase's I/O in flight at once
 * (grow56_window_rows() in reshape_grow56.h says what they keep), phase by phase:
 *   A. every data chunk its old place can give, read at once (the old member alive, its log
 *      naming nothing there, inside the old size; past it: zeroes);
 *   B. the others (member out, log entries, a read that failed) recovered from their old row
 *      through the engine, synchronously (grow56_recover_old: rare, and it counts a medium
 *      error against its member when it reads the role again);
 *   C. parity per row through the engine;
 *   D. every write of the batch to the live members at once (a RAID-5 -> RAID-6 Q-last
 *      conversion's: Q alone, its data and P being the old row's own, reshape_qlast_kept). A write that fails took its
 *      member out (member_batch.c fails it, as the stripe path does) and its row goes on
 *      around it; each place written has its log kept true (reshape_carry_loss).
 * Rows with a role out at the batch's start are marked in the bitmap before the writes (and
 * held marked through them), rows of a batch where a role went out during it after: before
 * the caller's flush and record, all a crash or a catch-up needs. Rows whose data lies only
 * in regions the live-data map records unused are not read: zeroed on every member, a run
 * of them at once (reshape_live.c); a batch's rows have their regions marked used first.
 * The STAGED step's rows (reshape_stage.c) take the same batches, phase A reading their data
 * from the staged copy instead (grow56_read_staged_span, verified against its tags), none of
 * them skipped; their writes carry the same meta words (reshape_csum_row_meta).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid_backend.h>

#include "jobs/reshape_csum.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_qlast.h"
#include "jobs/reshape_live.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"

/* One batch: new rows [r0, r0 + n), their chunks in role order at buf, a row after another. */
struct grow56_batch {
	const struct layout *l;
	uint64_t r0;
	unsigned n, nroles;
	uint8_t *buf;
	struct bbl_cols *lost;  /* n x ndata: units holding nothing valid */
	bool *recover;          /* n x ndata: to recover from the old row (phase B) */
	bool *out;              /* n: a role of the row was out, or went out */
	/*
	 * Checksums with generations: n x nroles x reshape_csum_words() meta words of the
	 * writes (reshape_csum_row_meta); NULL without.
	 */
	uint32_t *meta;
	/* The STAGED step: where phase A reads the rows' data (NULL: the windows). */
	const struct grow56_staged_src *staged;
};

static uint8_t *grow56_batch_block(const struct grow56_batch *b, unsigned k, unsigned r)
{
	return b->buf + ((size_t)k * b->nroles + r) * b->l->chunk;
}

static uint32_t *grow56_batch_meta(const struct grow56_batch *b, unsigned k, unsigned r)
{
	return b->meta + ((size_t)k * b->nroles + r) * reshape_csum_words(b->l);
}

/* The row (@p k) and role (@p r) of the chunk at @p p in the batch's buffer. */
static void grow56_batch_where(const struct grow56_batch *b, const uint8_t *p, unsigned *k,
			       unsigned *r)
{
	size_t i = (size_t)(p - b->buf) / b->l->chunk;

	*k = (unsigned)(i / b->nroles);
	*r = (unsigned)(i % b->nroles);
}

/* The ring broke (nothing more completes on it): the job stops, its position kept. */
static int grow56_batch_ring_rc(const struct reshape_io *rio, int rc)
{
	return rio->mb.broken ? (rc ? rc : -EIO) : 0;
}

/* Phase A: every direct read at once; a chunk its old place cannot give set in recover. */
static int grow56_batch_read(struct graid_array *a, const struct array_reshape *rs,
			     struct reshape_io *rio, struct grow56_batch *b)
{
	const struct layout *l = b->l;
	uint64_t judged = UINT64_MAX;
	bool suspect = false;
	size_t n;
	int rc;

	for (unsigned k = 0; k < b->n; k++)
		for (unsigned d = 0; d < l->ndata; d++) {
			uint64_t off = ((b->r0 + k) * l->ndata + d) * l->chunk;
			struct layout_pos o;

			if (off >= rs->end) {
				/* The added space: zeroes, parity consistent with them. */
				memset(grow56_batch_block(b, k, d), 0, l->chunk);
				continue;
			}
			layout_map(&rs->old_lay, off, &o);
			/* A row whose records disagree: judged whole in phase B (reshape_csum.c). */
			if (o.member_off / l->chunk != judged) {
				judged = o.member_off / l->chunk;
				suspect = reshape_csum_row_suspect(a, judged);
			}
			if (!array_role_alive(a, o.member) || suspect ||
			    badblocks_overlap(a, o.member, o.member_off, l->chunk))
				b->recover[(size_t)k * l->ndata + d] = true;
			else if ((rc = reshape_io_queue(rio, o.member, false,
							grow56_batch_block(b, k, d), l->chunk,
							o.member_off)) != 0)
				return rc;
		}
	rc = reshape_io_run(rio, "reading chunks to move from", &n);
	if (grow56_batch_ring_rc(rio, rc))
		return grow56_batch_ring_rc(rio, rc);
	for (size_t i = 0; i < n; i++) {
		const struct mbio *io = &rio->ios[i];
		unsigned k, d;

		if (io->res == (int)io->len)
			continue;
		/*
		 * A medium error (the member stays), a stale read (the role changed device), or
		 * the member failed by member_batch.c: its old row gives it (phase B).
		 */
		grow56_batch_where(b, io->buf, &k, &d);
		b->recover[(size_t)k * l->ndata + d] = true;
	}
	return atomic_load(&a->broken) ? -EIO : 0;
}

/*
 * Phase A of the STAGED step: each row's data from the staged copy, a row at a time (its data
 * chunks lie one after another in the buffer and in the copy): from the copy's bytes in
 * memory where the step has them, else read (grow56_read_staged_span).
 */
static int grow56_batch_read_staged(struct graid_array *a, const struct array_reshape *rs,
				    struct grow56_batch *b, uint8_t *scratch)
{
	const struct layout *l = b->l;
	const struct grow56_staged_src *src = b->staged;
	const struct reshape_record *rec = src->rec;
	size_t len = (size_t)l->ndata * l->chunk;
	int rc = 0;

	for (unsigned k = 0; rc == 0 && k < b->n; k++) {
		uint64_t off = (b->r0 + k) * len;
		struct bbl_cols *lost = &b->lost[(size_t)k * l->ndata];

		if (src->mem && off >= rec->stage_array_off &&
		    off + len <= rec->stage_array_off + rec->stage_bytes && off + len <= rs->end) {
			uint64_t at = off - rec->stage_array_off;

			memcpy(grow56_batch_block(b, k, 0), src->mem + at, len);
			memcpy(lost, &src->mem_lost[at / l->chunk], sizeof(*lost) * l->ndata);
			continue;
		}
		rc = grow56_read_staged_span(a, rs, rec, off, l->ndata, grow56_batch_block(b, k, 0),
					     scratch, lost);
	}
	return rc;
}

/* Phase B: the chunks phase A could not give, from their old rows through the engine. */
static int grow56_batch_recover(struct graid_array *a, const struct array_reshape *rs,
				struct grow56_batch *b, uint8_t *scratch)
{
	const struct layout *l = b->l;
	int rc = 0;

	for (unsigned k = 0; rc == 0 && k < b->n; k++)
		for (unsigned d = 0; rc == 0 && d < l->ndata; d++) {
			size_t i = (size_t)k * l->ndata + d;

			if (b->recover[i])
				rc = grow56_recover_old(a, rs,
							((b->r0 + k) * l->ndata + d) * l->chunk,
							grow56_batch_block(b, k, d), scratch,
							&b->lost[i]);
		}
	return rc;
}

/* Phase C: each row's parity. */
static int grow56_batch_parity(struct graid_array *a, struct grow56_batch *b)
{
	const struct layout *l = b->l;
	int rc = 0;

	for (unsigned k = 0; rc == 0 && k < b->n; k++) {
		uint8_t *blocks[GRAID_MAX_MEMBERS];

		for (unsigned r = 0; r < b->nroles; r++)
			blocks[r] = grow56_batch_block(b, k, r);
		rc = graid_parity_gen(a->be, l->ndata, l->nparity, l->chunk, 1, blocks);
	}
	return rc;
}

/*
 * Phase D: every write to a live member at once, then each place's log kept true. A column
 * with a lost unit is recorded lost in the parity too: parity made over the zeroes would
 * otherwise "recover" the unit as valid zeroes (more erasures than parity covers is what
 * makes a read of it fail, as after a rebuild that lost it).
 */
static int grow56_batch_write(struct graid_array *a, const struct array_reshape *rs,
			      struct reshape_io *rio, struct grow56_batch *b, bool *written)
{
	const struct layout *l = b->l;
	size_t n;
	int rc;

	for (unsigned k = 0; k < b->n; k++)
		for (unsigned r = 0; r < b->nroles; r++) {
			uint64_t row = b->r0 + k;
			unsigned m = layout_role_member(l, row, r);

			/* A row's generations and records, as a full-stripe write gives them. */
			if (r == 0 && b->meta) {
				rc = reshape_csum_row_meta(a, l, row, grow56_batch_meta(b, k, 0));
				if (rc < 0)
					return rc;
			}
			if (!array_role_alive(a, m)) {
				b->out[k] = true;
			} else if (!reshape_qlast_kept(rs, r)) { /* a conversion writes Q alone */
				struct mbio *io = reshape_io_add(rio, m, true,
								 grow56_batch_block(b, k, r),
								 l->chunk, row * l->chunk);

				/* Not queued: stopped (no row moved unwritten). */
				if (!io) {
					rio->n = 0;
					return -EOVERFLOW;
				}
				if (b->meta)
					io->fault.meta_in = grow56_batch_meta(b, k, r);
			}
		}
	rc = reshape_io_run(rio, "writing the new rows to", &n);
	if (grow56_batch_ring_rc(rio, rc))
		return grow56_batch_ring_rc(rio, rc);
	rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct mbio *io = &rio->ios[i];
		struct bbl_cols plost = { { 0 } };
		const struct bbl_cols *lost = &plost;
		unsigned k, r;

		grow56_batch_where(b, io->buf, &k, &r);
		if (io->res != (int)io->len) {
			b->out[k] = true; /* member_batch.c took the member out */
			continue;
		}
		written[io->member] = true;
		if (r < l->ndata)
			lost = &b->lost[(size_t)k * l->ndata + r];
		else
			for (unsigned d = 0; d < l->ndata; d++)
				for (unsigned w = 0; w < BBL_COLS_WORDS; w++)
					plost.w[w] |= b->lost[(size_t)k * l->ndata + d].w[w];
		rc = reshape_carry_loss(a, io->member, io->fault.fd, io->off, l->chunk, lost);
	}
	if (rc == 0 && atomic_load(&a->broken))
		rc = -EIO;
	return rc;
}

/* One batch, its rows' bitmap marks around it. */
static int grow56_batch_run(struct graid_array *a, const struct array_reshape *rs,
			    struct reshape_io *rio, struct grow56_batch *b, uint8_t *scratch,
			    bool *written)
{
	/* A role out: the rows are written around it and marked first, held through the writes. */
	bool marked = grow56_dead_member(a, rs) < a->nmembers, out = false;
	unsigned started = 0;
	int rc = 0;

	memset(b->lost, 0, sizeof(*b->lost) * b->n * b->l->ndata);
	memset(b->recover, 0, sizeof(*b->recover) * b->n * b->l->ndata);
	memset(b->out, 0, sizeof(*b->out) * b->n);
	for (; marked && rc == 0 && started < b->n; started++)
		rc = bitmap_start_write(a, b->r0 + started);
	if (rc == 0)
		rc = b->staged ? grow56_batch_read_staged(a, rs, b, scratch)
			       : grow56_batch_read(a, rs, rio, b);
	if (rc == 0)
		rc = grow56_batch_recover(a, rs, b, scratch);
	if (rc == 0)
		rc = grow56_batch_parity(a, b);
	if (rc == 0)
		rc = grow56_batch_write(a, rs, rio, b, written);
	for (unsigned k = 0; k < started; k++)
		bitmap_end_write(a, b->r0 + k);
	for (unsigned k = 0; k < b->n; k++)
		out |= b->out[k];
	/* A member that went out during the batch (its write, anyone's I/O): its rows marked. */
	if (rc == 0 && !marked && (out || grow56_dead_member(a, rs) < a->nmembers))
		rc = grow56_mark_rows(a, b->r0, b->r0 + b->n);
	return rc;
}

/*
 * New rows [r0, r1) a batch at a time: the windows' (@p staged NULL: rows whose data lies in
 * unused regions zeroed, the others' regions marked used first) or the STAGED step's.
 */
static int grow56_batches(struct graid_array *a, const struct array_reshape *rs,
			  struct reshape_io *rio, const struct grow56_staged_src *staged, uint64_t r0,
			  uint64_t r1, uint8_t *buf, bool *written)
{
	const struct layout *l = &rs->new_lay;
	unsigned cap = grow56_batch_rows(l->chunk, l->nmembers);
	struct grow56_batch b = { .l = l, .nroles = l->ndata + l->nparity, .buf = buf,
				  .staged = staged };
	uint8_t *scratch = buf + (size_t)cap * l->nmembers * l->chunk;
	int rc = 0;

	b.lost = calloc((size_t)cap * l->ndata, sizeof(*b.lost));
	b.recover = calloc((size_t)cap * l->ndata, sizeof(*b.recover));
	b.out = calloc(cap, sizeof(*b.out));
	if (a->tags && a->csum_gens)
		b.meta = malloc((size_t)cap * b.nroles * reshape_csum_words(l) * sizeof(*b.meta));
	if (!b.lost || !b.recover || !b.out || (a->tags && a->csum_gens && !b.meta))
		rc = -ENOMEM;
	for (uint64_t row = r0; rc == 0 && row < r1;) {
		/* Rows whose data lies only in unused regions: zeroed, not copied. */
		uint64_t skip = staged ? 0 : grow56_live_span(a, rs, row, r1 - row, true);

		if (skip) {
			rc = grow56_zero_rows(a, rs, row, row + skip, written);
			row += skip;
			continue;
		}
		/* The rest a batch at a time, their regions marked used before the writes. */
		b.r0 = row;
		if (staged)
			b.n = (unsigned)(r1 - row < cap ? r1 - row : cap);
		else
			b.n = (unsigned)grow56_live_span(a, rs, row, r1 - row < cap ? r1 - row : cap,
							 false);
		rc = staged ? 0 : grow56_live_mark(a, rs, row, row + b.n, true);
		if (rc == 0)
			rc = grow56_batch_run(a, rs, rio, &b, scratch, written);
		row += b.n;
	}
	free(b.lost);
	free(b.recover);
	free(b.out);
	free(b.meta);
	return rc;
}

int grow56_window_rows(struct graid_array *a, const struct array_reshape *rs,
		       struct reshape_io *rio, uint64_t r0, uint64_t r1, uint8_t *buf,
		       bool *written)
{
	return grow56_batches(a, rs, rio, NULL, r0, r1, buf, written);
}

int grow56_staged_rows(struct graid_array *a, const struct array_reshape *rs,
		       struct reshape_io *rio, const struct grow56_staged_src *src, uint64_t r0,
		       uint64_t r1, uint8_t *buf, bool *written)
{
	return grow56_batches(a, rs, rio, src, r0, r1, buf, written);
}
