/* SPDX-License-Identifier: MIT */
/* Prepare one member read or write on a ring; the one place that knows about injected faults. */
#ifndef LIBGRAID_CORE_MEMBER_IO_H
#define LIBGRAID_CORE_MEMBER_IO_H

#include <liburing.h>

#include "array.h"

/*
 * Queue the I/O (at `off` inside the member's data area) on `ring` with `user_data`; a
 * stalled member gets a linked timeout first, whose completion carries NULL user data and
 * must be ignored. Returns 0 or -EAGAIN when the ring has no room even after a submit.
 */
int member_prep_io(struct io_uring *ring, struct graid_array *a, unsigned member, bool write,
		   void *buf, unsigned len, uint64_t off, void *user_data,
		   struct member_io_fault *mf);

/*
 * The same for a vectored write of iovcnt pieces landing contiguously at `off`; the iovec
 * array must live until the I/O completes.
 */
int member_prep_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, void *user_data,
		       struct member_io_fault *mf);

#endif
