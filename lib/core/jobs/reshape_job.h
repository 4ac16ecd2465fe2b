/* SPDX-License-Identifier: MIT */
/*
 * A reshape's job, shared by the files that make it (docs/RESHAPE.md): its state, and what
 * the start (reshape_start.c), the thread's life (reshape_job.c) and the moves
 * (reshape_grow.c, reshape_grow56*.c, reshape_grow10.c) call of each other. Private to the
 * jobs layer; reshape_grow.h is the interface the rest of the library uses.
 */
#ifndef LIBGRAID_CORE_RESHAPE_JOB_H
#define LIBGRAID_CORE_RESHAPE_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "format/reshape_map.h"
#include "jobs/reshape_io.h"
#include "jobs/reshape_pace.h"
#include "member/member.h"
#include "meta/reshape_rec.h"

/* Chunks a window moves at most: one durable record per window, its chunk locks held. */
#define GROW_WINDOW_CHUNKS 16u

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
	/*
	 * Checksums, RAID-6 with two roles out: old row + 1 whose lost columns were last
	 * reported (each data chunk of a suspect row judges it again: one report a column).
	 */
	uint64_t csum_reported_row;
};

/* The routing state of @p rec's two geometries, at its position (array.h); NULL: no memory. */
struct array_reshape *grow_routing(const struct reshape_record *rec);
/* A job for @p rec with its buffers; NULL: no memory. */
struct reshape_job *grow_job_new(const struct reshape_record *rec);
/* -ECANCELED once the job is told to stop or the array closes (or another -errno); else 0. */
int grow_should_stop(struct graid_array *a, struct reshape_job *j);
/* Wait until no request routed before the reshape's state was set is in flight. */
int grow_wait_plain(struct graid_array *a, struct reshape_job *j, const struct array_reshape *rs);
/*
 * Take the stripe locks keyed [c0, c1) (each bucket once, after the @p n already in @p held):
 * RAID-0's chunk numbers, RAID-5/6's rows (reshape_steps.c). @return the count held.
 */
unsigned grow_lock(struct graid_array *a, uint64_t c0, uint64_t c1, unsigned *held, unsigned n);
/* @p rec as the job's next record (generation + 1), then the job's (reshape_steps.c); 0/-errno. */
int grow_record_next(struct graid_array *a, struct reshape_job *j, struct reshape_record *rec);
/* RAID-5/6: the staged copy and the STAGED step (phases STAGING and STAGED). */
int grow56_stage(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);
/* One window: RAID-5/6 (grow56_window) or RAID-0/10 (grow_window); 0 or -errno. */
int grow56_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);
int grow_window(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);
/* Every byte moved: the added space zeroed, the maps, the superblock round of the new size. */
int grow_finish(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);
/* Whether RAID-5/6 grows start and resume in this build (GROW56_BUILT, or a test's switch). */
bool grow56_allowed(void);
/* Whether checksummed RAID-5/6 arrays grow in this build (GROW_CSUM_BUILT, or a test's switch). */
bool grow_csum_allowed(void);
/* The added members' bad-block logs reset (and maps written) before anything names them. */
int grow56_prep_added(struct graid_array *a, struct member *m, unsigned n);

/* The job's thread (reshape_job.c): count a waiter on @p j, wait for its end, free it. */
void grow_job_hold(struct reshape_job *j);
int grow_job_wait_held(struct reshape_job *j);
void grow_job_free(struct graid_array *a, struct reshape_job *j);

#if GRAID_FAULT_INJECTION
/* Test seam (reshape_grow.c): while true, a job waits before it moves anything. */
extern atomic_bool graid__test_grow56_hold;
#endif

#endif
