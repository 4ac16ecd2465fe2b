/* SPDX-License-Identifier: MIT */
/*
 * The reserve suite's array programs (guest/reserve.sh; issue 19, reservations): a RAID-5
 * over SCSI disks whose persistent reservations the kernel's PR ioctls drive.
 *
 *   reserve_vm create DEV...                       make the array (chunk 64 KiB), close it
 *   reserve_vm writer STATUS [FLAGS] DEV...        open, then write 4 KiB block N with N in
 *       every 8 bytes, N = 0, 1, ..., flushing every 8 writes and recording "flushed N" in
 *       STATUS after each flush, until a call fails; then print why and what the array's
 *       ARRAY_FOREIGN event said. Exit 0 when it stopped as a foreign handle, 3 otherwise.
 *   reserve_vm hold FIFO [FLAGS] DEV...            open, print "held", then read a count N
 *       from FIFO: verify blocks 0..N-1, scrub, close; print each result.
 * FLAGS: --reserve (GRAID_OPEN_RESERVE), --takeover (GRAID_OPEN_TAKEOVER).
 * Exit 1 for a failed open (the library's log says why), 2 for usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define BLK 4096u

static atomic_int foreign_err, foreign_member = -2;

static void on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_ARRAY_FOREIGN) {
		atomic_store(&foreign_member, ev->member);
		atomic_store(&foreign_err, ev->error);
	}
}

static void fill(uint8_t *buf, uint64_t n)
{
	for (unsigned i = 0; i < BLK; i += 8)
		memcpy(buf + i, &n, 8);
}

static int open_array(char **argv, int argc, int *at, struct graid_array **a)
{
	struct graid_open_options o = { .struct_size = sizeof(o) };
	int rc;

	for (; *at < argc && !strncmp(argv[*at], "--", 2); (*at)++) {
		if (!strcmp(argv[*at], "--reserve"))
			o.flags |= GRAID_OPEN_RESERVE;
		else if (!strcmp(argv[*at], "--takeover"))
			o.flags |= GRAID_OPEN_TAKEOVER;
		else
			return -EINVAL;
	}
	if (*at >= argc)
		return -EINVAL;
	rc = graid_array_open((const char *const *)argv + *at, (unsigned)(argc - *at), &o, a);
	if (rc == 0)
		graid_array_set_event_callback(*a, on_event, NULL);
	return rc;
}

static void record(const char *path, uint64_t flushed)
{
	char tmp[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "flushed %" PRIu64 "\n", flushed);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static int writer(const char *status, struct graid_array *a)
{
	uint8_t *buf = aligned_alloc(BLK, BLK);
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t n = 0, flushed = 0;
	int rc = 0;

	if (!buf || graid_array_info(a, &info))
		return 1;
	record(status, 0);
	printf("writing\n");
	fflush(stdout);
	for (; (n + 1) * BLK <= info.size; n++) {
		ssize_t w;

		fill(buf, n);
		w = graid_array_write(a, buf, BLK, n * BLK);
		if (w != (ssize_t)BLK) {
			rc = (int)w;
			break;
		}
		if ((n + 1) % 8 == 0) {
			rc = graid_array_flush(a);
			if (rc)
				break;
			flushed = n + 1;
			record(status, flushed);
		}
		usleep(2000);
	}
	printf("stopped at block %" PRIu64 " (%" PRIu64 " flushed): %s; foreign event: member %d "
	       "error %d (%s)\n", n, flushed, rc ? graid_strerror(rc) : "the array is full",
	       atomic_load(&foreign_member), atomic_load(&foreign_err),
	       atomic_load(&foreign_err) ? graid_strerror(atomic_load(&foreign_err)) : "none");
	rc = graid_array_close(a);
	printf("close: %s\n", rc ? graid_strerror(rc) : "ok");
	free(buf);
	return atomic_load(&foreign_err) ? 0 : 3;
}

static int hold(const char *fifo, struct graid_array *a)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	uint8_t *buf = aligned_alloc(BLK, BLK), *want = aligned_alloc(BLK, BLK);
	unsigned long long count = 0;
	uint64_t bad = 0;
	FILE *f;
	int rc;

	printf("held\n");
	fflush(stdout);
	f = fopen(fifo, "r");
	if (!buf || !want || !f || fscanf(f, "%llu", &count) != 1) {
		printf("no count read from %s\n", fifo);
		return 1;
	}
	fclose(f);
	for (uint64_t n = 0; n < count; n++) {
		fill(want, n);
		if (graid_array_read(a, buf, BLK, n * BLK) != (ssize_t)BLK || memcmp(buf, want, BLK))
			bad++;
	}
	printf("verify: %llu flushed blocks, %" PRIu64 " wrong\n", count, bad);
	rc = graid_array_scrub(a, 0, &rep);
	printf("scrub: %s, %" PRIu64 " stripes, %" PRIu64 " mismatches\n",
	       rc ? graid_strerror(rc) : "done", rep.stripes_checked, rep.mismatches);
	rc = graid_array_close(a);
	printf("close: %s\n", rc ? graid_strerror(rc) : "ok");
	free(buf);
	free(want);
	return 0;
}

int main(int argc, char **argv)
{
	struct graid_array *a;
	int at, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "create")) {
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
						  .chunk_bytes = 64 * 1024,
						  .flags = GRAID_CREATE_FORCE };

		rc = graid_array_create((const char *const *)argv + 2, (unsigned)(argc - 2), &cfg,
					&a);
		if (rc == 0)
			rc = graid_array_close(a);
		printf("create: %s\n", rc ? graid_strerror(rc) : "ok");
		return rc ? 1 : 0;
	}
	if (argc < 4 || (strcmp(argv[1], "writer") && strcmp(argv[1], "hold"))) {
		fprintf(stderr, "usage: reserve_vm create DEV... | writer STATUS [FLAGS] DEV... | "
				"hold FIFO [FLAGS] DEV...\n");
		return 2;
	}
	at = 3;
	rc = open_array(argv, argc, &at, &a);
	if (rc) {
		printf("open: %s\n", graid_strerror(rc));
		return 1;
	}
	return !strcmp(argv[1], "writer") ? writer(argv[2], a) : hold(argv[2], a);
}
