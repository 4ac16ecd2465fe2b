/* SPDX-License-Identifier: MIT */
/* Member I/O for background work (rebuild, scrub): many reads or writes at once, waited for together. */
#include <errno.h>
#include <liburing.h>

#include "array.h"
#include "member_io.h"

#define MBATCH_RING 256u

static void mbatch_account(struct graid_array *a, struct mbio *io)
{
	struct member *m = &a->members[io->member];

	if (io->res == (int)io->len) {
		atomic_fetch_add(io->write ? &m->writes : &m->reads, 1);
		atomic_fetch_add(io->write ? &m->write_bytes : &m->read_bytes, io->len);
		return;
	}
	if (io->res >= 0)
		io->res = -EIO; /* short: the member ended early */
	array_member_failed(a, io->member, io->res);
}

int mbatch_run(struct graid_array *a, struct mbio *ios, size_t n)
{
	struct io_uring ring;
	size_t next = 0, done = 0;
	int rc = io_uring_queue_init(MBATCH_RING, &ring, member_ring_flags(a));

	if (rc < 0)
		return rc;
	while (done < n) {
		unsigned queued = 0;
		struct io_uring_cqe *cqe;

		/* Half the ring: a stalled member's I/O takes two entries. */
		while (next < n && next - done < MBATCH_RING / 2) {
			struct mbio *io = &ios[next];

			if (member_prep_io(&ring, a, io->member, io->write, io->buf, io->len,
					   io->off, io, &io->fault))
				break;
			next++;
			queued++;
		}
		if (queued)
			io_uring_submit(&ring);
		rc = io_uring_wait_cqe(&ring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			break; /* the ring is broken: nothing more will complete */
		do {
			struct mbio *io = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&ring, cqe);
			if (!io)
				continue; /* a stall's timeout */
			res = member_io_result(a, io->member, &io->fault, io->len, res);
			if (res == MEMBER_IO_MORE)
				continue; /* more NVMe commands of this I/O to come */
			io->res = io->fault.injected ? io->fault.injected : res;
			mbatch_account(a, io);
			done++;
		} while (io_uring_peek_cqe(&ring, &cqe) == 0);
		rc = 0;
	}
	io_uring_queue_exit(&ring);
	return rc;
}
