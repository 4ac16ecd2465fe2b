/* SPDX-License-Identifier: MIT */
/* A role copied onto a new device while its member stays in service (docs/REPLACE.md). */
#ifndef LIBGRAID_CORE_REPLACE_H
#define LIBGRAID_CORE_REPLACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "meta/badblocks.h"

/* Units the copy could read from no device, recorded on the new device at the swap. */
#define REPLACE_LOST_MAX 64u

/*
 * The copy in progress. The new device is a struct member of its own, outside members[],
 * until the swap moves it into its role. Writers of the role (replace_io.c) take io_lock
 * shared around each write they also send to it; the swap, a takeover and the end take it
 * exclusive, so that no such write is in flight when the device moves or goes.
 */
struct array_replace {
	struct graid_array *a;
	struct array_replace *prev;    /* the replace before this one, kept until close */
	unsigned role;
	struct member dev;             /* the new device */
	bool from_spare;               /* it was a hot spare */
	pthread_rwlock_t io_lock;
	bool gone;                     /* under io_lock: the device moved or went; write nothing */
	atomic_bool failed;            /* a write to the new device failed */
	atomic_bool stop;              /* close, or a cancel: stop at the next batch */
	atomic_uint_fast64_t done;     /* data-area bytes of the role in sync on the new device */
	uint64_t total;
	int error;                     /* how it ended (0 swapped) */
	bool finished;                 /* under meta_lock: ended; the thread may still return */
	pthread_t thread;
	bool thread_started;           /* under meta_lock: to be joined */
	atomic_bool thread_exited;     /* it has returned (or is about to, holding no lock) */
	/* Units no device could give (RAID-5/6 beyond parity, or every copy gone). */
	unsigned nlost;
	uint64_t lost[REPLACE_LOST_MAX];
};

/*
 * replace_io.c: the write path's part. A write of @p len bytes (or of @p iov) at data-area
 * offset @p off of role @p role (member_prep's numbering: a metadata write wraps around to
 * its member offset) goes to the new device too, synchronously, before the caller queues
 * its own. A failure there marks the copy failed, never the caller's write.
 */
void replace_dup_write(struct graid_array *a, unsigned role, const void *buf, size_t len,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, bool meta);
/* The same for zeroes over [off, off + len) of the data area (a discard). */
void replace_dup_zero(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/* Whether writes to @p role are to reach a new device too (no lock: one load). */
static inline bool replace_covers(const struct graid_array *a, unsigned role)
{
	return atomic_load_explicit(&a->replace_role, memory_order_acquire) == role + 1;
}

/*
 * One I/O of the copy on @p m, at data-area offset @p off, through its injected faults
 * like any member I/O. 0 or -errno.
 */
int replace_pio(struct graid_array *a, struct member *m, bool write, void *buf, size_t len,
		uint64_t off);
/*
 * Chunk-sized piece [off, off + len) of role @p role into @p buf from the other members
 * (the copies, or the row's other chunks and parity), 4 KiB units listed in @p want (bit
 * i: the unit at off + i * 4 KiB). Units none can give are zeroed and their offsets added
 * to @p r's lost list. 0 or -ENOMEM.
 */
int replace_from_redundancy(struct graid_array *a, struct array_replace *r, uint64_t off,
			    uint32_t len, const struct bbl_cols *want, uint8_t *buf);

/*
 * replace.c. A role whose member failed while a copy of it ran: the new device takes the
 * role, REBUILDING (as md's replacement does), instead of a spare. True if it did.
 * meta_lock held.
 */
bool replace_takeover(struct graid_array *a, unsigned role);
/*
 * The health watch judged role @p role's drive critical: a replace onto the last hot spare
 * starts, where there is one and no other replace runs (logged). meta_lock held.
 */
void replace_auto(struct graid_array *a, unsigned role);
/* Stop the copy (close): the role keeps its member, the new device is let go. */
void replace_stop(struct graid_array *a);
/* The end of the handle: stop, and free every replace it made (array_free). */
void replace_free(struct graid_array *a);
/* The replace fields of graid_array_member_info() for role @p role. 0. */
int replace_progress(struct graid_array *a, unsigned role, struct graid_member_info *i);

#endif
