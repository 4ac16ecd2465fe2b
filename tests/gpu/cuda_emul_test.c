/* SPDX-License-Identifier: MIT */
/*
 * The CUDA engine's host logic and kernel math, tested on the CPU: the engine's own sources
 * linked against the emulated runtime (cuda_rt_emul.c). Covers the packed GF(2^8) helpers
 * exhaustively, the planner, both data paths with pieces and cut stripes, failure handling,
 * the failover switch and threads. Prints its seed; GRAID_TEST_SEED replays one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libgraid/graid_gf.h>

#include "cuda_cases.h"
#include "cuda_item.h"
#include "cuda_plan.h"
#include "cuda_rt_emul.h"

const struct graid_backend_ops *graid_backend_plugin(void);

static struct cases_tally tally;

#define EXPECT(cond, ...) cases_expect(&tally, (cond), __VA_ARGS__)

/* The packed helpers must be graid_gf.h's arithmetic, byte for byte, in every lane. */
static void test_packed_gf(void)
{
	unsigned bad = 0;

	for (unsigned a = 0; a < 256; a++) {
		for (int lane = 0; lane < 4; lane++) {
			const uint32_t w = (uint32_t)a << (8 * lane) | (0x5au << (8 * ((lane + 1) % 4)));
			const uint32_t m2 = cuda_gf_mul2_w(w);

			bad += ((m2 >> (8 * lane)) & 0xff) != graid_gf_mul2((unsigned char)a);
			bad += ((m2 >> (8 * ((lane + 1) % 4))) & 0xff) != graid_gf_mul2(0x5a);
		}
		for (unsigned c = 0; c < 256; c++) {
			const uint32_t w = a | (uint32_t)(255 - a) << 8 | (uint32_t)(a ^ 0x33) << 16 |
					   (uint32_t)c << 24;
			const uint32_t r = cuda_gf_mulc_w(w, (uint8_t)c);

			for (int lane = 0; lane < 4; lane++)
				bad += ((r >> (8 * lane)) & 0xff) !=
				       graid_gf_mul((unsigned char)(w >> (8 * lane)), (unsigned char)c);
		}
	}
	EXPECT(bad == 0, "packed GF(2^8) helpers differ from graid_gf.h in %u places", bad);
}

/* The planner's cases, and geometry that respects its promises on many shapes. */
static void test_plan(uint64_t seed)
{
	struct cuda_kparams kp;
	unsigned lost[2];

	EXPECT(cuda_plan_case(&kp, CUDA_OP_GEN, 8, 2, 0, NULL) == 0 && kp.kcase == CUDA_CASE_PQ &&
		       kp.nin == 8 && kp.nout == 2,
	       "plan: gen 8+2 is P and Q from 8 inputs");
	EXPECT(cuda_plan_case(&kp, CUDA_OP_GEN, 8, 1, 0, NULL) == 0 && kp.kcase == CUDA_CASE_P &&
		       !kp.need_q,
	       "plan: gen 8+1 is P alone, without Q");
	lost[0] = 3;
	EXPECT(cuda_plan_case(&kp, CUDA_OP_RECOVER, 8, 2, 1, lost) == 0 &&
		       kp.kcase == CUDA_CASE_D_FROM_P && kp.map[9] == CUDA_MAP_NONE && !kp.need_q,
	       "plan: one data block comes from P, Q is not read");
	lost[0] = 3;
	lost[1] = 8;
	EXPECT(cuda_plan_case(&kp, CUDA_OP_RECOVER, 8, 2, 2, lost) == 0 &&
		       kp.kcase == CUDA_CASE_D_AND_P &&
		       graid_gf_mul(kp.c1, graid_gf_exp2(3)) == 1,
	       "plan: data + P uses g^-x");
	lost[1] = 9;
	EXPECT(cuda_plan_case(&kp, CUDA_OP_RECOVER, 8, 2, 2, lost) == 0 &&
		       kp.kcase == CUDA_CASE_D_AND_Q && kp.c1 == graid_gf_exp2(3),
	       "plan: data + Q uses g^x");
	lost[0] = 8;
	EXPECT(cuda_plan_case(&kp, CUDA_OP_RECOVER, 8, 2, 2, lost) == 0 &&
		       kp.kcase == CUDA_CASE_PQ,
	       "plan: P + Q is gen");
	EXPECT(cuda_plan_case(&kp, CUDA_OP_RECOVER, 8, 1, 2, lost) == -EINVAL,
	       "plan: two lost with one parity is refused");

	for (unsigned i = 0; i < 2000; i++) {
		const unsigned ndata = 1 + (unsigned)(seed = seed * 6364136223846793005ull + 1) % 255;
		const uint64_t len = 1 + (seed >> 20) % (4u << 20);
		const size_t target = 1024 + (seed >> 40) % (16u << 20);
		struct cuda_geom g;
		struct cuda_layout l;

		cuda_plan_case(&kp, (enum cuda_op)(i % 3 == 2 ? CUDA_OP_CHECK : CUDA_OP_GEN), ndata,
			       1 + i % 2, 0, NULL);
		g = cuda_plan_geom(&kp, len, target);
		l = cuda_plan_layout(&kp, g.stripes, g.chunk, i & 4);
		if (g.stripes < 1 || g.chunk < 1 || g.chunk > len ||
		    (g.chunk < len && (g.chunk % 16 || g.stripes != 1)) ||
		    (g.stripes > 1 && g.chunk != len) || l.stride % 16 ||
		    (l.in % 256) || (l.out % 256) || (l.acc % 256) || l.h2d_end > l.size ||
		    (g.stripes * ((g.chunk + 15) / 16)) >= (1u << 31) ||
		    (g.chunk < len && (kp.nin + kp.nout) * l.stride > target + 16 * 257)) {
			EXPECT(false, "plan: bad geometry for %u blocks of %llu B, target %zu", ndata,
			       (unsigned long long)len, target);
			return;
		}
	}
	EXPECT(true, "plan: geometry");
}

/* The battery on one configuration of the engine. */
static void test_config(const struct graid_backend_ops *ops, const char *label,
			const char *path, const char *piece_kb, enum cases_level level, uint64_t seed)
{
	struct graid_engine *e = NULL;
	const struct cases_tally before = tally;
	const clock_t t0 = clock();
	int rc = cases_open(ops, &e, path, piece_kb, NULL);

	EXPECT(rc == 0, "%s: open returned %d", label, rc);
	if (rc)
		return;
	cases_run(ops, e, seed, level, &tally);
	ops->close(e);
	EXPECT(cuda_emul_stats.registers == cuda_emul_stats.unregisters,
	       "%s: %llu registrations but %llu releases", label,
	       (unsigned long long)cuda_emul_stats.registers,
	       (unsigned long long)cuda_emul_stats.unregisters);
	printf("  %-40s %5u checks, %u failed, %.1f s\n", label, tally.passed - before.passed,
	       tally.failed - before.failed, (double)(clock() - t0) / CLOCKS_PER_SEC);
}

/* Repeated calls of one shape allocate nothing after the first; pieces overlap. */
static void test_no_hot_alloc(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *e = NULL;
	uint64_t pinned, dev;

	cuda_emul_reset();
	if (cases_open(ops, &e, "staged", "4", NULL))
		return EXPECT(false, "no-alloc: open failed");
	EXPECT(cases_one_gen(ops, e, seed) == 0, "no-alloc: first gen");
	pinned = cuda_emul_stats.pinned_allocs;
	dev = cuda_emul_stats.device_allocs;
	for (unsigned i = 0; i < 10; i++)
		EXPECT(cases_one_gen(ops, e, seed + i) == 0, "no-alloc: gen %u", i);
	EXPECT(cuda_emul_stats.pinned_allocs == pinned && cuda_emul_stats.device_allocs == dev,
	       "no-alloc: calls after the first allocated staging memory");
	EXPECT(pinned <= 3 && dev <= 3, "no-alloc: more than one buffer per slot");

	EXPECT(cuda_emul_stats.max_in_flight >= 2,
	       "no-alloc: pieces never overlapped (max %llu streams busy)",
	       (unsigned long long)cuda_emul_stats.max_in_flight);
	ops->close(e);
}

/* Errors come back as errnos, and the engine works again afterwards. */
static void test_failures(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_backend_info info = { .struct_size = sizeof(info) };
	struct graid_engine *e = NULL;
	unsigned errors;
	int rc;

	/* A probe that finds nothing says why, in the device field (graid_backend.h). */
	cuda_emul_reset();
	cuda_emul_knobs.no_device = true;
	memset(info.device, 0, sizeof(info.device));
	EXPECT(ops->probe(&info) == -ENODEV, "no device: probe says -ENODEV");
	EXPECT(strstr(info.device, "cudaErrorNoDevice") && strstr(info.device, "runtime"),
	       "no device: the probe's reason is \"%s\", want CUDA's error and the versions",
	       info.device);
	EXPECT(cases_open(ops, &e, NULL, NULL, NULL) == -ENODEV, "no device: open says -ENODEV");
	cuda_emul_reset();
	cuda_emul_knobs.old_device = true;
	memset(info.device, 0, sizeof(info.device));
	EXPECT(ops->probe(&info) == -ENODEV, "compute capability 7.0: probe says -ENODEV");
	EXPECT(strstr(info.device, "sm_70") != NULL,
	       "compute capability 7.0: the probe's reason is \"%s\"", info.device);
	cuda_emul_reset();
	EXPECT(ops->probe(&info) == 0 && info.device[0] &&
		       (info.flags & GRAID_BACKEND_F_ACCELERATOR),
	       "probe: fills the device and flags");
	setenv("GRAID_CUDA_DEVICE", "3", 1);
	EXPECT(ops->probe(&info) == -ENODEV && strstr(info.device, "GRAID_CUDA_DEVICE=3"),
	       "probe: a device that does not exist is -ENODEV, named (\"%s\")", info.device);
	setenv("GRAID_CUDA_DEVICE", "x", 1);
	EXPECT(ops->probe(&info) == -ENODEV && strstr(info.device, "GRAID_CUDA_"),
	       "probe: a bad GRAID_CUDA_DEVICE is -ENODEV, said (\"%s\")", info.device);
	/* A caller's older, smaller structure: nothing written past its end. */
	{
		struct graid_backend_info small[2];

		memset(small, 0x5a, sizeof(small));
		small[0].struct_size = offsetof(struct graid_backend_info, device);
		EXPECT(ops->probe(&small[0]) == -ENODEV &&
			       ((unsigned char *)small[0].device)[0] == 0x5a,
		       "probe: wrote into a structure too small for the device field");
	}
	EXPECT(cases_open(ops, &e, NULL, NULL, NULL) == -EINVAL,
	       "open: a bad GRAID_CUDA_DEVICE is -EINVAL");
	unsetenv("GRAID_CUDA_DEVICE");
	EXPECT(cases_open(ops, &e, "fast", NULL, NULL) == -EINVAL,
	       "open: a bad GRAID_CUDA_PATH is -EINVAL");

	/* GRAID_CUDA_FAIL_AFTER=2: two batches work, then every one fails with -EIO. */
	if (cases_open(ops, &e, NULL, NULL, "2") == 0) {
		EXPECT(cases_one_gen(ops, e, seed) == 0, "fail-after: batch 1 works");
		EXPECT(cases_one_gen(ops, e, seed) == 0, "fail-after: batch 2 works");
		errors = cases_log_errors;
		EXPECT(cases_one_gen(ops, e, seed) == -EIO, "fail-after: batch 3 is -EIO");
		EXPECT(cases_log_errors > errors, "fail-after: the failure is logged");
		ops->close(e);
	}

	/* A launch failing in the middle of a many-piece batch, then a healthy device. */
	if (cases_open(ops, &e, "staged", "4", NULL) == 0) {
		cuda_emul_knobs.fail_launch_after = (int64_t)cuda_emul_stats.launches + 2;
		rc = cases_one_gen(ops, e, seed);
		EXPECT(rc == -EIO, "launch failure: gen returned %d, want -EIO", rc);
		cuda_emul_knobs.fail_launch_after = -1;
		EXPECT(cases_one_gen(ops, e, seed) == 0, "launch failure: the next batch works");
		ops->close(e);
	}

	/* Out of pinned memory is -ENOMEM (the core's "retry later"). */
	cuda_emul_reset();
	if (cases_open(ops, &e, "staged", NULL, NULL) == 0) {
		cuda_emul_knobs.fail_pinned_alloc = true;
		rc = cases_one_gen(ops, e, seed);
		EXPECT(rc == -ENOMEM, "pinned allocation failure: gen returned %d", rc);
		cuda_emul_knobs.fail_pinned_alloc = false;
		EXPECT(cases_one_gen(ops, e, seed) == 0, "pinned allocation failure: then works");
		ops->close(e);
	}
	cuda_emul_reset();
}

/*
 * An illegal address in the middle of a many-piece batch loses the context: the engine says
 * so once, releases what it pinned, and answers every later batch with -ENODEV (the core's
 * "run it on the CPU") without another runtime call or log line.
 */
static void test_sticky_fault(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *e = NULL;
	unsigned lines;
	uint64_t calls;
	int rc;

	cuda_emul_reset();
	cuda_emul_knobs.sticky_fault_after = 2;
	if (cases_open(ops, &e, "mapped", "4", NULL))
		return EXPECT(false, "sticky fault: open failed");
	lines = cases_log_warnings;
	rc = cases_one_gen(ops, e, seed);
	EXPECT(rc == -ENODEV, "sticky fault: the faulting batch returned %d, want -ENODEV", rc);
	EXPECT(cuda_emul_stats.registers == cuda_emul_stats.unregisters,
	       "sticky fault: %llu ranges pinned, %llu released",
	       (unsigned long long)cuda_emul_stats.registers,
	       (unsigned long long)cuda_emul_stats.unregisters);
	calls = cuda_emul_stats.calls;
	for (unsigned i = 0; i < 5; i++) {
		rc = cases_one_gen(ops, e, seed + i);
		EXPECT(rc == -ENODEV, "sticky fault: later batch %u returned %d, want -ENODEV", i,
		       rc);
	}
	EXPECT(cuda_emul_stats.calls == calls,
	       "sticky fault: later batches made %llu runtime calls, want none",
	       (unsigned long long)(cuda_emul_stats.calls - calls));
	EXPECT(cases_log_warnings - lines == 1,
	       "sticky fault: %u warning or error lines, want exactly one",
	       cases_log_warnings - lines);
	ops->close(e);
	cuda_emul_reset();
}

/* A multi-GPU application's current device is its own: no call may leave it moved. */
static void test_current_device_kept(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *e = NULL;
	int rc;

	cuda_emul_reset();
	cuda_emul_set_current_device(3);
	rc = cases_open(ops, &e, "staged", "4", NULL);
	EXPECT(rc == 0 && cuda_emul_current_device() == 3,
	       "current device: open returned %d and left device %d current, want 3", rc,
	       cuda_emul_current_device());
	if (rc)
		return;
	EXPECT(cases_one_gen(ops, e, seed) == 0 && cuda_emul_current_device() == 3,
	       "current device: gen left device %d current, want 3", cuda_emul_current_device());
	cuda_emul_knobs.fail_launch_after = (int64_t)cuda_emul_stats.launches + 1;
	EXPECT(cases_one_gen(ops, e, seed) == -EIO && cuda_emul_current_device() == 3,
	       "current device: a failed gen left device %d current, want 3",
	       cuda_emul_current_device());
	ops->close(e);
	EXPECT(cuda_emul_current_device() == 3, "current device: close left device %d current",
	       cuda_emul_current_device());
	cuda_emul_set_current_device(0);
	cuda_emul_reset();
}

/*
 * A launch refused after its piece's copy in was queued: the call must return only when
 * that copy (and everything else queued) has run, or it would read or write memory that
 * the caller already has back.
 */
static void test_enqueue_error_drains(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *e = NULL;
	int rc;

	cuda_emul_reset();
	if (cases_open(ops, &e, "staged", "4", NULL))
		return EXPECT(false, "enqueue error: open failed");
	for (int64_t k = 0; k < 4; k++) {
		cuda_emul_knobs.fail_launch_after = (int64_t)cuda_emul_stats.launches + k;
		rc = cases_one_gen(ops, e, seed);
		EXPECT(rc == -EIO, "enqueue error: gen returned %d, want -EIO", rc);
		EXPECT(cuda_emul_stats.queued == 0,
		       "enqueue error after %lld launches: %llu operations still queued at return",
		       (long long)k, (unsigned long long)cuda_emul_stats.queued);
	}
	cuda_emul_knobs.fail_launch_after = -1;
	EXPECT(cases_one_gen(ops, e, seed) == 0, "enqueue error: the next batch works");
	ops->close(e);
	cuda_emul_reset();
}

/*
 * A buffer registered once is pinned once: mapped batches inside it pin nothing per call,
 * and the registration is given back at unregister (or at close).
 */
static void test_registered_memory(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *e = NULL;
	uint64_t pins;
	uint8_t *mem;
	int rc;

	cuda_emul_reset();
	if (posix_memalign((void **)&mem, 4096, 2 * CASES_ONE_BYTES))
		return EXPECT(false, "registered memory: out of memory");
	if (cases_open(ops, &e, "mapped", "4", NULL)) {
		free(mem);
		return EXPECT(false, "registered memory: open failed");
	}
	rc = ops->register_memory(e, mem + 100, CASES_ONE_BYTES);
	EXPECT(rc == 0 && cuda_emul_stats.registers == 1,
	       "registered memory: register returned %d, %llu ranges pinned", rc,
	       (unsigned long long)cuda_emul_stats.registers);
	EXPECT(ops->register_memory(e, mem + CASES_ONE_BYTES, 10) == -EINVAL,
	       "registered memory: an overlapping registration is -EINVAL");
	pins = cuda_emul_stats.register_calls;
	for (unsigned i = 0; i < 4; i++) {
		rc = cases_one_gen_at(ops, e, seed + i, mem + 4096);
		EXPECT(rc == 0, "registered memory: mapped gen %u returned %d", i, rc);
	}
	/* Every call counts, also one that finds the pages pinned: none may be made. */
	EXPECT(cuda_emul_stats.register_calls == pins && cuda_emul_stats.unregisters == 0,
	       "registered memory: batches inside it asked to pin %llu times and released %llu "
	       "ranges", (unsigned long long)(cuda_emul_stats.register_calls - pins),
	       (unsigned long long)cuda_emul_stats.unregisters);
	EXPECT(ops->unregister_memory(e, mem) == -EINVAL,
	       "registered memory: unregistering an address not registered is -EINVAL");
	EXPECT(ops->unregister_memory(e, mem + 100) == 0 && cuda_emul_stats.unregisters == 1,
	       "registered memory: unregister releases it");
	/* A batch there after unregistering pins per call again, and works. */
	EXPECT(cases_one_gen_at(ops, e, seed, mem + 4096) == 0 &&
		       cuda_emul_stats.registers > pins,
	       "registered memory: after unregistering, batches pin per call");
	/* Left registered at close: close releases it. */
	EXPECT(ops->register_memory(e, mem, CASES_ONE_BYTES) == 0, "registered memory: again");
	ops->close(e);
	EXPECT(cuda_emul_stats.registers == cuda_emul_stats.unregisters,
	       "registered memory: close left %llu ranges pinned",
	       (unsigned long long)(cuda_emul_stats.registers - cuda_emul_stats.unregisters));
	free(mem);
	cuda_emul_reset();
}

/*
 * Two engines register one buffer (two arrays sharing a buffer pool): the second finds it
 * pinned by the first, and must not take that for its own. Once the first lets go, the
 * second's batches there still work (they pin per call again).
 */
static void test_registered_by_two_engines(const struct graid_backend_ops *ops, uint64_t seed)
{
	struct graid_engine *a = NULL, *b = NULL;
	uint8_t *mem;

	cuda_emul_reset();
	if (posix_memalign((void **)&mem, 4096, 2 * CASES_ONE_BYTES)) {
		EXPECT(false, "two engines: out of memory");
		return;
	}
	if (cases_open(ops, &a, "mapped", "4", NULL) || cases_open(ops, &b, "mapped", "4", NULL)) {
		EXPECT(false, "two engines: open failed");
		free(mem);
		return;
	}
	EXPECT(ops->register_memory(a, mem, 2 * CASES_ONE_BYTES) == 0 &&
		       ops->register_memory(b, mem, 2 * CASES_ONE_BYTES) == 0,
	       "two engines: both register the buffer");
	EXPECT(ops->unregister_memory(a, mem) == 0, "two engines: the first lets go");
	EXPECT(cases_one_gen_at(ops, b, seed, mem + 4096) == 0,
	       "two engines: the second's batch reads memory the first unpinned");
	ops->close(a);
	ops->close(b);
	EXPECT(cuda_emul_stats.registers == cuda_emul_stats.unregisters,
	       "two engines: %llu ranges left pinned",
	       (unsigned long long)(cuda_emul_stats.registers - cuda_emul_stats.unregisters));
	free(mem);
	cuda_emul_reset();
}

int main(void)
{
	const struct graid_backend_ops *ops = graid_backend_plugin();
	const char *env = getenv("GRAID_TEST_SEED");
	const uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	struct graid_engine *e = NULL;

	printf("cuda engine on the emulated runtime, seed %llu (GRAID_TEST_SEED replays)\n",
	       (unsigned long long)seed);
	EXPECT(ops && ops->struct_size == sizeof(*ops) && !strcmp(ops->name, "cuda") &&
		       ops->abi_version == GRAID_BACKEND_ABI_VERSION && ops->check,
	       "the table is complete");
	test_packed_gf();
	test_plan(seed);

	cuda_emul_reset();
	test_config(ops, "staged, 8 MiB pieces", "staged", NULL, CASES_BIG, seed);
	test_config(ops, "staged, 4 KiB pieces (stripes cut)", "staged", "4", CASES_BIG, seed + 1);
	test_config(ops, "staged, 1 KiB pieces", "staged", "1", CASES_LITE, seed + 2);
	/* More copy threads than this machine may have CPUs: items of a piece race. */
	setenv("GRAID_CUDA_COPY_THREADS", "5", 1);
	test_config(ops, "staged, 5 copy threads", "staged", NULL, CASES_BIG, seed + 8);
	unsetenv("GRAID_CUDA_COPY_THREADS");
	test_config(ops, "mapped, 8 MiB pieces", "mapped", NULL, CASES_FULL, seed + 3);
	test_config(ops, "mapped, 4 KiB pieces", "mapped", "4", CASES_FULL, seed + 4);
	cuda_emul_knobs.translate_ptrs = true;
	test_config(ops, "mapped, translated device pointers", "mapped", "64", CASES_LITE,
		    seed + 5);
	cuda_emul_reset();
	cuda_emul_knobs.all_pinned = true;
	test_config(ops, "mapped, memory pinned by the caller", "mapped", NULL, CASES_LITE,
		    seed + 6);
	cuda_emul_reset();
	cuda_emul_knobs.fail_register = true;
	test_config(ops, "mapped, pinning fails (staged instead)", "mapped", NULL, CASES_LITE,
		    seed + 7);
	cuda_emul_reset();

	if (cases_open(ops, &e, "staged", "16", NULL) == 0) {
		cases_threads(ops, e, seed, &tally);
		ops->close(e);
	}
	test_no_hot_alloc(ops, seed);
	test_failures(ops, seed);
	test_sticky_fault(ops, seed);
	test_current_device_kept(ops, seed);
	test_enqueue_error_drains(ops, seed);
	test_registered_memory(ops, seed);
	test_registered_by_two_engines(ops, seed);

	printf("%u checks passed, %u failed\n", tally.passed, tally.failed);
	return tally.failed ? 1 : 0;
}
