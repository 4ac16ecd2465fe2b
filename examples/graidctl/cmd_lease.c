/* SPDX-License-Identifier: MIT */
/* graidctl lease-init: write the lease area an array's opens take their lease from. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include <libgraid/graid.h>

#include "gctl.h"

void gctl_help_lease_init(FILE *f)
{
	gctl_print_cmd_usage(f, "lease-init");
	fprintf(f,
		"\nWrite the lease area that SPEC names for the array MEMBER belongs to, once,\n"
		"before the first open that takes the lease (docs/REMOTE.md, \"The lease\").\n"
		"SPEC is sanlock:host-id=N[,io-timeout=S][,offset=BYTES]:PATH, PATH a small\n"
		"namespace or file every RAID host reaches (2 MiB; 16 MiB on a 4 KiB-sector\n"
		"device); a sanlock daemon must be running. Never while an open holds the lease.\n"
		"Then give the same SPEC, with each host's own host-id, in GRAID_LEASE to every\n"
		"graidctl command that changes the array, and to the servers (nbdkit lease=,\n"
		"graid-ublk --lease).\n\n"
		"Exit status: 0 written; 1 error; 2 usage error; 5 this libgraid has no sanlock.\n");
}

int gctl_cmd_lease_init(int argc, char **argv)
{
	struct graid_member_probe p = { .struct_size = sizeof(p) };
	int c, rc;

	while ((c = getopt(argc, argv, "")) != -1) {
		fprintf(stderr, "Try 'graidctl lease-init --help'.\n");
		return GCTL_EXIT_USAGE;
	}
	if (argc - optind != 2)
		return gctl_usage_err("lease-init", "need a lease spec and one member of the array");
	rc = graid_member_probe(argv[optind + 1], &p);
	if (rc || !p.has_superblock) {
		gctl_err("lease-init: %s: %s", argv[optind + 1],
			 rc ? graid_strerror(rc) : "no libgraid superblock: not a member");
		return GCTL_EXIT_FAILED;
	}
	rc = graid_lease_init(argv[optind], p.array_uuid);
	if (rc) {
		gctl_err("lease-init: %s: %s", argv[optind], graid_strerror(rc));
		return rc == -EOPNOTSUPP ? GCTL_EXIT_UNSUPPORTED : GCTL_EXIT_FAILED;
	}
	return GCTL_EXIT_OK;
}
