/* SPDX-License-Identifier: MIT */
/* A rebuild's shared state: its batches (slots), the pass in progress, the calls between its files. */
#ifndef LIBGRAID_CORE_REBUILD_H
#define LIBGRAID_CORE_REBUILD_H

#include "io/member_batch.h"
#include "io/queue.h"
#include "io/row_heal.h"
#include "io/row_job.h"
#include "io/stripe_set.h"
#include "jobs/jobs.h"

/* A batch holds about this much chunk data in memory (all members of its rows). */
#define REBUILD_SLOT_BYTES (12u << 20)
/* Batches in flight: one being written, one being recovered, one being read. */
#define REBUILD_SLOTS 3
/* The largest member I/O: big enough to be sequential, small enough to keep several queued. */
#define REBUILD_IO_MAX (1u << 20)
/* Unused rows deallocated on the targets under one set of stripe locks, at most. */
#define REBUILD_SKIP_ROWS_MAX 1024u
/* Superblocks get the checkpoint at least this often. */
#define REBUILD_CHECKPOINT_NS (1000000000ull)

/*
 * The batch loop is a pipeline over REBUILD_SLOTS slots, taken in row order: while one
 * batch's writes to the new member are in flight and the next batch is recovered, the batch
 * after it is already being read, so neither the survivors nor the new member wait for the
 * engine. Each slot holds its rows' stripe locks from before its reads are queued until its
 * writes have completed, so a foreground write to one of those rows waits and then lands on
 * the new member after the rebuilt data: never under it.
 */
enum rebuild_slot_state { SLOT_FREE, SLOT_READING, SLOT_WRITING };

struct rebuild_slot {
	uint64_t row0;
	unsigned rows;
	struct row_bufs buf;      /* data member-major: each member's rows are one contiguous run */
	size_t nios;
	struct mbgroup grp;
	struct stripe_set locks;
	enum rebuild_slot_state state; /* not FREE: locks held, the I/O of state on the ring */
	bool have[GRAID_MAX_MEMBERS]; /* parity levels: this member's rows were read */
	/* Units of the targets no member could give (zeroed): recorded once written. */
	struct row_bad lost;
	/* RAID-1/10 with generations: the source copies' ones for the writes (lost_write_mirror.h). */
	uint32_t *wmeta;
	size_t wmeta_cap;
};

/* What a rebuild needs, allocated once. */
struct rebuild_ctx {
	struct graid_array *a;
	unsigned rows_max;
	uint8_t **ptrs;           /* rows_max * nroles pointers, for the engine */
	struct mbatch mb;         /* one ring for the whole rebuild */
	struct row_bad bad;       /* units the slot being recovered could not read */
	struct rebuild_slot slot[REBUILD_SLOTS];
	unsigned head, busy;      /* slot[head .. head + busy) (mod REBUILD_SLOTS), oldest first */
	unsigned target[GRAID_MAX_MEMBERS];
	unsigned ntarget;
	/* Every target only catches up: rows of regions the bitmap does not mark are skipped. */
	bool catchup_only;
	/* Each target's member UUID when the pass began: a device swapped in since is new. */
	uint8_t target_uuid[GRAID_MAX_MEMBERS][16];
	/*
	 * And its outage count: a target that was unreachable and came back since started
	 * over (array_reach.c), and rows this pass copied before may have missed writes.
	 */
	uint64_t target_outages[GRAID_MAX_MEMBERS];
	/* The pass in progress. */
	graid_progress_fn fn;
	void *arg;
	uint64_t done, total, t0, last_cp, batch_ns;
	uint64_t skipped;         /* bytes a catch-up had no need to copy (progress only) */
	uint64_t reported;        /* bytes of earlier passes, reported: progress never goes back */
	/* Pacing: the rate in force, and where its window began (bytes per rebuilt member). */
	uint64_t pace_rate, pace_t0, pace_bytes0;
	unsigned fg_seen;         /* fg_started at the last pacing decision */
};

/* rebuild_batch.c: one batch of rows. */

/* The stripe locks of the slot's rows, into s->locks (not taken). */
void rebuild_add_locks(struct rebuild_ctx *c, struct rebuild_slot *s);
/* Queue a locked slot's reads of the survivors (or live copies). 0 or -errno. */
int rebuild_start_reads(struct rebuild_ctx *c, struct rebuild_slot *s);
/* Wait for a slot's reads and recover (or heal) its lost chunks. 0 or -errno. */
int rebuild_finish_reads(struct rebuild_ctx *c, struct rebuild_slot *s);
/* Queue the slot's writes to the targets, one run per target. 0 or -errno. */
int rebuild_write_slot(struct rebuild_ctx *c, struct rebuild_slot *s);

/* rebuild_progress.c: accounting, checkpoints, pacing. */

/*
 * Whether target @p t was replaced, or came back from an outage, since the pass began.
 * meta_lock held.
 */
bool rebuild_target_started_over(const struct rebuild_ctx *c, unsigned t);
/* Whether target @p t is the device the pass began with, still being rebuilt. meta_lock held. */
bool rebuild_target_same(const struct rebuild_ctx *c, unsigned t);
/* Sleep until the bytes done are due at the rate in force, and as the yield asks. */
void rebuild_pace(struct rebuild_ctx *c);
/* Whether rebuild_pace() would sleep once @p rows more rows are done. */
bool rebuild_pause_due(struct rebuild_ctx *c, unsigned rows);
/*
 * Wait for a slot's writes, release its rows and account for them (progress, checkpoint).
 * 0; -ESTALE a target started over; -EIO a target failed; what the writes returned.
 */
int rebuild_finish(struct rebuild_ctx *c, struct rebuild_slot *s);

/* rebuild_rows.c: the pass's rows. */

/* Record in each target's copy_total what this pass from row @p start will copy to it. */
void rebuild_note_totals(struct rebuild_ctx *c, uint64_t start);
/*
 * Every row from @p start on that needs copying, up to REBUILD_SLOTS batches in flight;
 * every lock and slot released at the end. 0; -ECANCELED closing; -ESTALE a target started
 * over or another host took the array; -errno.
 */
int rebuild_rows(struct rebuild_ctx *c, uint64_t start);

#endif
