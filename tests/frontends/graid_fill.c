/* SPDX-License-Identifier: MIT */
/*
 * Test helper for the front-end scripts: write a pattern over a whole array, so that every
 * region is in use (the live-data map lets rebuild and scrub skip what was never written).
 * usage: graid_fill MEMBER...   exit 0 done, 1 failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

int main(int argc, char **argv)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const size_t piece = 1u << 20;
	struct graid_array *a;
	uint8_t *buf = malloc(piece);
	int rc;

	if (argc < 2 || !buf) {
		fprintf(stderr, "usage: graid_fill MEMBER...\n");
		return 1;
	}
	rc = graid_array_open((const char *const *)(argv + 1), (unsigned)(argc - 1), NULL, &a);
	if (rc == 0)
		rc = graid_array_info(a, &info);
	for (uint64_t off = 0; rc == 0 && off < info.size; off += piece) {
		size_t n = info.size - off < piece ? (size_t)(info.size - off) : piece;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)((off + i) * 2654435761u >> 13);
		if (graid_array_write(a, buf, n, off) != (ssize_t)n)
			rc = -1;
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
