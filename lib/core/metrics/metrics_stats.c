/* SPDX-License-Identifier: MIT */
/* The metrics of the arrays' I/O statistics and latency histograms (graid_array_stats()). */
#include "metrics/metrics.h"

/*
 * Where graid_array_stats()'s families go (docs/METRICS.md, "I/O statistics"): per array
 * (member -1) and per role, ops, bytes and errors per I/O kind, and the latency histogram
 * with its log2 buckets as le="..." seconds. Empty until the statistics are in the library.
 */
void metrics_stats_families(FILE *out, const struct metrics_snap *s, unsigned n)
{
	(void)out;
	(void)s;
	(void)n;
}
