/* SPDX-License-Identifier: MIT */
/* A small pool of worker threads, shared by the CPU engines of a process, sharing out the pieces of a call. */
#ifndef LIBGRAID_ISAL_CPU_POOL_H
#define LIBGRAID_ISAL_CPU_POOL_H

#include <stddef.h>

/* Threads a pool may have, the caller included. */
#define GRAID_CPU_MAX_THREADS 64u

struct graid_cpu_pool;

/* One piece of a call: 0 or a negative errno. Pieces of one call run concurrently. */
typedef int (*graid_cpu_piece_fn)(void *arg, size_t piece);

/*
 * A pool in which nthreads threads (the caller of graid__cpu_pool_run and nthreads - 1
 * workers, started here) share each call. nthreads <= 1: *out = NULL, which runs every call
 * on the caller. Fewer workers than asked (thread creation failed) is not an error: if
 * @p start_err is not NULL it gets pthread_create's error then (0 when all started).
 * Setup path: the only place threads start. Returns 0 or -ENOMEM.
 */
int graid__cpu_pool_create(struct graid_cpu_pool **out, unsigned nthreads, int *start_err);

/* Stop and join the workers. No call may be running. NULL is a no-op. */
void graid__cpu_pool_destroy(struct graid_cpu_pool *pool);

/*
 * The process's shared pool of nthreads threads, for an engine: started by the first
 * engine to ask, counted for each later one that asks for the same number; one that asks
 * for another number (GRAID_CPU_THREADS changed between opens) gets a pool of its own.
 * Fewer workers than asked is logged through @p log, with the reason. Returns as
 * graid__cpu_pool_create. Setup path.
 */
int graid__cpu_pool_get(struct graid_cpu_pool **out, unsigned nthreads,
			void (*log)(int level, const char *fmt, ...));

/* Give back a pool from graid__cpu_pool_get; the last one out stops and joins it. */
void graid__cpu_pool_put(struct graid_cpu_pool *pool);

/*
 * Threads a call would run on now: 1 for NULL, and 1 in a child forked from the process
 * that made the pool (its workers did not survive the fork).
 */
unsigned graid__cpu_pool_threads(const struct graid_cpu_pool *pool);

/*
 * fn(arg, i) for every i in [0, npieces), each exactly once, on the caller and the idle
 * workers; returns when all have finished. Safe from many threads at once: the caller
 * always works on its own call, so a busy pool delays a call but never blocks it.
 * Returns 0, or the error of a piece that failed (the other pieces still run).
 */
int graid__cpu_pool_run(struct graid_cpu_pool *pool, size_t npieces, graid_cpu_piece_fn fn,
			void *arg);

#endif /* LIBGRAID_ISAL_CPU_POOL_H */
