/* SPDX-License-Identifier: MIT */
/* The staged path's copy threads (see cuda_pool.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_pool.h"

struct cuda_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;         /* a job was published, or stop */
	pthread_cond_t idle;         /* a worker finished its share */
	pthread_t *threads;
	unsigned nthreads;           /* workers started */
	uint64_t gen;                /* job number: a worker takes each job once */
	bool stop;
	/* The job: set under the lock before gen moves, read by workers after they see it. */
	cuda_pool_fn fn;
	void *arg;
	size_t count;
	atomic_size_t next;          /* next item to take */
	unsigned arrived;            /* workers that took this job */
	unsigned busy;               /* workers still in it */
};

static void pool_drain(struct cuda_pool *p, cuda_pool_fn fn, void *arg, size_t count)
{
	size_t i;

	while ((i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed)) < count)
		fn(arg, i);
}

static void *pool_main(void *arg)
{
	struct cuda_pool *p = arg;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		cuda_pool_fn fn;
		void *farg;
		size_t count;

		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;
		fn = p->fn;
		farg = p->arg;
		count = p->count;
		p->arrived++;
		p->busy++;
		pthread_mutex_unlock(&p->lock);
		pool_drain(p, fn, farg, count);
		pthread_mutex_lock(&p->lock);
		p->busy--;
		pthread_cond_signal(&p->idle);
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
	if (!p || count < 2 || bytes < CUDA_POOL_MIN_BYTES) {
		for (size_t i = 0; i < count; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->arg = arg;
	p->count = count;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->arrived = 0;
	p->gen++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	pool_drain(p, fn, arg, count);
	/* Every worker must have taken this job and left it before the next one is set up,
	 * or a late one could read half of the next job's fields. */
	pthread_mutex_lock(&p->lock);
	while (p->arrived < p->nthreads || p->busy)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
