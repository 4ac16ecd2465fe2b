/* SPDX-License-Identifier: MIT */
/*
 * Member files in a private folder under --dir, created before the runs and removed after;
 * or the devices --devices names, used as they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <unistd.h>

#include "ab.h"

bool ab_path_direct(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The path tables for @p n members; 0, or -1 (everything released). */
static int members_alloc(struct ab_members *m, unsigned n)
{
	m->path = calloc(n, sizeof(*m->path));
	m->paths = calloc(n, sizeof(*m->paths));
	if (m->path && m->paths)
		return 0;
	ab_members_remove(m);
	return -1;
}

int ab_members_create(struct ab_members *m, const char *parent, unsigned n, uint64_t file_bytes)
{
	struct statvfs vfs;

	memset(m, 0, sizeof(*m));
	/* Files are sparse until written; check now rather than fail with ENOSPC mid-run. */
	if (statvfs(parent, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < file_bytes * n + (64u << 20)) {
		fprintf(stderr, "array_bench: %s has %llu MiB free, the members need %llu MiB\n",
			parent, (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize >> 20),
			(unsigned long long)(file_bytes * n >> 20));
		return -1;
	}
	snprintf(m->dir, sizeof(m->dir), "%s/array_bench-XXXXXX", parent);
	if (!mkdtemp(m->dir)) {
		perror(m->dir);
		return -1;
	}
	if (members_alloc(m, n))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int fd;

		snprintf(m->path[i], sizeof(m->path[i]), "%s/member%u.img", m->dir, i);
		m->paths[i] = m->path[i];
		fd = open(m->path[i], O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
		m->n = i + 1;
		if (fd < 0 || ftruncate(fd, (off_t)file_bytes)) {
			perror(m->path[i]);
			if (fd >= 0)
				close(fd);
			ab_members_remove(m);
			return -1;
		}
		close(fd);
	}
	m->file_bytes = file_bytes;
	return 0;
}

int ab_members_use(struct ab_members *m, const char *const *paths, unsigned n, uint64_t need)
{
	memset(m, 0, sizeof(*m));
	m->given = true;
	if (members_alloc(m, n))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t bytes = 0;
		struct stat st;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st)) {
			perror(paths[i]);
			if (fd >= 0)
				close(fd);
			ab_members_remove(m);
			return -1;
		}
		if (S_ISBLK(st.st_mode))
			ioctl(fd, BLKGETSIZE64, &bytes);
		else
			bytes = (uint64_t)st.st_size;
		close(fd);
		if (bytes < need) {
			fprintf(stderr, "array_bench: %s has %llu MiB, a member needs %llu MiB "
					"(--member-mib)\n", paths[i], (unsigned long long)(bytes >> 20),
				(unsigned long long)(need >> 20));
			ab_members_remove(m);
			return -1;
		}
		snprintf(m->path[i], sizeof(m->path[i]), "%s", paths[i]);
		m->paths[i] = m->path[i];
		m->n = i + 1;
	}
	m->file_bytes = need;
	return 0;
}

void ab_members_remove(struct ab_members *m)
{
	for (unsigned i = 0; i < m->n && !m->given; i++)
		unlink(m->path[i]);
	if (m->dir[0])
		rmdir(m->dir);
	free(m->path);
	free(m->paths);
	memset(m, 0, sizeof(*m));
}
