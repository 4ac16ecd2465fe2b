/* SPDX-License-Identifier: MIT */
/* parity-compare's chart: a gnuplot script of GB/s against batch size, run if gnuplot is here. */
#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pc_chart.h"

extern char **environ;

#define PC_CHART_MAX_ENGINES 16
#define PC_CHART_COLS 3

/* A gnuplot datablock name from an engine name: letters, digits and '_' only. */
static void pc_chart_ident(char *buf, size_t len, const struct pc_row *w)
{
	size_t o = (size_t)snprintf(buf, len, "$d_%s_%u_", pc_op_name(w->op), w->ndata);

	for (const char *p = w->engine; *p && o + 1 < len; p++)
		buf[o++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					  (*p >= '0' && *p <= '9')
				  ? *p : '_');
	buf[o] = '\0';
}

static bool pc_chart_same_panel(const struct pc_row *a, const struct pc_row *b)
{
	return a->op == b->op && a->ndata == b->ndata;
}

/* The distinct engines of a panel starting at rows[i], in order of first appearance. */
static unsigned pc_chart_engines(const struct pc_row *rows, size_t i, size_t j,
				 const char **eng)
{
	unsigned ne = 0;

	for (; i < j; i++) {
		unsigned k = 0;

		while (k < ne && strcmp(eng[k], rows[i].engine))
			k++;
		if (k == ne && ne < PC_CHART_MAX_ENGINES)
			eng[ne++] = rows[i].engine;
	}
	return ne;
}

static void pc_chart_panel(FILE *f, const struct pc_row *rows, size_t i, size_t j)
{
	const char *eng[PC_CHART_MAX_ENGINES];
	unsigned ne = pc_chart_engines(rows, i, j, eng);
	char id[96];

	/* One datablock per engine: stripes per batch, GB/s; failed or differing points left out. */
	for (unsigned e = 0; e < ne; e++) {
		bool first = true;

		for (size_t r = i; r < j; r++) {
			if (strcmp(rows[r].engine, eng[e]))
				continue;
			if (first) {
				pc_chart_ident(id, sizeof(id), &rows[r]);
				fprintf(f, "%s << EOD\n", id);
				first = false;
			}
			if (!rows[r].res.rc && rows[r].res.identical)
				fprintf(f, "%zu %.4f\n", rows[r].nstripes, rows[r].res.gbps);
		}
		fprintf(f, "EOD\n");
	}
	fprintf(f, "set title '%s %u+2, %zu KiB blocks'\nplot ", pc_op_name(rows[i].op),
		rows[i].ndata, rows[i].len >> 10);
	for (unsigned e = 0; e < ne; e++) {
		for (size_t r = i; r < j; r++)
			if (!strcmp(rows[r].engine, eng[e])) {
				pc_chart_ident(id, sizeof(id), &rows[r]);
				break;
			}
		fprintf(f, "%s%s using 1:2 with linespoints title '%s'", e ? ", " : "", id, eng[e]);
	}
	fprintf(f, "\n");
}

int pc_chart_write(const char *gp_path, const char *png_path, const struct pc_row *rows,
		   size_t n)
{
	unsigned npanels = 0, ncols, nrows;
	size_t xmin = SIZE_MAX, xmax = 0;
	FILE *f;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		npanels += i == 0 || !pc_chart_same_panel(&rows[i - 1], &rows[i]);
		xmin = rows[i].nstripes < xmin ? rows[i].nstripes : xmin;
		xmax = rows[i].nstripes > xmax ? rows[i].nstripes : xmax;
	}
	if (npanels == 0)
		return -EINVAL;
	ncols = npanels < PC_CHART_COLS ? npanels : PC_CHART_COLS;
	nrows = (npanels + ncols - 1) / ncols;
	f = fopen(gp_path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# parity-compare: GB/s of data against stripes per batch, per engine.\n"
		   "# Render with: gnuplot %s\n"
		   "set terminal png size %u,%u\nset output '%s'\n"
		   "set logscale x 4\nset logscale y\nset grid\nset key below horizontal\n"
		   /* One x range for every panel, so that layouts line up by batch size. */
		   "set xrange [%g:%g]\n"
		   "set xlabel 'stripes per batch'\nset ylabel 'GB/s of data'\n"
		   "set multiplot layout %u,%u title 'libgraid parity engines: throughput vs batch size'\n",
		gp_path, 520 * ncols, 420 * nrows, png_path, (double)xmin / 1.5,
		(double)xmax * 1.5, nrows, ncols);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && pc_chart_same_panel(&rows[i], &rows[j]))
			j++;
		pc_chart_panel(f, rows, i, j);
		i = j;
	}
	fprintf(f, "unset multiplot\n");
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && rc == 0)
		rc = -errno;
	return rc;
}

/* True if an executable named @p name is in one of PATH's directories. */
static bool pc_chart_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : ""; *p;) {
		size_t l = strcspn(p, ":");

		if (l && (size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, p, name) <
				 sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return true;
		p += l + (p[l] == ':');
	}
	return false;
}

int pc_chart_render(const char *gp_path)
{
	char *argv[] = { "gnuplot", (char *)gp_path, NULL };
	int status, rc;
	pid_t pid;

	if (!pc_chart_on_path("gnuplot"))
		return -ENOENT;
	fflush(NULL);
	rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	if (rc)
		return -rc;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}
