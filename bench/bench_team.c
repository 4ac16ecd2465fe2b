/* SPDX-License-Identifier: MIT */
/* Run one piece of work on N threads at once and time it from a common start to the last finish. */
#include <pthread.h>
#include <stdlib.h>

#include "bench_team.h"
#include "bench_util.h"

/* The starting line: threads check in, then all go together, or all go home. */
struct bench_team_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready;
	int state; /* 0 wait, 1 go, -1 abort */
};

struct bench_team_member {
	struct bench_team_gate *gate;
	bench_team_fn fn;
	void *arg;
	unsigned tid;
};

static void *bench_team_main(void *p)
{
	struct bench_team_member *m = p;
	struct bench_team_gate *g = m->gate;
	int state;

	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (g->state == 0)
		pthread_cond_wait(&g->cond, &g->lock);
	state = g->state;
	pthread_mutex_unlock(&g->lock);
	if (state > 0)
		m->fn(m->arg, m->tid);
	return NULL;
}

double bench_team_run(unsigned nthreads, bench_team_fn fn, void *arg)
{
	struct bench_team_gate gate = {
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0,
	};
	struct bench_team_member *m;
	pthread_t *th;
	unsigned started;
	double t0, t1;

	if (nthreads <= 1) {
		t0 = bench_now();
		fn(arg, 0);
		return bench_now() - t0;
	}
	m = calloc(nthreads, sizeof(*m));
	th = calloc(nthreads, sizeof(*th));
	if (!m || !th) {
		free(m);
		free(th);
		return -1;
	}
	for (started = 1; started < nthreads; started++) {
		m[started] = (struct bench_team_member){ &gate, fn, arg, started };
		if (pthread_create(&th[started], NULL, bench_team_main, &m[started]))
			break;
	}
	/* Thread start-up is not timed: the clock starts once every thread is waiting. */
	pthread_mutex_lock(&gate.lock);
	while (gate.ready < started - 1)
		pthread_cond_wait(&gate.cond, &gate.lock);
	gate.state = started == nthreads ? 1 : -1;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	t0 = bench_now();
	if (started == nthreads)
		fn(arg, 0);
	for (unsigned i = 1; i < started; i++)
		pthread_join(th[i], NULL);
	t1 = bench_now();
	free(m);
	free(th);
	return started == nthreads ? t1 - t0 : -1;
}
