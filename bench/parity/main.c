/* SPDX-License-Identifier: MIT */
/*
 * parity_bench: the one program that times libgraid's parity engines, in three modes.
 *   table  every engine beside ISA-L called directly and memcpy (the default: no mode, or
 *          an option first, as `parity_bench --quick` always was)
 *   sweep  layouts x batch sizes, latency, CPU seconds per GB, cross-overs, CSV and chart
 *          (run by the name parity-compare too: build/examples/parity-compare/ links here)
 *   check  gen, recover and check of every usable engine, checked against ref (graidctl
 *          bench compiles the same code in)
 * Three programs did this before, each with its own stripes, clocks and checks.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "modes.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} pb_modes[] = {
	{ "table", pb_table_main },
	{ "sweep", pb_sweep_main },
	{ "check", pb_check_main },
};

int main(int argc, char **argv)
{
	char *base = basename(argv[0]);
	static char prog[64];

	if (strcmp(base, "parity-compare") == 0)
		return pb_sweep_main(argc, argv);
	if (argc > 1 && (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--modes") == 0)) {
		printf("usage: %s [table|sweep|check] [options]   (%s MODE --help)\n"
		       "  table  every engine beside ISA-L called directly and memcpy (default)\n"
		       "  sweep  layouts x batch sizes: GB/s, latency, CPU s/GB, cross-overs, chart\n"
		       "  check  gen, recover 2 and check of every usable engine against ref\n",
		       argv[0], argv[0]);
		return 0;
	}
	for (size_t i = 0; argc > 1 && i < sizeof(pb_modes) / sizeof(pb_modes[0]); i++)
		if (strcmp(argv[1], pb_modes[i].name) == 0) {
			/* The mode sees its own arguments, named "parity_bench MODE". */
			snprintf(prog, sizeof(prog), "%s %s", argv[0], pb_modes[i].name);
			argv[1] = prog;
			return pb_modes[i].run(argc - 1, argv + 1);
		}
	return pb_table_main(argc, argv);
}
