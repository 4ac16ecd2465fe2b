/* SPDX-License-Identifier: MIT */
/*
 * A reshape job's thread (docs/RESHAPE.md): its main loop (windows, pacing, the finish),
 * its launch at a start or an open, the waits on it, its stop at close, the worker's retry
 * of a job stopped by an error, and its free.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "jobs/reshape_grow.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_grow56.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_progress.h"
#include "jobs/reshape_qlast.h"

/*
 * A RAID-5/6 job stopped by an error is started again by the worker (reshape_job_retry_due)
 * when a role went out since (it then goes on degraded), or after this long, doubling at
 * each failure up to GROW_RETRY_MAX_NS.
 */
#define GROW_RETRY_FIRST_NS (5ull * 1000 * 1000 * 1000)
#define GROW_RETRY_MAX_NS (300ull * 1000 * 1000 * 1000)

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

/*
 * Errors a retry cannot mend: a close, another host, a geometry with no safe window, the
 * job's I/O queue sized too small (-EOVERFLOW: a bug, the same at every try; logged by
 * reshape_io_queue(), the next open tries again).
 */
static bool grow_retryable(int rc)
{
	return rc && rc != -ECANCELED && rc != -ESTALE && rc != -EPROTO && rc != -EOVERFLOW;
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
void grow_job_hold(struct reshape_job *j)
{
	pthread_mutex_lock(&j->lock);
	j->waiters++;
	pthread_mutex_unlock(&j->lock);
}

/* Wait for @p j, held by grow_job_hold(), to end; the hold given back. */
int grow_job_wait_held(struct reshape_job *j)
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

void grow_job_free(struct graid_array *a, struct reshape_job *j)
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
