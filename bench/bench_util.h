/* SPDX-License-Identifier: MIT */
/* Helpers the benchmarks share: clocks, medians, aligned memory, random fill, run header,
 * the load average, and a watchdog against a hung library. */
#ifndef GRAID_BENCH_UTIL_H
#define GRAID_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/** Nanoseconds on CLOCK_MONOTONIC. */
uint64_t bench_now_ns(void);

/** Seconds of CPU time used by the whole process (all threads), CLOCK_PROCESS_CPUTIME_ID. */
double bench_cpu_now(void);

/** The median of @p n values (sorts @p v in place); 0 for n == 0. */
double bench_median(double *v, size_t n);

/** @p size bytes aligned to @p align (a power of two >= sizeof(void *)); NULL on failure. */
void *bench_alloc(size_t align, size_t size);

/** Fill @p len bytes with a fast pseudo-random stream from @p seed (xorshift64*). */
void bench_fill_random(void *buf, size_t len, uint64_t seed);

/** The 1, 5 and 15 minute load averages from /proc/loadavg ("unknown" if absent). */
void bench_loadavg(char *buf, size_t len);

/** Print date, CPU model, online CPUs, load and the command line, each line after "# ". */
void bench_print_header(FILE *out, int argc, char **argv);

/** The CPU model from /proc/cpuinfo ("unknown" if absent), into @p buf of @p len bytes. */
void bench_cpu_model(char *buf, size_t len);

/** Print "# load average <when>: X" (the 1 minute figure) to stdout; nothing if unreadable. */
void bench_print_loadavg(const char *when);

/** Install the SIGALRM watchdog: "<prog>: no progress, giving up ..." on stderr, then _exit(2). */
void bench_watch_init(const char *prog);

/** Arm the watchdog for @p phase, expected to take @p expect_secs (fires after 4x + 60 s). */
void bench_watch(const char *phase, double expect_secs);

#endif /* GRAID_BENCH_UTIL_H */
