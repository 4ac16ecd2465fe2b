/* SPDX-License-Identifier: MIT */
/* array_bench --histograms-ab: 4 KiB random-read IOPS with the latency histograms off and on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab.h"

static int hist_ab_set(struct graid_array *a, bool on)
{
	struct graid_stats_options so = { .struct_size = sizeof(so),
					  .flags = on ? GRAID_STATS_HISTOGRAMS : 0 };
	int rc = graid_array_set_stats_options(a, &so);

	if (rc)
		fprintf(stderr, "array_bench: graid_array_set_stats_options: %s\n",
			graid_strerror(rc));
	return rc;
}

static int hist_ab_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

int ab_hist_ab(struct graid_array *a, const struct ab_opts *o, uint64_t size)
{
	static struct ab_hist hist[2]; /* off, on: 16 KiB each, not on the stack */
	struct ab_result res[2];
	struct ab_run_cfg cfg = { .p = ab_profile_find("4k-randread"), .threads = o->threads,
				  .qd = o->qds[0], .seconds = o->seconds, .size = size,
				  .seed = o->seed };
	double ratio[AB_MAX_REPEAT];
	int rc = 0;

	memset(hist, 0, sizeof(hist));
	memset(res, 0, sizeof(res));
	/*
	 * Rounds alternate, and the order flips every round (off on, on off, ...): both sides
	 * see the same background load and the same warm-up on a shared machine.
	 */
	for (unsigned k = 0; k < o->repeat && rc == 0; k++) {
		double iops[2] = { 0, 0 };

		for (unsigned j = 0; j < 2 && rc == 0; j++) {
			bool on = (j ^ (k & 1)) != 0;
			uint64_t ios = res[on].ios;
			double secs = res[on].secs;

			rc = hist_ab_set(a, on);
			if (rc == 0)
				rc = ab_run(&ab_array_ops, a, &cfg, &res[on], &hist[on]);
			if (res[on].secs > secs)
				iops[on] = (double)(res[on].ios - ios) / (res[on].secs - secs);
		}
		ratio[k] = iops[0] > 0 ? iops[1] / iops[0] : 0;
	}
	if (rc)
		return rc;
	/* Each round's pair ran back to back: the median of their ratios shrugs off a burst. */
	qsort(ratio, o->repeat, sizeof(ratio[0]), hist_ab_cmp);
	ab_result_finish(&res[0], &hist[0]);
	ab_result_finish(&res[1], &hist[1]);
	printf("\n4k-randread, %u threads x qd %u, %u rounds of %.1f s each side, alternating:\n"
	       "  histograms off: %10.0f IOPS  avg %7.2f us  p99 %7.2f us  CPU %.3f s/GB\n"
	       "  histograms on:  %10.0f IOPS  avg %7.2f us  p99 %7.2f us  CPU %.3f s/GB\n"
	       "  on / off: %.1f %% (all rounds' IOPS), %.1f %% (median of the %u rounds' "
	       "ratios)\n", o->threads, o->qds[0], o->repeat, o->seconds,
	       res[0].iops, res[0].avg_us, res[0].p99_us, res[0].cpu_s_per_gb, res[1].iops,
	       res[1].avg_us, res[1].p99_us, res[1].cpu_s_per_gb, res[0].iops > 0 ? 100.0 * res[1].iops / res[0].iops : 0.0,
	       100.0 * (o->repeat % 2 ? ratio[o->repeat / 2]
				      : (ratio[o->repeat / 2 - 1] + ratio[o->repeat / 2]) / 2),
	       o->repeat);
	return 0;
}
