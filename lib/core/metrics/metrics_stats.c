/* SPDX-License-Identifier: MIT */
/* The metrics of the arrays' I/O statistics and latency histograms (graid_array_stats()). */
#include <inttypes.h>

#include "metrics/metrics.h"

static const char *const kind_names[GRAID_IO_KINDS] = {
	[GRAID_IO_READ] = "read",
	[GRAID_IO_WRITE] = "write",
	[GRAID_IO_FLUSH] = "flush",
	[GRAID_IO_DISCARD] = "discard",
};

/* Which number of struct graid_io_counts a counter family shows. */
enum stat_field { F_OPS, F_BYTES, F_ERRORS, F_TIME };

/* The labels of one series: the array's, the member's where @p i is one, and the kind's. */
static void labels(FILE *o, const struct metrics_snap *s, int i, unsigned kind)
{
	fputs("{array=\"", o);
	metrics_label(o, s->label);
	fputc('"', o);
	if (i >= 0) {
		fprintf(o, ",member=\"%d\",device=\"", i);
		metrics_label(o, s->m[i].mi.path);
		fputc('"', o);
	}
	fprintf(o, ",kind=\"%s\"", kind_names[kind]);
}

static const struct graid_io_stats *stats_of(const struct metrics_snap *s, int i)
{
	return i < 0 ? &s->io : &s->m[i].io;
}

static void counter_series(FILE *o, const char *name, const struct metrics_snap *s, int i,
			   enum stat_field f)
{
	const struct graid_io_stats *st = stats_of(s, i);

	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		const struct graid_io_counts *c = &st->io[k];

		fputs(name, o);
		labels(o, s, i, k);
		if (f == F_TIME)
			fprintf(o, "} %.9g\n", (double)c->latency_ns_sum / 1e9);
		else
			fprintf(o, "} %" PRIu64 "\n", f == F_OPS ? c->ops :
					 f == F_BYTES ? c->bytes : c->errors);
	}
}

/*
 * One histogram series: bucket b holds completions under 2^(b+10) ns (the last one: all
 * slower), so `le` is that bound in seconds, cumulative as Prometheus wants. Left out while
 * no bucket counted anything (histograms off): an empty histogram would read as no I/O.
 * _sum is the latency sum of the very I/Os the buckets counted (the library keeps it apart
 * from the sum of all I/Os), so it is a counter and _sum / _count their mean over any window.
 */
static void histogram_series(FILE *o, const char *name, const struct metrics_snap *s, int i)
{
	const struct graid_io_stats *st = stats_of(s, i);

	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		const struct graid_io_counts *c = &st->io[k];
		uint64_t cum = 0;

		for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
			cum += c->latency[b];
		if (!cum)
			continue;
		cum = 0;
		for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++) {
			cum += c->latency[b];
			fprintf(o, "%s_bucket", name);
			labels(o, s, i, k);
			if (b + 1 < GRAID_LATENCY_BUCKETS)
				fprintf(o, ",le=\"%.9g\"} %" PRIu64 "\n",
					(double)(1ull << (b + 10)) / 1e9, cum);
			else
				fprintf(o, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
		}
		fprintf(o, "%s_sum", name);
		labels(o, s, i, k);
		fprintf(o, "} %.9g\n", (double)c->latency_hist_ns_sum / 1e9);
		fprintf(o, "%s_count", name);
		labels(o, s, i, k);
		fprintf(o, "} %" PRIu64 "\n", cum);
	}
}

struct stat_family {
	const char *name, *type, *help;
	bool member;             /* per role and spare; else per array */
	int field;               /* enum stat_field; -1: the latency histogram */
};

static const struct stat_family stat_families[] = {
	{ "graid_io_ops_total", "counter", "The callers' I/O requests completed, by kind "
	  "(failed ones too).", false, F_OPS },
	{ "graid_io_bytes_total", "counter", "Bytes of the callers' requests that succeeded.",
	  false, F_BYTES },
	{ "graid_io_errors_total", "counter", "The callers' requests that failed.", false,
	  F_ERRORS },
	{ "graid_io_time_seconds_total", "counter", "Time the callers' requests took, summed.",
	  false, F_TIME },
	{ "graid_io_latency_seconds", "histogram", "Latency of the callers' requests (kept "
	  "while histograms are on: graid_array_set_stats_options).", false, -1 },
	{ "graid_member_io_ops_total", "counter", "I/Os of the member's device completed, by "
	  "kind (failed ones too).", true, F_OPS },
	{ "graid_member_io_bytes_total", "counter", "Bytes of the member's I/Os that succeeded.",
	  true, F_BYTES },
	{ "graid_member_io_errors_total", "counter", "The member's I/Os that failed.", true,
	  F_ERRORS },
	{ "graid_member_io_time_seconds_total", "counter", "Time the member's I/Os took, summed.",
	  true, F_TIME },
	{ "graid_member_io_latency_seconds", "histogram", "Latency of the member's I/Os (kept "
	  "while histograms are on).", true, -1 },
};

/*
 * graid_array_stats()'s families (docs/METRICS.md, "I/O statistics"): per array (member -1)
 * and per role and spare, operations, bytes, errors and time per I/O kind, and the latency
 * histogram.
 */
void metrics_stats_families(FILE *out, const struct metrics_snap *s, unsigned n)
{
	for (size_t f = 0; f < sizeof(stat_families) / sizeof(stat_families[0]); f++) {
		const struct stat_family *sf = &stat_families[f];

		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", sf->name, sf->help, sf->name,
			sf->type);
		for (unsigned a = 0; a < n; a++) {
			int from = sf->member ? 0 : -1;
			int to = sf->member ? (int)s[a].nall : 0;

			for (int i = from; i < to; i++) {
				if (sf->field < 0)
					histogram_series(out, sf->name, &s[a], i);
				else
					counter_series(out, sf->name, &s[a], i,
						       (enum stat_field)sf->field);
			}
		}
	}
}
