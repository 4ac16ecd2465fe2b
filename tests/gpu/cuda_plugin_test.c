/* SPDX-License-Identifier: MIT */
/*
 * The built CUDA plugin on a real GPU: loaded with dlopen as the core loads it, run through
 * the parity case battery on both data paths, cut pieces, threads and the failover switch
 * (bench/gpu covers memory the caller has pinned). Skips (exit 77) where there is no usable
 * device.
 * Usage: cuda-plugin-test [--quick] PATH/libgraid-backend-cuda.so
 *   --quick: fixed shapes only, on both paths (for compute-sanitizer, which is slow)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_cases.h"

static struct cases_tally tally;
static bool quick;

static void run_config(const struct graid_backend_ops *ops, const char *label, const char *path,
		       const char *piece_kb, enum cases_level level, uint64_t seed)
{
	struct graid_engine *e = NULL;
	const struct cases_tally before = tally;
	const time_t t0 = time(NULL);
	int rc = cases_open(ops, &e, path, piece_kb, NULL);

	cases_expect(&tally, rc == 0, "%s: open returned %d", label, rc);
	if (rc)
		return;
	cases_run(ops, e, seed, level, &tally);
	if (level >= CASES_BIG)
		cases_threads(ops, e, seed, &tally);
	ops->close(e);
	printf("  %-36s %5u checks, %u failed, %lds\n", label, tally.passed - before.passed,
	       tally.failed - before.failed, (long)(time(NULL) - t0));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct graid_backend_info info = { .struct_size = sizeof(info) };
	const char *env = getenv("GRAID_TEST_SEED");
	const uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	const struct graid_backend_ops *ops;
	graid_backend_plugin_fn entry;
	struct graid_engine *e = NULL;
	void *dl;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--quick")) {
		quick = true;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [--quick] PLUGIN.so\n", argv[0]);
		return 2;
	}
	/*
	 * As libgraid's loader opens it: never unloaded, so the static CUDA runtime inside is
	 * set up once and torn down only with the process, never by a dlclose after real work.
	 */
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!dl) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	entry = (graid_backend_plugin_fn)dlsym(dl, GRAID_BACKEND_PLUGIN_SYMBOL);
	ops = entry ? entry() : NULL;
	if (!ops || ops->abi_version != GRAID_BACKEND_ABI_VERSION || strcmp(ops->name, "cuda")) {
		fprintf(stderr, "FAIL: %s does not export a cuda engine table\n", argv[1]);
		return 1;
	}
	rc = ops->probe(&info);
	if (rc) {
		/* The probe's reason (graid_backend.h): what a run without a GPU has to say. */
		printf("SKIP: no usable CUDA device here (probe returned %d: %s)\n", rc,
		       info.device[0] ? info.device : "no reason given");
		return 77;
	}
	printf("cuda plugin on %s, seed %llu (GRAID_TEST_SEED replays)\n", info.device,
	       (unsigned long long)seed);
	fflush(stdout);

	if (quick) {
		run_config(ops, "staged, default pieces", "staged", NULL, CASES_LITE, seed);
		run_config(ops, "mapped, default pieces", "mapped", NULL, CASES_LITE, seed + 3);
		printf("%u checks passed, %u failed\n", tally.passed, tally.failed);
		return tally.failed ? 1 : 0;
	}
	run_config(ops, "staged, default pieces", "staged", NULL, CASES_HUGE, seed);
	run_config(ops, "staged, 64 KiB pieces (stripes cut)", "staged", "64", CASES_BIG, seed + 1);
	/* Every piece a launch, two copies and a wait: only the small shapes (cases.h). */
	run_config(ops, "staged, 1 KiB pieces, small shapes", "staged", "1", CASES_TINY, seed + 2);
	run_config(ops, "mapped, default pieces", "mapped", NULL, CASES_HUGE, seed + 3);
	run_config(ops, "mapped, 64 KiB pieces", "mapped", "64", CASES_FULL, seed + 4);

	/* GRAID_CUDA_FAIL_AFTER: the switch the core's failover tests use. */
	if (cases_open(ops, &e, NULL, NULL, "1") == 0) {
		cases_expect(&tally, cases_one_gen(ops, e, seed) == 0, "fail-after: batch 1 works");
		rc = cases_one_gen(ops, e, seed);
		cases_expect(&tally, rc == -EIO, "fail-after: batch 2 returned %d, want -EIO", rc);
		ops->close(e);
	}
	/* A second engine on the same device, opened after the others closed. */
	rc = cases_open(ops, &e, NULL, NULL, NULL);
	cases_expect(&tally, rc == 0 && cases_one_gen(ops, e, seed) == 0, "reopen works");
	if (!rc)
		ops->close(e);

	printf("%u checks passed, %u failed\n", tally.passed, tally.failed);
	return tally.failed ? 1 : 0;
}
