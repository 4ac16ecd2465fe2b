/* SPDX-License-Identifier: MIT */
/* The public parity calls: argument checks, dispatch to the engine, failover to the CPU. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/internal.h"
#include "common/signals.h"
#include "engine/engine.h"
#include "engine/route.h"

/* Everything the engines are promised by graid_backend.h is established here, once. */
static int parity_check_args(const struct graid_backend *be, unsigned ndata,
			     unsigned nparity, size_t len, size_t nstripes,
			     uint8_t *const *blocks)
{
	size_t nblocks;

	if (!be || !blocks || len == 0 || nstripes == 0)
		return -EINVAL;
	if (ndata < 1 || ndata > GRAID_GF_MAX_DATA || (nparity != 1 && nparity != 2))
		return -EINVAL;
	if (nstripes > SIZE_MAX / (ndata + nparity))
		return -EINVAL;
	nblocks = nstripes * (ndata + nparity);
	for (size_t i = 0; i < nblocks; i++)
		if (!blocks[i])
			return -EINVAL;
	return 0;
}

static void parity_count(struct graid_backend *be, const struct graid_stripe_batch *b)
{
	atomic_fetch_add_explicit(&be->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&be->stripes, b->nstripes, memory_order_relaxed);
	atomic_fetch_add_explicit(&be->bytes,
				  (uint64_t)b->nstripes * (b->ndata + b->nparity) * b->len,
				  memory_order_relaxed);
}

/*
 * An accelerator failing is not a data failure: the batch is redone on the CPU engine.
 * -ENODEV from a batch means the engine's device is gone for this process (a lost CUDA
 * context): said once, and every later batch goes to the CPU without asking the engine.
 */
static bool parity_should_fail_over(struct graid_backend *be, long rc, const char *op)
{
	if (rc >= 0 || rc == -EINVAL || !be->fallback)
		return false;
	atomic_fetch_add_explicit(&be->failovers, 1, memory_order_relaxed);
	if (rc != -ENODEV)
		graid__log(GRAID_LOG_WARNING, "engine %s failed %s (%s); batch redone on %s",
			   be->ops->name, op, graid_strerror((int)rc), be->fallback->ops->name);
	else if (!atomic_exchange(&be->gone, true))
		graid__log(GRAID_LOG_WARNING, "engine %s lost its device during %s; this batch "
			   "and every later one run on %s (counted as failovers)", be->ops->name,
			   op, be->fallback->ops->name);
	return true;
}

/* A fallback that fails too has no better answer than "the parity could not be computed". */
static long parity_fallback_result(long rc)
{
	return rc < 0 && rc != -EINVAL && rc != -ENOMEM ? -EIO : rc;
}

enum parity_op { PARITY_GEN, PARITY_RECOVER, PARITY_CHECK };

/* One engine, one op, with failover to the CPU engine behind an accelerator. */
static long parity_run(struct graid_backend *be, enum parity_op op,
		       const struct graid_stripe_batch *b, int32_t *result)
{
	static const char *const names[] = { "gen", "recover", "check" };
	const struct graid_backend *cpu = be->fallback;
	long rc;

	if (op == PARITY_CHECK && !be->ops->check)
		/* check is optional in the ABI: an engine without it is served by the CPU. */
		return cpu && cpu->ops->check ? cpu->ops->check(cpu->engine, b, result)
					      : graid__ref_ops()->check(NULL, b, result);
	if (cpu && atomic_load_explicit(&be->gone, memory_order_relaxed))
		rc = -ENODEV;
	else
		rc = op == PARITY_GEN	    ? be->ops->gen(be->engine, b)
		     : op == PARITY_RECOVER ? be->ops->recover(be->engine, b)
					    : be->ops->check(be->engine, b, result);
	if (!parity_should_fail_over(be, rc, names[op]))
		return rc;
	if (op == PARITY_CHECK && !cpu->ops->check)
		return parity_fallback_result(graid__ref_ops()->check(NULL, b, result));
	rc = op == PARITY_GEN	    ? cpu->ops->gen(cpu->engine, b)
	     : op == PARITY_RECOVER ? cpu->ops->recover(cpu->engine, b)
				    : cpu->ops->check(cpu->engine, b, result);
	return parity_fallback_result(rc);
}

/*
 * The CPU share of a split batch runs on a worker thread of the handle while the caller's
 * thread drives the accelerator: both at once is the point of splitting.
 */
struct split_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool busy;                        /* a caller owns the worker for one split */
	bool has_job, done, stop;
	struct graid_backend *cpu;
	enum parity_op op;
	struct graid_stripe_batch batch;
	int32_t *result;
	long rc;
};

static void *split_worker_main(void *arg)
{
	struct split_worker *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->has_job && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		w->has_job = false;
		pthread_mutex_unlock(&w->lock);
		w->rc = parity_run(w->cpu, w->op, &w->batch, w->result);
		pthread_mutex_lock(&w->lock);
		w->done = true;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static struct split_worker *parity_worker(struct graid_backend *be)
{
	struct split_worker *w;

	pthread_mutex_lock(&be->worker_lock);
	w = be->worker;
	if (!w && (w = calloc(1, sizeof(*w)))) {
		pthread_attr_t attr, *pa = NULL;
		bool have_attr = false;
		cpu_set_t cpus;

		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		w->cpu = be->fallback;
		/*
		 * Started by whichever thread first splits a batch, perhaps one its program pinned
		 * to a CPU (graid-ublk's queue threads may be): on the process's CPUs instead (its
		 * main thread's), not that thread's; where those are refused, as that thread.
		 */
		if (sched_getaffinity(getpid(), sizeof(cpus), &cpus) == 0 &&
		    pthread_attr_init(&attr) == 0) {
			have_attr = true;
			if (pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus) == 0)
				pa = &attr;
		}
		if (graid__thread_create(&w->thread, pa, split_worker_main, w) &&
		    (!pa || graid__thread_create(&w->thread, NULL, split_worker_main, w))) {
			free(w);
			w = NULL;
		}
		if (have_attr)
			pthread_attr_destroy(&attr);
		be->worker = w;
	}
	pthread_mutex_unlock(&be->worker_lock);
	return w;
}

void graid__split_worker_stop(struct graid_backend *be)
{
	struct split_worker *w = be->worker;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	be->worker = NULL;
}

/* Run a batch where the routing policy says: CPU, accelerator, or both at once. */
static long parity_dispatch(struct graid_backend *be, enum parity_op op,
			    const struct graid_stripe_batch *b, int32_t *result)
{
	const size_t nblk = b->ndata + b->nparity;
	struct graid_stripe_batch head = *b, tail = *b;
	struct split_worker *w;
	size_t ncpu = 0, nacc = b->nstripes;
	long rc, rc_cpu;

	/* An accelerator that is gone gets no share: the whole batch fails over at once. */
	if (be->route.enabled && be->fallback &&
	    !atomic_load_explicit(&be->gone, memory_order_relaxed))
		route_plan(&be->route, nblk * b->len, b->nstripes, &ncpu, &nacc);
	if (ncpu == 0)
		return parity_run(be, op, b, result);
	if (nacc == 0) {
		atomic_fetch_add_explicit(&be->cpu_routed, 1, memory_order_relaxed);
		return parity_run(be->fallback, op, b, result);
	}
	head.nstripes = ncpu;
	tail.nstripes = nacc;
	tail.blocks = b->blocks + ncpu * nblk;
	w = parity_worker(be);
	if (w)
		pthread_mutex_lock(&w->lock);
	if (!w || w->busy) {
		/* Another caller holds the worker: do both shares here, one after the other. */
		if (w)
			pthread_mutex_unlock(&w->lock);
		rc_cpu = parity_run(be->fallback, op, &head, result);
		rc = parity_run(be, op, &tail, result ? result + ncpu : NULL);
	} else {
		w->busy = true;
		w->op = op;
		w->batch = head;
		w->result = result;
		w->done = false;
		w->has_job = true;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		rc = parity_run(be, op, &tail, result ? result + ncpu : NULL);
		pthread_mutex_lock(&w->lock);
		while (!w->done)
			pthread_cond_wait(&w->cond, &w->lock);
		rc_cpu = w->rc;
		w->busy = false;
		pthread_mutex_unlock(&w->lock);
	}
	atomic_fetch_add_explicit(&be->split, 1, memory_order_relaxed);
	if (rc_cpu < 0)
		return rc_cpu;
	return rc < 0 ? rc : rc + rc_cpu; /* check: mismatch counts add up; else 0 + 0 */
}

GRAID_API int graid_parity_gen_flags(struct graid_backend *be, unsigned ndata,
				     unsigned nparity, size_t len, size_t nstripes,
				     uint8_t *const *blocks, uint32_t flags)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks, .flags = flags,
	};
	int rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	if (flags & ~GRAID_BATCH_F_ALL)
		return -EINVAL;
	rc = (int)parity_dispatch(be, PARITY_GEN, &b, NULL);
	if (rc == 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API int graid_parity_gen(struct graid_backend *be, unsigned ndata, unsigned nparity,
			       size_t len, size_t nstripes, uint8_t *const *blocks)
{
	return graid_parity_gen_flags(be, ndata, nparity, len, nstripes, blocks, 0);
}

GRAID_API int graid_parity_recover_flags(struct graid_backend *be, unsigned ndata,
					 unsigned nparity, size_t len, size_t nstripes,
					 uint8_t *const *blocks, unsigned nlost,
					 const unsigned *lost, uint32_t flags)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks, .nlost = nlost,
		.flags = flags,
	};
	int rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	if (flags & ~GRAID_BATCH_F_ALL)
		return -EINVAL;
	if (nlost > nparity || (nlost && !lost))
		return -EINVAL;
	for (unsigned i = 0; i < nlost; i++) {
		if (lost[i] >= ndata + nparity)
			return -EINVAL;
		b.lost[i] = lost[i];
	}
	if (nlost == 2) {
		if (b.lost[0] == b.lost[1])
			return -EINVAL;
		if (b.lost[0] > b.lost[1]) {
			unsigned t = b.lost[0];

			b.lost[0] = b.lost[1];
			b.lost[1] = t;
		}
	}
	if (nlost == 0)
		return 0;
	rc = (int)parity_dispatch(be, PARITY_RECOVER, &b, NULL);
	if (rc == 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API int graid_parity_recover(struct graid_backend *be, unsigned ndata,
				   unsigned nparity, size_t len, size_t nstripes,
				   uint8_t *const *blocks, unsigned nlost,
				   const unsigned *lost)
{
	return graid_parity_recover_flags(be, ndata, nparity, len, nstripes, blocks, nlost, lost,
					  0);
}

GRAID_API long graid_parity_check(struct graid_backend *be, unsigned ndata,
				  unsigned nparity, size_t len, size_t nstripes,
				  uint8_t *const *blocks, int32_t *result)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks,
	};
	long rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	rc = parity_dispatch(be, PARITY_CHECK, &b, result);
	if (rc >= 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API int graid_backend_stats(const struct graid_backend *be,
				  struct graid_backend_stats *stats)
{
	struct graid_backend_stats s = { .struct_size = sizeof(s) };

	if (!be || !stats || stats->struct_size < offsetof(struct graid_backend_stats, failovers) +
							  sizeof(stats->failovers))
		return -EINVAL;
	s.batches = atomic_load(&((struct graid_backend *)be)->batches);
	s.stripes = atomic_load(&((struct graid_backend *)be)->stripes);
	s.bytes = atomic_load(&((struct graid_backend *)be)->bytes);
	s.failovers = atomic_load(&((struct graid_backend *)be)->failovers);
	s.cpu_routed = atomic_load(&((struct graid_backend *)be)->cpu_routed);
	s.split = atomic_load(&((struct graid_backend *)be)->split);
	s.struct_size = stats->struct_size < sizeof(s) ? stats->struct_size : sizeof(s);
	memcpy(stats, &s, s.struct_size);
	return 0;
}
