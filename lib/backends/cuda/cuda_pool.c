/* SPDX-License-Identifier: MIT */
/* The staged path's copy threads (see cuda_pool.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_pool.h"

/* One job, on its caller's stack for as long as the call lasts. */
struct pool_job {
	cuda_pool_fn fn;
	void *arg;
	size_t count;
	atomic_size_t next;          /* next item to take */
	unsigned busy;               /* workers inside it (the pool's lock) */
};

struct cuda_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;         /* a job was published, or stop */
	pthread_cond_t idle;         /* a worker left its job */
	pthread_t *threads;
	unsigned nthreads;           /* workers started */
	/*
	 * The job workers may join, or NULL: cleared by its caller once it has taken every
	 * item, so a worker that wakes late finds nothing and sleeps again; the caller then
	 * waits only for the workers already inside it, never for one that has not woken.
	 */
	struct pool_job *job;
	uint64_t gen;                /* jobs published: a worker takes each one at most once */
	bool stop;
};

static void pool_drain(struct pool_job *j)
{
	size_t i;

	while ((i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->count)
		j->fn(j->arg, i);
}

static void *pool_main(void *arg)
{
	struct cuda_pool *p = arg;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pool_job *j;

		/* Jobs live on their callers' stacks, often at one address: count, not compare. */
		while ((!p->job || p->gen == seen) && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;
		j = p->job;
		j->busy++;
		pthread_mutex_unlock(&p->lock);
		pool_drain(j);
		pthread_mutex_lock(&p->lock);
		if (--j->busy == 0)
			pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int cuda_pool_start(struct cuda_pool **out, unsigned nthreads)
{
	struct cuda_pool *p;
	int rc = 0;

	*out = NULL;
	if (nthreads <= 1)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->threads = calloc(nthreads - 1, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	for (unsigned i = 0; i < nthreads - 1; i++) {
		rc = -pthread_create(&p->threads[i], NULL, pool_main, p);
		if (rc)
			break;
		p->nthreads++;
	}
	if (!p->nthreads) {
		cuda_pool_stop(p);
		return rc;
	}
	/* Fewer workers than asked still help; the caller's log says how many run. */
	*out = p;
	return 0;
}

unsigned cuda_pool_threads(const struct cuda_pool *p)
{
	return p ? p->nthreads + 1 : 1;
}

void cuda_pool_stop(struct cuda_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

void cuda_pool_run(struct cuda_pool *p, size_t count, size_t bytes, cuda_pool_fn fn, void *arg)
{
	struct pool_job j = { .fn = fn, .arg = arg, .count = count };

	if (!p || count < 2 || bytes < CUDA_POOL_MIN_BYTES) {
		for (size_t i = 0; i < count; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->job = &j;
	p->gen++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	pool_drain(&j);
	/* Every item is taken: no worker may join now; those inside finish theirs. */
	pthread_mutex_lock(&p->lock);
	p->job = NULL;
	while (j.busy)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
