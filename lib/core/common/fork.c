/* SPDX-License-Identifier: MIT */
/* The library's process-wide locks, held across fork() so that a child never inherits one taken. */
#include <pthread.h>

#include "common/internal.h"

struct graid_lock graid__select_lock = GRAID_LOCK_INIT;
struct graid_lock graid__registry_lock = GRAID_LOCK_INIT;
struct graid_lock graid__log_lock = GRAID_LOCK_INIT;

/*
 * A thread of the parent that holds one of these locks at the fork does not exist in the
 * child: the child would wait for that lock forever the first time it opens an engine or
 * logs (a test that forks while another thread opens engines hung this way). So the
 * forking thread takes them all first and releases them on both sides. They are taken
 * outermost first, in the order they nest: auto's measurement (select) opens engines,
 * which look at the plugin registry and start the CPU pool, and all of them log.
 */
static struct graid_lock *_Atomic fork_locks[GRAID_FORK_RANKS] = {
	[GRAID_FORK_SELECT] = &graid__select_lock,
	[GRAID_FORK_REGISTRY] = &graid__registry_lock,
	[GRAID_FORK_LOG] = &graid__log_lock,
};
#define FORK_NLOCKS GRAID_FORK_RANKS

void graid__fork_lock_register(struct graid_lock *l, enum graid_fork_rank rank)
{
	graid__fork_safe();
	atomic_store(&fork_locks[rank], l);
}

/*
 * Which of them this thread's fork took. One the forking thread holds itself (a plugin
 * forking a helper during auto's measurement, a log callback that forks) is left alone:
 * waiting for it would hang, and the child's copy of the thread holds it and releases it
 * as the parent's does.
 */
static _Thread_local bool fork_took[FORK_NLOCKS];

void graid__lock(struct graid_lock *l)
{
	pthread_mutex_lock(&l->mutex);
	atomic_store_explicit(&l->owner, (unsigned long)pthread_self(), memory_order_relaxed);
}

void graid__unlock(struct graid_lock *l)
{
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	pthread_mutex_unlock(&l->mutex);
}

static void fork_prepare(void)
{
	for (unsigned i = 0; i < FORK_NLOCKS; i++) {
		struct graid_lock *l = atomic_load(&fork_locks[i]);

		/* Only this thread can have stored its own id there, and only while holding it. */
		fork_took[i] = l && atomic_load_explicit(&l->owner, memory_order_relaxed) !=
					    (unsigned long)pthread_self();
		if (fork_took[i])
			graid__lock(l);
	}
}

static void fork_parent(void)
{
	for (unsigned i = FORK_NLOCKS; i-- > 0;)
		if (fork_took[i])
			graid__unlock(atomic_load(&fork_locks[i]));
}

atomic_uint graid__fork_gen;

static void fork_child(void)
{
	atomic_fetch_add_explicit(&graid__fork_gen, 1, memory_order_relaxed);
	fork_parent();
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void graid__fork_safe(void)
{
	pthread_once(&fork_once, fork_register);
}
