/* SPDX-License-Identifier: MIT */
/*
 * The piece pipeline: a batch is cut into pieces that go round the slots, each slot one
 * stream, so that one piece's copy in, another's kernel and another's copy out overlap,
 * while the CPU packs the next piece into pinned memory. One kernel launch per piece.
 */
#include <errno.h>
#include <string.h>

#include "cuda_engine.h"

/* Buffers grow in steps of this, so that shapes that vary a little do not reallocate. */
#define PIPE_GROW (1u << 20)

/* Make a slot's buffers hold n bytes. The slot is idle, so nothing uses them. */
static int pipe_reserve(struct graid_engine *e, struct cuda_slot *sl, size_t n)
{
	void *h = NULL, *d = NULL;
	int rc;

	if (n <= sl->cap)
		return 0;
	n = (n + PIPE_GROW - 1) / PIPE_GROW * PIPE_GROW;
	rc = cuda_rt_pinned_alloc(e->rt, &h, n);
	if (!rc)
		rc = cuda_rt_device_alloc(e->rt, &d, n);
	if (rc) {
		cuda_rt_pinned_free(e->rt, h);
		return rc;
	}
	cuda_rt_pinned_free(e->rt, sl->host);
	cuda_rt_device_free(e->rt, sl->dev);
	sl->host = h;
	sl->dev = d;
	sl->cap = n;
	return 0;
}

void cuda_pipeline_release(struct graid_engine *e)
{
	for (unsigned i = 0; i < CUDA_SLOTS; i++) {
		struct cuda_slot *sl = &e->slot[i];

		cuda_rt_pinned_free(e->rt, sl->host);
		cuda_rt_device_free(e->rt, sl->dev);
		sl->host = sl->dev = NULL;
		sl->cap = 0;
	}
}

static uint8_t *pipe_block(const struct cuda_job *job, size_t s, unsigned j)
{
	return job->b->blocks[s * job->kp.nblk + j];
}

/* One staged piece's copies between the caller's blocks and the slot's pinned buffer. */
struct pipe_copy {
	const struct cuda_job *job;
	const struct cuda_slot *sl;
	bool out;                    /* unpack the outputs (else pack the inputs) */
};

/* Item k of a piece: block k % nblk of its stripe k / nblk, if it goes the copy's way. */
static void pipe_copy_item(void *arg, size_t k)
{
	const struct pipe_copy *c = arg;
	const struct cuda_piece *pc = &c->sl->piece;
	const struct cuda_kparams *kp = &c->job->kp;
	const size_t i = k / kp->nblk;
	const unsigned j = (unsigned)(k % kp->nblk);
	const unsigned m = kp->map[j];
	uint8_t *block, *slot;

	if (m == CUDA_MAP_NONE || !(m & CUDA_MAP_OUT) != !c->out)
		return;
	block = pipe_block(c->job, pc->s0 + i, j) + pc->off;
	slot = c->sl->host + (c->out ? pc->lay.out + (i * kp->nout + (m & CUDA_MAP_IDX)) *
							   pc->lay.stride
				     : pc->lay.in + (i * kp->nin + m) * pc->lay.stride);
	if (c->out)
		memcpy(block, slot, pc->chunk);
	else
		memcpy(slot, block, pc->chunk);
}

/* Fill the host side of a piece: the pointer table (mapped), or the input blocks (staged). */
static int pipe_pack(struct graid_engine *e, struct cuda_job *job, struct cuda_slot *sl)
{
	const struct cuda_piece *pc = &sl->piece;
	const struct cuda_kparams *kp = &job->kp;

	if (job->mapped) {
		uint8_t **tab = (uint8_t **)(sl->host + pc->lay.table);

		for (size_t i = 0; i < pc->nstripes; i++) {
			for (unsigned j = 0; j < kp->nblk; j++) {
				uint8_t *d = NULL;

				if (kp->map[j] != CUDA_MAP_NONE) {
					int rc = cuda_mapped_devptr(e, pipe_block(job, pc->s0 + i, j),
								    &d);

					if (rc)
						return rc;
					d += pc->off;
				}
				tab[i * kp->nblk + j] = d;
			}
		}
	} else {
		struct pipe_copy c = { job, sl, false };

		cuda_pool_run(e->pool, pc->nstripes * kp->nblk, pc->nstripes * kp->nin * pc->chunk,
			      pipe_copy_item, &c);
	}
	if (kp->kcase == CUDA_CASE_CHECK)
		memset(sl->host + pc->lay.acc, 0, pc->nstripes * 3 * sizeof(uint32_t));
	return 0;
}

/* Start a piece on a slot: pack, copy in, launch, copy out, record. */
static int pipe_issue(struct graid_engine *e, struct cuda_job *job, struct cuda_slot *sl,
		      size_t s0, size_t ns, uint64_t off, uint64_t chunk)
{
	struct cuda_piece *pc = &sl->piece;
	struct cuda_kparams *kp = &job->kp;
	int rc;

	pc->s0 = s0;
	pc->nstripes = ns;
	pc->off = off;
	pc->chunk = chunk;
	pc->lay = cuda_plan_layout(kp, ns, chunk, job->mapped);
	rc = pipe_reserve(e, sl, pc->lay.size);
	if (rc)
		return rc;
	rc = pipe_pack(e, job, sl);
	if (rc)
		return rc;

	kp->nstripes = (uint32_t)ns;
	kp->len = chunk;
	kp->nvec = (uint32_t)((chunk + CUDA_VEC - 1) / CUDA_VEC);
	kp->stride = pc->lay.stride;
	kp->in_base = sl->dev + pc->lay.in;
	kp->out_base = sl->dev + pc->lay.out;
	kp->table = job->mapped ? (uint8_t *const *)(sl->dev + pc->lay.table) : NULL;
	kp->acc = kp->kcase == CUDA_CASE_CHECK ? (uint32_t *)(sl->dev + pc->lay.acc) : NULL;

	if (pc->lay.h2d_end)
		rc = cuda_rt_h2d(e->rt, sl->dev, sl->host, pc->lay.h2d_end, sl->stream);
	if (!rc)
		rc = cuda_rt_launch(e->rt, kp, sl->stream);
	if (!rc && pc->lay.size > pc->lay.acc)
		rc = cuda_rt_d2h(e->rt, sl->host + pc->lay.acc, sl->dev + pc->lay.acc,
				 pc->lay.size - pc->lay.acc, sl->stream);
	if (!rc)
		rc = cuda_rt_record(e->rt, sl->done, sl->stream);
	if (rc) {
		/* What was queued before the failure may still read or write the slot's buffers
		 * (and, mapped, the caller's blocks), and the slot's event does not cover it:
		 * wait for the whole stream before the caller gets its memory back. */
		(void)cuda_rt_stream_sync(e->rt, sl->stream);
		return rc;
	}
	sl->busy = true;
	return 0;
}

static void pipe_verdict(struct cuda_job *job, size_t s, const uint32_t acc[3])
{
	const int32_t v = cuda_plan_verdict(acc, job->kp.ndata, job->kp.nparity);

	if (job->result)
		job->result[s] = v;
	if (v != GRAID_CHECK_CLEAN)
		job->bad++;
}

/* Wait for a slot's piece and hand its results to the caller. */
static int pipe_finish(struct graid_engine *e, struct cuda_job *job, struct cuda_slot *sl)
{
	const struct cuda_piece *pc = &sl->piece;
	const struct cuda_kparams *kp = &job->kp;
	int rc = cuda_rt_wait(e->rt, sl->done);

	sl->busy = false;
	if (rc)
		return rc;
	if (!job->mapped) {
		struct pipe_copy c = { job, sl, true };

		cuda_pool_run(e->pool, pc->nstripes * kp->nblk,
			      pc->nstripes * kp->nout * pc->chunk, pipe_copy_item, &c);
	}
	if (kp->kcase != CUDA_CASE_CHECK)
		return 0;
	for (size_t i = 0; i < pc->nstripes; i++) {
		const uint32_t *acc = (const uint32_t *)(sl->host + pc->lay.acc) + 3 * i;

		if (job->geom.chunk == job->b->len) {
			pipe_verdict(job, pc->s0 + i, acc);
			continue;
		}
		/* A stripe cut into chunks: its pieces finish in order, the last decides. */
		cuda_plan_acc_merge(job->run_acc, acc);
		if (pc->off + pc->chunk >= job->b->len) {
			pipe_verdict(job, pc->s0 + i, job->run_acc);
			memset(job->run_acc, 0, sizeof(job->run_acc));
		}
	}
	return 0;
}

int cuda_pipeline_run(struct graid_engine *e, struct cuda_job *job)
{
	const struct graid_stripe_batch *b = job->b;
	const size_t per = job->geom.stripes;
	const uint64_t chunk = job->geom.chunk;
	const uint64_t nchunks = (b->len + chunk - 1) / chunk;
	const uint64_t npieces = (b->nstripes + per - 1) / per * nchunks;
	uint64_t p;
	int rc = 0;

	memset(job->run_acc, 0, sizeof(job->run_acc));
	job->bad = 0;
	for (p = 0; p < npieces; p++) {
		struct cuda_slot *sl = &e->slot[p % CUDA_SLOTS];
		const size_t s0 = (size_t)(p / nchunks) * per;
		const uint64_t off = (p % nchunks) * chunk;
		const size_t ns = b->nstripes - s0 < per ? b->nstripes - s0 : per;

		/* The slot's previous piece is the oldest in flight: finish it first. */
		if (sl->busy) {
			rc = pipe_finish(e, job, sl);
			if (rc)
				break;
		}
		rc = pipe_issue(e, job, sl, s0, ns,
				off, b->len - off < chunk ? b->len - off : chunk);
		if (rc)
			break;
	}
	/* Drain in issue order (results of a cut stripe merge in order); after an error,
	 * only wait, so no copy still runs into memory the caller gets back. */
	for (uint64_t i = 0; i < CUDA_SLOTS; i++) {
		struct cuda_slot *sl = &e->slot[(p + i) % CUDA_SLOTS];

		if (!sl->busy)
			continue;
		if (!rc) {
			rc = pipe_finish(e, job, sl);
		} else {
			(void)cuda_rt_wait(e->rt, sl->done);
			sl->busy = false;
		}
	}
	return rc;
}
