/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the NVIDIA driver's libcuda.so.1, for tests on machines without a GPU: the
 * CUDA runtime linked into the plugin loads it as it would load the driver, reads its version
 * (13.1, which no real toolkit here reports for itself) and gets "no device" from cuInit. So
 * the probe's reason path runs on the real runtime, and a test can tell from the reason that
 * this file, found where the test put it, was the one loaded.
 */

/* CUresult values (cuda.h): success, and no CUDA-capable device. */
#define STANDIN_SUCCESS 0
#define STANDIN_NO_DEVICE 100

__attribute__((visibility("default"))) int cuDriverGetVersion(int *version);
__attribute__((visibility("default"))) int cuInit(unsigned flags);

int cuDriverGetVersion(int *version)
{
	*version = 13010;
	return STANDIN_SUCCESS;
}

int cuInit(unsigned flags)
{
	(void)flags;
	return STANDIN_NO_DEVICE;
}
