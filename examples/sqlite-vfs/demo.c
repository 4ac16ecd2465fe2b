/* SPDX-License-Identifier: MIT */
/*
 * graid-sqlite-demo: a SQLite database on a RAID-6 array of six member files, through the
 * "graid" VFS: create tables, insert 100,000 rows in transactions, query them, and lose
 * two members on the way.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include <libgraid/graid.h>

#include "graid_sqlite_vfs.h"

#define DEMO_MEMBERS 6
#define DEMO_MEMBER_BYTES (33u << 20) /* 1 MiB of metadata + 32 MiB of data each */
#define DEMO_ROWS 100000
#define DEMO_BATCH 10000

struct demo_files {
	char dir[64];
	char path[DEMO_MEMBERS][96];
	const char *paths[DEMO_MEMBERS];
};

static double demo_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int demo_make_files(struct demo_files *f)
{
	char dir[sizeof(f->dir)] = "/tmp/graid-sqlite-XXXXXX";

	if (!mkdtemp(dir))
		return -1;
	memcpy(f->dir, dir, sizeof(dir));
	for (int i = 0; i < DEMO_MEMBERS; i++) {
		int fd;

		snprintf(f->path[i], sizeof(f->path[i]), "%s/member%d.img", dir, i);
		f->paths[i] = f->path[i];
		fd = open(f->path[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, DEMO_MEMBER_BYTES)) {
			perror(f->path[i]);
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* Everything in the folder: members, the database's stand-in, a journal left behind. */
static void demo_remove_files(struct demo_files *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(f->dir);
}

static int demo_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", sql, err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int demo_fill(sqlite3 *db)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (demo_exec(db, "CREATE TABLE region(id INTEGER PRIMARY KEY, name TEXT);"
			  "CREATE TABLE orders(id INTEGER PRIMARY KEY, region INTEGER, "
			  "amount INTEGER, note TEXT);"
			  "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM r WHERE i<9) "
			  "INSERT INTO region SELECT i, 'region ' || i FROM r;") ||
	    sqlite3_prepare_v2(db, "INSERT INTO orders VALUES(?,?,?,?)", -1, &st, NULL))
		return -1;
	for (int i = 0; i < DEMO_ROWS && !rc; i++) {
		char note[32];

		if (i % DEMO_BATCH == 0 && demo_exec(db, "BEGIN"))
			return -1;
		snprintf(note, sizeof(note), "order %d", i);
		sqlite3_bind_int(st, 1, i);
		sqlite3_bind_int(st, 2, i % 10);
		sqlite3_bind_int(st, 3, (i * 37) % 1000);
		sqlite3_bind_text(st, 4, note, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
		sqlite3_reset(st);
		if (i % DEMO_BATCH == DEMO_BATCH - 1 && demo_exec(db, "COMMIT"))
			rc = -1;
	}
	sqlite3_finalize(st);
	return rc || demo_exec(db, "CREATE INDEX orders_amount ON orders(amount)") ? -1 : 0;
}

/* Print every row of a query, columns separated by spaces. */
static int demo_query(sqlite3 *db, const char *title, const char *sql)
{
	sqlite3_stmt *st;
	double t0 = demo_now();
	int rc;

	printf("   %s\n", title);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL)) {
		fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
		return -1;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		printf("     ");
		for (int c = 0; c < sqlite3_column_count(st); c++)
			printf(" %s", (const char *)sqlite3_column_text(st, c));
		printf("\n");
	}
	sqlite3_finalize(st);
	printf("      (%.1f ms)\n", (demo_now() - t0) * 1e3);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int demo_queries(sqlite3 *db)
{
	return demo_query(db, "rows and total:", "SELECT count(*), sum(amount) FROM orders") ||
	       demo_query(db, "the three biggest regions:",
			  "SELECT r.name, count(*), sum(o.amount) AS s FROM orders o "
			  "JOIN region r ON r.id = o.region GROUP BY r.id ORDER BY s DESC LIMIT 3") ||
	       demo_query(db, "orders of amount 999 (by the index):",
			  "SELECT count(*) FROM orders WHERE amount = 999") ||
	       demo_query(db, "integrity check:", "PRAGMA integrity_check")
		       ? -1 : 0;
}

static int demo_run(struct graid_array *a, const char *dir)
{
	sqlite3 *db = NULL;
	double t0;
	int rc;

	rc = graid_sqlite_vfs_register(a, dir);
	if (rc) {
		fprintf(stderr, "register the VFS: %s\n", graid_strerror(rc));
		return -1;
	}
	if (sqlite3_open_v2("demo.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "graid")) {
		fprintf(stderr, "open: %s\n", sqlite3_errmsg(db));
		rc = -1;
	} else {
		printf("2. Database %s (bytes on the array, journal beside this name)\n",
		       sqlite3_db_filename(db, "main"));
	}
	t0 = demo_now();
	if (!rc && !(rc = demo_fill(db)))
		printf("   inserted %d rows in %d transactions, indexed: %.2f s\n", DEMO_ROWS,
		       DEMO_ROWS / DEMO_BATCH, demo_now() - t0);
	if (!rc) {
		printf("3. Queries\n");
		rc = demo_queries(db);
	}
	if (!rc) {
		graid_array_fail_member(a, 1);
		graid_array_fail_member(a, 4);
		/* A new connection starts with an empty page cache, so every page is read. */
		sqlite3_close(db);
		rc = sqlite3_open_v2("demo.db", &db, SQLITE_OPEN_READWRITE, "graid") ? -1 : 0;
		printf("4. Failed members 1 and 4, reconnected; the same queries, through P and Q\n");
		if (!rc)
			rc = demo_queries(db);
	}
	sqlite3_close(db);
	graid_sqlite_vfs_unregister();
	return rc;
}

int main(void)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct demo_files f;
	int rc;

	if (demo_make_files(&f))
		return 1;
	rc = graid_array_create(f.paths, DEMO_MEMBERS, &cfg, &a);
	if (rc) {
		fprintf(stderr, "create: %s\n", graid_strerror(rc));
		demo_remove_files(&f);
		return 1;
	}
	graid_array_info(a, &info);
	printf("1. RAID-6 over %d files in %s: %llu MiB, block %u, engine %s\n", DEMO_MEMBERS,
	       f.dir, (unsigned long long)(info.size >> 20), info.block_size, info.engine);
	rc = demo_run(a, f.dir);
	graid_array_close(a);
	demo_remove_files(&f);
	printf("\n%s\n", rc ? "FAILED" : "ok: 100,000 rows on RAID-6 through SQLite, two members lost.");
	return rc ? 1 : 0;
}
