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

int gsv_bytes_zero(struct gsv_db *db, uint64_t off, uint64_t len)
{
	/* A file that grows past a gap reads zeroes there, as on a file system. */
	static const uint8_t zeroes[64 * 1024];

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
