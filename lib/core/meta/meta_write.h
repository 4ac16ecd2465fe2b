/* SPDX-License-Identifier: MIT */
/* One block of a metadata area (bitmap, live-data map) written to every writable member at once. */
#ifndef LIBGRAID_CORE_META_WRITE_H
#define LIBGRAID_CORE_META_WRITE_H

#include "array/array.h"

/* A private ring for meta_write_all(), made at first use; its owner's lock serialises use. */
struct meta_ring;

/*
 * The members meta_write_all() stopped waiting for, or whose write failed, to be failed
 * once the lock is released; calls add to it (n = 0 to begin).
 */
struct meta_timed {
	unsigned n;
	struct {
		unsigned member;
		int fd;          /* the descriptor the write went to */
		int err;         /* 0: given up on after the timeout; else the write's -errno */
	} m[GRAID_MAX_MEMBERS];
};

/*
 * Write @p len bytes of @p buf at @p member_off (bytes from each member's start) to every
 * member whose role is writable, all at once, each durable when it completes (RWF_DSYNC:
 * FUA, or write and flush, as the device has it). @p what names the area in the log. Waits
 * until every member answered, or the array's I/O timeout passed: the members not answered
 * then are added to @p timed (their writes stay the kernel's, counted in the member's late_ios
 * until they end), and the caller passes it to meta_timed_settle() after releasing its
 * lock. A member whose write failed is added to it too (with its error): failed then,
 * unless it is the last copy of something (kept and logged), or fenced for a reservation
 * conflict. A mark that no member took is the caller's to refuse. Uses and keeps *@p ring; without one (io_uring refused) the members are
 * written one after another with pwrite and fdatasync. @p buf must stay allocated until
 * meta_ring_free(): a write given up on may still read it.
 * @return how many members took the write durably (0: none; a member given up on after
 * the timeout is not counted); -ESTALE the array went foreign (nothing written).
 */
int meta_write_all(struct graid_array *a, struct meta_ring **ring, const void *buf, size_t len,
		   uint64_t member_off, const char *what, struct meta_timed *timed);

/*
 * What a region's mark written with meta_write_all() (@p took, its result) means for the
 * write that needs it: 0 it may go out; -EIO no member took it (logged, naming @p what and
 * @p region); -ESTALE the array was taken over.
 */
int meta_mark_verdict(int took, const char *what, uint64_t region);

/* Fail the members in @p timed (as past the I/O timeout, or for their error); no lock held. */
void meta_timed_settle(struct graid_array *a, const struct meta_timed *timed);

/*
 * Wait for the writes given up on (a member's late_ios drops as each ends), then close the
 * ring and free it. Before the array's descriptors close. NULL: nothing.
 */
void meta_ring_free(struct graid_array *a, struct meta_ring *ring);

/*
 * The late ends the bitmap's and the live-data map's rings hold, taken off (the members'
 * late_ios drop): for the worker, when nobody writes. Takes each area's lock if it is free.
 */
void meta_rings_reap_late(struct graid_array *a);

/* The bitmap's and the live-data map's rings, freed (meta_ring_free) and forgotten. */
void meta_rings_free(struct graid_array *a);

#endif
