/* SPDX-License-Identifier: MIT */
/* Helpers of the checksum suites: a member's layout and tags read from its file, events kept. */
#ifndef LIBGRAID_CSUMUTIL_H
#define LIBGRAID_CSUMUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#define CU_BLOCK 4096u

/* Where a checksummed array's bytes are, as docs/FORMAT.md places them. */
struct cu_geom {
	int level;
	unsigned n;
	uint32_t chunk;
	uint32_t bpc;          /* 4 KiB blocks per chunk */
	uint64_t data_offset;  /* from the superblock */
	uint64_t data_bytes;
	uint64_t tag_offset;   /* data_offset + data_bytes */
	uint64_t tag_bytes;    /* ceil(blocks / 512) x 4096 */
	uint64_t mblocks;      /* 4 KiB blocks of a member's data area */
	uint64_t ablocks;      /* 4 KiB blocks of the array */
	uint64_t units;        /* stripes (RAID-1/5/6: rows; RAID-10: array chunks) */
	unsigned tolerance;    /* bad blocks a unit can take and still be healed */
	uint8_t uuid[16];
};

/* Fill @p g from @p a and the superblock in @p member0 (the first member file). */
void cu_geom_read(struct cu_geom *g, struct graid_array *a, const char *member0);

/* What a member block holds: an array block (>= 0), or one of these. */
#define CU_P (-1)
#define CU_Q (-2)
#define CU_UNUSED (-3)
int64_t cu_map(const struct cu_geom *g, unsigned member, uint64_t mblock);

/*
 * The member slots that make stripe @p unit: member and first member block of each (a chunk
 * of bpc blocks); returns how many (at most GRAID_MAX_MEMBERS).
 */
unsigned cu_unit_slots(const struct cu_geom *g, uint64_t unit, unsigned *member,
		       uint64_t *mblock0);

/* Where the tag of @p mblock sits in a member: bytes from its start. */
static inline uint64_t cu_tag_pos(const struct cu_geom *g, uint64_t mblock)
{
	return g->tag_offset + (mblock / 512) * CU_BLOCK + (mblock % 512) * 8;
}

/* The tag (crc, meta) docs/FORMAT.md gives block @p mblock of @p role holding @p data. */
uint32_t cu_tag_crc(const struct cu_geom *g, unsigned role, uint64_t mblock, const uint8_t *data);

/* The checksum events one handle sent, gathered by cu_events_cb. */
struct cu_ev {
	int type, member, error;
	uint64_t block, count;
};
struct cu_events {
	pthread_mutex_t mu;
	struct cu_ev *v;
	size_t n, cap;
	uint64_t by_type[64];  /* every event, by type */
	uint64_t first_seq;    /* the first the callback saw; 0: none yet */
	uint64_t ring_max;     /* events up to this came from the ring: the callback skips them */
};
void cu_events_init(struct cu_events *e);
void cu_events_reset(struct cu_events *e);
void cu_events_free(struct cu_events *e);
/* A graid_event_fn: keeps the CSUM_* events (lost writes included), counts all. */
void cu_events_cb(void *arg, const struct graid_event *ev);
/*
 * Add the events of the handle's ring (graid_array_events() after the callback was set) that
 * the callback did not see: those sent before it was set.
 */
void cu_events_merge_ring(struct cu_events *e, const struct graid_event *v, unsigned n);
/* Whether an event of @p type with @p error covers block @p mblock of @p member. */
bool cu_events_cover(struct cu_events *e, int type, int error, unsigned member, uint64_t mblock);

/* Whether the CPU computes CRC-32C as docs/FORMAT.md says (the check value of "123456789"). */
bool cu_crc_self_check(void);

#endif
