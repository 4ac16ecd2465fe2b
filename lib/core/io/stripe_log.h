/* SPDX-License-Identifier: MIT */
/*
 * The stripe engine's seam to the write-hole journal (meta/journal.h, docs/JOURNAL.md): an
 * update's member writes are staged in the journal before any goes in place, and its entry
 * is released once they are done. Nothing else of the journal is the engine's business.
 */
#ifndef LIBGRAID_CORE_STRIPE_LOG_H
#define LIBGRAID_CORE_STRIPE_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "io/queue.h"

/* The array keeps a write-hole journal: every parity update is staged there first. */
bool stripe_log_active(const struct graid_array *a);

/*
 * Stage @p s's member writes in the journal: claim log space and write member m's entry
 * (m below s->lay's member count, the entries tagged with that count),
 * whose payload is s->jiov[m * (SOP_RUN_MAX + 1) + 1 ...], @p cnt[m] pieces (0: m writes
 * nothing), going to @p off[m] in its data area. An entry that cannot be issued fails its
 * member. Returns 0 (the entries are in flight, or none was issued: see s->pending; a buffer
 * that ran out is left in s->err), -EAGAIN (the log is full of updates in flight: nothing was
 * done, try again after one ends), -EIO (the array is broken), or the claim's -errno.
 */
int stripe_log_write(struct graid_queue *q, struct sop *s, const unsigned *cnt,
		     const uint64_t *off);

/* The update's in-place writes are over (done or failed): its entry and log space go back. */
void stripe_log_done(struct graid_queue *q, struct sop *s);

#endif /* LIBGRAID_CORE_STRIPE_LOG_H */
