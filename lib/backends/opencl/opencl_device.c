/* SPDX-License-Identifier: MIT */
/* Choosing the OpenCL device (GRAID_OPENCL_DEVICE, else the first GPU, else any); describing it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

#define DEVICE_MAX_PLATFORMS 16
#define DEVICE_MAX_DEVICES 32

/*
 * A string property of a platform (dev NULL) or a device, in memory sized by asking the
 * length first: no fixed buffer can fail a device whose string is longer than expected
 * (PoCL on AVX-512 CPUs reports a CL_DEVICE_VERSION of 64 characters). malloc'd, NUL
 * terminated; NULL when the query fails or memory runs out.
 */
static char *ocl_info_string(cl_platform_id plat, cl_device_id dev, cl_uint param)
{
	size_t n = 0;
	cl_int err;
	char *s;

	err = dev ? clGetDeviceInfo(dev, param, 0, NULL, &n)
		  : clGetPlatformInfo(plat, param, 0, NULL, &n);
	if (err != CL_SUCCESS)
		return NULL;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	err = dev ? clGetDeviceInfo(dev, param, n, s, NULL)
		  : clGetPlatformInfo(plat, param, n, s, NULL);
	if (err != CL_SUCCESS) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	return s;
}

/*
 * Whether the engine can run on a device: the kernels are built from source and use
 * OpenCL 1.2 host calls, so a device needs a compiler and version 1.2 or later. If not,
 * why, in words.
 */
static int device_usable(cl_device_id dev, char *why, size_t why_len)
{
	cl_bool avail = CL_FALSE, compiler = CL_FALSE;
	char *version;
	int major = 0, minor = 0, parsed;

	if (clGetDeviceInfo(dev, CL_DEVICE_AVAILABLE, sizeof(avail), &avail, NULL) ||
	    clGetDeviceInfo(dev, CL_DEVICE_COMPILER_AVAILABLE, sizeof(compiler), &compiler,
			    NULL)) {
		snprintf(why, why_len, "clGetDeviceInfo failed");
		return 0;
	}
	version = ocl_info_string(NULL, dev, CL_DEVICE_VERSION);
	if (!version) {
		snprintf(why, why_len, "CL_DEVICE_VERSION could not be read");
		return 0;
	}
	/* "OpenCL <major>.<minor> <vendor-specific>" */
	parsed = sscanf(version, "OpenCL %d.%d", &major, &minor) == 2;
	if (!parsed)
		snprintf(why, why_len, "CL_DEVICE_VERSION \"%.60s\" is not OpenCL M.N", version);
	else if (major < 1 || (major == 1 && minor < 2))
		snprintf(why, why_len, "device is OpenCL %d.%d, the engine needs 1.2", major,
			 minor);
	else if (!avail)
		snprintf(why, why_len, "device not available");
	else if (!compiler)
		snprintf(why, why_len, "device has no OpenCL C compiler");
	else
		why[0] = '\0';
	free(version);
	return why[0] == '\0'; /* usable exactly when no reason was given */
}

/* Parse "P:D" (decimal indices); -1 when malformed. */
static int device_parse_env(const char *s, unsigned *p, unsigned *d)
{
	char *end;
	unsigned long a, b;

	a = strtoul(s, &end, 10);
	if (end == s || *end != ':')
		return -1;
	s = end + 1;
	b = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || a >= DEVICE_MAX_PLATFORMS || b >= DEVICE_MAX_DEVICES)
		return -1;
	*p = (unsigned)a;
	*d = (unsigned)b;
	return 0;
}

static void device_describe(struct ocl_device *d)
{
	char *pname = ocl_info_string(d->platform, NULL, CL_PLATFORM_NAME);
	char *dname = ocl_info_string(NULL, d->device, CL_DEVICE_NAME);
	cl_bool unified = CL_FALSE;
	cl_uint dims = 0;

	/*
	 * Names longer than the field are cut, not dropped: the platform's to at most half of
	 * it, so that the device's name, which says more, keeps the rest.
	 */
	snprintf(d->name, sizeof(d->name), "%.*s / %s", (int)(sizeof(d->name) / 2),
		 pname ? pname : "?", dname ? dname : "?");
	free(pname);
	free(dname);

	d->type = 0;
	clGetDeviceInfo(d->device, CL_DEVICE_TYPE, sizeof(d->type), &d->type, NULL);
	clGetDeviceInfo(d->device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified,
			NULL);
	d->host_memory = (d->type & CL_DEVICE_TYPE_CPU) || unified;
	d->max_alloc = 128u << 20; /* the least OpenCL promises, should the query fail */
	clGetDeviceInfo(d->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(d->max_alloc),
			&d->max_alloc, NULL);
	d->max_wg = 1;
	clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(d->max_wg),
			&d->max_wg, NULL);
	/* The most work-items along each dimension of a group (OpenCL promises 3 dimensions). */
	d->max_item = d->max_wg;
	if (clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof(dims), &dims,
			    NULL) == CL_SUCCESS && dims >= 2 && dims <= OCL_MAX_DIMS) {
		size_t sizes[OCL_MAX_DIMS];

		if (clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
				    sizes, NULL) == CL_SUCCESS) {
			d->max_item = sizes[0];
		}
	}
}

/*
 * Fill d with the device to use. Returns 0, or -ENODEV with the reason in why (the probe
 * stays silent; open logs it). Never prints.
 */
int ocl_device_pick(struct ocl_device *d, char *why, size_t why_len)
{
	cl_platform_id plats[DEVICE_MAX_PLATFORMS];
	cl_uint nplat = 0;
	const char *env = getenv("GRAID_OPENCL_DEVICE");
	unsigned want_p = 0, want_d = 0;
	int have_first = 0;
	unsigned nunusable = 0;
	char reason[128] = "";
	cl_int err;

	memset(d, 0, sizeof(*d));
	if (env && *env && device_parse_env(env, &want_p, &want_d)) {
		snprintf(why, why_len, "GRAID_OPENCL_DEVICE=%s is not PLATFORM:DEVICE", env);
		return -ENODEV;
	}
	err = clGetPlatformIDs(DEVICE_MAX_PLATFORMS, plats, &nplat);
	if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && nplat == 0)) {
		snprintf(why, why_len, "no OpenCL platform");
		return -ENODEV;
	}
	if (err != CL_SUCCESS) {
		snprintf(why, why_len, "clGetPlatformIDs failed: %s (%d)", ocl_error_name(err),
			 (int)err);
		return -ENODEV;
	}
	if (nplat > DEVICE_MAX_PLATFORMS)
		nplat = DEVICE_MAX_PLATFORMS;

	for (cl_uint p = 0; p < nplat; p++) {
		cl_device_id devs[DEVICE_MAX_DEVICES];
		cl_uint ndev = 0;

		err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, DEVICE_MAX_DEVICES, devs, &ndev);
		if (err != CL_SUCCESS)
			continue; /* CL_DEVICE_NOT_FOUND: a platform with nothing on it */
		if (ndev > DEVICE_MAX_DEVICES)
			ndev = DEVICE_MAX_DEVICES;
		for (cl_uint i = 0; i < ndev; i++) {
			cl_device_type type = 0;

			if (env && *env) {
				if (p != want_p || i != want_d)
					continue;
				if (!device_usable(devs[i], reason, sizeof(reason))) {
					snprintf(why, why_len, "GRAID_OPENCL_DEVICE=%s: %s", env,
						 reason);
					return -ENODEV;
				}
				d->platform = plats[p];
				d->device = devs[i];
				device_describe(d);
				return 0;
			}
			if (!device_usable(devs[i], reason, sizeof(reason))) {
				nunusable++;
				continue;
			}
			clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
			if (type & CL_DEVICE_TYPE_GPU) {
				d->platform = plats[p];
				d->device = devs[i];
				device_describe(d);
				return 0;
			}
			if (!have_first) {
				d->platform = plats[p];
				d->device = devs[i];
				have_first = 1;
			}
		}
	}
	if (env && *env) {
		snprintf(why, why_len, "GRAID_OPENCL_DEVICE=%s: no such platform or device", env);
		return -ENODEV;
	}
	if (!have_first) {
		if (nunusable)
			snprintf(why, why_len, "no usable OpenCL device: %u unusable, the last: %s",
				 nunusable, reason);
		else
			snprintf(why, why_len, "no OpenCL device on %u platform%s", (unsigned)nplat,
				 nplat == 1 ? "" : "s");
		return -ENODEV;
	}
	device_describe(d);
	return 0;
}

/* The probe's flags: where the device reads its data from, and whether it is an accelerator. */
uint32_t ocl_device_flags(const struct ocl_device *d)
{
	uint32_t flags = 0;

	if (d->host_memory)
		flags |= GRAID_BACKEND_F_HOST_MEMORY;
	if (d->type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR))
		flags |= GRAID_BACKEND_F_ACCELERATOR;
	return flags;
}
