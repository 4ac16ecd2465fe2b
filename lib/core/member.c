/* SPDX-License-Identifier: MIT */
/* One member device: open it the fastest way it allows, identify it, read and write its superblock. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "array.h"

int member_open(struct member *m, const char *path, bool exclusive)
{
	int flags = O_RDWR | O_CLOEXEC;
	struct stat st;
	int fd, rc;

	m->fault = NULL;
	if (!strncmp(path, "faulty:", 7)) {
		/* Test-only: the path after the options is the real member. */
		struct member_fault *f;

		rc = fault_parse(path, &f, &path);
		if (rc)
			return rc;
		rc = member_open(m, path, exclusive);
		if (rc)
			fault_free(f);
		else
			m->fault = f;
		return rc;
	}
	if (strlen(path) >= sizeof(m->path)) {
		graid__log(GRAID_LOG_ERR, "member %.64s...: path too long", path);
		return -EINVAL;
	}
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		graid__log(GRAID_LOG_ERR, "member %s: not a regular file or block device", path);
		return -EINVAL;
	}
	/* O_EXCL on a block device fails if it is mounted or held by another array. */
	if (S_ISBLK(st.st_mode) && exclusive)
		flags |= O_EXCL;
	fd = open(path, flags | O_DIRECT);
	m->direct = fd >= 0;
	if (fd < 0 && errno == EINVAL) {
		/* tmpfs and some filesystems refuse O_DIRECT: buffered, with fdatasync on flush. */
		fd = open(path, flags);
		if (fd >= 0)
			graid__log(GRAID_LOG_INFO, "member %s: no O_DIRECT here, using buffered I/O",
				   path);
	}
	if (fd < 0)
		return -errno;
	/*
	 * One open array per member: a second opener (another process, or this one) would
	 * undo the first's state changes. Read-only openers take a shared lock if they can and
	 * do without it if they cannot: they write nothing.
	 */
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) && exclusive) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		graid__log(GRAID_LOG_ERR, "member %s is in use by another open array", path);
		close(fd);
		return err;
	}
	m->fd = fd;
	m->is_blk = S_ISBLK(st.st_mode);
	snprintf(m->path, sizeof(m->path), "%s", path);
	if (m->is_blk) {
		int lbs = 512;

		if (ioctl(fd, BLKGETSIZE64, &m->size) || ioctl(fd, BLKSSZGET, &lbs)) {
			int err = -errno;

			close(fd);
			m->fd = -1;
			return err;
		}
		m->lbs = (uint32_t)lbs;
		m->dev = st.st_rdev;
		m->ino = 0;
		snprintf(m->identity, sizeof(m->identity), "block %u:%u", major(st.st_rdev),
			 minor(st.st_rdev));
	} else {
		/* Files: 4 KiB keeps O_DIRECT legal on every common filesystem. */
		m->size = (uint64_t)st.st_size;
		m->lbs = 4096;
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		snprintf(m->identity, sizeof(m->identity), "file dev %u:%u ino %llu",
			 major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino);
	}
	return 0;
}

int member_identity(const char *path, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (!strncmp(path, "faulty:", 7)) {
		/* The real path follows the second colon: "faulty:OPTIONS:PATH". */
		const char *p = path;
		int colons = 0;

		while (*p && colons < 2)
			colons += *p++ == ':';
		if (colons == 2)
			path = p;
	}
	if (stat(path, &st))
		return -errno;
	*dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	*ino = S_ISBLK(st.st_mode) ? 0 : st.st_ino;
	return 0;
}

void member_close(struct member *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	fault_free(m->fault);
	m->fault = NULL;
}

static int member_pio(struct member *m, void *buf, size_t len, uint64_t off, bool write)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write ? pwrite(m->fd, (char *)buf + done, len - done, (off_t)(off + done))
				  : pread(m->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* past the end of the member */
		done += (size_t)n;
	}
	return 0;
}

int member_read_sb(struct member *m, struct graid_sb *sb)
{
	void *buf;
	int rc;

	if (posix_memalign(&buf, ARRAY_ALIGN, GRAID_SB_SIZE))
		return -ENOMEM;
	rc = member_pio(m, buf, GRAID_SB_SIZE, 0, false);
	if (rc == 0)
		rc = graid_sb_decode(buf, sb);
	free(buf);
	return rc;
}

int member_write_sb(struct member *m, const struct graid_sb *sb)
{
	void *buf;
	int rc;

	if (posix_memalign(&buf, ARRAY_ALIGN, GRAID_SB_SIZE))
		return -ENOMEM;
	graid_sb_encode(sb, buf);
	rc = member_pio(m, buf, GRAID_SB_SIZE, 0, true);
	if (rc == 0 && fdatasync(m->fd))
		rc = -errno;
	free(buf);
	return rc;
}

/* Zero [off, off+len): deallocate where the device can, write zeroes where it cannot. */
int member_zero_range(struct member *m, uint64_t off, uint64_t len)
{
	const size_t piece = 1u << 20;
	void *zero;
	int rc = 0;

	if (m->is_blk) {
		uint64_t range[2] = { off, len };

		if (ioctl(m->fd, BLKZEROOUT, range) == 0)
			return 0;
	} else if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			     (off_t)len) == 0) {
		return 0;
	}
	if (posix_memalign(&zero, ARRAY_ALIGN, piece))
		return -ENOMEM;
	memset(zero, 0, piece);
	for (uint64_t done = 0; rc == 0 && done < len; done += piece)
		rc = member_pio(m, zero, len - done < piece ? (size_t)(len - done) : piece,
				off + done, true);
	free(zero);
	return rc;
}
