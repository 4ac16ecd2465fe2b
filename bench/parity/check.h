/* SPDX-License-Identifier: MIT */
/*
 * The quick check-and-time of every usable parity engine: `parity_bench check` and
 * `graidctl bench` are this one routine (public API only, so graidctl can carry it).
 */
#ifndef GRAID_BENCH_PARITY_CHECK_H
#define GRAID_BENCH_PARITY_CHECK_H

#include <stddef.h>

struct pb_check_opts {
	unsigned ndata;    /* data blocks per RAID-6 stripe, 1..255 */
	size_t len;        /* block length */
	size_t nstripes;   /* stripes per engine call */
	double seconds;    /* time spent on each figure */
	const char *data;  /* the batch's data size as the caller prints it ("16 MiB") */
};

/* The defaults: 8+2, 64 KiB blocks, 32 stripes a call, 0.2 s a figure. */
#define PB_CHECK_DEFAULTS { .ndata = 8, .len = 64 * 1024, .nstripes = 32, .seconds = 0.2 }

/*
 * Print the table (memcpy, then ref, then every other usable engine: gen, recover 2 and
 * check GB/s of data, and whether its output equals ref's) on stdout. 0 every engine
 * agreed with ref; 1 one failed or differed; a negative errno when listing the engines or
 * allocating the stripes failed (nothing timed).
 */
int pb_check_run(const struct pb_check_opts *o);

#endif
