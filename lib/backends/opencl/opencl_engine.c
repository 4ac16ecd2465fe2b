/* SPDX-License-Identifier: MIT */
/* The OpenCL engine's operations table: open, close, and gen/recover/check over batches. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

#if defined(__GNUC__)
#define OCL_EXPORT __attribute__((visibility("default")))
#else
#define OCL_EXPORT
#endif

/* Block bytes one launch covers: big enough to hide launch costs, small enough to bound memory. */
#define ENGINE_PIECE_BYTES ((size_t)64 << 20)
/* Blocks one launch covers: bounds the block table (8 bytes a block) for tiny blocks. */
#define ENGINE_MAX_BLOCKS ((size_t)1 << 20)
/*
 * Smallest region of caller memory used in place rather than staged: below this, copying
 * the bytes costs less than the region's buffer object and its mapping (docs/OPENCL.md).
 */
#define ENGINE_INPLACE_MIN ((size_t)4 << 10)

/* A number from the environment, dflt when unset; -EINVAL (logged) when malformed. */
static int engine_env_ull(struct graid_engine *e, const char *name, unsigned long long dflt,
			  unsigned long long *out)
{
	const char *s = getenv(name);
	char *end;

	*out = dflt;
	if (!s || !*s)
		return 0;
	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || *end || *s == '-') {
		e->log(GRAID_LOG_ERR, "opencl: %s=%s is not a number", name, s);
		return -EINVAL;
	}
	return 0;
}

static int opencl_probe(struct graid_backend_info *info)
{
	struct ocl_device d;
	char why[160];

	if (!info || info->struct_size < sizeof(*info))
		return -EINVAL;
	if (ocl_device_pick(&d, why, sizeof(why))) {
		/* The reason travels out in the device field (graid_backend.h). */
		snprintf(info->device, sizeof(info->device), "%.*s", (int)sizeof(info->device) - 1, why);
		return -ENODEV;
	}
	snprintf(info->device, sizeof(info->device), "%s", d.name);
	info->flags = ocl_device_flags(&d);
	return 0;
}

static void opencl_close(struct graid_engine *e)
{
	if (!e)
		return;
	if (e->queue)
		clFinish(e->queue);
	if (e->stage_dev)
		clReleaseMemObject(e->stage_dev);
	if (e->tab)
		clReleaseMemObject(e->tab);
	if (e->res)
		clReleaseMemObject(e->res);
	if (e->k_gen)
		clReleaseKernel(e->k_gen);
	if (e->k_recover)
		clReleaseKernel(e->k_recover);
	if (e->k_check)
		clReleaseKernel(e->k_check);
	if (e->prog)
		clReleaseProgram(e->prog);
	if (e->queue)
		clReleaseCommandQueue(e->queue);
	if (e->ctx)
		clReleaseContext(e->ctx);
	free(e->blk_reg);
	free(e->tab_host);
	free(e->stage_host);
	free(e->res_host);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static const char *const engine_memory_names[] = {
	[OCL_MEM_AUTO] = "auto",
	[OCL_MEM_INPLACE] = "inplace",
	[OCL_MEM_STAGED] = "staged",
	[OCL_MEM_COPY] = "copy",
};

/* Settings from the environment (docs/OPENCL.md), read at open; malformed is -EINVAL. */
static int engine_tune(struct graid_engine *e)
{
	const char *mem = getenv("GRAID_OPENCL_MEMORY");
	unsigned long long piece, fail;
	size_t cap = (size_t)(e->dev.max_alloc / 4);
	int rc;

	e->memory = OCL_MEM_AUTO;
	if (mem && *mem) {
		unsigned i = 0;

		while (i < 4 && strcmp(mem, engine_memory_names[i]))
			i++;
		if (i == 4) {
			e->log(GRAID_LOG_ERR,
			       "opencl: GRAID_OPENCL_MEMORY=%s is not auto, inplace, staged or copy",
			       mem);
			return -EINVAL;
		}
		e->memory = (enum ocl_memory)i;
	}
	/* A device that cannot read host memory can only be reached by copies. */
	if (!e->dev.host_memory)
		e->memory = OCL_MEM_COPY;
	e->inplace_min = e->memory == OCL_MEM_AUTO ? ENGINE_INPLACE_MIN : 1;

	rc = engine_env_ull(e, "GRAID_OPENCL_PIECE_BYTES", ENGINE_PIECE_BYTES, &piece);
	if (!rc)
		rc = engine_env_ull(e, "GRAID_OPENCL_FAIL_AFTER", ULLONG_MAX, &fail);
	if (rc)
		return rc;
	/* At most a quarter of the largest buffer the device allows; at least a page. */
	e->piece_bytes = piece > cap ? cap : piece < 4096 ? 4096 : (size_t)piece;
	e->max_blocks = ENGINE_MAX_BLOCKS;
	e->fail_after = fail;
	return 0;
}

static int opencl_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	struct graid_engine *e;
	char why[160];
	cl_int err;
	int rc;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->log = cfg->log;
	if (pthread_mutex_init(&e->lock, NULL)) {
		free(e);
		return -ENOMEM;
	}
	if (ocl_device_pick(&e->dev, why, sizeof(why))) {
		/* Only a device asked for by name is worth more than a note. */
		e->log(getenv("GRAID_OPENCL_DEVICE") ? GRAID_LOG_WARNING : GRAID_LOG_INFO,
		       "opencl: %s", why);
		opencl_close(e);
		return -ENODEV;
	}
	e->ctx = clCreateContext(NULL, 1, &e->dev.device, NULL, NULL, &err);
	if (err != CL_SUCCESS) {
		e->ctx = NULL;
		rc = ocl_errno(e->log, err, "clCreateContext");
		goto fail;
	}
	e->queue = clCreateCommandQueue(e->ctx, e->dev.device, 0, &err);
	if (err != CL_SUCCESS) {
		e->queue = NULL;
		rc = ocl_errno(e->log, err, "clCreateCommandQueue");
		goto fail;
	}
	rc = engine_tune(e);
	if (!rc)
		rc = ocl_program_build(e);
	if (rc)
		goto fail;
	e->log(GRAID_LOG_INFO, "opencl: %s; memory %s; pieces of %zu KiB", e->dev.name,
	       engine_memory_names[e->memory], e->piece_bytes >> 10);
	if (e->fail_after != ULLONG_MAX)
		e->log(GRAID_LOG_WARNING,
		       "opencl: GRAID_OPENCL_FAIL_AFTER=%llu: batches fail after that many",
		       e->fail_after);
	*out = e;
	return 0;
fail:
	opencl_close(e);
	return rc;
}

static int engine_arg(struct graid_engine *e, cl_kernel k, cl_uint i, size_t size,
		      const void *val)
{
	cl_int err = clSetKernelArg(k, i, size, val);

	return err == CL_SUCCESS ? 0 : ocl_errno(e->log, err, "clSetKernelArg");
}

/* One launch over the whole piece: bytes of a block along 0, stripes along 1. */
static int engine_launch(struct graid_engine *e, const struct ocl_job *job,
			 const struct ocl_piece *pc)
{
	cl_kernel k = job->op == OCL_OP_GEN ? e->k_gen
		    : job->op == OCL_OP_CHECK ? e->k_check : e->k_recover;
	cl_ulong len = pc->clen;
	cl_uint ndata = job->ndata, nblk = job->nblk, a = 0;
	size_t items = (pc->clen + OCL_ITEM_BYTES - 1) / OCL_ITEM_BYTES;
	size_t local[2] = { e->local0, 1 };
	size_t global[2];
	cl_int err;
	int rc = 0;

	/*
	 * Always the same group size, padding the range instead: PoCL compiles a kernel
	 * anew for every group size it meets (seconds each), and padded items return at once.
	 */
	global[0] = (items + local[0] - 1) / local[0] * local[0];
	global[1] = pc->nstripes;

	for (; a < OCL_NREG && !rc; a++) {
		cl_mem m = NULL;

		if (a < e->nreg || a == OCL_STAGE_REG)
			m = e->reg[a].mem;
		/* Unused buffer arguments are NULL pointers, which OpenCL 1.2 allows. */
		rc = engine_arg(e, k, a, sizeof(cl_mem), m ? (const void *)&m : NULL);
	}
	if (!rc)
		rc = engine_arg(e, k, a++, sizeof(cl_mem), e->tab_wrap ? &e->tab_wrap : &e->tab);
	if (!rc)
		rc = engine_arg(e, k, a++, sizeof(len), &len);
	if (!rc)
		rc = engine_arg(e, k, a++, sizeof(ndata), &ndata);
	if (!rc)
		rc = engine_arg(e, k, a++, sizeof(nblk), &nblk);
	if (job->op != OCL_OP_RECOVER) {
		cl_uint nparity = job->nparity;

		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(nparity), &nparity);
		if (!rc && job->op == OCL_OP_CHECK)
			rc = engine_arg(e, k, a++, sizeof(cl_mem), &e->res);
	} else {
		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(job->mode), &job->mode);
		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(job->x), &job->x);
		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(job->y), &job->y);
		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(job->ca), &job->ca);
		if (!rc)
			rc = engine_arg(e, k, a++, sizeof(job->cb), &job->cb);
	}
	if (rc)
		return rc;
	err = clEnqueueNDRangeKernel(e->queue, k, 2, NULL, global, local, 0, NULL, NULL);
	return err == CL_SUCCESS ? 0 : ocl_errno(e->log, err, "clEnqueueNDRangeKernel");
}

static int engine_piece(struct graid_engine *e, const struct ocl_job *job,
			const struct ocl_piece *pc, size_t nres)
{
	int rc, rc2;

	rc = ocl_piece_prepare(e, job, pc);
	if (!rc)
		rc = engine_launch(e, job, pc);
	if (!rc)
		rc = ocl_piece_collect(e, job, pc, nres);
	rc2 = ocl_piece_release(e, rc != 0);
	return rc ? rc : rc2;
}

/* The verdict of one stripe from the words the check kernel accumulated (see the kernel). */
static int32_t engine_verdict(const struct ocl_job *job, const cl_uint *w)
{
	cl_uint flags = w[0], zmax = w[1] - 1, zmin = 256 - w[2];

	if (!flags)
		return GRAID_CHECK_CLEAN;
	if (job->nparity == 1)
		return GRAID_CHECK_UNLOCATED;
	if (flags == OCL_BAD_P)
		return (int32_t)job->ndata;
	if (flags == OCL_BAD_Q)
		return (int32_t)job->ndata + 1;
	if (flags == OCL_BAD_DATA && zmax == zmin && zmax < job->ndata)
		return (int32_t)zmax;
	return GRAID_CHECK_UNLOCATED;
}

static void engine_check_words(struct graid_engine *e, const struct ocl_job *job, size_t ns,
			       int32_t *result, long *bad)
{
	for (size_t s = 0; s < ns; s++) {
		int32_t v = engine_verdict(job, e->res_host + 3 * s);

		if (result)
			result[s] = v;
		*bad += v != GRAID_CHECK_CLEAN;
	}
}

/* Zero the check words of a row of stripes; the pieces of the row accumulate into them. */
static int engine_check_clear(struct graid_engine *e, size_t ns)
{
	const cl_uint zero = 0;
	size_t size = ns * 3 * sizeof(cl_uint);
	cl_int err;
	int rc;

	rc = ocl_buffer_reserve(e, &e->res, &e->res_cap, size, CL_MEM_READ_WRITE, "check result");
	if (!rc)
		rc = ocl_host_reserve((void **)&e->res_host, &e->res_host_cap, size);
	if (rc)
		return rc;
	err = clEnqueueFillBuffer(e->queue, e->res, &zero, sizeof(zero), 0, size, 0, NULL, NULL);
	return err == CL_SUCCESS ? 0 : ocl_errno(e->log, err, "clEnqueueFillBuffer");
}

/*
 * Cut the batch into pieces of whole stripes that fit the piece size; a stripe larger
 * than a piece on its own is cut across its bytes instead (parity is byte-wise, and the
 * check words accumulate over the cuts).
 */
static long engine_run(struct graid_engine *e, const struct ocl_job *job,
		       const struct graid_stripe_batch *b, int32_t *result)
{
	size_t stripe_bytes = job->nblk * ((b->len + 15) & ~(size_t)15);
	size_t rows, col;
	long bad = 0;
	int rc = 0;

	if (stripe_bytes <= e->piece_bytes) {
		rows = e->piece_bytes / stripe_bytes;
		col = b->len;
	} else {
		rows = 1;
		col = e->piece_bytes / job->nblk / OCL_ITEM_BYTES * OCL_ITEM_BYTES;
		if (col < OCL_ITEM_BYTES)
			col = OCL_ITEM_BYTES;
	}
	if (rows > e->max_blocks / job->nblk)
		rows = e->max_blocks / job->nblk;
	/*
	 * Stripes run along dimension 1, one work-group row each: GPUs bound the groups along
	 * it (65,535 on CUDA's OpenCL, whatever CL_DEVICE_MAX_WORK_ITEM_SIZES says), so no
	 * launch has more rows than that.
	 */
	if (rows > OCL_MAX_ROWS)
		rows = OCL_MAX_ROWS;

	pthread_mutex_lock(&e->lock);
	if (e->batches >= e->fail_after) {
		pthread_mutex_unlock(&e->lock);
		e->log(GRAID_LOG_ERR, "opencl: failing on purpose (GRAID_OPENCL_FAIL_AFTER=%llu)",
		       e->fail_after);
		return -EIO;
	}
	for (size_t s0 = 0; s0 < b->nstripes && !rc; s0 += rows) {
		size_t ns = b->nstripes - s0 < rows ? b->nstripes - s0 : rows;

		if (job->op == OCL_OP_CHECK)
			rc = engine_check_clear(e, ns);
		for (size_t c0 = 0; c0 < b->len && !rc; c0 += col) {
			struct ocl_piece pc = {
				.blocks = b->blocks + s0 * job->nblk,
				.nstripes = ns,
				.coff = c0,
				.clen = b->len - c0 < col ? b->len - c0 : col,
			};

			/* The row's last piece brings its check words back. */
			rc = engine_piece(e, job, &pc,
					  job->op == OCL_OP_CHECK && c0 + pc.clen == b->len ? ns : 0);
		}
		if (!rc && job->op == OCL_OP_CHECK)
			engine_check_words(e, job, ns, result ? result + s0 : NULL, &bad);
	}
	if (!rc)
		e->batches++;
	pthread_mutex_unlock(&e->lock);
	return rc ? rc : bad;
}

static void engine_job_init(struct ocl_job *job, const struct graid_stripe_batch *b,
			    enum ocl_role data_role)
{
	memset(job, 0, sizeof(*job));
	job->ndata = b->ndata;
	job->nparity = b->nparity;
	job->nblk = b->ndata + b->nparity;
	job->x = b->ndata; /* no data block lost */
	job->y = b->ndata;
	memset(job->role, data_role, b->ndata);
}

static int opencl_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	struct ocl_job job;

	engine_job_init(&job, b, OCL_ROLE_IN);
	job.op = OCL_OP_GEN;
	job.role[b->ndata] = OCL_ROLE_OUT;
	if (b->nparity == 2)
		job.role[b->ndata + 1] = OCL_ROLE_OUT;
	return (int)engine_run(e, &job, b, NULL);
}

/* Map the lost blocks onto one of the kernel's recovery modes and its constants. */
static int opencl_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	unsigned P = b->ndata, Q = b->ndata + 1;
	unsigned l0 = b->lost[0], l1 = b->nlost > 1 ? b->lost[1] : UINT_MAX;
	struct ocl_job job;
	unsigned char ca = 0, cb = 0;

	if (b->nlost == 0)
		return 0;
	if (l1 < l0) {
		unsigned t = l0;

		l0 = l1;
		l1 = t;
	}
	engine_job_init(&job, b, OCL_ROLE_IN);
	job.op = OCL_OP_RECOVER;
	if (b->nlost == 1 && l0 < P) {
		job.mode = OCL_MODE_D;
		job.x = l0;
		job.role[P] = OCL_ROLE_IN;
	} else if (b->nlost == 1 && l0 == P) {
		job.mode = OCL_MODE_P;
	} else if (b->nlost == 1) {
		job.mode = OCL_MODE_Q;
	} else if (l1 < P) {
		job.mode = OCL_MODE_DD;
		job.x = l0;
		job.y = l1;
		graid_gf_two_data_coef(l0, l1, &ca, &cb);
		job.role[P] = OCL_ROLE_IN;
		job.role[Q] = OCL_ROLE_IN;
	} else if (l0 < P && l1 == P) {
		job.mode = OCL_MODE_DP;
		job.x = l0;
		ca = graid_gf_exp2(255u - l0); /* g^-x */
		job.role[Q] = OCL_ROLE_IN;
	} else if (l0 < P) {
		job.mode = OCL_MODE_DQ;
		job.x = l0;
		ca = graid_gf_exp2(l0);
		job.role[P] = OCL_ROLE_IN;
	} else {
		job.mode = OCL_MODE_PQ;
	}
	job.ca = ca;
	job.cb = cb;
	job.role[l0] = OCL_ROLE_OUT;
	if (b->nlost > 1)
		job.role[l1] = OCL_ROLE_OUT;
	return (int)engine_run(e, &job, b, NULL);
}

static long opencl_check(struct graid_engine *e, const struct graid_stripe_batch *b,
			 int32_t *result)
{
	struct ocl_job job;

	engine_job_init(&job, b, OCL_ROLE_IN);
	job.op = OCL_OP_CHECK;
	memset(job.role, OCL_ROLE_IN, job.nblk);
	return engine_run(e, &job, b, result);
}

static const struct graid_backend_ops opencl_ops = {
	GRAID_BACKEND_OPS_HEADER,
	.name = "opencl",
	.description = "OpenCL 1.2 kernels on any OpenCL device (PoCL on a CPU, GPUs)",
	.probe = opencl_probe,
	.open = opencl_open,
	.close = opencl_close,
	.gen = opencl_gen,
	.recover = opencl_recover,
	.check = opencl_check,
};

OCL_EXPORT const struct graid_backend_ops *graid_backend_plugin(void);

const struct graid_backend_ops *graid_backend_plugin(void)
{
	return &opencl_ops;
}
