/* SPDX-License-Identifier: MIT */
/* One piece's buffers and transfers around its launch: table, staging, regions, results. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

/*
 * Every command of a piece is enqueued without waiting, and the piece waits once, for
 * its results (a blocking call costs a round trip through the runtime's worker threads:
 * 30-150 us on PoCL here, against about 1 us to enqueue). Buffers that wrap host memory
 * (caller regions, and the staging memory on a device that reads host memory) are
 * created per piece - about 0.2 us on PoCL - so the implementation never holds on to
 * caller memory between calls.
 */

int ocl_host_reserve(void **mem, size_t *cap, size_t need)
{
	size_t size;
	void *p;

	if (*mem && *cap >= need)
		return 0;
	/* A quarter more than asked, so a slowly growing workload reallocates rarely. */
	size = (need + need / 4 + 63) & ~(size_t)63;
	free(*mem);
	*mem = NULL;
	*cap = 0;
	/* 64-byte alignment: staged blocks start on cache lines, vectors never split. */
	if (posix_memalign(&p, 64, size))
		return -ENOMEM;
	*mem = p;
	*cap = size;
	return 0;
}

int ocl_buffer_reserve(struct graid_engine *e, cl_mem *mem, size_t *cap, size_t need,
		       cl_mem_flags flags, const char *what)
{
	size_t size;
	cl_int err;

	if (*mem && *cap >= need)
		return 0;
	size = need + need / 4;
	if (size < 65536)
		size = 65536;
	if (size > e->dev.max_alloc && need <= e->dev.max_alloc)
		size = need;
	if (*mem)
		clReleaseMemObject(*mem);
	*cap = 0;
	*mem = clCreateBuffer(e->ctx, flags, size, NULL, &err);
	if (err != CL_SUCCESS) {
		*mem = NULL;
		e->log(GRAID_LOG_ERR, "opencl: %s buffer of %zu bytes", what, size);
		return ocl_errno(e->log, err, "clCreateBuffer");
	}
	*cap = size;
	return 0;
}

static int piece_wrap(struct graid_engine *e, struct ocl_region *g)
{
	cl_int err;

	g->mem = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
				(size_t)(g->hi - g->lo), g->lo, &err);
	if (err != CL_SUCCESS) {
		g->mem = NULL;
		return ocl_errno(e->log, err, "clCreateBuffer(CL_MEM_USE_HOST_PTR)");
	}
	return 0;
}

static int piece_map(struct graid_engine *e, struct ocl_region *g, size_t size)
{
	cl_int err;

	/* Not blocking: the pointer is good once the piece's one clFinish returns. */
	g->map = clEnqueueMapBuffer(e->queue, g->mem, CL_FALSE, CL_MAP_READ, 0, size, 0, NULL,
				    NULL, &err);
	if (err != CL_SUCCESS) {
		g->map = NULL;
		return ocl_errno_launched(e->log, err, "clEnqueueMapBuffer");
	}
	return 0;
}

/* Plan the piece, stage its inputs, wrap its regions and send the table on its way. */
int ocl_piece_prepare(struct graid_engine *e, const struct ocl_job *job,
		      const struct ocl_piece *pc)
{
	size_t nb = pc->nstripes * job->nblk, stride = ocl_plan_stride(pc->clen);
	struct ocl_region *stage = &e->reg[OCL_STAGE_REG];
	size_t staged;
	cl_int err;
	int rc;

	rc = ocl_host_reserve((void **)&e->blk_reg, &e->blk_reg_cap, nb);
	if (!rc)
		rc = ocl_host_reserve((void **)&e->tab_host, &e->tab_host_cap,
				      nb * sizeof(cl_ulong));
	if (rc)
		return rc;
	ocl_plan_piece(e, job, pc);
	staged = (e->nout + e->nin) * stride;
	if (staged)
		rc = ocl_host_reserve((void **)&e->stage_host, &e->stage_host_cap, staged);
	if (!rc && e->memory == OCL_MEM_COPY)
		rc = ocl_buffer_reserve(e, &e->tab, &e->tab_cap, nb * sizeof(cl_ulong),
					CL_MEM_READ_ONLY, "block table");
	if (rc)
		return rc;

	ocl_plan_table(e, job, pc, e->tab_host);
	if (e->nin)
		ocl_plan_copy(e, job, pc, e->stage_host + e->nout * stride, 1);
	for (unsigned r = 0; r < e->nreg && !rc; r++)
		rc = piece_wrap(e, &e->reg[r]);
	if (rc)
		return rc;

	*stage = (struct ocl_region){ .lo = e->stage_host, .hi = e->stage_host + staged };
	if (staged && e->memory == OCL_MEM_COPY) {
		rc = ocl_buffer_reserve(e, &e->stage_dev, &e->stage_dev_cap, staged,
					CL_MEM_READ_WRITE, "staging");
		if (rc)
			return rc;
		stage->mem = e->stage_dev; /* the engine's, not the piece's */
		if (e->nin) {
			err = clEnqueueWriteBuffer(e->queue, e->stage_dev, CL_FALSE,
						   e->nout * stride, e->nin * stride,
						   e->stage_host + e->nout * stride, 0, NULL, NULL);
			if (err != CL_SUCCESS)
				return ocl_errno(e->log, err, "clEnqueueWriteBuffer");
		}
	} else if (staged) {
		rc = piece_wrap(e, stage);
		if (rc)
			return rc;
	}
	if (e->memory != OCL_MEM_COPY) {
		/* The device reads the table where the host wrote it: no copy, no command. */
		struct ocl_region t = { .lo = (uint8_t *)e->tab_host,
					.hi = (uint8_t *)(e->tab_host + nb) };

		rc = piece_wrap(e, &t);
		e->tab_wrap = t.mem;
		return rc;
	}
	err = clEnqueueWriteBuffer(e->queue, e->tab, CL_FALSE, 0, nb * sizeof(cl_ulong),
				   e->tab_host, 0, NULL, NULL);
	return err == CL_SUCCESS ? 0 : ocl_errno(e->log, err, "clEnqueueWriteBuffer");
}

/*
 * After the launch: ask for the results (outputs written in caller regions, staged
 * outputs, and nres stripes' check words), wait once, and copy staged outputs home.
 * Results in USE_HOST_PTR memory are only guaranteed to be in the host's bytes once
 * mapped; where the device uses the pointer itself, as PoCL does, mapping is free.
 */
int ocl_piece_collect(struct graid_engine *e, const struct ocl_job *job,
		      const struct ocl_piece *pc, size_t nres)
{
	size_t stride = ocl_plan_stride(pc->clen);
	struct ocl_region *stage = &e->reg[OCL_STAGE_REG];
	cl_int err;
	int rc = 0;

	for (unsigned r = 0; r < e->nreg && !rc; r++)
		if (e->reg[r].has_out)
			rc = piece_map(e, &e->reg[r], (size_t)(e->reg[r].hi - e->reg[r].lo));
	if (!rc && e->nout) {
		if (e->memory == OCL_MEM_COPY) {
			err = clEnqueueReadBuffer(e->queue, e->stage_dev, CL_FALSE, 0,
						  e->nout * stride, e->stage_host, 0, NULL, NULL);
			if (err != CL_SUCCESS)
				rc = ocl_errno_launched(e->log, err, "clEnqueueReadBuffer");
		} else {
			rc = piece_map(e, stage, e->nout * stride);
		}
	}
	if (!rc && nres) {
		err = clEnqueueReadBuffer(e->queue, e->res, CL_FALSE, 0, nres * 3 * sizeof(cl_uint),
					  e->res_host, 0, NULL, NULL);
		if (err != CL_SUCCESS)
			rc = ocl_errno_launched(e->log, err, "clEnqueueReadBuffer");
	}
	if (rc)
		return rc;
	err = clFinish(e->queue);
	if (err != CL_SUCCESS)
		return ocl_errno_launched(e->log, err, "clFinish");
	if (e->nout)
		ocl_plan_copy(e, job, pc,
			      e->memory == OCL_MEM_COPY ? e->stage_host : (uint8_t *)stage->map, 0);
	return 0;
}

/*
 * Unmap and drop the piece's wrapping buffers. After a successful collect the kernel is
 * done and only the unmaps of read mappings are left, which write nothing; the in-order
 * queue runs them before anything else, and the runtime frees the buffers after them, so
 * there is nothing to wait for. After a failure part way, wait: nothing may still touch
 * the caller's memory once the core redoes the batch on the CPU.
 */
int ocl_piece_release(struct graid_engine *e, int wait)
{
	int rc = 0;
	cl_int err;

	for (unsigned r = 0; r < OCL_NREG; r++) {
		struct ocl_region *g = &e->reg[r];

		if (r >= e->nreg && r != OCL_STAGE_REG)
			continue;
		if (g->map) {
			err = clEnqueueUnmapMemObject(e->queue, g->mem, g->map, 0, NULL, NULL);
			if (err != CL_SUCCESS && !rc)
				rc = ocl_errno_launched(e->log, err, "clEnqueueUnmapMemObject");
			g->map = NULL;
		}
	}
	if (wait || rc) {
		err = clFinish(e->queue);
		if (err != CL_SUCCESS && !rc)
			rc = ocl_errno_launched(e->log, err, "clFinish");
	}
	for (unsigned r = 0; r < OCL_NREG; r++) {
		struct ocl_region *g = &e->reg[r];

		if ((r < e->nreg || r == OCL_STAGE_REG) && g->mem && g->mem != e->stage_dev)
			clReleaseMemObject(g->mem);
		g->mem = NULL;
	}
	if (e->tab_wrap)
		clReleaseMemObject(e->tab_wrap);
	e->tab_wrap = NULL;
	e->nreg = 0;
	return rc;
}
