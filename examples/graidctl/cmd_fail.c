/* SPDX-License-Identifier: MIT */
/* graidctl fail: mark one member role failed, as an I/O error would, and record it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

void gctl_help_fail(FILE *f)
{
	gctl_print_cmd_usage(f, "fail");
	fprintf(f,
		"\nAssemble the array from MEMBER..., mark role IDX (0-based, as `status` shows\n"
		"it) failed, and close the array: the other members' superblocks record it, so\n"
		"the failed member is left out of later assemblies until it is replaced.\n"
		"Refused if the array could not serve its data without that member. On a served\n"
		"array the holder does it (its control endpoint).\n\n"
		"Exit status: 0 failed (or already failed); 1 refused or error; 2 usage error;\n"
		"4 the array cannot be assembled.\n");
}

int gctl_cmd_fail(int argc, char **argv)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct gctl_ctl ctl;
	unsigned idx;
	int c, rc, ex;

	while ((c = getopt(argc, argv, "")) != -1) {
		fprintf(stderr, "Try 'graidctl fail --help'.\n");
		return GCTL_EXIT_USAGE;
	}
	if (argc - optind < 2)
		return gctl_usage_err("fail", "need a member index and the array's members");
	if (gctl_parse_index(argv[optind], &idx))
		return gctl_usage_err("fail", "bad member index '%s'", argv[optind]);
	ex = gctl_open_served("fail", argv + optind + 1, argc - optind - 1, -1, NULL, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = gctl_served_fail(&ctl, idx);
		gctl_ctl_close(&ctl);
		return ex;
	}
	rc = graid_array_info(a, &info);
	if (rc == 0 && idx >= info.nmembers) {
		gctl_err("fail: member index %u is out of range: the array has roles 0..%u", idx,
			 info.nmembers - 1);
		gctl_close("fail", a);
		return GCTL_EXIT_USAGE;
	}
	graid_array_member_info(a, idx, &mi);
	rc = graid_array_fail_member(a, idx);
	if (rc) {
		if (rc == -EBUSY)
			gctl_err("fail: member %u (%s): refused: the array cannot lose it without "
				 "losing data", idx, mi.path[0] ? mi.path : "missing");
		else
			gctl_err("fail: member %u (%s): %s", idx, mi.path[0] ? mi.path : "missing",
				 graid_strerror(rc));
		gctl_close("fail", a);
		return GCTL_EXIT_FAILED;
	}
	printf("member %u (%s) marked failed\n", idx, mi.path[0] ? mi.path : "missing");
	/*
	 * A hot spare takes the role at once and starts rebuilding in the background, but
	 * graidctl closes the array now, which stops that rebuild at its checkpoint: say so.
	 */
	if (graid_array_member_info(a, idx, &mi) == 0 && mi.state == GRAID_MEMBER_REBUILDING)
		printf("hot spare %s took role %u; run 'graidctl rebuild' on the members to "
		       "finish its rebuild\n", mi.path, idx);
	return gctl_close("fail", a);
}
