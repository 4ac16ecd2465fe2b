/* SPDX-License-Identifier: MIT */
/*
 * live_bench: what the live-data map saves a rebuild. On emulated drives (the library's
 * "faulty:mbps=N:" members, each its own bandwidth), one member of a RAID-6 is replaced and
 * rebuilt four ways: the array 10% written (the map lets the rebuild skip the rest), 100%
 * written, and both again on an array made without a map (GRAID_LIVE_MAP=0: the full
 * rebuild every array got before). Time and bytes written to the new member, side by side.
 * Never fails on time: exit 1 only on an error or wrong data (every case reads back).
 *
 * usage: live_bench [--dir /dev/shm] [--members 6] [--member-mib 128] [--mbps 400]
 *                   [--chunk-kib 64] [--used 10] [--repeat 2]
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define LB_MAX 16

struct lb_opts {
	const char *dir;
	unsigned members, member_mib, mbps, chunk_kib, used_pct, repeat;
};

struct lb_result {
	double seconds;
	uint64_t written;      /* bytes written to the new member */
	uint64_t used_bytes;   /* the map's count before the failure */
};

static double lb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int lb_file(const char *path, uint64_t bytes)
{
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	int rc = fd < 0 || ftruncate(fd, (off_t)bytes) ? -1 : 0;

	if (fd >= 0)
		close(fd);
	return rc;
}

/* Byte i of the pattern the array holds where it was written. */
static uint8_t lb_byte(uint64_t i)
{
	return (uint8_t)((i * 0x9E3779B1u) >> 24);
}

/* Write (or check) the used part: `pct` percent as 4 MiB runs spread evenly over the array. */
static int lb_pattern(struct graid_array *a, uint64_t size, unsigned pct, bool check)
{
	const uint64_t run = 4u << 20, step = run * 100 / pct;
	uint8_t *buf = NULL;
	int rc = 0;

	if (posix_memalign((void **)&buf, 4096, run))
		return -1;
	for (uint64_t off = 0; rc == 0 && off + run <= size; off += step) {
		if (!check)
			for (uint64_t i = 0; i < run; i++)
				buf[i] = lb_byte(off + i);
		if (check ? graid_array_read(a, buf, run, off) != (ssize_t)run
			  : graid_array_write(a, buf, run, off) != (ssize_t)run)
			rc = -1;
		for (uint64_t i = 0; check && rc == 0 && i < run; i++)
			if (buf[i] != lb_byte(off + i)) {
				fprintf(stderr, "live_bench: byte %llu is wrong after the rebuild\n",
					(unsigned long long)(off + i));
				rc = -1;
			}
	}
	free(buf);
	return rc;
}

static int lb_case(const struct lb_opts *o, unsigned pct, bool map, struct lb_result *r)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = o->chunk_kib * 1024, .backend = "isal" };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	char file[LB_MAX + 1][256], spec[LB_MAX + 1][320];
	const char *paths[LB_MAX];
	uint64_t bytes = ((uint64_t)o->member_mib + 1) << 20;
	struct graid_array *a;
	double t0;
	int rc;

	for (unsigned i = 0; i <= o->members; i++) {
		snprintf(file[i], sizeof(file[i]), "%s/live-bench-%d-%u", o->dir, (int)getpid(), i);
		snprintf(spec[i], sizeof(spec[i]), "faulty:mbps=%u:%s", o->mbps, file[i]);
		if (lb_file(file[i], bytes))
			return -1;
		if (i < o->members)
			paths[i] = file[i];
	}
	/* Made and filled at RAM speed; the drives are emulated for the rebuild only. */
	if (!map)
		setenv("GRAID_LIVE_MAP", "0", 1);
	rc = graid_array_create(paths, o->members, &cfg, &a);
	unsetenv("GRAID_LIVE_MAP");
	if (rc == 0)
		rc = graid_array_info(a, &info);
	if (rc == 0)
		rc = lb_pattern(a, info.size, pct, false);
	if (rc == 0)
		rc = graid_array_close(a);
	for (unsigned i = 0; i < o->members; i++)
		paths[i] = spec[i];
	if (rc == 0)
		rc = graid_array_open(paths, o->members, NULL, &a);
	if (rc)
		goto out;
	rc = graid_array_info(a, &info);
	r->used_bytes = info.used_bytes;
	if (rc == 0)
		rc = graid_array_fail_member(a, 1);
	if (rc == 0)
		rc = graid_array_replace_member(a, 1, spec[o->members]);
	t0 = lb_now();
	if (rc == 0)
		rc = graid_array_rebuild(a, NULL, NULL);
	r->seconds = lb_now() - t0;
	if (rc == 0)
		rc = graid_array_member_info(a, 1, &mi);
	r->written = mi.write_bytes;
	/* The rebuilt member must stand in: lose two others, read everything written. */
	if (rc == 0)
		rc = graid_array_fail_member(a, 0);
	if (rc == 0)
		rc = graid_array_fail_member(a, 2);
	if (rc == 0)
		rc = lb_pattern(a, info.size, pct, true);
	graid_array_close(a);
out:
	for (unsigned i = 0; i <= o->members; i++)
		unlink(file[i]);
	if (rc)
		fprintf(stderr, "live_bench: %u%% %s: %s\n", pct, map ? "map" : "no map",
			graid_strerror(rc < 0 ? rc : -1));
	return rc ? -1 : 0;
}

static unsigned lb_uint(const char *s)
{
	return (unsigned)strtoul(s, NULL, 10);
}

int main(int argc, char **argv)
{
	struct lb_opts o = { .dir = "/dev/shm", .members = 6, .member_mib = 128, .mbps = 400,
			     .chunk_kib = 64, .used_pct = 10, .repeat = 2 };
	/* The last two: arrays made without a map, rebuilt whole as before format 1.2. */
	static const char *const name[4] = { "map, 10% used", "map, 100% used",
					     "no map (full rebuild), 10% used",
					     "no map (full rebuild), 100% used" };
	struct lb_result best[4];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			o.dir = argv[i + 1];
		else if (!strcmp(argv[i], "--members"))
			o.members = lb_uint(argv[i + 1]);
		else if (!strcmp(argv[i], "--member-mib"))
			o.member_mib = lb_uint(argv[i + 1]);
		else if (!strcmp(argv[i], "--mbps"))
			o.mbps = lb_uint(argv[i + 1]);
		else if (!strcmp(argv[i], "--chunk-kib"))
			o.chunk_kib = lb_uint(argv[i + 1]);
		else if (!strcmp(argv[i], "--used"))
			o.used_pct = lb_uint(argv[i + 1]);
		else if (!strcmp(argv[i], "--repeat"))
			o.repeat = lb_uint(argv[i + 1]);
		else
			goto usage;
	}
	if (o.members < 4 || o.members > LB_MAX || !o.member_mib || !o.mbps || !o.used_pct ||
	    o.used_pct > 100 || !o.repeat || !o.chunk_kib)
		goto usage;
	graid_log_set(NULL, NULL, 0);
	for (int c = 0; c < 4; c++) {
		unsigned pct = c % 2 ? 100 : o.used_pct;

		best[c].seconds = 1e30;
		/* The fastest of --repeat runs: the host's other load only ever adds time. */
		for (unsigned k = 0; k < o.repeat; k++) {
			struct lb_result r = { 0 };

			if (lb_case(&o, pct, c < 2, &r))
				return 1;
			if (r.seconds < best[c].seconds)
				best[c] = r;
		}
	}
	printf("RAID-6, %u members of %u MiB on emulated drives of %u MB/s each, chunk %u KiB, "
	       "best of %u\n", o.members, o.member_mib, o.mbps, o.chunk_kib, o.repeat);
	printf("%-34s %10s %9s %14s %9s %12s\n", "rebuild of one member", "used MiB", "seconds",
	       "written MiB", "% time", "% written");
	for (int c = 0; c < 4; c++)
		printf("%-34s %10.1f %9.2f %14.1f %8.1f%% %11.1f%%\n", name[c],
		       (double)best[c].used_bytes / 1048576.0, best[c].seconds,
		       (double)best[c].written / 1048576.0,
		       100.0 * best[c].seconds / best[2].seconds,
		       100.0 * (double)best[c].written / (double)best[2].written);
	printf("(%% of the full rebuild of the same data: row 3, the 10%%-used array without a map)\n");
	return 0;
usage:
	fprintf(stderr, "usage: live_bench [--dir DIR] [--members 4..16] [--member-mib N] "
			"[--mbps N] [--chunk-kib N] [--used 1..100] [--repeat N]\n");
	return 2;
}
