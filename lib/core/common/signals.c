/* SPDX-License-Identifier: MIT */
/* Absorbing the SIGPIPE a fabric transport sends to a submitting thread; signal-free threads. */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "common/internal.h"
#include "common/signals.h"

atomic_bool graid__fabric_seen;
static atomic_ulong sigpipe_absorbed;

void signals_note_fabric(void)
{
	atomic_store_explicit(&graid__fabric_seen, true, memory_order_relaxed);
}

void sigpipe_guard_begin_always(struct sigpipe_guard *g)
{
	sigset_t pipe;

	g->armed = false;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &pipe, &g->old))
		return;
	/* Blocked already: the block above changed nothing, and what is pending is not ours. */
	g->armed = !sigismember(&g->old, SIGPIPE);
}

void sigpipe_guard_end_slow(struct sigpipe_guard *g)
{
	static const struct timespec now = { 0, 0 };
	int saved = errno;
	sigset_t pending, pipe;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	/* A standard signal is pending at most once per thread and once per process. */
	if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
		unsigned long n = 0;

		while (sigtimedwait(&pipe, NULL, &now) == SIGPIPE)
			n++;
		if (n && atomic_fetch_add(&sigpipe_absorbed, n) == 0)
			graid__log(GRAID_LOG_NOTICE,
				   "a member's transport raised SIGPIPE (its connection was reset); "
				   "absorbed, the application does not receive it");
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	g->armed = false;
	errno = saved;
}

unsigned long signals_sigpipe_absorbed(void)
{
	return atomic_load(&sigpipe_absorbed);
}

int graid__thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			 void *arg)
{
	sigset_t all, old;
	int rc;

	/* A new thread starts with its creator's mask: block all for the moment it is made. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
