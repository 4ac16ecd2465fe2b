/* SPDX-License-Identifier: MIT */
/* graid.conf's reader: ARRAY, DEVICE and AUTO lines, each bad one named by file and line. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gctl.h"
#include "gctl_conf.h"

static void conf_bad(const struct gctl_conf *c, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void conf_bad(const struct gctl_conf *c, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "graidctl: %s:%d: ", c->path, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int conf_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

int gctl_uuid_parse(const char *s, uint8_t uuid[16])
{
	int k = 0;

	if (strlen(s) != 36)
		return -EINVAL;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		if (conf_hex(s[i]) < 0 || conf_hex(s[i + 1]) < 0)
			return -EINVAL;
		uuid[k++] = (uint8_t)(conf_hex(s[i]) << 4 | conf_hex(s[i + 1]));
		i++;
	}
	return 0;
}

const char *gctl_serve_name(int serve)
{
	return serve == GCTL_SERVE_UBLK ? "ublk" : serve == GCTL_SERVE_NBDKIT ? "nbdkit" : "none";
}

/* Append @p s to a NULL-less string vector. */
static int conf_push(char ***v, int *n, const char *s)
{
	char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* members=PATH,PATH: absolute paths, so that the file means the same from any directory. */
static int conf_members(struct gctl_conf *c, int line, struct gctl_conf_array *a, char *list)
{
	char *save = NULL;

	if (!*list) {
		conf_bad(c, line, "members= is empty (give PATH,PATH,... or leave it out)");
		return -EINVAL;
	}
	for (char *p = list; *p; p++)
		if (*p == ',' && (p[1] == ',' || p[1] == '\0' || p == list)) {
			conf_bad(c, line, "members=%s: an empty path between commas", list);
			return -EINVAL;
		}
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (t[0] != '/') {
			conf_bad(c, line, "members=: '%s' is not an absolute path", t);
			return -EINVAL;
		}
		if (conf_push(&a->members, &a->nmembers, t))
			return -ENOMEM;
	}
	return 0;
}

static int conf_array(struct gctl_conf *c, int line, char **w, int nw)
{
	struct gctl_conf_array a = { .line = line }, *na;
	const struct gctl_conf_array *dup;
	int rc = -EINVAL;
	int seen_name = 0, seen_serve = 0;

	if (nw < 2) {
		conf_bad(c, line, "ARRAY needs the array's UUID (as graidctl status prints it)");
		return -EINVAL;
	}
	if (gctl_uuid_parse(w[1], a.uuid)) {
		conf_bad(c, line, "ARRAY: '%s' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
			 w[1]);
		return -EINVAL;
	}
	dup = gctl_conf_find(c, a.uuid);
	if (dup) {
		conf_bad(c, line, "ARRAY %s is listed twice (first at line %d)", w[1], dup->line);
		return -EINVAL;
	}
	for (int i = 2; i < nw; i++) {
		char *eq = strchr(w[i], '=');
		size_t klen = eq ? (size_t)(eq - w[i]) : strlen(w[i]);

		if (eq && klen == 4 && !strncasecmp(w[i], "name", 4)) {
			if (seen_name++ || !eq[1]) {
				conf_bad(c, line, seen_name > 1 ? "name= given twice" : "name= is empty");
				goto out;
			}
			free(a.name);
			if (!(a.name = strdup(eq + 1))) {
				rc = -ENOMEM;
				goto out;
			}
		} else if (eq && klen == 7 && !strncasecmp(w[i], "members", 7)) {
			if (a.members) {
				conf_bad(c, line, "members= given twice");
				goto out;
			}
			if ((rc = conf_members(c, line, &a, eq + 1)))
				goto out;
			rc = -EINVAL;
		} else if (eq && klen == 5 && !strncasecmp(w[i], "serve", 5)) {
			if (seen_serve++) {
				conf_bad(c, line, "serve= given twice");
				goto out;
			}
			if (!strcmp(eq + 1, "ublk")) {
				a.serve = GCTL_SERVE_UBLK;
			} else if (!strcmp(eq + 1, "nbdkit")) {
				a.serve = GCTL_SERVE_NBDKIT;
			} else if (!strcmp(eq + 1, "none")) {
				a.serve = GCTL_SERVE_NONE;
			} else {
				conf_bad(c, line, "serve=%s: 'ublk', 'nbdkit' or 'none'", eq + 1);
				goto out;
			}
		} else {
			conf_bad(c, line, "ARRAY: unknown field '%s' (name=, members=, serve=)", w[i]);
			goto out;
		}
	}
	na = realloc(c->arrays, (size_t)(c->narrays + 1) * sizeof(*na));
	if (!na) {
		rc = -ENOMEM;
		goto out;
	}
	c->arrays = na;
	c->arrays[c->narrays++] = a;
	return 0;
out:
	free(a.name);
	for (int i = 0; i < a.nmembers; i++)
		free(a.members[i]);
	free(a.members);
	return rc;
}

static int conf_device(struct gctl_conf *c, int line, char **w, int nw)
{
	if (nw < 2) {
		conf_bad(c, line, "DEVICE needs at least one word: a glob such as /dev/sd*, "
			 "'partitions' or 'nvme-generic'");
		return -EINVAL;
	}
	for (int i = 1; i < nw; i++) {
		if (strcmp(w[i], "partitions") && strcmp(w[i], "nvme-generic") && w[i][0] != '/') {
			conf_bad(c, line, "DEVICE: '%s' is neither an absolute path or glob, nor "
				 "'partitions' or 'nvme-generic'", w[i]);
			return -EINVAL;
		}
		if (conf_push(&c->devices, &c->ndevices, w[i]))
			return -ENOMEM;
	}
	return 0;
}

static int conf_line(struct gctl_conf *c, int line, char *s, int *seen_auto)
{
	char *w[64], *save = NULL;
	int nw = 0;

	/* A word that starts with '#' starts a comment: a '#' inside a path is part of it. */
	for (char *t = strtok_r(s, " \t\r\n", &save); t && *t != '#';
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (nw == 64) {
			conf_bad(c, line, "more than 64 words on one line");
			return -EINVAL;
		}
		w[nw++] = t;
	}
	if (nw == 0)
		return 0;
	if (!strcasecmp(w[0], "ARRAY"))
		return conf_array(c, line, w, nw);
	if (!strcasecmp(w[0], "DEVICE"))
		return conf_device(c, line, w, nw);
	if (!strcasecmp(w[0], "AUTO")) {
		if (nw != 2 || (strcmp(w[1], "yes") && strcmp(w[1], "no"))) {
			conf_bad(c, line, "AUTO takes one word: 'yes' (arrays without an ARRAY line "
				 "are started too) or 'no'");
			return -EINVAL;
		}
		if ((*seen_auto)++) {
			conf_bad(c, line, "AUTO given twice");
			return -EINVAL;
		}
		c->auto_all = !strcmp(w[1], "yes");
		return 0;
	}
	conf_bad(c, line, "unknown keyword '%s' (ARRAY, DEVICE or AUTO)", w[0]);
	return -EINVAL;
}

int gctl_conf_load(const char *path, struct gctl_conf *c)
{
	const char *env = getenv("GRAID_CONF");
	int dflt = !path && !(env && *env);
	char *buf = NULL;
	size_t cap = 0;
	int line = 0, rc = 0, seen_auto = 0;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->auto_all = 1;
	if (!path)
		path = dflt ? GCTL_CONF_DEFAULT : env;
	snprintf(c->path, sizeof(c->path), "%s", path);
	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		if (dflt && rc == -ENOENT) {
			c->path[0] = '\0';
			return 0;
		}
		gctl_err("%s: %s", path, strerror(-rc));
		return rc;
	}
	while (getline(&buf, &cap, f) > 0) {
		rc = conf_line(c, ++line, buf, &seen_auto);
		if (rc)
			break;
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		gctl_err("%s: reading: %s", path, strerror(EIO));
	}
	free(buf);
	fclose(f);
	if (rc)
		gctl_conf_free(c);
	return rc;
}

void gctl_conf_free(struct gctl_conf *c)
{
	for (int i = 0; i < c->narrays; i++) {
		free(c->arrays[i].name);
		for (int k = 0; k < c->arrays[i].nmembers; k++)
			free(c->arrays[i].members[k]);
		free(c->arrays[i].members);
	}
	free(c->arrays);
	for (int i = 0; i < c->ndevices; i++)
		free(c->devices[i]);
	free(c->devices);
	c->arrays = NULL;
	c->devices = NULL;
	c->narrays = c->ndevices = 0;
}

const struct gctl_conf_array *gctl_conf_find(const struct gctl_conf *c, const uint8_t uuid[16])
{
	for (int i = 0; i < c->narrays; i++)
		if (!memcmp(c->arrays[i].uuid, uuid, 16))
			return &c->arrays[i];
	return NULL;
}
