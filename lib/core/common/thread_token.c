/* SPDX-License-Identifier: MIT */
/* A number per thread that no other thread of the process ever has, even after it exits. */
#include "common/internal.h"

/*
 * pthread_self() is the address of the thread's control block, which the next thread made
 * after one exits usually gets again: it cannot say "the thread that made this". A token
 * drawn from a counter at a thread's first call can: a new thread starts with its own
 * zeroed copy of tls_token and draws a new one. 0 is never drawn.
 */
static atomic_ulong next_token;
static _Thread_local unsigned long tls_token;

unsigned long graid__thread_token(void)
{
	if (!tls_token)
		tls_token = atomic_fetch_add_explicit(&next_token, 1, memory_order_relaxed) + 1;
	return tls_token;
}
