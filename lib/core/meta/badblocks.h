/* SPDX-License-Identifier: MIT */
/*
 * The bad-block log: for each role, the 4 KiB blocks of its device's data area that hold
 * nothing valid (docs/ARRAYS.md, "Bad blocks"). A block recorded there is an erasure at a
 * known place: reads take it from redundancy or fail with -EIO for that block only, and a
 * write of valid contents over all of it clears it. Kept on the device itself, as md keeps
 * its bad-block list (docs/FORMAT.md, "The bad-block log").
 */
#ifndef LIBGRAID_CORE_BADBLOCKS_H
#define LIBGRAID_CORE_BADBLOCKS_H

#include <pthread.h>
#include <stdatomic.h>

#include "array/array.h"
#include "format/bbl_format.h"

/* Where create puts the log: after the live-data map, well before the data area. */
#define BBL_DEFAULT_OFFSET (256u * 1024)

/* 4 KiB columns of one chunk (chunks are at most 1 MiB): one bit each. */
#define BBL_COLS_WORDS 4u
struct bbl_cols {
	uint64_t w[BBL_COLS_WORDS];
};

static inline bool bbl_cols_test(const struct bbl_cols *c, unsigned i)
{
	return c->w[i / 64] >> (i % 64) & 1;
}

static inline void bbl_cols_set(struct bbl_cols *c, unsigned i)
{
	c->w[i / 64] |= 1ull << (i % 64);
}

static inline bool bbl_cols_any(const struct bbl_cols *c)
{
	return c->w[0] | c->w[1] | c->w[2] | c->w[3];
}

/* One role's log in memory. */
struct badblocks {
	pthread_mutex_t lock;          /* the ranges and the on-disk copies; a leaf */
	atomic_uint n;                 /* ranges: read without the lock as "any at all?" */
	struct bbl_image img;          /* ranges, sequence and owner as the next copy writes them */
	bool dirty;                    /* clears not yet on the device (written lazily) */
};

/*
 * Set up a log per role ([offset, offset + bytes) on every member; bytes 0: the array keeps
 * none, and every call below is a no-op). Empty until badblocks_load() or _reset().
 */
int badblocks_init(struct graid_array *a, uint64_t offset, uint64_t bytes);
void badblocks_free(struct graid_array *a);

/*
 * Read role @p role's log from its device (open). 0: its newest valid copy for this
 * device's UUID, or none recorded (both copies zero: never written; or only another
 * device's copies: not this one's). -EBADMSG neither copy is zero or valid (what it
 * recorded lost cannot be told from data); -errno reading. The caller fails the member
 * on an error.
 */
int badblocks_load(struct graid_array *a, unsigned role);

/*
 * A new device in role @p role (create, replace, a spare taking over, the log set up on an
 * older array): an empty log with its UUID, written to both copies. 0 or -errno.
 */
int badblocks_reset(struct graid_array *a, unsigned role);

/*
 * The log of @p dev, a device about to take role @p role by a replace in service, written
 * to both its copies before it takes the role: empty but for the @p n units at data-area
 * offsets @p lost, recorded lost. The image is left in @p img for badblocks_adopt(). 0;
 * -EOPNOTSUPP units to record and the array keeps no log; -ENOSPC too many ranges; -errno
 * writing it.
 */
int badblocks_prepare(struct graid_array *a, unsigned role, struct member *dev,
		      const uint64_t *lost, unsigned n, struct bbl_image *img);
/*
 * @p dev is taking role @p role: @p img, which it carries, is the role's log from now on.
 * Under the replace's io_lock held exclusive, before the role's descriptor moves, so that no
 * write or read of the role sees the new device with the old log (meta_lock held).
 */
void badblocks_adopt(struct graid_array *a, unsigned role, const struct bbl_image *img);
/* Log and send an event for each range of @p img, once the role is the device's. */
void badblocks_adopt_report(struct graid_array *a, unsigned role, const struct bbl_image *img);

/*
 * Record [off, off + len) of role @p role's data area (whole BBL_UNIT blocks) as bad, with
 * BBL_F_* @p flags, durably, on the device with descriptor @p fd. Sends
 * GRAID_EVENT_BAD_BLOCK. 0; -ESTALE the role has another device now (nothing recorded);
 * -ENOSPC the log is full; -EOPNOTSUPP the array keeps no log; -errno writing it (the
 * caller fails the member: a bad block it cannot record is a member it cannot trust).
 */
int badblocks_add(struct graid_array *a, unsigned role, int fd, uint64_t off, uint64_t len,
		  unsigned flags);
/* The same with meta_lock held, on the role's device as it is (a replace's swap). */
int badblocks_add_held(struct graid_array *a, unsigned role, uint64_t off, uint64_t len,
		       unsigned flags);

/*
 * A write of valid contents over [off, off + len) of role @p role's data area completed on
 * descriptor @p fd: the whole units it covered hold data again. In memory at once, on the
 * device at the next badblocks_sync() (a crash before leaves a record too many: -EIO for a
 * block that holds data, never data for a block that holds none).
 */
void badblocks_clear(struct graid_array *a, unsigned role, int fd, uint64_t off, uint64_t len);

/* Whether role @p role's device has any record at all (no lock: the I/O path's first look). */
static inline bool badblocks_any(const struct graid_array *a, unsigned role)
{
	return a->bbl && role < a->nmembers &&
	       atomic_load_explicit(&a->bbl[role].n, memory_order_acquire) != 0;
}

/* Whether any unit of [off, off + len) of role @p role's data area is recorded. */
bool badblocks_overlap(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/*
 * OR into @p cols the 4 KiB columns of [off, off + len) (a chunk or part of one, off a
 * multiple of BBL_UNIT) that role @p role records: bit i is the unit at off + i * BBL_UNIT.
 * True if any.
 */
bool badblocks_cols(struct graid_array *a, unsigned role, uint64_t off, uint32_t len,
		    struct bbl_cols *cols);

/* Write every log whose clears are not on its device yet (flush, close). 0 or the first -errno. */
int badblocks_sync(struct graid_array *a);

/* Units recorded for role @p role. */
uint64_t badblocks_units(struct graid_array *a, unsigned role);

/* Copy role @p role's ranges into @p out (at most @p max); returns how many there are in all. */
unsigned badblocks_list(struct graid_array *a, unsigned role, struct bbl_range *out,
			unsigned max);

#endif /* LIBGRAID_CORE_BADBLOCKS_H */
