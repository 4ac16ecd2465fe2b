/* SPDX-License-Identifier: MIT */
/* The "graid" SQLite VFS: a database on RAID-6 through member failure, rebuild, reopen, crash. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sqlite3.h>

#include <libgraid/graid.h>

#include "graid_sqlite_vfs.h"

#define T_MEMBERS 6
#define T_FILES (T_MEMBERS + 1) /* the last one replaces a failed member */
#define T_MEMBER_BYTES (33u << 20)
#define T_ROWS 100000
#define T_BATCH 5000

struct t_env {
	char dir[64];
	char path[T_FILES][96];
	struct graid_array *a;
	sqlite3 *db;
};

static void t_make(struct t_env *e)
{
	char dir[sizeof(e->dir)] = "/tmp/graid-sqlite-test-XXXXXX";

	cr_assert_not_null(mkdtemp(dir));
	memcpy(e->dir, dir, sizeof(dir));
	for (int i = 0; i < T_FILES; i++) {
		int fd;

		snprintf(e->path[i], sizeof(e->path[i]), "%s/m%d.img", dir, i);
		fd = open(e->path[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		cr_assert(fd >= 0 && ftruncate(fd, T_MEMBER_BYTES) == 0, "%s", e->path[i]);
		close(fd);
	}
}

static void t_remove(struct t_env *e)
{
	DIR *d = opendir(e->dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(e->dir);
}

static void t_create(struct t_env *e)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = 64 * 1024 };
	const char *paths[T_MEMBERS];

	for (int i = 0; i < T_MEMBERS; i++)
		paths[i] = e->path[i];
	cr_assert_eq(graid_array_create(paths, T_MEMBERS, &cfg, &e->a), 0);
}

/* Open the array from files given by index, in that order. */
static void t_open(struct t_env *e, const int *order, unsigned n)
{
	const char *paths[T_FILES];
	int rc;

	for (unsigned i = 0; i < n; i++)
		paths[i] = e->path[order[i]];
	rc = graid_array_open(paths, n, NULL, &e->a);
	cr_assert_eq(rc, 0, "open: %s", graid_strerror(rc));
}

static sqlite3 *t_connect(void)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2("test.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
				 "graid");

	cr_assert_eq(rc, SQLITE_OK, "sqlite3_open_v2: %s", sqlite3_errmsg(db));
	return db;
}

static void t_attach(struct t_env *e)
{
	int rc = graid_sqlite_vfs_register(e->a, e->dir);

	cr_assert_eq(rc, 0, "register: %s", graid_strerror(rc));
	e->db = t_connect();
}

static void t_detach(struct t_env *e)
{
	cr_assert_eq(sqlite3_close(e->db), SQLITE_OK);
	e->db = NULL;
	cr_assert_eq(graid_sqlite_vfs_unregister(), 0);
}

/* A new connection has an empty page cache: what it checks comes off the array. */
static void t_reconnect(struct t_env *e)
{
	cr_assert_eq(sqlite3_close(e->db), SQLITE_OK);
	e->db = t_connect();
}

static void t_close(struct t_env *e)
{
	cr_assert_eq(graid_array_close(e->a), 0);
	e->a = NULL;
}

static int t_exec_rc(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static void t_exec(sqlite3 *db, const char *sql)
{
	cr_assert_eq(t_exec_rc(db, sql), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
}

static sqlite3_int64 t_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	sqlite3_int64 v;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
		     sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void t_integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sqlite3_errmsg(db));
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
}

/* Row i: region i % 10, amount (i * 37) % 1000, note "order i". */
static void t_fill(sqlite3 *db, int first, int n)
{
	sqlite3_stmt *st;

	t_exec(db, "CREATE TABLE IF NOT EXISTS orders(id INTEGER PRIMARY KEY, region INTEGER, "
		   "amount INTEGER, note TEXT);"
		   "CREATE INDEX IF NOT EXISTS orders_region ON orders(region)");
	cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO orders VALUES(?,?,?,?)", -1, &st, NULL),
		     SQLITE_OK);
	for (int i = first; i < first + n; i++) {
		char note[32];

		if ((i - first) % T_BATCH == 0)
			t_exec(db, "BEGIN");
		snprintf(note, sizeof(note), "order %d", i);
		sqlite3_bind_int(st, 1, i);
		sqlite3_bind_int(st, 2, i % 10);
		sqlite3_bind_int(st, 3, (i * 37) % 1000);
		sqlite3_bind_text(st, 4, note, -1, SQLITE_TRANSIENT);
		cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "row %d: %s", i, sqlite3_errmsg(db));
		sqlite3_reset(st);
		if ((i - first) % T_BATCH == T_BATCH - 1 || i == first + n - 1)
			t_exec(db, "COMMIT");
	}
	sqlite3_finalize(st);
}

/* The table holds rows 0 .. n-1 exactly, and the database is sound. */
static void t_expect(sqlite3 *db, int n)
{
	sqlite3_int64 sum = 0, region3 = 0;

	for (int i = 0; i < n; i++) {
		sum += (i * 37) % 1000;
		region3 += i % 10 == 3;
	}
	cr_assert_eq(t_int(db, "SELECT count(*) FROM orders"), n);
	cr_assert_eq(t_int(db, "SELECT sum(amount) FROM orders"), sum);
	cr_assert_eq(t_int(db, "SELECT count(*) FROM orders WHERE region = 3"), region3);
	cr_assert_eq(t_int(db, "SELECT count(*) FROM orders WHERE note = 'order ' || id"), n);
	cr_assert_eq(t_int(db, "SELECT max(id) FROM orders"), n - 1);
	t_integrity_ok(db);
}

Test(sqlite_vfs, rows_survive_a_failed_member_a_rebuild_and_a_reopen, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const int shuffled[T_MEMBERS] = { 5, 3, T_MEMBERS, 1, 0, 4 }; /* role 2 replaced */
	struct t_env e;

	t_make(&e);
	t_create(&e);
	t_attach(&e);
	t_fill(e.db, 0, T_ROWS);
	t_expect(e.db, T_ROWS);

	cr_assert_eq(graid_array_fail_member(e.a, 2), 0);
	t_reconnect(&e);
	t_expect(e.db, T_ROWS);
	t_fill(e.db, T_ROWS, 1000); /* degraded writes */
	t_expect(e.db, T_ROWS + 1000);

	cr_assert_eq(graid_array_replace_member(e.a, 2, e.path[T_MEMBERS]), 0);
	cr_assert_eq(graid_array_rebuild(e.a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	t_reconnect(&e);
	t_expect(e.db, T_ROWS + 1000);

	t_detach(&e);
	t_close(&e);
	t_open(&e, shuffled, T_MEMBERS);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	t_attach(&e);
	t_expect(e.db, T_ROWS + 1000);

	/* Without roles 0 and 5, every stripe needs the rebuilt role 2: it must be right. */
	cr_assert_eq(graid_array_fail_member(e.a, 0), 0);
	cr_assert_eq(graid_array_fail_member(e.a, 5), 0);
	t_reconnect(&e);
	t_expect(e.db, T_ROWS + 1000);
	t_detach(&e);
	t_close(&e);
	t_remove(&e);
}

/* The database's bytes straight off the array: the VFS's header block comes first. */
static uint8_t *t_raw(struct graid_array *a, size_t bytes)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *buf = malloc(bytes);

	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_not_null(buf);
	cr_assert_eq(graid_array_read(a, buf, bytes, info.block_size), (ssize_t)bytes);
	return buf;
}

static int t_journal_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int bytes = -1;

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct stat st;

		if (n > 8 && strcmp(de->d_name + n - 8, "-journal") == 0 &&
		    fstatat(dirfd(d), de->d_name, &st, 0) == 0)
			bytes = (int)st.st_size;
	}
	if (d)
		closedir(d);
	return bytes;
}

/* In a child that dies mid-transaction, after its cache spilled to the array. */
static int t_crash_child(struct t_env *e, const int *order)
{
	sqlite3 *db;

	t_open(e, order, T_MEMBERS);
	t_attach(e);
	db = e->db;
	t_exec(db, "PRAGMA cache_size = 4; BEGIN; UPDATE orders SET amount = -1, note = 'lost'");
	t_exec(db, "DELETE FROM orders WHERE id % 3 = 0");
	_exit(0); /* no COMMIT, no close: the journal stays hot */
}

Test(sqlite_vfs, a_transaction_cut_by_a_crash_is_rolled_back_from_the_journal, .timeout = 300)
{
	const int order[T_MEMBERS] = { 0, 1, 2, 3, 4, 5 };
	uint8_t *before, *crashed, *after;
	struct t_env e;
	size_t bytes;
	int status;
	pid_t pid;

	t_make(&e);
	t_create(&e);
	t_attach(&e);
	t_fill(e.db, 0, 20000);
	bytes = (size_t)t_int(e.db, "SELECT page_count * page_size FROM pragma_page_count, "
				    "pragma_page_size");
	t_detach(&e);
	before = t_raw(e.a, bytes);
	t_close(&e);

	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		t_crash_child(&e, order);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: %d", status);
	cr_assert_gt(t_journal_bytes(e.dir), 0, "the child left no hot journal");

	t_open(&e, order, T_MEMBERS);
	crashed = t_raw(e.a, bytes);
	cr_assert_neq(memcmp(before, crashed, bytes), 0, "the child's cache never spilled");
	t_attach(&e);
	t_expect(e.db, 20000); /* reading rolls the hot journal back */
	t_detach(&e);
	after = t_raw(e.a, bytes);
	cr_assert_eq(memcmp(before, after, bytes), 0, "rollback did not restore every byte");
	t_close(&e);
	free(before);
	free(crashed);
	free(after);
	t_remove(&e);
}

Test(sqlite_vfs, a_second_connection_waits_for_the_writer)
{
	struct t_env e;
	sqlite3 *db2;

	t_make(&e);
	t_create(&e);
	t_attach(&e);
	t_fill(e.db, 0, 1000);
	db2 = t_connect();

	/* A writer (RESERVED) keeps a second writer out but lets it read. */
	t_exec(e.db, "BEGIN IMMEDIATE; INSERT INTO orders VALUES(1000, 0, 0, 'order 1000')");
	cr_assert_eq(t_exec_rc(db2, "BEGIN IMMEDIATE"), SQLITE_BUSY);
	cr_assert_eq(t_int(db2, "SELECT count(*) FROM orders"), 1000);
	t_exec(e.db, "COMMIT");
	cr_assert_eq(t_int(db2, "SELECT count(*) FROM orders"), 1001);

	/* A reader in a transaction (SHARED) holds the writer's commit off until it ends. */
	t_exec(db2, "BEGIN");
	cr_assert_eq(t_int(db2, "SELECT count(*) FROM orders"), 1001);
	t_exec(e.db, "BEGIN IMMEDIATE; DELETE FROM orders WHERE id = 1000");
	cr_assert_eq(t_exec_rc(e.db, "COMMIT"), SQLITE_BUSY);
	t_exec(db2, "COMMIT");
	t_exec(e.db, "COMMIT");
	cr_assert_eq(t_int(db2, "SELECT count(*) FROM orders"), 1000);

	cr_assert_eq(graid_sqlite_vfs_unregister(), -EBUSY, "unregistered under open databases");
	cr_assert_eq(sqlite3_close(db2), SQLITE_OK);
	t_expect(e.db, 1000);
	t_detach(&e);
	t_close(&e);
	t_remove(&e);
}

Test(sqlite_vfs, small_pages_go_through_read_modify_write_of_whole_blocks)
{
	const int order[T_MEMBERS] = { 3, 4, 5, 0, 1, 2 };
	struct t_env e;

	t_make(&e);
	t_create(&e);
	t_attach(&e);
	t_exec(e.db, "PRAGMA page_size = 1024");
	t_fill(e.db, 0, 20000);
	cr_assert_eq(t_int(e.db, "PRAGMA page_size"), 1024);
	t_expect(e.db, 20000);
	t_detach(&e);
	t_close(&e);

	t_open(&e, order, T_MEMBERS);
	t_attach(&e);
	t_expect(e.db, 20000);
	t_fill(e.db, 20000, 3000);
	t_expect(e.db, 23000);
	t_detach(&e);
	t_close(&e);
	t_remove(&e);
}

Test(sqlite_vfs, an_array_holding_other_data_is_refused)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct t_env e;
	uint8_t *junk;

	t_make(&e);
	t_create(&e);
	cr_assert_eq(graid_sqlite_vfs_register(e.a, e.dir), 0);
	cr_assert_eq(graid_sqlite_vfs_register(e.a, e.dir), -EBUSY);
	cr_assert_eq(graid_sqlite_vfs_unregister(), 0);
	cr_assert_eq(graid_sqlite_vfs_unregister(), -ENOENT);

	cr_assert_eq(graid_array_info(e.a, &info), 0);
	junk = malloc(info.block_size);
	memset(junk, 0x5a, info.block_size);
	cr_assert_eq(graid_array_write(e.a, junk, info.block_size, 0), (ssize_t)info.block_size);
	cr_assert_eq(graid_sqlite_vfs_register(e.a, e.dir), -EINVAL);
	cr_assert_eq(graid_sqlite_vfs_register(e.a, "/nonexistent/dir"), -ENOENT);
	free(junk);
	t_close(&e);
	t_remove(&e);
}

static uint64_t t_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

/*
 * A VACUUM that shrinks the database truncates it: once the smaller size is synced, the
 * blocks cut off are discarded, so the array's live-data map frees their regions (and the
 * member files get holes). The rows left are all there, then and after a reopen.
 */
Test(sqlite_vfs, a_truncate_discards_what_it_cut_off, .timeout = 300)
{
	const int order[T_MEMBERS] = { 0, 1, 2, 3, 4, 5 };
	uint64_t full, after;
	struct t_env e;

	t_make(&e);
	t_create(&e);
	t_attach(&e);
	t_fill(e.db, 0, T_ROWS);
	cr_assert_eq(graid_array_flush(e.a), 0);
	full = t_used(e.a);
	t_exec(e.db, "DELETE FROM orders WHERE id >= 1000");
	t_exec(e.db, "VACUUM");
	t_expect(e.db, 1000);
	/* VACUUM truncates after its last sync: the discard comes with the close. */
	t_detach(&e);
	cr_assert_eq(graid_array_flush(e.a), 0);
	after = t_used(e.a);
	/* The regions wholly inside what was cut off (3.5 MB down to 48 KiB) are freed. */
	cr_assert_leq(after * 2, full, "used bytes went from %llu only to %llu",
		     (unsigned long long)full, (unsigned long long)after);
	t_attach(&e);
	t_expect(e.db, 1000);
	t_detach(&e);
	t_close(&e);

	t_open(&e, order, T_MEMBERS);
	t_attach(&e);
	t_expect(e.db, 1000);
	t_fill(e.db, 1000, 2000);
	t_expect(e.db, 3000);
	t_detach(&e);
	t_close(&e);
	t_remove(&e);
}
