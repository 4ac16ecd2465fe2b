/* SPDX-License-Identifier: MIT */
/* parity-compare's output: the table, the CSV, and where one engine overtakes another. */
#include <errno.h>
#include <string.h>

#include "pc_report.h"

const char *pc_op_name(enum pc_op op)
{
	return op == PC_OP_GEN ? "gen" : "recover";
}

void pc_report_head(FILE *out)
{
	fprintf(out, "%-7s %-6s %7s %10s  %-8s %9s %12s %9s  %s\n", "op", "layout", "stripes",
		"batch MiB", "engine", "GB/s", "latency us", "CPU s/GB", "vs ref");
}

static const char *pc_verdict(const struct pc_result *r)
{
	return r->rc ? "ERROR" : r->identical ? "identical" : "DIFFERS";
}

void pc_report_row(FILE *out, const struct pc_row *w)
{
	double mib = (double)w->nstripes * w->ndata * w->len / (1 << 20);

	if (w->res.rc) {
		fprintf(out, "%-7s %3u+2  %7zu %10.2f  %-8s %9s %12s %9s  %s (%s)\n",
			pc_op_name(w->op), w->ndata, w->nstripes, mib, w->engine, "-", "-", "-",
			pc_verdict(&w->res), graid_strerror(w->res.rc));
		return;
	}
	fprintf(out, "%-7s %3u+2  %7zu %10.2f  %-8s %9.2f %12.1f %9.3f  %s\n", pc_op_name(w->op),
		w->ndata, w->nstripes, mib, w->engine, w->res.gbps, w->res.latency_us,
		w->res.cpu_s_per_gb, pc_verdict(&w->res));
}

int pc_report_csv(const char *path, const struct pc_row *rows, size_t n)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f)
		return -errno;
	fprintf(f, "op,ndata,nparity,block_bytes,stripes,batch_data_bytes,engine,gbps,"
		   "latency_us,cpu_s_per_gb,calls,vs_ref\n");
	for (size_t i = 0; i < n; i++) {
		const struct pc_row *w = &rows[i];

		fprintf(f, "%s,%u,2,%zu,%zu,%zu,%s,", pc_op_name(w->op), w->ndata, w->len,
			w->nstripes, w->nstripes * w->ndata * w->len, w->engine);
		if (w->res.rc)
			fprintf(f, ",,,,%s\n", pc_verdict(&w->res));
		else
			fprintf(f, "%.4f,%.2f,%.5f,%u,%s\n", w->res.gbps, w->res.latency_us,
				w->res.cpu_s_per_gb, w->res.calls, pc_verdict(&w->res));
	}
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && rc == 0)
		rc = -errno;
	return rc;
}

/* The fastest correct engine among rows [i, j), which share op, layout and batch size. */
static const struct pc_row *pc_fastest(const struct pc_row *rows, size_t i, size_t j)
{
	const struct pc_row *best = NULL;

	for (; i < j; i++)
		if (!rows[i].res.rc && rows[i].res.identical &&
		    (!best || rows[i].res.gbps > best->res.gbps))
			best = &rows[i];
	return best;
}

static bool pc_same_point(const struct pc_row *a, const struct pc_row *b)
{
	return a->op == b->op && a->ndata == b->ndata && a->nstripes == b->nstripes;
}

void pc_report_crossover(FILE *out, const struct pc_row *rows, size_t n)
{
	fprintf(out, "\n# fastest engine per batch size (stripes:engine), and the cross-overs\n");
	for (size_t i = 0; i < n;) {
		const struct pc_row *prev = NULL;
		char changes[512] = "";
		size_t used = 0;

		fprintf(out, "# %-7s %3u+2:", pc_op_name(rows[i].op), rows[i].ndata);
		/* Rows come grouped: op, then layout, then batch size, then engine. */
		while (i < n) {
			size_t j = i;
			const struct pc_row *best;

			while (j < n && pc_same_point(&rows[i], &rows[j]))
				j++;
			best = pc_fastest(rows, i, j);
			fprintf(out, " %zu:%s", rows[i].nstripes, best ? best->engine : "-");
			if (best && prev && strcmp(best->engine, prev->engine) &&
			    used < sizeof(changes))
				used += (size_t)snprintf(changes + used, sizeof(changes) - used,
							 "%s %s -> %s between %zu and %zu stripes",
							 used ? ";" : "", prev->engine, best->engine,
							 prev->nstripes, best->nstripes);
			if (best)
				prev = best;
			if (j >= n || rows[j].op != rows[i].op || rows[j].ndata != rows[i].ndata) {
				i = j;
				break;
			}
			i = j;
		}
		fprintf(out, "\n#   cross-over:%s\n", used ? changes : " none in this range");
	}
}
