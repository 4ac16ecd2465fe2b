/* SPDX-License-Identifier: MIT */
/*
 * Paths to an NVMe member and identity specs, from sysfs. The kernel keeps a fabric
 * controller while it reconnects (state "connecting") and deletes it when ctrl_loss_tmo
 * passes; with native multipath one namespace head (/dev/nvmeXnY) is served by every
 * controller of its subsystem. Reading those few attributes is what tells a path outage
 * from a lost drive (docs/REMOTE.md).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "member/member_path.h"
#include "format/superblock.h"
#include "member/member.h"

/* The first line of a sysfs attribute, without its newline; false when it cannot be read. */
static bool sysfs_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(out, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	out[strcspn(out, "\n")] = '\0';
	return true;
}

void member_sysfs_link_base(const char *link, char *out, size_t len)
{
	char target[PATH_MAX];
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	const char *b;

	out[0] = '\0';
	if (n <= 0)
		return;
	target[n] = '\0';
	b = strrchr(target, '/');
	snprintf(out, len, "%.*s", (int)len - 1, b ? b + 1 : target);
}

/* "nvme12" exactly: a controller's name (not a namespace "nvme1n1" nor "nvme-subsys1"). */
static bool is_ctrl_name(const char *name)
{
	unsigned x;
	int n = 0;

	return sscanf(name, "nvme%u%n", &x, &n) == 1 && name[n] == '\0';
}

static bool state_reconnecting(const char *s)
{
	return !strcmp(s, "connecting") || !strcmp(s, "resetting") || !strcmp(s, "new");
}

/* Count one controller; the first live one (else the first) is the one reported. */
static void paths_add(struct member_paths *p, const char *ctrl)
{
	char dir[96], state[16], transport[16], v[128];
	bool live;

	snprintf(dir, sizeof(dir), "/sys/class/nvme/%.31s/state", ctrl);
	if (!sysfs_line(dir, state, sizeof(state)))
		return; /* deleted while we looked */
	snprintf(dir, sizeof(dir), "/sys/class/nvme/%.31s/transport", ctrl);
	if (!sysfs_line(dir, transport, sizeof(transport)))
		transport[0] = '\0';
	p->paths++;
	live = !strcmp(state, "live");
	p->live += live;
	p->reconnecting += state_reconnecting(state);
	/* The NVMe-oF transports; anything else (pcie, apple-nvme, ...) is a local drive. */
	if (!strcmp(transport, "tcp") || !strcmp(transport, "rdma") || !strcmp(transport, "fc") ||
	    !strcmp(transport, "loop"))
		p->fabric = true;
	if (p->paths > 1 && (!live || p->live > 1))
		return; /* keep the one reported before */
	snprintf(p->ctrl, sizeof(p->ctrl), "%s", ctrl);
	snprintf(p->state, sizeof(p->state), "%s", state);
	snprintf(p->transport, sizeof(p->transport), "%s", transport);
	snprintf(dir, sizeof(dir), "/sys/class/nvme/%.31s/address", ctrl);
	if (sysfs_line(dir, v, sizeof(v)))
		snprintf(p->address, sizeof(p->address), "%s", v);
	else
		p->address[0] = '\0';
}

/* A namespace head's controllers: every controller linked under its subsystem. */
static void paths_of_subsystem(struct member_paths *p, const char *subsys)
{
	char dir[96];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/sys/class/nvme-subsystem/%.40s", subsys);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (is_ctrl_name(e->d_name))
			paths_add(p, e->d_name);
	closedir(d);
}

void member_paths_read(const struct member *m, struct member_paths *p)
{
	char state[16];

	memset(p, 0, sizeof(*p));
	if (m->dev.fault && fault_fabric_state(m->dev.fault, state, sizeof(state))) {
		/* Test builds: one emulated controller whose state a file holds ("" deleted). */
		if (!state[0])
			return;
		p->paths = 1;
		p->live = !strcmp(state, "live");
		p->reconnecting = state_reconnecting(state);
		p->fabric = true;
		snprintf(p->ctrl, sizeof(p->ctrl), "emulated");
		snprintf(p->transport, sizeof(p->transport), "tcp");
		snprintf(p->address, sizeof(p->address), "emulated");
		snprintf(p->state, sizeof(p->state), "%s", state);
		return;
	}
	if (m->dev.nvme.is_nvme)
		member_paths_read_names(m->dev.nvme.blk, m->dev.nvme.ctrl, m->dev.nvme.passthru, p);
}

void member_paths_read_names(const char *blk, const char *ctrl, bool passthru,
			     struct member_paths *p)
{
	char link[96], parent[48];

	memset(p, 0, sizeof(*p));
	if (passthru || !blk[0]) {
		/* A generic device belongs to one controller: it is one path. */
		if (is_ctrl_name(ctrl))
			paths_add(p, ctrl);
		return;
	}
	snprintf(link, sizeof(link), "/sys/block/%.40s/device", blk);
	member_sysfs_link_base(link, parent, sizeof(parent));
	if (!strncmp(parent, "nvme-subsys", 11))
		paths_of_subsystem(p, parent); /* a multipath head */
	else if (is_ctrl_name(parent))
		paths_add(p, parent);
	/* Neither: the block device is gone, and with it every path. */
}

enum member_reach member_reach(const struct member *m, struct member_paths *out)
{
	struct member_paths p;
	bool fabric = m->dev.nvme.fabric || (m->dev.fault && fault_fabric_state(m->dev.fault, NULL, 0));

	member_paths_read(m, &p);
	if (out)
		*out = p;
	if (!fabric)
		return REACH_LOCAL;
	if (p.live)
		return REACH_LIVE;
	return p.reconnecting ? REACH_RECONNECTING : REACH_GONE;
}

void member_identity_record(const struct member_nvme *n, struct sb_nvme *out)
{
	memset(out, 0, sizeof(*out));
	if (!n->is_nvme)
		return;
	out->flags = GRAID_SB_NVME_ID;
	out->nsid = n->nsid;
	memcpy(out->nguid, n->nguid, sizeof(out->nguid));
	memcpy(out->eui64, n->eui64, sizeof(out->eui64));
	memcpy(out->uuid, n->uuid, sizeof(out->uuid));
	snprintf(out->subnqn, sizeof(out->subnqn), "%.*s", (int)sizeof(out->subnqn) - 1,
		 n->subnqn);
}

static bool id_zero(const uint8_t *id, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (id[i])
			return false;
	return true;
}

/* Both known and different: two namespaces. */
static bool id_differs(const uint8_t *a, const uint8_t *b, size_t len)
{
	return !id_zero(a, len) && !id_zero(b, len) && memcmp(a, b, len);
}

bool member_identity_matches(const struct member_nvme *n, const struct sb_nvme *rec)
{
	struct sb_nvme now;

	if (!(rec->flags & GRAID_SB_NVME_ID) || !n->is_nvme)
		return true;
	member_identity_record(n, &now);
	if (id_differs(now.nguid, rec->nguid, 16) || id_differs(now.eui64, rec->eui64, 8) ||
	    id_differs(now.uuid, rec->uuid, 16))
		return false;
	/* No namespace identifier at all (some targets): subsystem and NSID must agree. */
	if (id_zero(rec->nguid, 16) && id_zero(rec->eui64, 8) && id_zero(rec->uuid, 16))
		return now.nsid == rec->nsid && !strcmp(now.subnqn, rec->subnqn);
	return true;
}

bool member_path_is_spec(const char *path)
{
	static const char *const kinds[] = { "nqn=", "nguid=", "eui64=", "uuid=" };

	for (size_t i = 0; path && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(path, kinds[i], strlen(kinds[i])))
			return true;
	return false;
}

GRAID_API int graid_member_is_spec(const char *path)
{
	return member_path_is_spec(path);
}

/* Hex digits of @p s, lower case, separators ('-', ':', ' ') dropped; false on anything else. */
static bool hex_normal(const char *s, size_t n, char *out, size_t outlen)
{
	size_t k = 0;

	for (size_t i = 0; i < n && s[i]; i++) {
		if (s[i] == '-' || s[i] == ':' || s[i] == ' ')
			continue;
		if (!isxdigit((unsigned char)s[i]) || k + 1 >= outlen)
			return false;
		out[k++] = (char)tolower((unsigned char)s[i]);
	}
	out[k] = '\0';
	return true;
}

struct member_spec {
	char kind[8];     /* "nqn", "nguid", "eui64", "uuid" */
	char value[256];  /* hex digits (nguid, eui64, uuid) or the NQN */
	unsigned nsid;    /* nqn= only */
};

static int spec_parse(const char *spec, struct member_spec *s)
{
	const char *eq = strchr(spec, '=');
	size_t digits = 0;

	memset(s, 0, sizeof(*s));
	if (!eq || (size_t)(eq - spec) >= sizeof(s->kind))
		return -EINVAL;
	memcpy(s->kind, spec, (size_t)(eq - spec));
	if (!strcmp(s->kind, "nqn")) {
		const char *ns = strstr(eq + 1, ",nsid=");
		char *end;
		unsigned long v;

		if (!ns || ns == eq + 1 || (size_t)(ns - eq - 1) >= sizeof(s->value)) {
			graid__log(GRAID_LOG_ERR, "member %s: want nqn=NQN,nsid=N", spec);
			return -EINVAL;
		}
		memcpy(s->value, eq + 1, (size_t)(ns - eq - 1));
		errno = 0;
		v = strtoul(ns + 6, &end, 10);
		if (errno || *end || end == ns + 6 || v == 0 || v > 0xfffffffful) {
			graid__log(GRAID_LOG_ERR, "member %s: nsid '%s' is not a namespace ID",
				   spec, ns + 6);
			return -EINVAL;
		}
		s->nsid = (unsigned)v;
		return 0;
	}
	if (!strcmp(s->kind, "nguid") || !strcmp(s->kind, "uuid"))
		digits = 32;
	else if (!strcmp(s->kind, "eui64"))
		digits = 16;
	if (!digits) {
		graid__log(GRAID_LOG_ERR, "member %s: unknown identity '%s' (nqn, nguid, eui64 or "
					  "uuid)", spec, s->kind);
		return -EINVAL;
	}
	if (!hex_normal(eq + 1, SIZE_MAX, s->value, sizeof(s->value)) ||
	    strlen(s->value) != digits) {
		graid__log(GRAID_LOG_ERR, "member %s: %s wants %zu hex digits", spec, s->kind,
			   digits);
		return -EINVAL;
	}
	return 0;
}

/* Does namespace block device @blk (a head or a plain namespace) carry that identity? */
static bool spec_matches(const struct member_spec *s, const char *blk)
{
	char path[128], v[256], hex[80];

	if (!strcmp(s->kind, "nqn")) {
		unsigned nsid;

		snprintf(path, sizeof(path), "/sys/block/%.40s/nsid", blk);
		if (!sysfs_line(path, v, sizeof(v)) || sscanf(v, "%u", &nsid) != 1 ||
		    nsid != s->nsid)
			return false;
		snprintf(path, sizeof(path), "/sys/block/%.40s/device/subsysnqn", blk);
		return sysfs_line(path, v, sizeof(v)) && !strcmp(v, s->value);
	}
	/* The kernel names the EUI-64 attribute "eui"; absent when the namespace has none. */
	snprintf(path, sizeof(path), "/sys/block/%.40s/%s", blk,
		 !strcmp(s->kind, "eui64") ? "eui" : s->kind);
	return sysfs_line(path, v, sizeof(v)) && hex_normal(v, sizeof(v), hex, sizeof(hex)) &&
	       !strcmp(hex, s->value);
}

GRAID_API int graid_member_resolve(const char *spec, char *path, size_t size)
{
	struct member_spec s;
	char found[64] = "";
	unsigned matches = 0;
	struct dirent *e;
	DIR *d;
	int rc;

	if (!spec || !path || !size)
		return -EINVAL;
	rc = spec_parse(spec, &s);
	if (rc)
		return rc;
	d = opendir("/sys/block");
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		unsigned x, y;
		int n = 0;

		/* Namespace heads and plain namespaces; not the hidden paths "nvmeXcYnZ". */
		if (sscanf(e->d_name, "nvme%un%u%n", &x, &y, &n) != 2 || e->d_name[n])
			continue;
		if (spec_matches(&s, e->d_name)) {
			matches++;
			snprintf(found, sizeof(found), "%.40s", e->d_name);
		}
	}
	closedir(d);
	if (matches == 0) {
		graid__log(GRAID_LOG_ERR, "member %s: no NVMe namespace on this host has that "
					  "identity", spec);
		return -ENOENT;
	}
	if (matches > 1) {
		graid__log(GRAID_LOG_ERR, "member %s: %u namespaces have that identity (one over "
					  "several paths without native multipath?)", spec, matches);
		return -ENOTUNIQ;
	}
	if ((size_t)snprintf(path, size, "/dev/%s", found) >= size)
		return -ENAMETOOLONG;
	graid__log(GRAID_LOG_INFO, "member %s is /dev/%s", spec, found);
	return 0;
}
