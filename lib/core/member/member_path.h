/* SPDX-License-Identifier: MIT */
/*
 * How an NVMe member is reached: the controllers (paths) that serve its namespace, their
 * transport, address and state as sysfs shows them, and whether that makes the member
 * reachable, reconnecting (a path outage) or gone. Also which namespace an identity spec
 * ("nguid=...") names. Members that are not NVMe namespaces are always "local".
 */
#ifndef LIBGRAID_CORE_MEMBER_PATH_H
#define LIBGRAID_CORE_MEMBER_PATH_H

#include <stdbool.h>
#include <stddef.h>

struct member;

struct member_paths {
	unsigned paths;           /* controllers that serve the namespace */
	unsigned live;            /* of those, in state "live" */
	unsigned reconnecting;    /* of those, "connecting", "resetting" or "new" */
	bool fabric;              /* reached over a fabric: tcp, rdma, fc or loop */
	char ctrl[32];            /* the controller reported below: a live one, else the first */
	char transport[16];
	char address[128];
	char state[16];
};

enum member_reach {
	REACH_LOCAL,        /* not a fabric member: an I/O error is the member's own */
	REACH_LIVE,         /* a controller is live */
	REACH_RECONNECTING, /* none is live, one is reconnecting: a path outage */
	REACH_GONE,         /* no controller is left (deleted past its ctrl_loss_tmo) */
};

/* The last component of the sysfs link @p link ("" when it is none), @p len bytes at most. */
void member_sysfs_link_base(const char *link, char *out, size_t len);

/* Read the member's paths now (sysfs; the "faulty:fabric-state=" model in test builds). */
void member_paths_read(const struct member *m, struct member_paths *p);

/*
 * The same for a namespace known by its block device name @p blk ("nvme0n1"; a generic
 * device's: "" with @p passthru) and controller @p ctrl, without a member open on it.
 */
void member_paths_read_names(const char *blk, const char *ctrl, bool passthru,
			     struct member_paths *p);

/* What the paths read now say of the member; @p p (may be NULL) receives them. */
enum member_reach member_reach(const struct member *m, struct member_paths *p);

struct member_nvme;
struct sb_nvme;
/* The NVMe identity a superblock written on this member records (all zero: not NVMe). */
void member_identity_record(const struct member_nvme *n, struct sb_nvme *out);
/*
 * Does the member's namespace carry the identity its superblock recorded (or did it record
 * none)? False names a namespace holding a copy of another's superblock.
 */
bool member_identity_matches(const struct member_nvme *n, const struct sb_nvme *rec);

/* "nqn=", "nguid=", "eui64=" or "uuid=": a member named by identity (graid_member_resolve). */
bool member_path_is_spec(const char *path);

#endif /* LIBGRAID_CORE_MEMBER_PATH_H */
