/* SPDX-License-Identifier: MIT */
/*
 * A queue's internals: its requests, stripe operations, member I/O records and the io_uring
 * they run on. Types only; each module's functions are in its own header (queue_io.h,
 * sop.h, queue_pool.h...).
 */
#ifndef LIBGRAID_CORE_QUEUE_H
#define LIBGRAID_CORE_QUEUE_H

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>

#include "array/array.h"
#include "meta/live.h"
#include "member/member_io.h"

/* A caller's read or write. */
struct req {
	struct req *next;
	uint64_t user_data;
	uint8_t *buf;
	size_t len;
	uint64_t off;
	bool write;
	/*
	 * graid_queue_read_fixed() into a buffer table slot with no memory in this process (a
	 * kernel's pages): the slot, else -1. Then buf is QUEUE_KSLOT_BIAS + the offset in the
	 * slot, an address nothing may dereference: only member reads straight into it are
	 * allowed, and anything else ends the request with -EXDEV (queue_fixed.c).
	 */
	int kslot;
	/*
	 * Discard or write-zeroes: buf is the queue's zero buffer (q->zbuf), and every
	 * stripe operation starts at its beginning (req_off 0) instead of at the cursor.
	 */
	bool zero;
	struct live_token live; /* zero: what the live-data map saw when it was queued */
	size_t cursor;       /* bytes already cut into stripe operations */
	unsigned sops_live;  /* stripe operations started and not finished */
	int err;             /* first error, 0 if none */
	uint64_t start_ns;   /* when it was queued: its latency's start (io_stats.c) */
	/*
	 * A RAID-0 reshape set when it was queued: cut one chunk at a time, each routed by the
	 * position under its chunk lock (sop.c). plain: RAID-0 queued without one, counted in
	 * a->plain_inflight until it ends.
	 */
	struct array_reshape *rs;
	bool plain;
};

/*
 * One member I/O in flight; its address is the io_uring user_data. A stripe operation has
 * one per slot; one given up on after the I/O timeout leaves its slot (queue_late.c) and
 * lives on until the kernel ends it, the slot getting a fresh record.
 */
struct mio {
	struct sop *sop;     /* while not late: the operation it is for */
	struct member_io_fault fault;
	uint8_t *copy_to;    /* a bounced read: copy here on completion */
	uint8_t *copy_from;
	uint32_t len;
	/* Data-area offset of an in-place write (its success clears bad blocks); else UINT64_MAX. */
	uint64_t off;
	uint16_t member;
	uint16_t slot;       /* its index in the operation's mio[] */
	bool write;
	bool heap;           /* allocated on its own (a replacement), not in the operation */
	/* The I/O timeout (queue_timeout.c): in the queue's list, or given up on and late. */
	bool tracked;
	bool late;
	bool late_counted;   /* the member's late_ios counts it */
	uint32_t late_len;
	uint8_t *late_buf;   /* a late read's buffer: the queue's again when the kernel ends it */
	struct mio *t_prev, *t_next;
	uint64_t t_issue;    /* when it was prepared */
};

enum sop_phase {
	SOP_PARKED,          /* waiting for its stripe lock */
	SOP_READING,         /* member reads in flight */
	SOP_COMPUTE,         /* waiting for a batched parity generation */
	SOP_WRITING,         /* member writes in flight */
	SOP_JOURNAL_WAIT,    /* parked: waiting for space in the write-hole journal */
	SOP_LOGGING,         /* journal entries in flight; in-place writes follow */
};

enum sop_plan {
	PLAN_DIRECT_READ,    /* data chunks read straight, no lock, no engine */
	PLAN_DIRECT_WRITE,   /* RAID-0: data chunks written straight */
	PLAN_MIRROR_READ,    /* RAID-1/10: one copy */
	PLAN_MIRROR_WRITE,   /* RAID-1/10: every live copy */
	PLAN_RCW,            /* read the other data, regenerate parity */
	PLAN_RMW,            /* read old data and parity, apply the difference */
	PLAN_DEGRADED,       /* read every survivor, recover, (regenerate, write) */
	PLAN_RUN,            /* RAID-5/6: several whole stripes, one vectored write per member */
	PLAN_DEALLOC,        /* discard of whole stripes (chunks on 1/10): members deallocate */
};

/*
 * One stripe of a request (RAID-0/5/6: a row of chunks; RAID-1/10: one chunk). Per-role
 * arrays are sized for the array's member count and live in the same allocation.
 */
struct sop {
	struct sop *next;
	struct req *req;
	/* The geometry it is placed by: a->lay, or a reshape's old or new one (req->rs). */
	const struct layout *lay;
	uint64_t stripe;     /* the first stripe */
	unsigned nrun;       /* stripes covered: 1, or up to SOP_RUN_MAX for PLAN_RUN */
	unsigned nlocked;    /* PLAN_RUN: stripe locks held, in buckets[] */
	unsigned *buckets;   /* PLAN_RUN: SOP_RUN_MAX entries */
	struct iovec *iov;   /* PLAN_RUN: SOP_RUN_MAX per member */
	uint64_t arr_off;    /* array offset of this operation's first byte */
	size_t req_off;      /* offset of that byte in req->buf */
	size_t arr_len;      /* bytes of the request in this stripe */
	uint32_t lo, hi;     /* byte range inside the chunk that the stripe work covers */
	uint8_t phase;
	uint8_t plan;
	bool locked;
	bool dealloc;        /* whole stripes of a zero request, deallocated (discard.c) */
	bool read_failed;    /* a member read failed: plan again with it out */
	bool repairing;      /* writing back what members could not read (array_readerr.c) */
	/*
	 * Members whose read of this stripe failed with a media error, or whose bad-block log
	 * records part of its range: out of this operation's plan, rewritten from the others.
	 */
	unsigned nbad;
	unsigned bad[4];
	unsigned mirror_src; /* RAID-1/10 read: the member whose copy is read */
	/*
	 * RAID-1/10 with generations (lost_write_mirror.h): while @c wmeta_on, every member
	 * write of this operation carries wmeta[i] as block i's meta word (the copies' max + 1,
	 * a heal's expected generation); wmeta_cap words allocated, kept across reuse.
	 */
	bool wmeta_on;
	uint32_t *wmeta;
	size_t wmeta_cap;
	unsigned bucket;
	/*
	 * A RAID-5/6 reshape's operation (req->rs): the second of its two row locks (the old
	 * and the new geometry's rows of its chunk, when their buckets differ), and the rows
	 * its bitmap and live-map marks were taken on (both rows).
	 */
	unsigned bucket2;
	bool locked2;
	bool rs_marked;
	uint64_t rs_rows[2];
	unsigned pending;    /* member I/Os in flight */
	unsigned write_fail; /* member writes that failed */
	int err;             /* a local failure (memory, ring) to report when I/O drains */
	unsigned nlost;
	unsigned lost[2];
	unsigned nwrites;    /* member writes issued in the write phase */
	uint8_t **buf;       /* per role: hi-lo bytes for the stripe work */
	uint32_t *blen;      /* per role: size of buf when own */
	bool *own;           /* per role: buf came from the queue's cache */
	uint8_t **nbuf;      /* RMW: per role, the new data of the range */
	struct mio **mio;    /* per slot (role or member): its record, in mio_store or not */
	struct mio *mio_store;
	uint64_t jseq;       /* journal: the update's number while it holds log space, else 0 */
	uint64_t *jpos;      /* journal: per member, where its entry goes (0: none) */
	uint8_t **jhdr;      /* journal: per member, its entry header */
	struct iovec *jiov;  /* journal: per member, header and payload (SOP_RUN_MAX + 1) */
};

/* A member I/O done in place, waiting to be reaped like a CQE. */
struct queue_inline_done {
	struct mio *io;
	int res;
};

/* Buffer cache size classes: 4 KiB << k. */
#define QUEUE_BUF_CLASSES 10
#define QUEUE_BUF_KEEP 64

struct graid_queue {
	struct graid_array *a;
	struct io_uring ring;
	/* GRAID_QUEUE_F_ONE_THREAD in effect: the ring defers its completion work to owner. */
	bool one_thread;
	unsigned long owner;         /* graid__thread_token() of the creating thread */
	unsigned owner_fork_gen;     /* graid__fork_gen at creation: a fork's child is not owner */
	unsigned depth;              /* requests the caller may have outstanding */
	unsigned nreq;               /* requests queued and not reaped */
	unsigned max_sops;           /* stripe operations in flight at most */
	unsigned nsops;              /* stripe operations in flight */
	unsigned ios_inflight;       /* member I/Os submitted and not completed */
	struct req *active, *active_tail;
	struct req *done, *done_tail;
	struct req *free_reqs;
	struct sop *free_sops;
	struct sop *parked;          /* waiting for stripe locks */
	struct sop *gen_list;        /* waiting for a batched parity generation */
	struct sop *rec_list;        /* degraded: waiting for a batched recovery */
	uint8_t *zero;               /* one chunk of zeroes (RMW: untouched data) */
	uint8_t *zbuf;               /* discard/write-zeroes source, zbuf_len bytes, lazily made */
	size_t zbuf_len;
	void *bufs[QUEUE_BUF_CLASSES][QUEUE_BUF_KEEP];
	unsigned nbufs[QUEUE_BUF_CLASSES];
	uint8_t **batch_ptrs;        /* scratch for batched generation and recovery */
	size_t batch_cap;
	/*
	 * Member I/O done in the calling thread (member_io_in_ram members; see queue_io): the
	 * results wait here, as CQEs wait on the ring, until the queue reaps them.
	 */
	bool inline_any;             /* some member in inline_mask */
	uint8_t inline_mask[GRAID_MAX_MEMBERS / 8];
	struct queue_inline_done *inl;
	unsigned ninl, inl_cap;
	/* I/Os that may be given up on, oldest first, and those given up on (queue_timeout.c). */
	struct mio *t_head, *t_tail;
	unsigned nlate;
	struct graid_queue *pool_next;
	bool retired;                 /* its ring broke with a request in it: never pooled again */
	/* graid_queue_register_buffers(): the ranges by start address, and their indices. */
	struct queue_fixed *fixed;
	unsigned nfixed;
	bool fixed_cmd;               /* passthrough commands may name them (Linux 6.1+) */
	struct queue_slot *slots;     /* the whole buffer table, by index; empty slots too */
	unsigned nslots;
	/* graid_queue_sqe(): the caller's own operations on this ring (queue_ops.c). */
	struct queue_op *ops;         /* ops_cap records, allocated at the first one */
	struct queue_op *op_free;
	unsigned ops_cap;
	unsigned nops;                /* sent and not ended (a multishot one until its last CQE) */
	struct graid_completion *op_done; /* their CQEs, waiting to be reaped */
	unsigned nop_done, op_done_cap;
};

/*
 * A call on a GRAID_QUEUE_F_ONE_THREAD queue from a thread other than its creator (or from
 * a fork()'s child, whose thread has its parent's token): the kernel would refuse its ring's
 * system calls (-EEXIST) half-way through the call's work, so each entry point refuses it
 * first, having changed nothing. The creator is told by its thread token, not pthread_self():
 * a thread made after the creator exits often has the creator's pthread_t, and the kernel,
 * which knows the task, would refuse it all the same.
 */
static inline bool queue_wrong_thread(const struct graid_queue *q)
{
	return q->one_thread &&
	       (q->owner != graid__thread_token() ||
		atomic_load_explicit(&graid__fork_gen, memory_order_relaxed) != q->owner_fork_gen);
}

/* The kernel's "not now": the request stays queued and the next try may send it. */
static inline bool queue_err_transient(int rc)
{
	return rc == -EAGAIN || rc == -EBUSY || rc == -EINTR || rc == -ENOMEM;
}

static inline bool queue_aligned(const void *p)
{
	return ((uintptr_t)p & (ARRAY_ALIGN - 1)) == 0;
}

#endif /* LIBGRAID_CORE_QUEUE_H */
