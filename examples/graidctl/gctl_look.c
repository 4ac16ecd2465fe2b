/* SPDX-License-Identifier: MIT */
/* A look (a read-only open) before a command writes: the roles it would leave out, and why. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "gctl.h"

int gctl_look_open(char **members, int n, struct gctl_look *l)
{
	/*
	 * The look computes no parity: the reference engine, so that "auto" is not measured and
	 * no accelerator initialised twice for one command.
	 */
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = "ref",
					.flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a;
	int rc;

	memset(l, 0, sizeof(*l));
	l->info.struct_size = sizeof(l->info);
	rc = graid_array_open((const char *const *)members, (unsigned)n, &o, &a);
	if (rc)
		return rc;
	l->given = calloc((size_t)n, sizeof(*l->given));
	rc = l->given ? graid_array_info(a, &l->info) : -ENOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		l->given[i].struct_size = sizeof(l->given[i]);
		rc = graid_array_given_info(a, (unsigned)i, &l->given[i]);
	}
	if (rc == 0 && graid_array_control_path(a, NULL, l->ctl_path, sizeof(l->ctl_path)))
		l->ctl_path[0] = '\0';
	graid_array_close(a);
	if (rc) {
		gctl_look_free(l);
		return rc;
	}
	l->n = n;
	return 0;
}

void gctl_look_free(struct gctl_look *l)
{
	free(l->given);
	l->given = NULL;
	l->n = 0;
}

int gctl_look_left_out(const struct graid_given_info *given, int n, unsigned role)
{
	for (int i = 0; i < n; i++)
		if (given[i].role == (int)role && given[i].verdict != GRAID_GIVEN_MEMBER &&
		    given[i].verdict != GRAID_GIVEN_SPARE && given[i].verdict != GRAID_GIVEN_TWICE)
			return i;
	return -1;
}

const char *gctl_verdict_name(int verdict)
{
	static const char *const names[] = {
		[GRAID_GIVEN_MEMBER] = "member",
		[GRAID_GIVEN_SPARE] = "spare",
		[GRAID_GIVEN_UNOPENED] = "unopened",
		[GRAID_GIVEN_NOT_WRITABLE] = "not-writable",
		[GRAID_GIVEN_TWICE] = "twice",
		[GRAID_GIVEN_NO_SUPERBLOCK] = "no-superblock",
		[GRAID_GIVEN_BAD_SUPERBLOCK] = "bad-superblock",
		[GRAID_GIVEN_UNREACHABLE] = "unreachable",
		[GRAID_GIVEN_OTHER_ARRAY] = "other-array",
		[GRAID_GIVEN_GEOMETRY] = "geometry",
		[GRAID_GIVEN_REPLACED] = "replaced",
		[GRAID_GIVEN_SHRUNK] = "shrunk",
		[GRAID_GIVEN_IDENTITY] = "identity",
		[GRAID_GIVEN_STALE] = "stale",
		[GRAID_GIVEN_FAILED] = "failed",
		[GRAID_GIVEN_DIVERGED] = "diverged",
		[GRAID_GIVEN_ROLE_TAKEN] = "role-taken",
		[GRAID_GIVEN_NOT_HELD] = "not-held",
		[GRAID_GIVEN_SPARES_FULL] = "spares-full",
	};

	if (verdict < 0 || (size_t)verdict >= sizeof(names) / sizeof(names[0]) || !names[verdict])
		return "unknown";
	return names[verdict];
}
