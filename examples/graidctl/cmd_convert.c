/* SPDX-License-Identifier: MIT */
/* graidctl convert: change an array's level where no data moves, served or opened here. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

void gctl_help_convert(FILE *f)
{
	gctl_print_cmd_usage(f, "convert");
	fprintf(f,
		"\nAssemble the array from MEMBER... and change its RAID level where no data moves\n"
		"(docs/RESHAPE.md, \"Metadata-only level changes\"), at once, while it stays in use:\n"
		"  --level 5 on a RAID-6 made from a RAID-5 by 'grow --level 6' (Q on its last\n"
		"            member): that member is dropped (its superblock cleared), leaving the\n"
		"            RAID-5 of one member fewer; the dropped member may be failed\n"
		"  --level 5 on a RAID-1 of two: the RAID-5 of two (then 'grow' adds members)\n"
		"  --level 1 on a RAID-5 of two: the RAID-1 of two\n"
		"The size and every byte stay. Refused, with nothing written: any other change, an\n"
		"array with checksums or a journal, a member that stays not active, or a reshape,\n"
		"scrub, rebuild or replace under way.\n\n"
		"On a served array the holder does it (its control endpoint).\n\n"
		"  -l, --level N         the level wanted (1 or 5)\n\n"
		"Exit status: 0; 1 failed; 2 usage error; 4 the array cannot be assembled;\n"
		"5 not available in this libgraid (or the holder's).\n");
}

/* Why a conversion was refused, in the words of graid_array_convert()'s errors. */
static void convert_refused(int rc)
{
	const char *why = "";

	if (rc == -EOPNOTSUPP)
		why = " (this libgraid converts a Q-last RAID-6 to RAID-5, and a RAID-1 of two to "
		      "RAID-5 and back, without checksums or a journal; the log says why)";
	else if (rc == -EBUSY)
		why = " (a reshape, scrub, rebuild or replace is under way)";
	else if (rc == -EIO)
		why = " (every member that stays must be active)";
	gctl_err("convert: %s%s", graid_strerror(rc), why);
}

static void convert_done(int level, unsigned n)
{
	printf("now a RAID-%d of %u members\n", level, n);
	fflush(stdout);
}

static int convert_served(struct gctl_ctl *c, int level)
{
	struct json_object *req = json_object_new_object(), *r;
	char why[256];
	int rc;

	json_object_object_add(req, "op", json_object_new_string("convert"));
	json_object_object_add(req, "level", json_object_new_int(level));
	rc = gctl_ctl_call(c, req, &r, why, sizeof(why));
	json_object_put(req);
	if (rc) {
		if (c->broken) {
			gctl_err("convert: the holder's control endpoint %s: %s", c->path, why);
			return GCTL_EXIT_FAILED;
		}
		if (gctl_ctl_unknown_op(rc, why)) {
			gctl_err("convert: the holder, %s, runs libgraid %s, which has no 'convert' "
				 "operation: update its libgraid and restart it, or stop it and run "
				 "this command on the members", c->holder,
				 c->version[0] ? c->version : "(unknown)");
			return GCTL_EXIT_UNSUPPORTED;
		}
		convert_refused(rc);
		return GCTL_EXIT_FAILED;
	}
	convert_done((int)gctl_ctl_u64(r, "level"), (unsigned)gctl_ctl_u64(r, "nmembers"));
	json_object_put(r);
	return GCTL_EXIT_OK;
}

int gctl_cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct graid_array *a;
	struct gctl_ctl ctl;
	int c, ex, rc, level = -1;

	while ((c = getopt_long(argc, argv, "l:", opts, NULL)) != -1) {
		if (c == 'l') {
			if (strcmp(optarg, "1") != 0 && strcmp(optarg, "5") != 0)
				return gctl_usage_err("convert", "--level takes 1 or 5, not '%s'",
						      optarg);
			level = atoi(optarg);
		} else {
			fprintf(stderr, "Try 'graidctl convert --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (level < 0)
		return gctl_usage_err("convert", "no level given (--level N)");
	if (argc - optind < 1)
		return gctl_usage_err("convert", "no members given");
	ex = gctl_open_served("convert", argv + optind, argc - optind, -1, NULL, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = convert_served(&ctl, level);
		gctl_ctl_close(&ctl);
		return ex;
	}
	rc = graid_array_convert(a, level, 0);
	if (rc) {
		convert_refused(rc);
		ex = GCTL_EXIT_FAILED;
	} else if (graid_array_info(a, &in) == 0) {
		convert_done(in.level, in.nmembers);
	}
	if (gctl_close("convert", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}
