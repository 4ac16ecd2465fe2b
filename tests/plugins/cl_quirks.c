/* SPDX-License-Identifier: MIT */
/*
 * Preloaded under test_opencl_quirks: stands between the OpenCL engine and the ICD loader
 * to make a real device (PoCL) look like the devices that broke the engine elsewhere —
 * strings longer than any fixed buffer, a GPU's bound on work-groups along a dimension,
 * and a kernel fault reported by the wait that follows it.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The build hides symbols by default; these must override the ICD loader's. */
#define CLQ_EXPORT __attribute__((visibility("default")))

/* Names and a version tail longer than any buffer the engine ever had (63, 76, 48). */
#define CLQ_PAD 300
/* Work-groups along dimension 1 that NVIDIA's OpenCL takes in one launch. */
#define CLQ_MAX_GROUPS_1 65535u

CLQ_EXPORT atomic_size_t clq_string_queries;
CLQ_EXPORT atomic_size_t clq_launches, clq_max_groups_1;
/* Set by the test: the next clFinish after a launch fails as after a kernel fault. */
CLQ_EXPORT atomic_int clq_fault_next_finish;
static atomic_int clq_launched;

/*
 * The ICD loader's own entry point. Not RTLD_NEXT: the engine's plugin is dlopen'ed with
 * its libOpenCL local to it, out of the global scope that RTLD_NEXT searches.
 */
static void *clq_real(const char *name)
{
	static void *lib;

	if (!lib)
		lib = dlopen("libOpenCL.so.1", RTLD_LAZY);
	return lib ? dlsym(lib, name) : NULL;
}

/* The string this layer answers for a query, or NULL to pass it on; malloc'd. */
static char *clq_string(const char *head, const char *real)
{
	size_t h = strlen(head), r = real ? strlen(real) : 0;
	char *s = malloc(h + r + CLQ_PAD + 1);

	if (!s)
		return NULL;
	memcpy(s, head, h);
	if (real)
		memcpy(s + h, real, r);
	memset(s + h + r, 'x', CLQ_PAD);
	s[h + r + CLQ_PAD] = '\0';
	return s;
}

/* Answer as OpenCL does: the size always, the value when it fits, else CL_INVALID_VALUE. */
static cl_int clq_answer(char *s, size_t size, void *value, size_t *size_ret)
{
	size_t n;

	if (!s)
		return CL_OUT_OF_HOST_MEMORY;
	n = strlen(s) + 1;
	atomic_fetch_add(&clq_string_queries, 1);
	if (size_ret)
		*size_ret = n;
	if (value && size < n) {
		free(s);
		return CL_INVALID_VALUE;
	}
	if (value)
		memcpy(value, s, n);
	free(s);
	return CL_SUCCESS;
}

CLQ_EXPORT cl_int CL_API_CALL clGetDeviceInfo(cl_device_id dev, cl_device_info param,
						size_t size, void *value, size_t *size_ret)
{
	cl_int (*real)(cl_device_id, cl_device_info, size_t, void *, size_t *) =
		(cl_int(*)(cl_device_id, cl_device_info, size_t, void *, size_t *))clq_real("clGetDeviceInfo");
	char version[256] = "";

	if (param == CL_DEVICE_NAME)
		return clq_answer(clq_string("LONGDEVICE-", NULL), size, value, size_ret);
	if (param == CL_DEVICE_VERSION) {
		/* The real version first: the engine parses "OpenCL M.N" from it. */
		if (real(dev, param, sizeof(version), version, NULL) != CL_SUCCESS)
			return CL_INVALID_DEVICE;
		return clq_answer(clq_string(version, " HSTR: "), size, value, size_ret);
	}
	return real(dev, param, size, value, size_ret);
}

CLQ_EXPORT cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id plat, cl_platform_info param,
						  size_t size, void *value, size_t *size_ret)
{
	cl_int (*real)(cl_platform_id, cl_platform_info, size_t, void *, size_t *) =
		(cl_int(*)(cl_platform_id, cl_platform_info, size_t, void *, size_t *))clq_real("clGetPlatformInfo");

	if (param == CL_PLATFORM_NAME)
		return clq_answer(clq_string("LONGPLATFORM-", NULL), size, value, size_ret);
	return real(plat, param, size, value, size_ret);
}

CLQ_EXPORT cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
						       cl_uint dims, const size_t *off,
						       const size_t *global, const size_t *local,
						       cl_uint nwait, const cl_event *wait,
						       cl_event *ev)
{
	cl_int (*real)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
		       const size_t *, cl_uint, const cl_event *, cl_event *) =
		(cl_int(*)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
			   const size_t *, cl_uint, const cl_event *,
			   cl_event *))clq_real("clEnqueueNDRangeKernel");
	size_t groups = dims > 1 ? global[1] / (local ? local[1] : 1) : 1;
	size_t seen = atomic_load(&clq_max_groups_1);

	while (groups > seen && !atomic_compare_exchange_weak(&clq_max_groups_1, &seen, groups))
		;
	atomic_fetch_add(&clq_launches, 1);
	if (groups > CLQ_MAX_GROUPS_1)
		return CL_INVALID_GLOBAL_WORK_SIZE; /* as NVIDIA's driver answers */
	atomic_store(&clq_launched, 1);
	return real(q, k, dims, off, global, local, nwait, wait, ev);
}

CLQ_EXPORT cl_int CL_API_CALL clFinish(cl_command_queue q)
{
	cl_int (*real)(cl_command_queue) = (cl_int(*)(cl_command_queue))clq_real(
									       "clFinish");
	cl_int err = real(q);

	if (err == CL_SUCCESS && atomic_exchange(&clq_launched, 0) &&
	    atomic_exchange(&clq_fault_next_finish, 0))
		return CL_OUT_OF_RESOURCES; /* what NVIDIA's driver says after a kernel fault */
	return err;
}
