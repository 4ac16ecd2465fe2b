/* SPDX-License-Identifier: MIT */
/* Assembly: which of the devices given are the array's members, in which roles, and held by whom. */
#ifndef LIBGRAID_CORE_ARRAY_ASSEMBLE_H
#define LIBGRAID_CORE_ARRAY_ASSEMBLE_H

#include "array/array.h"

/* How a member given to an open takes its role. */
enum assemble_join {
	JOIN_CURRENT,  /* its superblock is current: in the state the freshest records */
	JOIN_CATCHUP,  /* it was absent while the bitmap kept history: copy the marked regions */
	JOIN_FULL,     /* it was absent, for how long is unknown: rebuild it whole */
	JOIN_FORCED,   /* others recorded it out; taken back by GRAID_OPEN_FORCE */
};

struct open_candidate {
	struct member m;
	struct graid_sb sb;
	bool valid;         /* so far, a member of the array being assembled */
	bool locked;        /* held by this open (member_lock) */
	bool forcible;      /* left out only because the others recorded it out */
	bool unreachable;   /* unreadable while its NVMe-oF controllers reconnect */
	enum assemble_join join;
};

struct assembly {
	struct open_candidate *c;
	unsigned n;
	int pick;                      /* the candidate whose array is assembled */
	const struct graid_sb *fresh;  /* the freshest superblock of that array */
	struct array_uuid_lock lock;   /* writable: this host's lock on the array's UUID */
};

/*
 * Open every path, read its superblock and choose the array (the UUID most of them carry).
 * @p writable: then hold it, all or none: this host's lock on its UUID, then each of its
 * members in role order, and read the superblocks again under the locks. A live holder
 * gets -EBUSY at once (logged with its pid, name, host and since when); one that died is
 * waited for, a bounded while, until the kernel lets go of its members.
 * @return 0; -EINVAL a NULL path, or no member carries a valid superblock; -EBUSY held by
 *   another open; -ENOMEM.
 */
int assemble_gather(struct assembly *as, const char *const *paths, unsigned n, bool writable);

/* Keep the members of the chosen array that agree with its freshest superblock, each with
 * how it joins (logged for every one left out or not current). Sets as->fresh. */
void assemble_filter(struct assembly *as);

/*
 * GRAID_OPEN_FORCE, when the members kept cannot carry the array: take back, freshest
 * first, members left out only because the others recorded them failed or stale, until
 * they can. Each is logged with the event count it comes from. @p a: the array (layout set,
 * nothing installed yet). @return how many were taken back.
 */
unsigned assemble_force(struct assembly *as, const struct graid_array *a);

/* Close every candidate the array did not take, and the UUID lock if it was not taken. */
void assemble_release(struct assembly *as);

#endif
