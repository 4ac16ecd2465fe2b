/* SPDX-License-Identifier: MIT */
/* A reshape job's member I/O, a phase at a time on the job's ring (jobs/reshape_io.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "jobs/reshape_io.h"
#include "meta/member_fail.h"

int reshape_io_open(struct reshape_io *x, struct graid_array *a, size_t cap)
{
	int rc;

	*x = (struct reshape_io){ 0 };
	x->ios = calloc(cap, sizeof(*x->ios));
	if (!x->ios)
		return -ENOMEM;
	rc = mbatch_open(&x->mb, a);
	if (rc) {
		free(x->ios);
		x->ios = NULL;
		return rc;
	}
	/* A medium error costs the block, not the member: the job decides what it costs. */
	x->mb.keep_read_errors = true;
	x->cap = cap;
	x->open = true;
	return 0;
}

void reshape_io_close(struct reshape_io *x)
{
	if (x->open)
		mbatch_close(&x->mb);
	free(x->ios);
	*x = (struct reshape_io){ 0 };
}

struct mbio *reshape_io_add(struct reshape_io *x, unsigned member, bool write, uint8_t *buf,
			    uint32_t len, uint64_t off)
{
	/* The caller sizes the queue for its largest phase (a bug otherwise, not a failure). */
	if (x->n == x->cap)
		return NULL;
	x->ios[x->n] = (struct mbio){ .member = member, .write = write, .buf = buf,
				      .len = len, .off = off };
	return &x->ios[x->n++];
}

int reshape_io_queue(struct reshape_io *x, unsigned member, bool write, uint8_t *buf,
		     uint32_t len, uint64_t off)
{
	if (reshape_io_add(x, member, write, buf, len, off))
		return 0;
	x->n = 0;
	graid__log(GRAID_LOG_ERR, "reshape: the job's I/O queue (%zu I/Os) is full: a bug; "
				  "stopped with nothing of the step issued", x->cap);
	return -EOVERFLOW;
}

int reshape_io_run(struct reshape_io *x, const char *what, size_t *n)
{
	struct graid_array *a = x->mb.a;
	size_t count = x->n;
	int rc = count ? mbatch_run_on(&x->mb, x->ios, count) : 0;

	x->n = 0;
	if (n)
		*n = count;
	for (size_t i = 0; rc == 0 && i < count; i++) {
		const struct mbio *io = &x->ios[i];

		if (io->res == (int)io->len)
			continue;
		rc = io->media ? -ENODATA : io->res < 0 ? io->res : -EIO;
		if (io->fault.stale)
			rc = -EIO; /* the role changed device under it: not its bytes */
		graid__log(GRAID_LOG_ERR, "reshape: %s member %u (%s) at data-area byte %" PRIu64
					  ": %s%s", what, io->member, a->members[io->member].dev.path,
			   io->off, graid_strerror(io->res < 0 ? io->res : -EIO),
			   io->media ? " (a medium error: the member stays)" : "");
	}
	if (rc == 0 && count && x->mb.broken)
		rc = -EIO;
	return rc;
}

int reshape_carry_loss(struct graid_array *a, unsigned m, int fd, uint64_t moff,
		       uint32_t chunk, const struct bbl_cols *lost)
{
	int rc = 0;

	badblocks_clear(a, m, fd, moff, chunk);
	for (unsigned c = 0; rc == 0 && lost && c < chunk / BBL_UNIT; c++) {
		if (!bbl_cols_test(lost, c))
			continue;
		rc = badblocks_add(a, m, fd, moff + (uint64_t)c * BBL_UNIT, BBL_UNIT, BBL_F_LOST);
		if (rc == -EOPNOTSUPP) {
			graid__log(GRAID_LOG_ERR, "reshape: a lost 4 KiB unit cannot be recorded "
						  "at its new place on member %u: the array keeps "
						  "no bad-block log; stopped", m);
			return -EIO;
		}
		if (rc == -ESTALE)
			return 0; /* the role has another device now: it is rebuilt whole */
		if (rc) {
			array_member_io_failed(a, m, fd, rc);
			return atomic_load(&a->broken) ? -EIO : 0;
		}
	}
	return rc;
}
