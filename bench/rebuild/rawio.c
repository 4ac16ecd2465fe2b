/* SPDX-License-Identifier: MIT */
/* Baselines: sequential writes to a fresh file, and a rebuild's I/O without the RAID. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* The drive of @p o for one file (unlimited when none is emulated). */
static struct rb_drive raw_drive(const struct rb_opts *o)
{
	return (struct rb_drive){ .mbps = o->drive_mbps, .iops = o->drive_iops };
}

static bool raw_emulated(const struct rb_drive *d)
{
	return d->mbps || d->iops;
}

/*
 * Queue a wait of @p ns hard-linked before the next SQE, as the library does for its emulated
 * drives; its completion carries no user data and is skipped by raw_wait().
 */
static void raw_prep_wait(struct io_uring *ring, struct __kernel_timespec *ts, uint64_t ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	ts->tv_sec = (long long)(ns / 1000000000ull);
	ts->tv_nsec = (long long)(ns % 1000000000ull);
	io_uring_prep_timeout(sqe, ts, 0, 0);
	io_uring_sqe_set_data(sqe, NULL);
	sqe->flags |= IOSQE_IO_HARDLINK;
}

static int raw_pwrite(int fd, const uint8_t *buf, uint64_t bytes, struct rb_drive *drive)
{
	for (uint64_t at = 0; at < bytes; at += RAW_REQ) {
		if (raw_emulated(drive)) {
			uint64_t ns = rb_drive_wait(drive, RAW_REQ);
			struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
					       .tv_nsec = (long)(ns % 1000000000ull) };

			nanosleep(&ts, NULL);
		}
		if (pwrite(fd, buf, RAW_REQ, (off_t)at) != (ssize_t)RAW_REQ)
			return errno ? -errno : -EIO;
	}
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
		if (!io_uring_cqe_get_data(cqe)) { /* an emulated drive's wait: not an I/O */
			io_uring_cqe_seen(ring, cqe);
			n++;
			continue;
		}
		if (cqe->res != (int)RAW_REQ && rc == 0)
			rc = cqe->res < 0 ? cqe->res : -EIO;
		io_uring_cqe_seen(ring, cqe);
	}
	return rc;
}

static int raw_uring_write(int fd, const uint8_t *buf, uint64_t bytes, struct rb_drive *drive)
{
	struct __kernel_timespec ts[RAW_DEPTH];
	struct io_uring ring;
	unsigned inflight = 0, slot = 0;
	int rc = io_uring_queue_init(2 * RAW_DEPTH, &ring, 0);

	if (rc < 0)
		return rc;
	for (uint64_t at = 0; rc == 0 && at < bytes; at += RAW_REQ) {
		struct io_uring_sqe *sqe;

		if (inflight == RAW_DEPTH) {
			rc = raw_wait(&ring, 1);
			inflight--;
		}
		/* A timespec is read when its SQE is submitted: one per slot in flight is enough. */
		if (raw_emulated(drive))
			raw_prep_wait(&ring, &ts[slot++ % RAW_DEPTH], rb_drive_wait(drive, RAW_REQ));
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_write(sqe, fd, buf, RAW_REQ, at);
		io_uring_sqe_set_data(sqe, &ring);
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
static int raw_pass(const struct rb_opts *o, struct rb_dir *d, const uint8_t *buf,
		    uint64_t bytes, bool uring, struct rb_rate *rate, bool *direct)
{
	struct rb_drive drive = raw_drive(o);
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
	rc = uring ? raw_uring_write(fd, buf, bytes, &drive) : raw_pwrite(fd, buf, bytes, &drive);
	rb_clock_rate(&clk, bytes, rate);
	close(fd);
	rb_file_drop(path);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw write of %s: %s\n", path, graid_strerror(rc));
	return rc;
}

int rb_raw_seqwrite(const struct rb_opts *o, struct rb_dir *d, uint64_t bytes,
		    struct rb_raw_write *out)
{
	uint8_t *buf;
	int rc;

	if (posix_memalign((void **)&buf, 4096, RAW_REQ))
		return -ENOMEM;
	rb_pattern_fill(buf, RAW_REQ, 0, 7);
	bytes = bytes / RAW_REQ * RAW_REQ;
	rc = raw_pass(o, d, buf, bytes, false, &out->pwrite, &out->direct);
	if (rc == 0)
		rc = raw_pass(o, d, buf, bytes, true, &out->uring, &out->direct);
	free(buf);
	return rc;
}

/* A raw grow's files: the old members' and as many fresh ones as the grown array has. */
#define RAW_FILES (2 * GRAID_MAX_MEMBERS)

/* The files of a raw rebuild or grow: sources, then destinations, each its own drive. */
struct raw_files {
	int fd[RAW_FILES];
	struct rb_drive drive[RAW_FILES];
	struct __kernel_timespec ts[RAW_FILES * RAW_DEPTH];
};

static void raw_prep(struct io_uring *ring, struct raw_files *f, unsigned file, bool write,
		     uint8_t *buf, uint64_t at, unsigned slot)
{
	struct io_uring_sqe *sqe;

	if (raw_emulated(&f->drive[file]))
		raw_prep_wait(ring, &f->ts[slot], rb_drive_wait(&f->drive[file], RAW_REQ));
	sqe = io_uring_get_sqe(ring);
	if (write)
		io_uring_prep_write(sqe, f->fd[file], buf, RAW_REQ, at);
	else
		io_uring_prep_read(sqe, f->fd[file], buf, RAW_REQ, at);
	io_uring_sqe_set_data(sqe, f);
}

/* One round: RAW_DEPTH MiB from every source at @p at, then the same to the destination. */
static int raw_round(struct io_uring *ring, struct raw_files *f, unsigned nsrc, uint8_t *buf,
		     uint64_t at, unsigned reqs)
{
	int rc;

	for (unsigned s = 0; s < nsrc; s++)
		for (unsigned k = 0; k < reqs; k++)
			raw_prep(ring, f, s, false, buf + ((size_t)s * RAW_DEPTH + k) * RAW_REQ,
				 at + (uint64_t)k * RAW_REQ, s * RAW_DEPTH + k);
	rc = io_uring_submit(ring);
	rc = rc < 0 ? rc : raw_wait(ring, nsrc * reqs);
	if (rc)
		return rc;
	for (unsigned k = 0; k < reqs; k++)
		raw_prep(ring, f, nsrc, true, buf + (size_t)k * RAW_REQ, at + (uint64_t)k * RAW_REQ,
			 k);
	rc = io_uring_submit(ring);
	return rc < 0 ? rc : raw_wait(ring, reqs);
}

int rb_raw_rebuild_io(const struct rb_opts *o, struct rb_dir *d, const char *const *src,
		      unsigned nsrc, uint64_t bytes, struct rb_rate *out)
{
	struct raw_files *f = calloc(1, sizeof(*f));
	struct io_uring ring;
	char path[4200];
	unsigned opened = 0;
	uint8_t *buf = NULL;
	struct rb_clock clk;
	bool direct;
	int rc;

	if (!f)
		return -ENOMEM;
	for (unsigned i = 0; i <= nsrc; i++) {
		f->fd[i] = -1;
		f->drive[i] = raw_drive(o);
	}
	rc = rb_file_create(d, "rawdst", RB_META_BYTES + bytes, path, sizeof(path));
	if (rc) {
		free(f);
		return rc;
	}
	/* Room for each I/O and its emulated drive's wait. */
	rc = io_uring_queue_init(2 * (nsrc + 1) * RAW_DEPTH, &ring, 0);
	if (rc < 0) {
		rb_file_drop(path);
		free(f);
		return rc;
	}
	if (posix_memalign((void **)&buf, 4096, (size_t)nsrc * RAW_DEPTH * RAW_REQ))
		rc = -ENOMEM;
	for (; rc == 0 && opened < nsrc; opened++)
		if ((f->fd[opened] = raw_open(src[opened], O_RDONLY, &direct)) < 0)
			rc = f->fd[opened];
	if (rc == 0 && (f->fd[nsrc] = raw_open(path, O_WRONLY, &direct)) < 0)
		rc = f->fd[nsrc];
	rb_clock_start(&clk);
	for (uint64_t at = 0; rc == 0 && at < bytes; at += (uint64_t)RAW_DEPTH * RAW_REQ) {
		uint64_t left = (bytes - at) / RAW_REQ;

		rc = raw_round(&ring, f, nsrc, buf, RB_META_BYTES + at,
			       left < RAW_DEPTH ? (unsigned)left : RAW_DEPTH);
	}
	if (rc == 0 && fdatasync(f->fd[nsrc]))
		rc = -errno;
	rb_clock_rate(&clk, bytes, out);
	for (unsigned s = 0; s <= nsrc; s++)
		if (f->fd[s] >= 0)
			close(f->fd[s]);
	io_uring_queue_exit(&ring);
	free(buf);
	free(f);
	rb_file_drop(path);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw rebuild I/O: %s\n", graid_strerror(rc));
	return rc;
}

/* How many 1 MiB requests of a share of @p bytes are left at @p at, at most RAW_DEPTH. */
static unsigned raw_left(uint64_t bytes, uint64_t at)
{
	uint64_t left = at < bytes ? (bytes - at + RAW_REQ - 1) / RAW_REQ : 0;

	return left < RAW_DEPTH ? (unsigned)left : RAW_DEPTH;
}

/* One round of a raw grow: up to RAW_DEPTH MiB read from every source, then written to every
 * destination (the same buffers: the bytes do not matter, the drives' time does). */
static int raw_grow_round(struct io_uring *ring, struct raw_files *f, unsigned nsrc,
			  unsigned ndst, uint8_t *buf, uint64_t at, uint64_t rd, uint64_t wr)
{
	unsigned nr = raw_left(rd, at), nw = raw_left(wr, at);
	int rc;

	for (unsigned s = 0; s < nsrc; s++)
		for (unsigned k = 0; k < nr; k++)
			raw_prep(ring, f, s, false, buf + ((size_t)s * RAW_DEPTH + k) * RAW_REQ,
				 RB_META_BYTES + at + (uint64_t)k * RAW_REQ, s * RAW_DEPTH + k);
	rc = nr ? io_uring_submit(ring) : 0;
	rc = rc < 0 ? rc : raw_wait(ring, nsrc * nr);
	for (unsigned t = 0; rc == 0 && t < ndst; t++)
		for (unsigned k = 0; k < nw; k++)
			raw_prep(ring, f, nsrc + t, true, buf + (size_t)k * RAW_REQ,
				 RB_META_BYTES + at + (uint64_t)k * RAW_REQ, (nsrc + t) * RAW_DEPTH + k);
	if (rc == 0 && nw)
		rc = io_uring_submit(ring);
	return rc < 0 ? rc : raw_wait(ring, ndst * nw);
}

static int raw_grow_open(const struct rb_opts *o, struct rb_dir *d, struct raw_files *f,
			 const char *const *src, unsigned nsrc, unsigned ndst, uint64_t wr,
			 char (*dst)[4200])
{
	bool direct;

	for (unsigned i = 0; i < nsrc + ndst; i++)
		f->drive[i] = raw_drive(o);
	for (unsigned i = 0; i < nsrc; i++)
		if ((f->fd[i] = raw_open(src[i], O_RDONLY, &direct)) < 0)
			return f->fd[i];
	for (unsigned t = 0; t < ndst; t++) {
		int rc = rb_file_create(d, "rawgrow", RB_META_BYTES + wr, dst[t], sizeof(dst[t]));

		if (rc)
			return rc;
		if ((f->fd[nsrc + t] = raw_open(dst[t], O_WRONLY, &direct)) < 0)
			return f->fd[nsrc + t];
	}
	return 0;
}

int rb_raw_grow_io(const struct rb_opts *o, struct rb_dir *d, const char *const *src,
		   unsigned nsrc, unsigned ndst, uint64_t rd, uint64_t wr, double *secs)
{
	struct raw_files *f = calloc(1, sizeof(*f));
	char (*dst)[4200] = calloc(ndst, sizeof(*dst));
	uint8_t *buf = NULL;
	struct io_uring ring;
	struct rb_rate rate;
	struct rb_clock clk;
	int rc = f && dst ? 0 : -ENOMEM;

	if (rc == 0 && (nsrc > RAW_FILES / 2 || ndst > RAW_FILES / 2))
		rc = -E2BIG;
	for (unsigned i = 0; rc == 0 && i < nsrc + ndst; i++)
		f->fd[i] = -1;
	if (rc == 0 && posix_memalign((void **)&buf, 4096, (size_t)nsrc * RAW_DEPTH * RAW_REQ))
		rc = -ENOMEM;
	if (rc == 0)
		rc = raw_grow_open(o, d, f, src, nsrc, ndst, wr, dst);
	if (rc == 0)
		rc = io_uring_queue_init(2 * (nsrc + ndst) * RAW_DEPTH, &ring, 0);
	if (rc < 0)
		goto out;
	rb_clock_start(&clk);
	for (uint64_t at = 0; rc == 0 && (at < rd || at < wr); at += (uint64_t)RAW_DEPTH * RAW_REQ)
		rc = raw_grow_round(&ring, f, nsrc, ndst, buf, at, rd, wr);
	for (unsigned t = 0; rc == 0 && t < ndst; t++)
		if (fdatasync(f->fd[nsrc + t]))
			rc = -errno;
	*secs = rb_clock_rate(&clk, rd, &rate);
	io_uring_queue_exit(&ring);
out:
	for (unsigned i = 0; f && i < nsrc + ndst && i < RAW_FILES; i++)
		if (f->fd[i] > 0)
			close(f->fd[i]);
	for (unsigned t = 0; dst && t < ndst; t++)
		if (dst[t][0])
			rb_file_drop(dst[t]);
	free(buf);
	free(dst);
	free(f);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw grow I/O: %s\n", graid_strerror(rc));
	return rc;
}
