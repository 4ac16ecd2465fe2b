/* SPDX-License-Identifier: MIT */
/*
 * The device follows the array's size: a grow (graid_array_grow(), the control endpoint's
 * `grow`) ends with a larger array, and /dev/ublkbN must offer it for the filesystem on it
 * to grow (resize2fs). UPDATE_SIZE (Linux 6.16+) does that live; an older driver keeps the
 * size the device was started with until the server starts again.
 */
#include <inttypes.h>
#include <stdio.h>

#include "ublk_srv.h"

void gu_resize(struct uctrl *c, struct usrv *s)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t sectors;
	int rc;

	/*
	 * The array's size, not a reshape-done event's count: a grow whose last superblock
	 * round failed keeps the old size (graid_array_info()), and the device must never
	 * offer more than the array serves.
	 */
	if (graid_array_info(s->array, &info))
		return;
	sectors = info.size >> 9;
	/* Arrays only grow; a device larger than its array cannot happen, and is left alone. */
	if (sectors <= s->dev_sectors)
		return;
	if (!(c->features & UBLK_F_UPDATE_SIZE)) {
		if (!s->resize_told)
			fprintf(stderr,
				"graid-ublk: the array grew to %" PRIu64 " bytes, but this "
				"kernel cannot resize a ublk device (UBLK_F_UPDATE_SIZE, "
				"Linux 6.16+): /dev/ublkb%" PRIu32 " keeps its %" PRIu64
				" bytes until graid-ublk is restarted\n",
				info.size, s->dev_id, s->dev_sectors << 9);
		s->resize_told = true;
		return;
	}
	rc = uctrl_update_size(c, s->dev_id, sectors);
	if (rc) {
		/* Served as it was: the next grow's end (or a restart) tries again. */
		fprintf(stderr,
			"graid-ublk: UPDATE_SIZE to %" PRIu64 " bytes: %s; /dev/ublkb%" PRIu32
			" keeps its %" PRIu64 " bytes\n",
			info.size, graid_strerror(rc), s->dev_id, s->dev_sectors << 9);
		return;
	}
	fprintf(stderr,
		"graid-ublk: /dev/ublkb%" PRIu32 " resized from %" PRIu64 " to %" PRIu64
		" bytes (the array grew; grow its filesystem, e.g. resize2fs)\n",
		s->dev_id, s->dev_sectors << 9, sectors << 9);
	s->dev_sectors = sectors;
}
