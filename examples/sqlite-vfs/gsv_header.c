/* SPDX-License-Identifier: MIT */
/* The header block at the start of the array: the database's logical size, under a magic. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "gsv.h"

#define GSV_MAGIC "GRAIDSQL"
#define GSV_VERSION 1u

/*
 * On the array, little-endian, at offset 0 of block 0; the rest of the block is zero. An
 * array whose first block is all zeroes (a new one) holds an empty database.
 */
struct gsv_header {
	uint8_t magic[8];       /* GSV_MAGIC, no terminator */
	uint32_t version;       /* GSV_VERSION; a newer one is refused */
	uint32_t data_offset;   /* bytes before the database (one array block when written) */
	uint64_t file_size;     /* the database's logical size in bytes */
	uint8_t reserved[40];   /* zero */
};
_Static_assert(sizeof(struct gsv_header) == 64, "the header is 64 bytes on the array");

static int gsv_header_blank(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int gsv_header_load(struct gsv_db *db)
{
	struct gsv_header h;
	ssize_t n = graid_array_read(db->array, db->block, db->block_size, 0);

	if (n < 0)
		return (int)n;
	if (gsv_header_blank(db->block, db->block_size)) {
		db->size = 0;
		return 0;
	}
	memcpy(&h, db->block, sizeof(h));
	if (memcmp(h.magic, GSV_MAGIC, sizeof(h.magic)) || le32toh(h.version) != GSV_VERSION ||
	    le32toh(h.data_offset) != db->data_offset || le64toh(h.file_size) > db->capacity)
		return -EINVAL;
	db->size = le64toh(h.file_size);
	return 0;
}

int gsv_header_store(struct gsv_db *db)
{
	struct gsv_header h = { .version = htole32(GSV_VERSION),
				.data_offset = htole32((uint32_t)db->data_offset),
				.file_size = htole64(db->size) };
	ssize_t n;

	memcpy(h.magic, GSV_MAGIC, sizeof(h.magic));
	memset(db->block, 0, db->block_size);
	memcpy(db->block, &h, sizeof(h));
	n = graid_array_write(db->array, db->block, db->block_size, 0);
	if (n < 0)
		return (int)n;
	db->size_dirty = 0;
	return 0;
}
