/* SPDX-License-Identifier: MIT */
/* A checksummed member's tags: the key, the CRC-32C over key and data, the 8-byte form. */
#include <endian.h>
#include <pthread.h>
#include <string.h>

#include <isa-l/crc.h>

#include "format/tag_format.h"

void tag_key(const uint8_t uuid[16], uint32_t role, uint64_t block, uint8_t key[TAG_KEY_BYTES])
{
	uint32_t r = htole32(role), zero = 0;
	uint64_t b = htole64(block);

	memcpy(key, uuid, 16);
	memcpy(key + 16, &r, 4);
	memcpy(key + 20, &zero, 4);
	memcpy(key + 24, &b, 8);
}

/*
 * ISA-L's crc32_iscsi(buf, len, init) runs the reflected Castagnoli register from init and
 * returns it as it stands: no inversion on either side. Standard CRC-32C (the iSCSI one,
 * "123456789" -> 0xE3069283) is therefore crc32_iscsi(buf, len, 0xFFFFFFFF) ^ 0xFFFFFFFF,
 * and a register passed back as init continues over the next piece. Its buffer parameter is
 * not const, but the buffer is only read.
 */
uint32_t tag_crc_feed(uint32_t reg, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		reg = crc32_iscsi((unsigned char *)p, n, reg);
		p += n;
		len -= (size_t)n;
	}
	return reg;
}

uint32_t tag_crc_begin(const uint8_t uuid[16], uint32_t role, uint64_t block)
{
	uint8_t key[TAG_KEY_BYTES];

	tag_key(uuid, role, block, key);
	return tag_crc_feed(0xFFFFFFFFu, key, sizeof(key));
}

uint32_t tag_crc_prefix(const uint8_t uuid[16], uint32_t role)
{
	uint8_t key[TAG_KEY_BYTES];

	tag_key(uuid, role, 0, key);
	return tag_crc_feed(0xFFFFFFFFu, key, TAG_KEY_BYTES - sizeof(uint64_t));
}

/*
 * Slice-by-8 tables of the reflected Castagnoli CRC: row 0 is the byte-at-a-time table, row
 * k advances a byte's contribution by k more zero bytes. Eight bytes are one step of eight
 * independent lookups: for the key's last 8 bytes this is a few nanoseconds, where ISA-L's
 * entry and set-up for so short a buffer cost several times that.
 */
static uint32_t tag_crc_tab[8][256];
static pthread_once_t tag_crc_tab_once = PTHREAD_ONCE_INIT;

static void tag_crc_tab_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (unsigned k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ 0x82F63B78u : c >> 1;
		tag_crc_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (unsigned k = 1; k < 8; k++)
			tag_crc_tab[k][i] = tag_crc_tab[k - 1][i] >> 8 ^
					    tag_crc_tab[0][tag_crc_tab[k - 1][i] & 0xFF];
}

uint32_t tag_crc_begin_at(uint32_t prefix, uint64_t block)
{
	/* The key stores the block little-endian: its bytes in order are x's, low first. */
	const uint64_t x = block ^ prefix;

	pthread_once(&tag_crc_tab_once, tag_crc_tab_init);
	return tag_crc_tab[7][x & 0xFF] ^ tag_crc_tab[6][x >> 8 & 0xFF] ^
	       tag_crc_tab[5][x >> 16 & 0xFF] ^ tag_crc_tab[4][x >> 24 & 0xFF] ^
	       tag_crc_tab[3][x >> 32 & 0xFF] ^ tag_crc_tab[2][x >> 40 & 0xFF] ^
	       tag_crc_tab[1][x >> 48 & 0xFF] ^ tag_crc_tab[0][x >> 56];
}

uint32_t tag_crc_end(uint32_t reg)
{
	return reg ^ 0xFFFFFFFFu;
}

uint32_t tag_crc(const uint8_t uuid[16], uint32_t role, uint64_t block, const void *data)
{
	return tag_crc_end(tag_crc_feed(tag_crc_begin(uuid, role, block), data, TAG_DATA_BLOCK));
}

uint64_t tag_area_bytes(uint64_t data_bytes)
{
	uint64_t blocks = data_bytes / TAG_DATA_BLOCK + (data_bytes % TAG_DATA_BLOCK != 0);

	return (blocks + TAGS_PER_BLOCK - 1) / TAGS_PER_BLOCK * TAG_BLOCK_BYTES;
}

/* Extended Euclid over the prime: small numbers, no overflow in int64_t. */
uint32_t tag_gen_inverse(uint32_t x)
{
	int64_t r0 = TAG_GEN_PRIME, r1 = x % TAG_GEN_PRIME, t0 = 0, t1 = 1;

	if (r1 == 0)
		return 0;
	while (r1) {
		int64_t q = r0 / r1, r = r0 - q * r1, t = t0 - q * t1;

		r0 = r1;
		r1 = r;
		t0 = t1;
		t1 = t;
	}
	return (uint32_t)(t0 < 0 ? t0 + TAG_GEN_PRIME : t0);
}

struct tag_rec_where tag_rec_locate(struct tag_rec rec, const uint32_t *g, unsigned k)
{
	const struct tag_rec have = tag_rec_make(g, k);
	struct tag_rec_where w = { .verdict = TAG_REC_UNLOCATED };
	uint32_t jj;

	w.ds = (rec.s % TAG_GEN_PRIME + TAG_GEN_PRIME - have.s) % TAG_GEN_PRIME;
	w.dw = (rec.w % TAG_GEN_PRIME + TAG_GEN_PRIME - have.w) % TAG_GEN_PRIME;
	if (w.ds == 0) {
		if (w.dw == 0)
			w.verdict = TAG_REC_CONSISTENT;
		return w;
	}
	if (w.ds > TAG_GEN_PRIME / 2) {
		w.verdict = TAG_REC_PARITY_STALE;
		w.delta = TAG_GEN_PRIME - w.ds;
		return w;
	}
	/* One block j behind by delta: dS = delta, dW = (j + 1) delta. */
	jj = (uint32_t)((uint64_t)w.dw * tag_gen_inverse(w.ds) % TAG_GEN_PRIME);
	if (jj >= 1 && jj <= k) {
		w.verdict = TAG_REC_DATA_BEHIND;
		w.j = jj - 1;
		w.delta = w.ds;
	}
	return w;
}
