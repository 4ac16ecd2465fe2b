/* SPDX-License-Identifier: MIT */
/* Layout math: array offsets to (stripe, member, offset), parity rotation, mirror copies. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "format/layout.h"

/* The chunk is a power of two, so byte <-> chunk conversions are shifts, not divisions. */
static inline unsigned layout_chunk_shift(const struct layout *l)
{
	return (unsigned)__builtin_ctz(l->chunk);
}

static inline uint32_t layout_chunk_off(const struct layout *l, uint64_t off)
{
	return (uint32_t)(off & (l->chunk - 1));
}

/* md left-symmetric: parity starts on the last member and walks one member left per stripe. */
static inline unsigned raid56_p_member(unsigned n, uint64_t stripe)
{
	return (n - 1) - (unsigned)(stripe % n);
}

/* RAID-6 keeps Q right after P; data follows Q, wrapping (md left-symmetric). */
static inline unsigned raid6_q_member(unsigned n, uint64_t stripe)
{
	return (raid56_p_member(n, stripe) + 1) % n;
}

/* Data starts just after the stripe's parity and wraps: that is what makes it "symmetric". */
static inline unsigned raid56_data_member(unsigned n, unsigned nparity, uint64_t stripe,
					  unsigned d)
{
	return (raid56_p_member(n, stripe) + nparity + d) % n;
}

/* md near-2: copy k (0 or 1) of array chunk i is slot 2i + k, slots laid row by row. */
static inline uint64_t raid10_slot(uint64_t chunk_index, unsigned copy)
{
	return 2 * chunk_index + copy;
}

static inline unsigned raid10_slot_member(const struct layout *l, uint64_t slot)
{
	return (unsigned)(slot % l->nmembers);
}

static inline uint64_t raid10_slot_row(const struct layout *l, uint64_t slot)
{
	return slot / l->nmembers;
}

static unsigned layout_min_members(int level)
{
	switch (level) {
	case 0:
	case 1:
	case 5: /* two: P is the one data chunk, what a RAID-1 of two converts to (md's too) */
	case 10:
		return 2;
	case 6:
		return 4;
	default:
		return 0;
	}
}

/* Q-last: the RAID-5 part is members 0..n-2 (k of them); Q is the last member. */
static inline bool layout_qlast(const struct layout *l)
{
	return l->layout_id == LAYOUT_Q_LAST;
}

/* The members P and data rotate over: all of them, or (Q-last) all but the last. */
static inline unsigned layout_rot(const struct layout *l)
{
	return layout_qlast(l) ? l->nmembers - 1 : l->nmembers;
}

/* The parity chunks that rotate with the data: P and Q, or (Q-last) P alone. */
static inline unsigned layout_rot_parity(const struct layout *l)
{
	return layout_qlast(l) ? 1 : l->nparity;
}

int layout_init_id(struct layout *l, int level, unsigned nmembers, uint32_t chunk,
		   uint64_t member_bytes, unsigned id)
{
	struct layout g;
	int rc;

	if (id != LAYOUT_ROTATING && (id != LAYOUT_Q_LAST || level != 6))
		return -EINVAL;
	rc = layout_init(&g, level, nmembers, chunk, member_bytes);
	if (rc)
		return rc;
	g.layout_id = id;
	*l = g;
	return 0;
}

int layout_init(struct layout *l, int level, unsigned nmembers, uint32_t chunk,
		      uint64_t member_bytes)
{
	struct layout g = { .level = level, .nmembers = nmembers, .chunk = chunk };
	unsigned min = layout_min_members(level);

	if (!l || min == 0)
		return -EINVAL;
	if (chunk < GRAID_LAYOUT_MIN_CHUNK || chunk > GRAID_LAYOUT_MAX_CHUNK ||
	    (chunk & (chunk - 1)) != 0)
		return -EINVAL;
	if (nmembers < min || nmembers > GRAID_LAYOUT_MAX_MEMBERS || member_bytes < chunk)
		return -EINVAL;

	g.member_bytes = member_bytes & ~(uint64_t)(chunk - 1);
	g.nstripes = g.member_bytes >> layout_chunk_shift(&g);
	switch (level) {
	case 0:
		g.ndata = nmembers;
		break;
	case 1:
	case 10:
		g.ndata = 1;
		break;
	case 5:
		g.ndata = nmembers - 1;
		g.nparity = 1;
		break;
	case 6:
		g.ndata = nmembers - 2;
		g.nparity = 2;
		break;
	}

	if (level == 10) {
		/* nstripes < 2^52 (chunk >= 4 KiB) and n <= 256: the slot count fits; bytes may not. */
		uint64_t chunks = g.nmembers * g.nstripes / 2;

		if (chunks > UINT64_MAX >> layout_chunk_shift(&g))
			return -EOVERFLOW;
		g.array_bytes = chunks << layout_chunk_shift(&g);
	} else {
		if (g.member_bytes > UINT64_MAX / g.ndata)
			return -EOVERFLOW;
		g.array_bytes = g.member_bytes * g.ndata;
	}
	*l = g;
	return 0;
}

unsigned layout_parity_member(const struct layout *l, uint64_t stripe,
				    unsigned which)
{
	if (which >= l->nparity)
		return GRAID_LAYOUT_NONE;
	if (layout_qlast(l))
		return which == 0 ? raid56_p_member(layout_rot(l), stripe) : l->nmembers - 1;
	return which == 0 ? raid56_p_member(l->nmembers, stripe)
			  : raid6_q_member(l->nmembers, stripe);
}

unsigned layout_data_member(const struct layout *l, uint64_t stripe, unsigned d)
{
	if (d >= l->ndata)
		return GRAID_LAYOUT_NONE;
	switch (l->level) {
	case 0:
		return d;
	case 10:
		return raid10_slot_member(l, raid10_slot(stripe, 0));
	case 5:
	case 6:
		return raid56_data_member(layout_rot(l), layout_rot_parity(l), stripe, d);
	default: /* RAID-1: member 0 holds the first copy */
		return 0;
	}
}

unsigned layout_role_member(const struct layout *l, uint64_t stripe, unsigned role)
{
	return role < l->ndata ? layout_data_member(l, stripe, role)
			       : layout_parity_member(l, stripe, role - l->ndata);
}

unsigned layout_member_role(const struct layout *l, uint64_t stripe,
				  unsigned member)
{
	unsigned n = l->nmembers, p;

	if (member >= n)
		return GRAID_LAYOUT_NONE;
	switch (l->level) {
	case 0:
		return member;
	case 1:
		return 0;
	case 10:
		if (member == raid10_slot_member(l, raid10_slot(stripe, 0)) ||
		    member == raid10_slot_member(l, raid10_slot(stripe, 1)))
			return 0;
		return GRAID_LAYOUT_NONE;
	default:
		if (layout_qlast(l)) {
			if (member == n - 1)
				return l->ndata + 1;
			n--; /* the rest is a RAID-5 of n - 1 members */
		}
		p = raid56_p_member(n, stripe);
		if (member == p)
			return l->ndata;
		if (l->nparity == 2 && !layout_qlast(l) && member == raid6_q_member(n, stripe))
			return l->ndata + 1;
		/* Undo "(p + nparity + d) % n"; adding 2n keeps the subtraction non-negative. */
		return (member + 2 * n - p - layout_rot_parity(l)) % n;
	}
}

void layout_map(const struct layout *l, uint64_t array_off,
		      struct layout_pos *pos)
{
	unsigned shift = layout_chunk_shift(l);
	uint64_t c = array_off >> shift;

	pos->chunk_off = layout_chunk_off(l, array_off);
	if (l->level == 10) {
		uint64_t slot = raid10_slot(c, 0);

		pos->stripe = c;
		pos->d = 0;
		pos->member = raid10_slot_member(l, slot);
		pos->member_off = (raid10_slot_row(l, slot) << shift) + pos->chunk_off;
		return;
	}
	pos->stripe = c / l->ndata;
	pos->d = (unsigned)(c % l->ndata);
	pos->member = layout_data_member(l, pos->stripe, pos->d);
	pos->member_off = (pos->stripe << shift) + pos->chunk_off;
}

unsigned layout_copies(const struct layout *l, uint64_t array_off,
			     unsigned *members, uint64_t *member_off)
{
	unsigned shift = layout_chunk_shift(l);
	struct layout_pos pos;

	switch (l->level) {
	case 1:
		/* Every member mirrors the whole data area at the same offsets. */
		for (unsigned i = 0; i < l->nmembers; i++) {
			members[i] = i;
			member_off[i] = array_off;
		}
		return l->nmembers;
	case 10: {
		uint64_t c = array_off >> shift;

		for (unsigned k = 0; k < 2; k++) {
			uint64_t slot = raid10_slot(c, k);

			members[k] = raid10_slot_member(l, slot);
			member_off[k] = (raid10_slot_row(l, slot) << shift) +
					layout_chunk_off(l, array_off);
		}
		return 2;
	}
	default:
		layout_map(l, array_off, &pos);
		members[0] = pos.member;
		member_off[0] = pos.member_off;
		return 1;
	}
}

int layout_unmap(const struct layout *l, unsigned member, uint64_t member_off,
		       uint64_t *array_off)
{
	unsigned shift = layout_chunk_shift(l);
	uint64_t row = member_off >> shift;
	uint32_t chunk_off = layout_chunk_off(l, member_off);
	unsigned role;

	if (member >= l->nmembers || member_off >= l->member_bytes)
		return -EINVAL;
	switch (l->level) {
	case 1:
		*array_off = member_off;
		return 0;
	case 10: {
		uint64_t c = (row * l->nmembers + member) / 2;

		if (c >= l->array_bytes >> shift)
			return -ENODATA;
		*array_off = (c << shift) + chunk_off;
		return 0;
	}
	default:
		role = layout_member_role(l, row, member);
		if (role >= l->ndata)
			return -ENODATA;
		*array_off = ((row * l->ndata + role) << shift) + chunk_off;
		return 0;
	}
}
