/* SPDX-License-Identifier: MIT */
/* assemble --scan and list --scan: every array found on this host's devices, started or shown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_json.h"
#include "gctl_scan.h"

void gctl_scan_label(const struct gctl_scan_array *a, char *buf, size_t len)
{
	if (a->conf && a->conf->name)
		snprintf(buf, len, "%s (%s)", a->uuid_text, a->conf->name);
	else
		snprintf(buf, len, "%s", a->uuid_text);
}

/*
 * serve=: the service is started, not run here (udev kills what it runs after a while).
 * $GRAID_SERVE_CMD replaces systemctl (another init, or a test); it runs with /bin/sh
 * and finds the array in GRAID_ARRAY_UUID, the way in GRAID_SERVE.
 */
static int scan_serve(const char *cmd, const struct gctl_scan_array *a, const char *label)
{
	const char *sh = getenv("GRAID_SERVE_CMD");
	int st;

	if (!a->conf || a->conf->serve == GCTL_SERVE_NONE)
		return GCTL_EXIT_OK;
	if (!sh || !*sh)
		sh = "exec systemctl --no-block start \"graid-$GRAID_SERVE@$GRAID_ARRAY_UUID.service\"";
	if (setenv("GRAID_ARRAY_UUID", a->uuid_text, 1) ||
	    setenv("GRAID_SERVE", gctl_serve_name(a->conf->serve), 1) ||
	    setenv("GRAID_ARRAY_NAME", a->conf->name ? a->conf->name : "", 1)) {
		gctl_err("%s: %s: %s", cmd, label, strerror(errno));
		return GCTL_EXIT_FAILED;
	}
	fflush(stdout);
	st = system(sh);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		gctl_err("%s: %s: starting its %s service failed (%s: %s %d)", cmd, label,
			 gctl_serve_name(a->conf->serve), sh,
			 st != -1 && WIFSIGNALED(st) ? "signal" : "exit",
			 st == -1 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		return GCTL_EXIT_FAILED;
	}
	printf("%s: %s service started\n", label, gctl_serve_name(a->conf->serve));
	return GCTL_EXIT_OK;
}

int gctl_scan_start(const char *cmd, const struct gctl_scan *s, const struct gctl_scan_array *a,
		    unsigned how, int rebuild, uint64_t rate)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *arr;
	char **m = gctl_scan_members(s, a), label[128];
	int ex;

	gctl_scan_label(a, label, sizeof(label));
	if (!m) {
		gctl_err("%s: %s: %s", cmd, label, strerror(ENOMEM));
		return GCTL_EXIT_FAILED;
	}
	ex = gctl_open(cmd, m, a->ndev, NULL, how, &arr);
	free(m);
	if (ex != GCTL_EXIT_OK) {
		gctl_err("%s: %s: not assembled", cmd, label);
		return ex;
	}
	if (rebuild)
		ex = gctl_rebuild(cmd, arr, rate);
	if (ex != GCTL_EXIT_FAILED && graid_array_info(arr, &info) == 0) {
		printf("%s: assembled RAID-%d: %u of %u roles in sync\n", label, info.level,
		       info.nmembers - info.nfailed, info.nmembers);
		if (info.nfailed)
			ex = GCTL_EXIT_DEGRADED;
		/* Opened with the crash's resync in the background, closed before it ended. */
		if (info.unclean) {
			printf("%s: not closed cleanly before: its resync (%llu regions) was under "
			       "way at close; what it did not reach, whoever opens it next resyncs\n",
			       label, (unsigned long long)info.resync_regions);
			ex = GCTL_EXIT_DEGRADED;
		}
	}
	if (gctl_close(cmd, arr) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	if (ex == GCTL_EXIT_OK || ex == GCTL_EXIT_DEGRADED) {
		int sx = scan_serve(cmd, a, label);

		if (sx != GCTL_EXIT_OK)
			ex = sx;
	}
	return ex;
}

/* The worse of two outcomes: a failure over "needs attention" over done. */
static int scan_worse(int ex, int other)
{
	if (other == GCTL_EXIT_OK)
		return ex;
	if (other == GCTL_EXIT_DEGRADED)
		return ex == GCTL_EXIT_OK ? GCTL_EXIT_DEGRADED : ex;
	return GCTL_EXIT_FAILED;
}

int gctl_assemble_scan(const char *config, unsigned how, int rebuild, uint64_t rate)
{
	struct gctl_conf c;
	struct gctl_scan s;
	int ex = GCTL_EXIT_OK, any = 0;

	if (gctl_conf_load(config, &c))
		return GCTL_EXIT_FAILED;
	if (gctl_scan_config(&c, &s)) {
		gctl_err("assemble: scan: %s", strerror(ENOMEM));
		gctl_conf_free(&c);
		return GCTL_EXIT_FAILED;
	}
	for (int i = 0; i < s.narr; i++) {
		const struct gctl_scan_array *a = &s.arr[i];
		char label[128], missing[1024];

		gctl_scan_label(a, label, sizeof(label));
		if (!a->selected) {
			printf("%s: no ARRAY line in %s, and AUTO is no: left alone\n", label,
			       c.path);
			continue;
		}
		any = 1;
		if (a->holder_pid) {
			printf("%s: already held by %s: left alone\n", label, a->holder);
			continue;
		}
		if (a->nmissing && !gctl_degraded_ok) {
			gctl_scan_missing_text(a, missing, sizeof(missing));
			printf("%s: RAID-%d, role%s %s missing (%u of %u found): left alone; "
			       "--degraded assembles it without %s\n", label, a->level,
			       a->nmissing > 1 ? "s" : "", missing, a->nmembers - a->nmissing,
			       a->nmembers, a->nmissing > 1 ? "them" : "it");
			ex = scan_worse(ex, GCTL_EXIT_DEGRADED);
			continue;
		}
		ex = scan_worse(ex, gctl_scan_start("assemble", &s, a, how, rebuild, rate));
	}
	for (int i = 0; i < c.narrays; i++) {
		char uuid[37];

		if (gctl_scan_find(&s, c.arrays[i].uuid))
			continue;
		gctl_uuid_format(c.arrays[i].uuid, uuid);
		printf("%s%s%s%s: listed in %s line %d, but no member of it was found\n", uuid,
		       c.arrays[i].name ? " (" : "", c.arrays[i].name ? c.arrays[i].name : "",
		       c.arrays[i].name ? ")" : "", c.path, c.arrays[i].line);
		any = 1;
		ex = scan_worse(ex, GCTL_EXIT_DEGRADED);
	}
	if (!any)
		printf("no arrays found\n");
	gctl_scan_free(&s);
	gctl_conf_free(&c);
	return ex;
}

static void list_scan_text(const struct gctl_conf *c, const struct gctl_scan *s)
{
	if (!s->narr && !c->narrays) {
		printf("no arrays found\n");
		return;
	}
	printf("%-36s %-12s %-7s %-7s %-6s %-6s  %s\n", "UUID", "NAME", "LEVEL", "FOUND",
	       "SPARES", "SERVE", "STATE");
	for (int i = 0; i < s->narr; i++) {
		const struct gctl_scan_array *a = &s->arr[i];
		char found[32], state[1200], missing[1024];

		snprintf(found, sizeof(found), "%u/%u", a->nmembers - a->nmissing, a->nmembers);
		gctl_scan_missing_text(a, missing, sizeof(missing));
		if (a->holder_pid)
			snprintf(state, sizeof(state), "held by %s", a->holder);
		else if (a->nmissing)
			snprintf(state, sizeof(state), "incomplete: role%s %s missing",
				 a->nmissing > 1 ? "s" : "", missing);
		else
			snprintf(state, sizeof(state), "complete");
		if (!a->selected)
			snprintf(state + strlen(state), sizeof(state) - strlen(state),
				 " (not started: no ARRAY line, AUTO no)");
		printf("%-36s %-12s raid%-3d %-7s %-6u %-6s  %s\n", a->uuid_text,
		       a->conf && a->conf->name ? a->conf->name : "-", a->level, found, a->nspares,
		       a->conf ? gctl_serve_name(a->conf->serve) : "none", state);
		for (int k = 0; k < a->ndev; k++) {
			const struct gctl_scan_dev *d = &s->dev[a->dev[k]];

			if (d->p.role < a->nmembers)
				printf("    %s role %u %s events %llu\n", d->path, d->p.role,
				       gctl_state_name(d->p.state), (unsigned long long)d->p.events);
			else
				printf("    %s spare\n", d->path);
		}
	}
	for (int i = 0; i < c->narrays; i++) {
		char uuid[37];

		if (gctl_scan_find((struct gctl_scan *)s, c->arrays[i].uuid))
			continue;
		gctl_uuid_format(c->arrays[i].uuid, uuid);
		printf("%-36s %-12s %-7s %-7s %-6s %-6s  %s\n", uuid,
		       c->arrays[i].name ? c->arrays[i].name : "-", "-", "0/?", "-",
		       gctl_serve_name(c->arrays[i].serve), "no member found");
	}
}

static void list_scan_json(const struct gctl_conf *c, const struct gctl_scan *s)
{
	struct gctl_json j;

	gctl_json_init(&j, stdout);
	gctl_json_object_begin(&j, NULL);
	if (c->path[0])
		gctl_json_string(&j, "config", c->path);
	else
		gctl_json_null(&j, "config");
	gctl_json_bool(&j, "auto", c->auto_all);
	gctl_json_array_begin(&j, "arrays");
	for (int i = 0; i < s->narr; i++) {
		const struct gctl_scan_array *a = &s->arr[i];

		gctl_json_object_begin(&j, NULL);
		gctl_json_string(&j, "uuid", a->uuid_text);
		if (a->conf && a->conf->name)
			gctl_json_string(&j, "name", a->conf->name);
		else
			gctl_json_null(&j, "name");
		gctl_json_bool(&j, "listed", a->conf != NULL);
		gctl_json_bool(&j, "selected", a->selected);
		gctl_json_string(&j, "serve", a->conf ? gctl_serve_name(a->conf->serve) : "none");
		gctl_json_int(&j, "level", a->level);
		gctl_json_uint(&j, "nmembers", a->nmembers);
		gctl_json_uint(&j, "found", a->nmembers - a->nmissing);
		gctl_json_uint(&j, "spares", a->nspares);
		gctl_json_bool(&j, "complete", a->nmissing == 0);
		gctl_json_array_begin(&j, "missing_roles");
		for (unsigned r = 0; r < a->nmembers; r++)
			if (!a->found[r] && !a->out_already[r])
				gctl_json_uint(&j, NULL, r);
		gctl_json_array_end(&j);
		gctl_json_array_begin(&j, "failed_roles");
		for (unsigned r = 0; r < a->nmembers; r++)
			if (a->out_already[r])
				gctl_json_uint(&j, NULL, r);
		gctl_json_array_end(&j);
		if (a->holder_pid)
			gctl_json_string(&j, "holder", a->holder);
		else
			gctl_json_null(&j, "holder");
		gctl_json_array_begin(&j, "devices");
		for (int k = 0; k < a->ndev; k++) {
			const struct gctl_scan_dev *d = &s->dev[a->dev[k]];

			gctl_json_object_begin(&j, NULL);
			gctl_json_string(&j, "path", d->path);
			gctl_json_uint(&j, "role", d->p.role);
			gctl_json_bool(&j, "spare", d->p.role >= a->nmembers);
			gctl_json_string(&j, "state", gctl_state_name(d->p.state));
			gctl_json_uint(&j, "events", d->p.events);
			gctl_json_object_end(&j);
		}
		gctl_json_array_end(&j);
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	/* ARRAY lines none of whose members was found. */
	gctl_json_array_begin(&j, "not_found");
	for (int i = 0; i < c->narrays; i++) {
		char uuid[37];

		if (gctl_scan_find((struct gctl_scan *)s, c->arrays[i].uuid))
			continue;
		gctl_uuid_format(c->arrays[i].uuid, uuid);
		gctl_json_object_begin(&j, NULL);
		gctl_json_string(&j, "uuid", uuid);
		if (c->arrays[i].name)
			gctl_json_string(&j, "name", c->arrays[i].name);
		else
			gctl_json_null(&j, "name");
		gctl_json_uint(&j, "line", (unsigned)c->arrays[i].line);
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	gctl_json_object_end(&j);
	gctl_json_finish(&j);
}

int gctl_list_scan(const char *config, int json, const char *members_of)
{
	struct gctl_conf c;
	struct gctl_scan s;
	uint8_t uuid[16];
	int ex = GCTL_EXIT_OK;

	if (members_of && gctl_uuid_parse(members_of, uuid))
		return gctl_usage_err("list", "--members-of: '%s' is not a UUID", members_of);
	if (gctl_conf_load(config, &c))
		return GCTL_EXIT_FAILED;
	if (gctl_scan_config(&c, &s)) {
		gctl_err("list: scan: %s", strerror(ENOMEM));
		gctl_conf_free(&c);
		return GCTL_EXIT_FAILED;
	}
	if (members_of) {
		const struct gctl_scan_array *a = gctl_scan_find(&s, uuid);
		char missing[1024];

		if (!a) {
			gctl_err("list: no member of array %s found", members_of);
			ex = GCTL_EXIT_FAILED;
		} else {
			for (int k = 0; k < a->ndev; k++)
				printf("%s\n", s.dev[a->dev[k]].path);
			gctl_scan_missing_text(a, missing, sizeof(missing));
			if (a->nmissing)
				gctl_err("list: array %s: role%s %s not found", members_of,
					 a->nmissing > 1 ? "s" : "", missing);
		}
	} else if (json) {
		list_scan_json(&c, &s);
	} else {
		list_scan_text(&c, &s);
	}
	gctl_scan_free(&s);
	gctl_conf_free(&c);
	return ex;
}
