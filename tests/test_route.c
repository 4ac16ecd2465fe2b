/* SPDX-License-Identifier: MIT */
/* Routing by batch size, decided from made-up timings: who takes small, large and huge batches. */
#include <errno.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "engine/route.h"

static const size_t sizes[5] = { 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20 };

Test(route, a_gpu_that_wins_from_16_mib_takes_batches_from_there)
{
	/* PCIe latency makes the GPU lose on small batches and win on big ones. */
	const double cpu[5] = { 20, 20, 20, 20, 20 };
	const double gpu[5] = { 2, 8, 25, 60, 80 };
	struct route r;
	size_t c, g;

	cr_assert_eq(route_from_timings(&r, sizes, cpu, gpu, 5), 0);
	cr_assert_eq(r.crossover_bytes, 16u << 20);
	route_plan(&r, 640 * 1024, 1, &c, &g);
	cr_assert(c == 1 && g == 0, "one stripe goes to the CPU");
	route_plan(&r, 1u << 20, 20, &c, &g);
	cr_assert(c == 0 && g == 20, "20 MiB goes to the GPU");
	/* From the largest size measured, both work at once, in proportion to their speeds. */
	route_plan(&r, 1u << 20, 1000, &c, &g);
	cr_assert_eq(c + g, 1000);
	cr_assert_eq(c, 200, "CPU share %zu of 1000 (20 of 100 GB/s)", c);
}

Test(route, a_gpu_slower_at_every_size_never_gets_a_batch)
{
	const double cpu[5] = { 20, 20, 20, 20, 20 };
	const double gpu[5] = { 1, 2, 5, 10, 19 };
	struct route r;
	size_t c, g;

	cr_assert_eq(route_from_timings(&r, sizes, cpu, gpu, 5), 0);
	route_plan(&r, 1u << 20, 100000, &c, &g);
	cr_assert(c == 100000 && g == 0);
}

Test(route, a_gpu_that_loses_again_at_a_larger_size_starts_after_its_last_loss)
{
	/* A dip (a memory limit, say) at 64 MiB: only sizes after the last loss are trusted. */
	const double cpu[5] = { 20, 20, 20, 20, 20 };
	const double gpu[5] = { 5, 30, 30, 10, 90 };
	struct route r;

	cr_assert_eq(route_from_timings(&r, sizes, cpu, gpu, 5), 0);
	cr_assert_eq(r.crossover_bytes, 256u << 20);
}

Test(route, a_much_faster_gpu_is_not_slowed_by_a_token_cpu_share)
{
	const double cpu[5] = { 20, 20, 20, 20, 20 };
	const double gpu[5] = { 30, 100, 300, 500, 600 };
	struct route r;
	size_t c, g;

	cr_assert_eq(route_from_timings(&r, sizes, cpu, gpu, 5), 0);
	cr_assert_eq(r.crossover_bytes, 1u << 20);
	route_plan(&r, 1u << 20, 1000, &c, &g);
	cr_assert(c == 0 && g == 1000, "CPU share under 10%% is not worth a thread");
	route_plan(&r, 1000, 1, &c, &g);
	cr_assert(c == 1 && g == 0, "below every measured size the CPU takes it");
}

Test(route, bad_timings_are_refused)
{
	const size_t backwards[2] = { 4u << 20, 1u << 20 };
	const double ok[2] = { 1, 1 }, zero[2] = { 1, 0 };
	struct route r;

	cr_assert_eq(route_from_timings(&r, backwards, ok, ok, 2), -EINVAL);
	cr_assert_eq(route_from_timings(&r, sizes, ok, zero, 2), -EINVAL);
	cr_assert_eq(route_from_timings(&r, sizes, ok, ok, 0), -EINVAL);
}

/*
 * The split itself, end to end: a plugin that says it is an accelerator, given made-up
 * timings, must produce the reference parity whether a batch goes to the CPU, to it, or
 * to both at once — and check results must land at the right stripes.
 */
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "testutil.h"
#include "engine/engine.h"

Test(route, split_batches_give_the_reference_parity_and_verdicts)
{
	const double cpu[3] = { 10, 10, 10 };
	const double acc[3] = { 1, 20, 30 };
	const size_t pts[3] = { 64 * 1024, 1u << 20, 4u << 20 };
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	uint64_t rng = tu_seed() ^ 0x73706c;
	struct graid_backend *be;
	const size_t counts[3] = { 1, 40, 300 }; /* CPU, accelerator, split */

	cr_assert_eq(graid_backend_open("testfault", &be), 0, "the test plugin must load");
	cr_assert_not_null(be->fallback, "an accelerator gets a CPU fallback");
	cr_assert_eq(route_from_timings(&be->route, pts, cpu, acc, 3), 0);
	for (int k = 0; k < 3; k++) {
		struct tu_stripes s;
		uint8_t *expect;
		int32_t *res = calloc(counts[k], sizeof(*res));
		unsigned lost[2] = { 0, 5 };

		tu_stripes_alloc(&s, 4, 2, 16384, counts[k], &rng, 0);
		tu_stripes_ref_gen(&s);
		expect = tu_stripes_snapshot(&s);
		for (size_t i = 0; i < s.nblocks; i++)
			if (i % 6 >= 4)
				memset(s.ptr[i], 0, s.len);
		cr_assert_eq(graid_parity_gen(be, 4, 2, s.len, s.nstripes, s.ptr), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "gen, %zu stripes", counts[k]);
		for (size_t i = 0; i < s.nstripes; i++) {
			memset(s.ptr[i * 6], 0xaa, s.len);
			memset(s.ptr[i * 6 + 5], 0xaa, s.len);
		}
		cr_assert_eq(graid_parity_recover(be, 4, 2, s.len, s.nstripes, s.ptr, 2, lost), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "recover, %zu stripes", counts[k]);
		s.ptr[(s.nstripes - 1) * 6 + 2][7] ^= 1;
		cr_assert_eq(graid_parity_check(be, 4, 2, s.len, s.nstripes, s.ptr, res), 1);
		cr_assert_eq(res[s.nstripes - 1], 2, "the verdict of the last stripe");
		for (size_t i = 0; i + 1 < s.nstripes; i++)
			cr_assert_eq(res[i], GRAID_CHECK_CLEAN);
		free(res);
		free(expect);
		tu_stripes_free(&s);
	}
	cr_assert_eq(graid_backend_stats(be, &st), 0);
	cr_assert_eq(st.cpu_routed, 3, "the one-stripe batches went to the CPU");
	cr_assert_eq(st.split, 3, "the big batches were split");
	graid_backend_close(be);
}

/*
 * The split worker is started by whichever thread first splits a batch. A program may have
 * pinned that thread to one CPU (graid-ublk pins its queue threads): the worker must run on
 * the process's CPUs all the same, not inherit the pin.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>

struct rt_split_call {
	struct graid_backend *be;
	int cpu;
	int rc;
};

static void *rt_pinned_split(void *arg)
{
	struct rt_split_call *c = arg;
	uint64_t rng = 0x5eed;
	struct tu_stripes s;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(c->cpu, &one);
	c->rc = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (c->rc == 0) {
		tu_stripes_alloc(&s, 4, 2, 16384, 300, &rng, 0);
		c->rc = graid_parity_gen(c->be, 4, 2, s.len, s.nstripes, s.ptr);
		tu_stripes_free(&s);
	}
	return NULL;
}

/* The thread ids of this process, into @p ids (at most @p max); how many. */
static size_t rt_tasks(long *ids, size_t max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			ids[n++] = strtol(e->d_name, NULL, 10);
	closedir(d);
	return n;
}

Test(route, the_split_worker_runs_on_the_process_cpus_not_on_its_starters)
{
	const double cpu[3] = { 10, 10, 10 }, acc[3] = { 1, 20, 30 };
	const size_t pts[3] = { 64 * 1024, 1u << 20, 4u << 20 };
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	long before[256], after[256];
	size_t nb, na, checked = 0;
	struct rt_split_call c = { 0 };
	cpu_set_t all, got;
	pthread_t t;

	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	if (CPU_COUNT(&all) < 2)
		cr_skip("one CPU: a pinned thread and the process's CPUs are the same set");
	for (c.cpu = 0; !CPU_ISSET(c.cpu, &all); c.cpu++)
		;
	cr_assert_eq(graid_backend_open("testfault", &c.be), 0, "the test plugin must load");
	cr_assert_eq(route_from_timings(&c.be->route, pts, cpu, acc, 3), 0);
	nb = rt_tasks(before, 256);
	cr_assert_eq(pthread_create(&t, NULL, rt_pinned_split, &c), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(c.rc, 0);
	cr_assert_eq(graid_backend_stats(c.be, &st), 0);
	cr_assert_eq(st.split, 1, "the batch was split: the worker started");
	na = rt_tasks(after, 256);
	for (size_t i = 0; i < na; i++) {
		bool old = false;

		for (size_t j = 0; j < nb; j++)
			old = old || before[j] == after[i];
		if (old)
			continue;
		cr_assert_eq(sched_getaffinity((pid_t)after[i], sizeof(got), &got), 0);
		cr_assert(CPU_EQUAL(&got, &all), "thread %ld started by the split runs on %d CPU(s), "
			  "not the process's %d", after[i], CPU_COUNT(&got), CPU_COUNT(&all));
		checked++;
	}
	cr_assert_geq(checked, 1, "the split worker is a thread of its own");
	graid_backend_close(c.be);
}
