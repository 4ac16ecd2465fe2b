/* SPDX-License-Identifier: MIT */
/* The stripe-operation engine (sop*.c) as its queue drives it. */
#ifndef LIBGRAID_CORE_SOP_H
#define LIBGRAID_CORE_SOP_H

#include <stdbool.h>

#include "io/queue.h"

/* Start a stripe operation cut from a request (its fields from stripe to req_off set). */
void sop_start(struct graid_queue *q, struct sop *s);
/* The member I/O of @p s's phase has drained: on to what follows. */
void sop_io_done(struct graid_queue *q, struct sop *s);
/*
 * A read of member @p m for @p s met a media error to repair: plan the stripe again with m
 * out and write back what it could not read. False: no room (the caller fails the member).
 */
bool sop_note_bad(struct sop *s, unsigned m);
/* Run the engine calls the operations waiting on q->rec_list and q->gen_list need. */
void sop_compute_batch(struct graid_queue *q);
/* A parked operation's stripe locks (or journal space), tried again: true if it went on. */
bool sop_try_unpark(struct graid_queue *q, struct sop *s);

#endif /* LIBGRAID_CORE_SOP_H */
