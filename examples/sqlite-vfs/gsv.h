/* SPDX-License-Identifier: MIT */
/* Internal state of the "graid" SQLite VFS, shared by its files (not for callers). */
#ifndef GSV_H
#define GSV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include <libgraid/graid.h>

/*
 * One registration: the VFS, the one database on the array, and what every connection to it
 * shares. The database's bytes sit at array offset `data_offset` onwards.
 */
struct gsv_db {
	sqlite3_vfs vfs;            /* registered with SQLite; first, so a vfs pointer is ours */
	sqlite3_vfs *os;            /* the default VFS, for every file but the database */
	struct graid_array *array;
	uint32_t block_size;        /* the array's: data calls are multiples of it */
	uint64_t data_offset;       /* one block: the header */
	uint64_t capacity;          /* bytes the database may grow to */
	char path[512];             /* the database's canonical name, in the journal dir */

	/* Everything below is guarded by `lock`. */
	pthread_mutex_t lock;
	uint64_t size;              /* the database's logical size */
	int size_dirty;             /* size differs from the header on the array */
	uint64_t punch_to;          /* truncated from here down to size; discarded at a sync */
	unsigned nopen;             /* connections that have the database open */
	unsigned nshared;           /* of those, how many hold SHARED or more */
	int level;                  /* strongest lock above SHARED held (RESERVED..EXCLUSIVE) */
	const void *holder;         /* the file that holds it */
	uint8_t *block;             /* one block of scratch for partial-block I/O */
};

/* One open database connection's file: SQLite allocates it (szOsFile) and we fill it. */
struct gsv_file {
	sqlite3_file base;          /* pMethods: gsv_io_methods */
	struct gsv_db *db;
	int lock;                   /* SQLITE_LOCK_* this connection holds */
};

extern const sqlite3_io_methods gsv_io_methods;

/* gsv_header.c: the block in front of the database. */
int gsv_header_load(struct gsv_db *db);
int gsv_header_store(struct gsv_db *db);

/* gsv_bytes.c: byte ranges of the database over the block-granular array; `lock` held. */
int gsv_bytes_read(struct gsv_db *db, void *buf, size_t len, uint64_t off);
int gsv_bytes_write(struct gsv_db *db, const void *buf, size_t len, uint64_t off);
int gsv_bytes_zero(struct gsv_db *db, uint64_t off, uint64_t len);
/* Discard the whole blocks of [off, off + len) (they read as zeroes after). */
int gsv_bytes_discard(struct gsv_db *db, uint64_t off, uint64_t len);

/* gsv_lock.c: SQLite's five lock levels between connections of this process; `lock` held. */
int gsv_lock_take(struct gsv_db *db, struct gsv_file *f, int want);
int gsv_lock_drop(struct gsv_db *db, struct gsv_file *f, int to);
int gsv_lock_reserved(const struct gsv_db *db);

#endif /* GSV_H */
