/* SPDX-License-Identifier: MIT */
/* "auto": time every usable engine once per process on a fixed workload, keep the fastest. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/route.h"

#include "common/internal.h"
#include "engine/engine.h"

/*
 * The workload: RAID-6 8+2 stripes of 64 KiB, 16 of them (8 MiB of data) — big enough
 * that a GPU's per-batch overhead shows but does not dominate, small enough that all
 * engines together take tens of milliseconds, as the kernel's boot-time RAID-6 pick does.
 */
#define SELECT_NDATA 8
#define SELECT_NPARITY 2
#define SELECT_LEN (64u * 1024)
#define SELECT_NSTRIPES 16
#define SELECT_RUNS 5
#define SELECT_MAX_ENGINES 8

struct select_result {
	char name[32];
	int status;
	double gbps;
	bool candidate;      /* auto may pick it: built in, or a plugin on an accelerator */
};

static struct select_result select_results[SELECT_MAX_ENGINES];
static unsigned select_count;
static bool select_done;

static double select_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int graid__backend_measure(struct graid_backend *be, double *gbps)
{
	const size_t nblocks = (size_t)SELECT_NSTRIPES * (SELECT_NDATA + SELECT_NPARITY);
	uint8_t *blocks[(SELECT_NDATA + SELECT_NPARITY) * SELECT_NSTRIPES];
	double best = 0;
	uint8_t *buf;
	int rc = 0;

	if (posix_memalign((void **)&buf, 64, nblocks * SELECT_LEN))
		return -ENOMEM;
	/* Any non-constant data will do; a fixed pattern keeps runs comparable. */
	for (size_t i = 0; i < nblocks * SELECT_LEN; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t i = 0; i < nblocks; i++)
		blocks[i] = buf + i * SELECT_LEN;
	/* The first call pays one-time costs (kernel builds, buffer pools): not timed. */
	rc = graid_parity_gen(be, SELECT_NDATA, SELECT_NPARITY, SELECT_LEN, SELECT_NSTRIPES,
			      blocks);
	for (int run = 0; rc == 0 && run < SELECT_RUNS; run++) {
		double t0 = select_now(), dt;

		rc = graid_parity_gen(be, SELECT_NDATA, SELECT_NPARITY, SELECT_LEN,
				      SELECT_NSTRIPES, blocks);
		dt = select_now() - t0;
		if (rc == 0 && dt > 0) {
			double r = (double)SELECT_NDATA * SELECT_LEN * SELECT_NSTRIPES / dt / 1e9;

			if (r > best)
				best = r;
		}
	}
	free(buf);
	if (rc == 0)
		*gbps = best;
	return rc;
}

/* Called with graid__select_lock held. */
static void select_measure_locked(void)
{
	select_count = 0;
	for (const char *const *k = graid__known_engines; *k; k++) {
		struct select_result *r = &select_results[select_count++];
		struct graid_backend *be;

		snprintf(r->name, sizeof(r->name), "%s", *k);
		r->gbps = 0;
		r->status = graid__backend_open_named(*k, &be);
		if (r->status)
			continue;
		r->status = graid__backend_measure(be, &r->gbps);
		/*
		 * A plugin that runs on the host's own CPU (OpenCL on PoCL) competes with the
		 * caller for the same cores as the built-in CPU engine, at a higher cost per
		 * call and with slower recovery (docs/ARCHITECTURE.md): listed and timed, and
		 * opened when asked for by name, but never picked by auto.
		 */
		r->candidate = !be->dl || (be->flags & GRAID_BACKEND_F_ACCELERATOR);
		graid_backend_close(be);
		if (r->status == 0)
			graid__log(GRAID_LOG_INFO, "engine %s: %.2f GB/s (RAID-6 8+2, 64 KiB)",
				   r->name, r->gbps);
	}
	select_done = true;
}

void graid__measure_all(void)
{
	graid__lock(&graid__select_lock);
	select_measure_locked();
	graid__unlock(&graid__select_lock);
}

double graid__measured_gbps(const char *name)
{
	double gbps = 0;

	graid__lock(&graid__select_lock);
	for (unsigned i = 0; i < select_count; i++)
		if (!strcmp(select_results[i].name, name) && select_results[i].status == 0)
			gbps = select_results[i].gbps;
	graid__unlock(&graid__select_lock);
	return gbps;
}

int graid__select_auto(char *name, size_t name_len)
{
	const struct select_result *best = NULL;

	graid__lock(&graid__select_lock);
	if (!select_done)
		select_measure_locked();
	for (unsigned i = 0; i < select_count; i++) {
		const struct select_result *r = &select_results[i];

		if (r->status == 0 && r->candidate && (!best || r->gbps > best->gbps))
			best = r;
	}
	if (best)
		snprintf(name, name_len, "%s", best->name);
	graid__unlock(&graid__select_lock);
	if (!best)
		return -ENODEV;
	graid__log(GRAID_LOG_NOTICE, "auto selected engine %s (%.2f GB/s)", name, best->gbps);
	return 0;
}

/*
 * Cross-over points for routing: the same RAID-6 8+2 x 64 KiB work on the accelerator and
 * on its CPU fallback at growing batch sizes, best of three each after a warm-up.
 */
#define ROUTE_POINTS 5

static double select_time_gen(struct graid_backend *be, uint8_t **blocks, size_t nstripes)
{
	double best = 0;

	graid_parity_gen(be, SELECT_NDATA, SELECT_NPARITY, SELECT_LEN, nstripes, blocks);
	for (int run = 0; run < 3; run++) {
		double t0 = select_now(), dt;

		if (graid_parity_gen(be, SELECT_NDATA, SELECT_NPARITY, SELECT_LEN, nstripes, blocks))
			return 0;
		dt = select_now() - t0;
		if (dt > 0 && (double)SELECT_NDATA * SELECT_LEN * nstripes / dt / 1e9 > best)
			best = (double)SELECT_NDATA * SELECT_LEN * nstripes / dt / 1e9;
	}
	return best;
}

int graid__route_measure(struct graid_backend *be)
{
	static const size_t counts[ROUTE_POINTS] = { 1, 4, 16, 64, 256 };
	const size_t nblk = SELECT_NDATA + SELECT_NPARITY;
	size_t bytes[ROUTE_POINTS];
	double cpu[ROUTE_POINTS], acc[ROUTE_POINTS];
	uint8_t **blocks, *buf;
	struct route r;
	int rc;

	if (posix_memalign((void **)&buf, 64, counts[ROUTE_POINTS - 1] * nblk * SELECT_LEN))
		return -ENOMEM;
	blocks = malloc(counts[ROUTE_POINTS - 1] * nblk * sizeof(*blocks));
	if (!blocks) {
		free(buf);
		return -ENOMEM;
	}
	memset(buf, 0x5a, counts[ROUTE_POINTS - 1] * nblk * SELECT_LEN);
	for (size_t i = 0; i < counts[ROUTE_POINTS - 1] * nblk; i++)
		blocks[i] = buf + i * SELECT_LEN;
	for (int i = 0; i < ROUTE_POINTS; i++) {
		bytes[i] = counts[i] * nblk * SELECT_LEN;
		acc[i] = select_time_gen(be, blocks, counts[i]);
		cpu[i] = select_time_gen(be->fallback, blocks, counts[i]);
	}
	free(blocks);
	free(buf);
	rc = route_from_timings(&r, bytes, cpu, acc, ROUTE_POINTS);
	if (rc) {
		graid__log(GRAID_LOG_WARNING, "engine %s: routing not measured (%s); all batches go "
					      "to it", be->ops->name, graid_strerror(rc));
		return rc;
	}
	be->route = r;
	graid__log(GRAID_LOG_NOTICE, "engine %s: batches under %zu bytes go to %s; %.0f%% of "
				     "batches from %zu bytes run on %s at the same time",
		   be->ops->name, r.crossover_bytes, be->fallback->ops->name, r.cpu_share * 100,
		   r.split_min_bytes, be->fallback->ops->name);
	return 0;
}
