/* SPDX-License-Identifier: MIT */
/* What the stripe-operation engine's files share: a stripe's geometry, the next step, helpers. */
#ifndef LIBGRAID_CORE_SOP_INTERNAL_H
#define LIBGRAID_CORE_SOP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "io/queue.h"
#include "io/queue_io.h"

/*
 * The engine's files form a stack (docs/ARCHITECTURE.md): sop.c drives an operation from
 * phase to phase and calls the plan files; a plan file never calls back up. What a plan
 * leaves to its driver it says by returning one of these.
 */
enum sop_step {
	SOP_STEP_NONE,     /* I/O in flight, or queued for the engine, or finished: nothing now */
	SOP_STEP_DRAINED,  /* the phase issued no I/O (or all of it ended): it is over now */
	SOP_STEP_LOCK,     /* a RAID-1/10 read found a bad copy: plan it again under the lock */
	SOP_STEP_LOG_WAIT, /* no space in the write-hole journal yet: park until some frees */
};

/* ---- geometry of one stripe operation ------------------------------------------------ */

static inline unsigned sop_nroles(const struct layout *l)
{
	return l->ndata + l->nparity;
}

/* Member offset (inside the data area) of byte x of the stripe's chunks: RAID-0/5/6. */
static inline uint64_t sop_member_off(const struct layout *l, uint64_t stripe, uint32_t x)
{
	return stripe * l->chunk + x;
}

/* The request's part in data chunk d of the stripe: [*ws, *we) inside the chunk. */
static inline bool sop_span(const struct layout *l, const struct sop *s, unsigned d,
			    uint32_t *ws, uint32_t *we)
{
	uint64_t cs = (s->stripe * l->ndata + d) * (uint64_t)l->chunk;
	uint64_t a0 = s->arr_off, a1 = s->arr_off + s->arr_len;

	if (a1 <= cs || a0 >= cs + l->chunk)
		return false;
	*ws = a0 > cs ? (uint32_t)(a0 - cs) : 0;
	*we = a1 < cs + l->chunk ? (uint32_t)(a1 - cs) : l->chunk;
	return true;
}

/* The caller's memory for byte x of data chunk d. */
static inline uint8_t *sop_user(const struct layout *l, const struct sop *s, unsigned d,
				uint32_t x)
{
	uint64_t cs = (s->stripe * l->ndata + d) * (uint64_t)l->chunk;

	return s->req->buf + s->req_off + (cs + x - s->arr_off);
}

/* After issuing a phase's I/O: nothing issued means the phase is already complete. */
static inline enum sop_step sop_drained(const struct sop *s)
{
	return s->pending == 0 ? SOP_STEP_DRAINED : SOP_STEP_NONE;
}

/* ---- sop_common.c: buffers, member I/O, the end of an operation ----------------------- */

bool sop_own_buf(struct graid_queue *q, struct sop *s, unsigned r, size_t len);
void sop_release_bufs(struct graid_queue *q, struct sop *s);
/* Ends the operation: marks, journal entry, buffers and locks go back; @p s is free after. */
void sop_finish(struct graid_queue *q, struct sop *s, int err);
/* sop_finish() for a plan that returns its next step: there is none. */
static inline enum sop_step sop_end(struct graid_queue *q, struct sop *s, int err)
{
	sop_finish(q, s, err);
	return SOP_STEP_NONE;
}
void sop_xor(uint8_t *dst, const uint8_t *src, size_t n);

/* Inline: each runs per member I/O, from every plan file. */

/* Issue one member I/O; a full submission ring is reported as a failure of the operation. */
static inline bool sop_io(struct graid_queue *q, struct sop *s, unsigned slot, unsigned member,
			  bool write, uint8_t *ptr, size_t len, uint64_t moff)
{
	return queue_io(q, s, slot, member, write, ptr, len, moff) == 0;
}

static inline bool sop_is_bad(const struct sop *s, unsigned m)
{
	for (unsigned i = 0; i < s->nbad; i++)
		if (s->bad[i] == m)
			return true;
	return false;
}

/*
 * With an I/O timeout set, member reads go to the queue's buffers and are copied out: a
 * read given up on may still be written by the kernel, which must never be the caller's
 * memory after the call returned (queue_timeout.c).
 */
static inline bool sop_bounce_reads(const struct graid_queue *q)
{
	return atomic_load_explicit(&q->a->io_timeout_ns, memory_order_relaxed) != 0;
}

/* ---- sop_mirror.c: RAID-1 and RAID-10 ------------------------------------------------- */

enum sop_step sop_mirror_read(struct graid_queue *q, struct sop *s);
enum sop_step sop_mirror_write_locked(struct graid_queue *q, struct sop *s);
enum sop_step sop_mirror_repair(struct graid_queue *q, struct sop *s);

/* ---- sop_direct.c: RAID-0/5/6 reads and writes that need no stripe lock ---------------- */

enum sop_step sop_direct_read(struct graid_queue *q, struct sop *s);
enum sop_step sop_direct_write(struct graid_queue *q, struct sop *s);

/* ---- sop_dealloc.c: discard and write-zeroes of whole stripes ------------------------- */

void sop_dealloc_locked(struct graid_queue *q, struct sop *s);

/* ---- sop_run.c: several whole stripes in one operation -------------------------------- */

bool sop_run_trylock(struct graid_queue *q, struct sop *s);
void sop_run_plan(struct graid_queue *q, struct sop *s);
/* Stripe j's block of @p role: the caller's data (or its bounce copy), or a parity slice. */
uint8_t *sop_run_chunk(const struct layout *l, const struct sop *s, unsigned j,
		       unsigned role);
struct iovec *sop_run_iov(const struct layout *l, struct sop *s, unsigned m);
enum sop_step sop_run_write(struct graid_queue *q, struct sop *s);

/* ---- sop_parity.c: RAID-5/6 under the stripe lock: RCW, RMW, degraded ---------------- */

void sop_range(const struct layout *l, struct sop *s);
enum sop_step sop_parity_plan(struct graid_queue *q, struct sop *s);
void sop_compute(struct graid_queue *q, struct sop *s);
enum sop_step sop_recovered(struct graid_queue *q, struct sop *s);

/* ---- sop_write.c: an update's member writes, in place or through the journal ---------- */

enum sop_step sop_write_phase(struct graid_queue *q, struct sop *s);
enum sop_step sop_write_logged(struct graid_queue *q, struct sop *s);
enum sop_step sop_write_in_place(struct graid_queue *q, struct sop *s);

/* ---- sop_batch.c: one engine call for many stripes ------------------------------------ */

/* Recover every degraded operation waiting; each goes on to @p next, or ends in failure. */
void sop_batch_recover(struct graid_queue *q, void (*next)(struct graid_queue *, struct sop *));
/* Generate parity for every operation waiting; the same. */
void sop_batch_gen(struct graid_queue *q, void (*next)(struct graid_queue *, struct sop *));

#endif /* LIBGRAID_CORE_SOP_INTERNAL_H */
