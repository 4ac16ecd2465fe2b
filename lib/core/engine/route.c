/* SPDX-License-Identifier: MIT */
/*
 * Routing by batch size: small batches are cheaper on the CPU than a trip over PCIe, large
 * ones go to the accelerator, and the largest are split so both work at once. Pure policy
 * from measured (or, in tests, made-up) timings; no I/O, no engine calls.
 */
#include <errno.h>
#include <string.h>

#include "engine/route.h"

int route_from_timings(struct route *r, const size_t *bytes, const double *cpu_gbps,
		       const double *acc_gbps, unsigned n)
{
	unsigned i;

	if (!r || !bytes || !cpu_gbps || !acc_gbps || n == 0 || n > ROUTE_MAX_POINTS)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	for (i = 0; i < n; i++) {
		if (cpu_gbps[i] <= 0 || acc_gbps[i] <= 0 || (i && bytes[i] <= bytes[i - 1]))
			return -EINVAL;
		r->bytes[i] = bytes[i];
		r->cpu_gbps[i] = cpu_gbps[i];
		r->acc_gbps[i] = acc_gbps[i];
	}
	r->npoints = n;
	/*
	 * The cross-over: the smallest measured size from which the accelerator is at least as
	 * fast at every larger size. Below it (and below the smallest size measured, by
	 * extension) the CPU takes the batch. Past the largest size the accelerator wins only
	 * if it won there.
	 */
	r->crossover_bytes = SIZE_MAX;
	for (i = n; i-- > 0;) {
		if (acc_gbps[i] < cpu_gbps[i])
			break;
		r->crossover_bytes = bytes[i];
	}
	/*
	 * Split big batches in proportion to the two speeds at the largest size: both finish
	 * together, and the throughput is their sum. Not worth a second thread below 10%.
	 */
	r->cpu_share = cpu_gbps[n - 1] / (cpu_gbps[n - 1] + acc_gbps[n - 1]);
	if (r->cpu_share < 0.10)
		r->cpu_share = 0;
	r->split_min_bytes = bytes[n - 1];
	r->enabled = true;
	return 0;
}

void route_plan(const struct route *r, size_t stripe_bytes, size_t nstripes, size_t *cpu,
		size_t *acc)
{
	size_t total = stripe_bytes * nstripes;

	if (!r->enabled) {
		*cpu = 0;
		*acc = nstripes;
		return;
	}
	if (total < r->crossover_bytes) {
		*cpu = nstripes;
		*acc = 0;
		return;
	}
	if (r->cpu_share > 0 && total >= r->split_min_bytes && nstripes >= 2) {
		size_t c = (size_t)((double)nstripes * r->cpu_share + 0.5);

		if (c == 0)
			c = 1;
		if (c >= nstripes)
			c = nstripes - 1;
		*cpu = c;
		*acc = nstripes - c;
		return;
	}
	*cpu = 0;
	*acc = nstripes;
}
