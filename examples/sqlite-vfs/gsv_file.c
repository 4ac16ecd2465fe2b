/* SPDX-License-Identifier: MIT */
/* sqlite3_io_methods of the database file on the array (version 1: no shared memory, no mmap). */
#include <errno.h>
#include <string.h>

#include "gsv.h"

/* libgraid's negative errno becomes SQLite's extended code; the log keeps the original. */
static int gsv_file_error(int err, int ioerr, const char *what)
{
	sqlite3_log(ioerr, "graid vfs: %s: %s", what, graid_strerror(err));
	return err == -ENOMEM ? SQLITE_IOERR_NOMEM : ioerr;
}

/* Zero the gap a file that grows to `end` leaves after its current size. */
static int gsv_file_grow(struct gsv_db *db, uint64_t start, uint64_t end)
{
	int rc = 0;

	if (start > db->size)
		rc = gsv_bytes_zero(db, db->size, start - db->size);
	if (!rc && end > db->size) {
		db->size = end;
		db->size_dirty = 1;
	}
	return rc;
}

static int gsv_file_close(sqlite3_file *file)
{
	struct gsv_file *f = (struct gsv_file *)file;
	struct gsv_db *db = f->db;
	int rc = 0;

	pthread_mutex_lock(&db->lock);
	gsv_lock_drop(db, f, SQLITE_LOCK_NONE);
	/* A size never synced (synchronous=OFF) still reaches the header on a clean close. */
	if (db->size_dirty)
		rc = gsv_header_store(db);
	/*
	 * A truncate with no sync after it (VACUUM truncates after its last sync): the size
	 * is made durable here, then what it cut off is discarded.
	 */
	if (!rc && db->punch_to > db->size) {
		rc = graid_array_flush(db->array);
		if (!rc)
			rc = gsv_bytes_discard(db, db->size, db->punch_to - db->size);
		db->punch_to = 0;
	}
	db->nopen--;
	pthread_mutex_unlock(&db->lock);
	return rc ? gsv_file_error(rc, SQLITE_IOERR_CLOSE, "close") : SQLITE_OK;
}

static int gsv_file_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 ofst)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;
	uint64_t off = (uint64_t)ofst, n = 0;
	int rc = 0;

	pthread_mutex_lock(&db->lock);
	if (off < db->size)
		n = db->size - off < (uint64_t)amt ? db->size - off : (uint64_t)amt;
	if (n)
		rc = gsv_bytes_read(db, buf, (size_t)n, off);
	pthread_mutex_unlock(&db->lock);
	if (rc)
		return gsv_file_error(rc, SQLITE_IOERR_READ, "read");
	if (n < (uint64_t)amt) {
		/* SQLite requires the unread tail zeroed on a short read. */
		memset((uint8_t *)buf + n, 0, (size_t)((uint64_t)amt - n));
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int gsv_file_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 ofst)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;
	uint64_t off = (uint64_t)ofst, end = off + (uint64_t)amt;
	int rc;

	if (end > db->capacity)
		return SQLITE_FULL;
	pthread_mutex_lock(&db->lock);
	rc = gsv_bytes_write(db, buf, (size_t)amt, off);
	/* A gap's zeroes go down after the data: a block both share is re-read with it. */
	if (!rc)
		rc = gsv_file_grow(db, off, end);
	pthread_mutex_unlock(&db->lock);
	return rc ? gsv_file_error(rc, SQLITE_IOERR_WRITE, "write") : SQLITE_OK;
}

static int gsv_file_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;
	int rc = 0;

	if ((uint64_t)size > db->capacity)
		return SQLITE_FULL;
	pthread_mutex_lock(&db->lock);
	if ((uint64_t)size > db->size) {
		rc = gsv_file_grow(db, (uint64_t)size, (uint64_t)size);
	} else if ((uint64_t)size < db->size) {
		/*
		 * The header says they are gone; the array discards them at the next sync, once
		 * the smaller size is durable (a crash before then still finds them: a rollback
		 * from the journal may need the old size back).
		 */
		if (db->size > db->punch_to)
			db->punch_to = db->size;
		db->size = (uint64_t)size;
		db->size_dirty = 1;
	}
	pthread_mutex_unlock(&db->lock);
	return rc ? gsv_file_error(rc, SQLITE_IOERR_TRUNCATE, "truncate") : SQLITE_OK;
}

static int gsv_file_sync(sqlite3_file *file, int flags)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;
	int rc = 0;

	(void)flags; /* NORMAL, FULL and DATAONLY all need the size and the data durable */
	pthread_mutex_lock(&db->lock);
	/* The new size goes down before the flush, so one flush makes both durable. */
	if (db->size_dirty)
		rc = gsv_header_store(db);
	pthread_mutex_unlock(&db->lock);
	if (!rc)
		rc = graid_array_flush(db->array);
	/*
	 * What a truncate cut off: the smaller size is durable now, so the blocks past it are
	 * discarded (holes in the members; the live-data map frees their regions at the next
	 * flush). Not if the size changed again since and is not durable yet: the next sync.
	 */
	pthread_mutex_lock(&db->lock);
	if (!rc && !db->size_dirty && db->punch_to > db->size) {
		rc = gsv_bytes_discard(db, db->size, db->punch_to - db->size);
		db->punch_to = 0;
	}
	pthread_mutex_unlock(&db->lock);
	return rc ? gsv_file_error(rc, SQLITE_IOERR_FSYNC, "sync") : SQLITE_OK;
}

static int gsv_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;

	pthread_mutex_lock(&db->lock);
	*size = (sqlite3_int64)db->size;
	pthread_mutex_unlock(&db->lock);
	return SQLITE_OK;
}

static int gsv_file_lock(sqlite3_file *file, int level)
{
	struct gsv_file *f = (struct gsv_file *)file;
	int rc;

	pthread_mutex_lock(&f->db->lock);
	rc = gsv_lock_take(f->db, f, level);
	pthread_mutex_unlock(&f->db->lock);
	return rc;
}

static int gsv_file_unlock(sqlite3_file *file, int level)
{
	struct gsv_file *f = (struct gsv_file *)file;
	int rc;

	pthread_mutex_lock(&f->db->lock);
	rc = gsv_lock_drop(f->db, f, level);
	pthread_mutex_unlock(&f->db->lock);
	return rc;
}

static int gsv_file_check_reserved(sqlite3_file *file, int *out)
{
	struct gsv_db *db = ((struct gsv_file *)file)->db;

	pthread_mutex_lock(&db->lock);
	*out = gsv_lock_reserved(db);
	pthread_mutex_unlock(&db->lock);
	return SQLITE_OK;
}

static int gsv_file_control(sqlite3_file *file, int op, void *arg)
{
	(void)file;
	(void)op;
	(void)arg;
	return SQLITE_NOTFOUND;
}

static int gsv_file_sector_size(sqlite3_file *file)
{
	/* A block is what one write rewrites, so it is what a torn write can damage. */
	return (int)((struct gsv_file *)file)->db->block_size;
}

static int gsv_file_device_characteristics(sqlite3_file *file)
{
	/* Nothing promised: no atomic writes, and a partial-block write rewrites its block. */
	(void)file;
	return 0;
}

const sqlite3_io_methods gsv_io_methods = {
	.iVersion = 1,
	.xClose = gsv_file_close,
	.xRead = gsv_file_read,
	.xWrite = gsv_file_write,
	.xTruncate = gsv_file_truncate,
	.xSync = gsv_file_sync,
	.xFileSize = gsv_file_size,
	.xLock = gsv_file_lock,
	.xUnlock = gsv_file_unlock,
	.xCheckReservedLock = gsv_file_check_reserved,
	.xFileControl = gsv_file_control,
	.xSectorSize = gsv_file_sector_size,
	.xDeviceCharacteristics = gsv_file_device_characteristics,
};
