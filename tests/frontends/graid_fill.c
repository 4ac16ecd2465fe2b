/* SPDX-License-Identifier: MIT */
/*
 * Test helper for the front-end scripts: write a pattern over a whole array, so that every
 * region is in use (the live-data map lets rebuild and scrub skip what was never written).
 * usage: graid_fill [--control] [--hold-after BYTES[K|M|G]] MEMBER...   exit 0 done, 1 failed.
 * --hold-after: once BYTES are written, print "holding" and wait to be killed, the array still
 * open with writes it never flushed: a writer that dies mid-work, at a known point (a kill at a
 * guessed moment can land before the open on a loaded machine, leaving nothing to resync).
 * --control: serve the array's control endpoint ($GRAID_RUN_DIR) from the open on: a holder
 * that graidctl's commands go through.
 * $GRAID_FILL_HEALTH_MS: the health watch's interval (graid_array_set_health_options), so a
 * holder's watch samples a scripted drive at once and often, not after a minute.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid.h>

int main(int argc, char **argv)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const size_t piece = 1u << 20;
	struct graid_array *a;
	uint8_t *buf = malloc(piece);
	uint64_t hold_after = UINT64_MAX;
	int first = 1, control = 0;
	int rc;

	if (argc > 1 && strcmp(argv[1], "--control") == 0) {
		control = 1;
		argv++;
		argc--;
	}
	if (argc > 2 && strcmp(argv[1], "--hold-after") == 0) {
		char *end;

		hold_after = strtoull(argv[2], &end, 0);
		if (*end == 'K' || *end == 'M' || *end == 'G')
			hold_after <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
		else if (*end)
			hold_after = 0; /* refused below */
		first = hold_after ? 3 : argc;
	}
	if (argc <= first || !buf) {
		fprintf(stderr, "usage: graid_fill [--control] [--hold-after BYTES[K|M|G]] "
			"MEMBER...\n");
		return 1;
	}
	rc = graid_array_open((const char *const *)(argv + first), (unsigned)(argc - first), NULL,
			      &a);
	if (rc == 0 && getenv("GRAID_FILL_HEALTH_MS")) {
		struct graid_health_options ho = {
			.struct_size = sizeof(ho), .wear_percent = 90, .media_rising = 2,
			.media_burst = 25, .media_window_s = 600, .auto_replace_off = 1,
			.interval_ms = (uint32_t)strtoul(getenv("GRAID_FILL_HEALTH_MS"), NULL, 10) };

		rc = graid_array_set_health_options(a, &ho);
	}
	if (rc == 0 && control)
		rc = graid_array_control_start(a, NULL);
	if (rc == 0)
		rc = graid_array_info(a, &info);
	for (uint64_t off = 0; rc == 0 && off < info.size; off += piece) {
		size_t n = info.size - off < piece ? (size_t)(info.size - off) : piece;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)((off + i) * 2654435761u >> 13);
		if (graid_array_write(a, buf, n, off) != (ssize_t)n)
			rc = -1;
		if (rc == 0 && off + n >= hold_after) {
			printf("holding\n");
			fflush(stdout);
			for (;;)
				pause();
		}
	}
	if (rc == 0)
		rc = graid_array_close(a);
	free(buf);
	if (rc) {
		fprintf(stderr, "graid_fill: %s\n", graid_strerror(rc));
		return 1;
	}
	return 0;
}
