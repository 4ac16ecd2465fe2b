/* SPDX-License-Identifier: MIT */
/* Prepare one member read or write on a ring; the one place that knows about injected faults. */
#include <errno.h>
#include <signal.h>
#include <liburing.h>

#include "array.h"
#include "member_io.h"

static struct io_uring_sqe *mio_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	return sqe;
}

static int member_prep(struct io_uring *ring, struct graid_array *a, unsigned member,
		       bool write, void *buf, unsigned len, const struct iovec *iov,
		       unsigned iovcnt, uint64_t off, void *user_data, struct member_io_fault *mf);

int member_prep_io(struct io_uring *ring, struct graid_array *a, unsigned member, bool write,
		   void *buf, unsigned len, uint64_t off, void *user_data,
		   struct member_io_fault *mf)
{
	return member_prep(ring, a, member, write, buf, len, NULL, 0, off, user_data, mf);
}

int member_prep_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, void *user_data,
		       struct member_io_fault *mf)
{
	return member_prep(ring, a, member, true, NULL, 0, iov, iovcnt, off, user_data, mf);
}

static int member_prep(struct io_uring *ring, struct graid_array *a, unsigned member,
		       bool write, void *buf, unsigned len, const struct iovec *iov,
		       unsigned iovcnt, uint64_t off, void *user_data, struct member_io_fault *mf)
{
	struct member *m = &a->members[member];
	enum fault_action act = FAULT_NONE;
	struct io_uring_sqe *sqe;
	uint64_t stall_ns = 0;

	mf->injected = 0;
	if (m->fault)
		act = fault_decide(m->fault, write, &stall_ns);
	if (act == FAULT_KILL) {
		/* What is queued reaches the members; this write and all after it never do. */
		io_uring_submit(ring);
		raise(SIGKILL);
	}
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
	if (act == FAULT_FAIL) {
		io_uring_prep_nop(sqe);
		mf->injected = -EIO;
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
		io_uring_prep_writev(sqe, m->fd, iov, iovcnt, a->data_offset + off);
	} else if (write) {
		if (act == FAULT_TEAR) {
			/* Half of it lands, in whole logical blocks, then the device is gone. */
			len = len / 2 / m->lbs * m->lbs;
			mf->injected = -EIO;
			if (len == 0) {
				io_uring_prep_nop(sqe);
				io_uring_sqe_set_data(sqe, user_data);
				return 0;
			}
		}
		io_uring_prep_write(sqe, m->fd, buf, len, a->data_offset + off);
	} else {
		io_uring_prep_read(sqe, m->fd, buf, len, a->data_offset + off);
	}
	io_uring_sqe_set_data(sqe, user_data);
	return 0;
}
