/* SPDX-License-Identifier: MIT */
/*
 * Moving an array's data to its grown geometry (docs/RESHAPE.md): the routing state and the
 * job's making, the windows (RAID-0 and RAID-10 chunk by chunk: a window writes only places
 * whose old chunks were moved already, so no staging; RAID-5/6 whole new rows, the first
 * ones staged), the record after each, the finish, and the resume at open. The start is in
 * reshape_start.c, the job's thread in reshape_job.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/reshape_grow.h"
#include "jobs/reshape_csum.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_live.h"
#include "jobs/reshape_qlast.h"
#include "jobs/reshape_stage.h"
#include "meta/array_meta.h"
#include "meta/array_readerr.h"
#include "meta/badblocks.h"
#include "meta/live.h"
#include "meta/member_fail.h"
#include "meta/journal.h"
#include "meta/stripe_lock.h"

#if GRAID_FAULT_INJECTION
/*
 * Test seam (tests/test_reshape_grow56.c): while true, a job waits before it moves anything
 * (what an open did before it shows).
 */
atomic_bool graid__test_grow56_hold;
#endif

/* The routing state of @p rec's two geometries, at its position (array.h). */
struct array_reshape *grow_routing(const struct reshape_record *rec)
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

struct reshape_job *grow_job_new(const struct reshape_record *rec)
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

int grow_should_stop(struct graid_array *a, struct reshape_job *j)
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
int grow_wait_plain(struct graid_array *a, struct reshape_job *j,
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
		if ((rc = reshape_io_queue(&j->rio, one.member, false, one.buf + at, BBL_UNIT,
					   one.off + at)) != 0)
			return rc;
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
		if ((rc = reshape_io_queue(&j->rio, from[k].member, false,
					   j->buf + (size_t)k * chunk, chunk,
					   from[k].member_off)) != 0)
			return rc;
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
		rc = reshape_io_queue(&j->rio, to[k].member, true, j->buf + (size_t)k * chunk,
				      chunk, to[k].member_off);
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
 * RAID-5/6 staging (reshape_stage.c), the copy's member checked first: without it the job
 * stops before the staging, the record keeping its phase.
 */
int grow56_stage(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	int rc = grow56_paused(a, j, rs, true);

	return rc ? rc : grow56_stage_run(a, j, rs);
}

/* Windows of RAID-5/6 move at least this many new rows when safe (and chunks, as RAID-0). */
#define GROW56_WINDOW_ROWS 4u

/*
 * RAID-5/6: the added devices' bad-block logs empty and their copies of the bitmap and the
 * live map the members' (they held whatever the devices held), before anything names them.
 */
int grow56_prep_added(struct graid_array *a, struct member *m, unsigned n)
{
	int rc = 0;

	/* Checksums: their tag areas written, never-written tags (reshape_csum.c). */
	rc = reshape_csum_prep_added(a, m, n);
	/*
	 * The journal: room for their roles, and each device's log voided below the next
	 * update's number, as for a member that joins (an earlier life's entries are not ours).
	 */
	if (rc == 0)
		rc = journal_add_roles(a, a->nmembers + n);
	for (unsigned i = 0; rc == 0 && a->journal && i < n; i++)
		rc = journal_reset_member(a, &m[i]);
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
int grow56_window(struct graid_array *a, struct reshape_job *j,
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
int grow_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
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
	/* RAID-10: a long run of unused chunks, one window (reshape_grow10.c). */
	if (rs->old_lay.level == 10 && (rc = grow10_skip_window(a, j, rs)) != 0)
		return rc < 0 ? rc : 0;
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
 * The write-hole journal before the round that ends a grow: every update logged so far
 * ended and its entries void on every member (journal_void_below). The old geometry's are
 * spent once the rows moved (journal_replay.c), but a reader that predates the entries'
 * `geometry` would replay them whole, and it opens the array once the round is on the
 * members (docs/JOURNAL.md, "Across a grow"). The wait is as long as the requests in flight
 * take, as the windows' is; a stop leaves FINISHING to the next open, which settles it.
 */
static int grow_journal_settle(struct graid_array *a, struct reshape_job *j)
{
	const struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };
	uint64_t want = journal_claimed(a);
	int rc;

	while ((rc = journal_void_below(a, want)) > 0) {
		rc = grow_should_stop(a, j);
		if (rc)
			return rc;
		nanosleep(&ms, NULL);
	}
	/* The job's stop says what comes of it (reshape_job.c: tried again, or stopped). */
	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: voiding the journal's entries before the end: "
					  "%s", graid_strerror(rc));
	return rc;
}

/*
 * Every byte is in the new geometry: record FINISHING, then one superblock round without
 * RESHAPE (major 1 again) at a new event, and the array's new size for callers. A crash in
 * the round leaves members at E (major 3) and E + 1 (major 1) with one geometry, and the
 * freshest wins; a crash before it resumes into this finish.
 */
int grow_finish(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
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
	if (rc == 0)
		rc = grow_journal_settle(a, j);
	/*
	 * The live-data map needs nothing here: RAID-5/6 marked each new row's region used
	 * before live data was written there (reshape_live.c); RAID-10's regions are array
	 * chunks, the same in both geometries; RAID-0 keeps no map.
	 */
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


/*
 * Whether RAID-5/6 grows start and resume (docs/RESHAPE.md, "RAID-5/6 growing, as built").
 * 0 turns them off for callers (-EOPNOTSUPP, and the open refuses their records); tests
 * then switch them on with graid__test_grow56. On since the six findings of the review
 * that had it off were fixed (docs/RESHAPE.md, "Why RAID-5/6 growing was off").
 */
#define GROW56_BUILT 1

/*
 * Whether RAID-5/6 arrays with checksums grow (docs/RESHAPE.md, "Checksums across a grow").
 * 0 turns them off for callers (-EOPNOTSUPP); tests then switch them on with
 * graid__test_grow_csum. On since the four findings of the review that had it off were
 * fixed (the added roles' tags, tag read errors, RAID-6 with two roles out, the job queue's
 * words).
 */
#define GROW_CSUM_BUILT 1

#if GRAID_FAULT_INJECTION
bool graid__test_grow56;
bool graid__test_grow_csum;
/* Tests: checksummed RAID-5/6 grows off as in a build with GROW_CSUM_BUILT 0 (wins). */
bool graid__test_grow_csum_off;
#endif

bool grow56_allowed(void)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_grow56)
		return true;
#endif
	return GROW56_BUILT;
}

bool grow_csum_allowed(void)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_grow_csum_off)
		return false;
	if (graid__test_grow_csum)
		return true;
#endif
	return GROW_CSUM_BUILT;
}

/*
 * A RAID-5/6 grow (or RAID-5 -> 6 Q-last) of an array with checksums (@p csum) only where
 * this build grows those too (finding 6 of the switch-on's review: a build with
 * GROW_CSUM_BUILT 0 must not go on with one another build started).
 */
static bool grow56_resumable(bool csum)
{
	if (!grow56_allowed())
		return false;
	if (csum && !grow_csum_allowed()) {
		graid__log(GRAID_LOG_ERR, "open: the reshape is a checksummed RAID-5/6 grow, which "
					  "this build does not run (GROW_CSUM_BUILT is 0 in it)");
		return false;
	}
	return true;
}

bool reshape_grow_resumable(const struct reshape_record *r, bool csum)
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
		return grow56_resumable(csum);
	if (level != r->new_geo.level || r->new_geo.layout != RESHAPE_LAYOUT_DEFAULT)
		return false;
	if (level == 0 || (level == 10 && grow10_allowed()))
		return r->stage_bytes == 0 &&
		       (r->phase == RESHAPE_PHASE_COPY || r->phase == RESHAPE_PHASE_FINISHING);
	/* RAID-5/6: every phase (STAGED is finished by the open, reshape_job_launch). */
	return (level == 5 || level == 6) && grow56_resumable(csum);
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

