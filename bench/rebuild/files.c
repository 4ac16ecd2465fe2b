/* SPDX-License-Identifier: MIT */
/* Member and scratch files in a private folder, created as needed and removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "rb.h"

int rb_dir_create(struct rb_dir *d, const char *parent, uint64_t need_bytes)
{
	struct statvfs vfs;
	struct statfs sfs;
	char probe[4200];
	int fd;

	memset(d, 0, sizeof(*d));
	/* Files are sparse until written; check now rather than fail with ENOSPC mid-run. */
	if (statvfs(parent, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < need_bytes + 64 * RB_MIB) {
		fprintf(stderr, "rebuild_bench: %s has %llu MiB free, this needs %llu MiB\n", parent,
			(unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize / RB_MIB),
			(unsigned long long)(need_bytes / RB_MIB));
		return -1;
	}
	snprintf(d->path, sizeof(d->path), "%s/rebuild_bench-XXXXXX", parent);
	if (!mkdtemp(d->path)) {
		perror(d->path);
		d->path[0] = 0;
		return -1;
	}
	d->ram = statfs(d->path, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
	snprintf(probe, sizeof(probe), "%s/probe", d->path);
	fd = open(probe, O_CREAT | O_RDWR | O_CLOEXEC | O_DIRECT, 0600);
	d->direct = fd >= 0;
	if (fd >= 0)
		close(fd);
	unlink(probe);
	return 0;
}

void rb_dir_remove(struct rb_dir *d)
{
	DIR *dir;
	struct dirent *e;

	if (!d->path[0])
		return;
	dir = opendir(d->path);
	while (dir && (e = readdir(dir))) {
		char p[4400];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", d->path, e->d_name);
		unlink(p);
	}
	if (dir)
		closedir(dir);
	rmdir(d->path);
	d->path[0] = 0;
}

int rb_file_create(struct rb_dir *d, const char *stem, uint64_t bytes, char *out, size_t len)
{
	int fd, err;

	snprintf(out, len, "%s/%s%u.img", d->path, stem, d->seq++);
	fd = open(out, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)bytes)) {
		err = -errno;
		perror(out);
		if (fd >= 0)
			close(fd);
		return err;
	}
	close(fd);
	return 0;
}

void rb_file_drop(const char *path)
{
	/* The library may still hold the old descriptor; truncating frees RAM on tmpfs now. */
	if (truncate(path, 0) && errno != ENOENT)
		perror(path);
	unlink(path);
}

/* Name role @p i's file for the library: the emulated drive's prefix, then the path. */
static void members_spec(struct rb_members *m, unsigned i)
{
	size_t np = strlen(m->prefix), nf = strlen(m->path[i]); /* both fit: see rb.h sizes */

	memcpy(m->spec[i], m->prefix, np);
	memcpy(m->spec[i] + np, m->path[i], nf + 1);
	m->paths[i] = m->spec[i];
}

int rb_members_create(struct rb_members *m, struct rb_dir *d, unsigned n, uint64_t bytes,
		      const struct rb_opts *o)
{
	m->n = n;
	m->retired[0] = 0;
	rb_drive_prefix(o, m->prefix, sizeof(m->prefix));
	for (unsigned i = 0; i < n; i++) {
		int rc = rb_file_create(d, "member", bytes, m->path[i], sizeof(m->path[i]));

		if (rc)
			return rc;
		members_spec(m, i);
	}
	return 0;
}

int rb_members_add(struct rb_members *m, struct rb_dir *d, unsigned k, uint64_t bytes)
{
	if (m->n + k > GRAID_MAX_MEMBERS)
		return -E2BIG;
	for (unsigned i = m->n; i < m->n + k; i++) {
		int rc = rb_file_create(d, "added", bytes, m->path[i], sizeof(m->path[i]));

		if (rc)
			return rc;
		members_spec(m, i);
	}
	m->n += k;
	return 0;
}

int rb_members_swap(struct rb_members *m, struct rb_dir *d, struct graid_array *a, unsigned idx,
		    uint64_t bytes)
{
	int rc = graid_array_fail_member(a, idx);

	if (rc) {
		fprintf(stderr, "rebuild_bench: fail member %u: %s\n", idx, graid_strerror(rc));
		return rc;
	}
	/* The previous swap's old file is past any use now that its rebuild has finished. */
	rb_members_drop_retired(m);
	memcpy(m->retired, m->path[idx], sizeof(m->retired));
	rc = rb_file_create(d, "fresh", bytes, m->path[idx], sizeof(m->path[idx]));
	members_spec(m, idx);
	if (rc == 0)
		rc = graid_array_replace_member(a, idx, m->paths[idx]);
	if (rc)
		fprintf(stderr, "rebuild_bench: replace member %u with %s: %s\n", idx, m->path[idx],
			graid_strerror(rc));
	return rc;
}

void rb_members_drop_retired(struct rb_members *m)
{
	if (m->retired[0])
		rb_file_drop(m->retired);
	m->retired[0] = 0;
}
