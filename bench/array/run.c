/* SPDX-License-Identifier: MIT */
/* The load generator: T threads, each keeping its own queue of depth qd full for a fixed time. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_util.h"
#include "ab.h"

struct run_shared {
	const struct ab_target_ops *ops;
	void *target;
	const struct ab_run_cfg *cfg;
	pthread_barrier_t ready, go;
	uint64_t deadline_ns;      /* written by the main thread before `go` */
};

struct run_worker {
	pthread_t tid;
	struct run_shared *sh;
	unsigned idx;
	int err;
	uint64_t err_off;
	uint64_t ios, bytes;
	uint64_t all_ios;
	struct ab_hist hist;
};

struct run_slot {
	uint8_t *buf;
	uint64_t t_ns;             /* when the request was queued */
	uint64_t off;
};

static int run_issue(struct run_worker *w, void *q, struct ab_gen *g, struct run_slot *s,
		     unsigned i)
{
	bool write;
	uint64_t off = ab_gen_next(g, &write);

	s[i].off = off;
	s[i].t_ns = bench_now_ns();
	return w->sh->ops->prep(q, write, s[i].buf, g->bs, off, i);
}

static void run_loop(struct run_worker *w, void *q, struct run_slot *s,
		     struct ab_completion *c)
{
	const struct ab_run_cfg *cfg = w->sh->cfg;
	const struct ab_target_ops *ops = w->sh->ops;
	struct ab_gen g;
	unsigned inflight = 0;
	int rc = 0;

	ab_gen_init(&g, cfg->p, cfg->size, w->idx, cfg->threads, cfg->seed);
	while (inflight < cfg->qd && (rc = run_issue(w, q, &g, s, inflight)) == 0)
		inflight++;
	/* Whatever was prepared is sent, even after a failure, or its completion never comes. */
	if (inflight) {
		int src = ops->submit(q);

		if (src && !rc)
			rc = src;
	}
	while (inflight > 0) {
		int n = ops->reap(q, c, cfg->qd);
		uint64_t now = bench_now_ns();
		bool timed = now < w->sh->deadline_ns;
		bool more = rc == 0 && timed;
		unsigned issued = 0;

		if (n <= 0) {
			/* Requests in flight and none can be reaped: report it, do not spin. */
			rc = n < 0 ? n : -EIO;
			break;
		}
		for (int k = 0; k < n; k++) {
			unsigned i = (unsigned)c[k].user_data;

			inflight--;
			if (c[k].result != (int64_t)g.bs) {
				if (!w->err) {
					w->err = c[k].result < 0 ? (int)c[k].result : -EIO;
					w->err_off = s[i].off;
				}
				more = false;
				continue;
			}
			w->all_ios++;
			/* The drain after the deadline runs below depth: it is not measured. */
			if (timed) {
				ab_hist_add(&w->hist, now - s[i].t_ns);
				w->ios++;
				w->bytes += g.bs;
			}
			/* Refill the slot at once: the queue stays at depth until the deadline. */
			if (more && (rc = run_issue(w, q, &g, s, i)) == 0) {
				inflight++;
				issued++;
			}
			more = more && rc == 0;
		}
		if (issued) {
			int src = ops->submit(q);

			if (src && !rc)
				rc = src;
		}
	}
	if (rc && !w->err)
		w->err = rc;
}

/* Non-zero, distinct per 512 bytes, and cheap: buffers are rebuilt every round. */
static void run_fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	memset(p, 0x5a ^ (int)(seed & 0xff), len);
	for (uint32_t o = 0; o < len; o += 512) {
		uint64_t v = ab_rand(&seed);

		memcpy(p + o, &v, 8);
	}
}

static void *run_thread(void *arg)
{
	struct run_worker *w = arg;
	struct run_shared *sh = w->sh;
	const struct ab_run_cfg *cfg = sh->cfg;
	struct run_slot *s = calloc(cfg->qd, sizeof(*s));
	struct ab_completion *c = calloc(cfg->qd, sizeof(*c));
	void *q = NULL;
	int rc = (s && c) ? 0 : -ENOMEM;

	for (unsigned i = 0; i < cfg->qd && rc == 0; i++) {
		void *p;

		/* 4 KiB alignment keeps O_DIRECT legal for the JBOD baseline and the library. */
		if (posix_memalign(&p, 4096, cfg->p->bs)) {
			rc = -ENOMEM;
			break;
		}
		s[i].buf = p;
		run_fill(p, cfg->p->bs, cfg->seed + w->idx * 1000003ull + i);
	}
	if (rc == 0)
		rc = sh->ops->queue_open(sh->target, cfg->qd, &q);
	w->err = rc;
	/* Every thread reaches both barriers, even after a failure, so none can deadlock. */
	pthread_barrier_wait(&sh->ready);
	pthread_barrier_wait(&sh->go);
	if (rc == 0)
		run_loop(w, q, s, c);
	if (q)
		sh->ops->queue_close(q);
	for (unsigned i = 0; s && i < cfg->qd; i++)
		free(s[i].buf);
	free(s);
	free(c);
	return NULL;
}

int ab_run(const struct ab_target_ops *ops, void *target, const struct ab_run_cfg *cfg,
	   struct ab_result *acc, struct ab_hist *hist)
{
	struct run_shared sh = { .ops = ops, .target = target, .cfg = cfg };
	struct run_worker *w = calloc(cfg->threads, sizeof(*w));
	struct timespec until;
	double cpu0, cpu1;
	unsigned started = 0;
	int err = 0;

	if (!w)
		return -ENOMEM;
	pthread_barrier_init(&sh.ready, NULL, cfg->threads + 1);
	pthread_barrier_init(&sh.go, NULL, cfg->threads + 1);
	for (unsigned t = 0; t < cfg->threads; t++) {
		w[t].sh = &sh;
		w[t].idx = t;
		if (pthread_create(&w[t].tid, NULL, run_thread, &w[t]))
			break;
		started++;
	}
	if (started < cfg->threads) {
		/* The barriers count every thread; without them all, nobody may wait on them. */
		fprintf(stderr, "array_bench: could not start %u threads\n", cfg->threads);
		exit(1);
	}
	pthread_barrier_wait(&sh.ready);
	cpu0 = bench_cpu_now();
	sh.deadline_ns = bench_now_ns() + (uint64_t)(cfg->seconds * 1e9);
	pthread_barrier_wait(&sh.go);
	/* CPU time is read at the deadline, so it covers the same window as the counts. */
	until.tv_sec = (time_t)(sh.deadline_ns / 1000000000ull);
	until.tv_nsec = (long)(sh.deadline_ns % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
	cpu1 = bench_cpu_now();
	for (unsigned t = 0; t < cfg->threads; t++)
		pthread_join(w[t].tid, NULL);
	acc->secs += cfg->seconds;
	acc->cpu_secs += cpu1 - cpu0;
	for (unsigned t = 0; t < cfg->threads; t++) {
		if (w[t].err && !err) {
			err = w[t].err;
			fprintf(stderr, "array_bench: %s %s thread %u: %s (request at offset %llu)\n",
				ops->name, cfg->p->name, t, graid_strerror(err),
				(unsigned long long)w[t].err_off);
		}
		acc->ios += w[t].ios;
		acc->bytes += w[t].bytes;
		acc->all_ios += w[t].all_ios;
		ab_hist_merge(hist, &w[t].hist);
	}
	pthread_barrier_destroy(&sh.ready);
	pthread_barrier_destroy(&sh.go);
	free(w);
	return err;
}
