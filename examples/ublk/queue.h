/* SPDX-License-Identifier: MIT */
/* A queue thread's state, shared by queue.c (the loop, per-tag commands) and queue_batch.c. */
#ifndef GRAID_UBLK_QUEUE_H
#define GRAID_UBLK_QUEUE_H

#include "ublk_srv.h"

/* user_data of the SQEs that are not a tag's (tags are below 4096; UINT64_MAX is liburing's) */
#define UQ_STOP_DATA UINT64_C(0x5709)    /* the poll on the stop eventfd */
#define UQ_RELEASE_DATA UINT64_C(0x5710) /* the poll on the release eventfd (--on-foreign) */
#define UQ_PREP_DATA UINT64_C(0x5720)    /* batch: PREP_IO_CMDS */
#define UQ_FETCH_DATA UINT64_C(0x5721)   /* batch: the multishot FETCH_IO_CMDS */
#define UQ_COMMIT_DATA UINT64_C(0x5800)  /* batch: COMMIT_IO_CMDS from commit buffer N, + N */
#define UQ_COMMIT_BUFS 8                 /* batch: commit buffers, one filling, the rest out */
/*
 * One ring (queue_one.c): the completions graid_queue_reap() hands back are the graid
 * requests' (user_data: the tag, | UQ_ONE_COPY for a read into the tag's buffer that is
 * copied out after, zero copy's fallback) and those of the ublk commands sent through the
 * graid queue's ring (UQ_ONE_OP | tag, or the polls).
 */
#define UQ_ONE_OP (UINT64_C(1) << 32)
#define UQ_ONE_STOP (UQ_ONE_OP | 0x10000)
#define UQ_ONE_RELEASE (UQ_ONE_OP | 0x10001)
#define UQ_ONE_COPY (UINT64_C(1) << 33)
#define UQ_TAG_MASK UINT64_C(0xffff)

/* Batched fetches and commits (UBLK_F_BATCH_IO): queue_batch.c. */
struct uq_batch {
	struct io_uring_buf_ring *br;    /* one entry: the fetch buffer */
	size_t br_bytes;
	uint8_t *fetch_buf;              /* tags the driver hands out, 2 bytes each */
	unsigned fetch_bytes;            /* its size */
	unsigned fetch_off;              /* tags before this offset were taken */
	unsigned fetch_errors;           /* fetches in a row that ended in error */
	unsigned commit_errors;          /* commits in a row refused whole (not -EBUSY) */
	bool gone;                       /* the fetch ended -ENODEV: the device is going away */
	bool fetch_ended;                /* no fetch in the driver any more: no request comes */
	struct gu_batch_elem *commit[UQ_COMMIT_BUFS];
	unsigned commit_n[UQ_COMMIT_BUFS]; /* elements in each buffer */
	bool commit_out[UQ_COMMIT_BUFS];   /* sent, its CQE not seen yet */
	unsigned cur;                      /* the buffer commits are added to (never out) */
};

struct uq {
	struct usrv *s;
	unsigned q_id;
	pthread_t thread;
	int rc;                              /* the thread's exit status */
	bool have_ring;
	struct io_uring ring;                /* the ublk commands (SQE128), and the stop poll */
	const struct ublksrv_io_desc *iods;  /* the driver's request descriptors, by tag */
	size_t iods_bytes;
	uint8_t *bufs;                       /* one buffer of s->buf_bytes per tag */
	struct graid_queue *gq;              /* this thread's queue on the array */
	struct graid_completion *done;       /* room for a completion per tag (one ring: ndone) */
	unsigned ndone;
	unsigned inflight;                   /* tags whose graid request is not reaped yet */
	unsigned lost;                       /* tags the driver ended (abort) or refused */
	unsigned *held;                      /* tags answered -ESTALE, held (--on-foreign) */
	unsigned nheld;
	unsigned *deferred;                  /* tags the graid queue said "not now" to */
	unsigned ndeferred;                  /* (-EAGAIN: the array quiesced): served again */
	bool stop;                           /* the stop eventfd fired */
	uint64_t zc_reads, copied_reads;     /* zero copy: reads done straight, and copied out */
	struct uq_unsent { unsigned tag; int result; } *unsent; /* one ring: commits the */
	unsigned nunsent;                    /* graid queue's ring did not take yet */
	struct uq_batch b;                   /* s->batch only */
};

static inline uint8_t *uq_buf(struct uq *q, unsigned tag)
{
	return q->bufs + (size_t)tag * q->s->buf_bytes;
}

/* An SQE; with the ring full, what it holds is sent first. NULL only if that fails. */
struct io_uring_sqe *uq_get_sqe(struct uq *q);
/*
 * A request for @p tag has come (@p res: UBLK_IO_RES_OK, or the end of the slot). True if
 * a graid request was queued (it needs a graid_queue_submit()).
 */
bool uq_on_request(struct uq *q, unsigned tag, int res);

/*
 * The requests the array's queue answered -EAGAIN (held while the array is quiesced for a
 * moment: a level conversion, a RAID-10 grow's start), queued again; true if one was.
 */
bool uq_retry_deferred(struct uq *q);

/* Send the driver what @p tag's request came to (or hold it: --on-foreign). */
void uq_commit(struct uq *q, unsigned tag, int result);
/* The held requests answered -EIO (the hook has run, or the server stops). */
void uq_release_held(struct uq *q);
/* The driver ended every tag (the device is gone), or no fetch is left. */
bool uq_ended(const struct uq *q);
/*
 * The tag buffers (if @p mine) registered with the graid queue, after @p empty slots left
 * for the driver's pages (zero copy); 0 or a negative errno (said on stderr either way).
 */
int uq_register_bufs(struct uq *q, unsigned empty, bool mine);

/* ---- queue_one.c: the ublk commands on the graid queue's ring, zero copy there ---- */

/* The buffer table: (zero copy) a slot per tag for the driver's pages, the tag buffers. */
int uone_setup(struct uq *q);
/* FETCH_REQ for every tag and the polls, through the graid queue; sent. 0 or -errno. */
int uone_start(struct uq *q);
/* A read or write for @p tag: queued on the graid queue (0) or a negative errno. */
int uone_serve(struct uq *q, unsigned tag, bool write, uint64_t offset, size_t len);
/* COMMIT_AND_FETCH_REQ with @p result, through the graid queue. */
void uone_commit(struct uq *q, unsigned tag, int result);
/* Serve until stopped; the thread's exit status. */
int uone_loop(struct uq *q);

/* ---- queue_batch.c ---- */

/* The fetch buffer, its buffer ring (group 0) and the commit buffers. 0 or -errno. */
int ubat_setup(struct uq *q);
/* The fetch buffer's ring taken back from the kernel; before io_uring_queue_exit(). */
void ubat_unregister(struct uq *q);
/* Their memory freed; after io_uring_queue_exit(). */
void ubat_free(struct uq *q);
/* PREP_IO_CMDS for every tag, then the multishot fetch; not submitted. 0 or -errno. */
int ubat_start(struct uq *q);
/* The tag's result, added to the commit buffer; ubat_flush() sends it. */
void ubat_commit(struct uq *q, unsigned tag, int result);
/* One COMMIT_IO_CMDS for the results added since the last; before every submit. */
void ubat_flush(struct uq *q);
/*
 * A CQE of a batch command: new requests (each passed to uq_on_request; *@p queued set if
 * one was queued), a commit's answer, or the fetch's end. False if it is not one of them.
 */
bool ubat_cqe(struct uq *q, const struct io_uring_cqe *cqe, bool *queued);

#endif /* GRAID_UBLK_QUEUE_H */
