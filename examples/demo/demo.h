/* SPDX-License-Identifier: MIT */
/* The two parts of the demo, and the clock they share. */
#ifndef GRAID_DEMO_H
#define GRAID_DEMO_H

#include <time.h>

int demo_engines(void);
int demo_array(void);

static inline double demo_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
