/* SPDX-License-Identifier: MIT */
/*
 * The write-hole journal (docs/JOURNAL.md): before a RAID-5/6 stripe update touches any
 * member in place, every member it writes logs its own new bytes in its own log area, on
 * stable storage. After a crash the updates whose entries are complete on every surviving
 * member they wrote are replayed; the others never reached any member in place.
 */
#ifndef LIBGRAID_CORE_JOURNAL_H
#define LIBGRAID_CORE_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "array/array.h"

/* Every log area starts with two checkpoint records (written alternately), then entries. */
#define JOURNAL_BLOCK 4096u
#define JOURNAL_RECORDS 2u
#define JOURNAL_FIRST_ENTRY (JOURNAL_RECORDS * JOURNAL_BLOCK)

/* Entry header and checkpoint record magics: 8 ASCII bytes, no terminator. */
#define JOURNAL_ENTRY_MAGIC "GRAIDJNL"
#define JOURNAL_RECORD_MAGIC "GRAIDJCK"
#define JOURNAL_VERSION 1u
/*
 * The version of entries of a grow's old geometry written while it runs: a reader of
 * version 1 alone (which does not know `geometry`) takes them as invalid, so it never
 * replays one over the rows the grow moved. The new geometry's entries stay version 1:
 * such a reader opens the array only once the superblocks say that geometry.
 */
#define JOURNAL_VERSION_GROW 2u

/*
 * One entry's header: the first JOURNAL_BLOCK bytes of the entry, the payload (the member's
 * new bytes, `len` of them, rounded up to JOURNAL_BLOCK) follows. Little-endian.
 */
struct journal_entry_disk {
	uint8_t magic[8];          /* 0x00: JOURNAL_ENTRY_MAGIC */
	uint32_t crc;              /* 0x08: CRC32C of the JOURNAL_BLOCK bytes, this field zero */
	uint32_t version;          /* 0x0c: JOURNAL_VERSION, JOURNAL_VERSION_GROW */
	uint8_t array_uuid[16];    /* 0x10: the array's UUID */
	uint64_t seq;              /* 0x20: the stripe update's sequence number */
	uint64_t member_off;       /* 0x28: where the payload goes, bytes into the data area */
	uint32_t len;              /* 0x30: payload bytes */
	uint32_t role;             /* 0x34: the member role whose log this is */
	uint32_t payload_crc;      /* 0x38: CRC32C of the len payload bytes */
	uint32_t nparticipants;    /* 0x3c: roles the update writes (bits set below) */
	uint8_t participants[32];  /* 0x40: bit r of byte r/8: role r writes in this update */
	/*
	 * 0x60: the member count of the geometry whose rows member_off names: the array's
	 * (no reshape), or the old or the new one of a grow in progress. 0 in entries written
	 * before grows kept the journal: the array's geometry at the time. Replay skips the
	 * parts of an entry whose rows a grow may have written since (journal_replay.c).
	 */
	uint32_t geometry;
	uint32_t reserved;         /* 0x64: zero */
};

/*
 * A checkpoint record. `durable`: every update below it is on stable storage in place on
 * every member, so entries below it are void on every member (the highest value on any usable
 * member counts). `tail`: entries below it on this member are void; for a member that joined
 * the array it is the number at the join (its older entries are from an earlier life), and
 * it also says this member cannot have taken part in any update below it.
 */
struct journal_record_disk {
	uint8_t magic[8];          /* 0x00: JOURNAL_RECORD_MAGIC */
	uint32_t crc;              /* 0x08: CRC32C of the JOURNAL_BLOCK bytes, this field zero */
	uint32_t version;          /* 0x0c: JOURNAL_VERSION */
	uint8_t array_uuid[16];    /* 0x10: the array's UUID */
	uint64_t generation;       /* 0x20: higher wins between the two records */
	uint64_t tail;             /* 0x28: entries on this member with a lower seq are void */
	uint64_t durable;          /* 0x30: entries on any member with a lower seq are void */
};

/* The run-time state, private to journal.c (a->journal; its area is a->log_area). */
struct journal;

/* After replay at open: updates are numbered from @p next_seq, records from @p generation. */
void journal_restart(struct journal *j, uint64_t next_seq, uint64_t generation);

/*
 * CRC32C of a JOURNAL_BLOCK-byte header or record with its crc field (bytes 8..11) taken as
 * zero; journal_seal() stores it there.
 */
uint32_t journal_block_crc(const void *block);
void journal_seal(void *block);

/* The default log size for a chunk size. */
uint64_t journal_default_bytes(uint32_t chunk);

/*
 * Start the journal of an array whose members have log areas at [offset, offset + bytes)
 * (array.h: a->journal). Does no I/O. Returns 0, -ENOMEM, or -EINVAL for an area too small
 * for the chunk size.
 */
int journal_init(struct graid_array *a, uint64_t offset, uint64_t bytes);
void journal_free(struct graid_array *a);

/*
 * Room for roles [0, @p nmembers) of a grow (the roles it adds log like the others from its
 * start on); no I/O. 0, or -ENOMEM (the journal as it was).
 */
int journal_add_roles(struct graid_array *a, unsigned nmembers);

/* The most whole stripes one update may cover, so that its entries fit the log. */
unsigned journal_max_run(const struct graid_array *a);

/*
 * After create, open (and replay) or a member joining: void every entry on the writable
 * members by writing a checkpoint record at the next sequence number. Synchronous.
 */
int journal_reset(struct graid_array *a);
int journal_reset_member(struct graid_array *a, struct member *m);

/* One stripe update's claim on the log: a sequence number and a place on each member. */
struct journal_claim {
	uint64_t seq;
	uint64_t *pos;             /* per role: member byte offset of the entry, or 0 */
};

/*
 * Claim log space for an update writing len[r] bytes on each role r < @p nmembers with
 * len[r] > 0 (@p nmembers: the geometry's count, at most the roles journal_add_roles made).
 * @return 0 and @p c filled; -EAGAIN the log is full of updates still in flight: try again
 *   after some finish (a checkpoint is attempted first when that frees space).
 */
int journal_claim(struct graid_array *a, unsigned nmembers, const uint32_t *len,
		  struct journal_claim *c);

/* The update is finished (in place, or failed): its entries may be reclaimed later. */
void journal_done(struct graid_array *a, uint64_t seq);

/*
 * Fill the entry header for role @p role at @p hdr (JOURNAL_BLOCK bytes, aligned); the
 * payload is @p iov (its CRC is computed here). @p participants has a bit per role;
 * @p geometry the member count of the layout whose rows @p member_off names.
 */
void journal_fill_header(const struct graid_array *a, void *hdr, uint64_t seq, unsigned role,
			 uint64_t member_off, const struct iovec *iov, unsigned iovcnt,
			 const uint8_t participants[32], unsigned geometry);

/*
 * Make every finished update durable in place (flush all members) and move the tail past
 * them, so their log space can be reused. Synchronous.
 */
int journal_checkpoint(struct graid_array *a);

/* The next update's number: every update claimed so far is below it (0 without a journal). */
uint64_t journal_claimed(struct graid_array *a);

/*
 * Void every entry below @p want on every writable member, once their updates have ended:
 * what a grow's end does before the superblocks stop recording it, so that no entry of the
 * old geometry is left for any reader. One step, synchronous: 1 some of those updates are
 * still in flight (nothing done: call again after a while); 0 done (also without a
 * journal), the records written after a flush (journal_checkpoint); -EIO the array broke,
 * or a flush's -errno.
 */
int journal_void_below(struct graid_array *a, uint64_t want);


#endif /* LIBGRAID_CORE_JOURNAL_H */
