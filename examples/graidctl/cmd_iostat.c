/* SPDX-License-Identifier: MIT */
/* graidctl iostat: a served array's I/O rates, errors and latency histograms, from its holder. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

static const char *const iostat_kinds[GRAID_IO_KINDS] = { "read", "write", "flush", "discard" };

void gctl_help_iostat(FILE *f)
{
	gctl_print_cmd_usage(f, "iostat");
	fprintf(f,
		"\nShow the I/O of an array that a process serves (graid-ublk, the nbdkit plugin,\n"
		"any program with a control endpoint), as its holder counts it: per member role\n"
		"and hot spare, and for the array as its users asked it: operations per second,\n"
		"bandwidth and errors of reads, writes, flushes and discards. The first report\n"
		"covers the time since counting began (the holder's open, or a member's joining);\n"
		"with INTERVAL (seconds) a report follows each interval, of that interval alone,\n"
		"COUNT times (default: until interrupted). Trailing numbers are INTERVAL and COUNT,\n"
		"not members. An array nobody serves does no I/O: there is nothing to show.\n\n"
		"  -w, --latency  latency histograms instead (log2 buckets, as zpool iostat -w):\n"
		"                 turns the holder's histograms on (they stay on; they cost ~1%%)\n"
		"  -j, --json     each report as the endpoint's stats reply (one JSON per line)\n\n"
		"Exit status: 0 shown; 1 not served, or the holder did not answer; 2 usage error;\n"
		"5 the holder's libgraid has no statistics.\n");
}

/* A whole positive number that names no file: INTERVAL or COUNT. */
static bool iostat_number(const char *s, double *v)
{
	struct stat st;
	char *end;

	*v = strtod(s, &end);
	return *s && !*end && *v > 0 && stat(s, &st) != 0;
}

static struct json_object *iostat_kind(struct json_object *so, unsigned k)
{
	struct json_object *o = NULL;

	json_object_object_get_ex(so, iostat_kinds[k], &o);
	return o;
}

/* @p now less @p was (NULL: since the start) for counter @p key of kind @p k. */
static uint64_t iostat_delta(struct json_object *now, struct json_object *was, unsigned k,
			     const char *key)
{
	uint64_t a = gctl_ctl_u64(iostat_kind(now, k), key);
	uint64_t b = was ? gctl_ctl_u64(iostat_kind(was, k), key) : 0;

	return a >= b ? a - b : a; /* a new device in the role counts from zero */
}

static uint64_t iostat_bucket(struct json_object *so, unsigned k, unsigned b)
{
	struct json_object *h;

	if (!json_object_object_get_ex(iostat_kind(so, k), "latency", &h) ||
	    !json_object_is_type(h, json_type_array) || b >= json_object_array_length(h))
		return 0;
	return json_object_get_uint64(json_object_array_get_idx(h, b));
}

static void iostat_rate(char *buf, size_t size, double v)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	unsigned u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

/* @p secs: the interval; 0 the first report, since @p now's own start (its since_ns). */
static void iostat_row(const char *name, struct json_object *now, struct json_object *was,
		       double secs)
{
	char ops[GRAID_IO_KINDS][16], rbw[16], wbw[16];
	uint64_t errors = 0;

	if (!was)
		secs = gctl_now() - (double)gctl_ctl_u64(now, "since_ns") / 1e9;
	if (secs <= 0)
		secs = 1;

	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		iostat_rate(ops[k], sizeof(ops[k]), iostat_delta(now, was, k, "ops") / secs);
		errors += iostat_delta(now, was, k, "errors");
	}
	iostat_rate(rbw, sizeof(rbw), iostat_delta(now, was, GRAID_IO_READ, "bytes") / secs);
	iostat_rate(wbw, sizeof(wbw), iostat_delta(now, was, GRAID_IO_WRITE, "bytes") / secs);
	printf("%-28s %7s %7s %7s %7s %8s %8s %7llu\n", name, ops[0], ops[1], ops[2], ops[3], rbw,
	       wbw, (unsigned long long)errors);
}

/* The bucket's upper bound, as zpool iostat -w labels them: 1us, 2us, ... */
static void iostat_bucket_name(char *buf, size_t size, unsigned b)
{
	double ns = (double)(1ull << (b + 10));

	if (b == GRAID_LATENCY_BUCKETS - 1)
		snprintf(buf, size, "slower");
	else if (ns < 1e3)
		snprintf(buf, size, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.0fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.0fms", ns / 1e6);
	else
		snprintf(buf, size, "%.0fs", ns / 1e9);
}

static void iostat_hist(const char *name, struct json_object *now, struct json_object *was)
{
	bool any = false;

	printf("%s\n%-10s %10s %10s %10s %10s\n", name, "latency", iostat_kinds[0], iostat_kinds[1],
	       iostat_kinds[2], iostat_kinds[3]);
	for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++) {
		uint64_t c[GRAID_IO_KINDS];
		bool row = false;
		char label[16];

		for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
			uint64_t x = iostat_bucket(now, k, b), y = was ? iostat_bucket(was, k, b) : 0;

			c[k] = x >= y ? x - y : x;
			row |= c[k] != 0;
		}
		if (!row)
			continue;
		any = true;
		iostat_bucket_name(label, sizeof(label), b);
		printf("%-10s %10llu %10llu %10llu %10llu\n", label, (unsigned long long)c[0],
		       (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)c[3]);
	}
	if (!any) {
		uint64_t ops = 0;

		for (unsigned k = 0; k < GRAID_IO_KINDS; k++)
			ops += iostat_delta(now, was, k, "ops");
		/* Counted while the holder kept no histograms: in the rates, not here. */
		printf(ops ? "(%llu I/Os, none timed into the histograms: they were off)\n"
			   : "(no I/O)\n", (unsigned long long)ops);
	}
	printf("\n");
}

static struct json_object *iostat_member_of(struct json_object *st, size_t i)
{
	struct json_object *list;

	if (!st || !json_object_object_get_ex(st, "members", &list) ||
	    !json_object_is_type(list, json_type_array) || i >= json_object_array_length(list))
		return NULL;
	return json_object_array_get_idx(list, i);
}

static void iostat_report(struct json_object *now, struct json_object *was, bool hist,
			  double secs)
{
	struct json_object *arr = NULL, *warr = NULL;
	char name[64];

	json_object_object_get_ex(now, "array", &arr);
	if (was)
		json_object_object_get_ex(was, "array", &warr);
	if (!hist)
		printf("%-28s %7s %7s %7s %7s %8s %8s %7s\n", "", "read/s", "write/s", "flush/s",
		       "disc/s", "rd B/s", "wr B/s", "errors");
	if (hist)
		iostat_hist("array", arr, warr);
	else
		iostat_row("array", arr, warr, secs);
	for (size_t i = 0; iostat_member_of(now, i); i++) {
		struct json_object *m = iostat_member_of(now, i), *w = iostat_member_of(was, i);
		const char *path = gctl_ctl_str(m, "path"), *base = strrchr(path, '/');

		/* The device's last path component: names stay in the column, as zpool's do. */
		snprintf(name, sizeof(name), "  %s %llu %.16s",
			 gctl_ctl_bool(m, "spare") ? "spare" : "role",
			 (unsigned long long)gctl_ctl_u64(m, "role"), *path ? (base ? base + 1 : path)
									 : "(missing)");
		if (hist)
			iostat_hist(name, m, w);
		else
			iostat_row(name, m, w, secs);
	}
	if (!hist)
		printf("\n");
	fflush(stdout);
}

/* The holder's stats reply, or NULL with the reason told; *ex the exit code then. */
static struct json_object *iostat_ask(struct gctl_ctl *c, bool hist, int *ex)
{
	struct json_object *req = json_object_new_object(), *st = NULL;
	char why[256];
	int rc;

	json_object_object_add(req, "op", json_object_new_string("stats"));
	if (hist)
		json_object_object_add(req, "histograms", json_object_new_boolean(1));
	rc = gctl_ctl_call(c, req, &st, why, sizeof(why));
	json_object_put(req);
	if (rc == 0)
		return st;
	if (gctl_ctl_unknown_op(rc, why)) {
		gctl_err("iostat: the holder's libgraid (%s) keeps no I/O statistics", c->version);
		*ex = GCTL_EXIT_UNSUPPORTED;
	} else {
		gctl_err("iostat: the holder's control endpoint %s: %s", c->path, why);
		*ex = GCTL_EXIT_FAILED;
	}
	return NULL;
}

/* Connect to the array's holder; GCTL_EXIT_OK, or the exit code with the reason told. */
static int iostat_connect(char **members, int n, struct gctl_ctl *c)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct graid_array *a;
	char path[108], why[256];
	int ex, rc;

	ex = gctl_open("iostat", members, n, NULL, GCTL_OPEN_LOOK, &a);
	if (ex != GCTL_EXIT_OK)
		return ex;
	rc = graid_array_info(a, &in);
	if (rc == 0 && !in.holder_pid) {
		gctl_close("iostat", a);
		gctl_err("iostat: no process holds this array: it is not served, so it does no I/O "
			 "and there is none to show");
		return GCTL_EXIT_FAILED;
	}
	rc = rc ? rc : graid_array_control_path(a, NULL, path, sizeof(path));
	gctl_close("iostat", a);
	if (rc) {
		gctl_err("iostat: %s", graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	gctl_ctl_init(c);
	rc = gctl_ctl_connect(c, path, why, sizeof(why));
	if (rc == -ENOENT || rc == -ECONNREFUSED) {
		gctl_err("iostat: %s holds the array without a control endpoint: its I/O counters "
			 "are inside that process only (graid_array_stats())", in.holder);
		return GCTL_EXIT_FAILED;
	}
	if (rc) {
		gctl_err("iostat: the holder's control endpoint %s: %s", path, why);
		return GCTL_EXIT_FAILED;
	}
	return GCTL_EXIT_OK;
}

int gctl_cmd_iostat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "latency", no_argument, NULL, 'w' }, { "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 } };
	struct json_object *was = NULL, *now;
	double interval = 0, count = 0, v, t_was = 0, t_now;
	bool hist = false, json = false;
	struct gctl_ctl c;
	int ch, n, ex = GCTL_EXIT_OK;

	while ((ch = getopt_long(argc, argv, "wj", opts, NULL)) != -1) {
		if (ch == 'w') {
			hist = true;
		} else if (ch == 'j') {
			json = true;
		} else {
			fprintf(stderr, "Try 'graidctl iostat --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	n = argc - optind;
	/* [INTERVAL [COUNT]] at the end: numbers that name no file. */
	if (n >= 2 && iostat_number(argv[optind + n - 1], &v) &&
	    iostat_number(argv[optind + n - 2], &interval)) {
		count = v;
		n -= 2;
	} else if (n >= 1 && iostat_number(argv[optind + n - 1], &interval)) {
		n -= 1;
	}
	if (n < 1)
		return gctl_usage_err("iostat", "no members given");
	if (n > GRAID_MAX_MEMBERS)
		return gctl_usage_err("iostat", "%d members given; at most %d", n, GRAID_MAX_MEMBERS);
	ex = iostat_connect(argv + optind, n, &c);
	if (ex != GCTL_EXIT_OK)
		return ex;
	gctl_ctl_catch_sigint(1);
	now = iostat_ask(&c, hist, &ex);
	t_now = gctl_now();
	for (unsigned i = 1; now; i++) {
		double secs;

		if (json) {
			printf("%s\n", json_object_to_json_string_ext(now, JSON_C_TO_STRING_PLAIN));
		} else {
			secs = was ? t_now - t_was : 0;
			if (hist && !gctl_ctl_bool(now, "histograms"))
				printf("(the holder keeps no latency histograms)\n");
			iostat_report(now, was, hist, secs);
		}
		json_object_put(was);
		was = now;
		now = NULL;
		t_was = t_now;
		if (!interval || (count && i >= count))
			break;
		if (gctl_ctl_sleep(interval))
			break;
		now = iostat_ask(&c, hist, &ex);
		t_now = gctl_now();
	}
	json_object_put(was);
	gctl_ctl_catch_sigint(0);
	gctl_ctl_close(&c);
	return ex;
}
