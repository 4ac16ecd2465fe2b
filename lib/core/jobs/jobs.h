/* SPDX-License-Identifier: MIT */
/* The array's background jobs and its worker: roles, spares, rebuild, resync, journal replay, unreachable members. */
#ifndef LIBGRAID_CORE_JOBS_H
#define LIBGRAID_CORE_JOBS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "array/array.h"
#include "member/member_replace.h"

/*
 * What every call that changes the array's roles or runs its jobs asks first: 0, -EROFS a
 * read-only open, or -ESTALE another host took the array over.
 */
static inline int array_may_change(const struct graid_array *a)
{
	if (a->read_only)
		return -EROFS;
	return array_foreign(a) ? -ESTALE : 0;
}

/*
 * The job under way that places rows by a->lay alone and so must end before the geometry
 * changes (a grow's start, a RAID-10 grow's coarsening, a level conversion): a scrub, a
 * replace in service (set up or copying), the resync after an unclean shutdown (pending,
 * or running in the background). Its name for a log line ("a scrub"), or NULL. A reshape
 * is the caller's own check (a grow's start sets reshape_starting itself).
 */
static inline const char *array_row_job_running(struct graid_array *a)
{
	struct array_replace *r = atomic_load(&a->replace);

	if (atomic_load(&a->scrubs_running))
		return "a scrub";
	/* a->replace stays set until close after a replace ended (replace.c): only a live one. */
	if (atomic_load(&a->replace_role) || (r && !atomic_load(&r->finished)))
		return "a replace";
	if (a->resync_background ||
	    (a->bitmap.enabled && atomic_load(&a->bitmap.resync_from) != UINT64_MAX))
		return "the resync after an unclean shutdown";
	return NULL;
}

/*
 * Whether a RAID-5/6 or RAID-10 reshape is moving data (its routing set): rebuilds,
 * background resyncs, scrubs, replaces and spare takeovers place rows by a->lay alone,
 * which is only the old geometry's half of the array then, so they wait until it has
 * finished (docs/RESHAPE.md, "RAID-5/6 growing, as built"; the resync at open runs by
 * position). RAID-0 has none of them. A quiesced array (io/quiesce.h) holds them too: a
 * quiesce changes what they read without a lock (a RAID-10 grow's coarser region maps).
 */
static inline bool array_reshape_holds_jobs(const struct graid_array *a)
{
	return (a->lay.level != 0 && atomic_load(&a->reshape) != NULL) ||
	       atomic_load(&a->quiesced);
}

/*
 * The geometry that holds array chunk @p c of a RAID-10 now: a grow's new one below its
 * position, else its old one (a->lay); a->lay when none runs. Stable while the chunk's
 * stripe lock (RAID-10's stripe numbering) is held: the job moves a chunk only under it.
 */
static inline const struct layout *reshape_chunk_layout(const struct graid_array *a,
							uint64_t c)
{
	const struct array_reshape *rs = a->lay.level == 10 ? atomic_load(&a->reshape) : NULL;

	if (rs && c * rs->old_lay.chunk < atomic_load_explicit(&rs->position,
							       memory_order_acquire))
		return &rs->new_lay;
	return &a->lay;
}

/*
 * The geometry that holds member-offset row @p row of a RAID-5/6 reshape @p rs whole now
 * (docs/RESHAPE.md, "Resync by position"): the new one for rows with bytes below the
 * position (a window writes new rows whole), the old one for rows with bytes at or past it
 * (a window writes over an old row only once all of it has moved), NULL for rows dead in
 * both (moved, not yet written as new rows: a window writes them whole, parity with them)
 * and for old rows holding fenced bytes only (rewritten whole from the staged copy). An old
 * row with fenced bytes and bytes past the fence is old: the staging writes no row that
 * holds a byte past it (new rows [0, S / new_unit) lie inside old rows [0, (S - 1) /
 * old_unit], and the last of those is never written, k' > k), and requests keep its
 * parity. Stable while the row's stripe lock is held: a window moving bytes of either row
 * holds it.
 */
static inline const struct layout *reshape_row_layout(const struct array_reshape *rs,
						      uint64_t row)
{
	uint64_t pos = atomic_load_explicit(&rs->position, memory_order_acquire);
	uint64_t fence = atomic_load_explicit(&rs->fence, memory_order_acquire);
	uint64_t new_unit = (uint64_t)rs->new_lay.chunk * rs->new_lay.ndata;
	uint64_t old_unit = (uint64_t)rs->old_lay.chunk * rs->old_lay.ndata;

	if (row * new_unit < pos)
		return &rs->new_lay;
	if ((row + 1) * old_unit > (pos > fence ? pos : fence))
		return &rs->old_lay;
	return NULL;
}

/*
 * roles.c: let go of the device @p m holds (its number kept until close, /dev/null in its
 * place where nothing holds it: an I/O being prepared may have read it); meta_lock held.
 * Also a level change that drops a role (reshape_level.c).
 */
void role_retire_device(struct graid_array *a, struct member *m);

/*
 * roles.c: a device into a role. Open, check and prepare @p path as the new device of role
 * @p role (-1: a hot spare); meta_lock held. -EEXIST it is a member of this array: open in
 * it, or another role's device that the array would take back (logged, naming the role).
 */
int member_attach(struct graid_array *a, struct member *m, const char *path, int role);
/*
 * A role whose member failed while a replace in service copied it (replace.c): the copy's
 * device takes the role, REBUILDING (as md's replacement does), instead of a spare, and
 * the worker rebuilds it. True if it did. meta_lock held.
 */
bool replace_takeover(struct graid_array *a, unsigned role);
/*
 * A hot spare takes @p role if it is failed or missing (or the device a replace of the
 * role was copying to: replace.c); meta_lock held.
 */
void array_spare_takeover(struct graid_array *a, unsigned role);
/* Every role the I/O path marked (array_worker_takeover) that is still down; meta_lock held. */
void array_roles_takeover_due(struct graid_array *a);
/* Every role failed or missing (an open that placed every member given, a new spare). */
void array_roles_takeover_all(struct graid_array *a);

/* worker.c: the array's worker thread. */
void array_worker_stop(struct graid_array *a);
int array_worker_start(struct graid_array *a);
/* Have the background thread (started if need be) rebuild what is REBUILDING; meta_lock held. */
int array_rebuild_background(struct graid_array *a);
/*
 * A rebuild is due in the worker (started already): due counts as running for
 * graid_array_info, since the worker may first finish a resync or a look. meta_lock held.
 */
static inline void array_rebuild_due(struct graid_array *a)
{
	a->rebuild_work = true;
	atomic_store(&a->rebuild_bg_error, 0);
	atomic_store(&a->rebuild_bg_running, true);
}


/* array_reach.c */
/* The worker's look at unreachable members: back (catch-up) or gone (failed); meta_lock held. */
void array_reach_poll(struct graid_array *a);
/* How long the worker may wait before it looks again; 0 when no member is unreachable. */
uint64_t array_reach_interval_ns(const struct graid_array *a);

/* resync.c */
/* resync.c: make every dirty region consistent again, then clear the marks. */
int array_resync(struct graid_array *a);

/* journal_replay.c */
/*
 * At open (journal_replay.c). After an unclean shutdown (@p clean false): read the log areas
 * of the usable members and write back, in sequence order, every update whose entries are
 * complete on all of its surviving members, flush, and reset the journal; @p replayed (may
 * be NULL) gets the count. After a clean close only the checkpoint records are read.
 * @return 0; -ENOMEM; -EIO when member failures during it broke the array.
 */
int journal_recover(struct graid_array *a, bool clean, uint64_t *replayed);

#endif /* LIBGRAID_CORE_JOBS_H */
