/* SPDX-License-Identifier: MIT */
/* A queue's internals: requests, stripe operations, buffers, and the io_uring they run on. */
#ifndef LIBGRAID_CORE_QUEUE_H
#define LIBGRAID_CORE_QUEUE_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>

#include "array/array.h"
#include "meta/live.h"
#include "member/member_io.h"

/* queue.c: used by the synchronous calls. */
struct graid_queue *array_queue_get(struct graid_array *a);
void array_queue_put(struct graid_array *a, struct graid_queue *q);
/* The synchronous calls: one request on a pooled queue, waited for. Its result or -errno. */
enum array_sync_kind { SYNC_READ, SYNC_WRITE, SYNC_DISCARD, SYNC_ZEROES };
int64_t array_sync_request(struct graid_array *a, enum array_sync_kind kind, void *buf,
			   uint64_t len, uint64_t offset);
/* Wait for the one request of a synchronous call; never returns while it is queued. */
int array_queue_sync_wait(struct graid_array *a, struct graid_queue *q,
			  struct graid_completion *c);
void array_queue_pool_free(struct graid_array *a);
/*
 * Account for the late I/O (queue_late.c) that idle pooled queues hold: their completions
 * wait in the rings until someone reaps, and until then the members' late_ios stay up.
 * For the worker, while a member waits for its late I/O to end.
 */
void array_queue_pool_reap_late(struct graid_array *a);

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
	unsigned bucket;
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

/* A slot of the buffer table: memory of the caller's (user), or left for a kernel's pages. */
struct queue_slot {
	uintptr_t base; /* user: its address; else what the kernel counts offsets from (0) */
	size_t len;     /* user only */
	bool user;
};

/* A caller's operation in flight; its address, with bit 0 set, is the CQE's user_data. */
struct queue_op {
	struct queue_op *next;
	uint64_t user_data;
};

/* CQE user_data of a caller's operation: mio records are at least 8-byte aligned. */
#define QUEUE_OP_TAG UINT64_C(1)

/*
 * Where the fake addresses of a read into a kernel's buffer start (struct req, kslot): far
 * above any offset in a slot, page-aligned so that alignment checks see the offset's own.
 */
#if UINTPTR_MAX > 0xffffffffu
#define QUEUE_KSLOT_BIAS ((uintptr_t)1 << 40)
#else
#define QUEUE_KSLOT_BIAS ((uintptr_t)0) /* no room: a kernel's pages are never read into */
#endif

/* A registered range: [base, end), fixed buffer @index of the queue's ring. */
struct queue_fixed {
	uintptr_t base, end;
	unsigned index;
};

/*
 * The fixed buffer holding [ptr, ptr + len) whole, or -1 (none); for @p passthru members
 * only where the kernel takes IORING_URING_CMD_FIXED.
 */
static inline int queue_fixed_index(const struct graid_queue *q, const void *ptr, size_t len,
				    bool passthru)
{
	uintptr_t p = (uintptr_t)ptr;
	unsigned lo = 0, hi = q->nfixed;

	if (passthru && !q->fixed_cmd)
		return -1;

	/* The last range starting at or below p, by bisection: they do not overlap. */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (q->fixed[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || p + len > q->fixed[lo - 1].end || p + len < p)
		return -1;
	return (int)q->fixed[lo - 1].index;
}

/* The ranges forgotten (graid_queue_destroy: the ring's exit unregisters them). */
void queue_fixed_free(struct graid_queue *q);
/*
 * Where graid_queue_read_fixed() reads to: *@p buf (and *@p kslot -1) for the caller's
 * memory, or a fake address and the slot for a kernel's pages. 0, -EINVAL (no such slot,
 * outside the caller's range) or -EXDEV (a kernel's pages this queue cannot read into).
 */
int queue_fixed_target(const struct graid_queue *q, unsigned buf_index, size_t buf_offset,
		       size_t len, uint8_t **buf, int *kslot);

/* queue_ops.c: graid_queue_sqe() */
/* A CQE of a caller's operation (user_data with QUEUE_OP_TAG); false: no room, keep it. */
bool queue_op_cqe(struct graid_queue *q, const struct io_uring_cqe *cqe);
/* Up to @p max finished operations into @p c; how many. */
unsigned queue_op_take(struct graid_queue *q, struct graid_completion *c, unsigned max);
void queue_ops_free(struct graid_queue *q);

/* queue.c */
uint8_t *queue_buf_get(struct graid_queue *q, size_t len);
void queue_buf_put(struct graid_queue *q, uint8_t *p, size_t len);
int queue_io(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
	     bool write, uint8_t *ptr, size_t len, uint64_t member_off);
int queue_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		 const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t member_off);
/* A journal entry: at `pos` bytes from the member's start, durable when it completes. */
int queue_log_writev(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
		     const struct iovec *iov, unsigned iovcnt, size_t len, uint64_t pos);
void queue_sop_done(struct graid_queue *q, struct sop *s, int err);
/* Do RAM-backed members' I/O in the calling thread from now on (array_queue_get). */
void queue_inline_setup(struct graid_queue *q);

/* discard.c */
/* Bytes of zeroes a zero request's stripe operation may cover when it writes them. */
size_t discard_zbuf_len(const struct graid_array *a);
/* Every writable member can zero a range without a data transfer (hole, discard, deallocate). */
bool discard_can_offload(const struct graid_array *a);
/* Zero [off, off+len) of role's data area by offload; 0 or -errno (then the role is failed). */
int discard_member(struct graid_queue *q, unsigned role, uint64_t off, uint64_t len);
/* The same outside a queue (rebuild: the unused rows of a new member). */
int discard_member_sync(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/* queue_timeout.c: the array's I/O timeout, which I/Os and when */
/* A member I/O just prepared, whose target is @p ptr: keep it in the list if it may be given up on. */
void queue_timeout_track(struct graid_queue *q, struct mio *io, const uint8_t *ptr);
/* It ended: out of the list. */
void queue_timeout_untrack(struct graid_queue *q, struct mio *io);
/* The oldest I/O when it is past the timeout, taken out of the list; else NULL. */
struct mio *queue_timeout_due(struct graid_queue *q);
/* Wait for a completion, or until the oldest I/O is due; io_uring_wait_cqe's result. */
int queue_timeout_wait(struct graid_queue *q);

/* queue_late.c: giving up on an I/O, and its late end */
/* Give up on @p io (past the timeout, out of the list) if the others can carry its stripe. */
void queue_give_up(struct graid_queue *q, struct mio *io);
/* A completion of @p io: true when it was a late one, now accounted for (nothing else to do). */
bool queue_late_done(struct graid_queue *q, struct mio *io, int res);

/* sop.c */
void sop_start(struct graid_queue *q, struct sop *s);
void sop_io_done(struct graid_queue *q, struct sop *s);
/*
 * A read of member @p m for @p s met a media error to repair: plan the stripe again with m
 * out and write back what it could not read. False: no room (the caller fails the member).
 */
bool sop_note_bad(struct sop *s, unsigned m);
void sop_compute_batch(struct graid_queue *q);
bool sop_try_unpark(struct graid_queue *q, struct sop *s);

static inline bool queue_aligned(const void *p)
{
	return ((uintptr_t)p & (ARRAY_ALIGN - 1)) == 0;
}

#endif /* LIBGRAID_CORE_QUEUE_H */
