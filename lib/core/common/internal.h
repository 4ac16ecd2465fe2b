/* SPDX-License-Identifier: MIT */
/* Declarations shared inside the core library; nothing here is part of the public API. */
#ifndef LIBGRAID_CORE_INTERNAL_H
#define LIBGRAID_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <pthread.h>

#include <libgraid/graid.h>


#if defined(__GNUC__)
#define GRAID_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GRAID_PRINTF(f, a)
#endif

/* CLOCK_MONOTONIC in nanoseconds: the clock of every pace, deadline and checkpoint. */
static inline uint64_t graid__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether an engine's ops table (fields only appended) reaches @p field. */
#define GRAID_OPS_HAS(ops, field)                                                        \
	((ops)->struct_size >= offsetof(struct graid_backend_ops, field) + sizeof((ops)->field))

/* log.c */
void graid__log(int level, const char *fmt, ...) GRAID_PRINTF(2, 3);

/*
 * fork.c: the library's process-wide locks, held across fork() by one handler (registered
 * by graid__fork_safe(); every entry point that may take one of them calls it first). A
 * lock knows which thread holds it, so a thread that forks while holding one is not made
 * to wait for itself.
 */
struct graid_lock {
	pthread_mutex_t mutex;
	atomic_ulong owner; /* pthread_self() of the holder, 0 when free */
};
#define GRAID_LOCK_INIT { PTHREAD_MUTEX_INITIALIZER, 0 }
void graid__lock(struct graid_lock *l);
void graid__unlock(struct graid_lock *l);
void graid__fork_safe(void);
/*
 * The locks fork() takes, outermost first, in the order they nest: the control endpoint's
 * start and stop (control/) log; auto's measurement (select) opens engines, which look at
 * the plugin registry and start an engine's worker pool, and all of them log. A lock of a
 * layer above (an engine's pool, the control endpoint's) is registered by its owner before
 * its first use; a rank holds one lock.
 */
enum graid_fork_rank {
	GRAID_FORK_CONTROL,
	GRAID_FORK_SELECT,
	GRAID_FORK_REGISTRY,
	GRAID_FORK_POOL,
	GRAID_FORK_LOG,
	GRAID_FORK_RANKS
};
void graid__fork_lock_register(struct graid_lock *l, enum graid_fork_rank rank);
/*
 * How many fork()s this process's line has been through as the child (registered by
 * graid__fork_safe()): a child's thread has its parent's pthread_self(), and this tells them
 * apart without a system call.
 */
extern atomic_uint graid__fork_gen;
/*
 * thread_token.c: this thread's number, never another thread's in this process, not even
 * one made after this one exits (pthread_self() is). A fork()'s child keeps its thread's
 * number: graid__fork_gen tells the two apart.
 */
unsigned long graid__thread_token(void);
extern struct graid_lock graid__select_lock, graid__registry_lock, graid__log_lock;

#endif /* LIBGRAID_CORE_INTERNAL_H */
