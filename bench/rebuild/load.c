/* SPDX-License-Identifier: MIT */
/* The foreground load: T threads keep qd random 4 KiB reads in flight, each checked as it lands. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rb.h"

#define LOAD_BS 4096u

struct load_worker {
	pthread_t tid;
	struct rb_load *l;
	unsigned idx;
	atomic_uint_fast64_t counted[RB_LOAD_BUCKETS];
	int err;
	uint64_t err_off;
};

struct rb_load {
	struct graid_array *a;
	unsigned threads, qd;
	uint64_t blocks;          /* 4 KiB blocks in the array */
	uint64_t seed;
	atomic_bool stop;
	atomic_uint gate;         /* the bucket completions count in; 0: none */
	struct load_worker *w;
};

static uint64_t load_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int load_issue(struct load_worker *w, struct graid_queue *q, uint8_t *buf, uint64_t *off,
		      unsigned i, uint64_t *rng)
{
	off[i] = load_rand(rng) % w->l->blocks * LOAD_BS;
	return graid_queue_read(q, buf + (size_t)i * LOAD_BS, LOAD_BS, off[i], i);
}

/* One completion: count it if gated, latch the first failure or wrong block. */
static bool load_check(struct load_worker *w, const struct graid_completion *c,
		       const uint8_t *buf, const uint64_t *off)
{
	unsigned i = (unsigned)c->user_data;

	if (c->result != LOAD_BS || !rb_pattern_quick(buf + (size_t)i * LOAD_BS, off[i],
						       w->l->seed)) {
		if (!w->err) {
			w->err = c->result < 0 ? (int)c->result : -EIO;
			w->err_off = off[i];
		}
		return false;
	}
	unsigned b = atomic_load_explicit(&w->l->gate, memory_order_relaxed);

	if (b)
		atomic_fetch_add_explicit(&w->counted[b], 1, memory_order_relaxed);
	return true;
}

static void load_loop(struct load_worker *w, struct graid_queue *q, uint8_t *buf, uint64_t *off)
{
	struct rb_load *l = w->l;
	struct graid_completion *c = calloc(l->qd, sizeof(*c));
	uint64_t rng = l->seed * 7919 + w->idx + 1;
	unsigned inflight = 0;
	int rc = c ? 0 : -ENOMEM;

	while (rc == 0 && inflight < l->qd && (rc = load_issue(w, q, buf, off, inflight, &rng)) == 0)
		inflight++;
	if (inflight && graid_queue_submit(q) < 0 && rc == 0)
		rc = -EIO;
	while (inflight) {
		bool more = rc == 0 && !w->err && !atomic_load(&l->stop);
		int n = graid_queue_reap(q, c, l->qd, 1);

		if (n <= 0) {
			rc = n < 0 ? n : -EIO; /* requests in flight and none completes */
			break;
		}
		for (int k = 0; k < n; k++) {
			inflight--;
			if (load_check(w, &c[k], buf, off) && more &&
			    (rc = load_issue(w, q, buf, off, (unsigned)c[k].user_data, &rng)) == 0)
				inflight++;
		}
		if (more && graid_queue_submit(q) < 0 && rc == 0)
			rc = -EIO;
	}
	if (rc && !w->err)
		w->err = rc;
	free(c);
}

static void *load_thread(void *arg)
{
	struct load_worker *w = arg;
	struct graid_queue *q = NULL;
	uint8_t *buf = NULL;
	uint64_t *off = calloc(w->l->qd, sizeof(*off));
	int rc = posix_memalign((void **)&buf, 4096, (size_t)w->l->qd * LOAD_BS) ? -ENOMEM : 0;

	if (rc == 0 && off)
		rc = graid_queue_create(w->l->a, w->l->qd, &q);
	if (rc == 0 && off)
		load_loop(w, q, buf, off);
	else
		w->err = rc ? rc : -ENOMEM;
	graid_queue_destroy(q);
	free(buf);
	free(off);
	return NULL;
}

int rb_load_start(struct rb_load **out, struct graid_array *a, unsigned threads, unsigned qd,
		  uint64_t size, uint64_t seed)
{
	struct rb_load *l = calloc(1, sizeof(*l));

	if (!l || !(l->w = calloc(threads, sizeof(*l->w)))) {
		free(l);
		return -ENOMEM;
	}
	*l = (struct rb_load){ .a = a, .threads = threads, .qd = qd, .blocks = size / LOAD_BS,
			       .seed = seed, .w = l->w };
	for (unsigned t = 0; t < threads; t++) {
		l->w[t].l = l;
		l->w[t].idx = t;
		if (pthread_create(&l->w[t].tid, NULL, load_thread, &l->w[t])) {
			atomic_store(&l->stop, true);
			l->threads = t;
			rb_load_stop(l);
			return -EAGAIN;
		}
	}
	*out = l;
	return 0;
}

void rb_load_gate(struct rb_load *l, unsigned bucket)
{
	atomic_store(&l->gate, bucket < RB_LOAD_BUCKETS ? bucket : 0);
}

uint64_t rb_load_count(struct rb_load *l, unsigned bucket)
{
	uint64_t n = 0;

	for (unsigned t = 0; t < l->threads && bucket < RB_LOAD_BUCKETS; t++)
		n += atomic_load_explicit(&l->w[t].counted[bucket], memory_order_relaxed);
	return n;
}

int rb_load_stop(struct rb_load *l)
{
	int err = 0;

	atomic_store(&l->stop, true);
	for (unsigned t = 0; t < l->threads; t++) {
		pthread_join(l->w[t].tid, NULL);
		if (l->w[t].err && !err) {
			err = l->w[t].err;
			fprintf(stderr, "rebuild_bench: 4k-randread thread %u: %s (read at array "
					"offset %llu%s)\n",
				t, graid_strerror(err), (unsigned long long)l->w[t].err_off,
				err == -EIO ? "; wrong data or short read" : "");
		}
	}
	free(l->w);
	free(l);
	return err;
}
