/* SPDX-License-Identifier: MIT */
/* Baselines: sequential writes to a fresh file, and a rebuild's I/O without the RAID. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "rb.h"

#define RAW_REQ (1u << 20)
#define RAW_DEPTH 8u

/* O_DIRECT where the filesystem takes it, else buffered: the library's own choice. */
static int raw_open(const char *path, int flags, bool *direct)
{
	int fd = open(path, flags | O_CLOEXEC | O_DIRECT);

	*direct = fd >= 0;
	if (fd < 0 && errno == EINVAL)
		fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		perror(path);
		return err;
	}
	return fd;
}

static int raw_pwrite(int fd, const uint8_t *buf, uint64_t bytes)
{
	for (uint64_t at = 0; at < bytes; at += RAW_REQ)
		if (pwrite(fd, buf, RAW_REQ, (off_t)at) != (ssize_t)RAW_REQ)
			return errno ? -errno : -EIO;
	return fdatasync(fd) ? -errno : 0;
}

/* Wait for @p n completions, each of which must have moved RAW_REQ bytes. */
static int raw_wait(struct io_uring *ring, unsigned n)
{
	int rc = 0;

	while (n--) {
		struct io_uring_cqe *cqe;
		int w = io_uring_wait_cqe(ring, &cqe);

		if (w < 0)
			return w;
		if (cqe->res != (int)RAW_REQ && rc == 0)
			rc = cqe->res < 0 ? cqe->res : -EIO;
		io_uring_cqe_seen(ring, cqe);
	}
	return rc;
}

static int raw_uring_write(int fd, const uint8_t *buf, uint64_t bytes)
{
	struct io_uring ring;
	unsigned inflight = 0;
	int rc = io_uring_queue_init(RAW_DEPTH, &ring, 0);

	if (rc < 0)
		return rc;
	for (uint64_t at = 0; rc == 0 && at < bytes; at += RAW_REQ) {
		struct io_uring_sqe *sqe;

		if (inflight == RAW_DEPTH) {
			rc = raw_wait(&ring, 1);
			inflight--;
		}
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_write(sqe, fd, buf, RAW_REQ, at);
		inflight++;
		if (io_uring_submit(&ring) < 0 && rc == 0)
			rc = -EIO;
	}
	if (raw_wait(&ring, inflight) && rc == 0)
		rc = -EIO;
	io_uring_queue_exit(&ring);
	return rc ? rc : (fdatasync(fd) ? -errno : 0);
}

/* One pass over a fresh file: @p uring picks io_uring at depth 8 over plain pwrite(). */
static int raw_pass(struct rb_dir *d, const uint8_t *buf, uint64_t bytes, bool uring,
		    struct rb_rate *rate, bool *direct)
{
	char path[4200];
	struct rb_clock clk;
	int fd, rc = rb_file_create(d, "raw", bytes, path, sizeof(path));

	if (rc)
		return rc;
	fd = raw_open(path, O_WRONLY, direct);
	if (fd < 0) {
		rb_file_drop(path);
		return fd;
	}
	rb_clock_start(&clk);
	rc = uring ? raw_uring_write(fd, buf, bytes) : raw_pwrite(fd, buf, bytes);
	rb_clock_rate(&clk, bytes, rate);
	close(fd);
	rb_file_drop(path);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw write of %s: %s\n", path, graid_strerror(rc));
	return rc;
}

int rb_raw_seqwrite(struct rb_dir *d, uint64_t bytes, struct rb_raw_write *out)
{
	uint8_t *buf;
	int rc;

	if (posix_memalign((void **)&buf, 4096, RAW_REQ))
		return -ENOMEM;
	rb_pattern_fill(buf, RAW_REQ, 0, 7);
	bytes = bytes / RAW_REQ * RAW_REQ;
	rc = raw_pass(d, buf, bytes, false, &out->pwrite, &out->direct);
	if (rc == 0)
		rc = raw_pass(d, buf, bytes, true, &out->uring, &out->direct);
	free(buf);
	return rc;
}

/* One round: RAW_DEPTH MiB from every source at @p at, then the same to @p dst. */
static int raw_round(struct io_uring *ring, const int *fd, unsigned nsrc, int dst,
		     uint8_t *buf, uint64_t at, unsigned reqs)
{
	int rc;

	for (unsigned s = 0; s < nsrc; s++)
		for (unsigned k = 0; k < reqs; k++)
			io_uring_prep_read(io_uring_get_sqe(ring), fd[s],
					   buf + ((size_t)s * RAW_DEPTH + k) * RAW_REQ, RAW_REQ,
					   at + (uint64_t)k * RAW_REQ);
	rc = io_uring_submit(ring);
	rc = rc < 0 ? rc : raw_wait(ring, nsrc * reqs);
	if (rc)
		return rc;
	for (unsigned k = 0; k < reqs; k++)
		io_uring_prep_write(io_uring_get_sqe(ring), dst, buf + (size_t)k * RAW_REQ, RAW_REQ,
				    at + (uint64_t)k * RAW_REQ);
	rc = io_uring_submit(ring);
	return rc < 0 ? rc : raw_wait(ring, reqs);
}

int rb_raw_rebuild_io(struct rb_dir *d, const char *const *src, unsigned nsrc, uint64_t bytes,
		      struct rb_rate *out)
{
	struct io_uring ring;
	char path[4200];
	int fd[GRAID_MAX_MEMBERS], dst = -1, rc;
	unsigned opened = 0;
	uint8_t *buf = NULL;
	struct rb_clock clk;
	bool direct;

	rc = rb_file_create(d, "rawdst", RB_META_BYTES + bytes, path, sizeof(path));
	if (rc)
		return rc;
	rc = io_uring_queue_init((nsrc + 1) * RAW_DEPTH, &ring, 0);
	if (rc < 0) {
		rb_file_drop(path);
		return rc;
	}
	if (posix_memalign((void **)&buf, 4096, (size_t)nsrc * RAW_DEPTH * RAW_REQ))
		rc = -ENOMEM;
	for (; rc == 0 && opened < nsrc; opened++)
		if ((fd[opened] = raw_open(src[opened], O_RDONLY, &direct)) < 0)
			rc = fd[opened];
	if (rc == 0 && (dst = raw_open(path, O_WRONLY, &direct)) < 0)
		rc = dst;
	rb_clock_start(&clk);
	for (uint64_t at = 0; rc == 0 && at < bytes; at += (uint64_t)RAW_DEPTH * RAW_REQ) {
		uint64_t left = (bytes - at) / RAW_REQ;

		rc = raw_round(&ring, fd, nsrc, dst, buf, RB_META_BYTES + at,
			       left < RAW_DEPTH ? (unsigned)left : RAW_DEPTH);
	}
	if (rc == 0 && fdatasync(dst))
		rc = -errno;
	rb_clock_rate(&clk, bytes, out);
	for (unsigned s = 0; s < opened && fd[s] >= 0; s++)
		close(fd[s]);
	if (dst >= 0)
		close(dst);
	io_uring_queue_exit(&ring);
	free(buf);
	rb_file_drop(path);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw rebuild I/O: %s\n", graid_strerror(rc));
	return rc;
}
