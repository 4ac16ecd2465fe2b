/* SPDX-License-Identifier: MIT */
/*
 * RAID-5/6 growing's staging (jobs/reshape_stage.h; docs/RESHAPE.md, "RAID-5/6 growing, as
 * built"): the first stage_bytes of the array cannot be moved in place (each new row
 * overwrites its own sources), so they go through a copy on the added member, each step
 * durable before the record names the next (docs/FORMAT.md, "The reshape record"). Each
 * step's member I/O is batched on the job's ring as the windows' is: the copy's reads at
 * once, then its writes at once, a buffer's worth at a time; then the new rows, a batch at a
 * time (grow56_staged_rows). With checksums the ring verifies the copy's reads against their
 * tags as the windows' (a block failing its tag: unreadable, recovered from parity; an old row
 * whose records disagree: judged whole, reshape_csum.c), the copy's writes carry their meta
 * words (reshape_csum_next_meta: the ring would judge their place by the array's geometry,
 * which the copy is outside of), and the copy's tags are written back before STAGED.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/reshape_csum.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_io.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_live.h"
#include "jobs/reshape_stage.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/badblocks.h"
#include "meta/live.h"
#include "meta/stripe_lock.h"

#if GRAID_FAULT_INJECTION
/*
 * Test seam (tests/test_reshape_grow56.c): while nonzero, the STAGED step fails with this
 * -errno after writing the new rows, before their flush (a flush or a record failing).
 */
_Atomic int graid__test_grow56_staged_fail;
#endif

/* One piece of the staged copy: what stage_copy() needs, and its buffer's room. */
struct stage_piece {
	const struct array_reshape *rs;
	const struct reshape_record *rec;
	struct reshape_io *rio;
	uint8_t *buf, *scratch;  /* cap chunks; an old row's (grow56_recover_old) */
	struct bbl_cols *lost;   /* cap: units holding nothing valid */
	bool *recover;           /* cap: to recover from the old row */
	/*
	 * cap: zero, not read (an old row of an unused region, or past the old size), its place
	 * in the copy deallocated rather than written (grow_zero_place); NULL: none skipped.
	 */
	bool *zero;
	/* Checksums with generations: cap x reshape_csum_words() words of the writes; or NULL. */
	uint32_t *meta;
	unsigned cap;
};

/*
 * Chunks [@p at, + @p n chunks) of the staged range into the buffer: every read its old place
 * can give at once (its member in, its log naming nothing there, its old row's checksum
 * records agreeing; past the old size: zeroes; each read verified against its tags), then the
 * others from their old rows through parity (grow56_recover_old: a unit no redundancy covers
 * stays lost; a row whose records disagree judged whole). @return 0; -EIO the array broke;
 * -errno the ring broke; grow56_recover_old()'s.
 */
static int stage_read(struct graid_array *a, const struct stage_piece *p, uint64_t at,
		      unsigned n)
{
	uint32_t chunk = p->rs->old_lay.chunk;
	size_t done;
	int rc;

	memset(p->lost, 0, sizeof(*p->lost) * n);
	memset(p->recover, 0, sizeof(*p->recover) * n);
	if (p->zero)
		memset(p->zero, 0, sizeof(*p->zero) * n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = p->rec->stage_array_off + at + (uint64_t)i * chunk;
		struct layout_pos o;

		if (off >= p->rs->end) {
			memset(p->buf + (size_t)i * chunk, 0, chunk);
			if (p->zero)
				p->zero[i] = true;
			continue;
		}
		layout_map(&p->rs->old_lay, off, &o);
		/*
		 * Its old row in an unused region: zero on every member, and it stays so (its row
		 * is locked: no write lands there until the COPY record). A write to another row
		 * of the region may mark it meanwhile; the copy still holds the row's true bytes.
		 */
		if (p->zero && live_stripe_unused(a, o.member_off / chunk)) {
			memset(p->buf + (size_t)i * chunk, 0, chunk);
			p->zero[i] = true;
			continue;
		}
		if (!array_role_alive(a, o.member) ||
		    badblocks_overlap(a, o.member, o.member_off, chunk) ||
		    reshape_csum_row_suspect(a, o.member_off / chunk))
			p->recover[i] = true;
		else if ((rc = reshape_io_queue(p->rio, o.member, false,
						p->buf + (size_t)i * chunk, chunk,
						o.member_off)) != 0)
			return rc;
	}
	rc = reshape_io_run(p->rio, "reading chunks to stage from", &done);
	if (p->rio->mb.broken)
		return rc ? rc : -EIO;
	/*
	 * A medium error or a block failing its tag (the member stays), a stale read, a member
	 * failed: from parity.
	 */
	for (size_t k = 0; k < done; k++)
		if (p->rio->ios[k].res != (int)p->rio->ios[k].len)
			p->recover[(size_t)(p->rio->ios[k].buf - p->buf) / chunk] = true;
	if (atomic_load(&a->broken))
		return -EIO;
	rc = 0;
	for (unsigned i = 0; rc == 0 && i < n; i++)
		if (p->recover[i])
			rc = grow56_recover_old(a, p->rs,
						p->rec->stage_array_off + at + (uint64_t)i * chunk,
						p->buf + (size_t)i * chunk, p->scratch, &p->lost[i]);
	return rc;
}

/*
 * The buffer's @p n chunks written at once to the copy at staged byte @p at (with checksums,
 * each with its meta words: reshape_csum_next_meta), but for the zero ones stage_read() set
 * (their places deallocated, a run at a time: grow_zero_place), then each place's log kept
 * true: a loss
 * carried into the copy's log (reshape_carry_loss), from where the STAGED step carries it to
 * the new place. A write that fails took the copy's
 * member out (member_batch.c, as the stripe path does): seen, not tried for ever.
 * @return 0; -ENODEV the copy's member is out or went out; -errno the ring broke;
 * reshape_csum_next_meta()'s; reshape_carry_loss()'s.
 */
static int stage_write(struct graid_array *a, const struct stage_piece *p, uint64_t at,
		       unsigned n)
{
	uint32_t chunk = p->rs->old_lay.chunk;
	unsigned sr = p->rec->stage_role[0];
	unsigned words = reshape_csum_words(&p->rs->old_lay);
	uint64_t moff = p->rec->stage_member_off[0] + at;
	size_t done;
	int rc = 0;

	if (!array_role_alive(a, sr))
		return -ENODEV; /* the copy is on it alone */
	/* The copy's words, its place's locks held (no other write of it: they stay true). */
	if (p->meta && (rc = reshape_csum_next_meta(a, sr, moff, n * words, p->meta)) == 1) {
		rc = 0;
		words = 0;
	}
	if (rc < 0)
		return rc;
	/* Each run of zero chunks: its place deallocated (zeroes), nothing transferred. */
	for (unsigned i = 0, z; p->zero && i < n; i += z ? z : 1) {
		for (z = 0; i + z < n && p->zero[i + z]; z++)
			;
		if (z && grow_zero_place(a, sr, moff + (uint64_t)i * chunk, (uint64_t)z * chunk))
			return atomic_load(&a->broken) ? -EIO : -ENODEV; /* taken out */
	}
	for (unsigned i = 0; i < n; i++) {
		struct mbio *io;

		if (p->zero && p->zero[i])
			continue;
		io = reshape_io_add(p->rio, sr, true, p->buf + (size_t)i * chunk, chunk,
				    moff + (uint64_t)i * chunk);
		/* Not queued: stopped, never a copy left unwritten nor words on another write. */
		if (!io) {
			p->rio->n = 0;
			return -EOVERFLOW;
		}
		if (p->meta && words)
			io->fault.meta_in = p->meta + (size_t)i * words;
	}
	rc = reshape_io_run(p->rio, "staging the first rows on", &done);
	if (p->rio->mb.broken)
		return rc ? rc : -EIO;
	if (rc)
		return -ENODEV;
	for (size_t k = 0; rc == 0 && k < done; k++) {
		const struct mbio *io = &p->rio->ios[k];

		rc = reshape_carry_loss(a, sr, io->fault.fd, io->off, chunk,
					&p->lost[(size_t)(io->buf - p->buf) / chunk]);
	}
	if (rc == 0 && !array_role_alive(a, sr))
		rc = -ENODEV;
	return rc;
}

/*
 * Copy array bytes [stage_array_off, + stage_bytes) of @p rec from their old places to the
 * staged copy (stage_role[0] at stage_member_off[0]), a buffer's worth at a time (@p buf:
 * grow56_buf_bytes(); @p rio: room for a batch's writes), then flush that member and write
 * the logs. Units that hold nothing valid are recorded lost in that member's log at their
 * place in the copy. @p keep (NULL: none): the whole copy is made there instead, a chunk's
 * lost units each in @p keep_lost, for the STAGED step that follows to write from.
 * @return 0; -ENOMEM; stage_read()'s and stage_write()'s errors; tag_store_write_back()'s;
 * the member's flush error; badblocks_sync()'s.
 */
static int stage_copy(struct graid_array *a, const struct array_reshape *rs,
		      const struct reshape_record *rec, struct reshape_io *rio, uint8_t *buf,
		      uint8_t *keep, struct bbl_cols *keep_lost)
{
	uint32_t chunk = rs->old_lay.chunk;
	unsigned sr = rec->stage_role[0];
	int fd = a->members[sr].dev.fd, rc = 0;
	size_t room = (size_t)grow56_batch_rows(chunk, rs->new_lay.nmembers) * rs->new_lay.nmembers;
	struct stage_piece p = { .rs = rs, .rec = rec, .rio = rio, .buf = buf,
				 .scratch = buf + room * chunk };

	struct bbl_cols *lost;

	p.cap = (unsigned)(room < rio->cap ? room : rio->cap);
	lost = keep ? NULL : calloc(p.cap, sizeof(*lost));
	p.recover = calloc(p.cap, sizeof(*p.recover));
	if (grow56_stage_skips(a) && !(p.zero = calloc(p.cap, sizeof(*p.zero))))
		rc = -ENOMEM;
	if (a->tags && a->csum_gens)
		p.meta = malloc((size_t)p.cap * reshape_csum_words(&rs->old_lay) * sizeof(*p.meta));
	if ((!keep && !lost) || !p.recover || (a->tags && a->csum_gens && !p.meta))
		rc = -ENOMEM;
	for (uint64_t at = 0; rc == 0 && at < rec->stage_bytes;) {
		uint64_t left = (rec->stage_bytes - at + chunk - 1) / chunk;
		unsigned n = left < p.cap ? (unsigned)left : p.cap;

		p.buf = keep ? keep + at : buf;
		p.lost = keep ? keep_lost + at / chunk : lost;
		rc = stage_read(a, &p, at, n);
		if (rc == 0)
			rc = stage_write(a, &p, at, n);
		at += (uint64_t)n * chunk;
	}
	free(lost);
	free(p.recover);
	free(p.zero);
	free(p.meta);
	/* The copy's tags with it: STAGED says the copy is whole, reads of it verify. */
	if (rc == 0 && a->tags && (rc = tag_store_write_back(a)) != 0)
		graid__log(GRAID_LOG_ERR, "reshape: writing the staged copy's checksum tags: %s",
			   graid_strerror(rc));
	if (rc == 0)
		rc = member_flush_fd(&a->members[sr], fd);
	/*
	 * The copy's log as the copy is, on the devices before STAGED is recorded: an entry a
	 * failed earlier try left there, cleared by this copy in memory only, would after a
	 * crash move a unit written since as a loss. Not recorded: the job stops, and tries
	 * again.
	 */
	if (rc == 0 && (rc = badblocks_sync(a)) != 0)
		graid__log(GRAID_LOG_ERR, "reshape: writing the bad-block logs after the staging "
					  "copy: %s", graid_strerror(rc));
	return rc;
}

/* The staging's steps, under the locks, on the ring @p rio. */
static int stage_steps(struct graid_array *a, struct array_reshape *rs,
		       struct reshape_job *j, struct reshape_io *rio)
{
	const struct reshape_record *cur = &j->rec;
	uint64_t s = cur->stage_bytes;
	uint64_t new_unit = (uint64_t)rs->new_lay.ndata * rs->new_lay.chunk;
	uint32_t chunk = rs->old_lay.chunk;
	uint64_t nchunks = (s + chunk - 1) / chunk;
	bool written[GRAID_MAX_MEMBERS] = { false };
	struct grow56_staged_src src = { .rec = cur };
	uint8_t *keep = NULL;
	struct bbl_cols *keep_lost = NULL;
	struct reshape_record rec;
	int rc = 0;

	if (cur->phase == RESHAPE_PHASE_STAGING) {
		/*
		 * A copy no larger than a batch's buffer is made in memory of its own and kept
		 * for the STAGED step, which then writes from it rather than read the copy back
		 * from its one member (half the staging's time on that member). Larger, or no
		 * memory: made in the job's buffer, a piece at a time, and read back.
		 */
		if (s <= GROW56_BATCH_BYTES) {
			keep = aligned_alloc(ARRAY_ALIGN, nchunks * chunk);
			keep_lost = calloc(nchunks, sizeof(*keep_lost));
			if (!keep || !keep_lost) {
				free(keep);
				free(keep_lost);
				keep = NULL;
				keep_lost = NULL;
			}
		}
		rc = stage_copy(a, rs, cur, rio, j->buf, keep, keep_lost);
		if (rc == 0) {
			rec = *cur;
			rec.phase = RESHAPE_PHASE_STAGED;
			rc = grow_record_next(a, j, &rec);
		}
		src.mem = keep;
		src.mem_lost = keep_lost;
	}
	if (rc == 0 && cur->phase == RESHAPE_PHASE_STAGED) {
		/*
		 * Their live-map regions marked used before their writes: those of the rows
		 * whose sources hold live data (the rest are written zeroes from the copy), or,
		 * with checksums, all of them (the copy there holds whatever its sources hold).
		 */
		rc = grow56_live_mark(a, rs, 0, s / new_unit, !grow56_stage_skips(a));
		if (rc == 0)
			rc = grow56_staged_rows(a, rs, rio, &src, 0, s / new_unit, j->buf, written);
#if GRAID_FAULT_INJECTION
		if (rc == 0)
			rc = atomic_load(&graid__test_grow56_staged_fail);
#endif
		if (rc == 0)
			rc = grow56_flush(a, written, 0, s / new_unit);
		if (rc == 0) {
			rec = *cur;
			rec.phase = RESHAPE_PHASE_COPY;
			rec.position = s;
			rc = grow_record_next(a, j, &rec);
		}
		if (rc == 0)
			atomic_store_explicit(&rs->position, s, memory_order_release);
	}
	free(keep);
	free(keep_lost);
	return rc;
}

int grow56_stage_run(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	const struct reshape_record *cur = &j->rec;
	uint64_t s = cur->stage_bytes;
	uint64_t old_unit = (uint64_t)rs->old_lay.ndata * rs->old_lay.chunk;
	struct reshape_io own = { 0 }, *rio = &j->rio;
	unsigned *held, nheld;
	int rc = 0;

	/*
	 * At an open (the STAGED step before any request, reshape_job_launch) the job's ring
	 * does not exist yet: one of its size serves the step, on this thread, and goes.
	 */
	if (!rio->open) {
		rc = reshape_io_open(&own, a, (size_t)grow56_batch_rows(rs->new_lay.chunk,
									rs->new_lay.nmembers) *
						      rs->new_lay.nmembers);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "reshape: the staging's ring: %s",
				   graid_strerror(rc));
			return rc;
		}
		rio = &own;
	}
	held = calloc((s - 1) / old_unit + 1, sizeof(*held));
	if (!held) {
		reshape_io_close(&own);
		return -ENOMEM;
	}
	/* New rows [0, s / new_unit) lie inside old rows [0, (s - 1) / old_unit]: k' > k. */
	nheld = grow_lock(a, 0, (s - 1) / old_unit + 1, held, 0);
	rc = stage_steps(a, rs, j, rio);
	/*
	 * Once STAGED is recorded, the old rows of [0, s) may hold new cells: until the step
	 * that writes them from the copy has ended (recorded COPY), no request is placed there
	 * in either geometry (sop_reshape_plan fails it -EIO). Set before the locks go; the
	 * job's retry (reshape_job_retry_due) or the next open writes them and lifts it.
	 */
	atomic_store_explicit(&rs->fence, cur->phase == RESHAPE_PHASE_STAGED ? s : 0,
			      memory_order_release);
	for (unsigned k = 0; k < nheld; k++)
		stripe_unlock(a, held[k]);
	free(held);
	reshape_io_close(&own);
	if (rc == 0)
		graid__log(GRAID_LOG_INFO, "reshape: the first %" PRIu64 " bytes moved through "
					   "their staged copy on member %u", s, cur->stage_role[0]);
	else if (cur->phase == RESHAPE_PHASE_STAGED)
		graid__log(GRAID_LOG_ERR, "reshape: array bytes [0, %" PRIu64 ") fail (-EIO) until "
					  "their rows are written from the staged copy (the job's "
					  "retry, or the next writable open)", s);
	return rc;
}
