/* SPDX-License-Identifier: MIT */
/* Helpers for the array suites: member files in a scratch folder, snapshots, the in-memory model. */
#ifndef LIBGRAID_ARRAYUTIL_H
#define LIBGRAID_ARRAYUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#define AU_MAX 16

struct au_set {
	char dir[256];
	unsigned n;
	char path[AU_MAX][300];
	const char *paths[AU_MAX];
};

/* n sparse member files of `bytes` each in a fresh folder under $TMPDIR (or /tmp). */
void au_make(struct au_set *s, unsigned n, uint64_t bytes);
void au_remove(struct au_set *s);
/*
 * After a child was killed: wait (up to 5 s) until no member file is still locked. A killed
 * process's io_uring is torn down after waitpid() returns and holds its files, and their
 * locks, until then; an open meanwhile leaves such a member out as "in use".
 */
void au_wait_unlocked(const char *const *paths, unsigned n);

/*
 * The modelled NVMe-oF controller state of a `faulty:` member (its state file): @p state
 * ("live", "connecting", ...) written whole, through a rename, as the library reads it at
 * any moment. 0, or -errno.
 */
int au_ctrl_state(const char *state_file, const char *state);

/* Whether the first 4 KiB of @p path are all zero: no superblock left there. */
bool au_sb_cleared(const char *path);
/* FNV-1a of a whole file, to prove a refused call wrote nothing. */
uint64_t au_file_hash(const char *path);
/* Create with level/chunk and the given engine ("isal" by default when NULL). */
int au_create(struct au_set *s, unsigned n, int level, uint32_t chunk, struct graid_array **out);

#endif
