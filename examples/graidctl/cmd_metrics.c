/* SPDX-License-Identifier: MIT */
/* graidctl metrics: every array's metrics for node_exporter's textfile collector (docs/METRICS.md). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"
#include "gctl_metrics.h"
#include "gctl_scan.h"

void gctl_help_metrics(FILE *f)
{
	gctl_print_cmd_usage(f, "metrics");
	fprintf(f,
		"\nWrite the metrics of every array on this host in Prometheus's text format\n"
		"(docs/METRICS.md), for node_exporter's textfile collector: the arrays that the\n"
		"config's devices carry, as `list --scan` finds them, or the one on MEMBER...\n"
		"An array a live process serves is asked through its control endpoint (the\n"
		"holder's own view: rebuild progress, scrubs, events); the others are looked at\n"
		"read-only, which writes nothing on any member. An array no look can open (too\n"
		"many members gone) is written from its superblocks: graid_state failed,\n"
		"graid_degraded, graid_disks, graid_up 0.\n\n"
		"  -o, --output FILE  write FILE atomically (a temporary file in its directory,\n"
		"                     renamed over it), e.g. /var/lib/prometheus/node-exporter/\n"
		"                     graid.prom; default: stdout\n"
		"  -c, --config FILE  the config the scan reads (as assemble --scan)\n"
		"      --no-health    do not read the drives' health (no NVMe admin command)\n\n"
		"Exit status: 0 written; 1 an array could not be read (the others are written,\n"
		"so is its superblocks' view, and the message names it) or the file could not\n"
		"be written; 2 bad usage.\n");
}

/* The holder's render of its array; NULL (said why on stderr) when it cannot give one. */
static char *metrics_served(const char *ctl_path, const char *label, int health)
{
	struct gctl_ctl c;
	struct json_object *req, *reply = NULL;
	char why[256], *text = NULL;
	int rc;

	gctl_ctl_init(&c);
	rc = gctl_ctl_connect(&c, ctl_path, why, sizeof(why));
	if (rc == 0) {
		req = json_object_new_object();
		json_object_object_add(req, "op", json_object_new_string("metrics"));
		if (!health)
			json_object_object_add(req, "health", json_object_new_boolean(0));
		rc = gctl_ctl_call(&c, req, &reply, why, sizeof(why));
		json_object_put(req);
	}
	if (rc == 0) {
		text = strdup(gctl_ctl_str(reply, "text"));
		json_object_put(reply);
	} else {
		gctl_err("metrics: array %s: its holder's control endpoint %s: %s; reading it "
			 "read-only instead (the superblocks' view)", label, ctl_path, why);
	}
	gctl_ctl_close(&c);
	return text;
}

/* Where the holder of the array @p uuid serves its control endpoint (docs/CONTROL.md). */
static int metrics_ctl_path(const char *uuid, char *buf, size_t size)
{
	const char *run = getenv("GRAID_RUN_DIR");
	int n;

	if (!run || !*run)
		run = "/run/graid";
	n = snprintf(buf, size, "%s/%s.ctl", run, uuid);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/*
 * One array the scan found: through its holder when the superblocks name a live one (asked
 * first: a look can be refused where the holder still answers), else a read-only look kept
 * in @p looks for the render of the unserved ones, else what the superblocks say. 0, or 1
 * when it could not be read (said why).
 */
static int metrics_one(const struct gctl_scan *s, const struct gctl_scan_array *sa, int health,
		       struct gctl_metrics_merge *m, struct graid_array **looks, unsigned *nlooks)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = "ref",
					.flags = GRAID_OPEN_READ_ONLY };
	struct graid_array *a;
	char ctl[108], **members, *text;
	int rc;

	if (sa->holder_pid && metrics_ctl_path(sa->uuid_text, ctl, sizeof(ctl)) == 0) {
		text = metrics_served(ctl, sa->uuid_text, health);
		if (text) {
			rc = gctl_metrics_merge_add(m, text);
			free(text);
			if (rc == 0)
				rc = gctl_metrics_up(m, sa->uuid_text, 1);
			if (rc)
				gctl_err("metrics: array %s: the holder's text: %s", sa->uuid_text,
					 graid_strerror(rc));
			return rc ? 1 : 0;
		}
	}
	members = gctl_scan_members(s, sa);
	if (!members) {
		gctl_err("metrics: array %s: %s", sa->uuid_text, strerror(ENOMEM));
		return 1;
	}
	gctl_log_hold();
	rc = graid_array_open((const char *const *)members, (unsigned)sa->ndev, &o, &a);
	gctl_log_release(rc != 0);
	free(members);
	if (rc) {
		gctl_err("metrics: array %s: %s; writing what its superblocks say", sa->uuid_text,
			 graid_strerror(rc));
		if (gctl_metrics_superblocks(m, sa, rc) || gctl_metrics_up(m, sa->uuid_text, 0))
			gctl_err("metrics: array %s: %s", sa->uuid_text, strerror(ENOMEM));
		return 1;
	}
	looks[(*nlooks)++] = a;
	if (gctl_metrics_up(m, sa->uuid_text, 1)) {
		gctl_err("metrics: array %s: %s", sa->uuid_text, strerror(ENOMEM));
		return 1;
	}
	return 0;
}

/* The arrays the config's devices carry, or those on @p paths (@p npaths > 0). */
static int metrics_scan(const char *config, char **paths, int npaths, int health,
			struct gctl_metrics_merge *m, struct graid_array ***looks,
			unsigned *nlooks)
{
	struct gctl_conf c;
	struct gctl_scan s;
	int bad = 0, rc;

	if (npaths == 0 && gctl_conf_load(config, &c))
		return 1;
	rc = npaths ? gctl_scan_paths(NULL, paths, npaths, &s) : gctl_scan_config(&c, &s);
	if (rc) {
		gctl_err("metrics: scan: %s", strerror(ENOMEM));
		if (!npaths)
			gctl_conf_free(&c);
		return 1;
	}
	if (npaths && s.narr == 0) {
		gctl_err("metrics: no libgraid superblock on %s%s", paths[0],
			 npaths > 1 ? " and the others named" : "");
		bad = 1;
	}
	*looks = calloc((size_t)s.narr + 1, sizeof(**looks));
	for (int i = 0; *looks && i < s.narr; i++)
		bad |= metrics_one(&s, &s.arr[i], health, m, *looks, nlooks);
	if (!*looks) {
		gctl_err("metrics: %s", strerror(ENOMEM));
		bad = 1;
	}
	gctl_scan_free(&s);
	if (!npaths)
		gctl_conf_free(&c);
	return bad;
}

/* FILE written whole or not at all: a temporary file beside it, then rename(). */
static int metrics_output(const char *path, const struct gctl_metrics_merge *m)
{
	char *dup = strdup(path), *base = strdup(path), *tmp = NULL;
	FILE *f = NULL;
	int fd = -1, rc = -ENOMEM;

	/* POSIX dirname() and basename() may write into what they are given: a copy each. */
	if (dup && base && asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dup), basename(base)) < 0)
		tmp = NULL;
	if (tmp && (fd = mkstemp(tmp)) < 0)
		rc = -errno;
	if (fd >= 0 && !(f = fdopen(fd, "w"))) {
		rc = -errno;
		close(fd);
	}
	if (f) {
		rc = gctl_metrics_merge_write(m, f);
		/* The collector reads it as node_exporter's user: readable, as the file it replaces. */
		if (rc == 0 && fchmod(fileno(f), 0644))
			rc = -errno;
		if (rc == 0 && fsync(fileno(f)))
			rc = -errno;
		if (fclose(f) && rc == 0)
			rc = -EIO;
		if (rc == 0 && rename(tmp, path))
			rc = -errno;
		if (rc)
			unlink(tmp);
	}
	if (rc)
		gctl_err("metrics: writing %s: %s", path, strerror(-rc));
	free(tmp);
	free(base);
	free(dup);
	return rc;
}

int gctl_cmd_metrics(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "config", required_argument, NULL, 'c' },
		{ "no-health", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *config = NULL;
	struct gctl_metrics_merge *m;
	struct graid_array **looks = NULL;
	unsigned nlooks = 0;
	int c, health = 1, bad = 0, rc;

	while ((c = getopt_long(argc, argv, "o:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'H':
			health = 0;
			break;
		case 'h':
			gctl_help_metrics(stdout);
			return GCTL_EXIT_OK;
		default:
			gctl_help_metrics(stderr);
			return GCTL_EXIT_USAGE;
		}
	}
	if (output && !*output)
		return gctl_usage_err("metrics", "--output: a file name, not ''");
	if (config && optind < argc)
		return gctl_usage_err("metrics", "--config goes with the scan, not with MEMBER...");
	m = gctl_metrics_merge_new();
	if (!m) {
		gctl_err("metrics: %s", strerror(ENOMEM));
		return GCTL_EXIT_FAILED;
	}
	bad = metrics_scan(config, argv + optind, argc - optind, health, m, &looks, &nlooks);
	if (nlooks) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		rc = f ? graid_metrics_write(f, looks, NULL, nlooks,
					     health ? 0 : GRAID_METRICS_NO_HEALTH) : -ENOMEM;
		if (f && fclose(f) && !rc)
			rc = -ENOMEM;
		if (rc == 0)
			rc = gctl_metrics_merge_add(m, text);
		if (rc) {
			gctl_err("metrics: %s", graid_strerror(rc));
			bad = 1;
		}
		free(text);
	}
	for (unsigned i = 0; i < nlooks; i++)
		graid_array_close(looks[i]);
	free(looks);
	rc = output ? metrics_output(output, m) : gctl_metrics_merge_write(m, stdout);
	if (rc && !output)
		gctl_err("metrics: writing to stdout: %s", strerror(-rc));
	gctl_metrics_merge_free(m);
	return rc || bad ? GCTL_EXIT_FAILED : GCTL_EXIT_OK;
}
