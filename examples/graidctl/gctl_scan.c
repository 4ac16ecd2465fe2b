/* SPDX-License-Identifier: MIT */
/* Finding arrays: candidate devices from the config, each probed, grouped by array UUID. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_scan.h"

/* Two names for one device or file (a symlink, /dev/disk/by-id) are probed once. */
static int scan_same(const struct stat *a, const struct stat *b)
{
	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT))
		return 0;
	if (S_ISBLK(a->st_mode) || S_ISCHR(a->st_mode))
		return a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int gctl_scan_same(const struct stat *a, const struct stat *b)
{
	return scan_same(a, b);
}

static int scan_add(struct gctl_scan *s, const char *path, int named)
{
	struct gctl_scan_dev *nv;
	struct stat st;

	if (stat(path, &st)) {
		if (named)
			gctl_err("scan: %s: %s", path, strerror(errno));
		return 0;
	}
	for (int i = 0; i < s->ndev; i++) {
		if (strcmp(s->dev[i].path, path) == 0 || scan_same(&st, &s->dev[i].st)) {
			s->dev[i].named |= named;
			return 0;
		}
	}
	nv = realloc(s->dev, (size_t)(s->ndev + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->dev = nv;
	memset(&nv[s->ndev], 0, sizeof(nv[s->ndev]));
	if (!(nv[s->ndev].path = strdup(path)))
		return -ENOMEM;
	nv[s->ndev].st = st;
	nv[s->ndev++].named = named;
	return 0;
}

/* Every block device and partition the kernel lists, as /dev/NAME. */
static int scan_partitions(struct gctl_scan *s)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *e;
	char path[300];
	int rc = 0;

	if (!d)
		return 0; /* no sysfs (a container): nothing to find there */
	while (rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		if (access(path, F_OK) == 0)
			rc = scan_add(s, path, 0);
	}
	closedir(d);
	return rc;
}

static int scan_glob(struct gctl_scan *s, const char *pattern, int named)
{
	glob_t g;
	int rc = 0, grc = glob(pattern, 0, NULL, &g);

	if (grc == GLOB_NOMATCH) {
		if (named)
			gctl_err("scan: DEVICE %s: matches nothing", pattern);
		return 0;
	}
	if (grc)
		return grc == GLOB_NOSPACE ? -ENOMEM : 0;
	for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
		rc = scan_add(s, g.gl_pathv[i], named);
	globfree(&g);
	return rc;
}

/*
 * /dev/ngXnY is the same namespace as /dev/nvmeXnY (the library records both under the
 * block device's number, and refuses them together): where both were found, the block
 * device is kept, the generic device only where its block device is not a candidate.
 */
static void scan_drop_twins(struct gctl_scan *s)
{
	for (int i = 0; i < s->ndev; i++) {
		unsigned c, n;
		char twin[64], tail;

		if (sscanf(s->dev[i].path, "/dev/ng%un%u%c", &c, &n, &tail) != 2)
			continue;
		snprintf(twin, sizeof(twin), "/dev/nvme%un%u", c, n);
		for (int k = 0; k < s->ndev; k++) {
			if (strcmp(s->dev[k].path, twin))
				continue;
			free(s->dev[i].path);
			s->dev[i--] = s->dev[--s->ndev];
			break;
		}
	}
}

/* Is the device at @p path one that @p ca's members= names? */
static int scan_allowed(const struct gctl_conf_array *ca, const char *path)
{
	struct stat st, o;

	if (!ca || !ca->members)
		return 1;
	if (stat(path, &st))
		return 0;
	for (int i = 0; i < ca->nmembers; i++)
		if (!strcmp(ca->members[i], path) ||
		    (stat(ca->members[i], &o) == 0 && scan_same(&st, &o)))
			return 1;
	return 0;
}

int gctl_scan_probe_one(const char *path, struct graid_member_probe *p)
{
	int rc = graid_member_probe(path, p), fd;
	off_t end;

	if (rc != -EIO)
		return rc;
	/*
	 * Too short to hold a superblock (an extended partition's 1 KiB stub): no superblock,
	 * as the library says of a longer device without one, not a read error.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rc;
	end = lseek(fd, 0, SEEK_END);
	close(fd);
	if (end < 0 || end >= 4096)
		return rc;
	memset(p, 0, sizeof(*p));
	p->struct_size = sizeof(*p);
	return 0;
}

struct gctl_scan_array *gctl_scan_find(struct gctl_scan *s, const uint8_t uuid[16])
{
	for (int i = 0; i < s->narr; i++)
		if (!memcmp(s->arr[i].uuid, uuid, 16))
			return &s->arr[i];
	return NULL;
}

static int scan_group(const struct gctl_conf *c, struct gctl_scan *s, int i)
{
	const struct graid_member_probe *p = &s->dev[i].p;
	const struct gctl_conf_array *ca = c ? gctl_conf_find(c, p->array_uuid) : NULL;
	struct gctl_scan_array *a;
	int *nd;

	if (!scan_allowed(ca, s->dev[i].path))
		return 0;
	a = gctl_scan_find(s, p->array_uuid);
	if (!a) {
		a = realloc(s->arr, (size_t)(s->narr + 1) * sizeof(*a));
		if (!a)
			return -ENOMEM;
		s->arr = a;
		a = &s->arr[s->narr++];
		memset(a, 0, sizeof(*a));
		memcpy(a->uuid, p->array_uuid, 16);
		gctl_uuid_format(a->uuid, a->uuid_text);
		a->conf = ca;
		a->selected = ca || !c || c->auto_all;
	}
	nd = realloc(a->dev, (size_t)(a->ndev + 1) * sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	a->dev = nd;
	nd[a->ndev++] = i;
	if (a->ndev == 1 || p->events > a->events) {
		a->events = p->events;
		a->level = p->level;
		a->nmembers = p->nmembers;
	}
	return 0;
}

/*
 * Which roles are found, which of the others the array records failed already (a look: a
 * read-only open of what was found, no lock taken, nothing written), and who holds it.
 */
static void scan_roles(struct gctl_scan *s, struct gctl_scan_array *a)
{
	struct gctl_look l;
	char **m = gctl_scan_members(s, a);

	for (int k = 0; k < a->ndev; k++) {
		const struct graid_member_probe *p = &s->dev[a->dev[k]].p;

		if (p->role < a->nmembers && a->found[p->role] < 255)
			a->found[p->role]++;
		else if (p->role >= a->nmembers)
			a->nspares++;
	}
	if (m && gctl_look_open(m, a->ndev, &l) == 0) {
		a->holder_pid = l.info.holder_pid;
		snprintf(a->holder, sizeof(a->holder), "%s", l.info.holder);
		for (unsigned r = 0; r < a->nmembers && r < l.info.nmembers; r++)
			a->out_already[r] = !a->found[r] &&
					    l.info.member_state[r] == GRAID_MEMBER_FAILED;
		gctl_look_free(&l);
	}
	free(m);
	for (unsigned r = 0; r < a->nmembers; r++)
		a->nmissing += !a->found[r] && !a->out_already[r];
}

static int scan_cmp(const void *x, const void *y)
{
	return strcmp(((const struct gctl_scan_array *)x)->uuid_text,
		      ((const struct gctl_scan_array *)y)->uuid_text);
}

/* Probe every candidate, group by array, and look at each array found. */
static int scan_probe(const struct gctl_conf *c, struct gctl_scan *s)
{
	int rc = 0;

	scan_drop_twins(s);
	/* A probe's own log (a device without media, a partition table) is noise here. */
	gctl_log_hold();
	for (int i = 0; i < s->ndev; i++) {
		s->dev[i].p.struct_size = sizeof(s->dev[i].p);
		if (s->skip && s->skip(&s->dev[i].st, s->skip_arg))
			continue;
		s->dev[i].rc = gctl_scan_probe_one(s->dev[i].path, &s->dev[i].p);
		if (s->dev[i].rc == 0 && s->dev[i].p.has_superblock && rc == 0)
			rc = scan_group(c, s, i);
	}
	for (int i = 0; rc == 0 && i < s->narr; i++)
		scan_roles(s, &s->arr[i]);
	gctl_log_release(0);
	for (int i = 0; i < s->ndev; i++)
		if (s->dev[i].rc && s->dev[i].named)
			gctl_err("scan: %s: %s", s->dev[i].path, graid_strerror(s->dev[i].rc));
	if (rc == 0 && s->narr > 1)
		qsort(s->arr, (size_t)s->narr, sizeof(*s->arr), scan_cmp);
	return rc;
}

int gctl_scan_paths(const struct gctl_conf *c, char **paths, int n, struct gctl_scan *s)
{
	int rc = 0;

	memset(s, 0, sizeof(*s));
	for (int i = 0; rc == 0 && i < n; i++)
		rc = scan_add(s, paths[i], 1);
	return rc ? rc : scan_probe(c, s);
}

int gctl_scan_config(const struct gctl_conf *c, struct gctl_scan *s)
{
	return gctl_scan_config_skip(c, s, NULL, NULL);
}

int gctl_scan_config_skip(const struct gctl_conf *c, struct gctl_scan *s,
			  int (*skip)(const struct stat *st, void *arg), void *arg)
{
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->skip = skip;
	s->skip_arg = arg;
	for (int i = 0; rc == 0 && i < c->narrays; i++)
		for (int k = 0; rc == 0 && k < c->arrays[i].nmembers; k++)
			rc = scan_add(s, c->arrays[i].members[k], 1);
	if (c->ndevices == 0) {
		if (rc == 0)
			rc = scan_partitions(s);
		if (rc == 0)
			rc = scan_glob(s, "/dev/ng[0-9]*n[0-9]*", 0);
	}
	for (int i = 0; rc == 0 && i < c->ndevices; i++) {
		if (!strcmp(c->devices[i], "partitions"))
			rc = scan_partitions(s);
		else if (!strcmp(c->devices[i], "nvme-generic"))
			rc = scan_glob(s, "/dev/ng[0-9]*n[0-9]*", 0);
		else
			rc = scan_glob(s, c->devices[i], 1);
	}
	return rc ? rc : scan_probe(c, s);
}

void gctl_scan_free(struct gctl_scan *s)
{
	for (int i = 0; i < s->ndev; i++)
		free(s->dev[i].path);
	for (int i = 0; i < s->narr; i++)
		free(s->arr[i].dev);
	free(s->dev);
	free(s->arr);
	memset(s, 0, sizeof(*s));
}

char **gctl_scan_members(const struct gctl_scan *s, const struct gctl_scan_array *a)
{
	char **m = calloc((size_t)a->ndev + 1, sizeof(*m));

	for (int k = 0; m && k < a->ndev; k++)
		m[k] = s->dev[a->dev[k]].path;
	return m;
}

void gctl_scan_missing_text(const struct gctl_scan_array *a, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned r = 0; r < a->nmembers && off < len; r++)
		if (!a->found[r] && !a->out_already[r])
			off += (size_t)snprintf(buf + off, len - off, "%s%u", off ? ", " : "", r);
}
