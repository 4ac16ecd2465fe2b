/* SPDX-License-Identifier: MIT */
/* The library's process-wide locks, held across fork() so that a child never inherits one taken. */
#include <pthread.h>

#include "internal.h"

/*
 * A thread of the parent that holds one of these locks at the fork does not exist in the
 * child: the child would wait for that lock forever the first time it opens an engine or
 * logs (a test that forks while another thread opens engines hung this way). So the
 * forking thread takes them all first and releases them on both sides. They are taken
 * outermost first, in the order they nest: auto's measurement (select) opens engines,
 * which look at the plugin registry and start the CPU pool, and all of them log.
 * A lock the forking thread holds itself (a plugin forking a helper during auto's
 * measurement, a log callback that forks) is left alone by its module: its child's copy of
 * the thread holds it and releases it as the parent's does.
 */
static void fork_prepare(void)
{
	graid__select_fork_lock(true);
	graid__registry_fork_lock(true);
	graid__cpu_pool_fork_lock(true);
	graid__log_fork_lock(true);
}

static void fork_parent(void)
{
	graid__log_fork_lock(false);
	graid__cpu_pool_fork_lock(false);
	graid__registry_fork_lock(false);
	graid__select_fork_lock(false);
}

static void fork_child(void)
{
	/* The child has none of the parent's CPU workers: pools made before are not its own. */
	graid__cpu_pool_forked();
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
