/* SPDX-License-Identifier: MIT */
/*
 * An array handle's life: allocated with its locks, its engine opened, and freed with
 * everything it holds (worker thread, pooled queues, members, locks, maps, journal). Above
 * every layer it tears down, so none of them calls back up into it.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/journal.h"
#include "meta/live.h"
#include "meta/meta_write.h"
#include "api/array_life.h"
#include "api/open_reserve.h"
#include "ownership/lease.h"
#include "io/queue_pool.h"
#include "jobs/jobs.h"
#include "jobs/reshape_grow.h"
#include "jobs/replace.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/array_view.h"
#include "array/stats_count.h"

struct graid_array *array_alloc(unsigned nmembers, unsigned room)
{
	unsigned cap = nmembers + room > GRAID_MAX_MEMBERS ? GRAID_MAX_MEMBERS : nmembers + room;
	size_t size = sizeof(struct graid_array) + cap * sizeof(struct member);
	struct graid_array *a = NULL;
	pthread_condattr_t mono;

	/* Aligned as the struct asks (its statistics start a cache line): not malloc's 16. */
	if (posix_memalign((void **)&a, alignof(struct graid_array), size))
		return NULL;
	memset(a, 0, size);
	a->stripes.busy = calloc(STRIPE_LOCK_BUCKETS, sizeof(*a->stripes.busy));
	if (!a->stripes.busy) {
		free(a);
		return NULL;
	}
	a->nmembers = nmembers;
	a->member_cap = cap;
	for (unsigned i = 0; i < cap; i++) {
		a->members[i].dev.fd = -1;
		atomic_init(&a->members[i].state, GRAID_MEMBER_MISSING);
	}
	/* Timed waits on these count on the monotonic clock: a clock step stretches nothing. */
	pthread_condattr_init(&mono);
	pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
	pthread_mutex_init(&a->meta_lock, NULL);
	pthread_mutex_init(&a->stripes.lock, NULL);
	pthread_cond_init(&a->stripes.cond, &mono);
	pthread_mutex_init(&a->pool.lock, NULL);
	pthread_mutex_init(&a->rebuild_lock, NULL);
	pthread_mutex_init(&a->event.lock, NULL);
	pthread_mutex_init(&a->event_ring.lock, NULL);
	a->event_ring.watch_fd = -1;
	atomic_init(&a->event.progress_step, GRAID_EVENT_PROGRESS_DEFAULT);
	pthread_cond_init(&a->worker_cond, &mono);
	pthread_condattr_destroy(&mono);
	a->uuid_lock.fd = -1;
	for (unsigned i = 0; i < GRAID_MAX_SPARES; i++)
		a->spares[i].dev.fd = -1;
	stats_init(a);
	return a;
}

void array_free(struct graid_array *a)
{
	if (!a)
		return;
	/* Between windows: the record names where it stopped, and the next open goes on. */
	reshape_job_stop(a);
	array_worker_stop(a);
	array_queue_pool_free(a);
	/* Its record writes' ring, before the members close; its routing, after the queues. */
	reshape_job_free(a);
	/*
	 * Metadata writes given up on after the I/O timeout end before anything is released
	 * (meta_write.c): they still go through the members' descriptors.
	 */
	meta_rings_free(a);
	/* After the last write that could go to a replace's device too. */
	replace_free(a);
	/* After the last write, through the descriptors that are about to close. */
	array_unreserve(a);
	for (unsigned i = 0; i < a->nmembers; i++)
		member_close(&a->members[i]);
	for (unsigned i = 0; i < a->nspares; i++)
		member_close(&a->spares[i]);
	for (unsigned i = 0; i < a->retired.n; i++) {
		if (a->retired.fd[i] >= 0)
			close(a->retired.fd[i]);
		fault_free(a->retired.fault[i]);
	}
	/* Last of the holds: the member locks went with their descriptors above. */
	array_view_withdraw(a);
	array_view_free(a);
	/* After the last write: another host may take the array from here on. */
	lease_close(a->lease);
	array_uuid_lock_release(&a->uuid_lock);
	graid_backend_close(a->be);
	free(a->be_name);
	bitmap_free(a);
	live_free(a);
	journal_free(a);
	badblocks_free(a);
	tag_store_close(a); /* written back before this, at close or flush: not here */
	pthread_mutex_destroy(&a->meta_lock);
	pthread_mutex_destroy(&a->stripes.lock);
	pthread_cond_destroy(&a->stripes.cond);
	pthread_mutex_destroy(&a->pool.lock);
	pthread_mutex_destroy(&a->rebuild_lock);
	pthread_mutex_destroy(&a->event.lock);
	pthread_mutex_destroy(&a->event_ring.lock);
	pthread_cond_destroy(&a->worker_cond);
	free(a->stripes.busy);
	free(a->given);
	free(a);
}

int array_open_engine(struct graid_array *a, const char *name)
{
	/* Kept for a level change that needs an engine later (graid_array_convert()). */
	if (name && !a->be_name) {
		a->be_name = strdup(name);
		if (!a->be_name)
			return -ENOMEM;
	}
	if (a->lay.nparity == 0)
		return 0; /* levels without parity never call an engine */
	return graid_backend_open(name, &a->be);
}
