/* SPDX-License-Identifier: MIT */
/*
 * graidctl bench: every usable parity engine on the same RAID-6 stripes, checked against
 * ref; the timing is parity_bench's check mode (bench/parity/check.c), compiled in here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "check.h"
#include "gctl.h"

void gctl_help_bench(FILE *f)
{
	gctl_print_cmd_usage(f, "bench");
	fprintf(f,
		"\nTime every usable parity engine on the same random RAID-6 stripes: parity\n"
		"generation, recovery of two lost data blocks, and parity check, in GB/s of data,\n"
		"next to memcpy of the same bytes. Every engine's output is compared bit for bit\n"
		"with the reference engine's. Takes a few seconds; for a sweep over layouts and\n"
		"batch sizes, or beside ISA-L called directly, see bench/parity_bench (sweep,\n"
		"table); this command is its check mode.\n\n"
		"  -t, --seconds S   time spent on each figure (default 0.2)\n"
		"  -d, --ndata N     data blocks per stripe, 1..255 (default 8, i.e. 8+2)\n"
		"  -B, --block SIZE  block (chunk) length (default 64K)\n"
		"  -S, --stripes N   stripes per engine call (default 32)\n\n"
		"Exit status: 0; 1 an engine failed or its output differed from ref's; 2 usage.\n");
}

int gctl_cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 't' },
		{ "ndata", required_argument, NULL, 'd' },
		{ "block", required_argument, NULL, 'B' },
		{ "stripes", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct pb_check_opts s = PB_CHECK_DEFAULTS;
	uint64_t v;
	char *end, size[32];
	int c, rc;

	while ((c = getopt_long(argc, argv, "t:d:B:S:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			s.seconds = strtod(optarg, &end);
			if (*end || !(s.seconds > 0 && s.seconds <= 60))
				return gctl_usage_err("bench", "bad --seconds '%s' (0 < S <= 60)",
						      optarg);
			break;
		case 'd':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > 255)
				return gctl_usage_err("bench", "bad --ndata '%s' (1..255)", optarg);
			s.ndata = (unsigned)v;
			break;
		case 'B':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > (16u << 20))
				return gctl_usage_err("bench", "bad --block '%s' (1 .. 16M)", optarg);
			s.len = (size_t)v;
			break;
		case 'S':
			if (gctl_size_parse(optarg, &v) || v < 1 || v > 4096)
				return gctl_usage_err("bench", "bad --stripes '%s' (1..4096)", optarg);
			s.nstripes = (size_t)v;
			break;
		default:
			fprintf(stderr, "Try 'graidctl bench --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return gctl_usage_err("bench", "unexpected argument '%s'", argv[optind]);
	if ((double)(s.ndata + 2) * (double)s.len * (double)s.nstripes > 1024.0 * 1024 * 1024)
		return gctl_usage_err("bench", "more than 1 GiB of stripes; use fewer or smaller");
	gctl_size_format((uint64_t)s.ndata * s.len * s.nstripes, size, sizeof(size));
	s.data = size;
	rc = pb_check_run(&s);
	if (rc == -ENOMEM) {
		gctl_err("bench: out of memory");
		return GCTL_EXIT_FAILED;
	}
	if (rc < 0) {
		gctl_err("bench: listing engines: %s", graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	return rc ? GCTL_EXIT_FAILED : GCTL_EXIT_OK;
}
