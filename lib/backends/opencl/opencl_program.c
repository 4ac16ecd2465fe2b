/* SPDX-License-Identifier: MIT */
/* Building the embedded kernel source once per engine and keeping its kernels. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

/* opencl_kernels.c, generated from opencl_kernels.cl and graid_gf.h by embed_cl.py. */
extern const unsigned char graid_opencl_kernels[];
extern const size_t graid_opencl_kernels_len;

/* The build log says why a kernel did not compile; log its start, it can be long. */
static void program_log_build(struct graid_engine *e)
{
	size_t len = 0;
	char *buf;

	if (clGetProgramBuildInfo(e->prog, e->dev.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) ||
	    len == 0)
		return;
	buf = malloc(len + 1);
	if (!buf)
		return;
	if (!clGetProgramBuildInfo(e->prog, e->dev.device, CL_PROGRAM_BUILD_LOG, len, buf,
				   NULL)) {
		buf[len] = '\0';
		e->log(GRAID_LOG_ERR, "opencl: build log: %.2000s", buf);
	}
	free(buf);
}

static int program_kernel(struct graid_engine *e, const char *name, cl_kernel *out)
{
	cl_int err;

	*out = clCreateKernel(e->prog, name, &err);
	if (err != CL_SUCCESS) {
		*out = NULL;
		return ocl_errno(e->log, err, "clCreateKernel");
	}
	return 0;
}

/*
 * Work-group size along a block. A CPU runs a work-group as one loop on one thread, so
 * it wants groups big enough to amortise the scheduling but small enough that a batch of
 * a few stripes still spreads over every core; a GPU wants a few warps.
 */
static void program_pick_local(struct graid_engine *e)
{
	size_t kmax = e->dev.max_wg;

	clGetKernelWorkGroupInfo(e->k_gen, e->dev.device, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(kmax), &kmax, NULL);
	e->local0 = (e->dev.type & CL_DEVICE_TYPE_CPU) ? 16 : 64;
	while (e->local0 > 1 && (e->local0 > kmax || e->local0 > e->dev.max_item))
		e->local0 /= 2;
}

int ocl_program_build(struct graid_engine *e)
{
	const char *src = (const char *)graid_opencl_kernels;
	size_t len = graid_opencl_kernels_len;
	char opts[64];
	cl_int err;
	int rc;

	e->prog = clCreateProgramWithSource(e->ctx, 1, &src, &len, &err);
	if (err != CL_SUCCESS) {
		e->prog = NULL;
		return ocl_errno(e->log, err, "clCreateProgramWithSource");
	}
	snprintf(opts, sizeof(opts), "-cl-std=CL1.2 -DGRAID_CL_VPI=%d", OCL_VPI);
	err = clBuildProgram(e->prog, 1, &e->dev.device, opts, NULL, NULL);
	if (err != CL_SUCCESS) {
		rc = ocl_errno(e->log, err, "clBuildProgram");
		program_log_build(e);
		return rc;
	}
	rc = program_kernel(e, "graid_cl_gen", &e->k_gen);
	if (!rc)
		rc = program_kernel(e, "graid_cl_recover", &e->k_recover);
	if (!rc)
		rc = program_kernel(e, "graid_cl_check", &e->k_check);
	if (!rc)
		program_pick_local(e);
	return rc;
}
