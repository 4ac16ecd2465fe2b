/* SPDX-License-Identifier: MIT */
/* RAID-1 and RAID-10 stripe operations: a read from one copy, a write to every copy, repair. */
#include <errno.h>
#include <string.h>

#include "io/queue_io.h"
#include "io/sop.h"
#include "io/sop_internal.h"
#include "io/mirror_source.h"
#include "io/lost_write_mirror.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"

/*
 * No own buffer: copy slot @p i was read straight into the caller's memory (nothing was bad
 * when the read was issued; a lost write is found after it). That memory is the caller's,
 * which may change it: its bytes taken into own memory and written over the others only if
 * every block still matches a tag of the copy's (lost_write_mirror_source_holds). Where one
 * does not or cannot be checked (tags inline in NVMe metadata, a tag absent), *@p reread:
 * the copy is read again into own memory, under the lock still held (a copy noted bad makes
 * sop_mirror_read take own memory), whose check and repair follow as for any read. Not the
 * re-read first: the caller has its data, verified, and a re-read that failed (the copy's
 * member out meanwhile) would fail the read. No memory: NULL, no re-read (it would need
 * memory too); the read stands and the stale copy waits for a later read or scrub.
 */
static const uint8_t *sop_mirror_repair_source(struct graid_queue *q, struct sop *s, unsigned i,
					       uint64_t moff, bool *reread)
{
	const uint8_t *user = s->req->buf + s->req_off;

	*reread = s->req->kslot >= 0; /* a kernel's buffer: sop_mirror_read ends it -EXDEV */
	if (*reread || !sop_own_buf(q, s, i, s->arr_len))
		return NULL;
	memcpy(s->buf[i], user, s->arr_len);
	if (lost_write_mirror_source_holds(q->a, s->mirror_src, moff, s->buf[i], s->arr_len))
		return s->buf[i];
	*reread = true;
	return NULL;
}

/* The copy read has it: write it over each copy noted bad, still under the stripe lock. */
enum sop_step sop_mirror_repair(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay; /* a reshape's: by position */
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = layout_copies(l, s->arr_off, members, moff);
	const uint8_t *src = NULL;
	bool reread = false;

	for (unsigned i = 0; i < n; i++)
		if (members[i] == s->mirror_src && !(src = s->buf[i]))
			src = sop_mirror_repair_source(q, s, i, moff[i], &reread);
	if (!src && reread) {
		sop_release_bufs(q, s);
		return sop_mirror_read(q, s);
	}
	if (!src)
		return sop_end(q, s, 0);
	s->phase = SOP_WRITING;
	s->repairing = true;
	s->nwrites = 0;
	s->write_fail = 0;
	/* The copies healed get the copy read's generations (the expected ones), not + 1. */
	for (unsigned i = 0; src && i < n; i++)
		if (members[i] == s->mirror_src &&
		    lost_write_mirror_heal_gens(q->a, s, members[i], moff[i]))
			src = NULL; /* no generations to give them: left bad, a later read heals */
	for (unsigned i = 0; src && i < n; i++) {
		if (!sop_is_bad(s, members[i]) || !array_role_writable(q->a, members[i]))
			continue;
		if (sop_io(q, s, i, members[i], true, (uint8_t *)src, s->arr_len, moff[i]))
			s->nwrites++;
		else
			s->write_fail++; /* ring unusable: the sector stays bad; a later read repairs it */
	}
	return sop_drained(s);
}

/*
 * The copy a read takes, of the @p nalive in @p alive (indices into members[]). Spread over
 * them by stripe (one request's choice stays stable), except in a region the resync after an
 * unclean open has still to reach: there the copies of a chunk written at the crash may
 * differ, and the resync will make them all its source's, so that copy alone is read, and
 * what a read returns then is what every copy holds after. A source left out (its read
 * failed, or it records bad blocks there) gives way to the next in mirror_source_order();
 * the repair writes that copy's data over it (sop_mirror_repair), or where the repair does
 * not hold the resync, finding the source unreadable there, takes that next copy too.
 */
static unsigned sop_mirror_pick(const struct graid_array *a, const struct sop *s,
				const unsigned *members, const uint64_t *moff, unsigned n,
				const unsigned *alive, unsigned nalive)
{
	bool out[GRAID_MAX_MEMBERS];
	unsigned src;

	if (!bitmap_unresynced(a, s->stripe))
		return alive[s->stripe % nalive];
	for (unsigned i = 0; i < n; i++)
		out[i] = true;
	for (unsigned i = 0; i < nalive; i++)
		out[alive[i]] = false;
	src = mirror_source(a, members, moff, n, s->arr_off % a->lay.chunk, out);
	/* No copy readable over the whole chunk: the resync skips it, any copy will do. */
	return src == GRAID_LAYOUT_NONE ? alive[s->stripe % nalive] : src;
}

/*
 * RAID-1/10 read: one copy (sop_mirror_pick). A copy that failed to read it, or
 * whose log records part of it, is noted bad and left out; the read then runs under the
 * stripe lock (no write may come between it and the write-back) into the queue's memory,
 * and the good copy is written over the bad ones (sop_mirror_repair).
 */
enum sop_step sop_mirror_read(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay; /* a reshape's: by position */
	unsigned members[GRAID_MAX_MEMBERS], alive[GRAID_MAX_MEMBERS], nalive = 0;
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = layout_copies(l, s->arr_off, members, moff);
	uint8_t *user = s->req->buf + s->req_off;
	unsigned c;

	for (unsigned i = 0; i < n; i++) {
		if (!array_role_readable(q->a, members[i], moff[i] + s->arr_len) ||
		    sop_is_bad(s, members[i]))
			continue;
		if (badblocks_overlap(q->a, members[i], moff[i], s->arr_len)) {
			if (!sop_note_bad(s, members[i]))
				return sop_end(q, s, -EIO);
			continue;
		}
		alive[nalive++] = i;
	}
	if (nalive == 0)
		return sop_end(q, s, -EIO);
	/*
	 * A copy that cannot give its part: the read goes to own memory, which a kernel's
	 * buffer cannot take (the caller reads through its own memory then), locked (a
	 * reshape's requests are) or not.
	 */
	if (s->nbad && s->req->kslot >= 0)
		return sop_end(q, s, -EXDEV);
	if (s->nbad && !s->locked)
		return SOP_STEP_LOCK;
	s->pending = 0;
	s->read_failed = false;
	s->plan = PLAN_MIRROR_READ;
	s->phase = SOP_READING;
	c = sop_mirror_pick(q->a, s, members, moff, n, alive, nalive);
	s->mirror_src = members[c];
	/* Slot c: a read of another copy after this one is given up on takes another slot. */
	if (!s->nbad && (s->req->kslot >= 0 || (queue_aligned(user) && !sop_bounce_reads(q)))) {
		if (!sop_io(q, s, c, members[c], false, user, s->arr_len, moff[c]))
			return sop_end(q, s, s->req->kslot >= 0 ? -EXDEV : -EAGAIN);
		return SOP_STEP_NONE;
	}
	if (!sop_own_buf(q, s, c, s->arr_len))
		return sop_end(q, s, -ENOMEM);
	if (!sop_io(q, s, c, members[c], false, s->buf[c], s->arr_len, moff[c]))
		return sop_end(q, s, -EAGAIN);
	s->mio[c]->copy_to = user;
	s->mio[c]->copy_from = s->buf[c];
	return SOP_STEP_NONE;
}

/*
 * Under the stripe lock: a rebuild copying this chunk to a new member must not interleave
 * with the write, or the new member could keep the old data.
 */
enum sop_step sop_mirror_write_locked(struct graid_queue *q, struct sop *s)
{
	const struct layout *l = s->lay; /* a reshape's: by position */
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n = layout_copies(l, s->arr_off, members, moff);
	uint8_t *user = s->req->buf + s->req_off, *src = user;

	s->plan = PLAN_MIRROR_WRITE;
	s->phase = SOP_WRITING;
	s->nwrites = 0;
	s->write_fail = 0;
	/* Every copy the same generation, one past the latest of them. */
	if (lost_write_mirror_write_gens(q->a, s, members, moff, n))
		return sop_end(q, s, -ENOMEM);
	if (!queue_aligned(user)) {
		if (!sop_own_buf(q, s, 0, s->arr_len))
			return sop_end(q, s, -ENOMEM);
		memcpy(s->buf[0], user, s->arr_len);
		src = s->buf[0];
	}
	for (unsigned c = 0; c < n; c++) {
		if (!array_role_writable(q->a, members[c]))
			continue;
		if (queue_write_issued(q, members[c], queue_io(q, s, c, members[c], true, src,
							       s->arr_len, moff[c])))
			s->nwrites++;
	}
	if (s->nwrites == 0)
		return sop_end(q, s, -EIO);
	return SOP_STEP_NONE;
}
