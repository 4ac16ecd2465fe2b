/* SPDX-License-Identifier: MIT */
/* The CPU engine's worker threads: split batches, thread counts, sharing, concurrent callers, fork, CPU affinity. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "../lib/backends/isal/cpu_measure.h"
#include "../lib/backends/isal/cpu_pool.h"
#include "../lib/backends/isal/cpu_variants.h"
#include "testutil.h"
#include "cpuvarutil.h"

Test(cpu_threads, split_batches_match_the_reference, .timeout = 600)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	uint64_t rng = tu_seed() ^ 0x63767468;

	cv_engine_shapes(be, &rng);
	graid_backend_close(be);
}

Test(cpu_threads, split_batches_match_with_the_portable_variant, .timeout = 600)
{
	struct graid_backend *be;
	uint64_t rng = tu_seed() ^ 0x63767463;

	setenv("GRAID_CPU_VARIANT", "c", 1);
	be = cv_open_threads("2", "100");
	cv_engine_shapes(be, &rng);
	graid_backend_close(be);
}

Test(cpu_threads, one_thread_and_bad_values_run_unsplit)
{
	struct graid_backend *be;
	uint64_t rng = tu_seed() ^ 0x63763174;

	be = cv_open_threads("1", "1");
	cv_engine_case(be, &rng, 8, 2, 65536, 3, 0);
	graid_backend_close(be);
	/* Not numbers: logged, and the defaults taken. */
	be = cv_open_threads("lots", "-5");
	cv_engine_case(be, &rng, 8, 2, 65536, 3, 0);
	graid_backend_close(be);
}

/* The thread count of this process, from /proc; -1 where there is no /proc. */
static int cv_threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

Test(cpu_threads, engine_opens_and_closes_many_times_leaving_no_thread, .timeout = 300)
{
	uint64_t rng = tu_seed() ^ 0x6376636c;
	int before, after;

	/* One open first: whatever the library starts once per process is there before counting. */
	graid_backend_close(cv_open_threads("2", "1"));
	before = cv_threads_now();
	for (int i = 0; i < 200; i++) {
		struct graid_backend *be = cv_open_threads(i % 2 ? "4" : "2", "1");

		/* Some close idle, some right after a split call, some never called. */
		if (i % 3 == 0)
			cv_engine_case(be, &rng, 6, 2, 4096 + (size_t)i, 1 + (size_t)i % 5, 0);
		graid_backend_close(be);
	}
	if (before < 0)
		cr_skip_test("no /proc/self/status to count threads");
	/*
	 * Joined at close (ASan's leak check sees any pool memory left behind). The count is
	 * read again for up to a second: a thread of the test runner's own may come and go.
	 */
	after = cv_threads_now();
	for (int t = 0; t < 100 && after != before; t++) {
		usleep(10 * 1000);
		after = cv_threads_now();
	}
	cr_assert_eq(after, before, "%d threads before 200 engines, %d after", before, after);
}

/* The thread count once it is `want`, or what it still is after a second of waiting. */
static int cv_threads_settle(int want)
{
	int n = cv_threads_now();

	/* A thread of the test runner's own may come and go. */
	for (int t = 0; t < 100 && n != want; t++) {
		usleep(10 * 1000);
		n = cv_threads_now();
	}
	return n;
}

/*
 * Engines of one process share one set of workers: two engines of 3 threads add 2 workers,
 * not 4. One asking for another count gets its own; the shared set lives until the last
 * engine using it closes, and works for the one left after the other closes.
 */
Test(cpu_threads, engines_of_one_process_share_their_workers, .timeout = 300)
{
	uint64_t rng = tu_seed() ^ 0x63767368;
	struct graid_backend *a, *b, *c;
	int base;

	/* One open first: whatever the library starts once per process is there before counting. */
	graid_backend_close(cv_open_threads("2", "1"));
	base = cv_threads_now();
	if (base < 0)
		cr_skip_test("no /proc/self/status to count threads");
	a = cv_open_threads("3", "1");
	cr_assert_eq(cv_threads_settle(base + 2), base + 2);
	b = cv_open_threads("3", "1");
	cr_assert_eq(cv_threads_settle(base + 2), base + 2, "a second engine started workers of its own");
	c = cv_open_threads("2", "1");
	cr_assert_eq(cv_threads_settle(base + 3), base + 3, "another thread count gets its own worker");
	cv_engine_case(a, &rng, 8, 2, 65536 + 3, 3, 0);
	graid_backend_close(a);
	cr_assert_eq(cv_threads_settle(base + 3), base + 3, "the first close stopped workers still in use");
	cv_engine_case(b, &rng, 22, 2, 20000, 2, 1);
	cv_engine_case(c, &rng, 6, 2, 4096 + 17, 5, 2);
	graid_backend_close(c);
	graid_backend_close(b);
	cr_assert_eq(cv_threads_settle(base), base);
}

/* Many callers at once on one engine: each gets its own batch right. */
struct cv_caller {
	struct graid_backend *be;
	uint64_t seed;
};

static void *cv_caller_main(void *arg)
{
	struct cv_caller *c = arg;

	for (int r = 0; r < 15; r++)
		cv_engine_case(c->be, &c->seed, 3 + (unsigned)(c->seed % 20), 2,
			       1 + tu_rand(&c->seed) % 20000, 1 + tu_rand(&c->seed) % 7,
			       (int)(tu_rand(&c->seed) % 4));
	return NULL;
}

Test(cpu_threads, concurrent_callers_share_the_pool, .timeout = 600)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	struct cv_caller c[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		c[i].be = be;
		c[i].seed = tu_seed() ^ (0x6376636f + (uint64_t)i);
		cr_assert_eq(pthread_create(&t[i], NULL, cv_caller_main, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	graid_backend_close(be);
}

/* Keeps the pool busy while the test forks, so a fork lands in the middle of a call. */
static atomic_bool cv_stop;

static void *cv_busy_main(void *arg)
{
	struct cv_caller *c = arg;

	while (!atomic_load(&cv_stop))
		cv_engine_case(c->be, &c->seed, 8, 2, 32768, 4, 0);
	return NULL;
}

/*
 * Opens and closes engines while the test forks, so a fork lands while the shared pool's
 * lock is held. The environment is set before the thread starts: it only reads it.
 *
 * Not under AddressSanitizer: gcc 12's does not hold its allocator's locks across fork(),
 * so a child whose parent had another thread inside malloc can block in its own first
 * malloc of that size (its new workers did, in ASan's thread start), a hang of the
 * sanitizer's, not the library's. There the test forks as it did before: one thread keeps
 * the pool busy, and the child uses only the engine it inherited.
 */
#if defined(__SANITIZE_ADDRESS__)
#define CV_FORK_STRESS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CV_FORK_STRESS 0
#endif
#endif
#ifndef CV_FORK_STRESS
#define CV_FORK_STRESS 1
#endif

static void *cv_opener_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&cv_stop)) {
		struct graid_backend *be;

		if (graid_backend_open("isal", &be) == 0)
			graid_backend_close(be);
	}
	return NULL;
}

/*
 * gen, then recovery of two data blocks, against the reference, without asserting: for a
 * forked child, which must report through its exit status and not through Criterion.
 */
static bool cv_child_case(struct graid_backend *be, uint64_t *rng, unsigned ndata,
			  size_t len, size_t nstripes)
{
	const unsigned nblk = ndata + 2, lost[2] = { 0, ndata - 1 };
	struct tu_stripes s;
	uint8_t *expect, **eptr;
	bool ok;

	tu_stripes_alloc(&s, ndata, 2, len, nstripes, rng, 1);
	expect = tu_stripes_snapshot(&s);
	eptr = tu_snapshot_ptrs(&s, expect);
	for (size_t st = 0; st < nstripes; st++)
		graid_gf_ref_gen(ndata, 2, 0, len, eptr + st * nblk);
	ok = graid_parity_gen(be, ndata, 2, len, nstripes, s.ptr) == 0 &&
	     tu_stripes_diff(&s, expect) == -1;
	for (size_t st = 0; st < nstripes; st++) {
		memset(s.ptr[st * nblk + lost[0]], 0, len);
		memset(s.ptr[st * nblk + lost[1]], 0, len);
	}
	ok = ok && graid_parity_recover(be, ndata, 2, len, nstripes, s.ptr, 2, lost) == 0 &&
	     tu_stripes_diff(&s, expect) == -1;
	free(eptr);
	free(expect);
	tu_stripes_free(&s);
	return ok;
}

Test(cpu_threads, forked_child_uses_the_engine_without_deadlock, .timeout = 300)
{
	struct graid_backend *be = cv_open_threads("3", "1");
	struct cv_caller busy = { .be = be, .seed = tu_seed() ^ 0x6376666b };
	pthread_t t, opener;

	cr_assert_eq(pthread_create(&t, NULL, cv_busy_main, &busy), 0);
	if (CV_FORK_STRESS)
		cr_assert_eq(pthread_create(&opener, NULL, cv_opener_main, NULL), 0);
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();
		int status;

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			/* The child: the parent's workers are gone; the engine must still work. */
			uint64_t rng = tu_seed() ^ (uint64_t)i;
			struct graid_backend *mine = NULL;
			bool ok;

			/* A deadlock ends in SIGALRM, which the parent sees, not in a hung suite. */
			alarm(60);
			ok = cv_child_case(be, &rng, 22, 65536 + 5, 2) &&
			     cv_child_case(be, &rng, 6, 4096, 9);
			/*
			 * An engine opened in the child must not be handed the parent's shared
			 * pool (its workers stayed behind): it gets workers of its own.
			 */
			ok = ok && (!CV_FORK_STRESS ||
				    (graid_backend_open("isal", &mine) == 0 &&
				     (cv_threads_now() < 0 || cv_threads_now() == 3) &&
				     cv_child_case(mine, &rng, 8, 65536, 4)));
			graid_backend_close(mine);
			graid_backend_close(be);
			_exit(ok ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "forked child %d: status 0x%x (seed %llu)", i, status,
			  (unsigned long long)tu_seed());
	}
	atomic_store(&cv_stop, true);
	pthread_join(t, NULL);
	if (CV_FORK_STRESS)
		pthread_join(opener, NULL);
	graid_backend_close(be);
}

/* The CPUs a thread of this process may run on, from /proc; -1 where unreadable. */
static int cv_task_cpus(const char *tid)
{
	char path[300], line[256];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		cpu_set_t set;
		char *p = line + strlen("Cpus_allowed_list:"), *save = NULL;

		if (strncmp(line, "Cpus_allowed_list:", strlen("Cpus_allowed_list:")))
			continue;
		/* "0-3,6": count by expanding each range. */
		CPU_ZERO(&set);
		for (char *tok = strtok_r(p, ", \t\n", &save); tok;
		     tok = strtok_r(NULL, ", \t\n", &save)) {
			int a, b;

			if (sscanf(tok, "%d-%d", &a, &b) != 2)
				b = a = atoi(tok);
			for (int c = a; c <= b && c < CPU_SETSIZE; c++)
				CPU_SET(c, &set);
		}
		n = CPU_COUNT(&set);
		break;
	}
	fclose(f);
	return n;
}

static void *cv_pinned_open(void *arg)
{
	struct sched_param idle = { .sched_priority = 0 };
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	/* SCHED_IDLE needs no privilege, and differs from the main thread's policy. */
	cr_assert_eq(pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle), 0);
	cr_assert_eq(graid_backend_open("isal", (struct graid_backend **)arg), 0);
	return NULL;
}

/*
 * pthread_create copies the creating thread's CPUs and scheduling: an application that
 * pins the thread opening its arrays, or changes its policy, must not find every engine's
 * workers pinned or scheduled with it.
 */
Test(cpu_threads, workers_take_the_process_cpus_not_the_opener_s)
{
	struct graid_backend *be = NULL;
	cpu_set_t mine;
	pthread_t t;
	DIR *d;
	struct dirent *e;
	int workers = 0, all;

	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	all = CPU_COUNT(&mine);
	if (all < 2)
		cr_skip_test("this process may use one CPU only");
	setenv("GRAID_CPU_THREADS", "3", 1);
	setenv("GRAID_CPU_THREAD_MIN", "1", 1);
	cr_assert_eq(pthread_create(&t, NULL, cv_pinned_open, &be), 0);
	pthread_join(t, NULL);
	cr_assert_not_null(be);
	/* The engine's workers are the only other threads of this process now. */
	d = opendir("/proc/self/task");
	if (!d)
		cr_skip_test("no /proc/self/task");
	while ((e = readdir(d))) {
		int n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == (int)getpid())
			continue;
		n = cv_task_cpus(e->d_name);
		if (n < 0)
			continue;
		workers++;
		cr_assert_eq(n, all, "thread %s may run on %d CPUs, the process on %d", e->d_name,
			     n, all);
		cr_assert_eq(sched_getscheduler(atoi(e->d_name)), sched_getscheduler(0),
			     "thread %s runs under policy %d, the process under %d", e->d_name,
			     sched_getscheduler(atoi(e->d_name)), sched_getscheduler(0));
	}
	closedir(d);
	cr_assert_geq(workers, 2, "found %d worker threads", workers);
	graid_backend_close(be);
}
