/* SPDX-License-Identifier: MIT */
/*
 * A few threads that share the staged path's host copies (packing inputs into pinned
 * memory, unpacking outputs from it): one thread's memcpy moves about 10 GB/s, a PCIe Gen5
 * link about 50 GB/s.
 */
#ifndef GRAID_CUDA_POOL_H
#define GRAID_CUDA_POOL_H

#include <stddef.h>

struct cuda_pool;

/* Work item i of a job. Items of one job run concurrently, in any order. */
typedef void (*cuda_pool_fn)(void *arg, size_t i);

/* Copies smaller than this are done by the calling thread alone: waking workers costs more. */
#define CUDA_POOL_MIN_BYTES (1u << 20)

/*
 * Start nthreads - 1 workers (the caller of cuda_pool_run is the last one); nthreads 1
 * starts none. 0, or a negative errno; *out is NULL when nthreads is 1 or no worker started
 * (cuda_pool_run then runs everything in the caller).
 */
int cuda_pool_start(struct cuda_pool **out, unsigned nthreads);
void cuda_pool_stop(struct cuda_pool *p);
/* Threads that copy: the workers started and the caller (1 for a NULL pool). */
unsigned cuda_pool_threads(const struct cuda_pool *p);
/* Run fn(arg, 0..count-1) on the caller and the workers; returns when every item is done.
 * bytes: what the job moves, to leave small jobs to the caller. p may be NULL. */
void cuda_pool_run(struct cuda_pool *p, size_t count, size_t bytes, cuda_pool_fn fn, void *arg);

#endif /* GRAID_CUDA_POOL_H */
