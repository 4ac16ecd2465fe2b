/* SPDX-License-Identifier: MIT */
/* Routing by batch size between a CPU engine and an accelerator (policy in route.c). */
#ifndef LIBGRAID_CORE_ROUTE_H
#define LIBGRAID_CORE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROUTE_MAX_POINTS 8

struct route {
	bool enabled;
	unsigned npoints;
	size_t bytes[ROUTE_MAX_POINTS];     /* batch sizes measured (data + parity bytes) */
	double cpu_gbps[ROUTE_MAX_POINTS];
	double acc_gbps[ROUTE_MAX_POINTS];
	size_t crossover_bytes;             /* batches smaller than this go to the CPU */
	size_t split_min_bytes;             /* batches this large are split between both */
	double cpu_share;                   /* the CPU's part of a split batch, 0: no split */
};

/*
 * Derive the policy from timings of the same work on both engines at increasing batch
 * sizes. Returns 0, or -EINVAL for non-increasing sizes, non-positive speeds or no points.
 */
int route_from_timings(struct route *r, const size_t *bytes, const double *cpu_gbps,
		       const double *acc_gbps, unsigned n);

/* How many of a batch's stripes go to the CPU and how many to the accelerator. */
void route_plan(const struct route *r, size_t stripe_bytes, size_t nstripes, size_t *cpu,
		size_t *acc);

#endif
