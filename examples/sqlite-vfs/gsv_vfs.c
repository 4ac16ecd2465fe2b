/* SPDX-License-Identifier: MIT */
/* The sqlite3_vfs "graid": the database on the array, every other file on the OS VFS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graid_sqlite_vfs.h"
#include "gsv.h"

/* The one registration; SQLite holds a pointer to its vfs until unregistered. */
static struct gsv_db *gsv_current;

static struct gsv_db *gsv_vfs_db(sqlite3_vfs *vfs)
{
	return (struct gsv_db *)vfs; /* vfs is gsv_db's first member */
}

static int gsv_vfs_is_db(const struct gsv_db *db, const char *name, int flags)
{
	return name && (flags & SQLITE_OPEN_MAIN_DB) && strcmp(name, db->path) == 0;
}

static int gsv_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
			int *out_flags)
{
	struct gsv_db *db = gsv_vfs_db(vfs);
	struct gsv_file *f = (struct gsv_file *)file;

	/*
	 * Journals, WAL and temp files are opened by the OS VFS into this same sqlite3_file:
	 * szOsFile is the larger of the two, and SQLite calls whatever pMethods it is given.
	 */
	if (!gsv_vfs_is_db(db, name, flags))
		return db->os->xOpen(db->os, name, file, flags, out_flags);
	memset(f, 0, sizeof(*f));
	f->db = db;
	pthread_mutex_lock(&db->lock);
	db->nopen++;
	pthread_mutex_unlock(&db->lock);
	f->base.pMethods = &gsv_io_methods;
	if (out_flags)
		*out_flags = flags;
	return SQLITE_OK;
}

static int gsv_vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	struct gsv_db *db = gsv_vfs_db(vfs);

	/* SQLite never deletes a main database; the stand-in must stay for the journals. */
	if (strcmp(name, db->path) == 0)
		return SQLITE_IOERR_DELETE;
	return db->os->xDelete(db->os, name, sync_dir);
}

static int gsv_vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	struct gsv_db *db = gsv_vfs_db(vfs);

	return db->os->xAccess(db->os, name, flags, out);
}

static int gsv_vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	struct gsv_db *db = gsv_vfs_db(vfs);

	/* Every name is the one database, so its journal name never depends on the caller's. */
	(void)name;
	if (strlen(db->path) >= (size_t)n)
		return SQLITE_CANTOPEN;
	strcpy(out, db->path);
	return SQLITE_OK;
}

/* The rest is the OS's business. */

static void *gsv_vfs_dl_open(sqlite3_vfs *vfs, const char *name)
{
	return gsv_vfs_db(vfs)->os->xDlOpen(gsv_vfs_db(vfs)->os, name);
}

static void gsv_vfs_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	gsv_vfs_db(vfs)->os->xDlError(gsv_vfs_db(vfs)->os, n, msg);
}

static void (*gsv_vfs_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	return gsv_vfs_db(vfs)->os->xDlSym(gsv_vfs_db(vfs)->os, h, sym);
}

static void gsv_vfs_dl_close(sqlite3_vfs *vfs, void *h)
{
	gsv_vfs_db(vfs)->os->xDlClose(gsv_vfs_db(vfs)->os, h);
}

static int gsv_vfs_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	return gsv_vfs_db(vfs)->os->xRandomness(gsv_vfs_db(vfs)->os, n, out);
}

static int gsv_vfs_sleep(sqlite3_vfs *vfs, int us)
{
	return gsv_vfs_db(vfs)->os->xSleep(gsv_vfs_db(vfs)->os, us);
}

static int gsv_vfs_current_time(sqlite3_vfs *vfs, double *out)
{
	return gsv_vfs_db(vfs)->os->xCurrentTime(gsv_vfs_db(vfs)->os, out);
}

static int gsv_vfs_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	return gsv_vfs_db(vfs)->os->xGetLastError(gsv_vfs_db(vfs)->os, n, out);
}

static int gsv_vfs_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	return gsv_vfs_db(vfs)->os->xCurrentTimeInt64(gsv_vfs_db(vfs)->os, out);
}

/* "<dir>/graid-<uuid>.db", and the empty stand-in there that the OS VFS stats for journals. */
static int gsv_vfs_name(struct gsv_db *db, const char *journal_dir, const uint8_t uuid[16])
{
	char *dir = realpath(journal_dir, NULL);
	int len, fd;

	if (!dir)
		return -errno;
	len = snprintf(db->path, sizeof(db->path), "%s/graid-", dir);
	for (int i = 0; i < 16 && len > 0 && (size_t)len < sizeof(db->path); i++)
		len += snprintf(db->path + len, sizeof(db->path) - (size_t)len, "%02x", uuid[i]);
	if (len > 0 && (size_t)len < sizeof(db->path))
		len += snprintf(db->path + len, sizeof(db->path) - (size_t)len, ".db");
	free(dir);
	/* Room for SQLite's longest suffix ("-mj" + 8 hex + NUL) within the OS's limit. */
	if (len < 0 || (size_t)len + 16 >= sizeof(db->path) || len + 16 >= db->os->mxPathname)
		return -ENAMETOOLONG;
	fd = open(db->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static void gsv_vfs_free(struct gsv_db *db)
{
	pthread_mutex_destroy(&db->lock);
	free(db->block);
	free(db);
}

int graid_sqlite_vfs_register(struct graid_array *a, const char *journal_dir)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct gsv_db *db;
	int rc;

	if (!a || !journal_dir)
		return -EINVAL;
	if (gsv_current)
		return -EBUSY;
	rc = graid_array_info(a, &info);
	if (rc)
		return rc;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	pthread_mutex_init(&db->lock, NULL);
	db->os = sqlite3_vfs_find(NULL);
	db->array = a;
	db->block_size = info.block_size;
	db->data_offset = info.block_size;
	db->capacity = info.size > db->data_offset ? info.size - db->data_offset : 0;
	/* Aligned, so the array reads and writes it without a bounce buffer. */
	if (posix_memalign((void **)&db->block, 4096, info.block_size)) {
		gsv_vfs_free(db);
		return -ENOMEM;
	}
	rc = db->os ? 0 : -ENODEV;
	if (!rc)
		rc = gsv_vfs_name(db, journal_dir, info.uuid);
	if (!rc)
		rc = gsv_header_load(db);
	if (rc) {
		gsv_vfs_free(db);
		return rc;
	}
	db->vfs = (sqlite3_vfs){
		/* 2 adds xCurrentTimeInt64, passed through when the OS VFS has it. */
		.iVersion = db->os->iVersion >= 2 ? 2 : 1,
		.szOsFile = db->os->szOsFile > (int)sizeof(struct gsv_file)
				    ? db->os->szOsFile : (int)sizeof(struct gsv_file),
		.mxPathname = db->os->mxPathname,
		.zName = "graid",
		.xOpen = gsv_vfs_open,
		.xDelete = gsv_vfs_delete,
		.xAccess = gsv_vfs_access,
		.xFullPathname = gsv_vfs_full_pathname,
		.xDlOpen = gsv_vfs_dl_open,
		.xDlError = gsv_vfs_dl_error,
		.xDlSym = gsv_vfs_dl_sym,
		.xDlClose = gsv_vfs_dl_close,
		.xRandomness = gsv_vfs_randomness,
		.xSleep = gsv_vfs_sleep,
		.xCurrentTime = gsv_vfs_current_time,
		.xGetLastError = gsv_vfs_last_error,
		.xCurrentTimeInt64 = gsv_vfs_current_time64,
	};
	if (sqlite3_vfs_register(&db->vfs, 0) != SQLITE_OK) {
		gsv_vfs_free(db); /* only when SQLite cannot initialise: out of memory */
		return -ENOMEM;
	}
	gsv_current = db;
	return 0;
}

int graid_sqlite_vfs_unregister(void)
{
	struct gsv_db *db = gsv_current;

	if (!db)
		return -ENOENT;
	if (db->nopen)
		return -EBUSY;
	sqlite3_vfs_unregister(&db->vfs);
	gsv_current = NULL;
	gsv_vfs_free(db);
	return 0;
}
