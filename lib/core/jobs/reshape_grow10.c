/* SPDX-License-Identifier: MIT */
/*
 * Growing a RAID-10 online: the member I/O of a window (chunks read from one old copy,
 * written to both new ones), and the region maps, which number array chunks and so grow
 * with the array. Windows, records, the finish and the resume are reshape_grow.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format/layout.h"
#include "io/quiesce.h"
#include "jobs/jobs.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_live.h"
#include "meta/array_readerr.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/array_meta.h"
#include "meta/live.h"
#include "meta/member_fail.h"
#include "meta/region_map.h"
#include "meta/stripe_lock.h"

/*
 * Whether RAID-10 grows start and resume: 0 turns them off for callers (-EOPNOTSUPP, the
 * open refusing their records); fault-injection builds' tests turn them on whatever it is.
 */
#define GROW10_BUILT 1

#if GRAID_FAULT_INJECTION
bool graid__test_grow10;
/* Test seam: the grow start does not coarsen the maps (the refusal as before it did). */
bool graid__test_grow10_no_coarsen;
/*
 * Test seam: called by grow10_skip_window between its look at chunks [c0, c1) (all unused)
 * and its locks (a test writes into one there: the race the look under the locks catches).
 */
void (*graid__test_grow10_skip_look)(struct graid_array *a, uint64_t c0, uint64_t c1);
#endif

bool grow10_allowed(void)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_grow10)
		return true;
#endif
	return GROW10_BUILT;
}

/* One chunk of a window: its two old copies, its two new ones, and what it lost. */
struct grow10_chunk {
	uint64_t c;
	unsigned om[2], nm[2];
	uint64_t oo[2], no[2];
	unsigned src;           /* the old copy read whole; 2: read unit by unit */
	struct bbl_cols lost;   /* units neither old copy has */
	bool zero;              /* in an unused region: not read, its new copies zeroed */
};

/* A role of the new geometry is out: the job writes around it, marking the chunks. */
static bool grow10_degraded(const struct graid_array *a, const struct array_reshape *rs)
{
	return grow56_dead_member(a, rs) < a->nmembers;
}

/* Copy @p k of @p x can give the whole chunk: its member readable, its log clean there. */
static bool grow10_copy_clean(struct graid_array *a, const struct grow10_chunk *x, unsigned k,
			      uint32_t chunk)
{
	return array_role_readable(a, x->om[k], x->oo[k] + chunk) &&
	       !badblocks_overlap(a, x->om[k], x->oo[k], chunk);
}

/*
 * Chunk @p x unit by unit (rare: a copy out, logged or unreadable): each 4 KiB unit from the
 * first old copy that is readable, not logged there, and reads; a unit none gives is lost
 * (zeroes in @p buf, set in x->lost). A copy whose read fails other than by a medium error
 * was taken out by the read (reshape_io); a medium error keeps its member. A read that
 * failed and neither took its member out nor was a medium error (the job's ring broke)
 * says nothing about the unit: -EIO, the job stops before any loss is recorded.
 */
static int grow10_read_units(struct graid_array *a, struct reshape_io *rio,
			     struct grow10_chunk *x, uint32_t chunk, uint8_t *buf)
{
	for (uint32_t u = 0; u < chunk / BBL_UNIT; u++) {
		uint8_t *at = buf + (size_t)u * BBL_UNIT;
		bool got = false;

		for (unsigned k = 0; !got && k < 2; k++) {
			uint64_t off = x->oo[k] + (uint64_t)u * BBL_UNIT;
			size_t n;
			int rc;

			if (!array_role_readable(a, x->om[k], off + BBL_UNIT) ||
			    badblocks_overlap(a, x->om[k], off, BBL_UNIT))
				continue;
			rc = reshape_io_queue(rio, x->om[k], false, at, BBL_UNIT, off);
			if (rc)
				return rc;
			rc = reshape_io_run(rio, "reading 4 KiB of a chunk to move from", &n);
			if (atomic_load(&a->broken))
				return -EIO;
			if (rc && rc != -ENODATA && rc != -EIO)
				return rc; /* the ring broke */
			got = n == 1 && rio->ios[0].res == (int)BBL_UNIT;
			if (!got && (n != 1 || !rio->ios[0].media) &&
			    array_role_readable(a, x->om[k], off + BBL_UNIT))
				return -EIO;
		}
		if (!got) {
			bbl_cols_set(&x->lost, u);
			memset(at, 0, BBL_UNIT);
		}
	}
	return 0;
}

/*
 * The reads of a window's @p n chunks, at once, each from a clean copy (the less loaded
 * member's where both are); then the chunks
 * without one, or whose read failed, unit by unit. A medium error counts against its
 * member (taken out past its threshold) and the chunk is read around it.
 */
static int grow10_read(struct graid_array *a, struct reshape_io *rio, struct grow10_chunk *x,
		       unsigned n, uint32_t chunk, uint8_t *buf)
{
	unsigned at[GROW10_WINDOW_CHUNKS], nio = 0, load[GRAID_MAX_MEMBERS] = { 0 };
	size_t got = 0;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		bool c0, c1;

		if (x[i].zero)
			continue; /* src 0: nothing to read unit by unit either */
		/*
		 * Both copies clean: the one whose member has fewer of the window's reads. Copy 0
		 * every time left half the members of an even count reading everything (near-2:
		 * copy 0 of chunk c on member 2c mod n) and the other half idle. Either copy is
		 * safe to read, now and after a crash: a window never writes over an old copy
		 * of a chunk not yet moved (reshape_map.c row_overlaps), and two clean copies
		 * hold the same bytes while the job runs (an unclean open resyncs in the
		 * foreground before the job starts, and a grow is refused while a resync is
		 * pending: no region is left where only one copy is the truth).
		 */
		c0 = grow10_copy_clean(a, &x[i], 0, chunk);
		c1 = grow10_copy_clean(a, &x[i], 1, chunk);
		x[i].src = c0 && c1 ? (load[x[i].om[1]] < load[x[i].om[0]] ? 1 : 0)
			 : c0 ? 0 : c1 ? 1 : 2;
		if (x[i].src == 2)
			continue;
		load[x[i].om[x[i].src]]++;
		rc = reshape_io_queue(rio, x[i].om[x[i].src], false, buf + (size_t)i * chunk,
				      chunk, x[i].oo[x[i].src]);
		if (rc)
			return rc;
		at[nio++] = i;
	}
	rc = nio ? reshape_io_run(rio, "reading chunks to move from", &got) : 0;
	if (atomic_load(&a->broken))
		return -EIO;
	if (rc && rc != -ENODATA && rc != -EIO)
		return rc;
	for (size_t k = 0; k < got; k++) {
		struct mbio *io = &rio->ios[k];

		if (io->res == (int)chunk)
			continue;
		x[at[k]].src = 2;
		if (io->media && !array_member_read_error(a, io->member, &io->fault, io->res))
			array_member_io_failed(a, io->member, io->fault.fd, io->res);
	}
	for (size_t k = got; k < nio; k++)
		x[at[k]].src = 2; /* not issued: the ring broke under them */
	for (unsigned i = 0; i < n; i++) {
		if (x[i].src != 2)
			continue;
		rc = grow10_read_units(a, rio, &x[i], chunk, buf + (size_t)i * chunk);
		if (rc)
			return rc;
	}
	return atomic_load(&a->broken) ? -EIO : 0;
}

/*
 * Both new copies of each chunk, at once (members out skipped); each place taken has its
 * log made true (reshape_carry_loss); @p written marks the members written.
 */
static int grow10_write(struct graid_array *a, struct reshape_io *rio, struct grow10_chunk *x,
			unsigned n, uint32_t chunk, uint8_t *buf, bool *written)
{
	struct grow10_chunk *of[2 * GROW10_WINDOW_CHUNKS];
	size_t nio = 0, got = 0;
	int rc;

	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 2; k++) {
			if (!array_role_writable(a, x[i].nm[k]) || x[i].zero)
				continue;
			rc = reshape_io_queue(rio, x[i].nm[k], true, buf + (size_t)i * chunk,
					      chunk, x[i].no[k]);
			if (rc)
				return rc;
			of[nio++] = &x[i];
		}
	rc = nio ? reshape_io_run(rio, "writing moved chunks to", &got) : 0;
	if (atomic_load(&a->broken))
		return -EIO;
	if (rc && rc != -EIO)
		return rc;
	rc = 0;
	if (got != nio)
		return -EIO; /* the ring broke under them */
	for (size_t k = 0; rc == 0 && k < got; k++) {
		const struct mbio *io = &rio->ios[k];

		/*
		 * A write that failed took its member out (reshape_io), and the window is
		 * marked for it; one that failed and left it in (the ring broke) stops the job
		 * before the record, as a copy missing from a live member would be believed.
		 */
		if (io->res != (int)chunk && array_role_writable(a, io->member))
			return -EIO;
		if (io->res != (int)chunk)
			continue;
		written[io->member] = true;
		rc = reshape_carry_loss(a, io->member, a->members[io->member].dev.fd, io->off,
					chunk, &of[k]->lost);
	}
	/*
	 * A chunk of an unused region reads zero in its old places (and stays so: its lock is
	 * the window's): its new copies are zeroed, by deallocation, not written. A zeroing that
	 * fails took its member out (the window is marked for it, as for a failed write).
	 */
	for (unsigned i = 0; rc == 0 && i < n; i++)
		for (unsigned k = 0; x[i].zero && k < 2; k++) {
			if (!array_role_writable(a, x[i].nm[k]))
				continue;
			if (grow_zero_place(a, x[i].nm[k], x[i].no[k], chunk) == 0)
				written[x[i].nm[k]] = true;
			else if (atomic_load(&a->broken))
				return -EIO;
		}
	return rc;
}

int grow10_move(struct graid_array *a, struct reshape_io *rio, const struct array_reshape *rs,
		uint64_t c0, uint64_t c1, uint8_t *buf)
{
	uint32_t chunk = rs->old_lay.chunk;
	struct grow10_chunk x[GROW10_WINDOW_CHUNKS];
	bool written[GRAID_MAX_MEMBERS] = { false };
	bool marked = grow10_degraded(a, rs);
	unsigned n = 0;
	int rc = 0;

	if (c1 - c0 > GROW10_WINDOW_CHUNKS)
		return -EINVAL;
	/* Written around a role that is out: its catch-up after the finish needs the mark. */
	if (marked)
		rc = grow56_mark_rows(a, c0, c1);
	for (uint64_t c = c0; c < c1; c++) {
		struct grow10_chunk *y = &x[n];

		memset(y, 0, sizeof(*y));
		y->c = c;
		layout_copies(&rs->old_lay, c * chunk, y->om, y->oo);
		layout_copies(&rs->new_lay, c * chunk, y->nm, y->no);
		/* The first chunks stay where they are (a new copy on an old place is rewritten). */
		/* Its region unused: its bytes are zero (docs/RESHAPE.md, "RAID-10 growing"). */
		y->zero = a->live && live_stripe_unused(a, c);
		if (y->om[0] != y->nm[0] || y->oo[0] != y->no[0] || y->om[1] != y->nm[1] ||
		    y->oo[1] != y->no[1])
			n++;
	}
	if (rc == 0)
		rc = grow10_read(a, rio, x, n, chunk, buf);
	if (rc == 0)
		rc = grow10_write(a, rio, x, n, chunk, buf, written);
	/* A member that went out during the window (anyone's I/O): marked before the record. */
	if (rc == 0 && !marked && grow10_degraded(a, rs))
		rc = grow56_mark_rows(a, c0, c1);
	/* Flushed (a failure takes the member out and marks the chunks), the logs' clears synced. */
	if (rc == 0)
		rc = grow56_flush(a, written, c0, c1);
	return rc;
}

/*
 * A long run of unused chunks from @p c0 (at most GROW10_SKIP_CHUNKS and the moved chunks'
 * end): their new copies zeroed, a deallocation a member (its places of the run are one
 * range: slots in row-major order), @p written set. The caller holds the run's locks and
 * checked every chunk unused under them. Members out skipped, the run marked in the bitmap
 * for them (before, or after a zeroing that failed took one out).
 */
static int grow10_zero_run(struct graid_array *a, const struct array_reshape *rs, uint64_t c0,
			   uint64_t c1, bool *written)
{
	uint32_t chunk = rs->old_lay.chunk;
	uint64_t lo[GRAID_MAX_MEMBERS], hi[GRAID_MAX_MEMBERS];
	bool marked = grow10_degraded(a, rs), any[GRAID_MAX_MEMBERS] = { false };
	int rc = marked ? grow56_mark_rows(a, c0, c1) : 0;

	for (uint64_t c = c0; c < c1; c++) {
		unsigned nm[2];
		uint64_t no[2];

		layout_copies(&rs->new_lay, c * chunk, nm, no);
		for (unsigned k = 0; k < 2; k++) {
			if (!any[nm[k]] || no[k] < lo[nm[k]])
				lo[nm[k]] = no[k];
			if (!any[nm[k]] || no[k] > hi[nm[k]])
				hi[nm[k]] = no[k];
			any[nm[k]] = true;
		}
	}
	for (unsigned m = 0; rc == 0 && m < rs->new_lay.nmembers; m++) {
		if (!any[m] || !array_role_writable(a, m))
			continue;
		if (grow_zero_place(a, m, lo[m], hi[m] + chunk - lo[m]) == 0)
			written[m] = true;
		else if (atomic_load(&a->broken))
			return -EIO;
	}
	if (rc == 0 && !marked && grow10_degraded(a, rs))
		rc = grow56_mark_rows(a, c0, c1);
	return rc;
}

int grow10_skip_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs)
{
	uint32_t chunk = rs->old_lay.chunk;
	uint64_t c0 = j->rec.position / chunk, end = rs->end / chunk, n = 0;
	/* Two new copies a chunk zeroed: at most GROW56_LIVE_SKIP_BYTES of them a window. */
	uint64_t most = GROW56_LIVE_SKIP_BYTES / (2ull * chunk) < GROW10_SKIP_CHUNKS
			? GROW56_LIVE_SKIP_BYTES / (2ull * chunk) : GROW10_SKIP_CHUNKS;
	bool written[GRAID_MAX_MEMBERS] = { false };
	struct reshape_record rec;
	unsigned *held, nheld;
	int rc;

	if (!a->live)
		return 0;
	while (n < most && c0 + n < end && live_stripe_unused(a, c0 + n))
		n++;
	if (n <= GROW10_WINDOW_CHUNKS)
		return 0; /* a window of its own: its chunks zeroed in it (grow10_move) */
#if GRAID_FAULT_INJECTION
	if (graid__test_grow10_skip_look)
		graid__test_grow10_skip_look(a, c0, c0 + n);
#endif
	held = calloc(n, sizeof(*held));
	if (!held)
		return -ENOMEM;
	nheld = grow_lock(a, c0, c0 + n, held, 0);
	/*
	 * A write marked one since the look: nothing done here (not recorded: that chunk's
	 * data is not in the new geometry), a window of its own next.
	 */
	rc = 0;
	for (uint64_t c = c0; rc == 0 && c < c0 + n; c++)
		if (!live_stripe_unused(a, c))
			rc = -EAGAIN;
	if (rc == 0)
		rc = grow10_zero_run(a, rs, c0, c0 + n, written);
	if (rc == 0)
		rc = grow56_flush(a, written, c0, c0 + n);
	if (rc == 0) {
		rec = j->rec;
		rec.position = (c0 + n) * chunk;
		rc = grow_record_next(a, j, &rec);
	}
	if (rc == 0) {
		atomic_store_explicit(&rs->position, rec.position, memory_order_release);
		j->pace_skipped += n * chunk; /* nothing written but deallocations */
		rc = 1;
	}
	for (unsigned k = 0; k < nheld; k++)
		stripe_unlock(a, held[k]);
	free(held);
	return rc == -EAGAIN ? 0 : rc;
}

int grow10_check(struct graid_array *a, unsigned new_n)
{
	struct layout nl;
	uint64_t chunks;
	const struct region_map *maps[2] = { a->bitmap.enabled ? &a->bitmap.map : NULL,
					     a->live ? &a->live->map : NULL };

	if (a->lay.level != 10)
		return 0;
	if (a->csum) {
		graid__log(GRAID_LOG_ERR, "grow: a RAID-10 with checksums cannot be grown online by "
					  "this build (its tags are placed by one geometry)");
		return -EOPNOTSUPP;
	}
	if (layout_init(&nl, 10, new_n, a->lay.chunk, a->lay.member_bytes))
		return -EINVAL;
	chunks = nl.array_bytes / nl.chunk;
	for (unsigned i = 0; i < 2; i++) {
		const struct region_map *m = maps[i];

		/* Coarsened by grow10_maps_fit() before this look wherever a coarser map fits. */
		if (!m || chunks / m->region_stripes + (chunks % m->region_stripes != 0) <= m->cap)
			continue;
		graid__log(GRAID_LOG_ERR, "grow: the %s has room for %" PRIu64 " regions of %" PRIu64
					  " chunks, and %u members would need more; the array "
					  "cannot grow that far online", m->kind->name, m->cap,
			   m->region_stripes, new_n);
		return -ENOSPC;
	}
	return 0;
}

/* The array chunks of a RAID-10 of @p new_n members like @p a's; 0: no such layout. */
static uint64_t grow10_chunks(const struct graid_array *a, unsigned new_n)
{
	struct layout nl;

	if (layout_init(&nl, 10, new_n, a->lay.chunk, a->lay.member_bytes))
		return 0;
	return nl.array_bytes / nl.chunk;
}

/*
 * What must hold for a coarsening, meta_lock held, the array quiesced: nothing else that
 * reads the maps by region number running (a reshape, a scrub, a resync still pending, a
 * replace: refused, -EBUSY, as the grow would be or should wait for).
 */
static int grow10_coarsen_ok(struct graid_array *a)
{
	const char *what = NULL;

	if (atomic_load(&a->reshape) || a->reshape_starting)
		what = "a reshape";
	else
		what = array_row_job_running(a);
	if (what) {
		graid__log(GRAID_LOG_ERR, "grow: the region maps must be coarsened for this grow, "
					  "and %s is under way: try again after it", what);
		return -EBUSY;
	}
	return 0;
}

/*
 * The coarsening itself, meta_lock held, the array quiesced: both maps made coarse (their
 * OR images written), the superblocks recording the new sizes, then the coarse images
 * alone. Given up before the superblock round ended well: both maps back to their fine
 * sizes in memory (the members hold the fine maps or the OR images: supersets of them).
 */
static int grow10_coarsen_locked(struct graid_array *a, unsigned kb, unsigned kl)
{
	struct region_map_undo bu, lu;
	uint64_t bwas = a->bitmap.enabled ? a->bitmap.map.region_stripes : 0;
	uint64_t lwas = a->live ? a->live->map.region_stripes : 0;
	int rc = grow10_coarsen_ok(a);

	memset(&bu, 0, sizeof(bu));
	memset(&lu, 0, sizeof(lu));
	if (rc == 0)
		rc = bitmap_coarsen(a, kb, &bu);
	if (rc == 0)
		rc = live_coarsen(a, kl, &lu);
	if (rc == 0) {
		a->events++;
		rc = array_write_superblocks(a, 0);
	}
	if (rc) {
		bitmap_coarsen_undo(a, &bu);
		live_coarsen_undo(a, &lu);
		graid__log(GRAID_LOG_ERR, "grow: coarsening the region maps failed: %s; they keep "
					  "their sizes", graid_strerror(rc));
		return rc;
	}
	/* A copy left with the OR image is a superset at the new size: logged, not an error. */
	if (a->bitmap.enabled)
		(void)region_map_coarsen_finish(a, &a->bitmap.map, &bu);
	if (a->live)
		(void)region_map_coarsen_finish(a, &a->live->map, &lu);
	graid__log(GRAID_LOG_NOTICE, "grow: region maps coarsened for %u members: the bitmap's "
				     "regions %" PRIu64 " chunks (were %" PRIu64 "), the live-data "
				     "map's %" PRIu64 " (were %" PRIu64 ")",
		   a->nmembers, a->bitmap.enabled ? a->bitmap.map.region_stripes : 0, bwas,
		   a->live ? a->live->map.region_stripes : 0, lwas);
	return 0;
}

int grow10_maps_fit(struct graid_array *a, unsigned new_n)
{
	uint64_t chunks;
	unsigned kb = 0, kl = 0;
	int rc;

	if (a->lay.level != 10 || a->csum || new_n > a->member_cap)
		return 0; /* grow10_check() or grow_check() says why not */
	chunks = grow10_chunks(a, new_n);
	if (!chunks)
		return 0;
	if ((a->bitmap.enabled && region_map_doublings(&a->bitmap.map, chunks, &kb)) ||
	    (a->live && region_map_doublings(&a->live->map, chunks, &kl)))
		return 0; /* no size fits: grow10_check() refuses, -ENOSPC */
#if GRAID_FAULT_INJECTION
	if (graid__test_grow10_no_coarsen)
		return 0;
#endif
	if (!kb && !kl)
		return 0;
	/* A member out: the grow refuses that (grow_check, -EIO); nothing to change for it. */
	for (unsigned r = 0; r < a->nmembers; r++)
		if (!array_role_alive(a, r))
			return 0;
	/* No rebuild pass while the sizes change (it reads the bitmap by region number). */
	if (pthread_mutex_trylock(&a->rebuild_lock)) {
		graid__log(GRAID_LOG_ERR, "grow: the region maps must be coarsened for this grow, "
					  "and a rebuild is under way: try again after it");
		return -EBUSY;
	}
	rc = array_quiesce(a, QUIESCE_DRAIN_NS);
	if (rc == 0) {
		pthread_mutex_lock(&a->meta_lock);
		rc = grow10_coarsen_locked(a, kb, kl);
		pthread_mutex_unlock(&a->meta_lock);
		array_unquiesce(a);
	} else {
		graid__log(GRAID_LOG_ERR, "grow: the array could not be quiesced to coarsen its "
					  "region maps: %s", graid_strerror(rc));
	}
	pthread_mutex_unlock(&a->rebuild_lock);
	/* The worker's jobs held by the quiesce look again now rather than at their next tick. */
	pthread_mutex_lock(&a->meta_lock);
	pthread_cond_broadcast(&a->worker_cond);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

int grow10_maps_grow(struct graid_array *a, const struct array_reshape *rs)
{
	uint64_t chunks = rs->new_lay.array_bytes / rs->new_lay.chunk;
	int rc = a->bitmap.enabled ? region_map_grow(&a->bitmap.map, chunks) : 0;

	if (rc == 0 && a->live)
		rc = region_map_grow(&a->live->map, chunks);
	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: the region maps have no room for %" PRIu64
					  " chunks", chunks);
	return rc;
}

uint64_t grow10_tail_row(const struct array_reshape *rs, unsigned m)
{
	uint64_t slots = 2 * (rs->end / rs->new_lay.chunk);
	unsigned n = rs->new_lay.nmembers;

	return slots > m ? (slots - m + n - 1) / n : 0;
}
