/* SPDX-License-Identifier: MIT */
/* The failed I/Os a role's I/O-error health rule counts: one per bad area, not per retry. */
#include "member/member_ioerr.h"

/*
 * Whether area @p k of @p r was counted for an I/O of this kind within the window and
 * overlaps [off, end). Its fields are read one by one: a slot rewritten meanwhile may pair
 * one failure's range with another's time, which costs at most one failure counted more or
 * less (the rule's counts are relaxed anyway).
 */
static bool ioerr_area_seen(struct member_role *r, unsigned k, bool write, uint64_t off,
			    uint64_t end, uint64_t now_ns)
{
	uint64_t at = atomic_load_explicit(&r->io_err_area[k].ns, memory_order_relaxed);
	uint64_t a_off = atomic_load_explicit(&r->io_err_area[k].off, memory_order_relaxed);
	uint64_t a_end = atomic_load_explicit(&r->io_err_area[k].end, memory_order_relaxed);

	if (!at || now_ns - at > IOERR_AREA_WINDOW_NS || (a_off & 1) != (uint64_t)write)
		return false;
	a_off &= ~(uint64_t)1;
	return off < a_end && a_off < end;
}

bool member_ioerr_note(struct member_role *r, bool write, uint64_t off, uint64_t len,
		       uint64_t now_ns)
{
	/* A zero-length failure (a flush) still names its byte. */
	uint64_t end = off + (len ? len : 1);
	unsigned slot, k;

	for (k = 0; k < IOERR_AREAS; k++)
		if (ioerr_area_seen(r, k, write, off, end, now_ns))
			return false;
	k = atomic_fetch_add_explicit(&r->io_err_area_next, 1, memory_order_relaxed) %
	    IOERR_AREAS;
	/* The kind rides in bit 0 of the start: data-area offsets are sector-aligned. */
	atomic_store_explicit(&r->io_err_area[k].off, (off & ~(uint64_t)1) | write,
			      memory_order_relaxed);
	atomic_store_explicit(&r->io_err_area[k].end, end, memory_order_relaxed);
	atomic_store_explicit(&r->io_err_area[k].ns, now_ns, memory_order_relaxed);
	slot = atomic_fetch_add_explicit(&r->io_err_next, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->io_err_row[write], 1, memory_order_relaxed);
	atomic_store_explicit(&r->io_err_ns[slot % IOERR_RING], now_ns, memory_order_relaxed);
	return true;
}
