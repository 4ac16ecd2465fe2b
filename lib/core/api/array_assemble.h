/* SPDX-License-Identifier: MIT */
/* Assembly: which of the devices given are the array's members, in which roles, and held by whom. */
#ifndef LIBGRAID_CORE_ARRAY_ASSEMBLE_H
#define LIBGRAID_CORE_ARRAY_ASSEMBLE_H

#include "format/reshape_format.h"
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
	struct superblock sb;
	bool valid;         /* so far, a member of the array being assembled */
	bool has_sb;        /* sb holds its decoded superblock (valid or not) */
	bool locked;        /* held by this open (member_lock) */
	bool forcible;      /* left out only because the others recorded it out */
	bool unreachable;   /* unreadable while its NVMe-oF controllers reconnect */
	/*
	 * Its role's own device, but its contents cannot be trusted as a whole (shrunk, or its
	 * superblock on another NVMe namespace): left out, and its role recorded FAILED, so
	 * that it is rebuilt whole once replaced and never caught up from the bitmap.
	 */
	bool distrusted;
	bool writable;      /* opened for writing, or (a look) this process may write it */
	enum assemble_join join;
	int verdict;        /* enum graid_given_verdict: what became of it */
	int error;          /* the -errno that kept it out, or 0 */
	char why[160];      /* the reason logged when it was left out */
};

struct assembly {
	struct open_candidate *c;
	unsigned n;
	int pick;                      /* the candidate whose array is assembled */
	const struct superblock *fresh;  /* the freshest superblock of that array */
	struct array_uuid_lock lock;   /* writable: this host's lock on the array's UUID */
	/* The freshest superblock records a reshape this build resumes: its newest record. */
	bool reshape;
	struct reshape_record reshape_rec;
};

/*
 * Open every path, read its superblock and choose the array (the UUID most of them carry).
 * @p writable: then hold it, all or none: this host's lock on its UUID, then each of its
 * members in role order, and read the superblocks again under the locks. Otherwise every
 * path is opened read-only (O_RDONLY), for a look that writes nothing. A live holder
 * gets -EBUSY at once (logged with its pid, name, host and since when); one that died is
 * waited for, a bounded while, until the kernel lets go of its members.
 * @return 0; -EINVAL a NULL path, or no member carries a valid superblock; -EBUSY held by
 *   another open; -ENOMEM.
 */
int assemble_gather(struct assembly *as, const char *const *paths, unsigned n, bool writable);

/* Keep the members of the chosen array that agree with its freshest superblock, each with
 * how it joins (logged for every one left out or not current). Sets as->fresh. 0; -EIO
 * the members given record two geometries at the freshest event (an array split across
 * a level change: logged naming both; every member left out, nothing written). */
int assemble_filter(struct assembly *as);

/*
 * GRAID_OPEN_FORCE, when the members kept cannot carry the array: take back, freshest
 * first, members left out only because the others recorded them failed or stale, until
 * they can. Each is logged with the event count it comes from. @p a: the array (layout set,
 * nothing installed yet). @return how many were taken back.
 */
unsigned assemble_force(struct assembly *as, const struct graid_array *a);

/*
 * Whether role @p role is left to no device by this assembly while a device given for it
 * was left out as distrusted: the role is then recorded FAILED, not MISSING.
 */
bool assemble_role_distrusted(const struct assembly *as, unsigned role);

/*
 * What became of each path given (graid_array_given_info()): as->n entries, malloc'd, or
 * NULL without memory. Call after the array took its members (open_install): a candidate
 * still valid then is in its role or a spare.
 */
struct graid_given_info *assemble_verdicts(const struct assembly *as, unsigned nmembers);

/* Close every candidate the array did not take, and the UUID lock if it was not taken. */
void assemble_release(struct assembly *as);

#endif
