/* SPDX-License-Identifier: MIT */
/* Finding arrays: the devices a config names, probed, grouped by array UUID. */
#ifndef GCTL_SCAN_H
#define GCTL_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>

#include <libgraid/graid.h>

#include "gctl_conf.h"

struct gctl_scan_dev {
	char *path;
	int named;  /* named in the config (a glob or members=), so a probe error is said */
	int rc;     /* graid_member_probe()'s */
	struct stat st; /* when it was found: two names of one device are one candidate */
	struct graid_member_probe p;
};

struct gctl_scan_array {
	uint8_t uuid[16];
	char uuid_text[37];
	int level;
	unsigned nmembers;   /* as the newest superblock found says */
	uint64_t events;     /* the newest superblock's */
	int *dev;            /* indices into gctl_scan::dev: its members and spares found */
	int ndev;
	unsigned nspares;
	uint8_t found[GRAID_MAX_MEMBERS]; /* devices found per role */
	/* Roles not found that the members found record failed: out already, not needed. */
	uint8_t out_already[GRAID_MAX_MEMBERS];
	unsigned nmissing;   /* roles not found and not out already */
	uint32_t holder_pid; /* a live process holds it (graid-ublk, nbdkit...): 0 none */
	char holder[192];
	const struct gctl_conf_array *conf; /* its ARRAY line, or NULL */
	int selected;        /* the config lets it be started (listed, or AUTO yes) */
};

struct gctl_scan {
	struct gctl_scan_dev *dev;
	int ndev;
	struct gctl_scan_array *arr; /* sorted by UUID */
	int narr;
	/* A candidate this says yes to is not read (gctl_scan_config_skip()). */
	int (*skip)(const struct stat *st, void *arg);
	void *skip_arg;
};

/*
 * Probe the devices the config names (its DEVICE words, or every block device and NVMe
 * generic device without any; and every members= path), and group what carries a
 * superblock by array. 0 or -ENOMEM; a device that cannot be probed is left out (said on
 * stderr when the config named it).
 */
int gctl_scan_config(const struct gctl_conf *c, struct gctl_scan *s);
/*
 * gctl_scan_config(), but the candidates @p skip says yes to are left unread, as if they
 * carried no superblock (graidctl monitor: the devices of arrays a holder reports on).
 */
int gctl_scan_config_skip(const struct gctl_conf *c, struct gctl_scan *s,
			  int (*skip)(const struct stat *st, void *arg), void *arg);
/* One device or file under two names (stat()s compared). */
int gctl_scan_same(const struct stat *a, const struct stat *b);
/* The same over exactly @p paths (incremental's record); @p c may be NULL. */
int gctl_scan_paths(const struct gctl_conf *c, char **paths, int n, struct gctl_scan *s);
void gctl_scan_free(struct gctl_scan *s);
/* The paths of @p a's devices, for graid_array_open(): a malloc'd vector, NULL on -ENOMEM. */
char **gctl_scan_members(const struct gctl_scan *s, const struct gctl_scan_array *a);
/* "2, 5": the roles @p a needs and lacks, into @p buf. */
void gctl_scan_missing_text(const struct gctl_scan_array *a, char *buf, size_t len);
/* graid_member_probe(), but a device too short for a superblock has none (0). */
int gctl_scan_probe_one(const char *path, struct graid_member_probe *p);
/* The array with @p uuid, or NULL. */
struct gctl_scan_array *gctl_scan_find(struct gctl_scan *s, const uint8_t uuid[16]);



/* cmd_scan.c: what assemble --scan, list --scan and incremental share. */
/*
 * Assemble @p a from the devices found (as graidctl assemble does: catch up unless
 * @p rebuild is 0), say so on stdout under its UUID, then start the service its ARRAY line
 * names. A gctl_exit code.
 */
int gctl_scan_start(const char *cmd, const struct gctl_scan *s, const struct gctl_scan_array *a,
		    unsigned how, int rebuild, uint64_t rate);
/* "UUID" or "UUID (name)", as every line about an array found starts. */
void gctl_scan_label(const struct gctl_scan_array *a, char *buf, size_t len);
int gctl_assemble_scan(const char *config, unsigned how, int rebuild, uint64_t rate);
int gctl_list_scan(const char *config, int json, const char *members_of);
#endif /* GCTL_SCAN_H */
