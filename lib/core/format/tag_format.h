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
 * Generations (docs/FORMAT.md, "Generations"; docs/INTEGRITY.md, "Lost writes").
 * A data block's tag (every block of RAID-1/10) keeps in meta bits 0-30 the block's write
 * generation g in [0, G); a RAID-5/6 parity block's tag keeps there a record of its column's
 * data generations (struct tag_rec). An absent tag counts as generation 0 and record (0, 0),
 * so the all-zero meta words of format 1.5 are consistent everywhere.
 */
#define TAG_GEN_PRIME 32749u                      /* the record's modulus, a prime */
#define TAG_GEN_MOD (TAG_GEN_PRIME * 65536u)      /* G = 2,146,238,464, below 2^31 */
#define TAG_META_BITS 0x7fffffffu                 /* meta bits 0-30: generation or record */
#define TAG_REC_BITS 15u                          /* S in bits 0-14, W in bits 15-29 */
#define TAG_REC_MASK ((1u << TAG_REC_BITS) - 1u)

/* The meta word of @p t (bit 31 VALID, bits 0-30 generation or record). */
static inline uint32_t tag_meta(tag_t t)
{
	return (uint32_t)(t >> 32);
}

/*
 * A present tag carrying @p crc and @p meta's bits 0-30 (bit 31 of @p meta is ignored: the
 * result is always VALID). tag_make_meta(crc, 0) == tag_make(crc).
 */
static inline tag_t tag_make_meta(uint32_t crc, uint32_t meta)
{
	return (uint64_t)(TAG_META_VALID | (meta & TAG_META_BITS)) << 32 | crc;
}

/*
 * The meta bits 0-30 of @p t, what a write leaves there and a reader compares: 0 for an
 * absent tag, whatever it holds (absent = generation 0, record (0, 0)).
 */
static inline uint32_t tag_meta_bits(tag_t t)
{
	return tag_valid(t) ? tag_meta(t) & TAG_META_BITS : 0;
}

/*
 * The generation of a data block whose tag is @p t, in [0, G): 0 when absent. A value of
 * G or above on disk (no writer makes one) is taken modulo G, so every function below gets
 * a generation in range.
 */
static inline uint32_t tag_gen(tag_t t)
{
	return tag_meta_bits(t) % TAG_GEN_MOD;
}

/* The generation a write of a block that has generation @p g gives it: (g + 1) mod G. */
static inline uint32_t tag_gen_next(uint32_t g)
{
	return (g % TAG_GEN_MOD + 1u) % TAG_GEN_MOD;
}

/*
 * Serial comparison (RFC 1982) of generations: by how many writes @p a is ahead of @p b,
 * d = (a - b) mod G when 0 < d < G / 2, else 0 (equal, behind, or exactly half way round,
 * which is neither). tag_gen_ahead(b, a) is how far @p a is behind @p b.
 */
static inline uint32_t tag_gen_ahead(uint32_t a, uint32_t b)
{
	uint32_t x = a % TAG_GEN_MOD, y = b % TAG_GEN_MOD;
	uint32_t d = x >= y ? x - y : x + (TAG_GEN_MOD - y);

	return d < TAG_GEN_MOD / 2u ? d : 0;
}

/* The residue of @p g that RAID-5/6 records count: g mod 32749. */
static inline uint32_t tag_gen_res(uint32_t g)
{
	return g % TAG_GEN_PRIME;
}

/*
 * A RAID-5/6 parity block's record of its 4 KiB column's data generations g_i, i the data
 * index 0 .. k - 1 of the row's chunks in the layout's order: S = sum g_i and W = sum (i + 1)
 * g_i, both mod 32749. P and Q carry the same record. {0, 0} is the record of an all-zero
 * (or all-absent) column.
 */
struct tag_rec {
	uint32_t s; /* sum of g_i, mod 32749 */
	uint32_t w; /* sum of (i + 1) g_i, mod 32749 */
};

/* The record's meta bits: S in 0-14, W in 15-29, bit 30 zero. */
static inline uint32_t tag_rec_encode(struct tag_rec r)
{
	return (r.s % TAG_GEN_PRIME) | (r.w % TAG_GEN_PRIME) << TAG_REC_BITS;
}

/*
 * The record a parity block's tag @p t carries: {0, 0} when absent. A 15-bit field at
 * 32749 or above (no writer makes one) is taken modulo 32749; bit 30 is ignored.
 */
static inline struct tag_rec tag_rec_of_tag(tag_t t)
{
	uint32_t m = tag_meta_bits(t);

	return (struct tag_rec){ .s = (m & TAG_REC_MASK) % TAG_GEN_PRIME,
				 .w = (m >> TAG_REC_BITS & TAG_REC_MASK) % TAG_GEN_PRIME };
}

/* @p r with data block @p i's generation @p g counted in (a write of it: its new g). */
static inline void tag_rec_add(struct tag_rec *r, unsigned i, uint32_t g)
{
	uint32_t x = tag_gen_res(g);

	r->s = (r->s + x) % TAG_GEN_PRIME;
	r->w = (uint32_t)((r->w + (uint64_t)(i + 1u) % TAG_GEN_PRIME * x) % TAG_GEN_PRIME);
}

/* @p r with data block @p i's generation @p g taken out (its old g, before a write). */
static inline void tag_rec_sub(struct tag_rec *r, unsigned i, uint32_t g)
{
	uint32_t x = tag_gen_res(g);

	tag_rec_add(r, i, x ? TAG_GEN_PRIME - x : 0);
}

/* The record of a column whose @p k data blocks have generations @p g[0 .. k - 1]. */
static inline struct tag_rec tag_rec_make(const uint32_t *g, unsigned k)
{
	struct tag_rec r = { 0, 0 };

	for (unsigned i = 0; i < k; i++)
		tag_rec_add(&r, i, g[i]);
	return r;
}

static inline bool tag_rec_eq(struct tag_rec a, struct tag_rec b)
{
	return a.s % TAG_GEN_PRIME == b.s % TAG_GEN_PRIME &&
	       a.w % TAG_GEN_PRIME == b.w % TAG_GEN_PRIME;
}

/* What tag_rec_locate() makes of a record against its column's data generations. */
enum tag_rec_verdict {
	TAG_REC_CONSISTENT = 0, /* the record is the data's: nothing lost (as far as it shows) */
	TAG_REC_DATA_BEHIND,    /* data block j is behind the record by delta writes */
	TAG_REC_PARITY_STALE,   /* the data is ahead of the record: the parity missed writes */
	TAG_REC_UNLOCATED,      /* they differ and no single data block explains it */
};

struct tag_rec_where {
	enum tag_rec_verdict verdict;
	unsigned j;     /* TAG_REC_DATA_BEHIND: the stale block's data index, < k */
	uint32_t delta; /* DATA_BEHIND: writes it missed; PARITY_STALE: by how many S is behind */
	uint32_t ds;    /* dS = (S - sum g_i) mod 32749, for the log */
	uint32_t dw;    /* dW = (W - sum (i + 1) g_i) mod 32749, for the log */
};

/*
 * Compare the record @p rec (from P's or Q's tag) with the @p k data generations @p g (the
 * data tags' tag_gen(), absent = 0), 1 <= k < 32749. dS = (S - sum g_i) mod 32749 read as
 * serial: 1 .. 16374 the data is behind by dS, 16375 .. 32748 ahead (negative).
 * - dS = 0 and dW = 0: TAG_REC_CONSISTENT.
 * - dS behind, and j + 1 = dW / dS (mod 32749) in 1 .. k: TAG_REC_DATA_BEHIND, j and delta =
 *   dS. A single block behind by delta writes gives exactly this; two blocks behind can
 *   also look like one (RAID-5 heals only delta = 1; RAID-6 checks the rebuild against Q).
 * - dS ahead: TAG_REC_PARITY_STALE, delta = 32749 - dS.
 * - anything else (dS = 0 with dW != 0, or j out of range): TAG_REC_UNLOCATED.
 * Pure; no errors.
 */
struct tag_rec_where tag_rec_locate(struct tag_rec rec, const uint32_t *g, unsigned k);

/* The inverse of @p x modulo 32749 (1 <= x % 32749): x * inv = 1 mod 32749; 0 for x % 32749 = 0. */
uint32_t tag_gen_inverse(uint32_t x);

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
