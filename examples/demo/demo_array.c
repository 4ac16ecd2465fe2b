/* SPDX-License-Identifier: MIT */
/*
 * The demo's second part: RAID-6 over six member files in a temporary folder; write a data
 * set through a deep queue, read it back, fail two members, read it back again through the
 * parity, reopen from the four survivors, and say how fast each step ran.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid.h>

#include "demo.h"

#define DA_MEMBERS 6
#define DA_MEMBER_BYTES ((65u << 20)) /* 1 MiB of metadata + 64 MiB of data each */
#define DA_IO (1u << 20)
#define DA_DEPTH 16

struct da_files {
	char dir[64];
	char path[DA_MEMBERS][96];
	const char *paths[DA_MEMBERS];
};

static int da_make_files(struct da_files *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/graid-demo-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	for (int i = 0; i < DA_MEMBERS; i++) {
		int fd;

		snprintf(f->path[i], sizeof(f->path[i]), "%s/member%d.img", f->dir, i);
		f->paths[i] = f->path[i];
		fd = open(f->path[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, DA_MEMBER_BYTES)) {
			perror(f->path[i]);
			return -1;
		}
		close(fd);
	}
	return 0;
}

static void da_remove_files(struct da_files *f)
{
	for (int i = 0; i < DA_MEMBERS; i++)
		unlink(f->path[i]);
	rmdir(f->dir);
}

/* Stream `bytes` through a queue of DA_DEPTH 1 MiB requests; returns GB/s or -1. */
static double da_stream(struct graid_array *a, uint8_t *data, uint64_t bytes, int write)
{
	struct graid_completion c[DA_DEPTH];
	struct graid_queue *q;
	uint64_t next = 0, done = 0;
	double t0 = demo_now();

	if (graid_queue_create(a, DA_DEPTH, &q))
		return -1;
	while (done < bytes) {
		int n;

		while (next < bytes) {
			int rc = write ? graid_queue_write(q, data + next, DA_IO, next, next)
				       : graid_queue_read(q, data + next, DA_IO, next, next);

			if (rc)
				break;
			next += DA_IO;
		}
		n = graid_queue_reap(q, c, DA_DEPTH, 1);
		for (int i = 0; i < n; i++) {
			if (c[i].result != DA_IO) {
				fprintf(stderr, "request at %llu: %s\n",
					(unsigned long long)c[i].user_data,
					graid_strerror((int)c[i].result));
				graid_queue_destroy(q);
				return -1;
			}
			done += DA_IO;
		}
		if (n < 0)
			break;
	}
	graid_queue_destroy(q);
	return (double)bytes / (demo_now() - t0) / 1e9;
}

static int da_check(const char *what, double gbps, const uint8_t *got, const uint8_t *want,
		    uint64_t bytes)
{
	int same = gbps >= 0 && memcmp(got, want, bytes) == 0;

	printf("   %-44s %7.2f GB/s  %s\n", what, gbps, same ? "verified" : "WRONG");
	return same ? 0 : 1;
}

int demo_array(void)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = 64 * 1024 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *survivors[4];
	struct graid_array *a;
	struct da_files f;
	uint8_t *data, *back;
	uint64_t bytes;
	double gbps;
	int rc, bad = 0;

	if (da_make_files(&f))
		return 1;
	rc = graid_array_create(f.paths, DA_MEMBERS, &cfg, &a);
	if (rc) {
		fprintf(stderr, "create: %s\n", graid_strerror(rc));
		da_remove_files(&f);
		return 1;
	}
	graid_array_info(a, &info);
	bytes = info.size / 2;
	printf("2. An array: RAID-6 over %d files in %s, chunk %u KiB, %llu MiB usable, "
	       "engine %s\n", DA_MEMBERS, f.dir, info.chunk_bytes / 1024,
	       (unsigned long long)(info.size >> 20), info.engine);
	if (posix_memalign((void **)&data, 4096, bytes) ||
	    posix_memalign((void **)&back, 4096, bytes))
		return 1;
	srand(2026);
	for (uint64_t i = 0; i < bytes; i++)
		data[i] = (uint8_t)rand();

	gbps = da_stream(a, data, bytes, 1);
	printf("   %-44s %7.2f GB/s\n", "wrote the data set (1 MiB requests, depth 16)", gbps);
	memset(back, 0, bytes);
	bad |= da_check("read it back", da_stream(a, back, bytes, 0), back, data, bytes);
	graid_array_fail_member(a, 1);
	graid_array_fail_member(a, 4);
	printf("   failed members 1 and 4\n");
	memset(back, 0, bytes);
	bad |= da_check("read it back through P and Q", da_stream(a, back, bytes, 0), back, data,
			bytes);
	graid_array_close(a);
	survivors[0] = f.paths[5];
	survivors[1] = f.paths[3];
	survivors[2] = f.paths[0];
	survivors[3] = f.paths[2];
	rc = graid_array_open(survivors, 4, NULL, &a);
	if (rc) {
		fprintf(stderr, "reopen: %s\n", graid_strerror(rc));
		bad = 1;
	} else {
		graid_array_info(a, &info);
		printf("   reopened from the 4 survivors given in another order: %u of %u missing\n",
		       info.nfailed, info.nmembers);
		memset(back, 0, bytes);
		bad |= da_check("read it back after the reopen", da_stream(a, back, bytes, 0), back,
				data, bytes);
		graid_array_close(a);
	}
	printf("\n%s: the data set survived losing two of six members.\n", bad ? "FAILED" : "ok");
	free(data);
	free(back);
	da_remove_files(&f);
	return bad;
}
