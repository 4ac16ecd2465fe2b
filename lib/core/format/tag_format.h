/* SPDX-License-Identifier: MIT */
/* A checksummed member's tags on disk (docs/FORMAT.md, "Checksums"): key, CRC, 8-byte form. */
#ifndef LIBGRAID_CORE_TAG_FORMAT_H
#define LIBGRAID_CORE_TAG_FORMAT_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define TAG_DATA_BLOCK 4096u  /* the data a tag covers */
#define TAG_BLOCK_BYTES 4096u /* one block of the tag area */
#define TAG_BYTES 8u          /* one tag on disk */
#define TAGS_PER_BLOCK (TAG_BLOCK_BYTES / TAG_BYTES)
#define TAG_KEY_BYTES 32u     /* what the CRC covers before the data */
#define TAG_META_VALID 0x80000000u /* meta bit 31: the tag is present */

/*
 * A tag in host form: the 8 bytes read as one little-endian 64-bit number, so bits 0-31 are
 * the CRC and bits 32-63 the meta word. 0 is an absent tag.
 */
typedef uint64_t tag_t;

/* The 32-byte key of block @p block of @p role's data area in the array @p uuid. */
void tag_key(const uint8_t uuid[16], uint32_t role, uint64_t block, uint8_t key[TAG_KEY_BYTES]);

/*
 * The CRC-32C a tag holds for one 4096-byte block given in pieces: start with
 * tag_crc_begin(), feed the data (4096 bytes in all) with tag_crc_feed(), end with
 * tag_crc_end().
 */
uint32_t tag_crc_begin(const uint8_t uuid[16], uint32_t role, uint64_t block);
uint32_t tag_crc_feed(uint32_t reg, const void *buf, size_t len);
uint32_t tag_crc_end(uint32_t reg);

/*
 * tag_crc_begin() in two steps, for many blocks of one role: tag_crc_prefix() is the
 * register after the key's first 24 bytes (uuid, role, zero), the same for every block of the
 * role; tag_crc_begin_at() continues it over the 8-byte block number without a call into
 * ISA-L. tag_crc_begin_at(tag_crc_prefix(u, r), b) == tag_crc_begin(u, r, b).
 */
uint32_t tag_crc_prefix(const uint8_t uuid[16], uint32_t role);
uint32_t tag_crc_begin_at(uint32_t prefix, uint64_t block);

/* The CRC of one whole block of 4096 bytes at @p data. */
uint32_t tag_crc(const uint8_t uuid[16], uint32_t role, uint64_t block, const void *data);

/* A present tag (VALID set, generation 0) carrying @p crc. */
static inline tag_t tag_make(uint32_t crc)
{
	return (uint64_t)TAG_META_VALID << 32 | crc;
}

static inline bool tag_valid(tag_t t)
{
	return (uint32_t)(t >> 32) & TAG_META_VALID;
}

static inline uint32_t tag_crc_of(tag_t t)
{
	return (uint32_t)t;
}

/* Whether @p t accepts data whose CRC is @p crc: absent tags accept anything. */
static inline bool tag_holds(tag_t t, uint32_t crc)
{
	return !tag_valid(t) || tag_crc_of(t) == crc;
}

/*
 * The 8 bytes of a tag on disk, and back (any alignment). Inline: a read's verify decodes
 * one tag, and a call around one load is most of its cost.
 */
static inline void tag_encode(tag_t t, void *out)
{
	uint64_t le = htole64(t);

	memcpy(out, &le, sizeof(le));
}

static inline tag_t tag_decode(const void *in)
{
	uint64_t le;

	memcpy(&le, in, sizeof(le));
	return le64toh(le);
}

/*
 * The tag area a data area of @p data_bytes needs: one 4096-byte tag block per 512 data
 * blocks, rounded up. 0 for 0.
 */
uint64_t tag_area_bytes(uint64_t data_bytes);

/* Where data-area block @p block's tag is: its tag block, and the byte in it. */
static inline uint64_t tag_block_index(uint64_t block)
{
	return block / TAGS_PER_BLOCK;
}

static inline unsigned tag_slot(uint64_t block)
{
	return (unsigned)(block % TAGS_PER_BLOCK);
}

/* A walk over an iovec, one 4096-byte block at a time, whatever its pieces' lengths. */
struct tag_iov_cursor {
	const struct iovec *iov;
	unsigned cnt, i;
	size_t at;
};

/* @p reg (from tag_crc_begin_at()) fed the next 4096 bytes under @p c, and ended. */
static inline uint32_t tag_iov_crc(struct tag_iov_cursor *c, uint32_t reg)
{
	size_t need = TAG_DATA_BLOCK;

	while (need && c->i < c->cnt) {
		size_t avail = c->iov[c->i].iov_len - c->at;
		size_t n = avail < need ? avail : need;

		reg = tag_crc_feed(reg, (const uint8_t *)c->iov[c->i].iov_base + c->at, n);
		c->at += n;
		need -= n;
		if (c->at == c->iov[c->i].iov_len) {
			c->i++;
			c->at = 0;
		}
	}
	return tag_crc_end(reg);
}

#endif /* LIBGRAID_CORE_TAG_FORMAT_H */
