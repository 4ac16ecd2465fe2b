/* SPDX-License-Identifier: MIT */
/*
 * The array's worker thread (every writable open starts one): hands out spares, runs
 * background rebuilds and resync, watches unreachable members and the owner record; and
 * hot spares registered on the array.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "meta/bitmap.h"
#include "common/signals.h"
#include "jobs/health_watch.h"
#include "jobs/jobs.h"
#include "jobs/reshape_grow.h"
#include "member/member.h"
#include "member/member_pr.h"
#include "member/member_replace.h"
#include "meta/array_flush.h"
#include "meta/array_meta.h"

/* How often the worker reads the owner record on the members (another host's takeover). */
#define OWNER_WATCH_NS (1000u * 1000 * 1000)

static void *worker_main(void *arg)
{
	struct graid_array *a = arg;
	uint64_t next_watch = graid__now_ns() + OWNER_WATCH_NS;
	int rc;

	pthread_mutex_lock(&a->meta_lock);
	for (;;) {
		/* A RAID-5/6 reshape moving data holds them (jobs.h); its finish wakes us. */
		while (((!a->rebuild_work && !a->takeover_due && !a->resync_background) ||
			array_reshape_holds_jobs(a)) &&
		       !atomic_load(&a->closing)) {
			uint64_t wait = array_reach_interval_ns(a), now;
			struct timespec until;

			/* Unreachable members' controllers, and the owner record now and then. */
			if (!wait || wait > OWNER_WATCH_NS)
				wait = OWNER_WATCH_NS;
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += (time_t)(wait / 1000000000u);
			until.tv_nsec += (long)(wait % 1000000000u);
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&a->worker_cond, &a->meta_lock, &until);
			if (atomic_load(&a->closing))
				break;
			array_reach_poll(a);
			/* A RAID-5/6 reshape stopped on an error holds them: it goes on when it can. */
			reshape_job_retry_due(a);
			now = graid__now_ns();
			if (now >= next_watch) {
				next_watch = now + OWNER_WATCH_NS;
				array_owner_watch(a);
				/*
				 * A member out whose record did not reach the members (writes
				 * refused meanwhile: member_fail.c): the round again, each second.
				 */
				if (atomic_load(&a->fail_unrecorded) && !a->read_only &&
				    array_write_superblocks(a, 0) == 0)
					graid__log(GRAID_LOG_NOTICE, "array: the members out are "
								     "recorded now: writes go on");
			}
		}
		if (atomic_load(&a->closing))
			break;
		/* A member failed in the I/O path: a spare takes its role (and is rebuilt below). */
		if (a->takeover_due) {
			array_roles_takeover_due(a);
			continue;
		}
		if (a->resync_background) {
			a->resync_background = false;
			pthread_mutex_unlock(&a->meta_lock);
			if (array_resync(a) == 0)
				array_flush_members(a, NULL);
			pthread_mutex_lock(&a->meta_lock);
			continue;
		}
		a->rebuild_work = false;
		pthread_mutex_unlock(&a->meta_lock);
		/* Errors are logged by the rebuild; its result is kept for graid_array_info. */
		atomic_store(&a->rebuild_bg_running, true);
		rc = graid_array_rebuild(a, NULL, NULL);
		pthread_mutex_lock(&a->meta_lock);
		/* A close stopping it is no failure of the rebuild's; one due again still runs. */
		atomic_store(&a->rebuild_bg_error, rc == -ECANCELED ? 0 : rc);
		atomic_store(&a->rebuild_bg_running, a->rebuild_work);
	}
	pthread_mutex_unlock(&a->meta_lock);
	return NULL;
}

/* Start the array's worker once (every writable open does); meta_lock held. */
int array_worker_start(struct graid_array *a)
{
	int rc;

	if (a->worker_started)
		return 0;
	/* Without memory or a thread for the health watch the worker still runs. */
	if (!a->health && array_health_init(a))
		graid__log(GRAID_LOG_WARNING, "array: cannot start the drive health watch: "
					      "drive health is not watched");
	rc = graid__thread_create(&a->worker_thread, NULL, worker_main, a);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "array: cannot start its worker thread: %s", strerror(rc));
		return -ENOMEM; /* pthread_create's EAGAIN: out of threads or memory */
	}
	a->worker_started = true;
	return 0;
}

void array_worker_stop(struct graid_array *a)
{
	pthread_mutex_lock(&a->meta_lock);
	atomic_store(&a->closing, true);
	pthread_cond_broadcast(&a->worker_cond);
	pthread_mutex_unlock(&a->meta_lock);
	if (a->worker_started) {
		pthread_join(a->worker_thread, NULL);
		a->worker_started = false;
	}
	array_health_free(a);
}

GRAID_API int graid_array_add_spare(struct graid_array *a, const char *path)
{
	struct member *sp;
	unsigned held;
	int rc;

	if (!a || !path)
		return -EINVAL;
	if (a->lay.level == 0)
		return -EOPNOTSUPP;
	rc = array_may_change(a);
	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	/* A spare a replace copies onto still holds its place (it comes back if the copy stops). */
	held = replace_spare_held(a) != NULL;
	if (a->nspares + held >= GRAID_MAX_SPARES ||
	    a->nmembers + a->nspares + held >= GRAID_SB_MAX_MEMBERS) {
		pthread_mutex_unlock(&a->meta_lock);
		return -ENOSPC;
	}
	sp = &a->spares[a->nspares];
	rc = member_attach(a, sp, path, -1);
	if (rc == 0)
		rc = array_worker_start(a);
	if (rc) {
		if (sp->dev.fd >= 0 && a->pr_key)
			member_pr_release(sp, a->pr_key); /* member_attach reserved it */
		member_close(sp);
		pthread_mutex_unlock(&a->meta_lock);
		return rc;
	}
	atomic_init(&sp->state, GRAID_MEMBER_SPARE);
	a->nspares++;
	a->events++;
	rc = array_write_superblocks(a, 0);
	if (rc != -ESTALE && !sp->dev.sb_ours) {
		/*
		 * Its own superblock did not take: a spare the next open could not find (the
		 * others list it, it says nothing). Taken off again, the others told so.
		 */
		graid__log(GRAID_LOG_ERR, "%s: its superblock could not be written: not added "
					  "as a hot spare", path);
		a->nspares--;
		a->events++;
		array_write_superblocks(a, 0);
		if (a->pr_key)
			member_pr_release(sp, a->pr_key);
		member_close(sp);
		pthread_mutex_unlock(&a->meta_lock);
		return array_foreign(a) ? -ESTALE : -EIO;
	}
	graid__log(GRAID_LOG_NOTICE, "%s added as a hot spare", path);
	/* A role already down takes the spare at once. */
	array_roles_takeover_all(a);
	pthread_mutex_unlock(&a->meta_lock);
	return array_foreign(a) ? -ESTALE : 0;
}

int array_rebuild_background(struct graid_array *a)
{
	int rc = array_worker_start(a);

	if (rc == 0) {
		array_rebuild_due(a);
		pthread_cond_signal(&a->worker_cond);
	}
	return rc;
}

GRAID_API int graid_array_rebuild_start(struct graid_array *a)
{
	int rc;

	if (!a)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	rc = array_rebuild_background(a);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}
