/* SPDX-License-Identifier: MIT */
/* parity-compare's output: the table, the CSV, and where one engine overtakes another. */
#ifndef PC_REPORT_H
#define PC_REPORT_H

#include <stdio.h>

#include "pc_point.h"

/** One engine at one point of the sweep. */
struct pc_row {
	enum pc_op op;
	unsigned ndata;
	size_t len;
	size_t nstripes;
	const char *engine;
	struct pc_result res;
};

/** "gen" or "recover". */
const char *pc_op_name(enum pc_op op);

/** The table's column heads, then one line per row. */
void pc_report_head(FILE *out);
void pc_report_row(FILE *out, const struct pc_row *row);

/** Write every row to @p path as CSV; 0 or a negative errno. */
int pc_report_csv(const char *path, const struct pc_row *rows, size_t n);

/**
 * For each operation and layout: the fastest engine at each batch size, and the batch
 * sizes between which the fastest changes (the cross-overs).
 */
void pc_report_crossover(FILE *out, const struct pc_row *rows, size_t n);

#endif /* PC_REPORT_H */
