/* SPDX-License-Identifier: MIT */
/* Baselines: sequential writes to a fresh file, and a rebuild's I/O without the RAID. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "../bench_team.h"
#include "../bench_util.h"
#include "rb.h"

#define RAW_REQ (1u << 20)
#define RAW_DEPTH 8u

/* @p try_direct: O_DIRECT where the filesystem takes it, else buffered. */
static int raw_open_as(const char *path, int flags, bool try_direct, bool *direct)
{
	int fd = try_direct ? open(path, flags | O_CLOEXEC | O_DIRECT) : -1;

	*direct = fd >= 0;
	if (fd < 0 && (!try_direct || errno == EINVAL))
		fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		perror(path);
		return err;
	}
	return fd;
}

/* O_DIRECT where the filesystem takes it, else buffered: the library's own choice. */
static int raw_open(const char *path, int flags, bool *direct)
{
	return raw_open_as(path, flags, true, direct);
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

/*
 * On tmpfs buffered, the fastest plain way there: an O_DIRECT write cost more CPU than a
 * buffered one in a pass like this (9 threads, 8 of them reading 192 MiB, each writing
 * 219 MiB, 64 KiB requests, two cores: 1.2-1.5 s against 0.4-1.1 s unpaced), enough to make
 * a baseline of the drives' limit CPU-bound. On a disk O_DIRECT where the filesystem takes
 * it (raw_open), so that no cached write is left for the clock's end.
 */
static int raw_grow_open_file(const struct rb_dir *d, const char *path, int flags)
{
	bool direct;

	return raw_open_as(path, flags, !d->ram, &direct);
}

/*
 * The drives of a raw grow, each a thread of its own: drive i < nsrc is old member i, which
 * reads its data area (src) and writes its share of the new rows (to a fresh file: the
 * member's own bytes stay as the array has them), both from one emulated drive, as the
 * member serves a grow's reads and writes; a drive past nsrc is an added member, which only
 * writes. A drive never idles (it always has the next request queued, as the library keeps
 * many in flight): each request's slot starts where the one before it ended.
 */
struct raw_grow {
	int src[RAW_FILES], dst[RAW_FILES];
	struct rb_drive drive[RAW_FILES];
	uint8_t *buf[RAW_FILES];
	int rc[RAW_FILES];
	unsigned nsrc;
	uint32_t req;           /* the array's chunk: the size of a grow's member I/O */
	uint64_t rd, wr;        /* whole requests */
};

/*
 * One request of drive @p d: wait until its slot ends (@p due: when the one before it ended;
 * a drive with requests queued starts the next at once, so a late wake-up here does not
 * idle it), then run it.
 */
static int raw_grow_req(struct raw_grow *g, unsigned d, bool write, uint64_t at, uint64_t *due)
{
	ssize_t n;

	if (raw_emulated(&g->drive[d])) {
		uint64_t now = bench_now_ns();

		*due = (*due ? *due : now) + rb_drive_cost(&g->drive[d], g->req);
		if (*due > now) {
			uint64_t ns = *due - now;
			struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
					       .tv_nsec = (long)(ns % 1000000000ull) };

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	at += RB_META_BYTES;
	n = write ? pwrite(g->dst[d], g->buf[d], g->req, (off_t)at)
		  : pread(g->src[d], g->buf[d], g->req, (off_t)at);
	return n == (ssize_t)g->req ? 0 : (n < 0 ? -errno : -EIO);
}

/* Thread @p d: its reads and writes a request of each in turn, as a grow's windows mix them. */
static void raw_grow_drive(void *arg, unsigned d)
{
	struct raw_grow *g = arg;
	uint64_t rd = d < g->nsrc ? g->rd : 0, due = 0;
	int rc = 0;

	for (uint64_t at = 0; rc == 0 && (at < rd || at < g->wr); at += g->req) {
		if (at < rd)
			rc = raw_grow_req(g, d, false, at, &due);
		if (rc == 0 && at < g->wr)
			rc = raw_grow_req(g, d, true, at, &due);
	}
	if (rc == 0 && fdatasync(g->dst[d]))
		rc = -errno;
	g->rc[d] = rc;
}

/*
 * Write destination @p t whole before the clock: a grow overwrites places its members
 * already hold (only an added member's are new), and on tmpfs a first write into a page
 * costs several times an overwrite (allocating it; 2.6 s against 0.4-1.1 s for this pass
 * unpaced, two cores).
 */
static int raw_grow_prewrite(struct raw_grow *g, unsigned t)
{
	for (uint64_t at = 0; at < RB_META_BYTES + g->wr; at += g->req) {
		ssize_t n = pwrite(g->dst[t], g->buf[t], g->req, (off_t)at);

		if (n != (ssize_t)g->req)
			return n < 0 ? -errno : -EIO;
	}
	return fdatasync(g->dst[t]) ? -errno : 0;
}

/* Open the sources, and create, fill (outside the clock: a drive has its blocks) and open
 * the destinations. */
static int raw_grow_open(const struct rb_opts *o, struct rb_dir *d, struct raw_grow *g,
			 const char *const *src, unsigned ndst, char (*dst)[4200])
{
	for (unsigned i = 0; i < g->nsrc; i++)
		if ((g->src[i] = raw_grow_open_file(d, src[i], O_RDONLY)) < 0)
			return g->src[i];
	for (unsigned t = 0; t < ndst; t++) {
		int rc = rb_file_create(d, "rawgrow", RB_META_BYTES + g->wr, dst[t], sizeof(dst[t]));

		if (rc)
			return rc;
		if ((g->dst[t] = raw_grow_open_file(d, dst[t], O_RDWR)) < 0)
			return g->dst[t];
		g->drive[t] = raw_drive(o);
		if (posix_memalign((void **)&g->buf[t], 4096, g->req))
			return -ENOMEM;
		rb_pattern_fill(g->buf[t], g->req, t, 7);
		if ((rc = raw_grow_prewrite(g, t)) != 0)
			return rc;
	}
	return 0;
}

int rb_raw_grow_io(const struct rb_opts *o, struct rb_dir *d, const char *const *src,
		   unsigned nsrc, unsigned ndst, uint64_t rd, uint64_t wr, double *secs)
{
	struct raw_grow *g = calloc(1, sizeof(*g));
	char (*dst)[4200] = calloc(ndst, sizeof(*dst));
	uint64_t req = o->chunk;
	int rc = g && dst ? 0 : -ENOMEM;

	if (g) {
		*g = (struct raw_grow){ .nsrc = nsrc, .req = o->chunk,
					.rd = (rd + req - 1) / req * req,
					.wr = (wr + req - 1) / req * req };
		for (unsigned i = 0; i < RAW_FILES; i++)
			g->src[i] = g->dst[i] = -1;
	}
	if (rc == 0 && (nsrc > ndst || ndst > RAW_FILES))
		rc = -E2BIG;
	if (rc == 0)
		rc = raw_grow_open(o, d, g, src, ndst, dst);
	if (rc == 0) {
		*secs = bench_team_run(ndst, raw_grow_drive, g);
		if (*secs < 0)
			rc = -EAGAIN;
	}
	for (unsigned t = 0; rc == 0 && t < ndst; t++)
		rc = g->rc[t];
	for (unsigned i = 0; g && i < RAW_FILES; i++) {
		if (g->src[i] >= 0)
			close(g->src[i]);
		if (g->dst[i] >= 0)
			close(g->dst[i]);
		free(g->buf[i]);
	}
	for (unsigned t = 0; dst && t < ndst; t++)
		if (dst[t][0])
			rb_file_drop(dst[t]);
	free(dst);
	free(g);
	if (rc)
		fprintf(stderr, "rebuild_bench: raw grow I/O: %s\n", graid_strerror(rc));
	return rc;
}
