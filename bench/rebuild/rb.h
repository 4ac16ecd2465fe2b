/* SPDX-License-Identifier: MIT */
/* rebuild_bench's shared types and the entry points of its modules (one concern per .c file). */
#ifndef GRAID_BENCH_REBUILD_RB_H
#define GRAID_BENCH_REBUILD_RB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libgraid/graid.h>

#define RB_MIB (1ull << 20)
#define RB_META_BYTES RB_MIB /* the library's default data offset */
#define RB_MAX_LIST 8

/* ---- options.c ---- */

struct rb_opts {
	const char *dir;        /* parts 1 and 2: member files (default /dev/shm) */
	const char *dir2;       /* part 3: sparse member files on disk (default /var/tmp) */
	int levels[RB_MAX_LIST];
	unsigned nlevels;
	unsigned members;       /* RAID-5/6; RAID-1 always uses 2 */
	uint64_t data_bytes;    /* per member, past the 1 MiB of metadata */
	uint32_t chunk;
	const char *backend;
	unsigned repeat;        /* part 1 rebuild cycles, part 3 trials: medians shown */
	double seconds;         /* part 2: measured window per row */
	unsigned threads, qd;   /* part 2: the 4k-randread load */
	unsigned yields[RB_MAX_LIST];
	unsigned nyields;
	uint64_t rate_mbps;     /* part 2: rebuild rate limit, MB/s; 0 none */
	uint64_t busy_mbps;     /* part 2: the same while the reads run (busy_bytes_per_sec) */
	unsigned reopen_mib[RB_MAX_LIST]; /* part 3: data MiB per member */
	unsigned nreopen;
	unsigned dirty[RB_MAX_LIST];      /* part 3: dirty 1 MiB regions per trial */
	unsigned ndirty;
	bool part[5];           /* part[1..4] selected */
	unsigned grow_add;      /* part 4: members added by each grow */
	unsigned used_pct;      /* part 4: also grow an array this % written (0: only full) */
	bool quick;
	uint64_t seed;
	uint64_t drive_mbps;    /* parts 1 and 2: members emulate drives of this speed; 0 off */
	uint64_t drive_iops;    /* ... and at most this many I/Os per second; 0 unlimited */
};

/* @return 0, 1 after --help, -1 on a bad option (printed). */
int rb_opts_parse(struct rb_opts *o, int argc, char **argv);

/* ---- util.c: rates, the library's log, the emulated drive; clocks in ../bench_util.h ---- */

void rb_sleep_ms(unsigned ms);

/* A transfer's speed, and the CPU it took (robust where wall time is not, on a busy host). */
struct rb_rate {
	double mbps;            /* 10^6 bytes per second of wall time */
	double cpu_per_gb;      /* process CPU seconds per 10^9 bytes */
};

struct rb_clock {
	uint64_t t0;
	double cpu0;
};

void rb_clock_start(struct rb_clock *c);
/* The rate of @p bytes moved since rb_clock_start(); returns the wall seconds. */
double rb_clock_rate(const struct rb_clock *c, uint64_t bytes, struct rb_rate *out);
/* Library log: warnings and errors to stderr; the resync notice counted. */
void rb_log_install(void);
/* Dirty regions the library last reported resynchronising ("resync: N dirty regions"). */
long rb_log_resync_regions(void);
void rb_log_reset(void);

/*
 * The emulated drive of --drive-mbps/--drive-iops, for the baselines: the library's
 * "faulty:mbps=N,iops=N:" model (lib/core/member/fault.c), here for one single-threaded user.
 */
struct rb_drive {
	uint64_t mbps, iops;    /* 0: unlimited */
	uint64_t busy_until;    /* bench_now_ns() when the drive is next idle */
};

/* Nanoseconds the drive takes for an I/O of @p bytes. */
uint64_t rb_drive_cost(const struct rb_drive *d, uint64_t bytes);
/* Reserve the drive for an I/O of @p bytes; nanoseconds the I/O must wait before it runs. */
uint64_t rb_drive_wait(struct rb_drive *d, uint64_t bytes);
/* The member name prefix that gives the library the same drive ("" when off). */
void rb_drive_prefix(const struct rb_opts *o, char *out, size_t len);
/* How many members a level gets here. */
unsigned rb_level_members(const struct rb_opts *o, int level);

/* ---- files.c: member and scratch files in a private folder ---- */

struct rb_dir {
	char path[4096];
	unsigned seq;           /* names fresh files */
	bool ram;               /* tmpfs */
	bool direct;            /* files there take O_DIRECT */
};

/* @return 0, or -1 with the reason printed (no room, no permission). */
int rb_dir_create(struct rb_dir *d, const char *parent, uint64_t need_bytes);
/* Every file in the folder, then the folder. */
void rb_dir_remove(struct rb_dir *d);
/* A new sparse file of @p bytes named "<stem>N.img"; its path into @p out. */
int rb_file_create(struct rb_dir *d, const char *stem, uint64_t bytes, char *out, size_t len);
/* Give a file's space back now (truncate) and unlink it. */
void rb_file_drop(const char *path);

/* Paths of an array's members, updated as members are replaced. */
struct rb_members {
	unsigned n;
	char path[GRAID_MAX_MEMBERS][4200];       /* the files */
	char spec[GRAID_MAX_MEMBERS][4300];       /* what the library is given: prefix + file */
	const char *paths[GRAID_MAX_MEMBERS];     /* -> spec */
	char prefix[96];                          /* emulated drive ("faulty:mbps=...:"), or "" */
	char retired[4200];     /* the last swapped-out file, dropped at the next swap */
};

int rb_members_create(struct rb_members *m, struct rb_dir *d, unsigned n, uint64_t bytes,
		      const struct rb_opts *o);
/* Append @p k fresh files (roles n .. n + k - 1), as graid_array_grow() takes them. */
int rb_members_add(struct rb_members *m, struct rb_dir *d, unsigned k, uint64_t bytes);
/* Fail role @p idx and put a fresh file in it (REBUILDING); the old file is kept until the
 * next swap or rb_members_drop_retired(), since an I/O in flight may still reach it. */
int rb_members_swap(struct rb_members *m, struct rb_dir *d, struct graid_array *a, unsigned idx,
		    uint64_t bytes);
void rb_members_drop_retired(struct rb_members *m);

/* ---- pattern.c: data that names its own offset, written and checked through the array ---- */

/* Fill @p len bytes (a multiple of 4 KiB) for array offset @p off. */
void rb_pattern_fill(uint8_t *buf, size_t len, uint64_t off, uint64_t seed);
/* Whether the 4 KiB block at @p buf holds offset @p off's first and last words. */
bool rb_pattern_quick(const uint8_t *buf, uint64_t off, uint64_t seed);
/* Write or read-and-compare [off, off + len) in 1 MiB requests, 8 in flight; -EIO on a
 * mismatch (printed with its offset). */
int rb_array_fill(struct graid_array *a, uint64_t off, uint64_t len, uint64_t seed);
int rb_array_verify(struct graid_array *a, uint64_t off, uint64_t len, uint64_t seed);
/* A scrub without repair that must find nothing; -EIO otherwise (printed). */
int rb_array_scrub_clean(struct graid_array *a, const char *what);

/* ---- rawio.c: the same work without RAID, through plain syscalls and liburing ---- */

struct rb_raw_write {
	struct rb_rate pwrite;  /* 1 MiB pwrite(), one at a time, then fdatasync */
	struct rb_rate uring;   /* 1 MiB writes through io_uring, 8 in flight, then fdatasync */
	bool direct;            /* O_DIRECT taken (else buffered) */
};

/* Sequential writes over a fresh file of @p bytes in @p d (created and dropped here), each
 * file behaving as the emulated drive of @p o when one is set. */
int rb_raw_seqwrite(const struct rb_opts *o, struct rb_dir *d, uint64_t bytes,
		    struct rb_raw_write *out);
/* What a rebuild moves, without the RAID: read the data areas of @p nsrc files and write one
 * fresh file's, in rounds of 8 MiB per file; MB/s of the written file. */
int rb_raw_rebuild_io(const struct rb_opts *o, struct rb_dir *d, const char *const *src,
		      unsigned nsrc, uint64_t bytes, struct rb_rate *out);

/*
 * What a grow moves, without the RAID, at the members' own bandwidth limit: @p ndst drives
 * at once, a thread each (@p nsrc <= @p ndst). Drive i < @p nsrc reads @p rd bytes of source
 * file i's data area and writes @p wr bytes, requests of a chunk in turn, from one emulated
 * drive (--drive-mbps/--drive-iops), as an old member serves a grow's reads and writes; the
 * others only write @p wr. Buffered on tmpfs, else O_DIRECT where taken; the writes go to
 * files of their own (created and written once before the clock, as a member's places exist
 * before a grow overwrites them, and dropped here). Wall seconds into @p secs.
 */
int rb_raw_grow_io(const struct rb_opts *o, struct rb_dir *d, const char *const *src,
		   unsigned nsrc, unsigned ndst, uint64_t rd, uint64_t wr, double *secs);

/* ---- load.c: 4k random reads through graid_queue_*, counted in the bucket gated on ---- */

struct rb_load;

#define RB_LOAD_BUCKETS 4 /* bucket 0 counts nothing */

int rb_load_start(struct rb_load **out, struct graid_array *a, unsigned threads, unsigned qd,
		  uint64_t size, uint64_t seed);
/* Count completions from now on in @p bucket (0: nowhere). */
void rb_load_gate(struct rb_load *l, unsigned bucket);
/* Reads completed while @p bucket was gated on. */
uint64_t rb_load_count(struct rb_load *l, unsigned bucket);
/* Stop and free; the first failed or wrong read as -errno (printed), else 0. */
int rb_load_stop(struct rb_load *l);

/* ---- the three parts ---- */

int rb_part_throughput(const struct rb_opts *o);  /* throughput.c */
int rb_part_during(const struct rb_opts *o);      /* during.c */
int rb_part_reopen(const struct rb_opts *o);      /* reopen.c */
int rb_part_grow(const struct rb_opts *o);        /* grow.c: part 4 */

/* array.c: create an array of @p level on fresh member files, filled with the pattern. */
int rb_array_setup(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m, int level,
		   struct graid_array **out, struct graid_array_info *info);
/*
 * The same, filled only in runs of RB_USED_RUN bytes spread evenly, @p pct % of the array
 * (100: whole); rb_used_next() walks the runs.
 */
#define RB_USED_RUN (4ull << 20)
int rb_array_setup_used(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m,
			int level, unsigned pct, struct graid_array **out,
			struct graid_array_info *info);
/* The run at or after @p *off of an array of @p size filled @p pct %: 0 and [*off, +*len); 1 none. */
int rb_used_next(uint64_t size, unsigned pct, uint64_t *off, uint64_t *len);

#endif /* GRAID_BENCH_REBUILD_RB_H */
