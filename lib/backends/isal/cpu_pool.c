/* SPDX-License-Identifier: MIT */
/* The CPU engines' worker threads: one pool a process, started at the first open, joined at the last close. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid_backend.h>

#include "cpu_pool.h"
#include "common/internal.h" /* the locks fork() takes, and the registration of this pool's */

/* One call in progress. It lives on its caller's stack; see cpu_pool_run for its lifetime. */
struct cpu_job {
	graid_cpu_piece_fn fn;
	void *arg;
	size_t npieces;
	atomic_size_t next; /* the next piece to claim; may run past npieces */
	atomic_int err;     /* the first error of a piece */
	unsigned busy;      /* workers inside the job (pool lock) */
	struct cpu_job *link; /* the queue of jobs that may have unclaimed pieces (pool lock) */
};

struct graid_cpu_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* workers: a job was queued, or stop */
	pthread_cond_t idle; /* callers: a worker left a job */
	struct cpu_job *queue;
	bool stop;
	/*
	 * The process that started the workers, and the forks it had seen then. A forked child
	 * has none of them, and a worker may have held the lock at the fork: the child never
	 * touches the lock or the queue. The pid alone would not do where a descendant gets a
	 * recycled pid; the count alone, where a fork skips the handlers (a raw clone).
	 */
	pid_t pid;
	unsigned long forks;
	unsigned nthreads; /* as asked for, the caller included */
	unsigned refs;     /* engines using it (cpu_pool_lock) */
	unsigned nworkers;
	pthread_t thread[];
};

/*
 * The pool engines share. Without sharing, an application with many arrays (each opens
 * its own engine) would keep one idle worker per CPU per array. It is this process's, or
 * one inherited from the parent of a fork, which is never handed out again: its workers
 * stayed in the parent.
 */
static struct graid_cpu_pool *cpu_shared;
/* Forks this process descends through since the first pool (the child handler counts). */
static atomic_ulong cpu_forks;

/* The child has none of the parent's workers: pools made before are not its own. */
static void cpu_pool_forked(void)
{
	atomic_fetch_add(&cpu_forks, 1);
}

/* Guards cpu_shared and the pools' refs; fork() takes it with the library's other locks. */
static struct graid_lock cpu_pool_lock = GRAID_LOCK_INIT;
static pthread_once_t cpu_pool_once = PTHREAD_ONCE_INIT;

static void cpu_pool_register(void)
{
	graid__fork_lock_register(&cpu_pool_lock, GRAID_FORK_POOL);
	pthread_atfork(NULL, NULL, cpu_pool_forked);
}

/*
 * At load, before any thread can take the lock: a fork racing the first pool's creation
 * must find the lock registered, or the child could inherit it held.
 */
__attribute__((constructor)) static void cpu_pool_at_load(void)
{
	pthread_once(&cpu_pool_once, cpu_pool_register);
}

/* Whether this process started the pool's workers (a forked child did not). */
static bool cpu_pool_ours(const struct graid_cpu_pool *pool)
{
	return pool->pid == getpid() && pool->forks == atomic_load(&cpu_forks);
}

/*
 * Workers take the process's CPUs and scheduling (those of its main thread), not those of
 * whichever thread opened the first engine: pthread_create copies the creator's, and an
 * application that pins the thread which opens its arrays, or runs it real-time, would
 * otherwise put every engine's workers on that one CPU, or make busy compute threads
 * real-time. NULL attributes (inherit) where the main thread's cannot be read.
 */
static pthread_attr_t *cpu_worker_attr(pthread_attr_t *attr)
{
	struct sched_param sp;
	cpu_set_t set;
	int policy = sched_getscheduler(getpid());

	if (policy < 0 || sched_getparam(getpid(), &sp) ||
	    sched_getaffinity(getpid(), sizeof(set), &set) || pthread_attr_init(attr))
		return NULL;
	if (pthread_attr_setaffinity_np(attr, sizeof(set), &set) ||
	    pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED) ||
	    pthread_attr_setschedpolicy(attr, policy) || pthread_attr_setschedparam(attr, &sp)) {
		pthread_attr_destroy(attr);
		return NULL;
	}
	return attr;
}

static void cpu_job_work(struct cpu_job *job)
{
	size_t i;

	while ((i = atomic_fetch_add(&job->next, 1)) < job->npieces) {
		int rc = job->fn(job->arg, i), none = 0;

		if (rc)
			atomic_compare_exchange_strong(&job->err, &none, rc);
	}
}

/* Take a job off the queue (pool lock held); it may already be off. */
static void cpu_pool_unlink(struct graid_cpu_pool *pool, struct cpu_job *job)
{
	for (struct cpu_job **pp = &pool->queue; *pp; pp = &(*pp)->link)
		if (*pp == job) {
			*pp = job->link;
			return;
		}
}

static void *cpu_pool_worker(void *arg)
{
	struct graid_cpu_pool *pool = arg;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct cpu_job *job;

		while (!pool->stop && !pool->queue)
			pthread_cond_wait(&pool->work, &pool->lock);
		if (pool->stop)
			break;
		job = pool->queue;
		if (atomic_load(&job->next) >= job->npieces) {
			/* Every piece is claimed: nothing left here for anyone. */
			pool->queue = job->link;
			continue;
		}
		/* Counted while the lock is held, so the caller waits for us before returning. */
		job->busy++;
		pthread_mutex_unlock(&pool->lock);
		cpu_job_work(job);
		pthread_mutex_lock(&pool->lock);
		cpu_pool_unlink(pool, job);
		if (--job->busy == 0)
			pthread_cond_broadcast(&pool->idle);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

int graid__cpu_pool_create(struct graid_cpu_pool **out, unsigned nthreads, int *start_err)
{
	struct graid_cpu_pool *pool;
	pthread_attr_t attr_mem, *attr;
	sigset_t all, old;
	unsigned want;
	int rc = 0;

	*out = NULL;
	if (start_err)
		*start_err = 0;
	if (nthreads <= 1)
		return 0;
	if (nthreads > GRAID_CPU_MAX_THREADS)
		nthreads = GRAID_CPU_MAX_THREADS;
	graid__fork_safe();
	want = nthreads - 1;
	pool = calloc(1, sizeof(*pool) + want * sizeof(pool->thread[0]));
	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->idle, NULL);
	pool->pid = getpid();
	pool->forks = atomic_load(&cpu_forks);
	pool->nthreads = nthreads;
	pool->refs = 1;
	/*
	 * Workers block every signal: the application's handlers must keep running on the
	 * application's own threads, not on a library thread that happens to be scheduled.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	attr = cpu_worker_attr(&attr_mem);
	for (; pool->nworkers < want; pool->nworkers++) {
		rc = pthread_create(&pool->thread[pool->nworkers], attr, cpu_pool_worker, pool);
		if (rc == EPERM && attr) {
			/* Not allowed the main thread's scheduling from here: inherit instead. */
			pthread_attr_destroy(attr);
			attr = NULL;
			rc = pthread_create(&pool->thread[pool->nworkers], NULL, cpu_pool_worker,
					    pool);
		}
		if (rc)
			break;
	}
	if (attr)
		pthread_attr_destroy(attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (start_err)
		*start_err = rc;
	if (!pool->nworkers) {
		graid__cpu_pool_destroy(pool);
		return 0;
	}
	*out = pool;
	return 0;
}

void graid__cpu_pool_destroy(struct graid_cpu_pool *pool)
{
	if (!pool)
		return;
	if (!cpu_pool_ours(pool)) {
		/* A forked child: no workers to join, and the lock may be held by none of ours. */
		free(pool);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->nworkers; i++)
		pthread_join(pool->thread[i], NULL);
	pthread_cond_destroy(&pool->idle);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

int graid__cpu_pool_get(struct graid_cpu_pool **out, unsigned nthreads,
			void (*log)(int level, const char *fmt, ...))
{
	struct graid_cpu_pool *pool;
	int rc = 0;

	int start_err = 0;

	*out = NULL;
	if (nthreads <= 1)
		return 0;
	if (nthreads > GRAID_CPU_MAX_THREADS)
		nthreads = GRAID_CPU_MAX_THREADS;
	pthread_once(&cpu_pool_once, cpu_pool_register);
	/*
	 * Under the lock throughout, so two engines opening at once start one pool. Nothing
	 * of the application's runs under it (the log comes after): a callback that forked or
	 * opened an engine would wait for it forever.
	 */
	graid__lock(&cpu_pool_lock);
	pool = cpu_shared;
	if (pool && cpu_pool_ours(pool) && pool->nthreads == nthreads) {
		pool->refs++;
		*out = pool;
	} else {
		rc = graid__cpu_pool_create(out, nthreads, &start_err);
		/* A different count (the environment changed) keeps a pool of its own. */
		if (!rc && *out && (!pool || !cpu_pool_ours(pool)))
			cpu_shared = *out;
	}
	graid__unlock(&cpu_pool_lock);
	if (start_err && log)
		log(GRAID_LOG_WARNING, "isal: started %u of %u worker threads: %s",
		    graid__cpu_pool_threads(*out) - 1, nthreads - 1, strerror(start_err));
	return rc;
}

void graid__cpu_pool_put(struct graid_cpu_pool *pool)
{
	bool last;

	if (!pool)
		return;
	graid__lock(&cpu_pool_lock);
	last = --pool->refs == 0;
	if (last && cpu_shared == pool)
		cpu_shared = NULL;
	graid__unlock(&cpu_pool_lock);
	if (last)
		graid__cpu_pool_destroy(pool);
}

unsigned graid__cpu_pool_threads(const struct graid_cpu_pool *pool)
{
	if (!pool || !cpu_pool_ours(pool))
		return 1;
	return pool->nworkers + 1;
}

int graid__cpu_pool_run(struct graid_cpu_pool *pool, size_t npieces, graid_cpu_piece_fn fn,
			void *arg)
{
	struct cpu_job job = { .fn = fn, .arg = arg, .npieces = npieces };

	if (npieces <= 1 || graid__cpu_pool_threads(pool) <= 1) {
		cpu_job_work(&job);
		return atomic_load(&job.err);
	}
	pthread_mutex_lock(&pool->lock);
	job.link = pool->queue;
	pool->queue = &job;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);

	cpu_job_work(&job);

	/*
	 * Every piece is claimed now. Off the queue, no new worker can enter the job; once the
	 * ones inside have left, nothing refers to it and the stack frame may go.
	 */
	pthread_mutex_lock(&pool->lock);
	cpu_pool_unlink(pool, &job);
	while (job.busy)
		pthread_cond_wait(&pool->idle, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
	return atomic_load(&job.err);
}
