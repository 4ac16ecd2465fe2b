/* SPDX-License-Identifier: MIT */
/* A role's checksum mismatches found by reads and not yet settled by a repair or a give-up. */
#ifndef LIBGRAID_CORE_CSUM_PEND_H
#define LIBGRAID_CORE_CSUM_PEND_H

#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"

struct iovec;

/* One mismatch taken out of the table. */
struct csum_pend_entry {
	uint64_t block;     /* 4 KiB block number in the role's data area */
	uint32_t fp;        /* CRC-32C of the bytes the member returned */
	/*
	 * Its CRC held but its generation was behind the one recorded elsewhere (a lost write,
	 * csum_pend_add_lost()): settled as csum_report_lost_write(), and not counted in
	 * csum_errors when found (that report counts it).
	 */
	bool lost;
};

/*
 * Block @p block of @p p failed its tag with bytes whose CRC-32C is @p fp. True when it was
 * not pending already (a new mismatch, to be counted); a block found again (a job narrowing
 * its read) takes the newer bytes. Full: the oldest entry is dropped (its repair then sends
 * no event).
 */
bool csum_pend_add(struct csum_pend *p, uint64_t block, uint32_t fp);

/* csum_pend_add() of a lost write (its entry's @c lost set): the same answer. */
bool csum_pend_add_lost(struct csum_pend *p, uint64_t block, uint32_t fp);

/*
 * Take out every entry whose block lies in [off, off + len) (data-area bytes), at most
 * @p max into @p out. Returns how many were taken. Cheap when nothing is pending.
 */
unsigned csum_pend_take(struct csum_pend *p, uint64_t off, uint64_t len,
			struct csum_pend_entry *out, unsigned max);

/* CRC-32C of the 4 KiB block at byte @p at of the transfer @p iov (its fingerprint here). */
uint32_t csum_pend_fp(const struct iovec *iov, unsigned iovcnt, uint64_t at);

#endif
