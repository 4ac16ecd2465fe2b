/* SPDX-License-Identifier: MIT */
/* Encode and decode one copy of a member's bad-block log (docs/FORMAT.md, "The bad-block log"). */
#include <endian.h>
#include <stddef.h>
#include <string.h>

#include "format/bbl_format.h"
#include "format/superblock.h"

_Static_assert(sizeof(struct bbl_disk) == BBL_COPY_BYTES, "one copy is 4096 bytes");
_Static_assert(offsetof(struct bbl_disk, seq) == 0x010, "seq at 0x010");
_Static_assert(offsetof(struct bbl_disk, member_uuid) == 0x018, "member_uuid at 0x018");
_Static_assert(offsetof(struct bbl_disk, range) == 0x040, "ranges at 0x040");
_Static_assert(sizeof(struct bbl_disk_range) == 16, "a range is 16 bytes");
_Static_assert(sizeof(BBL_MAGIC) - 1 == 8, "8-byte magic");

/* Units past this would overflow a byte offset: no device is that large. */
#define BBL_UNIT_LIMIT (1ull << 52)

static uint32_t bbl_checksum(const struct bbl_disk *d)
{
	struct bbl_disk tmp;

	memcpy(&tmp, d, sizeof(tmp));
	tmp.crc = 0;
	return crc32c(&tmp, sizeof(tmp));
}

void bbl_encode(const struct bbl_image *img, void *buf)
{
	struct bbl_disk d;

	memset(&d, 0, sizeof(d));
	memcpy(d.magic, BBL_MAGIC, sizeof(d.magic));
	d.count = htole32(img->n);
	d.seq = htole64(img->seq);
	memcpy(d.member_uuid, img->member_uuid, sizeof(d.member_uuid));
	for (unsigned i = 0; i < img->n && i < BBL_MAX_RANGES; i++) {
		d.range[i].start = htole64(img->r[i].start);
		d.range[i].count = htole32(img->r[i].count);
		d.range[i].flags = htole32(img->r[i].flags);
	}
	d.crc = htole32(bbl_checksum(&d));
	memcpy(buf, &d, sizeof(d));
}

bool bbl_decode(const void *buf, struct bbl_image *img)
{
	struct bbl_disk d;
	struct bbl_image out;
	uint64_t end = 0;

	memcpy(&d, buf, sizeof(d));
	if (memcmp(d.magic, BBL_MAGIC, sizeof(d.magic)) || le32toh(d.crc) != bbl_checksum(&d))
		return false;
	memset(&out, 0, sizeof(out));
	out.n = le32toh(d.count);
	out.seq = le64toh(d.seq);
	if (out.n > BBL_MAX_RANGES || out.seq == 0)
		return false;
	memcpy(out.member_uuid, d.member_uuid, sizeof(out.member_uuid));
	for (unsigned i = 0; i < out.n; i++) {
		struct bbl_range *r = &out.r[i];

		r->start = le64toh(d.range[i].start);
		r->count = le32toh(d.range[i].count);
		r->flags = le32toh(d.range[i].flags);
		/* Sorted and disjoint, as every writer keeps them: anything else is not a log. */
		if (r->count == 0 || r->start < end || r->start >= BBL_UNIT_LIMIT ||
		    r->count > BBL_UNIT_LIMIT - r->start)
			return false;
		end = r->start + r->count;
	}
	memcpy(img, &out, sizeof(out));
	return true;
}
