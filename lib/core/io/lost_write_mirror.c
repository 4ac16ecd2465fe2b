/* SPDX-License-Identifier: MIT */
/* RAID-1/10 lost writes: the copies' generations made equal on writes, compared on reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "format/layout.h"
#include "format/tag_format.h"
#include "io/lost_write_mirror.h"
#include "meta/badblocks.h"
#include "io/sop.h"
#include "io/sop_internal.h"
#include "member/csum_pend.h"
#include "member/tag_inline.h"
#include "member/tag_store.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"

/* Blocks peeked at once (a stack array each side). */
#define LWM_PIECE 64u

/* Room for @p n meta words in s->wmeta. 0 or -ENOMEM. */
static int lwm_reserve(struct sop *s, size_t n)
{
	uint32_t *p;

	if (s->wmeta_cap >= n)
		return 0;
	p = realloc(s->wmeta, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->wmeta = p;
	s->wmeta_cap = n;
	return 0;
}

/* 4 KiB blocks of the operation, or 0 when it is not made of whole ones (no tags then). */
static size_t lwm_blocks(const struct sop *s)
{
	return s->arr_len % TAG_DATA_BLOCK ? 0 : s->arr_len / TAG_DATA_BLOCK;
}

/* The later of two generations (serial order: the one the other is not ahead of). */
static uint32_t lwm_max(uint32_t a, uint32_t b)
{
	return tag_gen_ahead(b, a) ? b : a;
}

int lost_write_mirror_write_gens(struct graid_array *a, struct sop *s, const unsigned *members,
				 const uint64_t *moff, unsigned n)
{
	const size_t nb = lwm_blocks(s);
	struct tag_peek pk[LWM_PIECE];

	s->wmeta_on = false;
	if (!a->csum_gens || !a->tags || !nb)
		return 0;
	if (lwm_reserve(s, nb))
		return -ENOMEM;
	for (size_t i = 0; i < nb; i++)
		s->wmeta[i] = 0; /* an absent tag counts as generation 0 */
	for (unsigned c = 0; c < n; c++) {
		if (!array_role_writable(a, members[c]))
			continue;
		for (size_t i = 0; i < nb; i += LWM_PIECE) {
			unsigned k = nb - i < LWM_PIECE ? (unsigned)(nb - i) : LWM_PIECE;

			/* Not held here (NVMe metadata), or unreadable: that copy does not vote. */
			if (tag_store_peek_load(a, members[c], moff[c] / TAG_DATA_BLOCK + i, k, pk))
				break;
			for (unsigned j = 0; j < k; j++) {
				uint32_t *w = &s->wmeta[i + j];

				*w = lwm_max(*w, tag_gen(pk[j].tag));
				if (pk[j].inflight && tag_valid(pk[j].next))
					*w = lwm_max(*w, tag_gen(pk[j].next));
			}
		}
	}
	for (size_t i = 0; i < nb; i++)
		s->wmeta[i] = tag_gen_next(s->wmeta[i]);
	s->wmeta_on = true;
	return 0;
}

bool lost_write_mirror_source_holds(struct graid_array *a, unsigned role, uint64_t off,
				    const uint8_t *buf, size_t len)
{
	struct iovec one = { .iov_base = (void *)buf, .iov_len = len };
	struct tag_peek pk[LWM_PIECE];
	const size_t nb = len / TAG_DATA_BLOCK;

	if (!a->tags || tag_inline_role(a, role) || len % TAG_DATA_BLOCK || off % TAG_DATA_BLOCK)
		return false;
	/* A verify passes a block whose tag is absent: here such a block cannot be checked. */
	for (size_t i = 0; i < nb; i += LWM_PIECE) {
		unsigned k = nb - i < LWM_PIECE ? (unsigned)(nb - i) : LWM_PIECE;

		if (tag_store_peek_load(a, role, off / TAG_DATA_BLOCK + i, k, pk))
			return false;
		for (unsigned j = 0; j < k; j++)
			if (!tag_valid(pk[j].tag) || pk[j].inflight)
				return false;
	}
	return tag_store_verify(a, role, off, &one, 1, NULL, 0, NULL) == 0;
}

int lost_write_mirror_heal_gens(struct graid_array *a, struct sop *s, unsigned src,
				uint64_t src_off)
{
	const size_t nb = lwm_blocks(s);
	struct tag_peek pk[LWM_PIECE];
	int rc;

	s->wmeta_on = false;
	if (!a->csum_gens || !a->tags || !nb)
		return 0;
	if (lwm_reserve(s, nb))
		return -ENOMEM;
	for (size_t i = 0; i < nb; i += LWM_PIECE) {
		unsigned k = nb - i < LWM_PIECE ? (unsigned)(nb - i) : LWM_PIECE;

		rc = tag_store_peek_load(a, src, src_off / TAG_DATA_BLOCK + i, k, pk);
		if (rc)
			return rc;
		for (unsigned j = 0; j < k; j++)
			s->wmeta[i + j] = tag_gen(pk[j].tag);
	}
	s->wmeta_on = true;
	return 0;
}

/* What one comparison of the copy read with the others found. */
struct lwm_seen {
	bool src_behind; /* the copy read is behind another copy for some block */
	bool other_behind; /* some other copy is behind the copy read */
};

/*
 * Block @p block of copy @p m is stale: noted bad, so that the repair writes the copy read
 * over it, and kept pending as a lost write (csum_pend_add_lost: not counted yet), so that
 * the repair's write, once done, reports it healed (csum_report_written) and an operation
 * that fails reports it -EIO (sop_finish), as a checksum mismatch is settled. Where it cannot
 * be rewritten (a read-only array, more bad copies than the operation holds): -EIO now.
 */
static void lwm_note(struct graid_array *a, struct sop *s, unsigned m, uint64_t block)
{
	if (!a->read_only && sop_note_bad(s, m))
		csum_pend_add_lost(&a->members[m].role.csum_pend, block, 0);
	else if (!a->read_only)
		csum_report_lost_write(a, (int)m, block, 1, -EIO);
	/* Read-only: nothing will settle it; reported once while its entry waits, not per read. */
	else if (csum_pend_add_lost(&a->members[m].role.csum_pend, block, 0))
		csum_report_lost_write(a, (int)m, block, 1, -EIO);
}

/*
 * Compare the copy read (index @p c of the @p n copies) with every other readable copy over
 * the operation's blocks, tag-area copies' tag blocks read where not cached (an inline
 * copy's from the cache alone: its tag area is not read in). With @p report (under the
 * lock, the copy read found current): each block of another copy behind it reported and
 * that copy noted bad.
 */
static struct lwm_seen lwm_compare(struct graid_array *a, struct sop *s, const unsigned *members,
				   const uint64_t *moff, unsigned n, unsigned c, bool report)
{
	const size_t nb = lwm_blocks(s);
	struct tag_peek ps[LWM_PIECE], po[LWM_PIECE];
	struct lwm_seen seen = { false, false };

	for (size_t i = 0; i < nb; i += LWM_PIECE) {
		unsigned k = nb - i < LWM_PIECE ? (unsigned)(nb - i) : LWM_PIECE;
		int rc = tag_store_peek(a, members[c], moff[c] / TAG_DATA_BLOCK + i, k, ps);

		if (rc && rc != -ENOENT)
			return seen; /* not held here (NVMe metadata): nothing to compare with */
		for (unsigned o = 0; o < n; o++) {
			uint64_t ob = moff[o] / TAG_DATA_BLOCK + i;

			if (o == c || !array_role_readable(a, members[o], moff[o] + s->arr_len))
				continue;
			/*
			 * Loaded: the span check may have stopped before this chunk (a mismatch
			 * or a write in flight elsewhere in the span), and a peer not cached
			 * would let a stale copy read pass.
			 */
			rc = tag_inline_role(a, members[o]) ? tag_store_peek(a, members[o], ob, k, po)
							    : tag_store_peek_load(a, members[o], ob, k,
										  po);
			if (rc && rc != -ENOENT)
				continue;
			for (unsigned j = 0; j < k; j++) {
				uint32_t gs, go;

				/* A pending write accepts the old tag and the new: nothing to judge. */
				if (!ps[j].cached || !po[j].cached || ps[j].inflight ||
				    po[j].inflight)
					continue;
				/*
				 * An absent tag (never written, or its tag block lost to a bad
				 * sector and answered absent) says nothing of the generation.
				 */
				if (!tag_valid(ps[j].tag) || !tag_valid(po[j].tag))
					continue;
				gs = tag_gen(ps[j].tag);
				go = tag_gen(po[j].tag);
				if (tag_gen_ahead(go, gs)) {
					seen.src_behind = true;
				} else if (tag_gen_ahead(gs, go)) {
					seen.other_behind = true;
					if (report)
						lwm_note(a, s, members[o], ob + j);
				}
			}
		}
	}
	return seen;
}

/*
 * The span check (docs/INTEGRITY.md, "The span flag") of copy @p m's tag block @p span
 * (member blocks span * 512 .. + 511): chunk by chunk through the layout (a RAID-10 chunk's
 * copies sit at other member offsets, on other rows), every block's generation compared
 * with every other readable copy's, tag-area copies' tag blocks read where not cached, an
 * inline copy's kept tags from the cache only (reads do not fill them). True only when
 * every block compared equal: nothing in flight, no chunk still to resync, nothing missing.
 * A mismatch is not handled here: the read's own blocks are compared after
 * (lost_write_mirror_check), the others when read or scrubbed.
 */
static bool lwm_span_consistent(struct graid_array *a, unsigned m, uint64_t span)
{
	const struct layout *l = &a->lay;
	const uint64_t per = l->chunk / TAG_DATA_BLOCK, lim = l->member_bytes / TAG_DATA_BLOCK;
	uint64_t b = span * TAGS_PER_BLOCK, end = b + TAGS_PER_BLOCK;
	struct tag_peek ps[LWM_PIECE], po[LWM_PIECE];

	if (end > lim)
		end = lim;
	while (b < end) {
		unsigned members[GRAID_MAX_MEMBERS], n, c;
		uint64_t moff[GRAID_MAX_MEMBERS], arr, cend = (b / per + 1) * per, in;
		int rc = layout_unmap(l, m, b * TAG_DATA_BLOCK, &arr);

		if (cend > end)
			cend = end;
		if (rc == -ENODATA) {
			b = cend; /* a RAID-10 slot no chunk uses: never read */
			continue;
		}
		if (rc || bitmap_unresynced(a, arr / ((uint64_t)l->chunk * l->ndata)))
			return false;
		n = layout_copies(l, arr - arr % l->chunk, members, moff);
		for (c = 0; c < n && members[c] != m; c++)
			;
		if (c == n)
			return false;
		in = b * TAG_DATA_BLOCK - moff[c]; /* bytes into the chunk */
		for (uint64_t i = b; i < cend; i += LWM_PIECE) {
			unsigned k = cend - i < LWM_PIECE ? (unsigned)(cend - i) : LWM_PIECE;
			uint64_t at = in + (i - b) * TAG_DATA_BLOCK;
			unsigned compared = 0; /* other copies readable here, compared */

			if (tag_store_peek_load(a, m, i, k, ps))
				return false;
			for (unsigned o = 0; o < n; o++) {
				if (o == c ||
				    !array_role_readable(a, members[o],
							 moff[o] + at +
								 (uint64_t)k * TAG_DATA_BLOCK))
					continue;
				compared++;
				rc = tag_inline_role(a, members[o])
					     ? tag_store_peek(a, members[o],
							      (moff[o] + at) / TAG_DATA_BLOCK, k,
							      po)
					     : tag_store_peek_load(a, members[o],
								   (moff[o] + at) / TAG_DATA_BLOCK,
								   k, po);
				if (rc)
					return false;
				for (unsigned j = 0; j < k; j++)
					if (ps[j].inflight || po[j].inflight ||
					    tag_gen(ps[j].tag) != tag_gen(po[j].tag))
						return false;
			}
			/*
			 * No other copy readable (out, or returning below its catch-up
			 * checkpoint): compared with nothing, so not checked. A mark here
			 * would outlive the other copy's return and hide this copy's stale
			 * blocks from every read of it.
			 */
			if (compared == 0)
				return false;
		}
		b = cend;
	}
	return true;
}

/*
 * Whether every span the read of copy @p m at member offset @p off, @p len bytes, touches
 * is checked: its flag set, or its span check passing now (the flag then set on the entry
 * checked). An inline copy carries no flag: false (compared from the cache, as before).
 */
static bool lwm_spans_checked(struct graid_array *a, unsigned m, uint64_t off, uint64_t len)
{
	const uint64_t first = off / TAG_DATA_BLOCK / TAGS_PER_BLOCK;
	const uint64_t last = (off + len - 1) / TAG_DATA_BLOCK / TAGS_PER_BLOCK;
	bool all = true;

	for (uint64_t t = first; t <= last; t++) {
		struct tag_span sp;

		/* Verify has just used the tag block: cached, unless evicted since. */
		if (tag_store_span(a, m, t * TAGS_PER_BLOCK, true, &sp)) {
			all = false;
			continue;
		}
		if (sp.checked)
			continue;
		if (lwm_span_consistent(a, m, t))
			tag_store_span_mark(a, m, t * TAGS_PER_BLOCK, sp.token);
		else
			all = false;
	}
	return all;
}

void lost_write_mirror_check(struct graid_array *a, struct sop *s)
{
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned n, c;
	struct lwm_seen seen;

	if (!a->csum_gens || !a->tags || !lwm_blocks(s))
		return;
	/* Copies there may differ by a write the crash tore: the resync settles them. */
	if (bitmap_unresynced(a, s->stripe))
		return;
	n = layout_copies(&a->lay, s->arr_off, members, moff);
	for (c = 0; c < n && members[c] != s->mirror_src; c++)
		;
	if (c == n)
		return;
	/*
	 * The common case: the spans read were compared since their tag blocks were loaded (one
	 * flag test each). Else the span check loaded the tags the compare below needs, so a
	 * read after an open compares too, not only one whose peers' tags happen to be cached.
	 */
	if (lwm_spans_checked(a, members[c], moff[c], s->arr_len))
		return;
	seen = lwm_compare(a, s, members, moff, n, c, false);
	if (!seen.src_behind && !seen.other_behind)
		return;
	/* Unlocked, a write may have come between the read and the look: again under the lock. */
	if (!s->locked) {
		s->read_failed = true;
		return;
	}
	if (seen.src_behind) {
		/*
		 * Read again from another copy (checked in turn, until the copy ahead is read,
		 * which reports this one). No room to leave it out: the read stands as it is.
		 */
		if (sop_note_bad(s, s->mirror_src))
			s->read_failed = true;
		return;
	}
	lwm_compare(a, s, members, moff, n, c, true);
}

int lost_write_mirror_scrub(struct graid_array *a, struct mbatch *mb, struct mbio *ios, size_t n,
			    uint64_t stripe, uint64_t *rewritten)
{
	const uint32_t len = n ? ios[0].len : 0, nb = len / TAG_DATA_BLOCK;
	struct tag_peek pk[LWM_PIECE];
	struct mbio *w = NULL;
	uint32_t *g = NULL, *want = NULL;
	size_t nw = 0;
	int rc = 0;

	if (!a->csum_gens || !a->tags || n < 2 || !nb || len % TAG_DATA_BLOCK)
		return 0;
	g = calloc((size_t)n * nb, sizeof(*g));
	want = calloc((size_t)n * nb, sizeof(*want));
	w = calloc((size_t)n * nb, sizeof(*w));
	if (!g || !want || !w) {
		rc = -ENOMEM;
		goto out;
	}
	/* Every copy's generations; a copy whose tags this store does not hold has no vote. */
	for (size_t j = 0; j < n; j++)
		for (uint32_t i = 0; i < nb; i += LWM_PIECE) {
			unsigned k = nb - i < LWM_PIECE ? nb - i : LWM_PIECE;

			if (tag_store_peek_load(a, ios[j].member, ios[j].off / TAG_DATA_BLOCK + i,
						k, pk)) {
				for (uint32_t x = 0; x < nb; x++)
					g[j * nb + x] = UINT32_MAX;
				break;
			}
			/* An absent tag has no vote (lwm_compare()). */
			for (unsigned x = 0; x < k; x++)
				g[j * nb + i + x] =
					tag_valid(pk[x].tag) ? tag_gen(pk[x].tag) : UINT32_MAX;
		}
	for (uint32_t i = 0; i < nb; i++) {
		size_t best = n;

		for (size_t j = 0; j < n; j++)
			if (g[j * nb + i] != UINT32_MAX &&
			    (best == n || tag_gen_ahead(g[j * nb + i], g[best * nb + i])))
				best = j;
		for (size_t j = 0; best < n && j < n; j++) {
			const size_t at = (size_t)i * TAG_DATA_BLOCK;

			if (g[j * nb + i] == UINT32_MAX ||
			    !tag_gen_ahead(g[best * nb + i], g[j * nb + i]))
				continue;
			if (a->read_only) {
				csum_report_lost_write(a, (int)ios[j].member,
						       ios[j].off / TAG_DATA_BLOCK + i, 1, -EIO);
				continue;
			}
			/* The copy ahead's bytes (its CRC held when read) and generation. */
			memcpy(ios[j].buf + at, ios[best].buf + at, TAG_DATA_BLOCK);
			want[nw] = g[best * nb + i];
			w[nw] = (struct mbio){ .member = ios[j].member,
					       .write = true,
					       .buf = ios[j].buf + at,
					       .len = TAG_DATA_BLOCK,
					       .off = ios[j].off + at };
			w[nw].fault.meta_in = &want[nw];
			nw++;
		}
	}
	if (nw) {
		/* A write like any other: its region marked first (a torn one is resynced). */
		rc = bitmap_start_write(a, stripe);
		if (rc == 0)
			rc = mbatch_run_on(mb, w, nw);
		bitmap_end_write(a, stripe);
	}
	for (size_t i = 0; i < nw; i++) {
		bool ok = rc == 0 && w[i].res == (int)TAG_DATA_BLOCK;

		csum_report_lost_write(a, (int)w[i].member, w[i].off / TAG_DATA_BLOCK, 1,
				       ok ? 0 : -EIO);
		if (ok && rewritten)
			(*rewritten)++;
	}
out:
	free(g);
	free(want);
	free(w);
	return rc;
}

int lost_write_mirror_rebuild_gens(struct graid_array *a, struct mbio *ios, size_t n,
				   uint32_t **words, size_t *cap)
{
	const struct layout *l = &a->lay;
	const uint32_t per = l->chunk / TAG_DATA_BLOCK;
	struct tag_peek pk[LWM_PIECE];
	size_t total = 0, at = 0;

	if (!a->csum_gens || !a->tags || (l->level != 1 && l->level != 10) ||
	    l->chunk % TAG_DATA_BLOCK)
		return 0;
	for (size_t i = 0; i < n; i++)
		total += ios[i].len / TAG_DATA_BLOCK;
	if (*cap < total) {
		uint32_t *p = realloc(*words, total * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*words = p;
		*cap = total;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t *w = *words + at;

		if (!ios[i].write || ios[i].len % l->chunk || ios[i].off % l->chunk)
			continue;
		for (uint32_t c = 0; c < ios[i].len / l->chunk; c++) {
			unsigned members[GRAID_MAX_MEMBERS], k, src;
			uint64_t moff[GRAID_MAX_MEMBERS], arr;

			if (layout_unmap(l, ios[i].member, ios[i].off + (uint64_t)c * l->chunk,
					 &arr))
				return -EINVAL; /* the rebuild writes only chunks the layout uses */
			k = layout_copies(l, arr - arr % l->chunk, members, moff);
			/* The copy the rebuild read (rebuild_plan_mirror_reads: the first alive). */
			for (src = 0; src < k; src++)
				if (members[src] != ios[i].member &&
				    array_role_alive(a, members[src]))
					break;
			if (src == k)
				return -EIO;
			for (uint32_t b = 0; b < per; b += LWM_PIECE) {
				unsigned m = per - b < LWM_PIECE ? per - b : LWM_PIECE;
				int rc = tag_store_peek_load(a, members[src],
							     moff[src] / TAG_DATA_BLOCK + b, m, pk);

				if (rc)
					return rc;
				for (unsigned x = 0; x < m; x++)
					w[(size_t)c * per + b + x] = tag_gen(pk[x].tag);
			}
		}
		ios[i].fault.meta_in = w;
		at += ios[i].len / TAG_DATA_BLOCK;
	}
	return 0;
}

int lost_write_mirror_gens_of(struct graid_array *a, unsigned role, uint64_t off, uint32_t len,
			      uint32_t **out)
{
	const uint32_t nb = len / TAG_DATA_BLOCK;
	struct tag_peek pk[LWM_PIECE];
	uint32_t *g;

	*out = NULL;
	if (!a->csum_gens || !a->tags || !nb || len % TAG_DATA_BLOCK || off % TAG_DATA_BLOCK)
		return 0;
	g = malloc((size_t)nb * sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (uint32_t i = 0; i < nb; i += LWM_PIECE) {
		unsigned k = nb - i < LWM_PIECE ? nb - i : LWM_PIECE;
		int rc = tag_store_peek_load(a, role, off / TAG_DATA_BLOCK + i, k, pk);

		if (rc) {
			free(g);
			return rc;
		}
		for (unsigned x = 0; x < k; x++)
			g[i + x] = tag_gen(pk[x].tag);
	}
	*out = g;
	return 0;
}

/* The generation of @p role's block @p block, or UINT32_MAX (absent, or not to be had). */
static uint32_t lwm_gen_of(struct graid_array *a, unsigned role, uint64_t block)
{
	struct tag_peek pk;

	if (tag_store_peek_load(a, role, block, 1, &pk) || !tag_valid(pk.tag))
		return UINT32_MAX;
	return tag_gen(pk.tag);
}

/*
 * Copy @p j failed at its 4 KiB block @p at only by its tag: it read (@p tag_only: a
 * checksum failure, not an unreadable unit; and not logged bad) the same bytes as @p best.
 */
static bool lwm_tag_alone_bad(struct graid_array *a, const struct mbio *j, bool tag_only,
			      const struct mbio *best, size_t at)
{
	return tag_only && !badblocks_overlap(a, j->member, j->off + at, BBL_UNIT) &&
	       !memcmp(j->buf + at, best->buf + at, BBL_UNIT);
}

/* Whether a failed copy's generation is ahead of copy @p best's. */
static bool lwm_any_ahead(const uint32_t *g, const bool *gone, size_t n, size_t best)
{
	for (size_t j = 0; j < n; j++)
		if (gone[j] && g[j] != UINT32_MAX && tag_gen_ahead(g[j], g[best]))
			return true;
	return false;
}

size_t lost_write_mirror_heal_source(struct graid_array *a, const struct mbio *ios, size_t n,
				     const bool *gone, const bool *tag_only, size_t at)
{
	uint32_t g[GRAID_MAX_MEMBERS];
	size_t best = n, agree = 0, ahead = 0;

	for (size_t j = 0; j < n; j++) {
		if (!a->csum_gens || !a->tags) {
			if (!gone[j])
				return j;
			continue;
		}
		g[j] = lwm_gen_of(a, ios[j].member, (ios[j].off + at) / TAG_DATA_BLOCK);
		if (gone[j])
			continue;
		if (best == n ||
		    (g[j] != UINT32_MAX && (g[best] == UINT32_MAX || tag_gen_ahead(g[j], g[best]))))
			best = j;
	}
	/*
	 * A failed copy whose tag names a generation ahead of the best good copy may be the
	 * newest (its bytes bad, or unreadable): it vetoes the heal (-EIO), since the best is
	 * then stale. Unless its tag is the corrupt part, which shows only one way: it failed
	 * its checksum (read, not logged bad) and its bytes are the best copy's, and two or
	 * more good copies agree with the best (one good copy beside it could be a stale one
	 * whose bytes the lost write did not change). An absent tag has no vote.
	 */
	for (size_t j = 0; best < n && g[best] != UINT32_MAX && j < n; j++) {
		if (!gone[j] && g[j] == g[best])
			agree++;
		if (gone[j] && g[j] != UINT32_MAX && tag_gen_ahead(g[j], g[best]) &&
		    !lwm_tag_alone_bad(a, &ios[j], tag_only[j], &ios[best], at))
			ahead++;
	}
	return ahead || (agree < 2 && lwm_any_ahead(g, gone, n, best)) ? n : best;
}
