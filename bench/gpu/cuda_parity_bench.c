/* SPDX-License-Identifier: MIT */
/*
 * CUDA parity benchmark: (a) the P+Q kernel alone on stripes already in GPU memory against a
 * device-to-device copy, (b) the plugin end to end from host memory against a plain
 * host-to-device copy. Prints tables; every result is checked against a CPU reference.
 * Exit 0 whatever the speed, 1 on a wrong result or a CUDA error, 77 with no GPU.
 * Usage: cuda-parity-bench [--quick] [PLUGIN.so]
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <libgraid/graid_backend.h>
#include <libgraid/graid_gf.h>

#include "cuda_plan.h"
#include "cuda_rt.h"

#ifndef CUDA_PLUGIN_PATH
#define CUDA_PLUGIN_PATH "libgraid-backend-cuda.so"
#endif

#define NDATA 8
#define NPAR 2
#define NBLK (NDATA + NPAR)
#define BLOCK (64u << 10)
#define RUNS 7
#define KERNEL_TARGET 0.70  /* kernel traffic / device copy traffic */
#define E2E_TARGET 0.80     /* end-to-end data rate / host-to-device copy rate */

static bool quick;
static int failures;

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t err_ = (call);                                              \
		if (err_ != cudaSuccess) {                                              \
			fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,  \
				cudaGetErrorString(err_), cudaGetErrorName(err_));      \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		const uint64_t v = seed ^ (seed >> 29);

		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

/* CPU reference of one stripe: P = XOR D_k, Q = sum g^k D_k (graid_gf.h's multiplication). */
static uint8_t mul_g[NDATA][256];

static void ref_init(void)
{
	for (unsigned k = 0; k < NDATA; k++)
		for (unsigned x = 0; x < 256; x++)
			mul_g[k][x] = graid_gf_mul(graid_gf_exp2(k), (unsigned char)x);
}

static bool ref_matches(uint8_t *const *data, const uint8_t *p, const uint8_t *q, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t pp = 0, qq = 0;

		for (unsigned k = 0; k < NDATA; k++) {
			pp ^= data[k][i];
			qq ^= mul_g[k][data[k][i]];
		}
		if (pp != p[i] || qq != q[i])
			return false;
	}
	return true;
}

/* Stripes to verify in a batch: all of a small one, a spread of a large one. */
static size_t verify_step(size_t nstripes)
{
	return nstripes <= 64 ? 1 : nstripes / 61;
}

static void print_device(int dev)
{
	struct cudaDeviceProp prop;
	int drv = 0, rtv = 0;

	CK(cudaGetDeviceProperties(&prop, dev));
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rtv);
	printf("GPU %d: %s (sm_%d%d, %d SMs, %.0f GiB, L2 %d MiB, PCI %04x:%02x:%02x), "
	       "driver %d.%d, runtime %d.%d\n",
	       dev, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
	       (double)prop.totalGlobalMem / (1u << 30), prop.l2CacheSize >> 20,
	       prop.pciDomainID, prop.pciBusID, prop.pciDeviceID, drv / 1000, drv % 1000 / 10,
	       rtv / 1000, rtv % 1000 / 10);
}

/* (a) The kernel on n stripes in device memory, and a device copy of the same data. */
static void bench_kernel(size_t n, unsigned max_blocks)
{
	const size_t data_bytes = n * NDATA * (size_t)BLOCK, par_bytes = n * NPAR * (size_t)BLOCK;
	struct cuda_kparams kp;
	cudaEvent_t t0, t1;
	double tk[RUNS], tc[RUNS];
	uint8_t *d_data, *d_par, *d_copy, *h_data, *h_par;
	const int reps = 5;
	size_t bad = 0;

	CK(cudaMalloc((void **)&d_data, data_bytes));
	CK(cudaMalloc((void **)&d_par, par_bytes));
	CK(cudaMalloc((void **)&d_copy, data_bytes));
	h_data = malloc(data_bytes);
	h_par = malloc(par_bytes);
	if (!h_data || !h_par) {
		fprintf(stderr, "out of host memory\n");
		exit(1);
	}
	fill_random(h_data, data_bytes, n);
	CK(cudaMemcpy(d_data, h_data, data_bytes, cudaMemcpyHostToDevice));
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));

	/* The staged layout: data blocks back to back, P and Q in their own region. */
	cuda_plan_case(&kp, CUDA_OP_GEN, NDATA, NPAR, 0, NULL);
	kp.nstripes = (uint32_t)n;
	kp.len = BLOCK;
	kp.nvec = BLOCK / CUDA_VEC;
	kp.stride = BLOCK;
	kp.in_base = d_data;
	kp.out_base = d_par;

	CK((cudaError_t)cuda_kernels_launch(&kp, max_blocks, NULL));   /* warm-up */
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < RUNS; r++) {
		float ms;

		CK(cudaEventRecord(t0, NULL));
		for (int i = 0; i < reps; i++)
			CK((cudaError_t)cuda_kernels_launch(&kp, max_blocks, NULL));
		CK(cudaEventRecord(t1, NULL));
		CK(cudaEventSynchronize(t1));
		CK(cudaEventElapsedTime(&ms, t0, t1));
		tk[r] = ms / 1e3 / reps;

		CK(cudaEventRecord(t0, NULL));
		for (int i = 0; i < reps; i++)
			CK(cudaMemcpyAsync(d_copy, d_data, data_bytes, cudaMemcpyDeviceToDevice, NULL));
		CK(cudaEventRecord(t1, NULL));
		CK(cudaEventSynchronize(t1));
		CK(cudaEventElapsedTime(&ms, t0, t1));
		tc[r] = ms / 1e3 / reps;
	}
	CK(cudaMemcpy(h_par, d_par, par_bytes, cudaMemcpyDeviceToHost));
	for (size_t s = 0; s < n; s += verify_step(n)) {
		uint8_t *data[NDATA];

		for (unsigned k = 0; k < NDATA; k++)
			data[k] = h_data + (s * NDATA + k) * (size_t)BLOCK;
		bad += !ref_matches(data, h_par + s * NPAR * (size_t)BLOCK,
				    h_par + (s * NPAR + 1) * (size_t)BLOCK, BLOCK);
	}
	failures += bad != 0;

	{
		const double k = median(tk, RUNS), c = median(tc, RUNS);
		/* Traffic: bytes read plus bytes written; a copy of N bytes moves 2N. */
		const double ktraffic = (double)(data_bytes + par_bytes) / k / 1e9;
		const double ctraffic = 2.0 * (double)data_bytes / c / 1e9;
		const double ratio = ktraffic / ctraffic;

		printf("  %7zu %7.0f %9.3f %9.1f %12.1f %12.1f %6.0f%% %-5s %s\n", n,
		       (double)(data_bytes + par_bytes) / (1 << 20), k * 1e3,
		       (double)data_bytes / k / 1e9, ktraffic, ctraffic, ratio * 100,
		       ratio >= KERNEL_TARGET ? "met" : "below", bad ? "WRONG" : "ok");
	}
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	cudaFree(d_data);
	cudaFree(d_par);
	cudaFree(d_copy);
	free(h_data);
	free(h_par);
}

/* Host-to-device copy rate from pageable or pinned memory (the yardstick of (b)). */
static double bench_h2d(bool pinned, size_t bytes)
{
	double t[RUNS];
	uint8_t *h, *d;

	CK(cudaMalloc((void **)&d, bytes));
	if (pinned) {
		CK(cudaHostAlloc((void **)&h, bytes, cudaHostAllocDefault));
	} else {
		h = aligned_alloc(4096, bytes);
		if (!h)
			exit(1);
	}
	memset(h, 1, bytes);
	CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
	for (int r = 0; r < RUNS; r++) {
		const double t0 = now_s();

		CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
		t[r] = now_s() - t0;
	}
	cudaFree(d);
	if (pinned)
		cudaFreeHost(h);
	else
		free(h);
	return (double)bytes / median(t, RUNS) / 1e9;
}

static void bench_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > GRAID_LOG_WARNING)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[plugin] ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* (b) gen through the plugin on n stripes of host memory. */
static void bench_e2e(const struct graid_backend_ops *ops, const char *path, bool pinned,
		      size_t n, double h2d)
{
	static const struct graid_backend_config cfg = { .struct_size = sizeof(cfg),
							 .log = bench_log };
	const size_t bytes = n * NBLK * (size_t)BLOCK;
	struct graid_stripe_batch b = { .struct_size = sizeof(b) };
	struct graid_engine *e;
	uint8_t *mem, **blocks;
	double t[RUNS];
	size_t bad = 0;
	int rc;

	setenv("GRAID_CUDA_PATH", path, 1);
	rc = ops->open(&e, &cfg);
	if (rc) {
		printf("  %-7s %-8s %7zu: open failed (%d)\n", path, pinned ? "pinned" : "pageable", n,
		       rc);
		failures++;
		return;
	}
	if (pinned) {
		CK(cudaHostAlloc((void **)&mem, bytes, cudaHostAllocDefault));
	} else {
		mem = aligned_alloc(4096, bytes);
		if (!mem)
			exit(1);
	}
	blocks = malloc(n * NBLK * sizeof(*blocks));
	if (!blocks)
		exit(1);
	fill_random(mem, bytes, 7 * n + pinned);
	for (size_t i = 0; i < n * NBLK; i++)
		blocks[i] = mem + i * (size_t)BLOCK;
	b.ndata = NDATA;
	b.nparity = NPAR;
	b.len = BLOCK;
	b.nstripes = n;
	b.blocks = blocks;

	rc = ops->gen(e, &b);   /* warm-up: staging buffers grow here, once */
	for (int r = 0; !rc && r < RUNS; r++) {
		const double t0 = now_s();

		rc = ops->gen(e, &b);
		t[r] = now_s() - t0;
	}
	if (rc) {
		printf("  %-7s %-8s %7zu: gen failed (%d)\n", path, pinned ? "pinned" : "pageable", n,
		       rc);
		failures++;
	} else {
		for (size_t s = 0; s < n; s += verify_step(n))
			bad += !ref_matches(blocks + s * NBLK, blocks[s * NBLK + NDATA],
					    blocks[s * NBLK + NDATA + 1], BLOCK);
		failures += bad != 0;
		const double m = median(t, RUNS);
		const double gbps = (double)(n * NDATA * (size_t)BLOCK) / m / 1e9;

		printf("  %-7s %-8s %7zu %7.1f %9.3f %9.1f %8.1f %6.0f%% %-5s %s\n", path,
		       pinned ? "pinned" : "pageable", n, (double)(n * NDATA * (size_t)BLOCK) / (1 << 20),
		       m * 1e3, gbps, h2d, gbps / h2d * 100, gbps / h2d >= E2E_TARGET ? "met" : "below",
		       bad ? "WRONG" : "ok");
	}
	ops->close(e);
	if (pinned)
		cudaFreeHost(mem);
	else
		free(mem);
	free(blocks);
}

int main(int argc, char **argv)
{
	static const size_t kernel_sizes[] = { 64, 256, 1024 };
	static const size_t e2e_sizes[] = { 4, 32, 256, 1024 };
	const char *plugin = CUDA_PLUGIN_PATH, *env = getenv("GRAID_CUDA_DEVICE");
	const int dev = env ? atoi(env) : 0;
	const struct graid_backend_ops *ops;
	graid_backend_plugin_fn entry;
	int count = 0, sms = 0, per_sm = 0;
	double h2d[2];
	void *dl;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else
			plugin = argv[i];
	}
	if (cudaGetDeviceCount(&count) != cudaSuccess || count <= dev) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	CK(cudaSetDevice(dev));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CK((cudaError_t)cuda_kernels_blocks_per_sm(&per_sm));   /* the plugin's grid, as cuda_rt.c */
	ref_init();
	print_device(dev);

	printf("\n(a) kernel only: P+Q of %d+%d x %u KiB stripes in GPU memory, median of %d\n"
	       "    traffic = bytes read + written; D2D = cudaMemcpy device to device "
	       "(2 x bytes copied); target >= %.0f%%\n",
	       NDATA, NPAR, BLOCK >> 10, RUNS, KERNEL_TARGET * 100);
	printf("  %7s %7s %9s %9s %12s %12s %7s %-5s %s\n", "stripes", "MiB", "ms", "data GB/s",
	       "kernel GB/s", "D2D GB/s", "ratio", "goal", "check");
	for (unsigned i = 0; i < sizeof(kernel_sizes) / sizeof(kernel_sizes[0]); i++)
		if (!quick || i == 1)
			bench_kernel(kernel_sizes[i], (unsigned)(sms * per_sm));

	h2d[0] = bench_h2d(false, 256u << 20);
	h2d[1] = bench_h2d(true, 256u << 20);
	printf("\n    host to device cudaMemcpy, 256 MiB: pageable %.1f GB/s, pinned %.1f GB/s\n",
	       h2d[0], h2d[1]);

	dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	entry = dl ? (graid_backend_plugin_fn)dlsym(dl, GRAID_BACKEND_PLUGIN_SYMBOL) : NULL;
	ops = entry ? entry() : NULL;
	if (!ops) {
		fprintf(stderr, "cannot load the plugin %s: %s\n", plugin, dlerror());
		return 1;
	}
	printf("\n(b) end to end: gen through the plugin (%s), %d+%d x %u KiB stripes from host "
	       "memory,\n    median of %d; ratio = data GB/s / H2D GB/s of the same memory; "
	       "target >= %.0f%%\n",
	       plugin, NDATA, NPAR, BLOCK >> 10, RUNS, E2E_TARGET * 100);
	printf("  %-7s %-8s %7s %7s %9s %9s %8s %7s %-5s %s\n", "path", "memory", "stripes",
	       "MiB", "ms", "data GB/s", "H2D GB/s", "ratio", "goal", "check");
	for (int path = 0; path < 2; path++)
		for (int pinned = 0; pinned < 2; pinned++)
			for (unsigned i = 0; i < sizeof(e2e_sizes) / sizeof(e2e_sizes[0]); i++)
				if (!quick || i == 2)
					bench_e2e(ops, path ? "mapped" : "staged", pinned,
						  e2e_sizes[i], h2d[pinned]);
	unsetenv("GRAID_CUDA_PATH");
	printf("\n%s\n", failures ? "RESULTS WRONG (see above)" : "all results verified");
	return failures ? 1 : 0;
}
