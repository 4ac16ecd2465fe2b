/* SPDX-License-Identifier: MIT */
/* graidctl assemble: bring an array together, members that came back and forced ones included. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_scan.h"

void gctl_help_assemble(FILE *f)
{
	gctl_print_cmd_usage(f, "assemble");
	fprintf(f,
		"\nAssemble the array from MEMBER..., hold it while members that came back catch\n"
		"up (only the regions written while they were out, from the write-intent bitmap;\n"
		"a member whose gap is unknown is rebuilt whole) and while any rebuild that was\n"
		"stopped finishes, then close it. The log says which roles came back and how.\n"
		"Fails if roles are missing from MEMBER..., or a member given would be left out\n"
		"(named with the reason: shrunk, not writable, diverged...), unless --degraded is\n"
		"given.\n\n"
		"  -f, --force          when too many members are recorded failed to assemble\n"
		"                       (a transient error took one out too many), take back the\n"
		"                       most recent of them; the log names each role forced and the\n"
		"                       event count it came from, and the regions written since are\n"
		"                       resynced. Data written where no redundancy was left may be\n"
		"                       lost; scrub afterwards.\n"
		"  -n, --no-rebuild     do not wait for catching up or rebuilding; it goes on at the\n"
		"                       next assembly\n"
		"  -m, --max-rate SIZE  catch up or rebuild at most SIZE bytes a second per member\n"
		"      --degraded       go on with roles missing (they catch up when given again)\n"
		"      --takeover       the array's superblocks name another host as its owner:\n"
		"                       take it over (its owner epoch goes up by one, and that host\n"
		"                       stops writing when it sees it). Only when that host is down\n"
		"                       or has let go: until it notices, both may write.\n"
		"      --reserve        hold a Write Exclusive persistent reservation on every\n"
		"                       member while assembling (the drives refuse other hosts'\n"
		"                       writes); every member must support reservations\n\n"
		"Exit status: 0 the array is whole; 3 it is still degraded, or blocks are recorded\n"
		"bad (no redundancy was left for them); 1 failed (another\n"
		"host's array without --takeover too); 2 usage error; 4 the array cannot be\n"
		"assembled (try --force).\n\n"
		"graidctl assemble --scan [--degraded] [--config FILE] [OPTIONS]\n"
		"  -s, --scan         find the arrays on this host's devices (the config's DEVICE\n"
		"                     lines; without any, every block device and partition and\n"
		"                     every NVMe generic device) and assemble each whose roles\n"
		"                     are all found; one missing a role is left alone with a line\n"
		"                     naming the roles, unless --degraded. An array held by a\n"
		"                     live process is left alone. Arrays without an ARRAY line\n"
		"                     are assembled too unless the config says AUTO no. After\n"
		"                     assembling, the service its serve= names is started.\n"
		"  -c, --config FILE  the config (default $GRAID_CONF, else "
		GCTL_CONF_DEFAULT ";\n"
		"                     docs/OPERATIONS.md has its format)\n"
		"  Exit status with --scan: 0 every array found was assembled whole (or was held\n"
		"  already; also when none was found); 3 one was left alone for missing roles, was\n"
		"  assembled degraded, or is listed with no member found; 1 an error (a bad config\n"
		"  line, an assembly that failed); 2 usage error.\n");
}

int gctl_cmd_assemble(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "no-rebuild", no_argument, NULL, 'n' },
		{ "max-rate", required_argument, NULL, 'm' },
		{ "takeover", no_argument, NULL, 'T' },
		{ "reserve", no_argument, NULL, 'R' },
		{ "scan", no_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	unsigned how = 0;
	bool rebuild = true, scan = false;
	const char *config = NULL;
	uint64_t rate = 0;
	int c, ex;

	while ((c = getopt_long(argc, argv, "fnm:sc:", opts, NULL)) != -1) {
		if (c == 's') {
			scan = true;
		} else if (c == 'c') {
			config = optarg;
		} else if (c == 'f') {
			how |= GCTL_OPEN_FORCE;
		} else if (c == 'n') {
			rebuild = false;
		} else if (c == 'T') {
			how |= GCTL_OPEN_TAKEOVER;
		} else if (c == 'R') {
			how |= GCTL_OPEN_RESERVE;
		} else if (c == 'm') {
			if (gctl_parse_rate("assemble", optarg, &rate))
				return GCTL_EXIT_USAGE;
		} else {
			fprintf(stderr, "Try 'graidctl assemble --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (config && !scan)
		return gctl_usage_err("assemble", "--config goes with --scan");
	if (scan && argc > optind)
		return gctl_usage_err("assemble", "--scan finds the members: '%s' is not wanted",
				      argv[optind]);
	if (scan)
		return gctl_assemble_scan(config, how, rebuild, rate);
	if (argc - optind < 1)
		return gctl_usage_err("assemble", "no members given");
	ex = gctl_open("assemble", argv + optind, argc - optind, NULL, how, &a);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (rebuild)
		ex = gctl_rebuild("assemble", a, rate);
	if (ex != GCTL_EXIT_FAILED && graid_array_info(a, &info) == 0) {
		printf("assembled RAID-%d: %u of %u roles in sync\n", info.level,
		       info.nmembers - info.nfailed, info.nmembers);
		if (info.nfailed)
			ex = GCTL_EXIT_DEGRADED;
		/* In sync, but with blocks no redundancy covered: said, and exit 3 (once). */
		else if (!rebuild && gctl_report_bad_blocks("assemble", a) != GCTL_EXIT_OK)
			ex = GCTL_EXIT_DEGRADED;
	}
	if (gctl_close("assemble", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}
