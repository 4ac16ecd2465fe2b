/* SPDX-License-Identifier: MIT */
/*
 * Signals kept away from the application (lib/core/common/signals.c). The kernel's NVMe/TCP
 * initiator raises SIGPIPE in the thread that submitted a request when the connection was
 * reset; here a write to a pipe whose reader is gone raises the same signal in the same
 * way (the kernel's send_sig to the current thread), so the guard can be tried without a
 * fabric. And the library's own threads must block every signal.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "common/signals.h"

/* A pipe whose read end is closed: a write to it raises SIGPIPE in the writing thread. */
static int broken_pipe(void)
{
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	close(fds[0]);
	return fds[1];
}

static bool pipe_pending(void)
{
	sigset_t p;

	cr_assert_eq(sigpending(&p), 0);
	return sigismember(&p, SIGPIPE);
}

static bool pipe_blocked(void)
{
	sigset_t m;

	cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &m), 0);
	return sigismember(&m, SIGPIPE);
}

Test(signals, guard_absorbs_the_sigpipe_a_write_raises)
{
	struct sigpipe_guard g;
	int fd = broken_pipe();
	ssize_t n;
	int err;

	signals_note_fabric();
	cr_assert(!pipe_blocked());
	sigpipe_guard_begin(&g);
	cr_assert(g.armed, "the guard is up once a fabric member was seen");
	n = write(fd, "x", 1);
	err = errno;
	sigpipe_guard_end(&g);
	/* Without the guard the default action would have ended this process here. */
	cr_assert_eq(n, -1);
	cr_assert_eq(err, EPIPE);
	cr_assert_eq(errno, EPIPE, "the guard keeps errno for the caller's -errno");
	cr_assert(!pipe_pending(), "the SIGPIPE was consumed, not left pending");
	cr_assert(!pipe_blocked(), "the caller's mask is restored");
	cr_assert_geq(signals_sigpipe_absorbed(), 1);
	close(fd);
}

Test(signals, guard_is_idle_until_a_fabric_member_exists)
{
	struct sigpipe_guard g;

	sigpipe_guard_begin(&g);
	cr_assert(!g.armed, "no fabric member: the hot paths pay nothing");
	cr_assert(!pipe_blocked());
	sigpipe_guard_end(&g);
	sigpipe_guard_begin_always(&g);
	cr_assert(g.armed && pipe_blocked());
	sigpipe_guard_end(&g);
	cr_assert(!pipe_blocked());
}

/* A caller that blocks SIGPIPE itself keeps what is pending: that signal is its own. */
Test(signals, guard_leaves_a_callers_own_pending_sigpipe)
{
	struct sigpipe_guard g;
	sigset_t pipe_set, old;
	int fd = broken_pipe();
	const struct timespec zero = { 0, 0 };

	signals_note_fabric();
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &pipe_set, &old), 0);
	cr_assert_eq(write(fd, "x", 1), -1);
	cr_assert(pipe_pending());
	sigpipe_guard_begin(&g);
	cr_assert(!g.armed);
	sigpipe_guard_end(&g);
	cr_assert(pipe_pending(), "the caller's pending SIGPIPE is left for the caller");
	cr_assert(pipe_blocked());
	cr_assert_eq(sigtimedwait(&pipe_set, NULL, &zero), SIGPIPE);
	cr_assert_eq(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	close(fd);
}

/* SigBlk of thread @tid, from /proc. */
static unsigned long long thread_sigblk(const char *tid)
{
	char path[300], line[256];
	unsigned long long blk = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return ~0ull; /* gone meanwhile */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			blk = strtoull(line + 7, NULL, 16);
	fclose(f);
	return blk;
}

/* The library's threads (the array's worker, the CPU engine's workers) block every signal. */
Test(signals, library_threads_block_signals)
{
	struct au_set s;
	struct graid_array *a = NULL;
	char self[32];
	unsigned others = 0;
	DIR *d;
	struct dirent *e;

	au_make(&s, 4, 8u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 64 * 1024, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, s.paths[3]), 0);
	snprintf(self, sizeof(self), "%ld", (long)syscall(SYS_gettid));
	d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		unsigned long long blk;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, self))
			continue;
		blk = thread_sigblk(e->d_name);
		others++;
		cr_expect(blk & (1ull << (SIGPIPE - 1)),
			  "thread %s does not block SIGPIPE (SigBlk %llx)", e->d_name, blk);
		cr_expect(blk & (1ull << (SIGINT - 1)),
			  "thread %s does not block SIGINT (SigBlk %llx)", e->d_name, blk);
	}
	closedir(d);
	cr_assert_geq(others, 1, "a writable array runs at least its worker thread");
	cr_assert(!pipe_blocked(), "the creating thread's own mask is untouched");
	graid_array_close(a);
	au_remove(&s);
}
