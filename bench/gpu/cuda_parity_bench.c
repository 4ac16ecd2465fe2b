/* SPDX-License-Identifier: MIT */
/*
 * CUDA parity benchmark. (a) The kernel alone on stripes already in GPU memory — P+Q
 * generation, recovery of two data blocks, check — at 8+2 and 22+2, on 256, 1024 and 4096
 * stripes of 64 KiB (every batch well above the L2 cache), beside this device's own
 * device-to-device copy rate. (b) gen, two-data recovery and check through the plugin end
 * to end from host memory, staged and mapped, pageable and pinned, beside this device's
 * host-to-device copy rate.
 * Prints tables; every result is checked against a CPU reference, and any warning from the
 * plugin (a mapped run that staged, an error) counts as a failure.
 * Exit 0 whatever the speed, 1 on a wrong result, a plugin warning or a CUDA error, 77 with
 * no GPU.
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

#define MAX_DATA 32
#define NPAR 2
#define BLOCK (64u << 10)
#define RUNS 5
#define KERNEL_TARGET 0.70  /* kernel traffic / device copy traffic */
#define E2E_TARGET 0.80     /* end-to-end data rate / host-to-device copy rate */
#define PATTERN (64u << 20) /* random bytes that fill every buffer, repeated */
#define YARDSTICK (1ull << 30) /* bytes of the copies the others are compared with */

static bool quick;
static int failures;
static uint8_t *pattern;    /* pinned, PATTERN random bytes */

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

static void *xmalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);

	if (!p) {
		fprintf(stderr, "out of host memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* Fill host or device memory with the random pattern, repeated. */
static void fill(uint8_t *dst, size_t n, bool device)
{
	for (size_t off = 0; off < n; off += PATTERN) {
		const size_t k = n - off < PATTERN ? n - off : PATTERN;

		if (device)
			CK(cudaMemcpy(dst + off, pattern, k, cudaMemcpyHostToDevice));
		else
			memcpy(dst + off, pattern, k);
	}
}

/* CPU reference: P = XOR D_k, Q = sum g^k D_k (graid_gf.h's multiplication). */
static uint8_t mul_g[MAX_DATA][256];

static void ref_init(void)
{
	for (unsigned k = 0; k < MAX_DATA; k++)
		for (unsigned x = 0; x < 256; x++)
			mul_g[k][x] = graid_gf_mul(graid_gf_exp2(k), (unsigned char)x);
}

static bool ref_matches(unsigned ndata, uint8_t *const *data, const uint8_t *p,
			const uint8_t *q, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t pp = 0, qq = 0;

		for (unsigned k = 0; k < ndata; k++) {
			pp ^= data[k][i];
			qq ^= mul_g[k][data[k][i]];
		}
		if (pp != p[i] || qq != q[i])
			return false;
	}
	return true;
}

/* Stripes to verify in a batch: all of a small one, about 31 of a large one. */
static size_t verify_step(size_t nstripes)
{
	return nstripes <= 32 ? 1 : nstripes / 31;
}

/* The plugin's log: shown, and a warning or worse is a failure of the run. */
static void bench_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > GRAID_LOG_WARNING)
		return;
	failures++;
	va_start(ap, fmt);
	fprintf(stderr, "[plugin] ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
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

/* Traffic rate of a device-to-device copy of YARDSTICK bytes (read + written). */
static double bench_d2d(void)
{
	uint8_t *a, *b;
	cudaEvent_t t0, t1;
	double t[RUNS];

	CK(cudaMalloc((void **)&a, YARDSTICK));
	CK(cudaMalloc((void **)&b, YARDSTICK));
	fill(a, YARDSTICK, true);
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	CK(cudaMemcpy(b, a, YARDSTICK, cudaMemcpyDeviceToDevice));
	for (int r = 0; r < RUNS; r++) {
		float ms;

		CK(cudaEventRecord(t0, NULL));
		CK(cudaMemcpyAsync(b, a, YARDSTICK, cudaMemcpyDeviceToDevice, NULL));
		CK(cudaEventRecord(t1, NULL));
		CK(cudaEventSynchronize(t1));
		CK(cudaEventElapsedTime(&ms, t0, t1));
		t[r] = ms / 1e3;
	}
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	cudaFree(a);
	cudaFree(b);
	return 2.0 * (double)YARDSTICK / median(t, RUNS) / 1e9;
}

/* Host-to-device copy rate of YARDSTICK bytes from pageable or pinned memory. */
static double bench_h2d(bool pinned)
{
	double t[RUNS];
	uint8_t *h, *d;

	CK(cudaMalloc((void **)&d, YARDSTICK));
	if (pinned)
		CK(cudaHostAlloc((void **)&h, YARDSTICK, cudaHostAllocDefault));
	else
		h = xmalloc(YARDSTICK);
	fill(h, YARDSTICK, false);
	CK(cudaMemcpy(d, h, YARDSTICK, cudaMemcpyHostToDevice));
	for (int r = 0; r < RUNS; r++) {
		const double t0 = now_s();

		CK(cudaMemcpy(d, h, YARDSTICK, cudaMemcpyHostToDevice));
		t[r] = now_s() - t0;
	}
	cudaFree(d);
	if (pinned)
		cudaFreeHost(h);
	else
		free(h);
	return (double)YARDSTICK / median(t, RUNS) / 1e9;
}

/*
 * The staged kernel's addressing with every block of a stripe side by side: the input and
 * output regions are one region of nblk blocks per stripe, and block j sits at slot j.
 */
static void kernel_layout(struct cuda_kparams *kp, size_t n, uint8_t *d)
{
	for (unsigned j = 0; j < kp->nblk; j++)
		if (kp->map[j] != CUDA_MAP_NONE)
			kp->map[j] = (uint16_t)((kp->map[j] & CUDA_MAP_OUT) | j);
	kp->nin = kp->nout = (uint16_t)kp->nblk;
	kp->nstripes = (uint32_t)n;
	kp->len = BLOCK;
	kp->nvec = BLOCK / CUDA_VEC;
	kp->stride = BLOCK;
	kp->in_base = kp->out_base = d;
	kp->table = NULL;
}

/* Median seconds of one launch of kp. */
static double time_kernel(const struct cuda_kparams *kp, unsigned max_blocks)
{
	const int reps = 3;
	cudaEvent_t t0, t1;
	double t[RUNS];

	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	CK((cudaError_t)cuda_kernels_launch(kp, max_blocks, NULL));   /* warm-up */
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < RUNS; r++) {
		float ms;

		CK(cudaEventRecord(t0, NULL));
		for (int i = 0; i < reps; i++)
			CK((cudaError_t)cuda_kernels_launch(kp, max_blocks, NULL));
		CK(cudaEventRecord(t1, NULL));
		CK(cudaEventSynchronize(t1));
		CK(cudaEventElapsedTime(&ms, t0, t1));
		t[r] = ms / 1e3 / reps;
	}
	CK(cudaGetLastError());
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	return median(t, RUNS);
}

/* Sampled stripes of d: data and parity must agree (after gen, and after recovery). */
static size_t verify_device(unsigned ndata, size_t n, const uint8_t *d)
{
	const unsigned nblk = ndata + NPAR;
	uint8_t *h = xmalloc((size_t)nblk * BLOCK), *data[MAX_DATA];
	size_t bad = 0;

	for (unsigned k = 0; k < ndata; k++)
		data[k] = h + (size_t)k * BLOCK;
	for (size_t s = 0; s < n; s += verify_step(n)) {
		CK(cudaMemcpy(h, d + s * nblk * (size_t)BLOCK, (size_t)nblk * BLOCK,
			      cudaMemcpyDeviceToHost));
		bad += !ref_matches(ndata, data, h + (size_t)ndata * BLOCK,
				    h + (size_t)(ndata + 1) * BLOCK, BLOCK);
	}
	free(h);
	return bad;
}

static void kernel_row(unsigned ndata, size_t n, const char *op, double secs, double copy,
		       const char *check)
{
	const double traffic = (double)n * (ndata + NPAR) * BLOCK / secs / 1e9;

	printf("  %2u+%u %7zu %7.0f %-8s %9.3f %10.1f %12.1f %6.0f%% %-5s %s\n", ndata, NPAR, n,
	       (double)n * (ndata + NPAR) * BLOCK / (1 << 20), op, secs * 1e3,
	       (double)n * ndata * BLOCK / secs / 1e9, traffic, traffic / copy * 100,
	       traffic / copy >= KERNEL_TARGET ? "met" : "below", check);
	fflush(stdout);
}

/* Time kp (gen or recover) on d, then check that data and parity agree, and print its row. */
static void kernel_gen_or_recover(struct cuda_kparams *kp, unsigned ndata, size_t n, uint8_t *d,
				  unsigned max_blocks, double copy, const char *op)
{
	double t;
	size_t bad;

	kernel_layout(kp, n, d);
	t = time_kernel(kp, max_blocks);
	bad = verify_device(ndata, n, d);
	failures += bad != 0;
	kernel_row(ndata, n, op, t, copy, bad ? "WRONG" : "ok");
}

/* (a) gen, two-data recovery and check of n stripes in device memory. */
static void bench_kernel(unsigned ndata, size_t n, unsigned max_blocks, double copy)
{
	const unsigned nblk = ndata + NPAR, lost[2] = { 0, 1 };
	const size_t bytes = n * nblk * (size_t)BLOCK;
	struct cuda_kparams kp;
	uint32_t *acc, *hacc;
	uint8_t *d;
	size_t bad;
	double t;

	CK(cudaMalloc((void **)&d, bytes));
	CK(cudaMalloc((void **)&acc, n * 3 * sizeof(uint32_t)));
	fill(d, bytes, true);

	/* Every operation moves (reads + writes) nblk blocks per stripe. */
	cuda_plan_case(&kp, CUDA_OP_GEN, ndata, NPAR, 0, NULL);
	kernel_gen_or_recover(&kp, ndata, n, d, max_blocks, copy, "gen P+Q");
	/* Data blocks 0 and 1 of every stripe wiped, then rebuilt from the rest and P, Q. */
	CK(cudaMemset2D(d, (size_t)nblk * BLOCK, 0, 2 * (size_t)BLOCK, n));
	cuda_plan_case(&kp, CUDA_OP_RECOVER, ndata, NPAR, 2, lost);
	kernel_gen_or_recover(&kp, ndata, n, d, max_blocks, copy, "rec D+D");

	/* A clean batch: every stripe's accumulator must stay zero. */
	CK(cudaMemset(acc, 0, n * 3 * sizeof(uint32_t)));
	cuda_plan_case(&kp, CUDA_OP_CHECK, ndata, NPAR, 0, NULL);
	kernel_layout(&kp, n, d);
	kp.acc = acc;
	t = time_kernel(&kp, max_blocks);
	hacc = xmalloc(n * 3 * sizeof(uint32_t));
	CK(cudaMemcpy(hacc, acc, n * 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost));
	bad = 0;
	for (size_t s = 0; s < n; s++)
		bad += cuda_plan_verdict(hacc + 3 * s, ndata, NPAR) != GRAID_CHECK_CLEAN;
	/*
	 * And one that is not: a byte of data block 3 of stripe 0 flipped, one launch, and the
	 * verdict must name that block (a kernel that never writes its accumulator reads clean).
	 */
	{
		uint8_t byte;

		CK(cudaMemcpy(&byte, d + 3 * (size_t)BLOCK + 7, 1, cudaMemcpyDeviceToHost));
		byte ^= 0x5a;
		CK(cudaMemcpy(d + 3 * (size_t)BLOCK + 7, &byte, 1, cudaMemcpyHostToDevice));
		CK(cudaMemset(acc, 0, n * 3 * sizeof(uint32_t)));
		CK((cudaError_t)cuda_kernels_launch(&kp, max_blocks, NULL));
		CK(cudaMemcpy(hacc, acc, 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost));
		bad += cuda_plan_verdict(hacc, ndata, NPAR) != 3;
	}
	failures += bad != 0;
	kernel_row(ndata, n, "check", t, copy, bad ? "WRONG" : "ok");
	free(hacc);
	cudaFree(acc);
	cudaFree(d);
}

/* (b): the operations through the plugin, end to end. */
enum e2e_op { E2E_GEN, E2E_REC, E2E_CHECK };

static const char *const e2e_op_name[] = { "gen P+Q", "rec D+D", "check" };

/* One operation on the whole batch; 0, or the plugin's error (check: its count of bad). */
static long e2e_call(const struct graid_backend_ops *ops, struct graid_engine *e,
		     struct graid_stripe_batch *b, enum e2e_op op, int32_t *res)
{
	static const unsigned lost[2] = { 0, 1 };

	b->nlost = op == E2E_REC ? 2 : 0;
	memcpy(b->lost, lost, sizeof(lost));
	if (op == E2E_GEN)
		return ops->gen(e, b);
	if (op == E2E_REC)
		return ops->recover(e, b);
	return ops->check(e, b, res);
}

/*
 * Time one operation on b (a warm-up, then RUNS), then check its result: gen and recovery by
 * the CPU reference on sampled stripes (recovery starts from data blocks 0 and 1 wiped), check
 * by a clean verdict on every stripe and, after one flipped byte, the block it names.
 */
static void e2e_row(const struct graid_backend_ops *ops, struct graid_engine *e,
		    struct graid_stripe_batch *b, enum e2e_op op, const char *path,
		    const char *mem_kind, double h2d)
{
	const unsigned ndata = b->ndata, nblk = ndata + NPAR;
	const size_t n = b->nstripes;
	const int before = failures;
	int32_t *res = op == E2E_CHECK ? xmalloc(n * sizeof(*res)) : NULL;
	double t[RUNS];
	size_t bad = 0;
	long rc;

	if (op == E2E_REC)
		for (size_t s = 0; s < n; s++) {
			memset(b->blocks[s * nblk], 0, BLOCK);
			memset(b->blocks[s * nblk + 1], 0, BLOCK);
		}
	rc = e2e_call(ops, e, b, op, res);   /* warm-up: staging buffers grow here, once */
	for (int r = 0; !rc && r < RUNS; r++) {
		const double t0 = now_s();

		rc = e2e_call(ops, e, b, op, res);
		t[r] = now_s() - t0;
	}
	if (rc) {
		printf("  %-7s %-8s %-8s %2u+%u %7zu: failed (%ld)\n", path, mem_kind,
		       e2e_op_name[op], ndata, NPAR, n, rc);
		failures++;
		free(res);
		return;
	}
	if (op == E2E_CHECK) {
		for (size_t s = 0; s < n; s++)
			bad += res[s] != GRAID_CHECK_CLEAN;
		/* A kernel that never wrote its verdicts would read clean: one stripe that is not. */
		b->blocks[3][7] ^= 0x5a;
		rc = e2e_call(ops, e, b, op, res);
		bad += rc != 1 || res[0] != 3;
		b->blocks[3][7] ^= 0x5a;
	} else {
		for (size_t s = 0; s < n; s += verify_step(n))
			bad += !ref_matches(ndata, b->blocks + s * nblk, b->blocks[s * nblk + ndata],
					    b->blocks[s * nblk + ndata + 1], BLOCK);
	}
	failures += bad != 0;
	const double m = median(t, RUNS);
	const double gbps = (double)(n * ndata * (size_t)BLOCK) / m / 1e9;

	printf("  %-7s %-8s %-8s %2u+%u %7zu %7.1f %9.3f %9.1f %8.1f %6.0f%% %-5s %s\n", path,
	       mem_kind, e2e_op_name[op], ndata, NPAR, n,
	       (double)(n * ndata * (size_t)BLOCK) / (1 << 20), m * 1e3, gbps, h2d,
	       gbps / h2d * 100, gbps / h2d >= E2E_TARGET ? "met" : "below",
	       bad ? "WRONG" : failures != before ? "WARNED" : "ok");
	fflush(stdout);
	free(res);
}

/* (b) the plugin on n stripes of host memory: gen, and with ops_all recovery and check too. */
static void bench_e2e(const struct graid_backend_ops *ops, const char *path, bool pinned,
		      unsigned ndata, size_t n, bool ops_all, double h2d)
{
	static const struct graid_backend_config cfg = { .struct_size = sizeof(cfg),
							 .log = bench_log };
	const unsigned nblk = ndata + NPAR;
	const size_t bytes = n * nblk * (size_t)BLOCK;
	const char *mem_kind = pinned ? "pinned" : "pageable";
	struct graid_stripe_batch b = { .struct_size = sizeof(b) };
	struct graid_engine *e;
	uint8_t *mem, **blocks;
	int rc;

	setenv("GRAID_CUDA_PATH", path, 1);
	rc = ops->open(&e, &cfg);
	if (rc) {
		printf("  %-7s %-8s %2u+%u %7zu: open failed (%d)\n", path, mem_kind, ndata, NPAR, n,
		       rc);
		failures++;
		return;
	}
	if (pinned)
		CK(cudaHostAlloc((void **)&mem, bytes, cudaHostAllocDefault));
	else
		mem = xmalloc(bytes);
	blocks = xmalloc(n * nblk * sizeof(*blocks));
	fill(mem, bytes, false);
	for (size_t i = 0; i < n * nblk; i++)
		blocks[i] = mem + i * (size_t)BLOCK;
	b.ndata = ndata;
	b.nparity = NPAR;
	b.len = BLOCK;
	b.nstripes = n;
	b.blocks = blocks;

	/* Each row starts from the last one's correct parity: gen first. */
	e2e_row(ops, e, &b, E2E_GEN, path, mem_kind, h2d);
	if (ops_all) {
		e2e_row(ops, e, &b, E2E_REC, path, mem_kind, h2d);
		e2e_row(ops, e, &b, E2E_CHECK, path, mem_kind, h2d);
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
	static const unsigned shapes[] = { 8, 22 };
	static const size_t sizes[] = { 256, 1024, 4096 };
	const char *plugin = CUDA_PLUGIN_PATH, *env = getenv("GRAID_CUDA_DEVICE");
	const int dev = env ? atoi(env) : 0;
	const struct graid_backend_ops *ops;
	graid_backend_plugin_fn entry;
	int count = 0, sms = 0, per_sm = 0;
	cudaError_t err;
	double h2d[2], copy;
	void *dl;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else
			plugin = argv[i];
	}
	err = cudaGetDeviceCount(&count);
	if (err != cudaSuccess || count <= dev) {
		int drv = 0;

		cudaDriverGetVersion(&drv);
		printf("SKIP: no CUDA device %d: %s (%d device%s, driver %d.%d): %s\n", dev,
		       cudaGetErrorName(err), count, count == 1 ? "" : "s", drv / 1000,
		       drv % 1000 / 10, cudaGetErrorString(err));
		return 77;
	}
	CK(cudaSetDevice(dev));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CK((cudaError_t)cuda_kernels_blocks_per_sm(&per_sm));   /* the plugin's grid, as cuda_rt.c */
	ref_init();
	print_device(dev);
	CK(cudaHostAlloc((void **)&pattern, PATTERN, cudaHostAllocDefault));
	for (uint64_t i = 0, x = 0x9e3779b97f4a7c15ull; i < PATTERN; i += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		const uint64_t v = x ^ (x >> 29);

		memcpy(pattern + i, &v, 8);
	}

	copy = bench_d2d();
	h2d[0] = bench_h2d(false);
	h2d[1] = bench_h2d(true);
	printf("\n    copy device to device, %llu MiB: %.1f GB/s of traffic (read + written)\n"
	       "    host to device cudaMemcpy, %llu MiB: pageable %.1f GB/s, pinned %.1f GB/s\n",
	       YARDSTICK >> 20, copy, YARDSTICK >> 20, h2d[0], h2d[1]);

	printf("\n(a) kernel only: stripes of %u KiB blocks in GPU memory, median of %d; traffic = "
	       "bytes read + written\n    (every operation moves all blocks of a stripe once); "
	       "ratio = traffic / the copy's; target >= %.0f%%\n",
	       BLOCK >> 10, RUNS, KERNEL_TARGET * 100);
	printf("  %5s %7s %7s %-8s %9s %10s %12s %7s %-5s %s\n", "shape", "stripes", "MiB", "op",
	       "ms", "data GB/s", "traffic GB/s", "ratio", "goal", "check");
	for (unsigned k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
		for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (!quick || i == 1)
				bench_kernel(shapes[k], sizes[i], (unsigned)(sms * per_sm), copy);

	/* As libgraid's loader opens it (RTLD_NODELETE: the runtime inside is never unloaded). */
	dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	entry = dl ? (graid_backend_plugin_fn)dlsym(dl, GRAID_BACKEND_PLUGIN_SYMBOL) : NULL;
	ops = entry ? entry() : NULL;
	if (!ops) {
		fprintf(stderr, "cannot load the plugin %s: %s\n", plugin, dlerror());
		return 1;
	}
	printf("\n(b) end to end through the plugin (%s), %u KiB blocks from host memory, median "
	       "of %d:\n    gen, recovery of data blocks 0 and 1, check of a clean batch; "
	       "ratio = data GB/s / H2D GB/s\n    of the same memory; target >= %.0f%%\n",
	       plugin, BLOCK >> 10, RUNS, E2E_TARGET * 100);
	printf("  %-7s %-8s %-8s %5s %7s %7s %9s %9s %8s %7s %-5s %s\n", "path", "memory", "op",
	       "shape", "stripes", "MiB", "ms", "data GB/s", "H2D GB/s", "ratio", "goal", "check");
	for (int path = 0; path < 2; path++) {
		for (int pinned = 0; pinned < 2; pinned++) {
			const char *p = path ? "mapped" : "staged";

			/* Recovery and check at 1024 stripes only: the step has a time cap. */
			for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
				if (!quick || i == 1)
					bench_e2e(ops, p, pinned, 8, sizes[i], sizes[i] == 1024,
						  h2d[pinned]);
			bench_e2e(ops, p, pinned, 22, 1024, true, h2d[pinned]);
		}
	}
	unsetenv("GRAID_CUDA_PATH");
	cudaFreeHost(pattern);
	printf("\n%s\n", failures ? "RESULTS WRONG OR PLUGIN WARNED (see above)" :
				    "all results verified, no plugin warning");
	return failures ? 1 : 0;
}
