/* SPDX-License-Identifier: MIT */
/* Byte ranges of the database over an array that reads and writes whole blocks only. */
#include <string.h>

#include "gsv.h"

/* Offsets here are the database's; the header block in front is added on the way down. */

int gsv_bytes_read(struct gsv_db *db, void *buf, size_t len, uint64_t off)
{
	const uint32_t bs = db->block_size;
	uint8_t *p = buf;

	off += db->data_offset;
	while (len) {
		uint64_t in = off % bs;
		size_t n;
		ssize_t rc;

		if (!in && len >= bs) {
			/* Whole blocks go straight into the caller's buffer. */
			n = len - len % bs;
			rc = graid_array_read(db->array, p, n, off);
		} else {
			n = bs - in < len ? bs - in : len;
			rc = graid_array_read(db->array, db->block, bs, off - in);
			if (rc >= 0)
				memcpy(p, db->block + in, n);
		}
		if (rc < 0)
			return (int)rc;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int gsv_bytes_write(struct gsv_db *db, const void *buf, size_t len, uint64_t off)
{
	const uint32_t bs = db->block_size;
	const uint8_t *p = buf;

	off += db->data_offset;
	while (len) {
		uint64_t in = off % bs;
		size_t n;
		ssize_t rc;

		if (!in && len >= bs) {
			n = len - len % bs;
			rc = graid_array_write(db->array, p, n, off);
		} else {
			/*
			 * A partial block: read it, patch it, write it back. Writers are
			 * serialised by SQLite's EXCLUSIVE lock and by db->lock, so nothing
			 * lands in this block between the read and the write.
			 */
			n = bs - in < len ? bs - in : len;
			rc = graid_array_read(db->array, db->block, bs, off - in);
			if (rc >= 0) {
				memcpy(db->block + in, p, n);
				rc = graid_array_write(db->array, db->block, bs, off - in);
			}
		}
		if (rc < 0)
			return (int)rc;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* The whole array blocks of database bytes [off, off + len): [*a0, *a1) array offsets. */
static void gsv_bytes_inner(const struct gsv_db *db, uint64_t off, uint64_t len, uint64_t *a0,
			    uint64_t *a1)
{
	uint64_t bs = db->block_size, s = db->data_offset + off, e = s + len;

	*a0 = (s + bs - 1) / bs * bs;
	*a1 = e / bs * bs;
	if (*a1 < *a0)
		*a1 = *a0;
}

int gsv_bytes_discard(struct gsv_db *db, uint64_t off, uint64_t len)
{
	uint64_t a0, a1;

	gsv_bytes_inner(db, off, len, &a0, &a1);
	return a1 > a0 ? graid_array_discard(db->array, a0, a1 - a0) : 0;
}

int gsv_bytes_zero(struct gsv_db *db, uint64_t off, uint64_t len)
{
	/* A file that grows past a gap reads zeroes there, as on a file system. */
	static const uint8_t zeroes[64 * 1024];
	uint64_t a0, a1;

	/* Whole blocks: the array writes (or deallocates) the zeroes; the edges below. */
	gsv_bytes_inner(db, off, len, &a0, &a1);
	if (a1 - a0 >= sizeof(zeroes)) {
		uint64_t head = a0 - db->data_offset - off;
		int rc = graid_array_write_zeroes(db->array, a0, a1 - a0);

		if (rc == 0 && head)
			rc = gsv_bytes_zero(db, off, head);
		if (rc == 0 && a1 < db->data_offset + off + len)
			rc = gsv_bytes_zero(db, a1 - db->data_offset,
					    db->data_offset + off + len - a1);
		return rc;
	}
	while (len) {
		size_t n = len < sizeof(zeroes) ? (size_t)len : sizeof(zeroes);
		int rc = gsv_bytes_write(db, zeroes, n, off);

		if (rc)
			return rc;
		off += n;
		len -= n;
	}
	return 0;
}
