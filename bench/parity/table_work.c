/* SPDX-License-Identifier: MIT */
/* parity_bench's workload: buffer sets, one batch of each contender, timing and verification. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_team.h"
#include "bench_util.h"
#include "isal_direct.h"
#include "table_work.h"

const unsigned pb_lost[2] = { 0, 1 };

/* Calibration never grows a sample more than this much at once: a noisy first sample
 * must not turn into a sample of many seconds. */
#define PB_MAX_GROWTH 16.0

static unsigned pb_nblk(const struct pb_shape *sh)
{
	return sh->ndata + sh->nparity;
}

size_t pb_batch_data_bytes(const struct pb_shape *sh)
{
	return sh->spb * sh->ndata * sh->len;
}

size_t pb_set_bytes(const struct pb_shape *sh)
{
	return sh->nbatches * sh->spb * (pb_nblk(sh) + sh->ndata) * sh->len;
}

int pb_set_bind(struct pb_set *set, const struct pb_shape *sh)
{
	const size_t nptrs = sh->nbatches * sh->spb * pb_nblk(sh);

	if (pb_set_bytes(sh) > set->arena_size)
		return -EINVAL;
	if (nptrs > set->ptrs_cap) {
		uint8_t **p = realloc(set->ptrs, nptrs * sizeof(*p));

		if (!p)
			return -ENOMEM;
		set->ptrs = p;
		set->ptrs_cap = nptrs;
	}
	/* Stripes back to back, each stripe's blocks back to back: data, P, Q. */
	for (size_t i = 0; i < nptrs; i++)
		set->ptrs[i] = set->arena + i * sh->len;
	set->copy_dst = set->arena + nptrs * sh->len;
	set->pos = 0;
	return 0;
}

static uint8_t *const *pb_batch_ptrs(const struct pb_shape *sh, const struct pb_set *set,
				     size_t b)
{
	return set->ptrs + b * sh->spb * pb_nblk(sh);
}

static int pb_run_batch(const struct pb_shape *sh, enum pb_impl impl, struct graid_backend *be,
			struct pb_set *set, size_t b)
{
	uint8_t *const *blk = pb_batch_ptrs(sh, set, b);
	uint8_t *dst;

	switch (impl) {
	case PB_IMPL_ENGINE:
		if (sh->op == PB_OP_REC2)
			return graid_parity_recover(be, sh->ndata, sh->nparity, sh->len, sh->spb,
						    blk, 2, pb_lost);
		return graid_parity_gen(be, sh->ndata, sh->nparity, sh->len, sh->spb, blk);
	case PB_IMPL_ISAL:
		if (sh->op == PB_OP_REC2)
			return isal_direct_recover2(sh->ndata, sh->len, sh->spb, blk, pb_lost) ? -EIO
												: 0;
		return isal_direct_gen(sh->ndata, sh->nparity, sh->len, sh->spb, blk) ? -EIO : 0;
	case PB_IMPL_MEMCPY:
		/* A stripe's data blocks are contiguous: one copy per stripe, as many bytes. */
		dst = set->copy_dst + b * pb_batch_data_bytes(sh);
		for (size_t s = 0; s < sh->spb; s++)
			memcpy(dst + s * sh->ndata * sh->len, blk[s * pb_nblk(sh)],
			       sh->ndata * sh->len);
		return 0;
	}
	return -EINVAL;
}

struct pb_job {
	const struct pb_shape *sh;
	enum pb_impl impl;
	struct graid_backend *be;
	struct pb_set *sets;
	size_t iters;
	int rc[PB_MAX_THREADS];
};

static void pb_job_run(void *arg, unsigned tid)
{
	struct pb_job *job = arg;
	struct pb_set *set = &job->sets[tid];

	/* A DRAM-sized set is walked in order, so each batch was last touched a whole set ago. */
	for (size_t i = 0; i < job->iters; i++) {
		size_t b = set->pos++ % job->sh->nbatches;
		int rc = pb_run_batch(job->sh, job->impl, job->be, set, b);

		if (rc) {
			job->rc[tid] = rc;
			return;
		}
	}
}

static int pb_job_rc(const struct pb_job *job, unsigned nthreads)
{
	for (unsigned t = 0; t < nthreads; t++)
		if (job->rc[t])
			return job->rc[t];
	return 0;
}

/*
 * One timed run of job->iters calls per thread. @p gbps: aggregate GB/s of data by the wall
 * clock. @p cpu_gbps: GB of data per second of process CPU time (all threads), which other
 * tenants of a shared machine cannot steal from. Returns 0 or a negative errno.
 */
static int pb_timed(struct pb_job *job, unsigned nthreads, double *dt, double *gbps,
		    double *cpu_gbps)
{
	const double bytes = (double)nthreads * (double)job->iters *
			     (double)pb_batch_data_bytes(job->sh);
	double cpu = bench_cpu_now();
	int rc;

	memset(job->rc, 0, sizeof(job->rc));
	*dt = bench_team_run(nthreads, pb_job_run, job);
	cpu = bench_cpu_now() - cpu;
	if (*dt < 0)
		return -EAGAIN;
	rc = pb_job_rc(job, nthreads);
	if (rc == 0 && gbps)
		*gbps = bytes / (*dt > 0 ? *dt : 1e-9) / 1e9;
	if (rc == 0 && cpu_gbps)
		*cpu_gbps = bytes / (cpu > 0 ? cpu : 1e-9) / 1e9;
	return rc;
}

int pb_calibrate(const struct pb_shape *sh, enum pb_impl impl, struct graid_backend *be,
		 struct pb_set *sets, unsigned nthreads, double target_s, size_t *iters)
{
	struct pb_job job = { .sh = sh, .impl = impl, .be = be, .sets = sets, .iters = 1 };
	double dt, grow;
	int rc;

	if (nthreads < 1 || nthreads > PB_MAX_THREADS)
		return -EINVAL;
	/* The first call pays one-time costs (kernel builds, pools, page faults): not timed. */
	rc = pb_timed(&job, nthreads, &dt, NULL, NULL);
	while (rc == 0) {
		rc = pb_timed(&job, nthreads, &dt, NULL, NULL);
		if (rc || dt >= target_s)
			break;
		grow = dt > 0 ? target_s * 1.2 / dt : PB_MAX_GROWTH;
		grow = grow < 2 ? 2 : grow > PB_MAX_GROWTH ? PB_MAX_GROWTH : grow;
		job.iters = (size_t)((double)job.iters * grow);
	}
	*iters = job.iters;
	return rc;
}

int pb_sample(const struct pb_shape *sh, enum pb_impl impl, struct graid_backend *be,
	      struct pb_set *sets, unsigned nthreads, size_t iters, double *gbps,
	      double *cpu_gbps)
{
	struct pb_job job = { .sh = sh, .impl = impl, .be = be, .sets = sets, .iters = 1 };
	double dt;
	int rc;

	if (nthreads < 1 || nthreads > PB_MAX_THREADS)
		return -EINVAL;
	/*
	 * One untimed call first: the contender sampled just before has evicted this one's
	 * cache-resident set, and the first of a pair must not pay for it when the second
	 * does not.
	 */
	rc = pb_timed(&job, nthreads, &dt, NULL, NULL);
	job.iters = iters;
	return rc ? rc : pb_timed(&job, nthreads, &dt, gbps, cpu_gbps);
}

/* The blocks an operation writes: P (and Q) for generation, the lost blocks for recovery. */
static unsigned pb_out_blocks(const struct pb_shape *sh, unsigned out[2])
{
	if (sh->op == PB_OP_REC2) {
		out[0] = pb_lost[0];
		out[1] = pb_lost[1];
		return 2;
	}
	out[0] = sh->ndata;
	out[1] = sh->ndata + 1;
	return sh->nparity;
}

static void pb_save_out(const struct pb_shape *sh, uint8_t *const *blk, uint8_t *to)
{
	unsigned out[2], n = pb_out_blocks(sh, out);

	for (size_t s = 0; s < sh->spb; s++)
		for (unsigned o = 0; o < n; o++)
			memcpy(to + (s * n + o) * sh->len, blk[s * pb_nblk(sh) + out[o]], sh->len);
}

/*
 * So an engine that writes nothing cannot pass: every output byte is made to differ from
 * what is there now (the answer, when called). A constant pattern would not do: an engine
 * that failed earlier can leave that very pattern in the data blocks.
 */
static void pb_clobber_out(const struct pb_shape *sh, uint8_t *const *blk)
{
	unsigned out[2], n = pb_out_blocks(sh, out);

	for (size_t s = 0; s < sh->spb; s++)
		for (unsigned o = 0; o < n; o++) {
			uint8_t *p = blk[s * pb_nblk(sh) + out[o]];

			for (size_t i = 0; i < sh->len; i++)
				p[i] = (uint8_t)~p[i];
		}
}

/* 0 if the output blocks equal @p want; else 1 with the first difference described. */
static int pb_compare_out(const struct pb_shape *sh, uint8_t *const *blk, const uint8_t *want,
			  char *why, size_t why_len)
{
	static const char *const pq[2] = { "P", "Q" };
	unsigned out[2], n = pb_out_blocks(sh, out);

	for (size_t s = 0; s < sh->spb; s++)
		for (unsigned o = 0; o < n; o++) {
			const uint8_t *got = blk[s * pb_nblk(sh) + out[o]];
			const uint8_t *exp = want + (s * n + o) * sh->len;
			size_t i = 0;

			if (!memcmp(got, exp, sh->len))
				continue;
			while (got[i] == exp[i])
				i++;
			if (sh->op == PB_OP_REC2)
				snprintf(why, why_len, "stripe %zu data block %u byte %zu", s,
					 out[o], i);
			else
				snprintf(why, why_len, "stripe %zu block %s byte %zu", s, pq[o], i);
			return 1;
		}
	return 0;
}

int pb_verify(const struct pb_shape *sh, struct graid_backend *be, struct pb_set *set,
	      char *why, size_t why_len)
{
	uint8_t *const *blk = pb_batch_ptrs(sh, set, 0);
	uint8_t *want = malloc(sh->spb * 2 * sh->len);
	int rc;

	if (!want)
		return -ENOMEM;
	if (sh->op == PB_OP_REC2) {
		/* Consistent stripes first, then ISA-L direct must give back the very data lost. */
		rc = isal_direct_gen(sh->ndata, sh->nparity, sh->len, sh->spb, blk) ? -EIO : 0;
		if (rc == 0) {
			pb_save_out(sh, blk, want);
			pb_clobber_out(sh, blk);
			rc = isal_direct_recover2(sh->ndata, sh->len, sh->spb, blk, pb_lost) ? -EIO : 0;
		}
		if (rc == 0 && pb_compare_out(sh, blk, want, why, why_len))
			rc = 2;
	} else {
		rc = isal_direct_gen(sh->ndata, sh->nparity, sh->len, sh->spb, blk) ? -EIO : 0;
		if (rc == 0)
			pb_save_out(sh, blk, want);
	}
	if (rc) {
		if (rc < 0)
			snprintf(why, why_len, "ISA-L direct refused the batch");
		free(want);
		return rc < 0 ? 2 : rc;
	}
	pb_clobber_out(sh, blk);
	rc = pb_run_batch(sh, PB_IMPL_ENGINE, be, set, 0);
	if (rc == 0)
		rc = pb_compare_out(sh, blk, want, why, why_len);
	free(want);
	return rc;
}
