/* SPDX-License-Identifier: MIT */
/* A role's writes sent to the device a replace in service copies it to (jobs/replace.c). */
#ifndef LIBGRAID_CORE_MEMBER_REPLACE_H
#define LIBGRAID_CORE_MEMBER_REPLACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "array/array.h"

/* Units the copy could read from no device, recorded on the new device at the swap; past it, no swap. */
#define REPLACE_LOST_MAX 64u

/*
 * The copy in progress. The new device is a struct member of its own, outside members[],
 * until the swap moves it into its role. Writers of the role (member_replace.c) take io_lock
 * shared around each write they also send to it; the swap, a takeover and the end take it
 * exclusive, so that no such write is in flight when the device moves or goes.
 */
struct array_replace {
	struct graid_array *a;
	struct array_replace *prev;    /* the replace before this one, kept until close */
	unsigned role;
	struct member dev;             /* the new device */
	bool from_spare;               /* it was a hot spare (recorded as one until the swap) */
	bool swapping;                 /* under meta_lock: its superblock names the role now */
	pthread_rwlock_t io_lock;
	bool gone;                     /* set under io_lock and meta_lock: the device moved or
					  went; write nothing */
	atomic_bool failed;            /* a write to the new device failed */
	atomic_bool stop;              /* close, or a cancel: stop at the next batch */
	atomic_uint_fast64_t done;     /* data-area bytes of the role in sync on the new device */
	uint64_t total;                /* set before the replace is published, never changed */
	int error;                     /* how it ended (0 swapped) */
	/*
	 * Ended; the thread may still return. Set under meta_lock; atomic so that
	 * graid_array_member_info() reads it without the lock (an event callback may call it
	 * from a thread that holds meta_lock).
	 */
	atomic_bool finished;
	pthread_t thread;
	bool thread_started;           /* under meta_lock: to be joined */
	atomic_bool thread_exited;     /* it has returned (or is about to, holding no lock) */
	bool waiting;                  /* under meta_lock: a GRAID_REPLACE_WAIT caller runs it */
	pthread_cond_t waited;         /* with meta_lock: that caller no longer uses the handle */
	/*
	 * Units no device could give (RAID-5/6 beyond parity, or every copy gone), under
	 * lost_lock: the copy adds them, a write of the role that covers one on the new device
	 * takes it off (it holds data again).
	 */
	pthread_mutex_t lost_lock;
	unsigned nlost;
	uint64_t lost[REPLACE_LOST_MAX];
};

/*
 * The write path's part. A write of @p len bytes (or of @p iov) at data-area
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
 * Make the writes the new device took so far durable (graid_array_flush): those a caller
 * flushes are on it when it takes the role. A failure marks the copy failed. No lock.
 */
void replace_flush(struct graid_array *a);

/*
 * The hot spare a copy runs on, still recorded as a spare in every superblock round until
 * the swap (so that a crash leaves it a spare); NULL if none. meta_lock held.
 */
static inline struct member *replace_spare_held(const struct graid_array *a)
{
	struct array_replace *r = a->replace;

	/* gone: detached (a takeover installs it in the role, an end returns or closes it). */
	if (!r || r->finished || !r->from_spare || r->swapping || r->gone || r->dev.dev.fd < 0)
		return NULL;
	return &r->dev;
}

/* No write reaches the new device from here on; meta_lock held. */
static inline void replace_detach(struct graid_array *a, struct array_replace *r)
{
	pthread_rwlock_wrlock(&r->io_lock);
	r->gone = true;
	atomic_store(&a->replace_role, 0);
	pthread_rwlock_unlock(&r->io_lock);
}

#endif
