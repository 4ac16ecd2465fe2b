/* SPDX-License-Identifier: MIT */
/* graid.conf: which arrays this host starts, from which devices, and how each is served. */
#ifndef GCTL_CONF_H
#define GCTL_CONF_H

#include <stdint.h>

#define GCTL_CONF_DEFAULT "/etc/graid/graid.conf"

/* How an array is served once assembled (ARRAY ... serve=). */
enum gctl_serve {
	GCTL_SERVE_NONE = 0, /* assembled (caught up, closed clean) and left */
	GCTL_SERVE_UBLK,     /* graid-ublk@UUID.service */
	GCTL_SERVE_NBDKIT,   /* graid-nbdkit@UUID.service */
};

struct gctl_conf_array {
	uint8_t uuid[16];
	char *name;     /* name=, or NULL */
	char **members; /* members=: the only paths this array is taken from; NULL: any */
	int nmembers;
	int serve;      /* enum gctl_serve */
	int line;       /* where it was written, for messages */
};

struct gctl_conf {
	char path[4096];   /* the file read ("" when the default file does not exist) */
	struct gctl_conf_array *arrays;
	int narrays;
	char **devices;    /* DEVICE words in order: globs, "partitions", "nvme-generic" */
	int ndevices;
	int auto_all;      /* AUTO yes (the default): arrays without an ARRAY line too */
};

/*
 * Read the config: @p path if given, else $GRAID_CONF, else the default (whose absence is
 * an empty config; an explicit file must exist). A bad line is reported on stderr as
 * "FILE:LINE: what is wrong" and fails the whole read. 0, or -errno (-EINVAL: a bad line).
 */
int gctl_conf_load(const char *path, struct gctl_conf *c);
void gctl_conf_free(struct gctl_conf *c);
/* The ARRAY line for @p uuid, or NULL. */
const struct gctl_conf_array *gctl_conf_find(const struct gctl_conf *c, const uint8_t uuid[16]);
/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (either case) into 16 bytes: 0 or -EINVAL. */
int gctl_uuid_parse(const char *s, uint8_t uuid[16]);
const char *gctl_serve_name(int serve);

#endif /* GCTL_CONF_H */
