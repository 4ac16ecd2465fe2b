/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-0 online (docs/RESHAPE.md): the start (new members checked, the first
 * record, the superblock round with RESHAPE), the job moving windows of chunks from the old
 * geometry to the new, its finish, and its resume at open. RAID-0 moves chunk by chunk: a
 * window writes only places whose old chunks were moved already, so no staging is needed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/reshape_map.h"
#include "jobs/jobs.h"
#include "jobs/reshape_grow.h"
#include "jobs/reshape_csum.h"
#include "jobs/reshape_progress.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_live.h"
#include "jobs/reshape_io.h"
#include "jobs/reshape_pace.h"
#include "jobs/reshape_qlast.h"
#include "member/member.h"
#include "member/member_pr.h"
#include "meta/array_meta.h"
#include "meta/array_readerr.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/member_fail.h"
#include "meta/region_map.h"
#include "meta/reshape_rec.h"
#include "meta/stripe_lock.h"

/* Chunks a window moves at most: one durable record per window, its chunk locks held. */
#define GROW_WINDOW_CHUNKS 16u

/*
 * A RAID-5/6 job stopped by an error is started again by the worker (reshape_job_retry_due)
 * when a role went out since (it then goes on degraded), or after this long, doubling at
 * each failure up to GROW_RETRY_MAX_NS.
 */
#define GROW_RETRY_FIRST_NS (5ull * 1000 * 1000 * 1000)
#define GROW_RETRY_MAX_NS (300ull * 1000 * 1000 * 1000)

#if GRAID_FAULT_INJECTION
/*
 * Test seams (tests/test_reshape_grow56.c): while nonzero, the STAGED step fails with this
 * -errno after writing the new rows, before their flush (a flush or a record failing);
 * while true, a job waits before it moves anything (what an open did before it shows).
 */
_Atomic int graid__test_grow56_staged_fail;
atomic_bool graid__test_grow56_hold;
#endif

struct reshape_job {
	pthread_t thread;
	bool thread_started, joined;
	atomic_bool stop;
	bool degraded_logged;       /* RAID-5/6: "moving on degraded" said once */
	/* The last record every current member took: the job's position and generation. */
	struct reshape_record rec;
	struct reshape_map map;     /* the record's two geometries, for the window math */
	struct reshape_rec_io io;   /* record writes (the job is their one writer) */
	struct reshape_io rio;      /* the windows' member I/O, on the job's thread */
	/* RAID-0: a window's chunks; RAID-5/6: a batch's new rows' chunks, then an old row's. */
	uint8_t *buf;
	pthread_mutex_t lock;       /* ended and result */
	pthread_cond_t cond;
	bool ended;
	int result;
	unsigned waiters;           /* reshape_job_wait() calls inside: free waits them out */
	struct reshape_pace pace;   /* jobs/reshape_pace.h */
	uint64_t pace_skipped;      /* RAID-5/6: bytes of windows zeroed, not copied: not paced */
	/* RAID-5/6 retry (under lock): roles out when it stopped, when and how soon to retry. */
	unsigned out_at_stop;
	uint64_t retry_at, retry_delay;
};

/* The routing state of @p rec's two geometries, at its position (array.h). */
static struct array_reshape *grow_routing(const struct reshape_record *rec)
{
	struct array_reshape *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	if (reshape_geom_layout(&rec->old_geo, &rs->old_lay) ||
	    reshape_geom_layout(&rec->new_geo, &rs->new_lay)) {
		free(rs);
		return NULL;
	}
	rs->end = reshape_end(rec);
	atomic_init(&rs->position, rec->position);
	/* STAGED: the first rows are whole only in their staged copy until the job rewrites them. */
	atomic_init(&rs->fence, rec->phase == RESHAPE_PHASE_STAGED
					? rec->stage_array_off + rec->stage_bytes : 0);
	atomic_init(&rs->size, rs->end);
	atomic_init(&rs->done, false);
	return rs;
}

static struct reshape_job *grow_job_new(const struct reshape_record *rec)
{
	struct reshape_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->buf = aligned_alloc(ARRAY_ALIGN,
			       rec->old_geo.level == 5 || rec->old_geo.level == 6
				       ? grow56_buf_bytes(rec->old_geo.chunk_bytes,
							  rec->new_geo.nmembers,
							  rec->old_geo.nmembers)
				       : (size_t)rec->old_geo.chunk_bytes * GROW_WINDOW_CHUNKS);
	if (!j->buf || reshape_map_init(&j->map, rec)) {
		free(j->buf);
		free(j);
		return NULL;
	}
	j->rec = *rec;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	return j;
}

static int grow_should_stop(struct graid_array *a, struct reshape_job *j)
{
	if (atomic_load(&j->stop) || atomic_load(&a->closing))
		return -ECANCELED;
	if (array_foreign(a))
		return -ESTALE;
	return atomic_load(&a->broken) ? -EIO : 0;
}

/* Requests routed by an earlier reshape of this open, still in flight. */
static bool grow_older_inflight(const struct array_reshape *rs)
{
	for (const struct array_reshape *o = rs->prev; o; o = o->prev)
		if (atomic_load(&o->inflight))
			return true;
	return false;
}

/*
 * Requests queued before the routing was set are placed by a->lay alone and take no chunk
 * lock, and those an earlier reshape of this open routes place chunks by its new geometry
 * whatever this one's position: none may be in flight when the first window moves
 * (queue.c queue_route). The plain count first: a request leaves it only once counted
 * by its routing.
 */
static int grow_wait_plain(struct graid_array *a, struct reshape_job *j,
			   const struct array_reshape *rs)
{
	const struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };

	while (atomic_load(&a->plain_inflight) || grow_older_inflight(rs)) {
		int rc = grow_should_stop(a, j);

		if (rc)
			return rc;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/*
 * Take the stripe locks keyed [c0, c1) (each bucket once, after the @p n already in @p held):
 * RAID-0's chunk numbers, RAID-5/6's rows. Every request into them waits. @return the count.
 */
static unsigned grow_lock(struct graid_array *a, uint64_t c0, uint64_t c1, unsigned *held,
			  unsigned n)
{
	for (uint64_t c = c0; c < c1; c++) {
		unsigned b = stripe_bucket(c), got;
		bool have = false;

		for (unsigned k = 0; k < n; k++)
			have |= held[k] == b;
		if (have)
			continue;
		for (;;) {
			uint64_t seq = stripe_release_seq(a);

			if (stripe_trylock(a, c, &got))
				break;
			stripe_wait_release(a, seq);
		}
		held[n++] = got;
	}
	return n;
}

/*
 * A RAID-0 chunk the job read with a medium error (@p io, member otherwise fine): the error
 * counted against its member (taken out past its threshold: -EIO, the array broken), then
 * read again 4 KiB at a time into the same buffer; the units that fail again are set in
 * @p lost. RAID-0 has no copy: they move as losses (reshape_carry_loss), zeroes at the new
 * place recorded lost, and the job goes on.
 */
static int grow_read_narrow(struct graid_array *a, struct reshape_job *j,
			    const struct mbio *io, struct bbl_cols *lost)
{
	struct mbio one = *io;
	size_t n;
	int rc;

	if (!array_member_read_error(a, one.member, &one.fault, one.res)) {
		array_member_io_failed(a, one.member, one.fault.fd, one.res);
		return -EIO;
	}
	for (uint32_t at = 0; at < one.len; at += BBL_UNIT)
		reshape_io_add(&j->rio, one.member, false, one.buf + at, BBL_UNIT, one.off + at);
	rc = reshape_io_run(&j->rio, "reading 4 KiB of a chunk to move from", &n);
	if (rc && rc != -ENODATA)
		return rc;
	for (size_t k = 0; k < n; k++)
		if (j->rio.ios[k].res != (int)BBL_UNIT) {
			bbl_cols_set(lost, (unsigned)k);
			memset(one.buf + k * BBL_UNIT, 0, BBL_UNIT);
		}
	return 0;
}

/*
 * Units of chunk @p c that hold nothing valid, on an array that keeps no bad-block log to
 * record them at their new place (RAID-0 arrays keep none): the job cannot move them as a
 * loss, and must not move them as data. It stops before them, saying which array bytes and
 * how to go on. @return -EIO.
 */
static int grow_loss_unrecordable(const struct layout_pos *from, uint64_t c, uint32_t chunk,
				  const struct bbl_cols *lost)
{
	for (unsigned u = 0; u < chunk / BBL_UNIT; u++)
		if (bbl_cols_test(lost, u))
			graid__log(GRAID_LOG_ERR, "reshape: array bytes %" PRIu64 "..+4095 (member "
						  "%u, data-area byte %" PRIu64 ") cannot be read (a "
						  "medium error); this array has no other copy of them "
						  "and no bad-block log to carry the loss, so the grow "
						  "stops before them. Writing those bytes (restoring "
						  "them) lets the next open go on",
				   c * chunk + (uint64_t)u * BBL_UNIT, from->member,
				   from->member_off + (uint64_t)u * BBL_UNIT);
	return -EIO;
}

/*
 * The reads of a RAID-0 window's @p n chunks (numbers @p cno, from @p from, into the job's
 * buffer a chunk each), at once; then each chunk's units that hold nothing valid into
 * @p lost: those its log records and those a medium error left unreadable
 * (grow_read_narrow), zeroes in the buffer.
 */
static int grow_read_chunks(struct graid_array *a, struct reshape_job *j, uint32_t chunk,
			    const uint64_t *cno, const struct layout_pos *from, unsigned n,
			    struct bbl_cols *lost)
{
	struct mbio media[GROW_WINDOW_CHUNKS];
	unsigned nmedia = 0;
	int rc;

	for (unsigned k = 0; k < n; k++)
		reshape_io_add(&j->rio, from[k].member, false, j->buf + (size_t)k * chunk, chunk,
			       from[k].member_off);
	rc = reshape_io_run(&j->rio, "reading chunks to move from", NULL);
	if (rc && rc != -ENODATA)
		return rc;
	for (unsigned k = 0; k < n; k++) {
		if (j->rio.ios[k].media)
			media[nmedia++] = j->rio.ios[k];
		else if (j->rio.ios[k].res != (int)chunk)
			return -EIO; /* its member failed (RAID-0 broke) or changed device */
	}
	rc = 0;
	for (unsigned i = 0, k = 0; rc == 0 && i < nmedia; i++) {
		for (k = 0; j->buf + (size_t)k * chunk != media[i].buf; k++)
			;
		rc = grow_read_narrow(a, j, &media[i], &lost[k]);
	}
	if (rc)
		return rc;
	for (unsigned k = 0; k < n; k++) {
		badblocks_cols(a, from[k].member, from[k].member_off, chunk, &lost[k]);
		if (!a->bbl && bbl_cols_any(&lost[k]))
			return grow_loss_unrecordable(&from[k], cno[k], chunk, &lost[k]);
		for (unsigned c = 0; c < chunk / BBL_UNIT; c++)
			if (bbl_cols_test(&lost[k], c))
				memset(j->buf + (size_t)k * chunk + (size_t)c * BBL_UNIT, 0,
				       BBL_UNIT);
	}
	return 0;
}

/*
 * Move RAID-0 chunks [c0, c1) from their old places to their new ones through the job's
 * buffer (a chunk each): every read at once, then every write (the chunks of the first row
 * stay where they are), each new place's bad-block log kept true (reshape_carry_loss); on an
 * array without a log (RAID-0's), a unit that cannot be read stops the job before it
 * (grow_loss_unrecordable). @p written marks the members written. A member failing an
 * I/O breaks the array: -EIO.
 */
static int grow_move_chunks(struct graid_array *a, struct reshape_job *j,
			    const struct array_reshape *rs, uint64_t c0, uint64_t c1,
			    bool *written)
{
	uint32_t chunk = rs->old_lay.chunk;
	struct layout_pos from[GROW_WINDOW_CHUNKS], to[GROW_WINDOW_CHUNKS];
	struct bbl_cols lost[GROW_WINDOW_CHUNKS];
	uint64_t cno[GROW_WINDOW_CHUNKS];
	unsigned n = 0;
	int rc;

	for (uint64_t c = c0; c < c1; c++) {
		layout_map(&rs->old_lay, c * chunk, &from[n]);
		layout_map(&rs->new_lay, c * chunk, &to[n]);
		cno[n] = c;
		if (from[n].member != to[n].member || from[n].member_off != to[n].member_off)
			n++;
	}
	memset(lost, 0, sizeof(lost));
	rc = grow_read_chunks(a, j, chunk, cno, from, n, lost);
	for (unsigned k = 0; rc == 0 && k < n; k++) {
		reshape_io_add(&j->rio, to[k].member, true, j->buf + (size_t)k * chunk, chunk,
			       to[k].member_off);
		written[to[k].member] = true;
	}
	if (rc == 0)
		rc = reshape_io_run(&j->rio, "writing moved chunks to", NULL);
	for (unsigned k = 0; rc == 0 && k < n; k++)
		rc = reshape_carry_loss(a, to[k].member, a->members[to[k].member].dev.fd,
					to[k].member_off, chunk, &lost[k]);
	return rc;
}

/*
 * Write @p rec as the next record (generation + 1 of the job's) and make it the job's once
 * some member took it. A member that missed it was failed (reshape_rec_write): RAID-0
 * breaks; a RAID-5/6 goes on degraded (reshape_grow56.c). @return 0; -errno.
 */
static int grow_record_next(struct graid_array *a, struct reshape_job *j,
			    struct reshape_record *rec)
{
	int rc;

	/*
	 * A member out whose superblock round missed a member the array needs (member_fail.h):
	 * the next open could take it back as current, with its old rows where this record
	 * says new ones are. Not recorded: the job stops and is tried again.
	 */
	if (atomic_load(&a->fail_unrecorded))
		return -EIO;
	rec->generation = j->rec.generation + 1;
	rc = reshape_rec_write(a, &j->io, rec, false);
	if (rc > 0 && atomic_load(&a->broken))
		rc = -EIO;
	if (rc > 0) {
		rc = 0;
		j->rec = *rec;
	}
	return rc;
}

/*
 * RAID-5/6 staging needs the member that holds the staged copy (one copy: see "What this
 * does not cover yet"). Without it the job stops before the staging, the record keeping
 * its phase: in STAGING the old geometry is whole and is served degraded by position; in
 * STAGED the first rows are whole only in that copy: they stay fenced (-EIO) and the rest
 * is served (reshape_job_launch at an open). Windows go on degraded (reshape_grow56.c), and
 * log it once.
 */
static int grow56_paused(struct graid_array *a, struct reshape_job *j,
			 const struct array_reshape *rs, bool staging)
{
	unsigned m = j->rec.stage_role[0];

	if (!staging || (m < a->nmembers && array_role_alive(a, m))) {
		m = grow56_dead_member(a, rs);
		if (m < a->nmembers && !j->degraded_logged) {
			j->degraded_logged = true;
			graid__log(GRAID_LOG_WARNING, "reshape: member %u (%s) is %s: moving on "
						      "degraded (its rows recovered from parity)",
				   m, a->members[m].dev.path,
				   member_state_name(atomic_load(&a->members[m].state)));
		}
		return 0;
	}
	graid__log(GRAID_LOG_ERR, "reshape: paused at byte %" PRIu64 " of %" PRIu64 ": member %u "
				  "(%s), which holds the staged copy of the first rows, is %s. "
				  "Requests are served degraded by position; the record keeps its "
				  "phase, and an open with that member in goes on from it",
		   j->rec.position, rs->end, m, m < a->nmembers ? a->members[m].dev.path : "?",
		   m < a->nmembers ? member_state_name(atomic_load(&a->members[m].state)) : "?");
	return -ENODEV;
}

/*
 * RAID-5/6 staging (docs/RESHAPE.md, "RAID-5/6 growing, as built"): the first stage_bytes
 * of the array cannot be moved in place (each new row overwrites its own sources), so, under
 * the locks of every row they touch in either geometry: STAGING: copy them to the added
 * member's rows past the new geometry's, flush, record STAGED; STAGED: write their new rows
 * from that copy, flush, record COPY at stage_bytes and advance the position. A resume in
 * STAGING copies again (the old rows were not written); in STAGED writes the new rows again
 * from the copy, before any request is served (reshape_job_launch).
 */
static int grow56_stage(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	uint64_t s = j->rec.stage_bytes;
	uint64_t old_unit = (uint64_t)rs->old_lay.ndata * rs->old_lay.chunk;
	uint64_t new_unit = (uint64_t)rs->new_lay.ndata * rs->new_lay.chunk;
	bool written[GRAID_MAX_MEMBERS] = { false };
	struct reshape_record rec;
	unsigned *held, nheld;
	int rc = grow56_paused(a, j, rs, true);

	if (rc)
		return rc;
	held = calloc((s - 1) / old_unit + 1, sizeof(*held));
	if (!held)
		return -ENOMEM;
	/* New rows [0, s / new_unit) lie inside old rows [0, (s - 1) / old_unit]: k' > k. */
	nheld = grow_lock(a, 0, (s - 1) / old_unit + 1, held, 0);
	if (j->rec.phase == RESHAPE_PHASE_STAGING) {
		rc = grow56_stage_copy(a, rs, &j->rec, j->buf);
		if (rc == 0) {
			rec = j->rec;
			rec.phase = RESHAPE_PHASE_STAGED;
			rc = grow_record_next(a, j, &rec);
		}
	}
	if (rc == 0 && j->rec.phase == RESHAPE_PHASE_STAGED) {
		/* Copied whatever their sources hold: their live-map regions marked used. */
		rc = grow56_live_mark(a, rs, 0, s / new_unit, true);
		if (rc == 0)
			rc = grow56_rows(a, rs, &j->rec, 0, s / new_unit, true, j->buf, written);
#if GRAID_FAULT_INJECTION
		if (rc == 0)
			rc = atomic_load(&graid__test_grow56_staged_fail);
#endif
		if (rc == 0)
			rc = grow56_flush(a, written, 0, s / new_unit);
		if (rc == 0) {
			rec = j->rec;
			rec.phase = RESHAPE_PHASE_COPY;
			rec.position = s;
			rc = grow_record_next(a, j, &rec);
		}
		if (rc == 0)
			atomic_store_explicit(&rs->position, s, memory_order_release);
	}
	/*
	 * Once STAGED is recorded, the old rows of [0, s) may hold new cells: until the step
	 * that writes them from the copy has ended (recorded COPY), no request is placed there
	 * in either geometry (sop_reshape_plan fails it -EIO). Set before the locks go; the
	 * job's retry (reshape_job_retry_due) or the next open writes them and lifts it.
	 */
	atomic_store_explicit(&rs->fence, j->rec.phase == RESHAPE_PHASE_STAGED ? s : 0,
			      memory_order_release);
	for (unsigned k = 0; k < nheld; k++)
		stripe_unlock(a, held[k]);
	free(held);
	if (rc == 0)
		graid__log(GRAID_LOG_INFO, "reshape: the first %" PRIu64 " bytes moved through "
					   "their staged copy on member %u", s, j->rec.stage_role[0]);
	else if (j->rec.phase == RESHAPE_PHASE_STAGED)
		graid__log(GRAID_LOG_ERR, "reshape: array bytes [0, %" PRIu64 ") fail (-EIO) until "
					  "their rows are written from the staged copy (the job's "
					  "retry, or the next writable open)", s);
	return rc;
}

/* Windows of RAID-5/6 move at least this many new rows when safe (and chunks, as RAID-0). */
#define GROW56_WINDOW_ROWS 4u

/*
 * RAID-5/6: the added devices' bad-block logs empty and their copies of the bitmap and the
 * live map the members' (they held whatever the devices held), before anything names them.
 */
static int grow56_prep_added(struct graid_array *a, struct member *m, unsigned n)
{
	int rc = 0;

	/* Checksums: their tag areas zeroed (reshape_csum.c). */
	rc = reshape_csum_prep_added(a, m, n);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		if (a->bbl_area.bytes)
			rc = member_zero_range(&m[i], a->bbl_area.offset, a->bbl_area.bytes);
		if (rc == 0 && a->bitmap.enabled)
			rc = region_map_write_member(a, &a->bitmap.map, &m[i]);
		if (rc == 0 && a->live)
			rc = region_map_write_member(a, &a->live->map, &m[i]);
	}
	return rc;
}

/*
 * The most a RAID-5/6 window moves (less where less is safe, at least one new row): a
 * batch of rows (grow56_batch_rows: a few MiB, its I/O in flight at once), and no less than
 * GROW_WINDOW_CHUNKS chunks or GROW56_WINDOW_ROWS rows (a window larger than a batch is
 * moved a batch at a time, under one flush and record).
 */
static uint64_t grow56_limit(const struct reshape_map *m)
{
	uint64_t unit = reshape_window_unit(m);
	uint64_t limit = (uint64_t)GROW_WINDOW_CHUNKS * m->new_g.lay.chunk;
	uint64_t batch = (uint64_t)grow56_batch_rows(m->new_g.lay.chunk, m->new_g.lay.nmembers) *
			 m->new_g.lay.ndata * m->new_g.lay.chunk;

	if (limit < GROW56_WINDOW_ROWS * unit)
		limit = GROW56_WINDOW_ROWS * unit;
	return limit < batch ? batch : limit;
}

/*
 * One RAID-5/6 window: whole new rows of [p, q), q - p what reshape_safe_bytes() says is
 * safe in place. Under the locks of the new rows written and the old rows read (a request
 * takes both its chunk's rows, so none meets the window), the new rows with their parity
 * written, flushed, the record at q, then the position advanced and the locks let go.
 */
static int grow56_window(struct graid_array *a, struct reshape_job *j,
			 struct array_reshape *rs)
{
	uint64_t p = j->rec.position, limit, bytes, skip;
	bool written[GRAID_MAX_MEMBERS] = { false };
	struct reshape_window w;
	struct reshape_record rec;
	unsigned *held, nheld;
	int rc = grow_should_stop(a, j);

	if (rc == 0)
		rc = grow56_paused(a, j, rs, false);
	if (rc)
		return rc;
	limit = grow56_limit(&j->map);
	bytes = reshape_safe_bytes(&j->map, p, limit);
	/* Rows that need no copy: one window, safe in place whatever it overlaps (live.c). */
	skip = grow56_live_window(a, rs, p, bytes);
	if (skip)
		bytes = skip;
	if (bytes == 0 || reshape_window(&j->map, p, bytes, &w) || (w.overlap && !skip)) {
		graid__log(GRAID_LOG_ERR, "reshape: no window at byte %" PRIu64 " is safe to move "
					  "in place; stopped", p);
		return -EPROTO;
	}
	held = calloc((w.new_row1 - w.new_row0 + 1) + (w.old_row1 - w.old_row0 + 1),
		      sizeof(*held));
	if (!held)
		return -ENOMEM;
	nheld = grow_lock(a, w.new_row0, w.new_row1 + 1, held, 0);
	nheld = grow_lock(a, w.old_row0, w.old_row1 + 1, held, nheld);
	/* A write marked one of them since the look: the next window is a copying one. */
	if (skip && !grow56_live_window_holds(a, rs, w.new_row0, w.new_row1 + 1))
		rc = -EAGAIN;
	if (rc == 0)
		rc = grow56_window_rows(a, rs, &j->rio, w.new_row0, w.new_row1 + 1, j->buf, written);
	if (rc == 0)
		rc = grow56_flush(a, written, w.new_row0, w.new_row1 + 1);
	if (rc == 0) {
		rec = j->rec;
		rec.position = p + bytes;
		rc = grow_record_next(a, j, &rec);
	}
	if (rc == 0)
		atomic_store_explicit(&rs->position, rec.position, memory_order_release);
	if (rc == 0 && skip)
		j->pace_skipped += bytes; /* nothing written but deallocations */
	for (unsigned k = 0; k < nheld; k++)
		stripe_unlock(a, held[k]);
	free(held);
	return rc == -EAGAIN ? 0 : rc;
}

/*
 * One window (docs/RESHAPE.md, "The crash-safety argument"): under the chunk locks of
 * [p, q), read the old places, write the new ones, flush the members written, write the
 * record at q (generation + 1), and only then advance the position the I/O path reads and
 * let the locks go. A failure leaves the position at p: the old places of [p, q) were not
 * written (reshape_window() says so for every RAID-0 window that reshape_safe_bytes gives).
 */
static int grow_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	uint32_t chunk = rs->old_lay.chunk;
	uint64_t p = j->rec.position;
	uint64_t bytes = reshape_safe_bytes(&j->map, p, (uint64_t)GROW_WINDOW_CHUNKS * chunk);
	bool written[GRAID_MAX_MEMBERS] = { false };
	unsigned held[GROW_WINDOW_CHUNKS], nheld;
	struct reshape_record rec;
	int rc = grow_should_stop(a, j);

	if (rc)
		return rc;
	if (bytes == 0) {
		graid__log(GRAID_LOG_ERR, "reshape: no window at byte %" PRIu64 " is safe to move "
					  "in place; stopped", p);
		return -EPROTO;
	}
	nheld = grow_lock(a, p / chunk, (p + bytes) / chunk, held, 0);
	if (rs->old_lay.level == 10) {
		/* Degraded and bad blocks as RAID-5/6: a member missing a record goes out. */
		rc = grow10_move(a, &j->rio, rs, p / chunk, (p + bytes) / chunk, j->buf);
		if (rc == 0) {
			rec = j->rec;
			rec.position = p + bytes;
			rc = grow_record_next(a, j, &rec);
		}
		if (rc == 0)
			atomic_store_explicit(&rs->position, rec.position, memory_order_release);
		goto unlock;
	}
	rc = grow_move_chunks(a, j, rs, p / chunk, (p + bytes) / chunk, written);
	for (unsigned m = 0; rc == 0 && m < a->nmembers; m++)
		if (written[m])
			rc = member_flush(&a->members[m]);
	if (rc == 0) {
		rec = j->rec;
		rec.generation++;
		rec.position = p + bytes;
		rc = reshape_rec_write(a, &j->io, &rec, false);
		if (rc > 0 && atomic_load(&a->broken))
			rc = -EIO; /* a member missed it and was failed: RAID-0 has no copy */
		if (rc > 0) {
			rc = 0;
			j->rec = rec;
			atomic_store_explicit(&rs->position, rec.position, memory_order_release);
		}
	}
unlock:
	for (unsigned k = 0; k < nheld; k++)
		stripe_unlock(a, held[k]);
	return rc;
}

/*
 * The first row of member @p m of the new geometry that holds only the space the grow adds
 * (array bytes at or past the end): RAID-0 by the member's own chunks; RAID-5/6 the first
 * row past the moved bytes, the same on every member (its data, its parity, the staging
 * rows).
 */
static uint64_t grow_tail_row(const struct array_reshape *rs, unsigned m)
{
	const struct layout *l = &rs->new_lay;
	uint64_t end_c = rs->end / l->chunk, unit = (uint64_t)l->ndata * l->chunk;

	if (l->level == 10)
		return grow10_tail_row(rs, m);
	if (l->nparity)
		return (rs->end + unit - 1) / unit;
	return end_c > m ? (end_c - m + l->nmembers - 1) / l->nmembers : 0;
}

/*
 * The space the grow adds, array bytes [end, new size), reads as zeroes (docs/FORMAT.md):
 * its places hold old chunks' stale copies and whatever the added devices held. On each
 * member they are the rows from grow_tail_row() on: one range a member, zeroed (deallocated
 * where the device can) and flushed, and their bad-block log entries cleared (zeroes are
 * their valid contents; zeroes are consistent for P and Q too). Idempotent: a resume in
 * FINISHING zeroes them again, and no request reaches them before the new size. RAID-5/6
 * degraded: a member that is out, or whose zeroing fails (it is then taken out, as any write
 * error takes it), is skipped, and its rows there are marked in the bitmap, durably, so that
 * a catch-up of it rewrites them (a spare's rebuild rewrites every row anyway). RAID-0
 * zeroes every member as before (one out would have broken it): an error stops the finish.
 */
static int grow_zero_tail(struct graid_array *a, const struct array_reshape *rs)
{
	const struct layout *l = &rs->new_lay;
	uint64_t rows = l->nstripes;
	struct live_token t;
	bool whole = true;

	live_rows_zero_begin(a, &t);
	for (unsigned m = 0; m < l->nmembers; m++) {
		uint64_t r = grow_tail_row(rs, m);
		int fd = a->members[m].dev.fd, rc;

		if (r >= rows)
			continue;
		whole = whole && array_role_alive(a, m);
		if (array_role_alive(a, m) || !l->level) {
			/* Checksums: the old tags there absent first (reshape_csum.c). */
			rc = reshape_csum_forget(a, m, r * l->chunk, (rows - r) * l->chunk);
			if (rc == 0)
				rc = member_zero_range_fd(&a->members[m], fd,
							  a->data_offset + r * l->chunk,
							  (rows - r) * l->chunk);
			if (rc == 0)
				rc = member_flush_fd(&a->members[m], fd);
			if (rc == 0) {
				badblocks_clear(a, m, fd, r * l->chunk, (rows - r) * l->chunk);
				continue;
			}
			whole = false;
			graid__log(GRAID_LOG_ERR, "reshape: zeroing the added space on member %u "
						  "(%s): %s", m, a->members[m].dev.path,
				   graid_strerror(rc));
			if (!l->level)
				return rc;
			array_member_io_failed(a, m, fd, rc);
			if (atomic_load(&a->broken))
				return -EIO;
		}
		/* RAID-10's bitmap numbers chunks: the added ones (grow10_maps_grow counted them). */
		rc = l->level == 10 ? grow56_mark_rows(a, rs->end / l->chunk,
						      l->array_bytes / l->chunk)
				    : grow56_mark_rows(a, r, rows);
		if (rc)
			return rc;
	}
	/* RAID-5/6, zero on every member: its live-map regions unused after the next flush. */
	if (whole && l->nparity)
		live_rows_zeroed(a, grow_tail_row(rs, 0), rows, &t);
	return 0;
}

/*
 * Every byte is in the new geometry: record FINISHING, then one superblock round without
 * RESHAPE (major 1 again) at a new event, and the array's new size for callers. A crash in
 * the round leaves members at E (major 3) and E + 1 (major 1) with one geometry, and the
 * freshest wins; a crash before it resumes into this finish.
 */
static int grow_finish(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	struct reshape_record rec = j->rec;
	uint64_t old_size = rs->end;
	int rc;

	if (atomic_load(&a->fail_unrecorded))
		return -EIO; /* as grow_record_next(): tried again once the round lands */
	rec.generation++;
	rec.phase = RESHAPE_PHASE_FINISHING;
	rec.position = rs->end;
	rc = reshape_rec_write(a, &j->io, &rec, false);
	if (rc < 0)
		return rc;
	j->rec = rec;
	rc = rs->old_lay.level == 10 ? grow10_maps_grow(a, rs) : 0;
	if (rc == 0)
		rc = grow_zero_tail(a, rs);
	/*
	 * RAID-5/6 marked each new row's region used before live data was written there
	 * (reshape_live.c); RAID-10's regions are array chunks, the same in both geometries:
	 * kept. A level whose map is neither gets every region used, durably, before the
	 * round that makes the new geometry the only one.
	 */
	if (rc == 0 && a->live && !rs->new_lay.nparity && rs->old_lay.level != 10)
		rc = live_mark_all(a);
	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	/*
	 * Every request placed by a->lay (plain) ended before the first window and none has
	 * started since (a->reshape was set): nothing reads the fields that change here.
	 * Requests queued with the routing set go on through it, at a position past the end.
	 */
	a->lay = rs->new_lay;
	atomic_store(&rs->done, true);
	a->events++;
	rc = array_write_superblocks(a, 0);
	/*
	 * The new size only once the round is on the members: a write into the added space
	 * taken before it could be flushed, then zeroed by the resume of FINISHING that a
	 * crash in the round leads to. Requests from now on are plain again, placed by a->lay,
	 * the new geometry. A failed round keeps the routing and the old size for this open.
	 */
	if (rc == 0) {
		atomic_store(&rs->size, rs->new_lay.array_bytes);
		atomic_store(&a->reshape, NULL);
	}
	/* The worker's jobs held for the reshape (jobs.h array_reshape_holds_jobs) go on. */
	pthread_cond_broadcast(&a->worker_cond);
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: the superblock round that ends it failed: %s; "
					  "the old size stays until the next open",
			   graid_strerror(rc));
	graid__log(GRAID_LOG_NOTICE, "reshape: done: RAID-%d of %u members, %" PRIu64 " bytes "
				     "(was %u members, %" PRIu64 " bytes)",
		   rs->new_lay.level, rs->new_lay.nmembers, rs->new_lay.array_bytes, rs->old_lay.nmembers, old_size);
	return rc;
}

/* Roles of the new geometry that are out now (a change since a stop is worth a retry). */
static unsigned grow_roles_out(const struct graid_array *a, const struct array_reshape *rs)
{
	unsigned n = 0;

	for (unsigned m = 0; m < rs->new_lay.nmembers; m++)
		n += !array_role_alive(a, m);
	return n;
}

/* RAID-5/6, a stop on error (j->lock held): when the worker may start the job again. */
static void grow_retry_plan(struct graid_array *a, struct reshape_job *j,
			    const struct array_reshape *rs)
{
	j->out_at_stop = grow_roles_out(a, rs);
	j->retry_delay = !j->retry_delay ? GROW_RETRY_FIRST_NS
		       : j->retry_delay >= GROW_RETRY_MAX_NS / 2 ? GROW_RETRY_MAX_NS
							  : 2 * j->retry_delay;
	j->retry_at = graid__now_ns() + j->retry_delay;
}

/* Errors a retry cannot mend: a close, another host, a geometry with no safe window. */
static bool grow_retryable(int rc)
{
	return rc && rc != -ECANCELED && rc != -ESTALE && rc != -EPROTO;
}

#if GRAID_FAULT_INJECTION
static int grow_test_hold(struct graid_array *a, struct reshape_job *j)
{
	const struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };
	int rc = 0;

	while (rc == 0 && atomic_load(&graid__test_grow56_hold)) {
		nanosleep(&ms, NULL);
		rc = grow_should_stop(a, j);
	}
	return rc;
}
#endif

/*
 * The job's ring's room: RAID-0 a window's chunks, or one chunk's 4 KiB units
 * (grow_read_narrow); RAID-5/6 a batch's writes (rows x new members, more than its reads).
 */
static size_t grow_io_cap(const struct reshape_record *rec)
{
	size_t cap = GROW_WINDOW_CHUNKS, units = rec->old_geo.chunk_bytes / BBL_UNIT;
	size_t rows = rec->old_geo.level == 10 ? 2 * GROW10_WINDOW_CHUNKS
		    : rec->old_geo.level ? (size_t)grow56_batch_rows(rec->new_geo.chunk_bytes,
								     rec->new_geo.nmembers) *
						   rec->new_geo.nmembers
					 : 0;

	cap = cap < units ? units : cap;
	return cap < rows ? rows : cap;
}

static void *grow_main(void *arg)
{
	struct graid_array *a = arg;
	struct reshape_job *j = a->reshape_job;
	struct array_reshape *rs = a->reshape_mem;
	struct reshape_progress prog;
	int rc;
	char state[256];

	reshape_progress_start(&prog, a, rs, j->rec.new_geo.nmembers - j->rec.old_geo.nmembers,
			       j->rec.position);
	reshape_pace_start(a, &j->pace);
	rc = reshape_io_open(&j->rio, a, grow_io_cap(&j->rec));
	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: the job's ring: %s", graid_strerror(rc));
	if (rc == 0)
		rc = grow_wait_plain(a, j, rs);
#if GRAID_FAULT_INJECTION
	if (rc == 0)
		rc = grow_test_hold(a, j);
#endif

	reshape_rec_describe(&j->rec, state, sizeof(state));
	graid__log(GRAID_LOG_NOTICE, "reshape: moving data: %s", state);
	if (rc == 0 && (j->rec.phase == RESHAPE_PHASE_STAGING ||
			j->rec.phase == RESHAPE_PHASE_STAGED))
		rc = grow56_stage(a, j, rs);
	while (rc == 0 && j->rec.position < rs->end) {
		uint64_t before = j->rec.position, t0 = graid__now_ns();

		rc = rs->old_lay.nparity ? grow56_window(a, j, rs) : grow_window(a, j, rs);
		if (rc == 0) {
			uint64_t copied = j->rec.position - j->pace_skipped;

			reshape_progress_note(&prog, j->rec.position);
			reshape_pace(a, &j->pace, reshape_qlast_per_member(&j->rec, rs, copied),
				     graid__now_ns() - t0, &j->stop);
		}
		/* A line at every tenth of the way (the events follow the application's step). */
		if (rc == 0 && before * 10 / rs->end != j->rec.position * 10 / rs->end)
			graid__log(GRAID_LOG_INFO, "reshape: %" PRIu64 "%% moved (%" PRIu64 " of %"
						   PRIu64 " bytes)", j->rec.position * 100 / rs->end,
				   j->rec.position, rs->end);
	}
	if (rc == 0)
		rc = grow_finish(a, j, rs);
	else if (rc == -ECANCELED)
		graid__log(GRAID_LOG_NOTICE, "reshape: stopped at byte %" PRIu64 " of %" PRIu64
					     "; the next open goes on from there",
			   j->rec.position, rs->end);
	else
		graid__log(GRAID_LOG_ERR, "reshape: stopped at byte %" PRIu64 " of %" PRIu64 ": "
					  "%s; the record keeps the position",
			   j->rec.position, rs->end, graid_strerror(rc));
	reshape_io_close(&j->rio);
	/* Before the end is told: a graid_array_grow(GRAID_GROW_WAIT) returns after the event. */
	reshape_progress_end(&prog, rc, j->rec.position);
	pthread_mutex_lock(&j->lock);
	j->ended = true;
	j->result = rc;
	if (grow_retryable(rc) && rs->old_lay.level)
		grow_retry_plan(a, j, rs);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int reshape_job_launch(struct graid_array *a)
{
	struct reshape_job *j = a->reshape_job;
	int rc;

	if (!j || j->thread_started)
		return 0;
	if (j->rec.phase == RESHAPE_PHASE_STAGED) {
		/*
		 * Before any request: the staged range is whole only in its staged copy. Where
		 * that step fails (the copy's member out, an error), the open goes on: [0, S)
		 * stays fenced (reshape_grow_resume set it from the record), the rest is served,
		 * and the job, started below, stops on the same cause and is tried again (when
		 * a member comes back or fails, or on its timer) until the step is done.
		 */
		rc = grow56_stage(a, j, a->reshape_mem);
		if (rc)
			graid__log(GRAID_LOG_ERR, "reshape: cannot write the first rows from their "
						  "staged copy: %s; array bytes [0, %" PRIu64 ") fail "
						  "(-EIO) until they are, the rest is served",
				   graid_strerror(rc), j->rec.stage_bytes);
	}
	rc = pthread_create(&j->thread, NULL, grow_main, a);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "reshape: cannot start its job: %s", graid_strerror(-rc));
		return -rc;
	}
	j->thread_started = true;
	return 0;
}

/* Count a waiter on @p j (its free waits it out); under meta_lock, where j cannot go. */
static void grow_job_hold(struct reshape_job *j)
{
	pthread_mutex_lock(&j->lock);
	j->waiters++;
	pthread_mutex_unlock(&j->lock);
}

/* Wait for @p j, held by grow_job_hold(), to end; the hold given back. */
static int grow_job_wait_held(struct reshape_job *j)
{
	int rc;

	pthread_mutex_lock(&j->lock);
	while (!j->ended)
		pthread_cond_wait(&j->cond, &j->lock);
	rc = j->result;
	j->waiters--;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int reshape_job_wait(struct graid_array *a)
{
	struct reshape_job *j = a->reshape_job;

	if (!j || !j->thread_started)
		return -ENOENT;
	grow_job_hold(j);
	return grow_job_wait_held(j);
}

void reshape_job_stop(struct graid_array *a)
{
	struct reshape_job *j = a->reshape_job;
	bool join;

	if (!j)
		return;
	/* Under its lock: the worker's retry (reshape_job_retry_due) starts none after this. */
	pthread_mutex_lock(&j->lock);
	atomic_store(&j->stop, true);
	join = j->thread_started && !j->joined;
	j->joined = true;
	pthread_mutex_unlock(&j->lock);
	if (join)
		pthread_join(j->thread, NULL);
}

/*
 * Whether the worker may start @p j again now (j->lock held): a RAID-5/6 job that stopped
 * on an error a retry can mend, the array still ours, in one piece and open, and a role out
 * since it stopped (the job goes on degraded around it) or its retry time come.
 */
static bool grow_retry_now(struct graid_array *a, struct reshape_job *j,
			   const struct array_reshape *rs)
{
	if (!j->thread_started || !j->ended || !grow_retryable(j->result) ||
	    atomic_load(&j->stop) || atomic_load(&a->closing) || atomic_load(&a->broken) ||
	    array_foreign(a) || a->read_only)
		return false;
	return grow_roles_out(a, rs) != j->out_at_stop || graid__now_ns() >= j->retry_at;
}

void reshape_job_retry_due(struct graid_array *a)
{
	struct reshape_job *j = a->reshape_job;
	struct array_reshape *rs = a->reshape_mem;
	int rc;

	if (!j || !rs || !rs->old_lay.level || atomic_load(&a->reshape) != rs)
		return;
	pthread_mutex_lock(&j->lock);
	if (!grow_retry_now(a, j, rs)) {
		pthread_mutex_unlock(&j->lock);
		return;
	}
	/* It has ended (told under this lock): the join is at once. */
	if (!j->joined)
		pthread_join(j->thread, NULL);
	j->joined = true;
	graid__log(GRAID_LOG_NOTICE, "reshape: trying again from byte %" PRIu64 " (it stopped: "
				     "%s)", j->rec.position, graid_strerror(j->result));
	j->ended = false;
	j->result = 0;
	rc = pthread_create(&j->thread, NULL, grow_main, a);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "reshape: cannot start its job again: %s",
			   graid_strerror(-rc));
		j->ended = true;
		j->result = -rc;
		grow_retry_plan(a, j, rs);
	} else {
		j->joined = false;
	}
	pthread_mutex_unlock(&j->lock);
}

static void grow_job_free(struct graid_array *a, struct reshape_job *j)
{
	/* A graid_array_grow(GRAID_GROW_WAIT) on another thread is woken (ended) and leaves. */
	pthread_mutex_lock(&j->lock);
	while (j->waiters)
		pthread_cond_wait(&j->cond, &j->lock);
	pthread_mutex_unlock(&j->lock);
	reshape_rec_io_free(a, &j->io);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j->buf);
	free(j);
}

void reshape_job_free(struct graid_array *a)
{
	struct reshape_job *j = a->reshape_job;
	struct array_reshape *rs = a->reshape_mem;

	if (j) {
		reshape_job_stop(a);
		grow_job_free(a, j);
		a->reshape_job = NULL;
	}
	while (rs) {
		struct array_reshape *prev = rs->prev;

		free(rs);
		rs = prev;
	}
	a->reshape_mem = NULL;
}

/*
 * Whether RAID-5/6 grows start and resume (docs/RESHAPE.md, "RAID-5/6 growing, as built").
 * 0 turns them off for callers (-EOPNOTSUPP, and the open refuses their records); tests
 * then switch them on with graid__test_grow56. On since the six findings of the review
 * that had it off were fixed (docs/RESHAPE.md, "Why RAID-5/6 growing was off").
 */
#define GROW56_BUILT 1

#if GRAID_FAULT_INJECTION
bool graid__test_grow56;
#endif

static bool grow56_allowed(void)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_grow56)
		return true;
#endif
	return GROW56_BUILT;
}

bool reshape_grow_resumable(const struct reshape_record *r)
{
	int level = r->old_geo.level;

	if (r->direction != RESHAPE_FORWARD ||
	    r->old_geo.chunk_bytes != r->new_geo.chunk_bytes ||
	    r->old_geo.data_bytes != r->new_geo.data_bytes ||
	    r->new_geo.nmembers <= r->old_geo.nmembers ||
	    r->old_geo.layout != RESHAPE_LAYOUT_DEFAULT)
		return false;
	/* RAID-5 -> RAID-6 Q-last (reshape_qlast.c): the RAID-5/6 job, Q the only new chunk. */
	if (reshape_qlast_record(r))
		return grow56_allowed();
	if (level != r->new_geo.level || r->new_geo.layout != RESHAPE_LAYOUT_DEFAULT)
		return false;
	if (level == 0 || (level == 10 && grow10_allowed()))
		return r->stage_bytes == 0 &&
		       (r->phase == RESHAPE_PHASE_COPY || r->phase == RESHAPE_PHASE_FINISHING);
	/* RAID-5/6: every phase (STAGED is finished by the open, reshape_job_launch). */
	return (level == 5 || level == 6) && grow56_allowed();
}

int reshape_grow_resume(struct graid_array *a, const struct reshape_record *rec,
			bool start_job)
{
	struct array_reshape *rs = grow_routing(rec);
	struct reshape_job *j = NULL;

	if (!rs)
		return -ENOMEM;
	if (!start_job && rec->phase == RESHAPE_PHASE_STAGED) {
		/* The first rows may be torn, whole only in the staged copy: a writable open
		 * writes them from it before serving; a read-only one cannot. */
		graid__log(GRAID_LOG_ERR, "open: the reshape stopped while writing its first rows "
					  "from their staged copy; open the array writable once to "
					  "finish that step");
		free(rs);
		return -EOPNOTSUPP;
	}
	if (start_job && !(j = grow_job_new(rec))) {
		free(rs);
		return -ENOMEM;
	}
	a->lay = rs->old_lay;
	rs->prev = a->reshape_mem;
	a->reshape_mem = rs;
	a->reshape_job = j;
	atomic_store(&a->reshape, rs);
	return 0;
}

/* ---- the start ----------------------------------------------------------------------- */

/* What must hold before anything is opened; meta_lock held. */
static int grow_check(struct graid_array *a, unsigned n)
{
	struct superblock sb;
	int rc;

	/*
	 * A job whose reshape is over (its routing gone, as graid_array_info() tells) may
	 * still be telling its end: not a refusal, the start below joins it.
	 */
	if (atomic_load(&a->reshape) || a->reshape_starting) {
		graid__log(GRAID_LOG_ERR, "grow: a reshape of this array is under way already");
		return -EBUSY;
	}
	if (a->nmembers + n > a->member_cap) {
		graid__log(GRAID_LOG_ERR, "grow: this open has room for %u more members, not %u; "
					  "close the array and open it again to add more",
			   a->member_cap - a->nmembers, n);
		return -E2BIG;
	}
	if (a->lay.nparity && a->journal) {
		/* Its entries are placed by one geometry: not built across two. */
		graid__log(GRAID_LOG_ERR, "grow: a RAID-%d with a write-hole journal cannot be "
					  "grown online by this build", a->lay.level);
		return -EOPNOTSUPP;
	}
	rc = grow10_check(a, a->nmembers + n);
	if (rc)
		return rc;
	for (unsigned r = 0; r < a->nmembers; r++)
		if (!array_role_alive(a, r)) {
			graid__log(GRAID_LOG_ERR, "grow: member %u (%s) is %s: a reshape starts "
						  "only with every member in", r,
				   a->members[r].dev.path,
				   member_state_name(atomic_load(&a->members[r].state)));
			return -EIO;
		}
	array_fill_sb(a, 0, &sb, 0);
	if (!sb_reshape_area_free(&sb)) {
		graid__log(GRAID_LOG_ERR, "grow: the reshape record's area (member bytes [%u, %u)) "
					  "is not free on this array (data at %" PRIu64 ")",
			   GRAID_SB_RESHAPE_OFFSET, GRAID_SB_RESHAPE_OFFSET + GRAID_SB_RESHAPE_BYTES,
			   a->data_offset);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Open and check every new device into @p m; meta_lock held. Nothing is written. */
static int grow_attach(struct graid_array *a, const char *const *paths, unsigned n,
		       struct member *m, unsigned *nopen)
{
	*nopen = 0;
	/*
	 * A device given twice, named before any is opened: once the first is attached (and
	 * locked), the second's open would fail -EBUSY, "in use by another open array".
	 */
	for (unsigned i = 0; i < n; i++) {
		dev_t di, dk;
		ino_t ii, ik;

		if (!paths[i])
			return -EINVAL;
		if (member_identity(paths[i], &di, &ii))
			continue; /* its open says why */
		for (unsigned k = 0; k < i; k++)
			if (!member_identity(paths[k], &dk, &ik) && dk == di && ik == ii) {
				graid__log(GRAID_LOG_ERR, "grow: %s given twice; no member was "
							  "changed", paths[i]);
				return -EEXIST;
			}
	}
	for (unsigned i = 0; i < n; i++) {
		int rc;

		rc = member_attach(a, &m[i], paths[i], (int)(a->nmembers + i));
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: %s refused (%s): no member was changed",
				   paths[i], graid_strerror(rc));
			return rc;
		}
		++*nopen;
		for (unsigned k = 0; k < i; k++)
			if (m[k].dev.devno == m[i].dev.devno && m[k].dev.ino == m[i].dev.ino) {
				graid__log(GRAID_LOG_ERR, "grow: %s given twice; no member was "
							  "changed", paths[i]);
				return -EEXIST;
			}
	}
	return 0;
}

/* The highest generation of this array's record on @p n members @p m (0: none). */
static uint64_t grow_top_generation(struct graid_array *a, struct member *m, unsigned n,
				    uint8_t *buf)
{
	uint64_t top = 0;

	for (unsigned i = 0; i < n; i++) {
		if (m[i].dev.fd < 0 ||
		    member_pio(&m[i], buf, 2 * RESHAPE_COPY_BYTES, GRAID_SB_RESHAPE_OFFSET, false))
			continue;
		for (unsigned b = 0; b < 2; b++) {
			struct reshape_record r;

			if (reshape_decode(buf + b * RESHAPE_COPY_BYTES, &r, NULL) == 0 &&
			    !memcmp(r.array_uuid, a->uuid, 16) && r.generation > top)
				top = r.generation;
		}
	}
	return top;
}

static void grow_record(struct graid_array *a, const struct member *added, unsigned n,
			uint64_t generation, bool to6, struct reshape_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	memcpy(rec->array_uuid, a->uuid, 16);
	rec->generation = generation;
	rec->position = 0;
	rec->phase = RESHAPE_PHASE_COPY;
	rec->direction = RESHAPE_FORWARD;
	rec->old_geo = (struct reshape_geom){ .level = (uint32_t)a->lay.level,
					      .nmembers = a->nmembers,
					      .chunk_bytes = a->lay.chunk,
					      .layout = RESHAPE_LAYOUT_DEFAULT,
					      .data_bytes = a->lay.member_bytes };
	rec->new_geo = rec->old_geo;
	rec->new_geo.nmembers = a->nmembers + n;
	if (to6) /* RAID-5 -> RAID-6 Q-last: the one added member holds Q (reshape_qlast.c) */
		reshape_qlast_geom(&rec->new_geo);
	rec->stage_role[0] = rec->stage_role[1] = RESHAPE_ROLE_NONE;
	rec->nadded = n;
	for (unsigned i = 0; i < n; i++)
		rec->added_id[i] = member_slot_id(added[i].dev.uuid);
}

/*
 * The first record, both blocks, durably: to the new devices first (not in a->members yet:
 * no superblock round may name them before the record is on them), then to every member
 * through reshape_rec_write(). No superblock says RESHAPE yet, so a tear loses nothing.
 */
static int grow_write_first(struct graid_array *a, struct reshape_job *j, struct member *m,
			    unsigned n, uint8_t *buf)
{
	int rc;

	reshape_encode(&j->rec, buf);
	memcpy(buf + RESHAPE_COPY_BYTES, buf, RESHAPE_COPY_BYTES);
	for (unsigned i = 0; i < n; i++) {
		rc = member_write_durable(&m[i], buf, 2 * RESHAPE_COPY_BYTES,
					  GRAID_SB_RESHAPE_OFFSET);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: writing the reshape record to %s: %s",
				   m[i].dev.path, graid_strerror(rc));
			return rc;
		}
	}
	rc = reshape_rec_write(a, &j->io, &j->rec, true);
	if (rc >= 0 && (unsigned)rc < a->nmembers)
		rc = -EIO; /* a member missed it (and was failed): not started */
	return rc < 0 ? rc : 0;
}

/* The new devices into roles old n .. old n + @p n - 1, the routing set; meta_lock held. */
static void grow_install(struct graid_array *a, struct member *m, unsigned n,
			 struct array_reshape *rs, struct reshape_job *j)
{
	unsigned base = a->nmembers;
	struct bbl_image empty; /* about 6 KiB: the caller's thread, not the job's */

	for (unsigned i = 0; i < n; i++) {
		struct member *d = &a->members[base + i];

		memcpy(&d->dev, &m[i].dev, sizeof(d->dev));
		member_role_reset(&d->role, member_slot_id(m[i].dev.uuid));
		/*
		 * RAID-5/6: its log, zeroed on the device (grow56_prep_added), is empty and this
		 * device's own, so that what the job records there (a loss moved to it) names its
		 * owner and is read back at the next open.
		 */
		if (a->lay.level) {
			memset(&empty, 0, sizeof(empty));
			memcpy(empty.member_uuid, m[i].dev.uuid, 16);
			badblocks_adopt(a, base + i, &empty);
		}
		atomic_store(&d->late_ios, 0);
		atomic_store(&d->timeouts, 0);
		atomic_store(&d->state, GRAID_MEMBER_ACTIVE);
	}
	/* Their tags kept before the count shows them (tag_store_add_role cannot fail here). */
	(void)reshape_csum_install(a, base, n);
	rs->prev = a->reshape_mem;
	a->reshape_mem = rs;
	a->reshape_job = j;
	/* The roles are whole before the count shows them (readers look without the lock). */
	atomic_thread_fence(memory_order_release);
	a->nmembers = base + n;
	/* Sequentially consistent: queue_route() counts a plain request, then looks. */
	atomic_store(&a->reshape, rs);
}

/*
 * The added roles' superblocks (recording the reshape, the new member count) at the
 * members' event E, before the round that writes every role's at E + 1. A crash among
 * these leaves every old member at E not reshaping: assembly prefers those among equals
 * (array_assemble.c assemble_freshest) and leaves the added devices out, the old geometry
 * whole at position 0. A crash in the round after leaves some old members at E, which
 * assembly takes as current (assemble_reshape_start_cut), and every added role has its
 * superblock (at E or E + 1: current). meta_lock held.
 */
static int grow_sb_added(struct graid_array *a, unsigned n)
{
	struct superblock sb;

	for (unsigned r = a->nmembers - n; r < a->nmembers; r++) {
		int rc;

		array_fill_sb(a, r, &sb, 0);
		rc = member_write_sb(&a->members[r], &sb);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: writing the superblock of %s: %s",
				   a->members[r].dev.path, graid_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static void grow_close_new(struct graid_array *a, struct member *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (a->pr_key)
			member_pr_release(&m[i], a->pr_key);
		member_close(&m[i]);
	}
}

/*
 * RAID-5/6: how much of the array's start is staged, and where. As little as makes one new
 * row safe at every later position (the least staging: k * k' chunks for one member
 * added); windows then move what is safe up to grow56_limit(), which grows with the
 * position. (the first added role, on
 * the rows past those the new geometry fills), into the first record, phase STAGING.
 * @return 0; -ENOSPC the added member has no room for it (logged); -EINVAL.
 */
static int grow56_plan_stage(struct reshape_record *rec)
{
	struct reshape_map m;
	uint64_t need, room;
	int rc = reshape_map_init(&m, rec);

	if (rc == 0)
		rc = reshape_stage_need(&m, reshape_window_unit(&m), &need);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "grow: no staging makes this reshape safe: %s",
			   graid_strerror(rc));
		return rc;
	}
	if (need == 0)
		return 0;
	room = reshape_stage_room(&m);
	if (need > room) {
		graid__log(GRAID_LOG_ERR, "grow: the first %" PRIu64 " bytes must be staged on the "
					  "added member, which has room for %" PRIu64 " past the "
					  "rows the new geometry fills; members too small to grow "
					  "online", need, room);
		return -ENOSPC;
	}
	rec->phase = RESHAPE_PHASE_STAGING;
	rec->stage_array_off = 0;
	rec->stage_bytes = need;
	rec->stage_role[0] = rec->old_geo.nmembers;
	rec->stage_member_off[0] = m.new_g.lay.member_bytes - room;
	return 0;
}

/*
 * Whether this build grows @p a's level: RAID-0, and RAID-5/6 where switched on; @p to6
 * (a RAID-5 to RAID-6 by @p n members): reshape_qlast_check()'s answer.
 */
static int grow_level_ok(const struct graid_array *a, unsigned n, bool to6)
{
	if (to6)
		return grow56_allowed() ? reshape_qlast_check(a, n) : -EOPNOTSUPP;
	if (reshape_qlast_no_grow(a))
		return -EOPNOTSUPP;
	if (a->lay.level == 0 || ((a->lay.level == 5 || a->lay.level == 6) && grow56_allowed()) ||
	    (a->lay.level == 10 && grow10_allowed()))
		return 0;
	graid__log(GRAID_LOG_ERR, "grow: RAID-%d cannot be grown online by this build; only "
				  "RAID-0%s%s can", a->lay.level, grow56_allowed() ? ", 5, 6" : "",
		   grow10_allowed() ? " and 10" : "");
	return -EOPNOTSUPP;
}

/*
 * The first record (its generation above any copy on the members or the new devices), its
 * staging (RAID-5/6), the job and the routing state: into *@p jp and *@p rsp, which the
 * caller frees on failure. @return 0; -ENOMEM; grow56_plan_stage()'s errors.
 */
static int grow_plan(struct graid_array *a, struct member *m, unsigned n, uint8_t *buf,
		     bool to6, struct reshape_job **jp, struct array_reshape **rsp)
{
	struct reshape_record rec;
	uint64_t top = grow_top_generation(a, a->members, a->nmembers, buf);
	uint64_t top_new = grow_top_generation(a, m, n, buf);
	int rc;

	grow_record(a, m, n, (top > top_new ? top : top_new) + 1, to6, &rec);
	rc = a->lay.nparity ? grow56_plan_stage(&rec) : 0;
	if (rc)
		return rc;
	*jp = grow_job_new(&rec);
	*rsp = *jp ? grow_routing(&rec) : NULL;
	return *rsp ? 0 : -ENOMEM;
}

/* reshape_grow_start(), or with @p to6 reshape_convert_start(): one start, in one order. */
static int grow_start(struct graid_array *a, const char *const *paths, unsigned n, bool wait,
		      bool to6)
{
	struct reshape_job *j = NULL, *done_job, *held = NULL;
	struct array_reshape *rs = NULL;
	struct member *m = NULL;
	uint8_t *buf = NULL;
	unsigned nopen = 0;
	bool starting = false;
	int rc;

	if (!a || !paths || n == 0 || n > GRAID_MAX_MEMBERS)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	rc = grow_level_ok(a, n, to6);
	if (rc)
		return rc;
	m = calloc(n, sizeof(*m));
	buf = aligned_alloc(ARRAY_ALIGN, 2 * RESHAPE_COPY_BYTES);
	if (!m || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&a->meta_lock);
	rc = grow_check(a, n);
	if (rc == 0)
		rc = grow_attach(a, paths, n, m, &nopen);
	/* An earlier grow of this open that ended: its job goes, its routing stays (requests). */
	done_job = rc == 0 ? a->reshape_job : NULL;
	a->reshape_starting = starting = rc == 0;
	pthread_mutex_unlock(&a->meta_lock);
	if (done_job) {
		reshape_job_stop(a);
		grow_job_free(a, done_job);
		a->reshape_job = NULL;
	}
	if (rc)
		goto out;
	rc = grow_plan(a, m, n, buf, to6, &j, &rs);
	if (rc == 0 && a->lay.level)
		rc = grow56_prep_added(a, m, n);
	if (rc == 0)
		rc = grow_write_first(a, j, m, n, buf);
	if (rc)
		goto out;
	pthread_mutex_lock(&a->meta_lock);
	a->reshape_starting = starting = false;
	grow_install(a, m, n, rs, j);
	nopen = 0; /* the array's now */
	rs = NULL;
	array_recount(a); /* the roles added counted, and published for looks */
	/* The added roles' superblocks at the members' event E, then every role's at E + 1. */
	rc = grow_sb_added(a, n);
	a->events++;
	if (rc == 0)
		rc = array_write_superblocks(a, 0);
	if (rc == 0)
		rc = reshape_job_launch(a);
	/*
	 * A caller that waits holds this job before meta_lock goes: a later grow's start (which
	 * frees an ended job) or a close would otherwise free it under the wait.
	 */
	if (rc == 0 && wait) {
		held = j;
		grow_job_hold(held);
	}
	j = NULL;
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		graid__log(GRAID_LOG_ERR, "grow: the superblock round that starts the reshape "
					  "failed: %s; requests go on by the recorded position",
			   graid_strerror(rc));
	else if (to6)
		graid__log(GRAID_LOG_NOTICE, "grow: RAID-5 of %u members becoming a RAID-6 of %u "
					     "(Q on the added member)", a->nmembers - n, a->nmembers);
	else
		graid__log(GRAID_LOG_NOTICE, "grow: RAID-%d of %u members growing to %u",
			   a->lay.level, a->nmembers - n, a->nmembers);
out:
	if (starting) {
		pthread_mutex_lock(&a->meta_lock);
		a->reshape_starting = false;
		pthread_mutex_unlock(&a->meta_lock);
	}
	if (j)
		grow_job_free(a, j);
	free(rs);
	grow_close_new(a, m, nopen);
	free(m);
	free(buf);
	if (held)
		rc = grow_job_wait_held(held);
	return rc;
}

int reshape_grow_start(struct graid_array *a, const char *const *paths, unsigned n, bool wait)
{
	return grow_start(a, paths, n, wait, false);
}

int reshape_convert_start(struct graid_array *a, const char *const *paths, unsigned n,
			  bool wait)
{
	return grow_start(a, paths, n, wait, true);
}
