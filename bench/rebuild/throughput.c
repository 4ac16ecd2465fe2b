/* SPDX-License-Identifier: MIT */
/* Part 1: rebuild throughput against the raw sequential write speed of the replacement's file. */
#include <errno.h>
#include <stdlib.h>

#include "../bench_util.h"
#include "rb.h"

/* What one cycle measures, and the medians over cycles kept for the table. */
enum { TP_SECS, TP_MBPS, TP_PWRITE, TP_URING, TP_RBIO, TP_VS_RAW, TP_VS_RBIO, TP_CPU,
       TP_CPU_RAW, TP_CPU_RBIO, TP_NV };

struct tp_row {
	int level;
	unsigned n;
	double med[TP_NV];
	bool direct;
};

/* Raw writes just before and just after the rebuild, averaged: both sides see the same load. */
static int tp_raw(const struct rb_opts *o, struct rb_dir *d, uint64_t file,
		  struct rb_raw_write *sum)
{
	struct rb_raw_write r = { 0 };
	int rc;

	bench_watch("raw sequential write", (double)file / 1e8);
	rc = rb_raw_seqwrite(o, d, file, &r);
	sum->pwrite.mbps += r.pwrite.mbps / 2;
	sum->pwrite.cpu_per_gb += r.pwrite.cpu_per_gb / 2;
	sum->uring.mbps += r.uring.mbps / 2;
	sum->uring.cpu_per_gb += r.uring.cpu_per_gb / 2;
	sum->direct = r.direct;
	return rc;
}

/* One cycle: baselines around fail + replace + rebuild, then a check of the result. */
static int tp_cycle(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m,
		    struct graid_array *a, unsigned role, double *v, bool *direct)
{
	uint64_t file = RB_META_BYTES + o->data_bytes;
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rb_raw_write raw = { 0 };
	struct rb_rate rate, rbio;
	struct rb_clock clk;
	const char *src[GRAID_MAX_MEMBERS];
	unsigned nsrc = 0;
	int rc = tp_raw(o, d, file, &raw);

	rc = rc ? rc : rb_members_swap(m, d, a, role, file);
	if (rc)
		return rc;
	bench_watch("graid_array_rebuild", (double)o->data_bytes * m->n / 1e8);
	rb_clock_start(&clk);
	rc = graid_array_rebuild(a, NULL, NULL);
	v[TP_SECS] = rb_clock_rate(&clk, o->data_bytes, &rate);
	if (rc) {
		fprintf(stderr, "rebuild_bench: graid_array_rebuild: %s\n", graid_strerror(rc));
		return rc;
	}
	rc = tp_raw(o, d, file, &raw);
	if (rc)
		return rc;
	*direct = raw.direct;
	v[TP_MBPS] = rate.mbps;
	v[TP_CPU] = rate.cpu_per_gb;
	v[TP_PWRITE] = raw.pwrite.mbps;
	v[TP_URING] = raw.uring.mbps;
	v[TP_CPU_RAW] = raw.pwrite.mbps > raw.uring.mbps ? raw.pwrite.cpu_per_gb
							 : raw.uring.cpu_per_gb;
	for (unsigned i = 0; i < m->n; i++)
		if (i != role)
			src[nsrc++] = m->path[i];
	bench_watch("raw rebuild I/O", (double)o->data_bytes * m->n / 1e8);
	rc = rb_raw_rebuild_io(o, d, src, nsrc, o->data_bytes, &rbio);
	if (rc)
		return rc;
	v[TP_RBIO] = rbio.mbps;
	v[TP_CPU_RBIO] = rbio.cpu_per_gb;
	v[TP_VS_RAW] = v[TP_MBPS] / (v[TP_PWRITE] > v[TP_URING] ? v[TP_PWRITE] : v[TP_URING]);
	v[TP_VS_RBIO] = v[TP_MBPS] / v[TP_RBIO];
	printf("  member %u: rebuild %.3f s, %.0f MB/s, %.2f CPU s/GB; raw write %.0f MB/s (pwrite) "
	       "%.0f MB/s (io_uring qd 8), mean of before and after; raw rebuild I/O %.0f MB/s, "
	       "%.2f CPU s/GB\n",
	       role, v[TP_SECS], v[TP_MBPS], v[TP_CPU], v[TP_PWRITE], v[TP_URING], v[TP_RBIO],
	       v[TP_CPU_RBIO]);
	graid_array_info(a, &info);
	if (info.nfailed) {
		fprintf(stderr, "rebuild_bench: %u members still failed after the rebuild\n",
			info.nfailed);
		return -EIO;
	}
	bench_watch("verify", (double)info.size / 1e8);
	rc = rb_array_verify(a, 0, info.size, o->seed);
	return rc ? rc : rb_array_scrub_clean(a, "rebuild");
}

static int tp_level(const struct rb_opts *o, int level, struct tp_row *row)
{
	unsigned n = rb_level_members(o, level);
	struct rb_members *m = calloc(1, sizeof(*m));
	struct graid_array_info info;
	struct graid_array *a = NULL;
	struct rb_dir d;
	double *v = calloc((size_t)o->repeat * TP_NV, sizeof(*v)), col[100];
	int rc = m && v ? 0 : -ENOMEM;

	if (rc == 0 && rb_dir_create(&d, o->dir, (n + 3) * (RB_META_BYTES + o->data_bytes)))
		rc = -ENOSPC;
	if (rc) {
		free(m);
		free(v);
		return rc;
	}
	rc = rb_array_setup(o, &d, m, level, &a, &info);
	*row = (struct tp_row){ .level = level, .n = n };
	for (unsigned r = 0; rc == 0 && r < o->repeat; r++)
		rc = tp_cycle(o, &d, m, a, (1 + r) % n, &v[r * TP_NV], &row->direct);
	for (unsigned k = 0; rc == 0 && k < TP_NV; k++) {
		for (unsigned r = 0; r < o->repeat; r++)
			col[r] = v[r * TP_NV + k];
		row->med[k] = bench_median(col, o->repeat);
	}
	if (a && graid_array_close(a) && rc == 0)
		rc = -EIO;
	rb_members_drop_retired(m);
	rb_dir_remove(&d);
	free(m);
	free(v);
	return rc;
}

static void tp_table(const struct tp_row *rows, unsigned nrows, const struct rb_opts *o)
{
	printf("\nRebuild throughput, medians of %u, %llu MiB per member (MB = 10^6 bytes; CPU: "
	       "process CPU seconds per GB written to the new member):\n",
	       o->repeat, (unsigned long long)(o->data_bytes / RB_MIB));
	printf("%-7s %3s %8s %8s %8s %8s %6s %8s %6s %7s %7s %7s %7s\n", "level", "n", "rebuild",
	       "raw", "raw", "raw rb", "vs", "min/TB", "vs", "CPU", "CPU", "CPU", "rebuild");
	printf("%-7s %3s %8s %8s %8s %8s %6s %8s %6s %7s %7s %7s %7s\n", "", "", "MB/s", "pwrite",
	       "uring8", "I/O", "raw", "", "rb I/O", "rebuild", "raw", "rb I/O", "secs");
	for (unsigned i = 0; i < nrows; i++) {
		const double *v = rows[i].med;

		printf("RAID-%-2d %3u %8.0f %8.0f %8.0f %8.0f %5.0f%% %8.1f %5.0f%% %7.2f %7.2f %7.2f "
		       "%7.3f\n",
		       rows[i].level, rows[i].n, v[TP_MBPS], v[TP_PWRITE], v[TP_URING], v[TP_RBIO],
		       100 * v[TP_VS_RAW], 1e6 / v[TP_MBPS] / 60, 100 * v[TP_VS_RBIO], v[TP_CPU],
		       v[TP_CPU_RAW], v[TP_CPU_RBIO], v[TP_SECS]);
	}
	printf("vs raw: median over cycles of rebuild MB/s / the better raw sequential write of a "
	       "fresh file of the member's size in the same folder (1 MiB %s writes, mean of one "
	       "pass just before and one just after the rebuild); target >= 90%%.\n"
	       "raw rb I/O: the rebuild's reads (n-1 members) and write, 1 MiB io_uring requests, "
	       "8 MiB per member per round, no parity math; vs rb I/O likewise per cycle.\n",
	       nrows && rows[0].direct ? "O_DIRECT" : "buffered");
}

int rb_part_throughput(const struct rb_opts *o)
{
	struct tp_row rows[RB_MAX_LIST];
	int rc = 0;

	printf("\n#### Part 1: rebuild throughput vs the replacement's raw sequential write\n");
	for (unsigned i = 0; i < o->nlevels && rc == 0; i++)
		rc = tp_level(o, o->levels[i], &rows[i]);
	if (rc == 0)
		tp_table(rows, o->nlevels, o);
	return rc;
}
