/* SPDX-License-Identifier: MIT */
/* parity-compare's chart: a gnuplot script of GB/s against batch size, run if gnuplot is here. */
#ifndef PC_CHART_H
#define PC_CHART_H

#include "pc_report.h"

/**
 * Write a gnuplot script to @p gp_path that draws @p png_path: one panel per operation
 * and layout, GB/s against stripes per batch, one line per engine, both axes logarithmic
 * (engines differ by orders of magnitude, and a GPU's curve climbs over decades of batch
 * size), so that the batch size where one engine overtakes another shows as a crossing.
 * The data is inside the script. 0 or a negative errno.
 */
int pc_chart_write(const char *gp_path, const char *png_path, const struct pc_row *rows,
		   size_t n);

/**
 * Run gnuplot on @p gp_path. 0 on success; -ENOENT if no gnuplot is on PATH; -EIO if it
 * ran and failed; another negative errno if it could not be started.
 */
int pc_chart_render(const char *gp_path);

#endif /* PC_CHART_H */
