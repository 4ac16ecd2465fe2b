/* SPDX-License-Identifier: MIT */
/*
 * SQLite's lock levels (NONE < SHARED < RESERVED < PENDING < EXCLUSIVE) between the
 * connections of this process, kept in memory: another process opening the same array
 * would see none of them, which is why the array itself must not be opened twice (libgraid's
 * member locks refuse that).
 */
#include "gsv.h"

int gsv_lock_take(struct gsv_db *db, struct gsv_file *f, int want)
{
	if (f->lock >= want)
		return SQLITE_OK;
	if (want == SQLITE_LOCK_SHARED) {
		/* A writer waiting for EXCLUSIVE (PENDING) keeps new readers out. */
		if (db->level >= SQLITE_LOCK_PENDING)
			return SQLITE_BUSY;
		db->nshared++;
		f->lock = SQLITE_LOCK_SHARED;
		return SQLITE_OK;
	}
	/* RESERVED or EXCLUSIVE (SQLite never asks for PENDING): one connection at a time. */
	if (db->level >= SQLITE_LOCK_RESERVED && db->holder != f)
		return SQLITE_BUSY;
	if (want == SQLITE_LOCK_RESERVED) {
		db->level = SQLITE_LOCK_RESERVED;
		db->holder = f;
		f->lock = SQLITE_LOCK_RESERVED;
		return SQLITE_OK;
	}
	db->level = SQLITE_LOCK_PENDING;
	db->holder = f;
	f->lock = SQLITE_LOCK_PENDING;
	if (db->nshared > 1)
		return SQLITE_BUSY; /* readers still in; SQLite retries, PENDING kept */
	db->level = SQLITE_LOCK_EXCLUSIVE;
	f->lock = SQLITE_LOCK_EXCLUSIVE;
	return SQLITE_OK;
}

int gsv_lock_drop(struct gsv_db *db, struct gsv_file *f, int to)
{
	if (f->lock <= to)
		return SQLITE_OK;
	if (f->lock > SQLITE_LOCK_SHARED) {
		db->level = SQLITE_LOCK_NONE;
		db->holder = NULL;
		f->lock = SQLITE_LOCK_SHARED;
	}
	if (to == SQLITE_LOCK_NONE) {
		db->nshared--;
		f->lock = SQLITE_LOCK_NONE;
	}
	return SQLITE_OK;
}

int gsv_lock_reserved(const struct gsv_db *db)
{
	return db->level >= SQLITE_LOCK_RESERVED;
}
