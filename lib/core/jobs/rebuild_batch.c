/* SPDX-License-Identifier: MIT */
/*
 * One batch of a rebuild's rows: its locks, the survivors' reads, the lost chunks recovered
 * (copied, for mirrors), the writes to the targets.
 */
#include <errno.h>

#include <libgraid/graid_backend.h>

#include "io/lost_write_mirror.h"
#include "jobs/rebuild.h"
#include "jobs/rebuild_heal.h"

/* Chunk `i` of the slot's rows for member (parity) or target index (mirror) `who`. */
static uint8_t *rebuild_chunk(const struct rebuild_ctx *c, const struct rebuild_slot *s,
			      unsigned who, unsigned i)
{
	return s->buf.data + ((size_t)who * c->rows_max + i) * c->a->lay.chunk;
}

/*
 * Merge neighbours into one I/O where a member's range and the buffer both continue: a batch
 * becomes a few large sequential I/Os per member instead of one per chunk.
 */
static size_t rebuild_merge(struct mbio *ios, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct mbio *p = k ? &ios[k - 1] : NULL;

		if (p && p->member == ios[i].member && p->write == ios[i].write &&
		    p->off + p->len == ios[i].off && p->buf + p->len == ios[i].buf &&
		    p->len + ios[i].len <= REBUILD_IO_MAX) {
			p->len += ios[i].len;
			continue;
		}
		ios[k++] = ios[i];
	}
	return k;
}

void rebuild_add_locks(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct layout *l = &c->a->lay;

	for (unsigned i = 0; i < s->rows; i++) {
		if (l->level != 10) {
			stripe_set_add(&s->locks, s->row0 + i);
			continue;
		}
		/* RAID-10: writes lock array chunks; those that land on the target rows. */
		for (unsigned t = 0; t < c->ntarget; t++) {
			uint64_t arr;

			if (!layout_unmap(l, c->target[t], (s->row0 + i) * l->chunk, &arr))
				stripe_set_add(&s->locks, arr / l->chunk);
		}
	}
}

/* RAID-5/6: every live member's rows, one run per member. */
static int rebuild_plan_parity_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	unsigned nlost = 0;

	s->nios = 0;
	for (unsigned m = 0; m < a->nmembers; m++) {
		s->have[m] = array_role_alive(a, m);
		if (!s->have[m]) {
			nlost++;
			continue;
		}
		for (unsigned i = 0; i < s->rows; i++)
			s->buf.ios[s->nios++] = (struct mbio){ .member = m,
							   .buf = rebuild_chunk(c, s, m, i),
							   .len = l->chunk,
							   .off = (s->row0 + i) * l->chunk };
	}
	if (nlost > l->nparity)
		return -EIO; /* more lost than parity can rebuild */
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	return 0;
}

/* RAID-1/10: each target chunk from a live copy, into the target's own run of the slot. */
static int rebuild_plan_mirror_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];

	s->nios = 0;
	for (unsigned t = 0; t < c->ntarget; t++)
		for (unsigned i = 0; i < s->rows; i++) {
			unsigned k, src = GRAID_LAYOUT_NONE;
			uint64_t arr;

			if (layout_unmap(l, c->target[t], (s->row0 + i) * l->chunk, &arr))
				continue; /* a RAID-10 slot no chunk uses */
			k = layout_copies(l, arr, members, moff);
			for (unsigned j = 0; j < k && src == GRAID_LAYOUT_NONE; j++)
				if (array_role_alive(a, members[j]))
					src = j;
			if (src == GRAID_LAYOUT_NONE)
				return -EIO;
			s->buf.ios[s->nios++] = (struct mbio){ .member = members[src],
							   .buf = rebuild_chunk(c, s, t, i),
							   .len = l->chunk, .off = moff[src] };
		}
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	return 0;
}

/* Rotation gives rows different loss patterns: one engine call per pattern. */
static int rebuild_recover(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	unsigned lost[ROW_JOB_ROWS_MAX][2], nlost[ROW_JOB_ROWS_MAX];
	int rc;

	for (unsigned i = 0; i < s->rows; i++) {
		nlost[i] = 0;
		/* Bad blocks in the row: recovered column by column instead (rebuild_heal.c). */
		if (rebuild_heal_parity_needed(a, s->row0 + i, s->have, &c->bad)) {
			for (unsigned r = 0; r < nroles; r++)
				c->ptrs[r] = rebuild_chunk(c, s, layout_role_member(l, s->row0 + i, r), i);
			rc = rebuild_heal_parity_row(a, &c->mb, s->row0 + i, c->ptrs, s->have,
						     c->target, c->ntarget, &c->bad, &s->lost);
			if (rc)
				return rc;
			nlost[i] = 3; /* done */
			continue;
		}
		for (unsigned r = 0; r < nroles; r++) {
			unsigned m = layout_role_member(l, s->row0 + i, r);

			if (!s->have[m])
				lost[i][nlost[i]++] = r; /* at most nparity: checked when planned */
		}
	}
	for (unsigned i = 0; i < s->rows; i++) {
		unsigned ng = 0;

		if (nlost[i] == 0 || nlost[i] == 3)
			continue;
		for (unsigned j = i; j < s->rows; j++) {
			if (nlost[j] != nlost[i] || lost[j][0] != lost[i][0] ||
			    (nlost[i] > 1 && lost[j][1] != lost[i][1]))
				continue;
			for (unsigned r = 0; r < nroles; r++) {
				unsigned m = layout_role_member(l, s->row0 + j, r);

				c->ptrs[ng * nroles + r] = rebuild_chunk(c, s, m, j);
			}
			ng++;
			if (j != i)
				nlost[j] = 3; /* done with this group */
		}
		/* The rebuilt chunks go to the drives, not back to the CPU: past its caches. */
		rc = graid_parity_recover_flags(a->be, l->ndata, l->nparity, l->chunk, ng,
						c->ptrs, nlost[i], lost[i], GRAID_BATCH_F_STREAM);
		if (rc)
			return rc;
	}
	return 0;
}

/* Queue a locked slot's reads of the survivors (or live copies). */
int rebuild_start_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	int rc = c->a->lay.nparity ? rebuild_plan_parity_reads(c, s)
				   : rebuild_plan_mirror_reads(c, s);

	if (rc == 0)
		rc = mbatch_start(&c->mb, &s->grp, s->buf.ios, s->nios);
	if (rc == 0)
		s->state = SLOT_READING;
	return rc;
}

/*
 * RAID-1/10: chunks whose source copy could not read some units, or records them bad, get
 * those units from another copy, or zeroes recorded lost (rebuild_heal.c).
 */
static int rebuild_heal_mirror(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct layout *l = &c->a->lay;
	int rc = 0;

	for (size_t k = 0; rc == 0 && k < s->nios; k++) {
		const struct mbio *io = &s->buf.ios[k];

		if (c->bad.n == 0 && !badblocks_any(c->a, io->member))
			continue;
		/* A merged read: one target chunk per chunk of it, in the target's own run. */
		for (uint32_t at = 0; rc == 0 && at < io->len; at += l->chunk) {
			uint8_t *buf = io->buf + at;
			size_t idx = (size_t)(buf - s->buf.data) / l->chunk;
			unsigned t = (unsigned)(idx / c->rows_max), i = (unsigned)(idx % c->rows_max);

			rc = rebuild_heal_mirror_chunk(c->a, &c->mb, c->target[t],
						       (s->row0 + i) * l->chunk, buf, io->member,
						       io->off + at, &c->bad, &s->lost);
		}
	}
	return rc;
}

/* Wait for a slot's reads and, for parity levels, recover its lost chunks. */
int rebuild_finish_reads(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	struct graid_array *a = c->a;
	int rc, tries = 0;

	for (;;) {
		rc = mbatch_wait(&c->mb, &s->grp);
		/* Sectors a survivor cannot read: found 4 KiB at a time, the member kept. */
		row_bad_reset(&c->bad);
		if (rc == 0 && row_heal_any_media(s->buf.ios, s->nios))
			rc = row_heal_narrow(&c->mb, s->buf.ios, s->nios, &c->bad);
		for (size_t i = 0; rc == 0 && i < s->nios; i++)
			if (s->buf.ios[i].res != (int)s->buf.ios[i].len)
				rc = -EAGAIN; /* a survivor failed: plan the batch again without it */
		if (rc != -EAGAIN || ++tries > (int)a->nmembers)
			break;
		row_bad_reset(&s->lost);
		rc = rebuild_start_reads(c, s);
		if (rc)
			break;
	}
	if (rc == 0 && a->lay.nparity)
		rc = rebuild_recover(c, s);
	else if (rc == 0)
		rc = rebuild_heal_mirror(c, s);
	return rc;
}

/* Queue the slot's writes to the targets: one run per target. */
int rebuild_write_slot(struct rebuild_ctx *c, struct rebuild_slot *s)
{
	const struct layout *l = &c->a->lay;

	s->nios = 0;
	for (unsigned t = 0; t < c->ntarget; t++)
		for (unsigned i = 0; i < s->rows; i++) {
			uint64_t member_off = (s->row0 + i) * l->chunk, arr;
			unsigned who = t;

			if (l->nparity)
				who = c->target[t];
			else if (layout_unmap(l, c->target[t], member_off, &arr))
				continue;
			s->buf.ios[s->nios++] = (struct mbio){ .member = c->target[t], .write = true,
							   .buf = rebuild_chunk(c, s, who, i),
							   .len = l->chunk, .off = member_off };
		}
	s->nios = rebuild_merge(s->buf.ios, s->nios);
	/* The rebuilt copies carry their source's generations (a failure: their own + 1). */
	if (!c->a->lay.nparity &&
	    lost_write_mirror_rebuild_gens(c->a, s->buf.ios, s->nios, &s->wmeta, &s->wmeta_cap))
		graid__log(GRAID_LOG_WARNING, "rebuild: the source copies' write generations of rows "
					      "%llu.. could not be read; the rebuilt copies get new ones",
			   (unsigned long long)s->row0);
	s->state = SLOT_WRITING;
	return mbatch_start(&c->mb, &s->grp, s->buf.ios, s->nios);
}
