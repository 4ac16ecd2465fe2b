/* SPDX-License-Identifier: MIT */
/*
 * Signals the library must keep away from the application.
 *
 * The kernel's NVMe/TCP initiator may send a request from the very thread that submitted
 * it, and it does not pass MSG_NOSIGNAL: when the storage host has reset the connection,
 * the socket write fails with EPIPE and the kernel sends SIGPIPE to that thread, whose
 * default action ends the process (seen in the nvmeof VM suite: a member that flaps killed
 * the program writing to the array). A library that reaches fabric members must therefore
 * absorb that SIGPIPE around every call that can issue member I/O in a caller's thread, and
 * the core library's own threads block every signal (the application's handlers run on its
 * own threads; the CUDA plugin's copy threads, which do no member I/O, keep their creator's).
 */
#ifndef LIBGRAID_CORE_SIGNALS_H
#define LIBGRAID_CORE_SIGNALS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <pthread.h>

/* Set once a member reached over a fabric has been opened in this process. */
extern atomic_bool graid__fabric_seen;

/* A SIGPIPE absorbed around one kernel call: what the caller's mask was. */
struct sigpipe_guard {
	bool armed;   /* SIGPIPE was blocked here and must be consumed and unblocked */
	sigset_t old; /* the caller's mask */
};

/*
 * A member that may be reached over a network was opened (an NVMe-oF namespace, or a block
 * device not known to be a local NVMe namespace): guard member I/O from now on.
 */
void signals_note_fabric(void);

/*
 * Block SIGPIPE in this thread until sigpipe_guard_end(), unconditionally (the rare paths:
 * identifying a device whose transport is not known yet). Does nothing when the caller
 * already blocks SIGPIPE: a SIGPIPE pending then is the caller's to handle.
 */
void sigpipe_guard_begin_always(struct sigpipe_guard *g);

/* As sigpipe_guard_begin_always(), only once a fabric member exists (the hot paths). */
static inline void sigpipe_guard_begin(struct sigpipe_guard *g)
{
	g->armed = false;
	if (atomic_load_explicit(&graid__fabric_seen, memory_order_relaxed))
		sigpipe_guard_begin_always(g);
}

/*
 * Consume a SIGPIPE that became pending while the guard was up, and restore the caller's
 * mask. errno is kept. A SIGPIPE that another process sent to this one inside the window
 * is consumed too; nothing can tell the two apart.
 */
void sigpipe_guard_end_slow(struct sigpipe_guard *g);
static inline void sigpipe_guard_end(struct sigpipe_guard *g)
{
	if (g->armed)
		sigpipe_guard_end_slow(g);
}

/* How many SIGPIPEs the guards absorbed in this process (the VM suite reports it). */
unsigned long signals_sigpipe_absorbed(void);

/*
 * pthread_create() for the library's own threads: the thread starts with every signal
 * blocked (the creator's mask is untouched). Returns pthread_create()'s error number.
 */
int graid__thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			 void *arg);

#endif
