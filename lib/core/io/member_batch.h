/* SPDX-License-Identifier: MIT */
/* One io_uring per background job (rebuild, scrub, resync): groups of member I/Os in flight at once. */
#ifndef LIBGRAID_CORE_MEMBER_BATCH_H
#define LIBGRAID_CORE_MEMBER_BATCH_H

#include <liburing.h>

#include "array/array.h"
#include "member/member_io.h"

/* member_batch.c: run member I/Os in parallel on a private ring, synchronously. */
struct mbio {
	struct member_io_fault fault;
	unsigned member;
	bool write;
	uint8_t *buf;
	uint32_t len;
	uint64_t off;        /* inside the data area */
	int res;             /* bytes, or -errno; a failed member is marked failed */
	unsigned cost;       /* ring entries it took: NVMe passthrough splits at the MDTS */
	/*
	 * A read that failed with an error its member keeps (a media error on a member
	 * otherwise fine, with mbatch.keep_read_errors): the member was not failed for it;
	 * the job narrows it to the blocks at fault (io/row_heal.h).
	 */
	bool media;
};

/* Groups one ring serves at once: a rebuild keeps one batch's writes and the next one's reads. */
#define MBATCH_GROUPS 4

/* I/Os that are waited for together; each I/O's res is set when it completes. */
struct mbgroup {
	struct mbio *ios;
	size_t n;
	size_t next;         /* ios[0, next) are on the ring */
	size_t done;         /* of those, completed */
};

struct mbatch {
	struct graid_array *a;
	struct io_uring ring;
	bool open;
	bool broken;         /* the ring failed: nothing more completes on it */
	/*
	 * Set by a job that repairs what it cannot read (rebuild, scrub, resync): a read that
	 * fails with a media error leaves its member in and is marked media, for the job to
	 * narrow; other jobs fail the member for any error.
	 */
	bool keep_read_errors;
	/*
	 * Set by resync: its reads are not checked against their tags; the tags are made from
	 * the bytes read (the data is the truth in a region a crash left dirty).
	 */
	bool unverified;
	size_t inflight;     /* I/Os on the ring, all groups */
	struct mbgroup *active[MBATCH_GROUPS];
	unsigned nactive;
};

/* Set up the ring (flags for the members present now). 0 or -errno. */
int mbatch_open(struct mbatch *mb, struct graid_array *a);
/* Wait for every I/O still on the ring (their buffers are about to be freed), then free it. */
void mbatch_close(struct mbatch *mb);
/*
 * Put a group of I/Os on the ring (as many as fit now; the rest go as room frees up while
 * any group is waited for). 0; -EBUSY MBATCH_GROUPS groups are active; -EIO the ring broke.
 */
int mbatch_start(struct mbatch *mb, struct mbgroup *g, struct mbio *ios, size_t n);
/* Drive the ring until every I/O of g completed. 0, or -errno when the ring broke. */
int mbatch_wait(struct mbatch *mb, struct mbgroup *g);
/* Wait until at least one completion arrives (any group), then reap. 0, or -errno when the
 * ring broke; returns at once when nothing is in flight. */
int mbatch_wait_any(struct mbatch *mb);
/* Reap what has completed without waiting; true when every I/O of g has. */
bool mbatch_poll(struct mbatch *mb, struct mbgroup *g);
/* mbatch_start + mbatch_wait. */
int mbatch_run_on(struct mbatch *mb, struct mbio *ios, size_t n);

#endif
