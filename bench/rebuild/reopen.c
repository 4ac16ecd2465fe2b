/* SPDX-License-Identifier: MIT */
/* Part 3: open time after an unclean shutdown, against dirty regions and array size. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bench_util.h"
#include "rb.h"

#define REOPEN_LEVEL 6
#define REOPEN_SETTLE_MS 200   /* a killed process's io_uring may still land writes */

struct reopen_ctx {
	const struct rb_opts *o;
	struct rb_members *m;
	uint64_t size;           /* array bytes */
};

/* Array offset of dirty region j of k: spread evenly, 1 MiB aligned. */
static uint64_t reopen_off(const struct reopen_ctx *c, unsigned j, unsigned k)
{
	return (uint64_t)j * (c->size / k / RB_MIB) * RB_MIB;
}

/* The child: open, write each region once, die without closing. Never returns. */
static void reopen_child(const struct reopen_ctx *c, unsigned k, uint64_t seed)
{
	struct graid_array *a;
	uint8_t *buf;

	if (graid_array_open(c->m->paths, c->m->n, NULL, &a))
		_exit(3);
	if (posix_memalign((void **)&buf, 4096, RB_MIB))
		_exit(4);
	for (unsigned j = 0; j < k; j++) {
		uint64_t off = reopen_off(c, j, k);

		rb_pattern_fill(buf, RB_MIB, off, seed);
		if (graid_array_write(a, buf, RB_MIB, off) != (ssize_t)RB_MIB)
			_exit(5);
	}
	raise(SIGKILL);
	_exit(6);
}

/* Open, retrying while the dead child's member locks linger; *ms is the successful call. */
static int reopen_open(const struct reopen_ctx *c, struct graid_array **a, double *ms)
{
	int rc = -EBUSY;

	for (unsigned tries = 0; rc == -EBUSY && tries < 250; tries++) {
		uint64_t t0;

		if (tries)
			rb_sleep_ms(20);
		rb_log_reset();
		t0 = bench_now_ns();
		rc = graid_array_open(c->m->paths, c->m->n, NULL, a);
		*ms = (double)(bench_now_ns() - t0) / 1e6;
		if (rc == -EBUSY && tries == 0)
			printf("  (open: -EBUSY, the killed child's member locks linger; retrying)\n");
	}
	if (rc)
		fprintf(stderr, "rebuild_bench: graid_array_open: %s\n", graid_strerror(rc));
	return rc;
}

/* One unclean shutdown with @p k dirty regions, then the timed open and a check. */
static int reopen_trial(const struct reopen_ctx *c, unsigned k, uint64_t seed, double *ms,
			long *regions)
{
	struct graid_array *a;
	int status, rc;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		reopen_child(c, k, seed);
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != SIGKILL) {
		fprintf(stderr, "rebuild_bench: the writer child did not die by SIGKILL (status "
				"%#x; exit 3 open, 5 write failed)\n", status);
		return -EIO;
	}
	rb_sleep_ms(REOPEN_SETTLE_MS);
	rc = reopen_open(c, &a, ms);
	if (rc)
		return rc;
	*regions = rb_log_resync_regions();
	for (unsigned j = 0; rc == 0 && j < k; j++)
		rc = rb_array_verify(a, reopen_off(c, j, k), RB_MIB, seed);
	if (graid_array_close(a) && rc == 0)
		rc = -EIO;
	return rc;
}

static int reopen_clean(const struct reopen_ctx *c, double *ms)
{
	double *t = calloc(c->o->repeat, sizeof(*t));
	struct graid_array *a;
	int rc = t ? 0 : -ENOMEM;

	for (unsigned r = 0; rc == 0 && r < c->o->repeat; r++) {
		rc = reopen_open(c, &a, &t[r]);
		if (rc == 0 && graid_array_close(a))
			rc = -EIO;
	}
	*ms = rc ? 0 : bench_median(t, c->o->repeat);
	free(t);
	return rc;
}

/* One array size: clean opens, then each dirty count; a row of the table. */
static int reopen_size(const struct rb_opts *o, unsigned mib, double *row, long *regions)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = REOPEN_LEVEL,
					  .chunk_bytes = o->chunk, .backend = o->backend,
					  .flags = GRAID_CREATE_FORCE };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct reopen_ctx c = { .o = o, .m = calloc(1, sizeof(*c.m)) };
	uint64_t file = RB_META_BYTES + (uint64_t)mib * RB_MIB;
	double *t = calloc(o->repeat, sizeof(*t));
	struct graid_array *a;
	struct rb_dir d;
	int rc = c.m && t ? 0 : -ENOMEM;

	if (rc == 0 && rb_dir_create(&d, o->dir2, 2048 * RB_MIB))
		rc = -ENOSPC;
	if (rc) {
		free(c.m);
		free(t);
		return rc;
	}
	rc = rb_members_create(c.m, &d, o->members, file, NULL);
	bench_watch("graid_array_create", 30);
	rc = rc ? rc : graid_array_create(c.m->paths, o->members, &cfg, &a);
	if (rc == 0) {
		graid_array_info(a, &info);
		graid_array_member_info(a, 0, &mi);
		c.size = info.size;
		printf("RAID-%d, %u sparse members x %u MiB in %s (%s, %s): %llu MiB usable\n",
		       REOPEN_LEVEL, o->members, mib, d.path, d.ram ? "RAM" : "disk",
		       mi.direct_io ? "O_DIRECT" : "buffered", (unsigned long long)(c.size / RB_MIB));
		rc = graid_array_close(a);
	}
	bench_watch("clean open", 30);
	rc = rc ? rc : reopen_clean(&c, &row[0]);
	for (unsigned i = 0; rc == 0 && i < o->ndirty; i++) {
		for (unsigned r = 0; rc == 0 && r < o->repeat; r++) {
			bench_watch("unclean shutdown and open", 30 + o->dirty[i] * 0.5);
			rc = reopen_trial(&c, o->dirty[i], o->seed + 1000 * o->dirty[i] + r, &t[r],
					  &regions[i]);
		}
		row[1 + i] = rc ? 0 : bench_median(t, o->repeat);
	}
	/* The smallest array only: a whole scrub of the larger costs more than it tells. */
	if (rc == 0 && mib == o->reopen_mib[0] && graid_array_open(c.m->paths, c.m->n, NULL, &a) == 0) {
		bench_watch("scrub", (double)c.size / 5e7);
		rc = rb_array_scrub_clean(a, "the resyncs");
		if (graid_array_close(a) && rc == 0)
			rc = -EIO;
		if (rc == 0)
			printf("  scrub after the resyncs: every stripe consistent\n");
	}
	rb_dir_remove(&d);
	free(c.m);
	free(t);
	return rc;
}

static void reopen_table(const struct rb_opts *o, double (*rows)[RB_MAX_LIST + 1],
			 long (*regions)[RB_MAX_LIST])
{
	printf("\nOpen time in ms (medians of %u), RAID-%d, %u members; in brackets the dirty "
	       "regions the library resynchronised:\n", o->repeat, REOPEN_LEVEL, o->members);
	printf("%-14s %10s", "MiB per member", "clean");
	for (unsigned i = 0; i < o->ndirty; i++) {
		char h[24];

		snprintf(h, sizeof(h), "K=%u dirty", o->dirty[i]);
		printf(" %16s", h);
	}
	printf(" %14s\n", "ms per region");
	for (unsigned s = 0; s < o->nreopen; s++) {
		double *r = rows[s];
		unsigned last = o->ndirty - 1;

		printf("%-14u %10.1f", o->reopen_mib[s], r[0]);
		for (unsigned i = 0; i < o->ndirty; i++) {
			char cell[40];

			snprintf(cell, sizeof(cell), "%.1f [%ld]", r[1 + i], regions[s][i]);
			printf(" %16s", cell);
		}
		if (last > 0 && o->dirty[last] != o->dirty[0])
			printf(" %14.2f", (r[1 + last] - r[1]) / (o->dirty[last] - o->dirty[0]));
		printf("\n");
	}
}

int rb_part_reopen(const struct rb_opts *o)
{
	double rows[RB_MAX_LIST][RB_MAX_LIST + 1] = { { 0 } };
	long regions[RB_MAX_LIST][RB_MAX_LIST] = { { 0 } };
	int rc = 0;

	printf("\n#### Part 3: open after an unclean shutdown, by dirty regions and array size\n");
	printf("(a child opens the array, writes one 1 MiB request to each of K regions spread over "
	       "it, and dies by SIGKILL; the parent waits %d ms, then times graid_array_open, which "
	       "resyncs before returning)\n", REOPEN_SETTLE_MS);
	for (unsigned s = 0; s < o->nreopen && rc == 0; s++)
		rc = reopen_size(o, o->reopen_mib[s], rows[s], regions[s]);
	if (rc == 0)
		reopen_table(o, rows, regions);
	return rc;
}
