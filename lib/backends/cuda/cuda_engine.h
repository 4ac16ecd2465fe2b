/* SPDX-License-Identifier: MIT */
/* The CUDA engine's state, shared by its entry points, its pipeline and its mapped path. */
#ifndef GRAID_CUDA_ENGINE_H
#define GRAID_CUDA_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <libgraid/graid_backend.h>

#include "cuda_config.h"
#include "cuda_plan.h"
#include "cuda_pool.h"
#include "cuda_rt.h"

/* Streams (and staging slots): three let one piece's H2D copy, another's kernel and a
 * third's D2H copy run at once while the CPU packs the next. */
#define CUDA_SLOTS 3

/* What a slot has in flight, remembered for when it completes. */
struct cuda_piece {
	size_t s0;              /* first stripe of the batch in the piece */
	size_t nstripes;        /* stripes in the piece */
	uint64_t off;           /* first byte of each block in the piece */
	uint64_t chunk;         /* bytes of each block in the piece */
	struct cuda_layout lay; /* where things are in the slot's buffers */
};

/* A stream with its own pinned and device buffers, reused across calls; grown lazily. */
struct cuda_slot {
	struct cuda_rt_stream *stream;
	struct cuda_rt_event *done;  /* recorded after the piece's last copy */
	uint8_t *host;               /* pinned staging */
	uint8_t *dev;                /* device buffer, same layout */
	size_t cap;                  /* bytes of each */
	bool busy;                   /* a piece is in flight */
	struct cuda_piece piece;
};

/* A page range of caller memory pinned for the mapped path. */
struct cuda_range {
	uintptr_t lo, hi;
	bool mine;                   /* registered by this engine: unregister after the batch */
};

struct graid_engine {
	pthread_mutex_t lock;        /* one batch at a time: slots and ranges are shared */
	cuda_log_fn log;
	struct cuda_rt *rt;
	struct cuda_config cfg;
	struct cuda_pool *pool;      /* staged copies over GRAID_CUDA_COPY_THREADS; NULL: one */
	uint64_t batches_ok;         /* for GRAID_CUDA_FAIL_AFTER */
	bool told_fallback;          /* the mapped-to-staged fallback was logged once */
	bool dead;                   /* the context is lost: every batch is -ENODEV at once */
	size_t page;
	struct cuda_slot slot[CUDA_SLOTS];
	struct cuda_range *ranges;   /* mapped path scratch, grown, never shrunk */
	size_t nranges, ranges_cap;
	struct cuda_reg *regs;       /* registered buffers, sorted by address */
	size_t nregs, regs_cap;
};

/* A buffer the caller registered (graid_backend_register_memory): pinned until unregistered. */
struct cuda_reg {
	struct cuda_range pages;     /* the whole pages under it; mine: pinned by this engine */
	void *addr;                  /* as the caller gave it */
};

/* One call's work, as the pipeline sees it. */
struct cuda_job {
	const struct graid_stripe_batch *b;
	struct cuda_kparams kp;      /* shape fields set; piece fields set per piece */
	struct cuda_geom geom;
	bool mapped;                 /* kernels read caller memory in place */
	int32_t *result;             /* check: verdicts, may be NULL */
	long bad;                    /* check: stripes not clean */
	uint32_t run_acc[3];         /* check: accumulator of a stripe cut into chunks */
};

/* cuda_pipeline.c: run every piece of the job through the slots. 0 or a negative errno. */
int cuda_pipeline_run(struct graid_engine *e, struct cuda_job *job);
/* cuda_pipeline.c: release the slots' buffers (not their streams). */
void cuda_pipeline_release(struct graid_engine *e);

/* cuda_mapped.c: pin and check the job's blocks; 0 if the mapped path can run it, and then
 * cuda_mapped_end must follow (mapped batches of all engines take turns in between). */
int cuda_mapped_begin(struct graid_engine *e, const struct cuda_job *job);
/* cuda_mapped.c: unpin what cuda_mapped_begin pinned. */
void cuda_mapped_end(struct graid_engine *e);
/* cuda_mapped.c: pin a caller's buffer until unregistered (see graid_backend.h). Bound. */
int cuda_mapped_register(struct graid_engine *e, void *addr, size_t len);
/* cuda_mapped.c: release the registration that starts at addr; -EINVAL if none. Bound. */
int cuda_mapped_unregister(struct graid_engine *e, void *addr);
/* cuda_mapped.c: release every registration (close, or a lost context). Bound. */
void cuda_mapped_unregister_all(struct graid_engine *e);
/* cuda_mapped.c: the device address of a caller block (after cuda_mapped_begin). */
int cuda_mapped_devptr(struct graid_engine *e, uint8_t *p, uint8_t **out);

#endif /* GRAID_CUDA_ENGINE_H */
