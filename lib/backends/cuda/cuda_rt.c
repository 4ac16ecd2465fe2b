/* SPDX-License-Identifier: MIT */
/* cuda_rt.h on the CUDA runtime: each call checked, its cudaError_t logged and made an errno. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include <libgraid/graid_backend.h>

#include "cuda_rt.h"

struct cuda_rt {
	int device;
	cuda_log_fn log;
	unsigned max_blocks;          /* grid that fills the device exactly once */
	bool host_ptr_is_device_ptr;  /* registered host memory needs no address translation */
	char lost[256];               /* the error that made the context unusable; "" if none */
};

/* The errno of a CUDA error: what the core acts on (-ENOMEM retry, the rest fail over). */
static int rt_errno(cudaError_t err)
{
	switch (err) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorInvalidDevice:
	case cudaErrorDevicesUnavailable:
	case cudaErrorInitializationError:
	case cudaErrorSystemDriverMismatch:
	case cudaErrorCompatNotSupportedOnDevice:
	/* The driver cannot run this plugin's code on this device: not usable here. */
	case cudaErrorNoKernelImageForDevice:
	case cudaErrorUnsupportedPtxVersion:
	case cudaErrorInvalidKernelImage:
	case cudaErrorJitCompilerNotFound:
	case cudaErrorCallRequiresNewerDriver:
	/* libcuda.so.1 is the toolkit's stub, not a driver. */
	case cudaErrorStubLibrary:
	case cudaErrorSystemNotReady:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/*
 * Errors after which the context cannot be used again in this process: every later call
 * returns them (CUDA calls them sticky). A device that fell off the bus shows as one of
 * these or as cudaErrorDevicesUnavailable after the context existed.
 */
static bool rt_sticky(cudaError_t err)
{
	switch (err) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchFailure:
	case cudaErrorLaunchTimeout:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorAssert:
	case cudaErrorECCUncorrectable:
	case cudaErrorNvlinkUncorrectable:
	case cudaErrorContained:
	case cudaErrorContextIsDestroyed:
	case cudaErrorDevicesUnavailable:
	case cudaErrorUnknown:
		return true;
	default:
		return false;
	}
}

/*
 * Translate at the boundary, keeping CUDA's own name and words in the log. An error that
 * loses the context is not logged here: it is remembered, and the engine logs it once.
 */
static int rt_check(struct cuda_rt *rt, cudaError_t err, const char *what)
{
	if (err == cudaSuccess)
		return 0;
	if (rt->lost[0]) {
		rt->log(GRAID_LOG_DEBUG, "cuda: %s failed on device %d after the context was lost: "
			"%s", what, rt->device, cudaGetErrorName(err));
		return -EIO;
	}
	if (rt_sticky(err)) {
		snprintf(rt->lost, sizeof(rt->lost), "%s failed: %s (%s, %d)", what,
			 cudaGetErrorString(err), cudaGetErrorName(err), (int)err);
		return -EIO;
	}
	rt->log(GRAID_LOG_ERR, "cuda: %s failed on device %d: %s (%s, %d)", what, rt->device,
		cudaGetErrorString(err), cudaGetErrorName(err), (int)err);
	return rt_errno(err);
}

const char *cuda_rt_lost(const struct cuda_rt *rt)
{
	return rt->lost[0] ? rt->lost : NULL;
}

/*
 * Why the probe found no usable device, in the probe's words: CUDA's name for the error,
 * the versions of the driver that was loaded (none: libcuda.so.1 was not found) and of the
 * runtime linked in, then CUDA's sentence. Most of what makes a GPU unusable (no driver, a
 * driver older than the runtime, the toolkit's stub libcuda, a device the driver cannot
 * open) is told apart by these, and the probe is the only place that sees them.
 */
static void rt_probe_why(char *why, size_t len, cudaError_t err)
{
	char drv_text[32] = "no driver loaded";
	int drv = 0, rtv = 0;

	if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
		snprintf(drv_text, sizeof(drv_text), "driver %d.%d", drv / 1000, drv % 1000 / 10);
	(void)cudaRuntimeGetVersion(&rtv);
	snprintf(why, len, "%s (%s, runtime %d.%d): %s", cudaGetErrorName(err), drv_text,
		 rtv / 1000, rtv % 1000 / 10, cudaGetErrorString(err));
}

int cuda_rt_probe(int device, char *desc, size_t desc_len)
{
	struct cudaDeviceProp prop;
	char why[160];
	cudaError_t err;
	int count = 0;

	/* Any failure here (no driver, no device, a runtime that cannot load) means "not on
	 * this machine"; clear the error so that it does not stick to this thread. */
	err = cudaGetDeviceCount(&count);
	if (err != cudaSuccess) {
		(void)cudaGetLastError();
		rt_probe_why(why, sizeof(why), err);
		snprintf(desc, desc_len, "%s", why);
		return -ENODEV;
	}
	if (device < 0 || device >= count) {
		snprintf(desc, desc_len, "GRAID_CUDA_DEVICE=%d, but the driver lists %d device%s",
			 device, count, count == 1 ? "" : "s");
		return -ENODEV;
	}
	err = cudaGetDeviceProperties(&prop, device);
	if (err != cudaSuccess) {
		(void)cudaGetLastError();
		rt_probe_why(why, sizeof(why), err);
		snprintf(desc, desc_len, "device %d: %s", device, why);
		return -ENODEV;
	}
	/* The kernels are built for sm_80 and sm_90 (and PTX of compute_90): older chips
	 * have no image to run, and were never a target. */
	if (prop.major < 8) {
		snprintf(desc, desc_len, "%s (device %d) is sm_%d%d; the engine needs sm_80 or newer",
			 prop.name, device, prop.major, prop.minor);
		return -ENODEV;
	}
	snprintf(desc, desc_len, "%s (device %d, sm_%d%d, %.0f GiB)", prop.name, device,
		 prop.major, prop.minor, (double)prop.totalGlobalMem / (1u << 30));
	return 0;
}

int cuda_rt_open(struct cuda_rt **out, int device, cuda_log_fn log)
{
	struct cuda_rt *rt = calloc(1, sizeof(*rt));
	int sms = 0, per_sm = 0, same_ptr = 0, can_map = 0, major = 0, prev = 0, rc;
	bool bound;

	if (!rt)
		return -ENOMEM;
	rt->device = device;
	rt->log = log;
	rc = cuda_rt_bind(rt, &prev);
	bound = rc == 0;
	if (!rc)
		rc = rt_check(rt, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
							 device), "cudaDeviceGetAttribute");
	if (!rc && major < 8) {
		log(GRAID_LOG_ERR, "cuda: device %d has compute capability %d.x; 8.0 or newer is "
		    "needed", device, major);
		rc = -ENODEV;
	}
	if (!rc)
		rc = rt_check(rt, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
							 device), "cudaDeviceGetAttribute");
	if (!rc)
		rc = rt_check(rt, cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory,
							 device), "cudaDeviceGetAttribute");
	if (!rc)
		rc = rt_check(rt, cudaDeviceGetAttribute(
				      &same_ptr, cudaDevAttrCanUseHostPointerForRegisteredMem,
				      device), "cudaDeviceGetAttribute");
	if (!rc)
		rc = rt_check(rt, (cudaError_t)cuda_kernels_blocks_per_sm(&per_sm),
			      "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
	if (bound)
		cuda_rt_unbind(rt, prev);
	/* A context lost already (by another user of the device) is an unusable device. */
	if (rc && rt->lost[0]) {
		log(GRAID_LOG_ERR, "cuda: device %d: %s", device, rt->lost);
		rc = -ENODEV;
	}
	if (rc) {
		free(rt);
		return rc;
	}
	/* One full wave: every block resident for the whole launch, none waiting for a slot. */
	rt->max_blocks = (unsigned)(sms > 0 ? sms : 1) * (unsigned)(per_sm > 0 ? per_sm : 1);
	rt->host_ptr_is_device_ptr = same_ptr != 0;
	if (!can_map)
		log(GRAID_LOG_INFO, "cuda: device %d cannot map host memory", device);
	*out = rt;
	return 0;
}

void cuda_rt_close(struct cuda_rt *rt)
{
	free(rt);
}

int cuda_rt_bind(struct cuda_rt *rt, int *prev)
{
	int rc = rt_check(rt, cudaGetDevice(prev), "cudaGetDevice");

	if (rc)
		return rc;
	return *prev == rt->device ? 0 : rt_check(rt, cudaSetDevice(rt->device), "cudaSetDevice");
}

void cuda_rt_unbind(struct cuda_rt *rt, int prev)
{
	if (prev != rt->device)
		(void)rt_check(rt, cudaSetDevice(prev), "cudaSetDevice(caller's device)");
}

bool cuda_rt_host_ptr_is_device_ptr(const struct cuda_rt *rt)
{
	return rt->host_ptr_is_device_ptr;
}

int cuda_rt_stream_create(struct cuda_rt *rt, struct cuda_rt_stream **out)
{
	cudaStream_t s;
	/* Non-blocking: never serialised behind the legacy default stream of other users. */
	int rc = rt_check(rt, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
			  "cudaStreamCreateWithFlags");

	if (!rc)
		*out = (struct cuda_rt_stream *)s;
	return rc;
}

void cuda_rt_stream_destroy(struct cuda_rt *rt, struct cuda_rt_stream *s)
{
	if (s)
		rt_check(rt, cudaStreamDestroy((cudaStream_t)s), "cudaStreamDestroy");
}

int cuda_rt_event_create(struct cuda_rt *rt, struct cuda_rt_event **out)
{
	cudaEvent_t ev;
	/* Blocking sync: a thread waiting for a piece sleeps instead of spinning a core that
	 * the CPU's packing and the caller need. */
	int rc = rt_check(rt, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming |
							       cudaEventBlockingSync),
			  "cudaEventCreateWithFlags");

	if (!rc)
		*out = (struct cuda_rt_event *)ev;
	return rc;
}

void cuda_rt_event_destroy(struct cuda_rt *rt, struct cuda_rt_event *ev)
{
	if (ev)
		rt_check(rt, cudaEventDestroy((cudaEvent_t)ev), "cudaEventDestroy");
}

int cuda_rt_device_alloc(struct cuda_rt *rt, void **out, size_t n)
{
	return rt_check(rt, cudaMalloc(out, n), "cudaMalloc");
}

void cuda_rt_device_free(struct cuda_rt *rt, void *p)
{
	if (p)
		rt_check(rt, cudaFree(p), "cudaFree");
}

int cuda_rt_pinned_alloc(struct cuda_rt *rt, void **out, size_t n)
{
	return rt_check(rt, cudaHostAlloc(out, n, cudaHostAllocDefault), "cudaHostAlloc");
}

void cuda_rt_pinned_free(struct cuda_rt *rt, void *p)
{
	if (p)
		rt_check(rt, cudaFreeHost(p), "cudaFreeHost");
}

int cuda_rt_h2d(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s)
{
	return rt_check(rt, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, (cudaStream_t)s),
			"cudaMemcpyAsync(host to device)");
}

int cuda_rt_d2h(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s)
{
	return rt_check(rt, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, (cudaStream_t)s),
			"cudaMemcpyAsync(device to host)");
}

int cuda_rt_launch(struct cuda_rt *rt, const struct cuda_kparams *kp, struct cuda_rt_stream *s)
{
	return rt_check(rt, (cudaError_t)cuda_kernels_launch(kp, rt->max_blocks, s),
			"kernel launch");
}

int cuda_rt_record(struct cuda_rt *rt, struct cuda_rt_event *ev, struct cuda_rt_stream *s)
{
	return rt_check(rt, cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)s), "cudaEventRecord");
}

int cuda_rt_wait(struct cuda_rt *rt, struct cuda_rt_event *ev)
{
	/* Errors of the kernels and copies before the event surface here. */
	return rt_check(rt, cudaEventSynchronize((cudaEvent_t)ev), "cudaEventSynchronize");
}

int cuda_rt_stream_sync(struct cuda_rt *rt, struct cuda_rt_stream *s)
{
	return rt_check(rt, cudaStreamSynchronize((cudaStream_t)s), "cudaStreamSynchronize");
}

int cuda_rt_host_register(struct cuda_rt *rt, void *p, size_t n, bool *mine)
{
	cudaError_t err = cudaHostRegister(p, n, cudaHostRegisterMapped | cudaHostRegisterPortable);

	*mine = err == cudaSuccess;
	if (err == cudaErrorHostMemoryAlreadyRegistered) {
		/* The caller pinned it (or part of it): usable, but not ours to release. */
		(void)cudaGetLastError();
		return 0;
	}
	if (rt->lost[0] || rt_sticky(err))
		return rt_check(rt, err, "cudaHostRegister");
	if (err != cudaSuccess) {
		/* Not fatal: the engine stages this batch instead. Not an error for the log. */
		rt->log(GRAID_LOG_DEBUG, "cuda: cudaHostRegister of %zu bytes: %s (%s)", n,
			cudaGetErrorString(err), cudaGetErrorName(err));
		(void)cudaGetLastError();
		return rt_errno(err) == -ENOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

void cuda_rt_host_unregister(struct cuda_rt *rt, void *p)
{
	rt_check(rt, cudaHostUnregister(p), "cudaHostUnregister");
}

bool cuda_rt_host_is_mapped(struct cuda_rt *rt, const void *p, size_t n)
{
	const unsigned char *ends[2] = { p, (const unsigned char *)p + n - 1 };

	(void)rt;
	for (int i = 0; i < 2; i++) {
		struct cudaPointerAttributes a;

		if (cudaPointerGetAttributes(&a, ends[i]) != cudaSuccess) {
			(void)cudaGetLastError();
			return false;
		}
		if (a.type != cudaMemoryTypeHost || !a.devicePointer)
			return false;
	}
	return true;
}

int cuda_rt_host_devptr(struct cuda_rt *rt, void *p, uint8_t **out)
{
	void *d = NULL;
	int rc = rt_check(rt, cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer");

	if (!rc)
		*out = d;
	return rc;
}
