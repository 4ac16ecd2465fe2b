/* SPDX-License-Identifier: MIT */
/* graidctl list: the NVMe namespaces on this host (libnvme's topology scan) and which carry a libgraid superblock. */
#ifdef GCTL_HAVE_LIBNVME
#include <libnvme.h>
#endif

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_json.h"
#include "gctl_scan.h"

void gctl_help_list(FILE *f)
{
	gctl_print_cmd_usage(f, "list");
	fprintf(f,
		"\nList the NVMe namespaces of this host, as libnvme's topology scan finds them in\n"
		"sysfs: block device and generic char device (/dev/ngXnY, for io_uring NVMe\n"
		"passthrough), controller, model, serial, firmware, namespace ID, size and LBA\n"
		"format; and for each, whether it carries a libgraid superblock: the array's UUID,\n"
		"level, and the device's role and state. Nothing is written; superblocks are read\n"
		"without locking, so it works while arrays are open.\n\n"
		"  -j, --json  print exactly one JSON document on stdout\n\n"
		"  -s, --scan  list the arrays instead: every device the config names (as\n"
		"              assemble --scan finds them) probed and grouped by array: UUID, name,\n"
		"              level, roles found of those needed, spares, serve=, and whether\n"
		"              it is complete, incomplete (the missing roles) or held; each\n"
		"              device under it. With --json: one document (\"arrays\", and\n"
		"              \"not_found\" for ARRAY lines none of whose members was found)\n"
		"  -c, --config FILE       (with --scan) the config, as for assemble --scan\n"
		"      --members-of UUID   (with --scan) only the paths of that array's devices\n"
		"                          found, one a line (for a service to start it with);\n"
		"                          exit 1 when none was found\n\n"
		"Exit status: 0 listed (also when there are none); 1 the scan failed (or a bad\n"
		"config line); 5 this graidctl was built without libnvme (not with --scan).\n");
}

#ifdef GCTL_HAVE_LIBNVME
struct list_ns {
	char dev[64], generic[64], ctrl[32], transport[16];
	char model[48], serial[32], firmware[16];
	unsigned nsid;
	uint64_t lbas;
	unsigned lba_bytes, meta_bytes;
	int probe_rc;
	struct graid_member_probe probe;
};

static void list_copy(char *dst, size_t len, const char *src)
{
	size_t n;

	snprintf(dst, len, "%s", src ? src : "");
	n = strlen(dst);
	while (n && dst[n - 1] == ' ')
		dst[--n] = '\0';
}

static void list_fill(struct list_ns *e, nvme_ctrl_t c, nvme_ns_t n)
{
	const char *g = nvme_ns_get_generic_name(n);

	memset(e, 0, sizeof(*e));
	snprintf(e->dev, sizeof(e->dev), "/dev/%s", nvme_ns_get_name(n));
	if (g && g[0])
		snprintf(e->generic, sizeof(e->generic), "/dev/%s", g);
	list_copy(e->ctrl, sizeof(e->ctrl), c ? nvme_ctrl_get_name(c) : "");
	list_copy(e->transport, sizeof(e->transport), c ? nvme_ctrl_get_transport(c) : "");
	list_copy(e->model, sizeof(e->model), nvme_ns_get_model(n));
	list_copy(e->serial, sizeof(e->serial), nvme_ns_get_serial(n));
	list_copy(e->firmware, sizeof(e->firmware), nvme_ns_get_firmware(n));
	e->nsid = (unsigned)nvme_ns_get_nsid(n);
	e->lbas = nvme_ns_get_lba_count(n);
	e->lba_bytes = (unsigned)nvme_ns_get_lba_size(n);
	e->meta_bytes = (unsigned)nvme_ns_get_meta_size(n);
	e->probe.struct_size = sizeof(e->probe);
	e->probe_rc = graid_member_probe(e->dev, &e->probe);
}

/* Every namespace once: those under a controller, then multipath ones under the subsystem. */
static int list_collect(nvme_root_t r, struct list_ns **out, unsigned *count)
{
	struct list_ns *v = NULL;
	unsigned n = 0, cap = 0;
	nvme_host_t h;
	nvme_subsystem_t s;
	nvme_ctrl_t c;
	nvme_ns_t ns;

#define LIST_ADD(ctrl, nsp)                                                         \
	do {                                                                          \
		if (n == cap) {                                                       \
			struct list_ns *nv = realloc(v, (cap = cap ? 2 * cap : 16) *   \
							     sizeof(*v));              \
			if (!nv) {                                                    \
				free(v);                                              \
				return -ENOMEM;                                       \
			}                                                             \
			v = nv;                                                       \
		}                                                                     \
		list_fill(&v[n++], ctrl, nsp);                                        \
	} while (0)

	nvme_for_each_host(r, h) {
		nvme_for_each_subsystem(h, s) {
			nvme_subsystem_for_each_ctrl(s, c) {
				nvme_ctrl_for_each_ns(c, ns)
					LIST_ADD(c, ns);
			}
			nvme_subsystem_for_each_ns(s, ns) {
				nvme_path_t p = nvme_namespace_first_path(ns);

				LIST_ADD(p ? nvme_path_get_ctrl(p) : NULL, ns);
			}
		}
	}
#undef LIST_ADD
	*out = v;
	*count = n;
	return 0;
}

static void list_member_text(const struct list_ns *e, char *buf, size_t len)
{
	char uuid[37];

	if (e->probe_rc) {
		snprintf(buf, len, "? (%s)", graid_strerror(e->probe_rc));
	} else if (!e->probe.has_superblock) {
		snprintf(buf, len, "-");
	} else {
		gctl_uuid_format(e->probe.array_uuid, uuid);
		if (e->probe.role < e->probe.nmembers)
			snprintf(buf, len, "%s raid%d role %u/%u %s", uuid, e->probe.level,
				 e->probe.role, e->probe.nmembers, gctl_state_name(e->probe.state));
		else
			snprintf(buf, len, "%s raid%d spare", uuid, e->probe.level);
	}
}

static void list_text(const struct list_ns *v, unsigned n)
{
	if (n == 0) {
		printf("no NVMe namespaces found\n");
		return;
	}
	printf("%-14s %-12s %-7s %-20s %-14s %-8s %4s %8s %5s  %s\n", "DEVICE", "GENERIC",
	       "CTRL", "MODEL", "SERIAL", "FW", "NSID", "SIZE", "LBA", "LIBGRAID");
	for (unsigned i = 0; i < n; i++) {
		const struct list_ns *e = &v[i];
		char size[32], lba[16], member[160];

		gctl_size_format(e->lbas * e->lba_bytes, size, sizeof(size));
		if (e->meta_bytes)
			snprintf(lba, sizeof(lba), "%u+%u", e->lba_bytes, e->meta_bytes);
		else
			snprintf(lba, sizeof(lba), "%u", e->lba_bytes);
		list_member_text(e, member, sizeof(member));
		printf("%-14s %-12s %-7s %-20.20s %-14s %-8s %4u %8s %5s  %s\n", e->dev,
		       e->generic[0] ? e->generic : "-", e->ctrl[0] ? e->ctrl : "-", e->model,
		       e->serial, e->firmware, e->nsid, size, lba, member);
	}
}

static void list_json(const struct list_ns *v, unsigned n)
{
	struct gctl_json j;
	char uuid[37];

	gctl_json_init(&j, stdout);
	gctl_json_object_begin(&j, NULL);
	gctl_json_array_begin(&j, "namespaces");
	for (unsigned i = 0; i < n; i++) {
		const struct list_ns *e = &v[i];

		gctl_json_object_begin(&j, NULL);
		gctl_json_string(&j, "device", e->dev);
		if (e->generic[0])
			gctl_json_string(&j, "generic", e->generic);
		else
			gctl_json_null(&j, "generic");
		gctl_json_string(&j, "controller", e->ctrl);
		gctl_json_string(&j, "transport", e->transport);
		gctl_json_string(&j, "model", e->model);
		gctl_json_string(&j, "serial", e->serial);
		gctl_json_string(&j, "firmware", e->firmware);
		gctl_json_uint(&j, "nsid", e->nsid);
		gctl_json_uint(&j, "lba_bytes", e->lba_bytes);
		gctl_json_uint(&j, "meta_bytes", e->meta_bytes);
		gctl_json_uint(&j, "size", e->lbas * e->lba_bytes);
		if (e->probe_rc) {
			gctl_json_null(&j, "libgraid");
			gctl_json_string(&j, "probe_error", graid_strerror(e->probe_rc));
		} else if (!e->probe.has_superblock) {
			gctl_json_null(&j, "libgraid");
		} else {
			gctl_json_object_begin(&j, "libgraid");
			gctl_uuid_format(e->probe.array_uuid, uuid);
			gctl_json_string(&j, "array_uuid", uuid);
			gctl_json_int(&j, "level", e->probe.level);
			gctl_json_uint(&j, "nmembers", e->probe.nmembers);
			gctl_json_uint(&j, "role", e->probe.role);
			gctl_json_bool(&j, "spare", e->probe.role >= e->probe.nmembers);
			gctl_json_string(&j, "state", gctl_state_name(e->probe.state));
			gctl_json_uint(&j, "events", e->probe.events);
			gctl_json_object_end(&j);
		}
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	gctl_json_object_end(&j);
	gctl_json_finish(&j);
}
#endif

int gctl_cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "scan", no_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "members-of", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *members_of = NULL;
	bool json = false, scan = false;
	int c;

	while ((c = getopt_long(argc, argv, "jsc:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 's':
			scan = true;
			break;
		case 'c':
			config = optarg;
			break;
		case 'M':
			members_of = optarg;
			break;
		default:
			fprintf(stderr, "Try 'graidctl list --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return gctl_usage_err("list", "unexpected argument '%s'", argv[optind]);
	if ((config || members_of) && !scan)
		return gctl_usage_err("list", "--config and --members-of go with --scan");
	if (scan)
		return gctl_list_scan(config, json, members_of);
#ifdef GCTL_HAVE_LIBNVME
	{
		struct list_ns *v = NULL;
		unsigned n = 0;
		nvme_root_t r = nvme_create_root(stderr, LOG_ERR);
		int rc;

		if (!r) {
			gctl_err("list: libnvme: %s", strerror(errno));
			return GCTL_EXIT_FAILED;
		}
		/* No NVMe here at all (no /sys/class/nvme) is an empty list, not a failure. */
		if (nvme_scan_topology(r, NULL, NULL) && errno != ENOENT) {
			gctl_err("list: scanning the NVMe topology: %s", strerror(errno));
			nvme_free_tree(r);
			return GCTL_EXIT_FAILED;
		}
		rc = list_collect(r, &v, &n);
		nvme_free_tree(r);
		if (rc) {
			gctl_err("list: %s", graid_strerror(rc));
			return GCTL_EXIT_FAILED;
		}
		if (json)
			list_json(v, n);
		else
			list_text(v, n);
		free(v);
		return GCTL_EXIT_OK;
	}
#else
	(void)json;
	gctl_err("list: this graidctl was built without libnvme");
	return GCTL_EXIT_UNSUPPORTED;
#endif
}
