/* SPDX-License-Identifier: MIT */
/* graidctl's entry point: global options, the library's log, and dispatch to a subcommand. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "gctl.h"

static const struct gctl_cmd main_cmds[] = {
	{ "create", "--level N [--chunk SIZE] [--backend NAME] [--force] [--journal] [--checksums] [--file-size SIZE] MEMBER...",
	  "create an array on members", gctl_cmd_create, gctl_help_create },
	{ "status", "[--json] [--backend NAME] MEMBER...",
	  "describe an array and its members (read-only: works while it is served)",
	  gctl_cmd_status, gctl_help_status },
	{ "assemble", "[--force] [--takeover] [--reserve] [--degraded] [--no-rebuild] [--max-rate SIZE] MEMBER...\n"
	  "       graidctl assemble --scan [--degraded] [--config FILE] [--no-rebuild] [--max-rate SIZE]",
	  "assemble an array; bring back members that were out (--force: recorded failed)",
	  gctl_cmd_assemble, gctl_help_assemble },
	{ "incremental", "[--config FILE] [--remove] DEVICE",
	  "for udev: record DEVICE; assemble its array once all its members were seen",
	  gctl_cmd_incremental, gctl_help_incremental },
	{ "monitor", "[--program PATH] [--syslog] [--delay S] [--oneshot] [--test] [--config FILE]\n"
	  "       [--run-dir DIR] [--state-file FILE]",
	  "follow every array on this host and report each event (mdadm --monitor)",
	  gctl_cmd_monitor, gctl_help_monitor },
	{ "fail", "IDX MEMBER...", "mark member role IDX failed", gctl_cmd_fail, gctl_help_fail },
	{ "replace", "[--keep-in-service] [--no-rebuild] [--max-rate SIZE] IDX NEWPATH MEMBER...",
	  "put a new member in role IDX and rebuild it", gctl_cmd_replace, gctl_help_replace },
	{ "rebuild", "[--max-rate SIZE] MEMBER...",
	  "rebuild replaced members (resumes a stopped rebuild)",
	  gctl_cmd_rebuild, gctl_help_rebuild },
	{ "grow", "--add DEV [--add DEV]... [--level 6] [--max-rate SIZE] [--no-wait] MEMBER...",
	  "add members to an array online and move its data over them (RAID-0, 5, 6), or\n"
	  "       turn a RAID-5 into a RAID-6 by adding one (--level 6)",
	  gctl_cmd_grow, gctl_help_grow },
	{ "convert", "--level N MEMBER...",
	  "change the level where no data moves: a RAID-6 from 'grow --level 6' back to\n"
	  "       RAID-5 (its Q member dropped), a RAID-1 of two to RAID-5 and back",
	  gctl_cmd_convert, gctl_help_convert },
	{ "scrub", "[--repair] [--restart] MEMBER...\n       graidctl scrub --stop MEMBER...",
	  "check parity over the whole array (and repair it)", gctl_cmd_scrub, gctl_help_scrub },
	{ "spare", "add PATH MEMBER...\n       graidctl spare remove PATH MEMBER...",
	  "add or remove a hot spare", gctl_cmd_spare, gctl_help_spare },
	{ "lease-init", "SPEC MEMBER", "write the lease area an array's opens take their lease "
	  "from", gctl_cmd_lease_init, gctl_help_lease_init },
	{ "iostat", "[-w] [--json] MEMBER... [INTERVAL [COUNT]]",
	  "a served array's I/O: ops/s, bandwidth, errors, latency histograms (-w)",
	  gctl_cmd_iostat, gctl_help_iostat },
	{ "list", "[--json]\n       graidctl list --scan [--json] [--config FILE] [--members-of UUID]",
	  "list the host's NVMe namespaces (--scan: the arrays found on its devices)",
	  gctl_cmd_list, gctl_help_list },
	{ "metrics", "[--output FILE] [--config FILE] [--no-health] [MEMBER...]",
	  "the arrays' Prometheus metrics (node_exporter's textfile collector)",
	  gctl_cmd_metrics, gctl_help_metrics },
	{ "backends", "[--json] [--no-measure]", "list parity engines, with measured speed",
	  gctl_cmd_backends, gctl_help_backends },
	{ "bench", "[--seconds S] [--ndata N] [--block SIZE] [--stripes N]",
	  "compare the usable parity engines on the same stripes", gctl_cmd_bench,
	  gctl_help_bench },
};

#define MAIN_NCMDS (sizeof(main_cmds) / sizeof(main_cmds[0]))

static int main_verbosity; /* -v adds one, -q takes one away */

static void main_help(FILE *f)
{
	fprintf(f, "usage: graidctl [-v|-q] COMMAND [OPTIONS] [ARGS]\n"
		   "       graidctl COMMAND --help\n\n"
		   "Manage libgraid RAID arrays (levels 0, 1, 5, 6, 10) over member files, block\n"
		   "devices or NVMe generic devices (/dev/ngXnY: io_uring NVMe passthrough).\n"
		   "MEMBER... are the array's member paths, in any order.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < MAIN_NCMDS; i++)
		fprintf(f, "  %-11s %s\n", main_cmds[i].name, main_cmds[i].summary);
	fprintf(f, "\nOptions:\n"
		   "  -v, --verbose  more of the library's log (repeat for more)\n"
		   "  -q, --quiet    only the library's errors\n"
		   "  -h, --help     this text\n"
		   "  -V, --version  graidctl's and libgraid's version\n"
		   "  --degraded     (after any command that changes an array) go on with roles\n"
		   "                 missing from MEMBER..., or whose member given is left out;\n"
		   "                 without it such a command refuses, naming each and why\n\n"
		   "Environment: GRAID_LEASE=SPEC makes every command that changes an array take\n"
		   "the array's lease first (see lease-init).\n\n"
		   "Sizes take K, M, G or T (powers of 1024). Exit status: 0 ok, 1 the operation\n"
		   "failed, 2 usage error, 3 done but the array needs attention (degraded,\n"
		   "parity mismatches left), 4 the array cannot be assembled, 5 not available\n"
		   "in this libgraid. See graidctl(1).\n");
}

/* The synopsis line of one command, which each command's help starts with. */
void gctl_print_cmd_usage(FILE *f, const char *name)
{
	for (size_t i = 0; i < MAIN_NCMDS; i++)
		if (strcmp(main_cmds[i].name, name) == 0)
			fprintf(f, "usage: graidctl %s %s\n", name, main_cmds[i].synopsis);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char name[64];
	int c, level;

	/* '+': stop at the command name; what follows is the command's to parse. */
	while ((c = getopt_long(argc, argv, "+vqhV", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			main_verbosity++;
			break;
		case 'q':
			main_verbosity--;
			break;
		case 'h':
			main_help(stdout);
			return GCTL_EXIT_OK;
		case 'V':
			printf("graidctl (libgraid %s)\n", graid_version());
			return GCTL_EXIT_OK;
		default:
			fprintf(stderr, "Try 'graidctl --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		main_help(stderr);
		return GCTL_EXIT_USAGE;
	}
	level = GRAID_LOG_WARNING + main_verbosity;
	if (level < GRAID_LOG_ERR)
		level = GRAID_LOG_ERR;
	if (level > GRAID_LOG_DEBUG)
		level = GRAID_LOG_DEBUG;
	/* The library's log reads as graidctl's own (gctl_log.c). */
	graid_log_set(gctl_log_forward, NULL, level);

	/*
	 * --degraded belongs to every command that writes an array: taken out here, wherever
	 * it stands before a "--", so each command's own options need not list it.
	 */
	for (int i = optind + 1, k = optind + 1; i <= argc; i++) {
		if (i < argc && strcmp(argv[i], "--") == 0) {
			while (i <= argc)
				argv[k++] = argv[i++];
			argc = k - 1;
			break;
		}
		if (i < argc && strcmp(argv[i], "--degraded") == 0) {
			gctl_degraded_ok = 1;
			continue;
		}
		argv[k++] = argv[i];
		if (i == argc)
			argc = k - 1;
	}
	for (size_t i = 0; i < MAIN_NCMDS; i++) {
		if (strcmp(argv[optind], main_cmds[i].name) != 0)
			continue;
		snprintf(name, sizeof(name), "graidctl %s", main_cmds[i].name);
		argv[optind] = name;
		/* getopt restarts from scratch for the command (GNU: optind 0 reinitialises). */
		argc -= optind;
		argv += optind;
		optind = 0;
		for (int k = 1; k < argc; k++) {
			if (strcmp(argv[k], "--") == 0)
				break;
			if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
				main_cmds[i].help(stdout);
				return GCTL_EXIT_OK;
			}
		}
		return main_cmds[i].run(argc, argv);
	}
	gctl_err("unknown command '%s'", argv[optind]);
	fprintf(stderr, "Try 'graidctl --help'.\n");
	return GCTL_EXIT_USAGE;
}
