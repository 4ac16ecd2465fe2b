/* SPDX-License-Identifier: MIT */
/*
 * Batched fetches and commits (UBLK_F_BATCH_IO), where the driver has them. Per tag, the
 * older protocol costs a command in each direction for every request: a FETCH_REQ's CQE
 * brings it, a COMMIT_AND_FETCH_REQ answers it and waits for the next. Here, one
 * PREP_IO_CMDS at the start gives the driver every tag's buffer; one multishot
 * FETCH_IO_CMDS stays in the driver and writes the tags of new requests, 2 bytes each,
 * into a provided buffer (one CQE for however many came); and the results of everything
 * finished in one turn of the loop go back in one COMMIT_IO_CMDS. Data moves as before:
 * the driver copies a write's data into the tag's buffer before handing out the tag, and
 * a read's out of it at the commit (UBLK_BATCH_F_HAS_BUF_ADDR).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "queue.h"

int ubat_setup(struct uq *q)
{
	struct uq_batch *b = &q->b;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* The 7.3 header's io_uring_buf_reg, whose flags older headers call pad. */
	struct {
		__u64 ring_addr;
		__u32 ring_entries;
		__u16 bgid;
		__u16 flags;
		__u64 resv[3];
	} want = { .ring_entries = 1, .bgid = 0, .flags = GU_PBUF_RING_INC };
	struct io_uring_buf_reg reg;
	void *p;
	int rc;

	_Static_assert(sizeof(want) == sizeof(reg), "io_uring_buf_reg is 40 bytes");
	/* Room for every tag twice over, so that a fetch is re-armed seldom. */
	b->fetch_bytes = (unsigned)((q->s->depth * 2 * 2 + page - 1) / page * page);
	if (posix_memalign(&p, page, b->fetch_bytes))
		return -ENOMEM;
	b->fetch_buf = p;
	b->br_bytes = page;
	if (posix_memalign(&p, page, b->br_bytes))
		return -ENOMEM;
	b->br = p;
	io_uring_buf_ring_init(b->br);
	want.ring_addr = (__u64)(uintptr_t)b->br;
	memcpy(&reg, &want, sizeof(reg));
	/* Incremental: each CQE uses up only the bytes it wrote, the rest stays ours to fill. */
	rc = io_uring_register_buf_ring(&q->ring, &reg, 0);
	if (rc < 0) {
		fprintf(stderr, "graid-ublk: queue %u: the fetch buffer's ring: %s\n", q->q_id,
			graid_strerror(rc));
		free(b->br);
		b->br = NULL;
		return rc;
	}
	for (unsigned i = 0; i < UQ_COMMIT_BUFS; i++) {
		b->commit[i] = calloc(q->s->depth, sizeof(*b->commit[i]));
		if (!b->commit[i])
			return -ENOMEM;
	}
	return 0;
}

void ubat_unregister(struct uq *q)
{
	/* A fetch still armed then finds no buffer and ends (-ENOBUFS): it writes nowhere. */
	if (q->b.br)
		io_uring_unregister_buf_ring(&q->ring, 0);
}

void ubat_free(struct uq *q)
{
	struct uq_batch *b = &q->b;

	free(b->br);
	free(b->fetch_buf);
	for (unsigned i = 0; i < UQ_COMMIT_BUFS; i++)
		free(b->commit[i]);
}

/* A batch command for @p n elements of @p elem_bytes; the caller sets addr or the buffer. */
static struct io_uring_sqe *ubat_cmd(struct uq *q, unsigned op, unsigned n,
				     unsigned elem_bytes, uint16_t flags, uint64_t user_data)
{
	struct io_uring_sqe *sqe = uq_get_sqe(q);
	struct ublk_batch_io cmd = {
		.q_id = (__u16)q->q_id,
		.flags = flags,
		.nr_elem = (__u16)n,
		.elem_bytes = (__u8)elem_bytes,
	};

	if (sqe)
		usrv_prep_cmd(sqe, q->s->cdev_fd, op, &cmd, sizeof(cmd), user_data);
	return sqe;
}

/* The fetch buffer handed to the driver whole again, and the multishot fetch sent. */
static int ubat_arm_fetch(struct uq *q)
{
	struct uq_batch *b = &q->b;
	struct io_uring_sqe *sqe;

	sqe = ubat_cmd(q, UBLK_U_IO_FETCH_IO_CMDS, b->fetch_bytes / 2, 2, 0, UQ_FETCH_DATA);
	if (!sqe)
		return -EBUSY;
	io_uring_buf_ring_add(b->br, b->fetch_buf, b->fetch_bytes, 0,
			      io_uring_buf_ring_mask(1), 0);
	io_uring_buf_ring_advance(b->br, 1);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 0;
	sqe->uring_cmd_flags = IORING_URING_CMD_MULTISHOT;
	b->fetch_off = 0;
	return 0;
}

int ubat_start(struct uq *q)
{
	struct uq_batch *b = &q->b;
	struct gu_batch_elem *e = b->commit[0];
	struct io_uring_sqe *sqe;

	/* Buffer 0 carries the PREP until its CQE; commits start in buffer 1. */
	for (unsigned tag = 0; tag < q->s->depth; tag++)
		e[tag] = (struct gu_batch_elem){ .tag = (__u16)tag,
						 .buf_addr = (__u64)(uintptr_t)uq_buf(q, tag) };
	sqe = ubat_cmd(q, UBLK_U_IO_PREP_IO_CMDS, q->s->depth, sizeof(*e),
		       UBLK_BATCH_F_HAS_BUF_ADDR, UQ_PREP_DATA);
	if (!sqe)
		return -EBUSY;
	sqe->addr = (__u64)(uintptr_t)e;
	sqe->len = q->s->depth * (unsigned)sizeof(*e);
	b->commit_n[0] = q->s->depth;
	b->commit_out[0] = true;
	b->cur = 1;
	b->commit_n[1] = 0;
	return ubat_arm_fetch(q);
}

void ubat_commit(struct uq *q, unsigned tag, int result)
{
	struct uq_batch *b = &q->b;

	/* A tag is answered once per request, and comes back only after: depth at most. */
	if (b->commit_n[b->cur] >= q->s->depth) {
		fprintf(stderr, "graid-ublk: queue %u: more answers than tags (tag %u)\n",
			q->q_id, tag);
		return;
	}
	b->commit[b->cur][b->commit_n[b->cur]++] = (struct gu_batch_elem){
		.tag = (__u16)tag,
		.result = result,
		.buf_addr = (__u64)(uintptr_t)uq_buf(q, tag),
	};
}

void ubat_flush(struct uq *q)
{
	struct uq_batch *b = &q->b;
	unsigned n = b->commit_n[b->cur], next;
	struct io_uring_sqe *sqe;

	if (n == 0)
		return;
	/*
	 * The next buffer to fill: one whose command has been answered. With all of them
	 * out (the driver is slow to take them), these answers wait for the next turn.
	 */
	for (next = 0; next < UQ_COMMIT_BUFS; next++)
		if (next != b->cur && !b->commit_out[next])
			break;
	if (next == UQ_COMMIT_BUFS)
		return;
	sqe = ubat_cmd(q, UBLK_U_IO_COMMIT_IO_CMDS, n, sizeof(struct gu_batch_elem),
		       UBLK_BATCH_F_HAS_BUF_ADDR, UQ_COMMIT_DATA + b->cur);
	if (!sqe)
		return;
	sqe->addr = (__u64)(uintptr_t)b->commit[b->cur];
	sqe->len = n * (unsigned)sizeof(struct gu_batch_elem);
	b->commit_out[b->cur] = true;
	b->cur = next;
	b->commit_n[next] = 0;
}

/* New requests: the tags the fetch wrote since the last CQE. */
static void ubat_on_fetch(struct uq *q, const struct io_uring_cqe *cqe, bool *queued)
{
	struct uq_batch *b = &q->b;

	if (cqe->res > 0) {
		unsigned end = b->fetch_off + (unsigned)cqe->res;

		for (unsigned at = b->fetch_off; at + 2 <= end && at + 2 <= b->fetch_bytes; at += 2) {
			uint16_t tag;

			memcpy(&tag, b->fetch_buf + at, sizeof(tag));
			if (uq_on_request(q, tag, UBLK_IO_RES_OK))
				*queued = true;
		}
		b->fetch_off = end;
	}
	if (cqe->flags & IORING_CQE_F_MORE)
		return;
	/*
	 * The fetch ended. -ENODEV: the device is going away, no request comes again. The
	 * buffer used up (-ENOBUFS, or a last CQE with tags): again, from its start. Any
	 * other error (the driver short of memory, say): again too, always, more slowly after
	 * a few in a row. Giving up would strand the requests the driver holds for this
	 * queue, and STOP_DEV would wait for them forever.
	 */
	if (cqe->res == -ENODEV) {
		b->gone = true;
		b->fetch_ended = true;
		return;
	}
	if (cqe->res >= 0 || cqe->res == -ENOBUFS) {
		b->fetch_errors = 0;
	} else if (++b->fetch_errors >= 3) {
		if (b->fetch_errors == 3)
			fprintf(stderr, "graid-ublk: queue %u: FETCH_IO_CMDS ended: %s, 3 times in "
					"a row; trying again every 10 ms\n", q->q_id,
				graid_strerror(cqe->res));
		usleep(10 * 1000);
	}
	if (ubat_arm_fetch(q)) {
		/* Cannot happen: the ring has room for it (queue.c sizes it). */
		fprintf(stderr, "graid-ublk: queue %u: no SQE to fetch again\n", q->q_id);
		b->fetch_ended = true;
	}
}

/*
 * A commit answered. The driver takes the elements in order and stops at the first it
 * refuses: the answer is the bytes taken before it, or -EBUSY if it refused the first
 * (a tag it does not hold for us). That one is logged and given up (nothing we send
 * would change it), and those after it are sent again, never behind it, where they would
 * be refused with it. Any other error refused the command whole (nothing was taken):
 * all of it again, three times in a row at most. While the device goes away its
 * requests end with it and nothing is sent again.
 */
static void ubat_on_commit(struct uq *q, unsigned buf, int res)
{
	struct uq_batch *b = &q->b;
	const struct gu_batch_elem *e = b->commit[buf];
	unsigned n = b->commit_n[buf], from;

	b->commit_out[buf] = false;
	if (res >= 0 && (unsigned)res >= n * sizeof(*e)) {
		b->commit_errors = 0;
		return;
	}
	if (b->gone || atomic_load(&q->s->stopping))
		return;
	if (res < 0 && res != -EBUSY && ++b->commit_errors <= 3) {
		from = 0;
	} else {
		unsigned bad = res < 0 ? 0 : (unsigned)res / (unsigned)sizeof(*e);

		fprintf(stderr, "graid-ublk: queue %u: the driver refused the answer to tag %u "
				"(%d): %s\n", q->q_id, e[bad].tag, e[bad].result,
			res < 0 ? graid_strerror(res) : "a later element of a batch");
		from = bad + 1;
	}
	for (unsigned i = from; i < n; i++)
		ubat_commit(q, e[i].tag, e[i].result);
}

bool ubat_cqe(struct uq *q, const struct io_uring_cqe *cqe, bool *queued)
{
	uint64_t ud = cqe->user_data;

	if (ud == UQ_FETCH_DATA) {
		ubat_on_fetch(q, cqe, queued);
	} else if (ud == UQ_PREP_DATA) {
		q->b.commit_out[0] = false;
		if (cqe->res < 0) {
			fprintf(stderr, "graid-ublk: queue %u: PREP_IO_CMDS refused: %s\n",
				q->q_id, graid_strerror(cqe->res));
			q->b.fetch_ended = true;
		}
	} else if (ud >= UQ_COMMIT_DATA && ud < UQ_COMMIT_DATA + UQ_COMMIT_BUFS) {
		ubat_on_commit(q, (unsigned)(ud - UQ_COMMIT_DATA), cqe->res);
	} else {
		return false;
	}
	return true;
}
