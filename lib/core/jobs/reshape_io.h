/* SPDX-License-Identifier: MIT */
/*
 * A reshape job's member I/O (docs/RESHAPE.md): each phase of a window (its reads, then its
 * writes) in flight at once on the job's own ring (io/member_batch.h), through the I/O path
 * every other job takes: the drive model of test members, bad blocks cleared by the writes,
 * a member that fails an I/O failed as anywhere else, a medium error kept as one.
 */
#ifndef LIBGRAID_CORE_RESHAPE_IO_H
#define LIBGRAID_CORE_RESHAPE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array/array.h"
#include "io/member_batch.h"
#include "meta/badblocks.h"

struct reshape_io {
	struct mbatch mb;
	bool open;
	struct mbio *ios;
	size_t n, cap;
};

/* The ring (on the job's thread: a ring's flags may tie it to one) and room for @p cap I/Os. */
int reshape_io_open(struct reshape_io *x, struct graid_array *a, size_t cap);
void reshape_io_close(struct reshape_io *x);

/*
 * Queue one I/O of @p len bytes at data-area offset @p off of @p member (none is issued yet).
 * Returns it, for what the caller sets on it before the run (a write's meta words on its
 * fault record); NULL when the queue is full (nothing queued: the caller sized it too small,
 * a bug it must not pass over, and never sets words on another I/O of the queue).
 */
struct mbio *reshape_io_add(struct reshape_io *x, unsigned member, bool write, uint8_t *buf,
			    uint32_t len, uint64_t off);

/*
 * reshape_io_add() for a caller that sets nothing on the I/O: 0 queued; -EOVERFLOW the queue
 * was full, then emptied (nothing of the phase is issued: no chunk moved unread nor left
 * unwritten) and logged. The job stops on it and is not retried (reshape_job.c: a queue
 * sized too small is a bug, the same at every try).
 */
int reshape_io_queue(struct reshape_io *x, unsigned member, bool write, uint8_t *buf,
		     uint32_t len, uint64_t off);

/*
 * Issue every I/O queued, wait for them all, and empty the queue. 0; else the first failure,
 * logged with @p what: -EIO a member failed (it was failed, as by any I/O), -ENODATA a read
 * hit a medium error on a member otherwise fine (its I/O's @c media set; the member stays),
 * -errno the ring broke. The I/Os of the run stay readable in x->ios[0, @p *n) when @p n.
 */
int reshape_io_run(struct reshape_io *x, const char *what, size_t *n);

/*
 * After @p m took a chunk of @p chunk bytes at data-area byte @p moff (through @p fd): its
 * bad-block log no longer names units there (valid contents now: cleared as a rebuild's
 * write clears them), and the units of @p lost (NULL: none) are recorded lost there, durably,
 * before the job's record can advance past them: a unit that held nothing valid moves as a
 * loss, never as valid zeroes. A record that cannot be written takes the member out.
 * @return 0; -EIO that broke the array, or a loss to record on an array that keeps no log
 * (the job stops rather than drop it).
 */
int reshape_carry_loss(struct graid_array *a, unsigned m, int fd, uint64_t moff,
		       uint32_t chunk, const struct bbl_cols *lost);

#endif
