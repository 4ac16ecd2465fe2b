/* SPDX-License-Identifier: MIT */
/* The reshape record on the members: written durably to every writable one, read back at open. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_write.h"
#include "meta/reshape_rec.h"

int reshape_rec_write(struct graid_array *a, struct reshape_rec_io *io,
		      const struct reshape_record *r, bool start)
{
	struct meta_timed timed = { .n = 0 };
	uint64_t off = GRAID_SB_RESHAPE_OFFSET;
	size_t len = RESHAPE_COPY_BYTES;
	int took;

	/* A look's descriptors are read-only: every write would fail and fail its member. */
	if (a->read_only)
		return -EROFS;
	if (!io->buf) {
		io->buf = aligned_alloc(RESHAPE_COPY_BYTES, 2 * RESHAPE_COPY_BYTES);
		if (!io->buf)
			return -ENOMEM;
	}
	reshape_encode(r, io->buf);
	if (start) {
		/* Both blocks at once: no superblock names it yet, so a tear loses nothing. */
		memcpy(io->buf + RESHAPE_COPY_BYTES, io->buf, RESHAPE_COPY_BYTES);
		len = 2 * RESHAPE_COPY_BYTES;
	} else {
		off += (r->generation % 2) * RESHAPE_COPY_BYTES;
	}
	took = meta_write_all(a, &io->ring, io->buf, len, off, "reshape record", &timed);
	meta_timed_settle(a, &timed);
	if (took == 0) {
		graid__log(GRAID_LOG_ERR, "reshape: no member took the record of generation "
					  "%" PRIu64 "; nothing may rely on it", r->generation);
		return -EIO;
	}
	return took;
}

void reshape_rec_io_free(struct graid_array *a, struct reshape_rec_io *io)
{
	meta_ring_free(a, io->ring);
	free(io->buf);
	*io = (struct reshape_rec_io){ 0 };
}

/*
 * Member @p m's two copies decoded into @p rec[0..1]; *@p got[b] says whether block b did.
 * A read error or a copy that does not decode is logged: nothing of that copy counts.
 */
static void rec_read_member(struct member *m, uint8_t *buf, struct reshape_record *rec,
			    bool *got)
{
	int rc = member_pio(m, buf, 2 * RESHAPE_COPY_BYTES, GRAID_SB_RESHAPE_OFFSET, false);

	got[0] = got[1] = false;
	if (rc) {
		graid__log(GRAID_LOG_WARNING, "reshape record: %s: cannot read it: %s", m->dev.path,
			   graid_strerror(rc));
		return;
	}
	for (unsigned b = 0; b < 2; b++) {
		const char *why = "not a record";

		rc = reshape_decode(buf + b * RESHAPE_COPY_BYTES, &rec[b], &why);
		got[b] = rc == 0;
		if (rc)
			graid__log(GRAID_LOG_WARNING, "reshape record: %s, block %u: not used: %s",
				   m->dev.path, b, why);
	}
}

int reshape_rec_read(struct member *const *m, unsigned n, const struct superblock *sb,
		     struct reshape_record *out, const char **why)
{
	struct reshape_record *rec = calloc(2 * (size_t)n + 1, sizeof(*rec));
	const struct reshape_record **copies = calloc(2 * (size_t)n + 1, sizeof(*copies));
	uint8_t *buf = aligned_alloc(RESHAPE_COPY_BYTES, 2 * RESHAPE_COPY_BYTES);
	int best, rc = -ENOMEM;

	if (!rec || !copies || !buf)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		bool got[2];

		if (!m[i])
			continue;
		rec_read_member(m[i], buf, &rec[2 * i], got);
		for (unsigned b = 0; b < 2; b++) {
			if (got[b] && memcmp(rec[2 * i + b].array_uuid, sb->array_uuid, 16)) {
				graid__log(GRAID_LOG_WARNING, "reshape record: %s, block %u: not "
							      "used: the record belongs to another "
							      "array", m[i]->dev.path, b);
				got[b] = false;
			}
			copies[2 * i + b] = got[b] ? &rec[2 * i + b] : NULL;
		}
	}
	best = reshape_newest(copies, 2 * n, sb->array_uuid);
	rc = -ENOENT;
	if (best < 0) {
		if (why)
			*why = "no member holds a valid reshape record of this array";
		goto out;
	}
	rc = reshape_matches_sb(copies[best], sb, why);
	*out = *copies[best];
out:
	free(buf);
	free(copies);
	free(rec);
	return rc;
}

static const char *rec_phase_name(uint32_t phase)
{
	switch (phase) {
	case RESHAPE_PHASE_STAGING:
		return "STAGING";
	case RESHAPE_PHASE_STAGED:
		return "STAGED";
	case RESHAPE_PHASE_COPY:
		return "COPY";
	case RESHAPE_PHASE_FINISHING:
		return "FINISHING";
	}
	return "unknown";
}

void reshape_rec_describe(const struct reshape_record *r, char *buf, size_t len)
{
	snprintf(buf, len, "RAID-%d of %u -> RAID-%d of %u%s, at byte %" PRIu64 " of %" PRIu64
			   "%s, phase %s, generation %" PRIu64,
		 r->old_geo.level, r->old_geo.nmembers, r->new_geo.level, r->new_geo.nmembers,
		 r->new_geo.layout == RESHAPE_LAYOUT_Q_LAST ? " (Q-last)" : "", r->position,
		 reshape_end(r), r->direction == RESHAPE_BACKWARD ? " (backward)" : "",
		 rec_phase_name(r->phase), r->generation);
}
