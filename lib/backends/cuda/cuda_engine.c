/* SPDX-License-Identifier: MIT */
/* The CUDA engine's plugin entry: its table of operations, open/close, and the batch calls. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_engine.h"

static int cuda_probe(struct graid_backend_info *info)
{
	/* Fill only what the caller's (possibly older, smaller) structure has room for. */
	const size_t room = info ? info->struct_size : 0;
	const bool has_device = room >= offsetof(struct graid_backend_info, device) +
					sizeof(info->device);
	const bool has_flags = room >= offsetof(struct graid_backend_info, flags) +
				       sizeof(info->flags);
	struct cuda_config cfg;
	char desc[sizeof(info->device)] = "";
	int rc;

	/* A malformed setting makes the engine unusable here; open() says which. */
	if (cuda_config_read(&cfg, NULL)) {
		snprintf(desc, sizeof(desc), "a GRAID_CUDA_* setting is malformed (opening the "
			 "engine logs which)");
		rc = -ENODEV;
	} else {
		rc = cuda_rt_probe(cfg.device, desc, sizeof(desc));
	}
	/* Usable: the device; not: why, as graid_backend.h lets a probe say. */
	if (has_device)
		memcpy(info->device, desc, sizeof(info->device));
	if (rc)
		return -ENODEV;
	if (has_flags)
		info->flags = GRAID_BACKEND_F_ACCELERATOR;
	return 0;
}

static void cuda_close(struct graid_engine *e)
{
	if (!e)
		return;
	if (e->rt) {
		int prev;
		const bool bound = cuda_rt_bind(e->rt, &prev) == 0;

		cuda_pipeline_release(e);
		cuda_mapped_unregister_all(e);
		for (unsigned i = 0; i < CUDA_SLOTS; i++) {
			cuda_rt_event_destroy(e->rt, e->slot[i].done);
			cuda_rt_stream_destroy(e->rt, e->slot[i].stream);
		}
		if (bound)
			cuda_rt_unbind(e->rt, prev);
		cuda_rt_close(e->rt);
	}
	cuda_pool_stop(e->pool);
	free(e->ranges);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static int cuda_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	struct graid_engine *e;
	long page = sysconf(_SC_PAGESIZE);
	int rc;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->log = cfg->log;
	e->page = page > 0 ? (size_t)page : 4096;
	rc = pthread_mutex_init(&e->lock, NULL);
	if (rc) {
		free(e);
		return -rc;
	}
	rc = cuda_config_read(&e->cfg, e->log);
	if (!rc)
		rc = cuda_rt_open(&e->rt, e->cfg.device, e->log);
	if (!rc) {
		int prev;

		rc = cuda_rt_bind(e->rt, &prev);
		if (!rc) {
			for (unsigned i = 0; !rc && i < CUDA_SLOTS; i++) {
				rc = cuda_rt_stream_create(e->rt, &e->slot[i].stream);
				if (!rc)
					rc = cuda_rt_event_create(e->rt, &e->slot[i].done);
			}
			cuda_rt_unbind(e->rt, prev);
		}
		/* The context lost while the streams were made: said here, as cuda_rt_open does. */
		if (rc && cuda_rt_lost(e->rt)) {
			e->log(GRAID_LOG_ERR, "cuda: device %d: %s", e->cfg.device,
			       cuda_rt_lost(e->rt));
			rc = -ENODEV;
		}
	}
	if (!rc && !e->cfg.mapped) {
		int prc = cuda_pool_start(&e->pool, e->cfg.copy_threads);

		/* Not fatal: the calling thread copies alone. */
		if (prc)
			e->log(GRAID_LOG_WARNING, "cuda: no copy threads could be started (%s); "
			       "staging copies run on the calling thread", strerror(-prc));
	}
	if (rc) {
		cuda_close(e);
		return rc;
	}
	e->log(GRAID_LOG_INFO, "cuda: device %d, %s path, %zu KiB pieces on %d streams, %u copy "
	       "threads", e->cfg.device, e->cfg.mapped ? "mapped" : "staged",
	       e->cfg.piece_bytes >> 10, CUDA_SLOTS, cuda_pool_threads(e->pool));
	*out = e;
	return 0;
}

/* Run one batch on the mapped path if asked and possible, else staged. Lock held. */
static int cuda_run(struct graid_engine *e, struct cuda_job *job)
{
	int rc;

	job->mapped = false;
	if (e->cfg.mapped) {
		rc = cuda_mapped_begin(e, job);
		if (!rc) {
			job->mapped = true;
			job->geom = cuda_plan_geom(&job->kp, job->b->len, e->cfg.piece_bytes);
			rc = cuda_pipeline_run(e, job);
			cuda_mapped_end(e);
			return rc;
		}
		/* Not a mapping problem: the context is gone (cuda_batch says so). */
		if (cuda_rt_lost(e->rt))
			return rc;
		/* A warning: the caller asked for a path it is not getting (once per engine). */
		if (!e->told_fallback)
			e->log(GRAID_LOG_WARNING,
			       "cuda: a batch could not be mapped (%s); staging it instead",
			       rc == -EINVAL ? "a block not 16-byte aligned" :
					       "its memory could not be pinned");
		e->told_fallback = true;
	}
	job->geom = cuda_plan_geom(&job->kp, job->b->len, e->cfg.piece_bytes);
	return cuda_pipeline_run(e, job);
}

/*
 * The context is lost (a kernel fault, an uncorrectable ECC error, the device gone): CUDA
 * fails every later call in this process. Say so once, give back what can be given back,
 * and answer every later batch at once, without calling CUDA, so the core runs it on the
 * CPU. Lock held.
 */
static int cuda_die(struct graid_engine *e)
{
	e->log(GRAID_LOG_ERR, "cuda: device %d is unusable in this process (%s); engine "
	       "disabled, this batch and every later one go to the CPU engine", e->cfg.device,
	       cuda_rt_lost(e->rt));
	e->dead = true;
	cuda_pipeline_release(e);
	cuda_mapped_unregister_all(e);
	return -ENODEV;
}

/* Common frame of gen, recover and check: plan, lock, bind, the failover switch, run. */
static long cuda_batch(struct graid_engine *e, const struct graid_stripe_batch *b,
		       enum cuda_op op, int32_t *result)
{
	struct cuda_job job;
	int rc;

	memset(&job, 0, sizeof(job));
	job.b = b;
	job.result = result;
	rc = cuda_plan_case(&job.kp, op, b->ndata, b->nparity, b->nlost, b->lost);
	if (rc)
		return rc;

	pthread_mutex_lock(&e->lock);
	if (e->dead) {
		rc = -ENODEV;
	} else if (e->batches_ok >= e->cfg.fail_after) {
		e->log(GRAID_LOG_ERR, "cuda: failing a batch on purpose (GRAID_CUDA_FAIL_AFTER=%llu)",
		       (unsigned long long)e->cfg.fail_after);
		rc = -EIO;
	} else {
		int prev;

		rc = cuda_rt_bind(e->rt, &prev);
		if (!rc) {
			rc = cuda_run(e, &job);
			cuda_rt_unbind(e->rt, prev);
		}
		if (!rc)
			e->batches_ok++;
		else if (cuda_rt_lost(e->rt))
			rc = cuda_die(e);
	}
	pthread_mutex_unlock(&e->lock);
	return rc ? rc : job.bad;
}

static int cuda_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	return (int)cuda_batch(e, b, CUDA_OP_GEN, NULL);
}

static int cuda_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	return (int)cuda_batch(e, b, CUDA_OP_RECOVER, NULL);
}

static long cuda_check(struct graid_engine *e, const struct graid_stripe_batch *b,
		       int32_t *result)
{
	return cuda_batch(e, b, CUDA_OP_CHECK, result);
}

/* Registration frame: lock, the engine's liveness, bind. */
static int cuda_register_memory(struct graid_engine *e, void *addr, size_t len)
{
	int prev, rc;

	pthread_mutex_lock(&e->lock);
	rc = e->dead ? -ENODEV : cuda_rt_bind(e->rt, &prev);
	if (!rc) {
		rc = cuda_mapped_register(e, addr, len);
		cuda_rt_unbind(e->rt, prev);
		if (rc && cuda_rt_lost(e->rt))
			rc = cuda_die(e);
	}
	pthread_mutex_unlock(&e->lock);
	return rc;
}

static int cuda_unregister_memory(struct graid_engine *e, void *addr)
{
	int prev, rc;

	pthread_mutex_lock(&e->lock);
	/* A dead engine released everything when it died (graid.h: 0 for any address). */
	if (e->dead) {
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	rc = cuda_rt_bind(e->rt, &prev);
	if (!rc) {
		rc = cuda_mapped_unregister(e, addr);
		cuda_rt_unbind(e->rt, prev);
	}
	pthread_mutex_unlock(&e->lock);
	return rc;
}

static const struct graid_backend_ops cuda_ops = {
	GRAID_BACKEND_OPS_HEADER,
	.name = "cuda",
	.description = "CUDA kernels on an NVIDIA GPU (pinned staging or mapped host memory)",
	.probe = cuda_probe,
	.open = cuda_open,
	.close = cuda_close,
	.gen = cuda_gen,
	.recover = cuda_recover,
	.check = cuda_check,
	.register_memory = cuda_register_memory,
	.unregister_memory = cuda_unregister_memory,
};

__attribute__((visibility("default"))) const struct graid_backend_ops *graid_backend_plugin(void);

const struct graid_backend_ops *graid_backend_plugin(void)
{
	return &cuda_ops;
}
