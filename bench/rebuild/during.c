/* SPDX-License-Identifier: MIT */
/* Part 2: 4k-randread IOPS while a rebuild runs against the healthy array, per yield. */
#include <errno.h>
#include <stdlib.h>

#include "../bench_util.h"
#include "rb.h"

#define DURING_WARM_MS 50
#define DURING_MAX_CYCLES 200

/* Where the load's completions are counted. */
enum { DURING_HEALTHY = 1, DURING_DEGRADED = 2, DURING_REBUILDING = 3 };

struct during_ctx {
	const struct rb_opts *o;
	struct rb_dir d;
	struct rb_members *m;
	struct graid_array *a;
	uint64_t size;
	unsigned cycle;          /* swaps so far: picks the next role */
	unsigned window_ms;      /* healthy and degraded windows */
};

/* What one row measured, summed over its cycles. */
struct during_tally {
	double secs[4];          /* per load bucket; [0]: rebuilds without the load */
	uint64_t reads[4];
	unsigned cycles;
};

static int during_start(struct during_ctx *c, struct rb_load **l)
{
	int rc = rb_load_start(l, c->a, c->o->threads, c->o->qd, c->size, c->o->seed);

	if (rc == 0)
		rb_sleep_ms(DURING_WARM_MS);
	return rc;
}

/* Count the load in @p bucket for one window. */
static void during_window(struct during_ctx *c, struct rb_load *l, unsigned bucket,
			  struct during_tally *t)
{
	uint64_t t0, n0 = rb_load_count(l, bucket);

	rb_load_gate(l, bucket);
	t0 = bench_now_ns();
	rb_sleep_ms(c->window_ms);
	rb_load_gate(l, 0);
	t->secs[bucket] += (double)(bench_now_ns() - t0) / 1e9;
	t->reads[bucket] += rb_load_count(l, bucket) - n0;
}

/* Put a fresh member in the next role (failing it if need be) and rebuild it. */
static int during_rebuild(struct during_ctx *c, struct rb_load *l, struct during_tally *t)
{
	unsigned role = (1 + c->cycle++) % c->m->n;
	uint64_t t0, n0 = l ? rb_load_count(l, DURING_REBUILDING) : 0;
	int rc = rb_members_swap(c->m, &c->d, c->a, role, RB_META_BYTES + c->o->data_bytes);

	if (rc)
		return rc;
	bench_watch("graid_array_rebuild", (double)c->o->data_bytes * c->m->n / 2e7);
	if (l)
		rb_load_gate(l, DURING_REBUILDING);
	t0 = bench_now_ns();
	rc = graid_array_rebuild(c->a, NULL, NULL);
	if (l)
		rb_load_gate(l, 0);
	t->secs[l ? DURING_REBUILDING : 0] += (double)(bench_now_ns() - t0) / 1e9;
	if (l)
		t->reads[DURING_REBUILDING] += rb_load_count(l, DURING_REBUILDING) - n0;
	if (rc)
		fprintf(stderr, "rebuild_bench: graid_array_rebuild%s: %s\n", l ? " under load" : "",
			graid_strerror(rc));
	return rc;
}

/*
 * One cycle: healthy window, fail a member, degraded window, replace it and rebuild under the
 * load; then the load stops and the same rebuild runs alone. Pairing them so closely puts
 * every figure of a row under the same background load of a shared machine.
 */
static int during_cycle(struct during_ctx *c, struct during_tally *t)
{
	struct rb_load *l;
	int rc = during_start(c, &l);

	if (rc)
		return rc;
	bench_watch("4k-randread windows", 10);
	during_window(c, l, DURING_HEALTHY, t);
	rc = graid_array_fail_member(c->a, (1 + c->cycle) % c->m->n);
	if (rc == 0)
		during_window(c, l, DURING_DEGRADED, t);
	rc = rc ? rc : during_rebuild(c, l, t);
	if (rb_load_stop(l) && rc == 0)
		rc = -EIO;
	rc = rc ? rc : during_rebuild(c, NULL, t);
	t->cycles++;
	return rc;
}

static double during_rate(const struct during_tally *t, unsigned b)
{
	return t->secs[b] > 0 ? (double)t->reads[b] / t->secs[b] : 0;
}

static void during_print(unsigned yield, const struct during_tally *t, double member_mb)
{
	double h = during_rate(t, DURING_HEALTHY), d = during_rate(t, DURING_DEGRADED);
	double r = during_rate(t, DURING_REBUILDING);
	double under = member_mb * t->cycles / t->secs[DURING_REBUILDING];
	double alone = member_mb * t->cycles / t->secs[0];

	printf("%9u %10.0f %10.0f %5.0f%% %11.0f %5.0f%% %9.0f %9.0f %5.0f%% %7u\n", yield, h, d,
	       100 * d / h, r, 100 * r / h, alone, under, 100 * under / alone, t->cycles);
}

static int during_rows(struct during_ctx *c, int level)
{
	const struct rb_opts *o = c->o;
	int rc = 0;

	printf("\nRAID-%d, 4k-randread %u threads x qd %u; per row >= %.1f s of rebuilding under "
	       "the load, %u ms healthy and degraded windows per cycle:\n",
	       level, o->threads, o->qd, o->seconds, c->window_ms);
	if (o->rate_mbps)
		printf("rebuilds capped at %llu MB/s (max_bytes_per_sec)\n",
		       (unsigned long long)o->rate_mbps);
	if (o->busy_mbps)
		printf("rebuilds capped at %llu MB/s while the reads run (busy_bytes_per_sec)\n",
		       (unsigned long long)o->busy_mbps);
	printf("%9s %10s %10s %6s %11s %6s %9s %9s %6s %7s\n", "yield us", "healthy", "degraded",
	       "", "rebuilding", "", "rb alone", "rb loaded", "", "cycles");
	printf("%9s %10s %10s %6s %11s %6s %9s %9s %6s %7s\n", "", "IOPS", "IOPS", "ratio", "IOPS",
	       "ratio", "MB/s", "MB/s", "ratio", "");
	for (unsigned i = 0; rc == 0 && i < o->nyields; i++) {
		struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
						    .foreground_yield_us = o->yields[i],
						    .max_bytes_per_sec = o->rate_mbps * 1000000,
						    .busy_bytes_per_sec = o->busy_mbps * 1000000 };
		struct during_tally t = { 0 };

		rc = graid_array_set_rebuild_options(c->a, &ro);
		while (rc == 0 && t.secs[DURING_REBUILDING] < o->seconds &&
		       t.cycles < DURING_MAX_CYCLES)
			rc = during_cycle(c, &t);
		if (rc == 0)
			during_print(o->yields[i], &t, (double)o->data_bytes / 1e6);
	}
	return rc;
}

static int during_level(const struct rb_opts *o, int level)
{
	struct during_ctx c = { .o = o, .m = calloc(1, sizeof(*c.m)) };
	unsigned n = rb_level_members(o, level);
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	struct graid_array_info info;
	int rc = c.m ? 0 : -ENOMEM;

	c.window_ms = o->seconds >= 2 ? 500 : (unsigned)(o->seconds * 250);
	if (rc == 0 && rb_dir_create(&c.d, o->dir, (n + 2) * (RB_META_BYTES + o->data_bytes)))
		rc = -ENOSPC;
	if (rc) {
		free(c.m);
		return rc;
	}
	rc = rb_array_setup(o, &c.d, c.m, level, &c.a, &info);
	c.size = info.size;
	if (rc == 0)
		rc = during_rows(&c, level);
	if (c.a)
		graid_array_set_rebuild_options(c.a, &ro);
	if (rc == 0) {
		bench_watch("verify", (double)c.size / 1e8);
		rc = rb_array_verify(c.a, 0, c.size, o->seed);
		rc = rc ? rc : rb_array_scrub_clean(c.a, "rebuilds under load");
	}
	if (c.a && graid_array_close(c.a) && rc == 0)
		rc = -EIO;
	rb_members_drop_retired(c.m);
	rb_dir_remove(&c.d);
	free(c.m);
	return rc;
}

int rb_part_during(const struct rb_opts *o)
{
	int rc = 0;

	printf("\n#### Part 2: 4k-randread during a rebuild vs healthy (target >= 70%%)\n");
	printf("(each cycle: healthy window, member failed, degraded window, replaced and rebuilt "
	       "under the load, then rebuilt again with no load; IOPS count only reads completed "
	       "inside their window, the rebuilding one being the graid_array_rebuild call)\n");
	for (unsigned i = 0; i < o->nlevels && rc == 0; i++)
		rc = during_level(o, o->levels[i]);
	return rc;
}
