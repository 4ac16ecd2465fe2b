/* SPDX-License-Identifier: MIT */
/* graidctl backends: the parity engines this libgraid knows, what their probes found, speed. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_json.h"

void gctl_help_backends(FILE *f)
{
	gctl_print_cmd_usage(f, "backends");
	fprintf(f,
		"\nList the parity engines this libgraid knows (built in, and plugins on the\n"
		"plugin path or $GRAID_BACKEND_PATH): name, whether it is usable here, the device\n"
		"its probe found, and its RAID-6 8+2 parity generation speed in GB/s of data,\n"
		"timed now as `auto` selection times it (tens of milliseconds per engine).\n"
		"Then the CPU engine's routine for each kind of work, as it timed them at its\n"
		"first open in this process (one thread, GB/s of data), and, when measuring,\n"
		"what `auto` decides here: the engine it opens and, for an accelerator, which\n"
		"batch sizes it sends to the CPU instead (timed as it opens, under a second).\n\n"
		"  -j, --json        print one JSON document\n"
		"  -n, --no-measure  probe only, do not time the engines (the CPU engine still\n"
		"                    times its own routines once, about 5 ms, and they are shown)\n\n"
		"Exit status: 0; 1 the list could not be read; 2 usage error.\n");
}

static const char *backends_status(int status)
{
	return status == 0 ? "usable" : graid_strerror(status);
}

/* One word for the table; the full reason is in --json's status_text. */
static const char *backends_status_word(int status)
{
	switch (status) {
	case 0:
		return "usable";
	case -ENODEV:
		return "absent";
	case -ENOEXEC:
		return "refused";
	default:
		return "error";
	}
}

/*
 * The CPU engine logs its timing of every candidate routine at its first open, at info
 * level ("isal: measured ..."). Kept here to be shown; warnings still go to stderr.
 */
#define BACKENDS_MAX_LINES 16
static char backends_lines[BACKENDS_MAX_LINES][256];
static unsigned backends_nlines;

/* What the core says, at notice level, while it opens "auto": its choice and its routing. */
#define BACKENDS_MAX_AUTO 8
static char backends_auto_lines[BACKENDS_MAX_AUTO][256];
static unsigned backends_nauto;
static bool backends_in_auto;

static void backends_log(void *arg, int level, const char *msg)
{
	static const char prefix[] = "isal: measured ";

	(void)arg;
	if (!strncmp(msg, prefix, sizeof(prefix) - 1) && backends_nlines < BACKENDS_MAX_LINES)
		snprintf(backends_lines[backends_nlines++], sizeof(backends_lines[0]), "%s",
			 msg + sizeof(prefix) - 1);
	else if (backends_in_auto && level <= GRAID_LOG_NOTICE &&
		 backends_nauto < BACKENDS_MAX_AUTO)
		snprintf(backends_auto_lines[backends_nauto++], sizeof(backends_auto_lines[0]),
			 "%s", msg);
	if (level <= GRAID_LOG_WARNING && strncmp(msg, prefix, sizeof(prefix) - 1))
		fprintf(stderr, "libgraid: %s\n", msg);
}

/* Open the CPU engine once so that it times its routines, and keep what it logs. */
static void backends_cpu_routes(void)
{
	struct graid_backend *be;

	graid_log_set(backends_log, NULL, GRAID_LOG_INFO);
	if (graid_backend_open("isal", &be) == 0)
		graid_backend_close(be);
	graid_log_set(backends_log, NULL, GRAID_LOG_WARNING);
}

/*
 * Open "auto" as an application would, after the list measured every engine, and keep what
 * the core says about it: the engine picked and, for an accelerator, the batch sizes routed
 * to the CPU. On a GPU machine this is the routing decided on that device.
 */
static void backends_auto(void)
{
	struct graid_backend *be;
	int rc;

	backends_in_auto = true;
	graid_log_set(backends_log, NULL, GRAID_LOG_NOTICE);
	rc = graid_backend_open("auto", &be);
	graid_log_set(backends_log, NULL, GRAID_LOG_WARNING);
	backends_in_auto = false;
	if (rc == 0) {
		if (backends_nauto < BACKENDS_MAX_AUTO)
			snprintf(backends_auto_lines[backends_nauto++],
				 sizeof(backends_auto_lines[0]), "opened: %s",
				 graid_backend_name(be));
		graid_backend_close(be);
	} else if (backends_nauto < BACKENDS_MAX_AUTO) {
		snprintf(backends_auto_lines[backends_nauto++], sizeof(backends_auto_lines[0]),
			 "cannot be opened: %s", graid_strerror(rc));
	}
}

static void backends_json(const struct graid_backend_desc *d, int n)
{
	struct gctl_json j;

	gctl_json_init(&j, stdout);
	gctl_json_array_begin(&j, NULL);
	for (int i = 0; i < n; i++) {
		gctl_json_object_begin(&j, NULL);
		gctl_json_string(&j, "name", d[i].name);
		gctl_json_string(&j, "description", d[i].description);
		gctl_json_bool(&j, "usable", d[i].status == 0);
		gctl_json_int(&j, "status", d[i].status);
		gctl_json_string(&j, "status_text", backends_status(d[i].status));
		gctl_json_string(&j, "device", d[i].device);
		gctl_json_uint(&j, "flags", d[i].flags);
		if (d[i].gen_gbps > 0)
			gctl_json_double(&j, "gen_gbps", d[i].gen_gbps);
		else
			gctl_json_null(&j, "gen_gbps");
		if (!strcmp(d[i].name, "isal")) {
			gctl_json_array_begin(&j, "routines_measured");
			for (unsigned l = 0; l < backends_nlines; l++)
				gctl_json_string(&j, NULL, backends_lines[l]);
			gctl_json_array_end(&j);
		}
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	gctl_json_finish(&j);
}

static void backends_text(const struct graid_backend_desc *d, int n)
{
	printf("%-10s %-8s %8s  %s\n", "engine", "status", "GB/s", "device, else description");
	for (int i = 0; i < n; i++) {
		char gbps[16] = "-";

		if (d[i].gen_gbps > 0)
			snprintf(gbps, sizeof(gbps), "%.2f", d[i].gen_gbps);
		printf("%-10s %-8s %8s  %s\n", d[i].name, backends_status_word(d[i].status), gbps,
		       d[i].device[0] ? d[i].device : d[i].description);
	}
	if (backends_nlines)
		printf("\nCPU engine routines, timed at its first open (one thread, GB/s of data, "
		       "-> the one used):\n");
	for (unsigned l = 0; l < backends_nlines; l++)
		printf("  %s\n", backends_lines[l]);
	if (backends_nauto)
		printf("\nauto, as graid_backend_open(\"auto\") decides on this machine:\n");
	for (unsigned l = 0; l < backends_nauto; l++)
		printf("  %s\n", backends_auto_lines[l]);
}

int gctl_cmd_backends(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-measure", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_backend_desc *d;
	bool json = false;
	unsigned flags = GRAID_LIST_MEASURE;
	int c, n, got;

	while ((c = getopt_long(argc, argv, "jn", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'n':
			flags = 0;
			break;
		default:
			fprintf(stderr, "Try 'graidctl backends --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return gctl_usage_err("backends", "unexpected argument '%s'", argv[optind]);
	/* First, before anything else opens the CPU engine: its timing is logged once. */
	backends_cpu_routes();
	n = graid_backend_list(NULL, 0, 0);
	if (n < 0) {
		gctl_err("backends: %s", graid_strerror(n));
		return GCTL_EXIT_FAILED;
	}
	d = calloc((size_t)n + 1, sizeof(*d));
	if (!d) {
		gctl_err("backends: out of memory");
		return GCTL_EXIT_FAILED;
	}
	for (int i = 0; i < n; i++)
		d[i].struct_size = sizeof(d[i]);
	got = graid_backend_list(d, (unsigned)n, flags);
	if (got < 0) {
		gctl_err("backends: %s", graid_strerror(got));
		free(d);
		return GCTL_EXIT_FAILED;
	}
	/* An engine may appear between the two calls (a plugin dropped in); show what fits. */
	if (got > n)
		got = n;
	if (json) {
		backends_json(d, got);
	} else {
		if (flags & GRAID_LIST_MEASURE)
			backends_auto();
		backends_text(d, got);
	}
	free(d);
	return GCTL_EXIT_OK;
}
