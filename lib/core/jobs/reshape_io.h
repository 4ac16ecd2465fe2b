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

struct reshape_io {
	struct mbatch mb;
	bool open;
	struct mbio *ios;
	size_t n, cap;
};

/* The ring (on the job's thread: a ring's flags may tie it to one) and room for @p cap I/Os. */
int reshape_io_open(struct reshape_io *x, struct graid_array *a, size_t cap);
void reshape_io_close(struct reshape_io *x);

/* Queue one I/O of @p len bytes at data-area offset @p off of @p member (none is issued yet). */
void reshape_io_add(struct reshape_io *x, unsigned member, bool write, uint8_t *buf,
		    uint32_t len, uint64_t off);

/*
 * Issue every I/O queued, wait for them all, and empty the queue. 0; else the first failure,
 * logged with @p what: -EIO a member failed (it was failed, as by any I/O), -ENODATA a read
 * hit a medium error on a member otherwise fine (its I/O's @c media set; the member stays),
 * -errno the ring broke. The I/Os of the run stay readable in x->ios[0, @p *n) when @p n.
 */
int reshape_io_run(struct reshape_io *x, const char *what, size_t *n);

#endif
