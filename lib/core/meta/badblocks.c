/* SPDX-License-Identifier: MIT */
/*
 * Each role's bad-block log: ranges of 4 KiB units in memory, written to two alternating
 * copies on the role's own device (docs/FORMAT.md, "The bad-block log"). Adding a range is
 * durable before the caller goes on; clearing one is lazy, since a record too many only
 * costs reads of a block that holds data again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/events.h"

int badblocks_init(struct graid_array *a, uint64_t offset, uint64_t bytes)
{
	a->bbl_area.offset = a->bbl_area.bytes = 0;
	if (bytes == 0)
		return 0;
	if (bytes < BBL_AREA_BYTES)
		return -EPROTO;
	/* Room for the roles a grow may add (member_cap): theirs start empty. */
	a->bbl = calloc(a->member_cap, sizeof(*a->bbl));
	if (!a->bbl)
		return -ENOMEM;
	for (unsigned r = 0; r < a->member_cap; r++)
		pthread_mutex_init(&a->bbl[r].lock, NULL);
	a->bbl_area.offset = offset;
	a->bbl_area.bytes = bytes;
	return 0;
}

void badblocks_free(struct graid_array *a)
{
	if (!a->bbl)
		return;
	for (unsigned r = 0; r < a->member_cap; r++)
		pthread_mutex_destroy(&a->bbl[r].lock);
	free(a->bbl);
	a->bbl = NULL;
}

/* Write the next copy of @p b to @p m (the slot its new sequence number names). Lock held. */
static int bbl_write(struct graid_array *a, struct member *m, struct badblocks *b)
{
	void *buf;
	int rc;

	if (m->dev.fd < 0)
		return -ENODEV;
	if (posix_memalign(&buf, ARRAY_ALIGN, BBL_COPY_BYTES))
		return -ENOMEM;
	b->img.seq++;
	bbl_encode(&b->img, buf);
	rc = member_write_durable(m, buf, BBL_COPY_BYTES,
				  a->bbl_area.offset + (b->img.seq & 1) * BBL_COPY_BYTES);
	free(buf);
	if (rc == 0)
		b->dirty = false;
	return rc;
}

int badblocks_load(struct graid_array *a, unsigned role)
{
	struct member *m = &a->members[role];
	struct badblocks *b;
	struct bbl_image *copy;
	uint8_t *buf;
	bool any_valid = false;
	int rc;

	if (!a->bbl || m->dev.fd < 0)
		return 0;
	b = &a->bbl[role];
	copy = malloc(2 * sizeof(*copy));
	if (!copy || posix_memalign((void **)&buf, ARRAY_ALIGN, BBL_AREA_BYTES)) {
		free(copy);
		return -ENOMEM;
	}
	rc = member_pio(m, buf, BBL_AREA_BYTES, a->bbl_area.offset, false);
	pthread_mutex_lock(&b->lock);
	memset(&b->img, 0, sizeof(b->img));
	memcpy(b->img.member_uuid, m->dev.uuid, 16);
	for (unsigned k = 0; rc == 0 && k < 2; k++) {
		const uint8_t *p = buf + k * BBL_COPY_BYTES;

		/*
		 * Zeroes: never written (a member that was out when an older array got its log,
		 * whose reserved area is zero as FORMAT.md asks). Anything else must decode.
		 */
		if (p[0] == 0 && !memcmp(p, p + 1, BBL_COPY_BYTES - 1)) {
			any_valid = true;
			continue;
		}
		if (!bbl_decode(p, &copy[k]))
			continue;
		any_valid = true;
		/* Another device's log (a role given a new device that never wrote its own). */
		if (memcmp(copy[k].member_uuid, m->dev.uuid, 16) || copy[k].seq <= b->img.seq)
			continue;
		b->img = copy[k];
	}
	if (rc == 0 && !any_valid)
		rc = -EBADMSG;
	atomic_store(&b->n, b->img.n);
	pthread_mutex_unlock(&b->lock);
	free(buf);
	free(copy);
	if (rc == 0 && b->img.n)
		graid__log(GRAID_LOG_WARNING, "member %u (%s): %llu bad 4 KiB blocks recorded "
					      "(graidctl status lists them)", role, m->dev.path,
			   (unsigned long long)badblocks_units(a, role));
	return rc;
}

int badblocks_reset(struct graid_array *a, unsigned role)
{
	struct member *m = &a->members[role];
	struct badblocks *b;
	int rc = 0;

	if (!a->bbl)
		return 0;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	b->img.n = 0;
	atomic_store(&b->n, 0);
	memcpy(b->img.member_uuid, m->dev.uuid, 16);
	/* Both copies: nothing of an earlier life on this device may ever be read back. */
	for (unsigned k = 0; rc == 0 && k < 2; k++)
		rc = bbl_write(a, m, b);
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/* Insert [start, end) with @p flags, merging what it overlaps or meets with the same flags. */
static bool bbl_insert(struct bbl_image *img, uint64_t start, uint64_t end, unsigned flags)
{
	struct bbl_range out[BBL_MAX_RANGES + 1];
	unsigned n = 0;
	bool placed = false;

	for (unsigned i = 0; i < img->n; i++) {
		const struct bbl_range *r = &img->r[i];
		uint64_t rend = r->start + r->count;

		if (rend < start || (rend == start && r->flags != flags)) {
			out[n++] = *r;
		} else if (r->start > end || (r->start == end && r->flags != flags)) {
			if (!placed) {
				if (n == BBL_MAX_RANGES + 1)
					return false;
				out[n++] = (struct bbl_range){ .start = start,
							       .count = (uint32_t)(end - start),
							       .flags = flags };
				placed = true;
			}
			if (n == BBL_MAX_RANGES + 1)
				return false;
			out[n++] = *r;
		} else {
			start = r->start < start ? r->start : start;
			end = rend > end ? rend : end;
			flags |= r->flags;
		}
		if (end - start > UINT32_MAX)
			return false;
	}
	if (!placed) {
		if (n == BBL_MAX_RANGES + 1)
			return false;
		out[n++] = (struct bbl_range){ .start = start, .count = (uint32_t)(end - start),
					       .flags = flags };
	}
	if (n > BBL_MAX_RANGES)
		return false;
	memcpy(img->r, out, n * sizeof(out[0]));
	img->n = n;
	return true;
}

/* Remove [start, end); false (nothing changed) when a split would not fit. */
static bool bbl_remove(struct bbl_image *img, uint64_t start, uint64_t end)
{
	struct bbl_range out[BBL_MAX_RANGES];
	unsigned n = 0;
	bool changed = false;

	for (unsigned i = 0; i < img->n; i++) {
		const struct bbl_range *r = &img->r[i];
		uint64_t rend = r->start + r->count;

		if (rend <= start || r->start >= end) {
			out[n++] = *r;
			continue;
		}
		changed = true;
		if (r->start < start)
			out[n++] = (struct bbl_range){ .start = r->start,
						       .count = (uint32_t)(start - r->start),
						       .flags = r->flags };
		if (rend > end) {
			if (n == BBL_MAX_RANGES)
				return false;
			out[n++] = (struct bbl_range){ .start = end, .count = (uint32_t)(rend - end),
						       .flags = r->flags };
		}
	}
	if (!changed)
		return false;
	memcpy(img->r, out, n * sizeof(out[0]));
	img->n = n;
	return true;
}

int badblocks_add_held(struct graid_array *a, unsigned role, uint64_t off, uint64_t len,
		       unsigned flags)
{
	struct member *m = &a->members[role];
	uint64_t start = off / BBL_UNIT, end = (off + len + BBL_UNIT - 1) / BBL_UNIT;
	struct badblocks *b;
	int rc = 0;

	if (!a->bbl)
		return -EOPNOTSUPP;
	if (len == 0)
		return 0;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	if (!bbl_insert(&b->img, start, end, flags & BBL_F_KNOWN)) {
		rc = -ENOSPC;
	} else {
		atomic_store_explicit(&b->n, b->img.n, memory_order_release);
		rc = bbl_write(a, m, b);
	}
	pthread_mutex_unlock(&b->lock);
	if (rc == -ENOSPC)
		graid__log(GRAID_LOG_ERR, "member %u (%s): its bad-block log is full (%u ranges): "
					  "blocks at data-area byte %llu cannot be recorded",
			   role, m->dev.path, BBL_MAX_RANGES, (unsigned long long)off);
	else if (rc)
		graid__log(GRAID_LOG_ERR, "member %u (%s): writing its bad-block log: %s", role,
			   m->dev.path, graid_strerror(rc));
	else
		graid__log(GRAID_LOG_ERR, "member %u (%s): %llu bytes at data-area byte %llu "
					  "recorded bad (%s): reads there fail with EIO until written",
			   role, m->dev.path, (unsigned long long)((end - start) * BBL_UNIT),
			   (unsigned long long)(start * BBL_UNIT),
			   flags & BBL_F_LOST ? "lost: no redundancy was left to rebuild them"
					      : "unreadable, and no redundancy left to rewrite them");
	if (rc == 0)
		array_event(a, GRAID_EVENT_BAD_BLOCK, (int)role, -EIO, off / a->lay.chunk,
			    end - start);
	return rc;
}

int badblocks_prepare(struct graid_array *a, unsigned role, struct member *dev,
		      const uint64_t *lost, unsigned n, struct bbl_image *img)
{
	struct badblocks b;
	int rc = 0;

	if (!a->bbl)
		return n ? -EOPNOTSUPP : 0;
	(void)role;
	memset(&b, 0, sizeof(b));
	/* Both copies written with its UUID: nothing of its earlier life is read back. */
	memcpy(b.img.member_uuid, dev->dev.uuid, 16);
	for (unsigned i = 0; i < n; i++)
		if (!bbl_insert(&b.img, lost[i] / BBL_UNIT, lost[i] / BBL_UNIT + 1, BBL_F_LOST))
			return -ENOSPC;
	for (unsigned k = 0; rc == 0 && k < 2; k++)
		rc = bbl_write(a, dev, &b);
	if (rc == 0)
		*img = b.img;
	return rc;
}

void badblocks_adopt(struct graid_array *a, unsigned role, const struct bbl_image *img)
{
	struct badblocks *b;

	if (!a->bbl)
		return;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	b->img = *img;
	b->dirty = false;
	atomic_store_explicit(&b->n, b->img.n, memory_order_release);
	pthread_mutex_unlock(&b->lock);
}

void badblocks_adopt_report(struct graid_array *a, unsigned role, const struct bbl_image *img)
{
	if (!a->bbl)
		return;
	for (unsigned i = 0; i < img->n; i++) {
		uint64_t start = img->r[i].start, end = start + img->r[i].count;

		graid__log(GRAID_LOG_ERR, "member %u (%s): %llu bytes at data-area byte %llu "
					  "recorded bad (lost: no device could give them to the "
					  "replace): reads there fail with EIO until written", role,
			   a->members[role].dev.path,
			   (unsigned long long)((end - start) * BBL_UNIT),
			   (unsigned long long)(start * BBL_UNIT));
		array_event(a, GRAID_EVENT_BAD_BLOCK, (int)role, -EIO,
			    start * BBL_UNIT / a->lay.chunk, end - start);
	}
}

int badblocks_add(struct graid_array *a, unsigned role, int fd, uint64_t off, uint64_t len,
		  unsigned flags)
{
	struct member *m = &a->members[role];
	int rc;

	if (!a->bbl)
		return -EOPNOTSUPP;
	if (len == 0)
		return 0;
	/* Under meta_lock: the role keeps this device until the record is on it. */
	pthread_mutex_lock(&a->meta_lock);
	if (m->dev.fd != fd || m->dev.fd < 0) {
		pthread_mutex_unlock(&a->meta_lock);
		return -ESTALE;
	}
	rc = badblocks_add_held(a, role, off, len, flags);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

void badblocks_clear(struct graid_array *a, unsigned role, int fd, uint64_t off, uint64_t len)
{
	/* Only whole units: a write of part of one leaves the rest of it unknown. */
	uint64_t start = (off + BBL_UNIT - 1) / BBL_UNIT, end = (off + len) / BBL_UNIT;
	struct badblocks *b;

	if (!badblocks_any(a, role) || start >= end || a->members[role].dev.fd != fd)
		return;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	if (bbl_remove(&b->img, start, end)) {
		atomic_store_explicit(&b->n, b->img.n, memory_order_release);
		b->dirty = true;
	}
	pthread_mutex_unlock(&b->lock);
}

/* The index of the first range that ends past @p unit (img->n: none). Lock held. */
static unsigned bbl_find(const struct bbl_image *img, uint64_t unit)
{
	unsigned lo = 0, hi = img->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (img->r[mid].start + img->r[mid].count <= unit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool badblocks_overlap(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	uint64_t start = off / BBL_UNIT, end = (off + len + BBL_UNIT - 1) / BBL_UNIT;
	struct badblocks *b;
	unsigned i;
	bool hit;

	if (!badblocks_any(a, role) || len == 0)
		return false;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	i = bbl_find(&b->img, start);
	hit = i < b->img.n && b->img.r[i].start < end;
	pthread_mutex_unlock(&b->lock);
	return hit;
}

bool badblocks_cols(struct graid_array *a, unsigned role, uint64_t off, uint32_t len,
		    struct bbl_cols *cols)
{
	uint64_t start = off / BBL_UNIT, end = (off + len + BBL_UNIT - 1) / BBL_UNIT;
	struct badblocks *b;
	bool any = false;

	if (!badblocks_any(a, role) || len == 0)
		return false;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	for (unsigned i = bbl_find(&b->img, start); i < b->img.n && b->img.r[i].start < end; i++) {
		uint64_t s = b->img.r[i].start, e = s + b->img.r[i].count;

		for (uint64_t u = s < start ? start : s; u < e && u < end; u++) {
			bbl_cols_set(cols, (unsigned)(u - start));
			any = true;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return any;
}

int badblocks_sync(struct graid_array *a)
{
	int rc = 0;

	if (!a->bbl || a->read_only)
		return 0;
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned r = 0; r < a->nmembers; r++) {
		struct badblocks *b = &a->bbl[r];
		int st = atomic_load(&a->members[r].state), e = 0;

		if (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING)
			continue;
		pthread_mutex_lock(&b->lock);
		if (b->dirty)
			e = bbl_write(a, &a->members[r], b);
		pthread_mutex_unlock(&b->lock);
		rc = rc ? rc : e;
	}
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

uint64_t badblocks_units(struct graid_array *a, unsigned role)
{
	struct badblocks *b;
	uint64_t units = 0;

	if (!badblocks_any(a, role))
		return 0;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	for (unsigned i = 0; i < b->img.n; i++)
		units += b->img.r[i].count;
	pthread_mutex_unlock(&b->lock);
	return units;
}

unsigned badblocks_list(struct graid_array *a, unsigned role, struct bbl_range *out,
			unsigned max)
{
	struct badblocks *b;
	unsigned n;

	if (!a->bbl || role >= a->nmembers)
		return 0;
	b = &a->bbl[role];
	pthread_mutex_lock(&b->lock);
	n = b->img.n;
	memcpy(out, b->img.r, (n < max ? n : max) * sizeof(*out));
	pthread_mutex_unlock(&b->lock);
	return n;
}

/*
 * The array byte that member @p idx's data-area byte @p off holds now: while a reshape runs,
 * by its position (docs/FORMAT.md, "Where an array byte is": the new geometry below it and
 * past the moved bytes, the old one at or past it), so a place the move has passed names
 * the byte it holds now, and one it has left behind (moved from, not yet written) none.
 * -ENODATA: parity, or no byte of either geometry.
 */
static int bb_unmap(const struct graid_array *a, unsigned idx, uint64_t off, uint64_t *arr)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);
	uint64_t pos, x;

	if (!rs)
		return layout_unmap(&a->lay, idx, off, arr);
	pos = atomic_load(&rs->position);
	if (idx < rs->new_lay.nmembers && layout_unmap(&rs->new_lay, idx, off, &x) == 0 &&
	    (x < pos || x >= rs->end)) {
		*arr = x;
		return 0;
	}
	if (idx < rs->old_lay.nmembers && layout_unmap(&rs->old_lay, idx, off, &x) == 0 &&
	    x >= pos && x < rs->end) {
		*arr = x;
		return 0;
	}
	return -ENODATA;
}

GRAID_API int graid_array_bad_blocks(struct graid_array *a, unsigned idx,
				     struct graid_bad_block *out, unsigned max)
{
	struct bbl_range r[BBL_MAX_RANGES];
	unsigned n;

	if (!a || idx >= a->nmembers || (!out && max))
		return -EINVAL;
	n = badblocks_list(a, idx, r, BBL_MAX_RANGES);
	for (unsigned i = 0; i < n && i < max; i++) {
		uint64_t arr;

		out[i] = (struct graid_bad_block){ .member_offset = r[i].start * BBL_UNIT,
						   .len = (uint64_t)r[i].count * BBL_UNIT,
						   .array_offset = UINT64_MAX };
		out[i].flags = (r[i].flags & BBL_F_LOST ? GRAID_BAD_BLOCK_LOST : 0) |
			       (r[i].flags & BBL_F_UNREADABLE ? GRAID_BAD_BLOCK_UNREADABLE : 0);
		if (bb_unmap(a, idx, out[i].member_offset, &arr) == 0)
			out[i].array_offset = arr;
	}
	return (int)n;
}
