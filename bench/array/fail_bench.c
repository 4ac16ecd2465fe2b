/* SPDX-License-Identifier: MIT */
/*
 * fail_bench: foreground write latency around the moment a member fails (the superblocks are
 * written then, under meta_lock, by the thread that reaped the failed I/O), beside steady state;
 * with --queue-depth, reads and writes through asynchronous queues, and what the reads that
 * share a queue with the failing write pay for that round.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define FB_MAX_MEMBERS 16
#define FB_MAX_THREADS 32
#define FB_BIN_NS 1000000ull /* throughput bins of 1 ms */

struct fb_op {
	uint64_t start, end; /* ns since the run began */
	bool read;
};

struct fb_thread {
	pthread_t tid;
	struct graid_array *a;
	const struct fb_opts *o;
	uint64_t size, seed;
	struct fb_op *ops;
	size_t nops, cap;
	int errors;
};

struct fb_opts {
	const char *dir;
	int level;
	unsigned members, threads, repeat, bs;
	unsigned queue_depth, read_pct; /* queue_depth 0: synchronous writes only */
	uint64_t member_mib, fail_after;
	double after_s;
};

static uint64_t t0;
static atomic_bool stop;
static _Atomic uint64_t t_fail_log, t_fail_event;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - t0;
}

/* The library logs "member N (...) failed" just before it writes the superblocks. */
static void fb_log(void *arg, int level, const char *msg)
{
	uint64_t zero = 0;

	(void)arg;
	(void)level;
	if (strstr(msg, ") failed: "))
		atomic_compare_exchange_strong(&t_fail_log, &zero, now_ns());
}

/* ... and sends the event once they are written. */
static void fb_event(void *arg, const struct graid_event *ev)
{
	uint64_t zero = 0;

	(void)arg;
	if (ev->type == GRAID_EVENT_MEMBER_FAILED)
		atomic_compare_exchange_strong(&t_fail_event, &zero, now_ns());
}

static uint64_t fb_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool fb_record(struct fb_thread *t, const struct fb_op *op)
{
	if (t->nops == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		struct fb_op *n = realloc(t->ops, cap * sizeof(*n));

		if (!n)
			return false;
		t->ops = n;
		t->cap = cap;
	}
	t->ops[t->nops++] = *op;
	return true;
}

static void *fb_writer(void *arg)
{
	struct fb_thread *t = arg;
	void *buf;

	if (posix_memalign(&buf, 4096, 4096))
		return NULL;
	memset(buf, (int)t->seed, 4096);
	while (!atomic_load(&stop)) {
		uint64_t off = (fb_rand(&t->seed) % (t->size / 4096)) * 4096;
		struct fb_op op;

		op.read = false;
		op.start = now_ns();
		if (graid_array_write(t->a, buf, 4096, off) != 4096)
			t->errors++;
		op.end = now_ns();
		if (!fb_record(t, &op))
			break;
	}
	free(buf);
	return NULL;
}

/* Refill @p q's free slots with 4 KiB reads and writes at random (read_pct percent reads). */
static int fb_queue_fill(struct fb_thread *t, struct graid_queue *q, struct fb_op *slot,
			 bool *busy, uint8_t *bufs, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++) {
		uint64_t off = (fb_rand(&t->seed) % (t->size / 4096)) * 4096;
		bool rd = fb_rand(&t->seed) % 100 < t->o->read_pct;
		void *b = bufs + (size_t)i * 4096;
		int rc;

		if (busy[i])
			continue;
		slot[i].read = rd;
		slot[i].start = now_ns();
		rc = rd ? graid_queue_read(q, b, 4096, off, i) : graid_queue_write(q, b, 4096, off, i);
		if (rc)
			return rc;
		busy[i] = true;
	}
	return graid_queue_submit(q) < 0 ? -EIO : 0;
}

/* One queue of queue_depth requests in flight, reaped by this thread alone. */
static void *fb_queue_worker(void *arg)
{
	struct fb_thread *t = arg;
	unsigned depth = t->o->queue_depth, inflight = 0;
	struct graid_completion c[64];
	struct fb_op *slot = calloc(depth, sizeof(*slot));
	bool *busy = calloc(depth, sizeof(*busy));
	uint8_t *bufs = NULL;
	struct graid_queue *q = NULL;

	if (!slot || !busy || posix_memalign((void **)&bufs, 4096, (size_t)depth * 4096) ||
	    graid_queue_create(t->a, depth, &q)) {
		t->errors++;
		goto out;
	}
	memset(bufs, (int)t->seed, (size_t)depth * 4096);
	for (;;) {
		int n;

		if (!atomic_load(&stop) && fb_queue_fill(t, q, slot, busy, bufs, depth)) {
			t->errors++;
			break;
		}
		inflight = 0;
		for (unsigned i = 0; i < depth; i++)
			inflight += busy[i];
		if (!inflight)
			break;
		n = graid_queue_reap(q, c, 64, 1);
		if (n < 0) {
			t->errors++;
			break;
		}
		for (int k = 0; k < n; k++) {
			unsigned i = (unsigned)c[k].user_data;

			if (c[k].result != 4096)
				t->errors++;
			slot[i].end = now_ns();
			busy[i] = false;
			if (!fb_record(t, &slot[i]))
				atomic_store(&stop, true);
		}
	}
out:
	if (q)
		graid_queue_destroy(q);
	free(bufs);
	free(busy);
	free(slot);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* p-th percentile (0..100) of @p v (sorted in place), in microseconds. */
static double pct_us(uint64_t *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

static int fb_make(const struct fb_opts *o, char paths[][512])
{
	for (unsigned i = 0; i < o->members; i++) {
		FILE *f;

		snprintf(paths[i], 512, "%s/fail_bench.%d.%u", o->dir, (int)getpid(), i);
		f = fopen(paths[i], "w");
		if (!f || ftruncate(fileno(f), (off_t)(o->member_mib << 20))) {
			perror(paths[i]);
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
	}
	return 0;
}

/*
 * One result row for the requests of one kind (@p read) of a run: steady state, those in
 * flight across the superblock round (from the failure's log line @p tl to its event @p te),
 * and the throughput dip.
 */
static int fb_report(const struct fb_opts *o, const struct fb_thread *th, unsigned run,
		     uint64_t tl, uint64_t te, uint64_t t_end, bool read, const char *kind)
{
	uint64_t *lat = NULL, steady_from, steady_to, nbins, *bins = NULL;
	size_t n_all = 0, n_steady = 0, n_fly = 0, n_early = 0;
	int rc = -1;

	/* Steady state: from 0.2 s in to 0.1 s before the failure. */
	steady_from = 200000000ull;
	steady_to = tl > 100000000ull ? tl - 100000000ull : 0;
	if (steady_to <= steady_from + 200000000ull)
		fprintf(stderr, "run %u: only %.2f s before the failure (raise --fail-after)\n",
			run, (double)tl / 1e9);
	for (unsigned i = 0; i < o->threads; i++)
		n_all += th[i].nops;
	lat = malloc((n_all + 1) * sizeof(*lat));
	nbins = t_end / FB_BIN_NS + 1;
	bins = calloc(nbins, sizeof(*bins));
	if (!lat || !bins)
		goto out;
	for (unsigned i = 0; i < o->threads; i++)
		for (size_t k = 0; k < th[i].nops; k++) {
			const struct fb_op *op = &th[i].ops[k];

			if (op->read != read)
				continue;
			bins[op->end / FB_BIN_NS]++;
			if (op->start >= steady_from && op->end <= steady_to)
				lat[n_steady++] = op->end - op->start;
		}
	{
		double s_iops = (double)n_steady / ((double)(steady_to - steady_from) / 1e9);
		double s50 = pct_us(lat, n_steady, 50), s99 = pct_us(lat, n_steady, 99);
		double smax = pct_us(lat, n_steady, 100);
		double f99, fmax, dip_min = 1e18, steady_bin = s_iops / 1000.0;
		uint64_t worst_bin_at = 0;
		unsigned long long low_bins = 0;

		/* In flight at the failure: begun before the superblock write ended, ended after it began. */
		for (unsigned i = 0; i < o->threads; i++)
			for (size_t k = 0; k < th[i].nops; k++) {
				const struct fb_op *op = &th[i].ops[k];

				if (op->read != read)
					continue;
				if (op->start <= te && op->end >= tl)
					lat[n_fly++] = op->end - op->start;
				/* Begun once the member was out, acknowledged before its record was. */
				n_early += op->start > tl && op->end < te;
			}
		f99 = pct_us(lat, n_fly, 99);
		fmax = pct_us(lat, n_fly, 100);
		/* Throughput dip: the 1 ms bins from 20 ms before the failure to 50 ms after. */
		for (uint64_t b = (tl - 20000000ull) / FB_BIN_NS;
		     b < nbins && b <= (te + 50000000ull) / FB_BIN_NS; b++) {
			if ((double)bins[b] < dip_min) {
				dip_min = (double)bins[b];
				worst_bin_at = b;
			}
			low_bins += (double)bins[b] < steady_bin / 2;
		}
		printf("%-3u%-2s %8.0f %8.1f %8.1f %9.1f | %8.1f %5zu %9.1f %9.1f %5zu | %6.0f%% %4llu %+7.1f\n",
		       run, kind, s_iops, s50, s99, smax, (double)(te - tl) / 1000.0, n_fly, f99, fmax,
		       n_early,
		       100.0 * dip_min / steady_bin, low_bins,
		       ((double)worst_bin_at * FB_BIN_NS - (double)tl) / 1e6);
	}
	rc = 0;
out:
	free(lat);
	free(bins);
	return rc;
}

/* One run: create, reopen with member 1 faulty, write until after_s past its failure. */
static int fb_run(const struct fb_opts *o, unsigned run)
{
	char paths[FB_MAX_MEMBERS][512], spec[600];
	const char *p[FB_MAX_MEMBERS];
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = o->level, .chunk_bytes = 65536,
		.backend = "isal",
	};
	struct fb_thread th[FB_MAX_THREADS];
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint64_t tl, te, t_end;
	int rc = -1;

	if (fb_make(o, paths))
		return -1;
	for (unsigned i = 0; i < o->members; i++)
		p[i] = paths[i];
	if (graid_array_create(p, o->members, &cfg, &a) || graid_array_close(a)) {
		fprintf(stderr, "create failed\n");
		goto out;
	}
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=%llu:%s",
		 (unsigned long long)o->fail_after, paths[1]);
	p[1] = spec;
	if (graid_array_open(p, o->members, NULL, &a)) {
		fprintf(stderr, "open failed\n");
		goto out;
	}
	graid_array_set_event_callback(a, fb_event, NULL);
	atomic_store(&t_fail_log, 0);
	atomic_store(&t_fail_event, 0);
	atomic_store(&stop, false);
	memset(th, 0, sizeof(th));
	if (graid_array_info(a, &info)) {
		graid_array_close(a);
		goto out;
	}
	for (unsigned i = 0; i < o->threads; i++) {
		th[i].a = a;
		th[i].o = o;
		th[i].size = info.size;
		th[i].seed = 0x9e3779b97f4a7c15ull * (i + 1 + run * 131);
		pthread_create(&th[i].tid, NULL, o->queue_depth ? fb_queue_worker : fb_writer, &th[i]);
	}
	while (!atomic_load(&t_fail_event) && now_ns() < 120000000000ull)
		usleep(1000);
	usleep((useconds_t)(o->after_s * 1e6));
	atomic_store(&stop, true);
	for (unsigned i = 0; i < o->threads; i++)
		pthread_join(th[i].tid, NULL);
	t_end = now_ns();
	graid_array_close(a);
	tl = atomic_load(&t_fail_log);
	te = atomic_load(&t_fail_event);
	if (!te || !tl) {
		fprintf(stderr, "run %u: the member did not fail (raise --fail-after?)\n", run);
		goto out;
	}
	if (o->queue_depth) {
		rc = fb_report(o, th, run, tl, te, t_end, false, "wr");
		if (rc == 0 && o->read_pct)
			rc = fb_report(o, th, run, tl, te, t_end, true, "rd");
	} else {
		rc = fb_report(o, th, run, tl, te, t_end, false, "");
	}
out:
	for (unsigned i = 0; i < o->threads; i++)
		free(th[i].ops);
	for (unsigned i = 0; i < o->members; i++)
		unlink(paths[i]);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fail_bench [--dir D] [--level 5|6] [--members N] [--member-mib M]\n"
		"                  [--threads T] [--fail-after W] [--after S] [--repeat R]\n"
		"                  [--queue-depth D [--read-pct P]]\n"
		"  Member 1 is faulty:write-eio-after=W; T threads write 4 KiB at random\n"
		"  (graid_array_write), or with --queue-depth each drives a queue of D requests,\n"
		"  P percent of them reads (default 50).\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", 1, 0, 'd' },	      { "level", 1, 0, 'l' },  { "members", 1, 0, 'n' },
		{ "member-mib", 1, 0, 'm' }, { "threads", 1, 0, 't' }, { "fail-after", 1, 0, 'f' },
		{ "after", 1, 0, 'a' },	      { "repeat", 1, 0, 'r' }, { "queue-depth", 1, 0, 'q' },
		{ "read-pct", 1, 0, 'p' },    { 0, 0, 0, 0 },
	};
	struct fb_opts o = { .dir = "/dev/shm", .level = 5, .members = 5, .threads = 4,
			     .repeat = 5, .bs = 4096, .member_mib = 64, .fail_after = 40000,
			     .after_s = 0.3, .read_pct = 50 };
	struct timespec ts;
	int c, fails = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'l': o.level = atoi(optarg); break;
		case 'n': o.members = (unsigned)atoi(optarg); break;
		case 'm': o.member_mib = strtoull(optarg, NULL, 0); break;
		case 't': o.threads = (unsigned)atoi(optarg); break;
		case 'f': o.fail_after = strtoull(optarg, NULL, 0); break;
		case 'a': o.after_s = atof(optarg); break;
		case 'r': o.repeat = (unsigned)atoi(optarg); break;
		case 'q': o.queue_depth = (unsigned)atoi(optarg); break;
		case 'p': o.read_pct = (unsigned)atoi(optarg); break;
		default: usage(); return 2;
		}
	}
	if (o.members < 3 || o.members > FB_MAX_MEMBERS || !o.threads ||
	    o.threads > FB_MAX_THREADS || (o.level != 5 && o.level != 6) ||
	    o.queue_depth > 4096 || o.read_pct > 100) {
		usage();
		return 2;
	}
	graid_log_set(fb_log, NULL, 7);
	if (o.queue_depth)
		printf("RAID-%d, %u members of %llu MiB in %s, %u threads each driving a queue of %u\n"
		       "4 KiB random requests, %u%% reads (rows rd) and the rest writes (rows wr);\n",
		       o.level, o.members, (unsigned long long)o.member_mib, o.dir, o.threads,
		       o.queue_depth, o.read_pct);
	else
		printf("RAID-%d, %u members of %llu MiB in %s, %u writer threads, 4 KiB random "
		       "writes;\n", o.level, o.members, (unsigned long long)o.member_mib, o.dir,
		       o.threads);
	printf("member 1 fails after %llu of its writes. Latencies in us. sb-round: from the\n"
	       "failure's log line to its event (the superblock round between); early: writes begun\n"
	       "after the log line and acknowledged before the event.\n",
	       (unsigned long long)o.fail_after);
	printf("      ---------- steady state ----------- | ------- requests in flight at the "
	       "failure ---------- | -- throughput dip (1 ms bins) --\n");
	printf("run       IOPS      p50      p99       max | sb-round     n       p99       max "
	       "early |  worst  <50%% at(ms)\n");
	for (unsigned r = 0; r < o.repeat; r++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		fails += fb_run(&o, r) != 0;
	}
	return fails ? 1 : 0;
}
