/* SPDX-License-Identifier: MIT */
/* Prepare one member read or write on a ring; the one place that knows about injected faults. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <liburing.h>

#include "array/array.h"
#include "member/member_replace.h"
#include "member/member_io.h"
#include "member/member_ioerr.h"
#include "format/nvme_cmd.h"
#include "common/signals.h"
#include "member/member.h"
#include "array/stats_count.h"
#include "member/csum_pend.h"
#include "member/tag_store.h"
#include "member/tag_inline.h"

#if GRAID_FAULT_INJECTION
/* Test seam (array.h), NULL in use: called before a read of a member takes its descriptor. */
void (*graid__test_before_read)(struct graid_array *a, unsigned member);
#endif

/*
 * How long member_ring_submit() keeps asking a kernel that says "try again": the ring being
 * full, or the kernel short of memory for a moment, is a wait, never a member's failure.
 */
#define MIO_SUBMIT_PATIENCE_NS (10ull * 1000000000ull)

/* Errors of io_uring_enter() that say "not now" rather than "this ring is unusable". */
static bool mio_submit_transient(int rc)
{
	return rc == -EINTR || rc == -EAGAIN || rc == -EBUSY || rc == -ENOMEM;
}

int member_ring_submit(struct io_uring *ring, unsigned wait_nr)
{
	uint64_t start = 0, pause_ns = 20000;
	int rc;

	for (;;) {
		struct sigpipe_guard g;

		sigpipe_guard_begin(&g);
		rc = wait_nr ? io_uring_submit_and_wait(ring, wait_nr) : io_uring_submit(ring);
		sigpipe_guard_end(&g);
		if (rc >= 0 || !mio_submit_transient(rc))
			break;
		if (!start) {
			start = graid__now_ns();
		} else if (graid__now_ns() - start > MIO_SUBMIT_PATIENCE_NS) {
			graid__log(GRAID_LOG_ERR, "io_uring refused member I/O for %llu s: %s",
				   MIO_SUBMIT_PATIENCE_NS / 1000000000ull, graid_strerror(rc));
			return rc;
		}
		/* Completions the kernel holds back (-EBUSY) or memory come back over time. */
		nanosleep(&(struct timespec){ .tv_nsec = (long)pause_ns }, NULL);
		if (pause_ns < 1000000)
			pause_ns *= 2;
	}
	if (rc < 0)
		graid__log(GRAID_LOG_ERR, "io_uring submit failed: %s", graid_strerror(rc));
	return rc;
}

/* A submission entry; with the ring full, what it holds is sent first (waiting if need be). */
static struct io_uring_sqe *mio_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe && member_ring_submit(ring, 0) >= 0)
		sqe = io_uring_get_sqe(ring);
	return sqe;
}

static int member_prep(struct io_uring *ring, struct graid_array *a, unsigned member,
		       bool write, void *buf, unsigned len, const struct iovec *iov,
		       unsigned iovcnt, uint64_t off, int rw_flags, int buf_index,
		       void *user_data, struct member_io_fault *mf);

unsigned member_ring_flags(const struct graid_array *a)
{
	for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
		const struct member *m = i < a->nmembers ? &a->members[i]
							 : &a->spares[i - a->nmembers];

		if (m->dev.fd >= 0 && m->dev.nvme.passthru)
			return IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	}
	return 0;
}

/* IORING_URING_CMD_FIXED (Linux 6.1 headers and later have it). */
#ifndef IORING_URING_CMD_FIXED
#define IORING_URING_CMD_FIXED (1U << 0)
#endif

/* One NVMe command into a big SQE: the command is the SQE's payload. */
static void mio_nvme_sqe(struct io_uring_sqe *sqe, const struct member *m,
			 const struct nvme_uring_cmd *cmd, int buf_index, void *user_data)
{
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, m->dev.fd, NULL, 0, 0);
	sqe->cmd_op = NVME_URING_CMD_IO;
	if (buf_index >= 0) {
		/* The command's address lies in the fixed buffer: the driver maps no pages. */
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = (__u16)buf_index;
	}
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), cmd, sizeof(*cmd));
	io_uring_sqe_set_data(sqe, user_data);
}

/*
 * NVMe passthrough (/dev/ngXnY): one Read or Write command per max_xfer bytes of each
 * buffer (a vectored write is one buffer per iovec element). Every command's CQE carries
 * @user_data; member_io_result() counts them down. @sqe is the first entry, already taken.
 */
static int mio_nvme(struct io_uring *ring, struct io_uring_sqe *sqe, struct member *m,
		    bool write, void *buf, unsigned len, const struct iovec *iov, unsigned iovcnt,
		    uint64_t at, bool fua, int buf_index, void *user_data,
		    struct member_io_fault *mf)
{
	const struct member_nvme *n = &m->dev.nvme;
	struct iovec one = { .iov_base = buf, .iov_len = len };
	unsigned queued = 0;

	if (!iov) {
		iov = &one;
		iovcnt = 1;
	}
	if (!(ring->flags & IORING_SETUP_SQE128)) {
		/* A ring made before this member joined: it cannot carry NVMe commands. */
		graid__log(GRAID_LOG_ERR, "member %s: NVMe passthrough on a queue created before "
					  "the member joined; create the queue again", m->dev.path);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, user_data);
		mf->injected = -EOPNOTSUPP;
		return 0;
	}
	if (tag_inline_prep(m, write, iov, iovcnt, at, mf)) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, user_data);
		mf->injected = -ENOMEM;
		return 0;
	}
	mf->pieces = 0;
	for (unsigned i = 0; i < iovcnt; i++)
		mf->pieces += nvme_split_count(iov[i].iov_len, n->max_xfer);
	mf->err = 0;
	for (unsigned i = 0; i < iovcnt; i++) {
		for (size_t done = 0; done < iov[i].iov_len;) {
			size_t piece = iov[i].iov_len - done;
			struct nvme_uring_cmd cmd;

			if (piece > n->max_xfer)
				piece = n->max_xfer;
			if (!sqe)
				sqe = mio_sqe(ring);
			if (!sqe || nvme_cmd_build_rw(&cmd, write, n->nsid, at / n->lba_bytes,
						(uint32_t)(piece / n->lba_bytes), n->lba_bytes,
						(char *)iov[i].iov_base + done, fua)) {
				/* Cannot happen with an aligned I/O on a drained ring: fail it whole. */
				mf->err = -EIO;
				mf->pieces = queued;
				if (queued)
					return 0;
				if (sqe) {
					io_uring_prep_nop(sqe);
					io_uring_sqe_set_data(sqe, user_data);
					mf->injected = -EIO;
					return 0;
				}
				return -EAGAIN;
			}
			tag_inline_cmd(&cmd, m, mf, at);
			mio_nvme_sqe(sqe, m, &cmd, buf_index, user_data);
			sqe = NULL;
			queued++;
			done += piece;
			at += piece;
		}
	}
	return 0;
}

int member_io_result(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		     unsigned len, int res)
{
	if (mf->pieces == 0)
		return res; /* plain read or write: bytes or -errno already */
	/* The drive's end-to-end check: a checksum failure, told at member_io_done(). */
	if (res > 0 && tag_inline_e2e(a, member, mf, res))
		res = 0;
	if (res != 0) {
		/* Passthrough: 0 success, > 0 an NVMe status, < 0 the host's errno. */
		int err = nvme_status_errno(res);

		if (res > 0)
			graid__log(GRAID_LOG_ERR, "member %u (%s): NVMe status 0x%x (%s, SCT %u SC "
						  "0x%02x): %s", member, a->members[member].dev.path, res,
				   nvme_status_name(res), nvme_status_sct(res), nvme_status_sc(res),
				   graid_strerror(err));
		if (!mf->err)
			mf->err = err;
	}
	if (--mf->pieces)
		return MEMBER_IO_MORE;
	return mf->err ? mf->err : (int)len;
}

int member_prep_io(struct io_uring *ring, struct graid_array *a, unsigned member, bool write,
		   void *buf, unsigned len, uint64_t off, void *user_data,
		   struct member_io_fault *mf)
{
	return member_prep(ring, a, member, write, buf, len, NULL, 0, off, 0, -1, user_data, mf);
}

int member_prep_io_fixed(struct io_uring *ring, struct graid_array *a, unsigned member,
			 bool write, void *buf, unsigned len, uint64_t off, int buf_index,
			 void *user_data, struct member_io_fault *mf)
{
	return member_prep(ring, a, member, write, buf, len, NULL, 0, off, 0, buf_index,
			   user_data, mf);
}

int member_prep_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, void *user_data,
		       struct member_io_fault *mf)
{
	return member_prep(ring, a, member, true, NULL, 0, iov, iovcnt, off, 0, -1, user_data, mf);
}

int member_prep_log_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
			   const struct iovec *iov, unsigned iovcnt, uint64_t member_off,
			   void *user_data, struct member_io_fault *mf)
{
	/* Offsets below are data-area relative; unsigned wrap-around lands on member_off. */
	return member_prep(ring, a, member, true, NULL, 0, iov, iovcnt,
			   member_off - a->data_offset, RWF_DSYNC, -1, user_data, mf);
}

/* Bytes of a transfer given as @p buf and @p len, or (len 0) as @p iov. */
static uint64_t mio_bytes(unsigned len, const struct iovec *iov, unsigned iovcnt)
{
	uint64_t bytes = len;

	for (unsigned i = 0; iov && i < iovcnt; i++)
		bytes += iov[i].iov_len;
	return bytes;
}

/* The per-issue part of @p mf: no fault yet, the role's device now, the latency's start. */
static void mio_fault_start(const struct graid_array *a, unsigned member,
			    struct member_io_fault *mf)
{
	mf->injected = 0;
	mf->pieces = 0;
	mf->stale = false;
	mf->fd = a->members[member].dev.fd;
	mf->start_ns = graid__now_ns();
}

/*
 * Keep the transfer in @p mf and, for a write of a checksummed array's data area, make its
 * new tags pending. @p meta: a write outside the data area (member_prep_log_writev). 0 or
 * the -errno the write is to end with, not issued.
 */
static int mio_keep(struct graid_array *a, unsigned member, bool write, void *buf,
		    unsigned len, const struct iovec *iov, unsigned iovcnt, uint64_t off,
		    bool meta, struct member_io_fault *mf)
{
	struct iovec one = { .iov_base = buf, .iov_len = len };
	/* A write's meta words (or why it has none) come on its fault record. */
	int meta_err = mf->meta_err;
	const uint32_t *meta_in = mf->meta_in;
	int rc;

	mf->buf = buf;
	mf->iov = iov;
	mf->iovcnt = iov ? iovcnt : 1;
	mf->write = write;
	mf->tagged = false;
	mf->csum = false;
	mf->meta = NULL;
	mf->meta_gens = NULL;
	mf->meta_stale = NULL;
	mf->e2e = false;
	/* The journal's log lies outside (its offsets wrap around below the data area). */
	mf->off = meta || off >= a->lay.member_bytes ? UINT64_MAX : off;
	mf->meta_tags = a->tags && mf->off != UINT64_MAX && tag_inline_role(a, member);
	/* One I/O's words: a record used again is not given them twice. */
	mf->meta_in = NULL;
	mf->meta_err = 0;
	if (!a->tags || mf->off == UINT64_MAX)
		return 0;
	if (!write) {
		struct member_role *r = &a->members[member].role;

		mf->wgen = atomic_load(&r->csum_wgen);
		mf->wbegun = atomic_load(&r->csum_wbegun);
		mf->wbusy = atomic_load(&r->csum_winflight) != 0;
		return 0;
	}
	/*
	 * Without the generations its column expects, a parity write would take its old
	 * record + 1 and break the column's sums: it fails as one whose tags failed would.
	 */
	if (meta_err)
		rc = meta_err;
	/* An inline role's metadata carries the generations its copy here gets. */
	else if (mf->meta_tags && a->csum_gens &&
	    !(mf->meta_gens = malloc(mio_bytes(len, iov, iovcnt) / 4096u * sizeof(uint32_t) + 1)))
		rc = -ENOMEM;
	else
		rc = tag_store_write_begin_meta(a, member, off, iov ? iov : &one,
						iov ? iovcnt : 1, meta_in, mf->meta_gens);
	if (rc) {
		tag_inline_free(mf);
		graid__log(GRAID_LOG_ERR, "member %u (%s): the tags of a write at data-area byte "
					  "%llu could not be made ready: %s; the write fails",
			   member, a->members[member].dev.path, (unsigned long long)off,
			   graid_strerror(rc));
		return rc;
	}
	mf->tagged = true;
	atomic_fetch_add(&a->members[member].role.csum_winflight, 1);
	atomic_fetch_add(&a->members[member].role.csum_wbegun, 1);
	return 0;
}

/* member_prep() once the transfer is kept and its tags made ready. */
static int mio_issue(struct io_uring *ring, struct graid_array *a, unsigned member,
		     bool write, void *buf, unsigned len, const struct iovec *iov,
		     unsigned iovcnt, uint64_t off, int rw_flags, int buf_index,
		     void *user_data, struct member_io_fault *mf)
{
	struct member *m = &a->members[member];
	enum fault_action act = FAULT_NONE;
	struct io_uring_sqe *sqe;
	uint64_t stall_ns = 0;

	/* A copy of the role under way gets the write too, before the role's device does. */
	if (write && replace_covers(a, member))
		replace_dup_write(a, member, buf, len, iov, iovcnt, off, rw_flags & RWF_DSYNC);
	mio_fault_start(a, member, mf);
	/* RWF_DSYNC: member_prep_log_writev's metadata (bitmap, map, journal) */
	if (m->dev.fault)
		act = fault_decide(m->dev.fault, write, rw_flags & RWF_DSYNC, off,
				   mio_bytes(len, iov, iovcnt), &stall_ns);
	if (write && fault_write_cut())
		act = FAULT_FAIL; /* a test's crash: nothing lands from here on */
#if GRAID_FAULT_INJECTION
	if (act == FAULT_KILL) {
		/* What is queued reaches the members; this write and all after it never do. */
		member_ring_submit(ring, 0);
		raise(SIGKILL);
	}
#endif
	if (act == FAULT_STALL) {
		sqe = mio_sqe(ring);
		if (!sqe)
			return -EAGAIN;
		mf->ts.tv_sec = (long long)(stall_ns / 1000000000ull);
		mf->ts.tv_nsec = (long long)(stall_ns % 1000000000ull);
		/* A hard link: the timeout "fails" with -ETIME, and the I/O still runs after it. */
		io_uring_prep_timeout(sqe, &mf->ts, 0, 0);
		io_uring_sqe_set_data(sqe, NULL);
		sqe->flags |= IOSQE_IO_HARDLINK;
	}
	sqe = mio_sqe(ring);
	if (!sqe)
		return -EAGAIN;
	if (act == FAULT_FAIL || act == FAULT_CONFLICT) {
		io_uring_prep_nop(sqe);
		mf->injected = act == FAULT_CONFLICT ? -EBADE : -EIO;
	} else if (write && iov) {
		if (act == FAULT_TEAR) {
			/* The first half of the pieces land, then the device is gone. */
			iovcnt /= 2;
			mf->injected = -EIO;
			if (iovcnt == 0) {
				io_uring_prep_nop(sqe);
				io_uring_sqe_set_data(sqe, user_data);
				return 0;
			}
		}
		if (m->dev.nvme.passthru)
			return mio_nvme(ring, sqe, m, true, NULL, 0, iov, iovcnt,
					a->data_offset + off, rw_flags & RWF_DSYNC, -1, user_data,
					mf);
		io_uring_prep_writev(sqe, m->dev.fd, iov, iovcnt, a->data_offset + off);
		sqe->rw_flags = rw_flags;
	} else if (write) {
		if (act == FAULT_TEAR) {
			/* Half of it lands, in whole logical blocks, then the device is gone. */
			len = len / 2 / m->dev.lbs * m->dev.lbs;
			mf->injected = -EIO;
			if (len == 0) {
				io_uring_prep_nop(sqe);
				io_uring_sqe_set_data(sqe, user_data);
				return 0;
			}
		}
		if (m->dev.nvme.passthru)
			return mio_nvme(ring, sqe, m, true, buf, len, NULL, 0, a->data_offset + off,
					rw_flags & RWF_DSYNC, buf_index, user_data, mf);
		if (buf_index >= 0)
			io_uring_prep_write_fixed(sqe, m->dev.fd, buf, len, a->data_offset + off,
						  buf_index);
		else
			io_uring_prep_write(sqe, m->dev.fd, buf, len, a->data_offset + off);
	} else if (m->dev.nvme.passthru) {
		return mio_nvme(ring, sqe, m, false, buf, len, NULL, 0, a->data_offset + off, false,
				buf_index, user_data, mf);
	} else if (buf_index >= 0) {
		io_uring_prep_read_fixed(sqe, m->dev.fd, buf, len, a->data_offset + off, buf_index);
	} else {
		io_uring_prep_read(sqe, m->dev.fd, buf, len, a->data_offset + off);
	}
	io_uring_sqe_set_data(sqe, user_data);
	return 0;
}

static int member_prep(struct io_uring *ring, struct graid_array *a, unsigned member,
		       bool write, void *buf, unsigned len, const struct iovec *iov,
		       unsigned iovcnt, uint64_t off, int rw_flags, int buf_index,
		       void *user_data, struct member_io_fault *mf)
{
	const uint32_t *meta_in = mf->meta_in;
	int meta_err = mf->meta_err;
	int keep = mio_keep(a, member, write, buf, len, iov, iovcnt, off, rw_flags & RWF_DSYNC,
			    mf);
	struct io_uring_sqe *sqe;
	int rc;

	if (keep) {
		/* As an injected error: the write ends with it, never issued. */
		mio_fault_start(a, member, mf);
		mf->injected = keep;
		sqe = mio_sqe(ring);
		if (sqe) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data(sqe, user_data);
			return 0;
		}
		/* Not tagged: nothing to end; prepared again, with the words it came with. */
		mf->meta_in = meta_in;
		mf->meta_err = meta_err;
		return -EAGAIN;
	}
	rc = mio_issue(ring, a, member, write, buf, len, iov, iovcnt, off, rw_flags, buf_index,
		       user_data, mf);

	/*
	 * Not on the ring: no member_io_done() will end its tags. A caller that prepares it
	 * again (-EAGAIN: member_batch.c) gets it with the meta words it came with.
	 */
	if (rc) {
		member_io_abandon(a, member, len, mf);
		mf->meta_in = meta_in;
		mf->meta_err = meta_err;
	}
	return rc;
}

int member_io_now_begin(struct graid_array *a, unsigned member, bool write, void *buf,
			unsigned len, const struct iovec *iov, unsigned iovcnt, uint64_t off,
			struct member_io_fault *mf)
{
	mio_fault_start(a, member, mf);
	return mio_keep(a, member, write, buf, len, iov, iovcnt, off, false, mf);
}

void member_io_abandon(struct graid_array *a, unsigned member, uint32_t len,
		       struct member_io_fault *mf)
{
	tag_inline_free(mf);
	if (!mf->tagged)
		return;
	tag_store_write_end(a, member, mf->off, mf->iov ? mio_bytes(0, mf->iov, mf->iovcnt) : len,
			    false);
	atomic_fetch_sub(&a->members[member].role.csum_winflight, 1);
	mf->tagged = false;
}

bool member_io_in_ram(const struct member *m)
{
	struct statfs sfs;
	struct stat st;

	if (m->dev.fd < 0 || m->dev.fault || m->dev.nvme.passthru || fstat(m->dev.fd, &st) || !S_ISREG(st.st_mode))
		return false;
	return fstatfs(m->dev.fd, &sfs) == 0 &&
	       (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

ssize_t member_io_now(struct graid_array *a, int fd, bool write, void *buf, unsigned len,
		      const struct iovec *iov, unsigned iovcnt, uint64_t off)
{
	struct iovec one = { .iov_base = buf, .iov_len = len };
	size_t want = 0, done = 0;

	if (!iov) {
		iov = &one;
		iovcnt = 1;
	}
	for (unsigned i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	/* A file in RAM moves everything at once; the loop is for signals and odd cases. */
	while (done < want) {
		struct iovec rest[MEMBER_IOV_MAX];
		unsigned k = 0;
		size_t skip = done;
		ssize_t n;

		for (unsigned i = 0; i < iovcnt && k < MEMBER_IOV_MAX; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			rest[k].iov_base = (char *)iov[i].iov_base + skip;
			rest[k++].iov_len = iov[i].iov_len - skip;
			skip = 0;
		}
		n = write ? pwritev(fd, rest, (int)k, (off_t)(a->data_offset + off + done))
			  : preadv(fd, rest, (int)k, (off_t)(a->data_offset + off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* The most bad blocks of one read that are told apart (the rest are counted as one more). */
#define MIO_CSUM_BAD_MAX 16u

/*
 * A whole read of a checksummed array's data area against its tags: @p len, -EBADMSG (the
 * bad blocks into the role's csum_pend, mf->csum set), or the tag store's -errno. An
 * unverified read (resync) sets the tags from its bytes instead.
 */
static int mio_verify(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		      uint32_t len)
{
	struct member *m = &a->members[member];
	struct iovec one = { .iov_base = mf->buf, .iov_len = len };
	const struct iovec *iov = mf->iov ? mf->iov : &one;
	const unsigned iovcnt = mf->iov ? mf->iovcnt : 1;
	struct tag_bad stack_bad[MIO_CSUM_BAD_MAX], *bad = stack_bad, *all = NULL;
	unsigned nbad = 0, max = MIO_CSUM_BAD_MAX, fresh = 0;
	int rc;

	if (mf->unverified) {
		rc = tag_store_set(a, member, mf->off, iov, iovcnt);
		return rc ? rc : (int)len;
	}
	rc = tag_store_verify(a, member, mf->off, iov, iovcnt, bad, MIO_CSUM_BAD_MAX, &nbad);
	if (rc == 0)
		return (int)len;
	if (rc == -EBADMSG && mf->racy &&
	    (atomic_load(&m->role.csum_wgen) != mf->wgen || mf->wbusy ||
	     atomic_load(&m->role.csum_wbegun) != mf->wbegun)) {
		mf->stale = true;
		return -ESTALE;
	}
	/* More than the stack holds: every one is told apart (each is healed and reported). */
	if (rc == -EBADMSG && nbad == MIO_CSUM_BAD_MAX && len / 4096u > MIO_CSUM_BAD_MAX) {
		all = malloc(len / 4096u * sizeof(*all));
		if (all) {
			bad = all;
			max = len / 4096u;
			rc = tag_store_verify(a, member, mf->off, iov, iovcnt, bad, max, &nbad);
		}
	}
	if (rc != -EBADMSG) {
		free(all);
		if (rc == 0)
			return (int)len; /* a write that ended meanwhile made it right */
		graid__log(GRAID_LOG_ERR, "member %u (%s): the tags of data-area bytes %llu..%llu "
					  "could not be read: %s", member, m->dev.path,
			   (unsigned long long)mf->off, (unsigned long long)(mf->off + len),
			   graid_strerror(rc));
		return rc;
	}
	for (unsigned i = 0; i < nbad && i < max; i++)
		fresh += csum_pend_add(&m->role.csum_pend, bad[i].block,
				       csum_pend_fp(iov, iovcnt, bad[i].block * 4096u - mf->off));
	atomic_fetch_add_explicit(&m->role.csum_errors, fresh, memory_order_relaxed);
	/* Logged by csum_report_unresynced(), which knows whether a crash left it so. */
	free(all);
	mf->csum = true;
	return -EBADMSG;
}

void member_io_prefetch(struct graid_array *a, unsigned member, bool write, uint32_t len,
			const struct member_io_fault *mf)
{
	if (!write && a->tags && mf->off != UINT64_MAX && !mf->unverified && !mf->stale &&
	    !mf->injected)
		tag_store_prefetch(a, member, mf->off, len);
}

int member_io_done(struct graid_array *a, unsigned member, bool write, uint32_t len,
		   struct member_io_fault *mf, int res)
{
	struct member *m = &a->members[member];
	/*
	 * Issued on the device the role has now: an I/O of a device replaced since (a spare or
	 * a replacement took the role and its counters started afresh) is not the new one's to
	 * count, nor its MEMBER_SLOW. fd changes in one store (role_install).
	 */
	const bool ours = mf->fd == m->dev.fd;

	mf->slow_ms = 0;
	if (mf->meta || mf->meta_gens)
		tag_inline_end(mf, write, len, res);
	if (mf->stale)
		return -ESTALE;
	if (mf->injected)
		res = mf->injected;
	/*
	 * Tags are the role's, whichever device took the write. A write that failed part-way
	 * (torn) keeps the old tags over blocks that may hold new bytes: its member is failed
	 * for the error, and a rebuild writes them all again.
	 */
	if (mf->tagged) {
		/* Counted first: a read that then finds the new tag over old bytes knows why. */
		if (res == (int)len)
			atomic_fetch_add(&m->role.csum_wgen, 1);
		tag_store_write_end(a, member, mf->off, len, res == (int)len);
		atomic_fetch_sub(&m->role.csum_winflight, 1);
		mf->tagged = false;
	}
	/*
	 * Short inside the member's size: the member ended early (a truncated file, a device
	 * that shrank). Not a media error (-EIO would be repaired by writing the block back,
	 * which only extends a file whose holes then read as zeroes): the member goes out.
	 */
	if (res != (int)len) {
		if (ours) {
			member_ioerr_note(&m->role, write, mf->off, len, graid__now_ns());
			mf->slow_ms = stats_member(a, member, write ? GRAID_IO_WRITE : GRAID_IO_READ,
						   0, true, mf->start_ns);
		}
		return res < 0 ? res : -ENXIO;
	}
	/* A mismatch is a transfer done, and counted apart from failed I/O (csum_errors). */
	if (!write && a->tags && mf->off != UINT64_MAX) {
		/* The drive's metadata, or its end-to-end check; then the tag area's tags. */
		/* With generations, the metadata's against the tag area's copy first. */
		if (tag_inline_checks(mf) && a->csum_gens && mf->meta && mf->meta_tags &&
		    !mf->e2e && !mf->unverified &&
		    tag_store_behind(a, member, mf->off / 4096u, len / 4096u, mf->meta,
				     &mf->meta_fmt, &mf->meta_stale))
			graid__log(GRAID_LOG_WARNING, "member %u (%s): no memory to compare the "
						      "write generations of a read", member,
				   m->dev.path);
		if (tag_inline_checks(mf))
			res = tag_inline_verify(a, member, mf, len);
		if (res == (int)len && !mf->meta_tags)
			res = mio_verify(a, member, mf, len);
	}
	if (!ours)
		return res;
	/* The success path's one cost: a load, and a store only after an error. */
	if (atomic_load_explicit(&m->role.io_err_row[write], memory_order_relaxed))
		atomic_store_explicit(&m->role.io_err_row[write], 0, memory_order_relaxed);
	mf->slow_ms = stats_member(a, member, write ? GRAID_IO_WRITE : GRAID_IO_READ, len, false,
				   mf->start_ns);
	atomic_fetch_add_explicit(write ? &m->role.writes : &m->role.reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(write ? &m->role.write_bytes : &m->role.read_bytes, len,
				  memory_order_relaxed);
	return res;
}
