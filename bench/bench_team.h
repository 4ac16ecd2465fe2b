/* SPDX-License-Identifier: MIT */
/* Run one piece of work on N threads at once and time it from a common start to the last finish. */
#ifndef GRAID_BENCH_TEAM_H
#define GRAID_BENCH_TEAM_H

/** The work of thread @p tid (0..nthreads-1); @p arg is shared by all threads. */
typedef void (*bench_team_fn)(void *arg, unsigned tid);

/**
 * Start @p nthreads threads (the caller is thread 0), release them together, and return
 * the wall-clock seconds from the release until the last one finished; thread start-up is
 * not timed. Returns a negative value if a thread could not be started (nothing ran).
 */
double bench_team_run(unsigned nthreads, bench_team_fn fn, void *arg);

#endif /* GRAID_BENCH_TEAM_H */
