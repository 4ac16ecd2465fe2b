/* SPDX-License-Identifier: MIT */
/* Where every array byte lives: pure layout math for RAID 0, 1, 5, 6 and 10. */
#ifndef LIBGRAID_CORE_LAYOUT_H
#define LIBGRAID_CORE_LAYOUT_H

#include <limits.h>
#include <stdint.h>

/* Smallest and largest chunk, and most members, that a layout accepts. */
#define GRAID_LAYOUT_MIN_CHUNK 4096u
#define GRAID_LAYOUT_MAX_CHUNK (1u << 20)
#define GRAID_LAYOUT_MAX_MEMBERS 256u

/* Returned by the member and role look-ups where there is no such member or role. */
#define GRAID_LAYOUT_NONE UINT_MAX

/*
 * Where a RAID-6 puts P and Q (the other levels have one layout). The values are the
 * reshape record's layout ids (reshape_format.h enum reshape_layout) and FORMAT.md's.
 */
enum layout_id {
	/* md left-symmetric, P and Q rotating (below). */
	LAYOUT_ROTATING = 0,
	/*
	 * Q on the last member in every stripe (md's left-symmetric-6): data and P placed as a
	 * RAID-5 left-symmetric over members 0..n-2. What a RAID-5 of n-1 members becomes by
	 * adding one member without moving data (docs/RESHAPE.md); RAID-6 only.
	 */
	LAYOUT_Q_LAST = 1,
};

/*
 * The geometry of one array. Filled by layout_init(); read-only after.
 *
 * A "stripe" is the unit that parity, locking and mapping speak of:
 * - RAID-0/5/6: one row of chunks, one chunk on every member; stripe s covers member bytes
 *   [s * chunk, (s + 1) * chunk) on every member.
 * - RAID-1: one chunk, mirrored on every member at the same offset (stripe = row).
 * - RAID-10: one array chunk, i.e. the pair of slots that hold its two copies (md near-2).
 *   Here a stripe is NOT a row: stripe i lives in slots 2i and 2i+1 of the row-major
 *   sequence of (row, member) slots, so stripes run 0 .. array_bytes / chunk - 1.
 */
struct layout {
	int level;              /* 0, 1, 5, 6, 10 */
	unsigned nmembers;      /* members in the layout, 2..256 */
	unsigned ndata;         /* data chunks per stripe: n (0), 1 (1), n-1 (5), n-2 (6), 1 (10) */
	unsigned nparity;       /* 0, 0, 1, 2, 0 */
	uint32_t chunk;         /* bytes, power of two in [4 KiB, 1 MiB] */
	uint64_t member_bytes;  /* usable data bytes per member (a multiple of chunk) */
	uint64_t array_bytes;   /* usable bytes of the array */
	uint64_t nstripes;      /* rows of chunks per member: member_bytes / chunk */
	unsigned layout_id;     /* enum layout_id: LAYOUT_ROTATING but for a Q-last RAID-6 */
};

/*
 * Fill a layout.
 * @return 0; -EINVAL NULL @p l, unknown level, chunk not a power of two in [4 KiB, 1 MiB],
 *   too few members (0: 2, 1: 2, 5: 3, 6: 4, 10: 2), more than 256, or member_bytes less than
 *   one chunk; -EOVERFLOW the array's size does not fit in 64 bits. @p l is untouched on
 *   failure. member_bytes is rounded down to a multiple of chunk.
 */
int layout_init(struct layout *l, int level, unsigned nmembers, uint32_t chunk,
		      uint64_t member_bytes);

/*
 * layout_init() with a layout id (enum layout_id).
 * @return layout_init()'s; -EINVAL also an unknown @p id, or LAYOUT_Q_LAST on a level other
 *   than 6.
 */
int layout_init_id(struct layout *l, int level, unsigned nmembers, uint32_t chunk,
		   uint64_t member_bytes, unsigned id);

/*
 * RAID-5/6 rotation is md's default, left-symmetric (ALGORITHM_LEFT_SYMMETRIC):
 *   RAID-5: P on member (n-1) - (stripe % n); data chunk d on (P + 1 + d) % n.
 *   RAID-6: P as above, Q on (P + 1) % n, data chunk d on (P + 2 + d) % n.
 * The Q coefficient of data chunk d is g^d (d is the logical index in the stripe).
 * RAID-6 LAYOUT_Q_LAST, k = n - 1: P on (k-1) - (stripe % k), Q on n-1, data chunk d on
 *   (P + 1 + d) % k: members 0..n-2 are exactly a RAID-5 of k members.
 * Every placement goes through the functions below: nothing else computes it.
 */

/*
 * The member holding parity @p which (0 = P, 1 = Q) of @p stripe.
 * @return the member; GRAID_LAYOUT_NONE if the level has no such parity.
 */
unsigned layout_parity_member(const struct layout *l, uint64_t stripe,
				    unsigned which);

/*
 * The member holding data chunk @p d (0..ndata-1) of @p stripe; for RAID-1 and RAID-10 the
 * first copy.
 * @return the member; GRAID_LAYOUT_NONE if @p d >= ndata.
 */
unsigned layout_data_member(const struct layout *l, uint64_t stripe, unsigned d);

/*
 * The member holding role @p role of @p stripe: 0..ndata-1 a data chunk, ndata = P,
 * ndata + 1 = Q (the numbering of graid_parity_gen's blocks). RAID-1 and RAID-10: the
 * first copy.
 * @return the member; GRAID_LAYOUT_NONE if @p role >= ndata + nparity.
 */
unsigned layout_role_member(const struct layout *l, uint64_t stripe, unsigned role);

/*
 * The inverse of the three above: the role @p member plays in @p stripe: 0..ndata-1 a data
 * index, ndata = P, ndata + 1 = Q. RAID-1: 0 for every member (each holds a copy);
 * RAID-10: 0 for the two members holding a copy of the stripe's chunk.
 * @return the role; GRAID_LAYOUT_NONE if @p member >= nmembers or (RAID-10) holds no copy.
 */
unsigned layout_member_role(const struct layout *l, uint64_t stripe,
				  unsigned member);

/* Where one array byte lives. */
struct layout_pos {
	uint64_t stripe;        /* stripe (see struct layout) */
	unsigned d;             /* data index in the stripe, 0..ndata-1 */
	uint32_t chunk_off;     /* byte offset inside the chunk */
	unsigned member;        /* member holding it (RAID-1/10: the first copy) */
	uint64_t member_off;    /* byte offset inside that member's data area */
};

/*
 * Map an array byte offset to where it lives (for RAID-1/10 the first copy).
 * @pre @p array_off < l->array_bytes (not checked: this is the hot path).
 */
void layout_map(const struct layout *l, uint64_t array_off,
		      struct layout_pos *pos);

/*
 * Every copy of the byte at @p array_off: RAID-1: nmembers copies, members 0..n-1 at the
 * same offset; RAID-10: 2 copies, first copy first; RAID-0/5/6: the one data location.
 * @param members, member_off arrays of at least nmembers (RAID-1) or 2 entries.
 * @return the number of copies written.
 * @pre @p array_off < l->array_bytes.
 */
unsigned layout_copies(const struct layout *l, uint64_t array_off,
			     unsigned *members, uint64_t *member_off);

/*
 * The inverse of layout_map() for rebuild and scrub: which array byte a member byte
 * holds (any copy, for RAID-1/10).
 * @return 0 and *array_off set; -ENODATA the byte holds parity, or is a RAID-10 slot that
 *   no array chunk uses (the last slot when n * nstripes is odd); -EINVAL @p member or
 *   @p member_off out of range.
 */
int layout_unmap(const struct layout *l, unsigned member, uint64_t member_off,
		       uint64_t *array_off);

/*
 * The most whole stripes one write covers (a full-stripe run: one vectored write per
 * member, SOP_RUN_MAX iovecs each). The journal sizes its records by it.
 */
#define SOP_RUN_MAX 16

#endif /* LIBGRAID_CORE_LAYOUT_H */
