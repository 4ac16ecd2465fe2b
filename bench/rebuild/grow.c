/* SPDX-License-Identifier: MIT */
/*
 * Part 4: growing an array by members (graid_array_grow, docs/RESHAPE.md). The move's time
 * beside the same member I/O without the RAID (every old member reads its data once and
 * writes its share of the new rows from one emulated drive where --drive-mbps is set, each
 * added member writes its share: the least a restripe must move, rb_raw_grow_io); then
 * 4k-randread IOPS while a second
 * grow runs, beside the same array healthy just before it. With --used-pct, an idle grow of
 * a fresh array that only part of is written (the live-data map lets the move zero the rest
 * instead of copying it), its time beside the full one's.
 */
#include <errno.h>
#include <stdlib.h>

#include "../bench_util.h"
#include "rb.h"

enum { GROW_HEALTHY = 1, GROW_MOVING = 2 };

struct grow_row {
	int level;
	unsigned n, add;
	double grow_s, raw_s;          /* idle grow; the same member I/O without the RAID */
	double healthy_iops, during_iops, loaded_s; /* the second grow, under the load */
	bool refused;                  /* this build does not grow the level */
	double used_s;                 /* --used-pct: the idle grow of the partly written array */
};

static unsigned grow_parity(int level)
{
	return level == 6 ? 2 : level == 5 ? 1 : 0;
}

/*
 * The array bytes of @p n members of @p level: RAID-10 (near-2) half the members' chunks,
 * odd counts too; the others every data member's.
 */
static uint64_t grow_array_bytes(const struct rb_opts *o, int level, unsigned n)
{
	if (level == 10)
		return o->data_bytes / o->chunk * n / 2 * o->chunk;
	return (uint64_t)(n - grow_parity(level)) * o->data_bytes;
}

/* One grow of @p m's last @p add files into @p a, waited for; -EOPNOTSUPP is not printed. */
static int grow_run(struct graid_array *a, struct rb_members *m, unsigned add, double *secs)
{
	uint64_t t0 = bench_now_ns();
	int rc = graid_array_grow(a, m->paths + m->n - add, add, GRAID_GROW_WAIT);

	*secs = (double)(bench_now_ns() - t0) / 1e9;
	if (rc && rc != -EOPNOTSUPP)
		fprintf(stderr, "rebuild_bench: graid_array_grow: %s\n", graid_strerror(rc));
	return rc;
}

/* The array has its new size, the data written reads back, and (with parity) scrubs clean. */
static int grow_check(struct graid_array *a, uint64_t old_size, uint64_t want_size,
		      const struct rb_opts *o, const char *what, int level)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	int rc;

	graid_array_info(a, &info);
	if (info.size != want_size || info.reshaping) {
		fprintf(stderr, "rebuild_bench: after the %s the array has %llu bytes%s, not %llu\n",
			what, (unsigned long long)info.size, info.reshaping ? " (still reshaping)" : "",
			(unsigned long long)want_size);
		return -EIO;
	}
	bench_watch("verify", (double)old_size / 1e8);
	rc = rb_array_verify(a, 0, old_size, o->seed);
	return rc || level == 0 ? rc : rb_array_scrub_clean(a, what);
}

/* The idle grow and its raw baseline (the raw pass first: the members are then untouched). */
static int grow_idle(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m,
		     struct graid_array *a, struct grow_row *row, uint64_t *size)
{
	unsigned n = row->n, n2 = n + row->add;
	uint64_t array = grow_array_bytes(o, row->level, n), new_size;
	/* What each new member writes: RAID-10 both copies of every chunk. */
	uint64_t wr = row->level == 10 ? 2 * array / n2 : array / (n2 - grow_parity(row->level));
	const char *src[GRAID_MAX_MEMBERS];
	int rc;

	for (unsigned i = 0; i < n; i++)
		src[i] = m->path[i];
	bench_watch("raw grow I/O", (double)o->data_bytes * n / 1e8);
	rc = rb_raw_grow_io(o, d, src, n, n2, array / n, wr, &row->raw_s);
	rc = rc ? rc : rb_members_add(m, d, row->add, RB_META_BYTES + o->data_bytes);
	if (rc)
		return rc;
	bench_watch("graid_array_grow", (double)o->data_bytes * n / 1e7);
	rc = grow_run(a, m, row->add, &row->grow_s);
	if (rc == -EOPNOTSUPP) {
		row->refused = true;
		return 0;
	}
	new_size = grow_array_bytes(o, row->level, n2);
	/* Only the first *size bytes hold the pattern: the added space reads as zeroes. */
	rc = rc ? rc : grow_check(a, *size, new_size, o, "idle grow", row->level);
	*size = new_size;
	return rc;
}

/* The second grow under 4k random reads over the @p data bytes written, after a healthy
 * window. */
static int grow_loaded(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m,
		       struct graid_array *a, struct grow_row *row, uint64_t data)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = o->rate_mbps * 1000000,
					    .busy_bytes_per_sec = o->busy_mbps * 1000000 };
	uint64_t t0, size;
	struct rb_load *l;
	int rc = rb_members_add(m, d, row->add, RB_META_BYTES + o->data_bytes);

	rc = rc ? rc : graid_array_set_rebuild_options(a, &ro);
	rc = rc ? rc : rb_load_start(&l, a, o->threads, o->qd, data, o->seed);
	if (rc)
		return rc;
	rb_sleep_ms(50);
	rb_load_gate(l, GROW_HEALTHY);
	t0 = bench_now_ns();
	rb_sleep_ms((unsigned)(o->seconds * 1000));
	rb_load_gate(l, 0);
	row->healthy_iops = (double)rb_load_count(l, GROW_HEALTHY) * 1e9 /
			    (double)(bench_now_ns() - t0);
	rb_load_gate(l, GROW_MOVING);
	rc = grow_run(a, m, row->add, &row->loaded_s);
	rb_load_gate(l, 0);
	row->during_iops = (double)rb_load_count(l, GROW_MOVING) / row->loaded_s;
	if (rb_load_stop(l) && rc == 0)
		rc = -EIO;
	ro = (struct graid_rebuild_options){ .struct_size = sizeof(ro) };
	graid_array_set_rebuild_options(a, &ro);
	size = grow_array_bytes(o, row->level, m->n);
	return rc ? rc : grow_check(a, data, size, o, "grow under load", row->level);
}

/* The check of a partly written array: each run reads back, and a scrub finds it clean. */
static int grow_check_used(struct graid_array *a, uint64_t old_size, const struct rb_opts *o,
			   int level)
{
	uint64_t off = 0, len;
	int rc = 0;

	bench_watch("verify", (double)old_size * o->used_pct / 1e10);
	for (; rc == 0 && !rb_used_next(old_size, o->used_pct, &off, &len); off += len)
		rc = rb_array_verify(a, off, len, o->seed);
	return rc || level == 0 ? rc : rb_array_scrub_clean(a, "partly written grow");
}

/* --used-pct: an idle grow of a fresh array only o->used_pct % written. */
static int grow_used(const struct rb_opts *o, int level, struct grow_row *row)
{
	unsigned n = o->members, add = o->grow_add;
	struct rb_members *m = calloc(1, sizeof(*m));
	struct graid_array_info info;
	struct graid_array *a = NULL;
	struct rb_dir d;
	int rc = m ? 0 : -ENOMEM;

	if (rc == 0 && rb_dir_create(&d, o->dir, (n + add) * (RB_META_BYTES + o->data_bytes)))
		rc = -ENOSPC;
	if (rc) {
		free(m);
		return rc;
	}
	rc = rb_array_setup_used(o, &d, m, level, o->used_pct, &a, &info);
	rc = rc ? rc : rb_members_add(m, &d, add, RB_META_BYTES + o->data_bytes);
	if (rc == 0)
		graid_array_info(a, &info); /* the used bytes after the fill */
	if (rc == 0)
		printf("live-data map: %llu of %llu MiB used before the grow\n",
		       (unsigned long long)(info.used_bytes / RB_MIB),
		       (unsigned long long)(info.size / RB_MIB));
	bench_watch("graid_array_grow", (double)o->data_bytes * n / 1e7);
	rc = rc ? rc : grow_run(a, m, add, &row->used_s);
	rc = rc ? rc : grow_check_used(a, info.size, o, level);
	if (rc == 0) {
		/* The regions the grow zeroed whole are recorded unused at a flush. */
		rc = graid_array_flush(a);
		graid_array_info(a, &info);
		printf("RAID-%d %u -> %u, %u%% written: idle grow %.2f s (%.0f%% of the full "
		       "array's %.2f s); %llu of %llu MiB used after it and a flush\n", level, n, n + add,
		       o->used_pct, row->used_s, 100 * row->used_s / row->grow_s, row->grow_s,
		       (unsigned long long)(info.used_bytes / RB_MIB),
		       (unsigned long long)(info.size / RB_MIB));
	}
	if (a && graid_array_close(a) && rc == 0)
		rc = -EIO;
	rb_dir_remove(&d);
	free(m);
	return rc;
}

static int grow_level(const struct rb_opts *o, int level, struct grow_row *row)
{
	unsigned n = o->members, add = o->grow_add;
	struct rb_members *m = calloc(1, sizeof(*m));
	struct graid_array_info info;
	struct graid_array *a = NULL;
	struct rb_dir d;
	uint64_t size = 0, filled;
	int rc = m ? 0 : -ENOMEM;

	*row = (struct grow_row){ .level = level, .n = n, .add = add };
	if (n + 2 * add > GRAID_MAX_MEMBERS)
		rc = -E2BIG;
	/* The array's files, the added ones, and the raw baseline's fresh ones. */
	if (rc == 0 && rb_dir_create(&d, o->dir, (2 * n + 4 * add) * (RB_META_BYTES +
								   o->data_bytes)))
		rc = -ENOSPC;
	if (rc) {
		free(m);
		return rc;
	}
	rc = rb_array_setup(o, &d, m, level, &a, &info);
	size = filled = info.size;
	rc = rc ? rc : grow_idle(o, &d, m, a, row, &size);
	if (rc == 0 && !row->refused)
		rc = grow_loaded(o, &d, m, a, row, filled);
	if (rc == 0 && !row->refused)
		printf("RAID-%d %u -> %u: idle grow %.2f s, raw member I/O %.2f s (%.0f%%); "
		       "under load %.2f s, 4k-randread %.0f IOPS vs %.0f healthy\n",
		       level, n, n + add, row->grow_s, row->raw_s, 100 * row->raw_s / row->grow_s,
		       row->loaded_s, row->during_iops, row->healthy_iops);
	if (a && graid_array_close(a) && rc == 0)
		rc = -EIO;
	rb_dir_remove(&d);
	free(m);
	/* After the full array's files are gone: the folder holds one array at a time. */
	if (rc == 0 && !row->refused && o->used_pct && level)
		rc = grow_used(o, level, row);
	return rc;
}

static void grow_table(const struct grow_row *rows, unsigned nrows, const struct rb_opts *o)
{
	printf("\nGrowing by %u member(s), %llu MiB of data per member, arrays full:\n",
	       o->grow_add, (unsigned long long)(o->data_bytes / RB_MIB));
	printf("%-7s %7s %9s %9s %7s %10s %10s %7s %9s\n", "level", "members", "grow s", "raw s",
	       "vs raw", "healthy", "growing", "ratio", "loaded s");
	for (unsigned i = 0; i < nrows; i++) {
		const struct grow_row *r = &rows[i];

		if (r->refused) {
			printf("RAID-%-2d %3u->%-3u refused by this build (-EOPNOTSUPP)\n", r->level,
			       r->n, r->n + r->add);
			continue;
		}
		printf("RAID-%-2d %3u->%-3u %9.2f %9.2f %6.0f%% %10.0f %10.0f %6.0f%% %9.2f\n",
		       r->level, r->n, r->n + r->add, r->grow_s, r->raw_s, 100 * r->raw_s / r->grow_s,
		       r->healthy_iops, r->during_iops, 100 * r->during_iops / r->healthy_iops,
		       r->loaded_s);
		if (r->used_s > 0)
			printf("        %u%% written: idle grow %.2f s, %.0f%% of the full array's "
			       "(target <= 15%%)\n", o->used_pct, r->used_s,
			       100 * r->used_s / r->grow_s);
	}
	printf("vs raw: the raw pass's seconds / the grow's (target >= 80%%): every old member "
	       "reads its data once and writes its share of the new rows, from one emulated drive, "
	       "and each added member writes its share: requests of a chunk, a thread per drive, no "
	       "parity math (the members' own bandwidth limit, measured).\n"
	       "healthy / growing: 4k-randread, %u threads x qd %u, over the data written, in %.1f s "
	       "just before a second grow and during it (target >= 70%%)%s.\n",
	       o->threads, o->qd, o->seconds, o->busy_mbps ? ", the move capped while the reads "
	       "run (busy_bytes_per_sec)" : "");
}

int rb_part_grow(const struct rb_opts *o)
{
	struct grow_row rows[RB_MAX_LIST];
	unsigned nrows = 0;
	int rc = 0;

	printf("\n#### Part 4: growing by members vs the same member I/O without the RAID\n");
	for (unsigned i = 0; i < o->nlevels && rc == 0; i++) {
		if (o->levels[i] != 0 && o->levels[i] != 5 && o->levels[i] != 6 &&
		    o->levels[i] != 10)
			continue; /* RAID-1 does not grow by members in this version */
		rc = grow_level(o, o->levels[i], &rows[nrows++]);
	}
	if (rc == 0)
		grow_table(rows, nrows, o);
	return rc;
}
