/* SPDX-License-Identifier: MIT */
/* array_bench's shared types and the entry points of its modules (one concern per .c file). */
#ifndef GRAID_BENCH_ARRAY_AB_H
#define GRAID_BENCH_ARRAY_AB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libgraid/graid.h>

/* ---- profiles.c: the fio profiles of BENCHMARKS.md and the offsets each one issues ---- */

struct ab_profile {
	const char *name;    /* BENCHMARKS.md's name, used verbatim in every output */
	uint32_t bs;         /* bytes per request */
	unsigned read_pct;   /* 100 all reads, 0 all writes, 70 the OLTP mix */
	bool seq;            /* sequential per thread, else uniformly random */
};

extern const struct ab_profile ab_profiles[];
extern const unsigned ab_nprofiles;

/* One thread's stream of requests over [0, size). */
struct ab_gen {
	uint64_t rng;
	uint64_t nblocks;    /* bs-sized blocks in the whole target */
	uint64_t lo, hi;     /* sequential: this thread's slice, [lo, hi) in bytes */
	uint64_t next;       /* sequential: the next offset */
	uint32_t bs;
	unsigned read_pct;
	bool seq;
};

void ab_gen_init(struct ab_gen *g, const struct ab_profile *p, uint64_t size, unsigned thread,
		 unsigned nthreads, uint64_t seed);
/* The next request's offset; *write says whether it is a write. */
uint64_t ab_gen_next(struct ab_gen *g, bool *write);
uint64_t ab_rand(uint64_t *state);
const struct ab_profile *ab_profile_find(const char *name);

/* ---- stats.c: latency histogram, derived figures (clocks: ../bench_util.h) ---- */

/* Log-linear buckets: exact below 64 ns, then 32 per power of two (about 3% wide). */
#define AB_HIST_BUCKETS 2048

struct ab_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t b[AB_HIST_BUCKETS];
};

void ab_hist_add(struct ab_hist *h, uint64_t ns);
void ab_hist_merge(struct ab_hist *dst, const struct ab_hist *src);
/* The @p pct percentile in microseconds (bucket midpoint). */
double ab_hist_pct_us(const struct ab_hist *h, double pct);

/* What one profile measured on one target, summed over its rounds. */
struct ab_result {
	uint64_t ios, bytes;  /* requests completed inside the timed windows */
	uint64_t all_ios;     /* requests completed, the drain after the window included */
	uint64_t member_ios;  /* array only: member reads + writes for all_ios requests */
	double secs;          /* length of the timed windows */
	double cpu_secs;      /* process CPU time inside them */
	double iops, gbps, avg_us, p99_us, cpu_s_per_gb;  /* from ab_result_finish() */
};

void ab_result_finish(struct ab_result *r, const struct ab_hist *h);

/* ---- run.c: T threads, each keeping one queue of depth qd full for a fixed time ---- */

struct ab_completion {
	uint64_t user_data;
	int64_t result;       /* bytes, or a negative errno */
};

/* Something a thread can keep requests in flight on: the array, or the JBOD baseline. */
struct ab_target_ops {
	const char *name;
	int (*queue_open)(void *target, unsigned depth, void **q);
	int (*prep)(void *q, bool write, void *buf, uint32_t len, uint64_t off, uint64_t ud);
	int (*submit)(void *q);
	/* Wait for at least one completion; returns how many were stored, or -errno. */
	int (*reap)(void *q, struct ab_completion *c, unsigned max);
	void (*queue_close)(void *q);
};

struct ab_run_cfg {
	const struct ab_profile *p;
	unsigned threads;
	unsigned qd;
	double seconds;
	uint64_t size;        /* bytes addressable on the target */
	uint64_t seed;
};

/*
 * One timed window of cfg->seconds: adds its counts to @p acc and its latencies to @p hist.
 * @return 0, or -errno of the first failed request (printed).
 */
int ab_run(const struct ab_target_ops *ops, void *target, const struct ab_run_cfg *cfg,
	   struct ab_result *acc, struct ab_hist *hist);

/* ---- array_io.c: the array as a target, and a simple queue for prefill and verify ---- */

extern const struct ab_target_ops ab_array_ops;   /* target: struct graid_array * */
/* GRAID_QUEUE_F_* for the queues ab_array_ops makes (each in the thread that uses it). */
extern uint32_t ab_array_queue_flags;

/* A queue that reaps when full and latches the first failed request. */
struct ab_aq {
	struct graid_queue *q;
	unsigned depth;
	int err;
	uint64_t err_off;
};

int ab_aq_open(struct ab_aq *aq, struct graid_array *a, unsigned depth);
int ab_aq_add(struct ab_aq *aq, bool write, void *buf, uint32_t len, uint64_t off);
/* Wait for everything queued; returns the latched error, 0 if none. */
int ab_aq_drain(struct ab_aq *aq);
void ab_aq_close(struct ab_aq *aq);
/* Move [off, off + len) in @p req-byte requests from/to @p buf; with @p repeat, buf holds
 * one request's worth, reused for every request (prefill). */
int ab_array_stream(struct graid_array *a, bool write, uint8_t *buf, uint64_t off, uint64_t len,
		    uint32_t req, bool repeat);

/* ---- jbod.c: the same member files without RAID, through liburing directly ---- */

struct ab_jbod {
	int fd[GRAID_MAX_MEMBERS];
	unsigned n;
	uint64_t data_off;     /* first byte of the data area (past the metadata) */
	uint64_t data_bytes;   /* per member */
	bool direct;           /* every member opened with O_DIRECT */
};

extern const struct ab_target_ops ab_jbod_ops;    /* target: struct ab_jbod * */

int ab_jbod_open(struct ab_jbod *j, const char *const *paths, unsigned n, uint64_t data_off,
		 uint64_t data_bytes);
void ab_jbod_close(struct ab_jbod *j);
/* Bytes addressable: every member's data area, laid side by side. */
uint64_t ab_jbod_size(const struct ab_jbod *j);

/* ---- members.c: member files in a private folder ---- */

struct ab_members {
	char dir[4096];      /* the private folder; "" for --devices */
	unsigned n;
	uint64_t file_bytes;
	bool given;          /* --devices: used as they are, never removed */
	char (*path)[4200];
	const char **paths;
};

/* @return 0, or -1 with the reason printed. */
int ab_members_create(struct ab_members *m, const char *parent, unsigned n, uint64_t file_bytes);
/* The members given (--devices), each at least @p need bytes; 0, or -1 with the reason printed. */
int ab_members_use(struct ab_members *m, const char *const *paths, unsigned n, uint64_t need);
void ab_members_remove(struct ab_members *m);
/* Whether @p path accepts O_DIRECT (tmpfs does not). */
bool ab_path_direct(const char *path);

/* ---- bestcase.c: what a level can at best deliver from the JBOD figure ---- */

struct ab_geom {
	int level;
	unsigned n;
	uint32_t chunk;
	bool journal;         /* created with GRAID_CREATE_JOURNAL */
};

/* Best-case array IOPS for profile @p p, from the JBOD IOPS of the same profile. */
double ab_best_iops(const struct ab_geom *g, const struct ab_profile *p, double jbod_iops);
/* The rule behind ab_best_iops(), in words, into @p buf. */
void ab_best_rule(const struct ab_geom *g, const struct ab_profile *p, char *buf, size_t len);

/* ---- verify.c: known data through healthy, then degraded, paths ---- */

/* @return 0 when every read matched ("verify ok" printed), -1 otherwise (details printed). */
int ab_verify(struct graid_array *a, const struct ab_geom *g, uint64_t max_bytes, uint64_t seed);

/* ---- report.c: tables, CSV and the targets ---- */

struct ab_row {
	struct ab_geom g;
	unsigned qd;
	const struct ab_profile *p;
	struct ab_result arr, jbod;
	double best_iops;
};

void ab_report_table(FILE *out, const struct ab_row *rows, unsigned nrows);
void ab_report_csv_header(FILE *csv);
void ab_report_csv_row(FILE *csv, const struct ab_row *r, unsigned threads, double seconds,
		       const char *dir, bool direct);
void ab_report_targets(FILE *out, const struct ab_row *rows, unsigned nrows, bool ram_backed);
/* With --journal both: each journal row beside the plain row of the same level and profile. */
void ab_report_journal(FILE *out, const struct ab_row *rows, unsigned nrows);

/* ---- options.c ---- */

#define AB_MAX_REPEAT 1000

struct ab_opts {
	const char *dir;
	int levels[8];
	unsigned nlevels;
	unsigned members;
	uint64_t data_bytes;  /* per member, past the 1 MiB of metadata */
	uint32_t chunk;
	const char *backend;
	double seconds;
	unsigned repeat;      /* rounds per profile, array and JBOD alternating; totals shown */
	unsigned threads;
	unsigned qds[8];
	unsigned nqds;
	const struct ab_profile *profiles[16];
	unsigned nprofiles;
	const char *csv;
	bool quick;
	uint64_t seed;
	enum { AB_JOURNAL_OFF, AB_JOURNAL_ON, AB_JOURNAL_BOTH } journal;
	enum { AB_SIDE_BOTH, AB_SIDE_ARRAY, AB_SIDE_JBOD } only; /* --only: to profile one side */
	unsigned degraded;    /* --degraded: members failed before the profiles run (0..2) */
	unsigned io_timeout_ms; /* --io-timeout: graid_array_set_io_timeout() (0: off) */
	const char *devices[GRAID_MAX_MEMBERS]; /* --devices: members given, not made */
	unsigned ndevices;
	bool force;           /* --force: --devices may carry a libgraid array (overwritten) */
	uint32_t queue_flags; /* --one-thread: the load threads' graid_queue_create_flags() */
	bool hist_ab;         /* --histograms-ab: histograms off against on (hist_ab.c) */
	bool csum_ab;         /* --checksums-ab: checksums off against on (csum_ab.c) */
};

/* Member bytes the write-hole journal takes before the data (the library's default size). */
static inline uint64_t ab_journal_bytes(uint32_t chunk)
{
	uint64_t b = 64ull * chunk;

	return b < (32u << 20) ? (32u << 20) : b;
}

/* @return 0, 1 after --help, -1 on a bad option (printed). */
int ab_opts_parse(struct ab_opts *o, int argc, char **argv);

/* ---- hist_ab.c: what the array's latency histograms cost, in one run ---- */

/* 4k-randread, histograms off and on in alternating rounds; 0 or -errno (printed). */
int ab_hist_ab(struct graid_array *a, const struct ab_opts *o, uint64_t size);

/* ---- csum_ab.c: what per-block checksums cost, in one run ---- */

/*
 * For each level of --levels: an array without and one with GRAID_CREATE_CHECKSUMS, on @p m
 * and on a second set of files like them; 4k-randread, 128 KiB sequential writes and (RAID-5/6)
 * full-stripe writes, off and on in alternating rounds. 0 or -errno (printed).
 */
int ab_csum_ab(const struct ab_opts *o, const struct ab_members *m);

#endif /* GRAID_BENCH_ARRAY_AB_H */
