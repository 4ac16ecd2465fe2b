/* SPDX-License-Identifier: MIT */
/* One member device: open it the fastest way it allows, identify it, read and write its superblock. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "array/array.h"
#include "member/member_path.h"
#include "common/signals.h"
#include "member/member.h"
#include "member/member_nvme.h"

/*
 * The device's descriptor: O_DIRECT where it takes it (*@p direct), buffered where it
 * refuses it, and (@p exclusive) held for this open array alone. @p read_only: O_RDONLY.
 * @return the descriptor, or -EBUSY another open array holds it, or -errno.
 */
static int member_open_fd(const char *path, const struct stat *st, bool exclusive,
			  bool read_only, bool *direct)
{
	int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd;

	/* O_EXCL on a block device fails if it is mounted or held by another array. */
	if (S_ISBLK(st->st_mode) && exclusive)
		flags |= O_EXCL;
	/*
	 * An NVMe generic char device takes neither O_DIRECT nor read/write: its I/O is NVMe
	 * passthrough, which never passes a page cache, so it counts as direct.
	 */
	fd = open(path, S_ISCHR(st->st_mode) ? flags : flags | O_DIRECT);
	*direct = fd >= 0;
	if (fd < 0 && errno == EINVAL && !S_ISCHR(st->st_mode)) {
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
	 * undo the first's state changes. Assembly opens unlocked, reads the superblocks, and
	 * locks the array's members in role order afterwards (member_lock); looking (read-only
	 * opens) takes no lock, so monitoring never stands in an owner's way.
	 */
	if (exclusive && flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		graid__log(GRAID_LOG_ERR, "member %s is in use by another open array", path);
		close(fd);
		return err;
	}
	return fd;
}

/*
 * An open member's size, logical block size and identity (the device number, and inode
 * for files, that tell one member from another): from NVMe identify for a generic device,
 * the block layer for a block device, the file's own for a file. 0 or -errno.
 */
static int member_measure(struct member *m, const char *path, const struct stat *st)
{
	if (m->dev.nvme.passthru) {
		m->dev.size = m->dev.nvme.nsze * m->dev.nvme.lba_bytes;
		m->dev.lbs = m->dev.nvme.lba_bytes;
		/* The block device's number: the same namespace under either name is one member. */
		if (member_nvme_blockdev(path, &m->dev.devno))
			m->dev.devno = st->st_rdev;
		m->dev.ino = 0;
		snprintf(m->dev.identity, sizeof(m->dev.identity), "nvme-generic %u:%u (block %u:%u)",
			 major(st->st_rdev), minor(st->st_rdev), major(m->dev.devno), minor(m->dev.devno));
	} else if (m->dev.is_blk) {
		int lbs = 512;

		if (ioctl(m->dev.fd, BLKGETSIZE64, &m->dev.size) || ioctl(m->dev.fd, BLKSSZGET, &lbs))
			return -errno;
		m->dev.lbs = (uint32_t)lbs;
		m->dev.devno = st->st_rdev;
		m->dev.ino = 0;
		snprintf(m->dev.identity, sizeof(m->dev.identity), "block %u:%u", major(st->st_rdev),
			 minor(st->st_rdev));
	} else {
		/* Files: 4 KiB keeps O_DIRECT legal on every common filesystem. */
		m->dev.size = (uint64_t)st->st_size;
		m->dev.lbs = 4096;
		m->dev.devno = st->st_dev;
		m->dev.ino = st->st_ino;
		snprintf(m->dev.identity, sizeof(m->dev.identity), "file dev %u:%u ino %llu",
			 major(st->st_dev), minor(st->st_dev), (unsigned long long)st->st_ino);
	}
	return 0;
}

/* @p read_only: O_RDONLY, for a look that writes nothing (never with @p exclusive). */
static int member_open_how(struct member *m, const char *path, bool exclusive, bool read_only)
{
	struct stat st;
	int fd, rc;

	m->dev.fault = NULL;
#if GRAID_FAULT_INJECTION
	if (!strncmp(path, "faulty:", 7)) {
		/* Test-only: the path after the options is the real member. */
		struct member_fault *f;

		rc = fault_parse(path, &f, &path);
		if (rc)
			return rc;
		rc = member_open_how(m, path, exclusive, read_only);
		if (rc)
			fault_free(f);
		else
			m->dev.fault = f;
		return rc;
	}
#endif
	/* Without fault injection "faulty:..." is a path like any other (and does not exist). */
	if (member_path_is_spec(path)) {
		/* Named by NVMe identity: whatever device node it has on this host now. */
		char node[64];

		rc = graid_member_resolve(path, node, sizeof(node));
		return rc ? rc : member_open_how(m, node, exclusive, read_only);
	}
	if (strlen(path) >= sizeof(m->dev.path)) {
		graid__log(GRAID_LOG_ERR, "member %.64s...: path too long", path);
		return -EINVAL;
	}
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode) && !S_ISCHR(st.st_mode)) {
		graid__log(GRAID_LOG_ERR, "member %s: not a regular file, block device or NVMe "
					  "generic device", path);
		return -EINVAL;
	}
	fd = member_open_fd(path, &st, exclusive, read_only, &m->dev.direct);
	if (fd < 0)
		return fd;
	m->dev.fd = fd;
	m->dev.is_blk = S_ISBLK(st.st_mode);
	snprintf(m->dev.path, sizeof(m->dev.path), "%s", path);
	rc = member_nvme_identify(m, &st);
	/*
	 * A block device not known to be a local NVMe namespace may sit on a network
	 * transport the library cannot see from here (nvme-tcp in a build without libnvme, dm
	 * or md over one): its member I/O is guarded from now on (common/signals.h).
	 */
	if (rc == 0 && m->dev.is_blk && !(m->dev.nvme.is_nvme && !m->dev.nvme.fabric))
		signals_note_fabric();
	if (rc == 0)
		rc = member_measure(m, path, &st);
	if (rc) {
		close(fd);
		m->dev.fd = -1;
	}
	return rc;
}

int member_open(struct member *m, const char *path, bool exclusive)
{
	return member_open_how(m, path, exclusive, false);
}

int member_open_read_only(struct member *m, const char *path)
{
	return member_open_how(m, path, false, true);
}

bool member_may_write(const struct member *m)
{
	int ro = 0;

	if (faccessat(AT_FDCWD, m->dev.path, W_OK, AT_EACCESS))
		return false;
	/* A block device set read-only (BLKROSET, a write-protected drive) refuses writes. */
	return !(m->dev.is_blk && ioctl(m->dev.fd, BLKROGET, &ro) == 0 && ro);
}

int member_size_now(struct member *m, uint64_t *size)
{
	struct stat st;

	if (m->dev.nvme.passthru) {
		*size = m->dev.size; /* its namespace size came from identify at open */
		return 0;
	}
	if (m->dev.is_blk)
		return ioctl(m->dev.fd, BLKGETSIZE64, size) ? -errno : 0;
	if (fstat(m->dev.fd, &st))
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

int member_lock(struct member *m)
{
	if (m->dev.is_blk) {
		/* O_EXCL is a block device's own hold (also against mounts and md): a new open. */
		int flags = O_RDWR | O_CLOEXEC | O_EXCL | (m->dev.direct ? O_DIRECT : 0);
		struct stat st;
		int fd = open(m->dev.path, flags);

		if (fd < 0 && errno == EBUSY) {
			/* A libgraid holder holds the flock too; without it, the holder is not ours. */
			if (flock(m->dev.fd, LOCK_SH | LOCK_NB) == 0) {
				flock(m->dev.fd, LOCK_UN);
				return -EEXIST;
			}
			return -EBUSY;
		}
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != m->dev.devno) {
			close(fd);
			return -ESTALE; /* the path names another device now */
		}
		close(m->dev.fd);
		m->dev.fd = fd;
	}
	if (flock(m->dev.fd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
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
	*dev = S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode) ? st.st_rdev : st.st_dev;
	*ino = S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode) ? 0 : st.st_ino;
	if (S_ISCHR(st.st_mode))
		member_nvme_blockdev(path, dev); /* as member_open() records it */
	return 0;
}

void member_close(struct member *m)
{
	if (m->dev.fd >= 0)
		close(m->dev.fd);
	m->dev.fd = -1;
	fault_free(m->dev.fault);
	m->dev.fault = NULL;
}

int member_pio(struct member *m, void *buf, size_t len, uint64_t off, bool write)
{
	return member_pio_fd(m, m->dev.fd, buf, len, off, write);
}

int member_pio_fd(struct member *m, int fd, void *buf, size_t len, uint64_t off, bool write)
{
	size_t done = 0;

	/* A modelled reservation held by another key refuses every write, metadata too. */
	if (write && m->dev.fault && fault_pr_refuses(m->dev.fault))
		return -EBADE;
	if (write && fault_write_cut())
		return -EIO; /* a test's crash: nothing lands from here on */
	if (m->dev.nvme.passthru)
		return member_nvme_rw(m, buf, len, off, write);

	while (done < len) {
		struct sigpipe_guard g;
		ssize_t n;

		sigpipe_guard_begin(&g);
		n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
			  : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		sigpipe_guard_end(&g);
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

int member_data_pio(struct graid_array *a, struct member *m, bool write, bool meta, void *buf,
		    size_t len, uint64_t off)
{
	if (m->dev.fault) {
		uint64_t stall = 0;

		switch (fault_decide(m->dev.fault, write, meta, off, len, &stall)) {
		case FAULT_KILL:
			raise(SIGKILL);
			return -EIO;
		case FAULT_FAIL:
		case FAULT_TEAR:
			return -EIO;
		case FAULT_CONFLICT:
			return -EBADE;
		case FAULT_STALL: {
			struct timespec ts = { (time_t)(stall / 1000000000u),
					       (long)(stall % 1000000000u) };

			nanosleep(&ts, NULL);
			break;
		}
		default:
			break;
		}
	}
	return member_pio(m, buf, len, a->data_offset + off, write);
}

int member_read_sb(struct member *m, struct superblock *sb)
{
	void *buf;
	int rc;

	if (posix_memalign(&buf, ARRAY_ALIGN, GRAID_SB_SIZE))
		return -ENOMEM;
	rc = member_pio(m, buf, GRAID_SB_SIZE, 0, false);
	if (rc == 0)
		rc = sb_decode(buf, sb);
	free(buf);
	return rc;
}

int member_write_sb(struct member *m, const struct superblock *sb)
{
	void *buf;
	int rc;

	if (m->dev.fault && fault_sb_write_fails(m->dev.fault))
		return -EIO;
	if (posix_memalign(&buf, ARRAY_ALIGN, GRAID_SB_SIZE))
		return -ENOMEM;
	sb_encode(sb, buf);
	rc = member_write_durable(m, buf, GRAID_SB_SIZE, 0);
	free(buf);
	if (rc == 0 && m->dev.fault)
		fault_sb_landed(m->dev.fault);
	return rc;
}

int member_write_durable(struct member *m, void *buf, size_t len, uint64_t off)
{
	int rc = member_pio(m, buf, len, off, true);

	if (rc == 0)
		rc = member_flush(m);
	return rc;
}

/* Zero [off, off+len): deallocate where the device can, write zeroes where it cannot. */
int member_area_match(struct member *m, const uint8_t *img, uint8_t *scratch, uint64_t off,
		      uint64_t bytes)
{
	bool known = member_pio(m, scratch, bytes, off, false) == 0;

	for (uint64_t at = 0; at < bytes; at += ARRAY_ALIGN) {
		int rc;

		if (known && !memcmp(scratch + at, img + at, ARRAY_ALIGN))
			continue;
		rc = member_write_durable(m, (void *)(uintptr_t)(img + at), ARRAY_ALIGN, off + at);
		if (rc)
			return rc;
	}
	return 0;
}

int member_zero_range(struct member *m, uint64_t off, uint64_t len)
{
	return member_zero_range_fd(m, m->dev.fd, off, len);
}

int member_zero_range_fd(struct member *m, int fd, uint64_t off, uint64_t len)
{
	const size_t piece = 1u << 20;
	void *zero;
	int rc = 0;

	if (m->dev.nvme.passthru) {
		/* No Write Zeroes command here: zeroes are written below, in MDTS-sized pieces. */
	} else if (m->dev.is_blk) {
		uint64_t range[2] = { off, len };
		struct sigpipe_guard g;

		sigpipe_guard_begin(&g);
		rc = ioctl(fd, BLKZEROOUT, range);
		sigpipe_guard_end(&g);
		if (rc == 0)
			return 0;
		rc = 0;
	} else if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			     (off_t)len) == 0) {
		return 0;
	}
	if (posix_memalign(&zero, ARRAY_ALIGN, piece))
		return -ENOMEM;
	memset(zero, 0, piece);
	for (uint64_t done = 0; rc == 0 && done < len; done += piece)
		rc = member_pio_fd(m, fd, zero, len - done < piece ? (size_t)(len - done) : piece,
				off + done, true);
	free(zero);
	return rc;
}

int member_flush(struct member *m)
{
	return member_flush_fd(m, m->dev.fd);
}

int member_flush_fd(struct member *m, int fd)
{
	struct sigpipe_guard g;
	int rc;

	if (m->dev.fault && fault_flush_fails(m->dev.fault))
		return -EIO;
	if (m->dev.nvme.passthru)
		return member_nvme_flush(m);
	sigpipe_guard_begin(&g);
	rc = fdatasync(fd) ? -errno : 0;
	sigpipe_guard_end(&g);
	return rc;
}

bool member_dealloc_zeroes(const struct member *m)
{
	const struct member_nvme *n = &m->dev.nvme;

	if (!n->is_nvme || !n->dealloc_zeroes || m->dev.fault)
		return false;
	return n->passthru || (m->dev.is_blk && n->blk_discard);
}

/* Deallocation is advisory in NVMe (DSM): check a spread of blocks before trusting it. */
static int member_check_zeroes(struct member *m, uint64_t off, uint64_t len)
{
	const unsigned probes = 9;
	uint8_t *buf;
	int rc = 0;

	if (len < ARRAY_ALIGN)
		return 0;
	if (posix_memalign((void **)&buf, ARRAY_ALIGN, ARRAY_ALIGN))
		return -ENOMEM;
	for (unsigned i = 0; i < probes && rc == 0; i++) {
		uint64_t at = off + (len - ARRAY_ALIGN) / (probes - 1) * i;

		at -= (at - off) % ARRAY_ALIGN;
		rc = member_pio(m, buf, ARRAY_ALIGN, at, false);
		for (unsigned k = 0; rc == 0 && k < ARRAY_ALIGN; k++)
			if (buf[k]) {
				graid__log(GRAID_LOG_WARNING, "member %s: byte %llu is not zero after "
							      "deallocation", m->dev.path,
					   (unsigned long long)(at + k));
				rc = -EIO;
			}
	}
	free(buf);
	return rc;
}

int member_deallocate(struct member *m, uint64_t off, uint64_t len)
{
	int rc;

	if (m->dev.nvme.passthru) {
		rc = member_nvme_deallocate(m, off, len);
	} else if (m->dev.is_blk) {
		uint64_t range[2] = { off, len };
		struct sigpipe_guard g;

		sigpipe_guard_begin(&g);
		rc = ioctl(m->dev.fd, BLKDISCARD, range) ? -errno : 0;
		sigpipe_guard_end(&g);
	} else {
		rc = fallocate(m->dev.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len) ? -errno : 0;
	}
	if (rc == 0)
		rc = member_check_zeroes(m, off, len);
	return rc;
}

GRAID_API int graid_member_probe(const char *path, struct graid_member_probe *out)
{
	struct graid_member_probe p = { .struct_size = sizeof(p) };
	struct member m = { .dev.fd = -1 };
	struct superblock sb;
	struct stat st;
	void *buf = NULL;
	int rc;

	if (!path || !out || out->struct_size < sizeof(p))
		return -EINVAL;
	if (!strncmp(path, "faulty:", 7))
		return -EINVAL;
	if (strlen(path) >= sizeof(m.dev.path))
		return -EINVAL;
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode) && !S_ISCHR(st.st_mode))
		return -EINVAL;
	snprintf(m.dev.path, sizeof(m.dev.path), "%s", path);
	/* Read-only and unlocked: looking must work while an array has the device open. */
	m.dev.fd = open(path, O_RDONLY | O_CLOEXEC | (S_ISCHR(st.st_mode) ? 0 : O_DIRECT));
	if (m.dev.fd < 0 && errno == EINVAL && !S_ISCHR(st.st_mode))
		m.dev.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m.dev.fd < 0)
		return -errno;
	m.dev.is_blk = S_ISBLK(st.st_mode);
	rc = S_ISCHR(st.st_mode) ? member_nvme_identify(&m, &st) : 0;
	if (rc == 0 && posix_memalign(&buf, ARRAY_ALIGN, GRAID_SB_SIZE))
		rc = -ENOMEM;
	if (rc == 0) {
		struct sigpipe_guard g;

		/* A probe may be a process's first touch of a fabric namespace: guard it always. */
		sigpipe_guard_begin_always(&g);
		rc = member_pio(&m, buf, GRAID_SB_SIZE, 0, false);
		sigpipe_guard_end(&g);
	}
	if (rc == 0)
		rc = sb_decode(buf, &sb);
	if (rc == -EINVAL) {
		rc = 0; /* no libgraid magic: not a member */
	} else if (rc == 0) {
		p.has_superblock = 1;
		memcpy(p.array_uuid, sb.array_uuid, 16);
		memcpy(p.member_uuid, sb.member_uuid, 16);
		p.level = sb.level;
		p.nmembers = sb.nmembers;
		p.role = sb.role;
		p.events = sb.events;
		p.state = sb.role < GRAID_SB_MAX_MEMBERS ? sb.member_state[sb.role]
							  : GRAID_MEMBER_ACTIVE;
	}
	free(buf);
	close(m.dev.fd);
	if (rc == 0)
		memcpy(out, &p, sizeof(p));
	return rc;
}

int member_init_data_areas(struct graid_array *a)
{
	const struct member *slow = NULL;
	int rc = 0;

	for (unsigned i = 0; i < a->nmembers && !slow; i++)
		if (!member_dealloc_zeroes(&a->members[i]))
			slow = &a->members[i];
	if (!slow) {
		for (unsigned i = 0; i < a->nmembers && rc == 0; i++) {
			rc = member_deallocate(&a->members[i], a->data_offset, a->lay.member_bytes);
			if (rc) {
				graid__log(GRAID_LOG_WARNING, "create: deallocating member %u (%s): "
							      "%s; zeroing instead", i,
					   a->members[i].dev.path, graid_strerror(rc));
				slow = &a->members[i];
			}
		}
		rc = 0;
		if (!slow) {
			graid__log(GRAID_LOG_NOTICE, "create: fast init: deallocated the data areas "
						     "of %u NVMe members, which read deallocated "
						     "blocks as zeroes; no zeroing, no initial resync",
				   a->nmembers);
			return 0;
		}
	} else {
		graid__log(GRAID_LOG_NOTICE, "create: zeroing the data areas (member %s does not "
					     "guarantee that deallocated blocks read as zeroes)",
			   slow->dev.path);
	}
	for (unsigned i = 0; i < a->nmembers && rc == 0; i++) {
		rc = member_zero_range(&a->members[i], a->data_offset, a->lay.member_bytes);
		if (rc)
			graid__log(GRAID_LOG_ERR, "create: zeroing member %u (%s): %s", i,
				   a->members[i].dev.path, graid_strerror(rc));
	}
	return rc;
}
