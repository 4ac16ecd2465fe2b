/* SPDX-License-Identifier: MIT */
/* Who holds an array: the host-wide lock on its UUID, and the owner record kept in superblocks. */
#ifndef LIBGRAID_CORE_ARRAY_OWN_H
#define LIBGRAID_CORE_ARRAY_OWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/superblock.h"

/*
 * The host-wide lock on one array UUID: a file named by the UUID in the lock directory
 * (GRAID_LOCK_DIR, else /run/lock/libgraid for root and /run/lock/libgraid-UID for other
 * users), flock()ed exclusively by the one writable opener on this host, whichever members
 * it was given. fd -1: none held.
 */
struct array_uuid_lock {
	int fd;
	char path[256];
};

/*
 * Take the lock on @p uuid without waiting, and record this process in its file (one text
 * line: docs/ARRAYS.md). 0; -EBUSY another open holds it: @p holder gets the record its
 * file carries (all zero when none could be read); -ENOLCK the lock directory cannot be
 * used (logged with the reason).
 */
int array_uuid_lock_take(struct array_uuid_lock *l, const uint8_t uuid[16],
			 struct sb_owner *holder);
/*
 * The record in the lock file of @p uuid, read without taking the lock (a look): 0 with
 * @p holder filled; -ENOENT no file or no record (nobody holds it, or it was let go).
 * Whether that holder is alive is owner_liveness()'s to say.
 */
int array_uuid_holder(const uint8_t uuid[16], struct sb_owner *holder);
/* Let it go (and remove its file, under the lock, so none accumulate). */
void array_uuid_lock_release(struct array_uuid_lock *l);

/* The file "UUID" + @p suffix in the lock directory (".lock", ".state"). 0 or -ENAMETOOLONG. */
int array_uuid_file_path(const uint8_t uuid[16], const char *suffix, char *buf, size_t len);

/* This process as an owner record: pid, start time, boot id, host name and id, now; epoch 0. */
void owner_self(struct sb_owner *o);

/*
 * Whether two owner records name the same host: the same machine id where both have one,
 * else the same boot id, else the same host name.
 */
bool owner_same_host(const struct sb_owner *a, const struct sb_owner *b);

enum owner_liveness {
	OWNER_ALIVE,   /* that process is running on this host now */
	OWNER_DEAD,    /* it is not (exited, or another boot, or its pid was reused) */
	OWNER_UNKNOWN, /* no record, or another host's: nothing can be said */
};

enum owner_liveness owner_liveness(const struct sb_owner *o);

/* "pid 1234 (graidctl) on host h since 2026-12-01 13:52:16 UTC", or "an unknown holder". */
void owner_describe(const struct sb_owner *o, char *buf, size_t len);

#endif
