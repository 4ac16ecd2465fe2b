/* SPDX-License-Identifier: MIT */
/* parity_bench's modes: one program times the parity engines three ways (bench/parity/main.c). */
#ifndef GRAID_BENCH_PARITY_MODES_H
#define GRAID_BENCH_PARITY_MODES_H

/*
 * Each takes the arguments after the mode name (argv[0] is the program name as the mode
 * should print it) and returns the exit status: 0; 1 an engine failed or its output
 * differed; 2 bad usage or setup failure. None ever fails on time.
 */

/* table: every engine beside ISA-L called directly and memcpy, cache and DRAM sets (table.c). */
int pb_table_main(int argc, char **argv);
/* sweep: every engine over layouts x batch sizes, latency, CPU s/GB, cross-overs, chart (sweep.c). */
int pb_sweep_main(int argc, char **argv);
/* check: gen, recover and check of every usable engine next to memcpy, checked with ref (check.c). */
int pb_check_main(int argc, char **argv);

#endif
