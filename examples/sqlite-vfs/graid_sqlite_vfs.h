/* SPDX-License-Identifier: MIT */
/* A SQLite VFS, "graid", that keeps one database file on a libgraid array. */
#ifndef GRAID_SQLITE_VFS_H
#define GRAID_SQLITE_VFS_H

#include <libgraid/graid.h>

/**
 * @brief Register the VFS "graid" (not as the default) for one database on @p a.
 *
 * The database lives on the array, after a one-block header that records its size. Every
 * other file SQLite asks for (rollback journal, WAL, super-journal, temp files) goes to the
 * default OS VFS in @p journal_dir; there the database's name is
 * "<journal_dir>/graid-<array uuid>.db", an empty stand-in file created here (the OS VFS
 * copies its permissions to the journal). Whatever name is given to sqlite3_open_v2() with
 * vfs "graid", it opens that one database, so a hot journal is found whatever the name.
 * Locks are kept in this process only.
 *
 * @param a an open array; it must stay open until graid_sqlite_vfs_unregister().
 * @param journal_dir an existing directory, on storage as durable as the array wants to be.
 * @return 0; -EBUSY a "graid" VFS is registered already; -EINVAL NULL argument, or the
 *   array's first block holds something that is not this VFS's header (or a newer
 *   version of it); -ENOENT/-EACCES/-ENOTDIR @p journal_dir; -ENAMETOOLONG;
 *   -ENODEV SQLite has no default VFS; -EIO reading the header; -ENOMEM.
 */
int graid_sqlite_vfs_register(struct graid_array *a, const char *journal_dir);

/**
 * @brief Unregister the VFS and forget the array (which the caller then closes).
 * @return 0; -EBUSY a database connection still has the database open; -ENOENT none
 *   is registered.
 */
int graid_sqlite_vfs_unregister(void);

#endif /* GRAID_SQLITE_VFS_H */
