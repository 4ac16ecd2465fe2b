/* SPDX-License-Identifier: MIT */
/*
 * RAID-5/6 lost writes: a column's parity record against its data generations
 * (docs/INTEGRITY.md, "Lost writes"). The rare paths (a mismatch, a heal) are written to be
 * obviously right rather than fast; the one hot path, lwc_read_suspect(), reads the cache
 * only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "format/tag_format.h"
#include "io/lost_write_column.h"
#include "io/sop_internal.h"
#include "member/csum_pend.h"
#include "member/member.h"
#include "member/member_io.h"
#include "member/tag_inline.h"
#include "member/tag_store.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"

/* Columns looked at in one go: per role this many peeks on the stack. */
#define LWC_BATCH 16u
/* Roles at most with the stack's peeks; more (wide arrays) allocate. */
#define LWC_STACK_ROLES 24u

enum lwc_kind {
	LWC_OK,        /* the record is the data's */
	LWC_UNCHECKED, /* not judged: a role out, a tag not cached, a write in flight */
	LWC_DATA,      /* data index j is behind by delta */
	LWC_DATA_Q,    /* RAID-6: data index j looks behind by delta, until Q confirms it */
	LWC_PARITY,    /* the parities in pmask (bit 0 P, bit 1 Q) are behind the data */
	LWC_UNLOCATED, /* a mismatch that no single block explains */
};

struct lwc_verdict {
	enum lwc_kind kind;
	unsigned j;
	uint32_t delta;
	unsigned pmask;
};

/* The peeks of a run of columns of one row: role r's column c at pk[r * n + c]. */
struct lwc_row {
	/* The geometry placing the row (lwc_geo(): the new or the old one during a grow). */
	const struct layout *l;
	uint64_t stripe;
	uint64_t block0; /* the first column's block number (the same on every member) */
	unsigned n;
	unsigned nroles;
	/* Still to resync after a crash: a mismatch there is a torn write, not a lost one. */
	bool unresynced;
	/*
	 * A rebuild's judgement (lwc_rebuild_erasures()): a role out is being rebuilt, and a
	 * stale block beside it is located too (lwc_judge_out()), not only detected.
	 */
	bool judge_out;
	unsigned member[GRAID_MAX_MEMBERS];
	bool present[GRAID_MAX_MEMBERS];
	struct tag_peek *pk;
	struct tag_peek stack[LWC_STACK_ROLES * LWC_BATCH];
};

bool lwc_active(const struct graid_array *a)
{
	return a->csum_gens && a->tags && (a->lay.level == 5 || a->lay.level == 6);
}

/*
 * The geometry that places member row @p stripe now: the array's; during a RAID-5/6 grow
 * (a->lay is the old geometry until the finish) the one that holds the row whole, as
 * reshape_row_layout() (jobs/jobs.h, a layer above) answers it: the new one for rows with
 * bytes below the position (a window writes new rows whole), the old one for rows with
 * bytes at or past it (and past the fence), NULL for rows dead in both, which hold nothing
 * a request reads (docs/RESHAPE.md, "Checksums across a grow"). A row changes geometry only
 * under the window's locks: stable for a caller holding the row's lock, a hint for one
 * without.
 */
static const struct layout *lwc_geo(struct graid_array *a, uint64_t stripe)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);
	uint64_t pos, fence, new_unit, old_unit;

	if (!rs || atomic_load(&rs->done) || !rs->old_lay.nparity || !rs->new_lay.nparity)
		return &a->lay;
	pos = atomic_load_explicit(&rs->position, memory_order_acquire);
	fence = atomic_load_explicit(&rs->fence, memory_order_acquire);
	new_unit = (uint64_t)rs->new_lay.chunk * rs->new_lay.ndata;
	old_unit = (uint64_t)rs->old_lay.chunk * rs->old_lay.ndata;
	if (stripe * new_unit < pos)
		return &rs->new_lay;
	if ((stripe + 1) * old_unit > (pos > fence ? pos : fence))
		return &rs->old_lay;
	return NULL;
}

static void lwc_row_free(struct lwc_row *w)
{
	if (w->pk != w->stack)
		free(w->pk);
	w->pk = NULL;
}

/* How lwc_row_load() gets the tags. */
enum lwc_load {
	LWC_PEEK,        /* the cache only */
	LWC_LOAD,        /* tag blocks read where not cached */
	/*
	 * Read for tag-area roles; the cache only for inline roles, whose kept copy reads do
	 * not fill (docs/INTEGRITY.md, decision 4): the span check's way.
	 */
	LWC_LOAD_AREA,
};

/*
 * Peek (or, @p load, read) the tags of columns [block0, block0 + n) of @p stripe on every
 * role that is in the array. 0; -ENOENT (unloaded: something not cached); -errno.
 */
static int lwc_row_load(struct graid_array *a, struct lwc_row *w, uint64_t stripe,
			uint64_t block0, unsigned n, enum lwc_load load)
{
	const struct layout *l = lwc_geo(a, stripe);
	int rc = 0;

	if (!l)
		return -ENOENT; /* between the geometries: nothing to judge */
	/* Another geometry than the last load's: its roles' room made again. */
	if (w->pk && w->l != l)
		lwc_row_free(w);
	w->l = l;
	w->stripe = stripe;
	w->unresynced = bitmap_unresynced(a, stripe);
	w->judge_out = false;
	w->block0 = block0;
	w->n = n;
	w->nroles = l->ndata + l->nparity;
	if (!w->pk)
		w->pk = w->nroles <= LWC_STACK_ROLES
				? w->stack
				: malloc((size_t)w->nroles * LWC_BATCH * sizeof(*w->pk));
	if (!w->pk)
		return -ENOMEM;
	for (unsigned r = 0; r < w->nroles && rc == 0; r++) {
		unsigned m = layout_role_member(l, stripe, r);

		w->member[r] = m;
		w->present[r] = array_role_readable(a, m, (stripe + 1) * l->chunk);
		if (!w->present[r])
			continue;
		if (load == LWC_LOAD || (load == LWC_LOAD_AREA && !tag_inline_role(a, m)))
			rc = tag_store_peek_load(a, m, block0, n, w->pk + (size_t)r * n);
		else
			rc = tag_store_peek(a, m, block0, n, w->pk + (size_t)r * n);
	}
	return rc;
}

static const struct tag_peek *lwc_pk(const struct lwc_row *w, unsigned r, unsigned c)
{
	return &w->pk[(size_t)r * w->n + c];
}

/*
 * RAID-6 with role @p gone out (docs/INTEGRITY.md: "RAID-6 missing one member detects with
 * the remaining sum but cannot locate"): a data block out takes the generation P's record
 * implies, and Q's record must then agree with P's and with the data; a parity out, the
 * other's record must be the data's. Any mismatch is LWC_UNLOCATED (the column's reads fail
 * -EIO: nothing is left to check a rebuild with), else LWC_OK.
 */
static struct lwc_verdict lwc_judge_degraded(const struct lwc_row *w, const struct layout *l,
					     uint32_t *g, const struct tag_rec *rec, unsigned gone)
{
	struct lwc_verdict v = { LWC_OK, 0, 0, 0 };
	struct tag_rec made;

	(void)w;
	if (gone < l->ndata) {
		struct tag_rec r = rec[0];

		g[gone] = 0;
		for (unsigned d = 0; d < l->ndata; d++)
			if (d != gone)
				tag_rec_sub(&r, 0, g[d]);
		g[gone] = r.s % TAG_GEN_PRIME;
		made = tag_rec_make(g, l->ndata);
		if (!tag_rec_eq(made, rec[0]) || !tag_rec_eq(made, rec[1]))
			v.kind = LWC_UNLOCATED;
		return v;
	}
	made = tag_rec_make(g, l->ndata);
	if (!tag_rec_eq(made, rec[gone == l->ndata ? 1 : 0]))
		v.kind = LWC_UNLOCATED;
	return v;
}

/*
 * The data generations @p g (role @p gone's not among them) with the one record @p r
 * implies for @p gone: S - the others'.
 */
static void lwc_imply(uint32_t *g, unsigned k, unsigned gone, struct tag_rec r)
{
	g[gone] = 0;
	for (unsigned d = 0; d < k; d++)
		if (d != gone)
			tag_rec_sub(&r, 0, g[d]);
	g[gone] = r.s % TAG_GEN_PRIME;
}

/* Writes behind a stale block beside a data role out is located for, at most. */
#define LWC_OUT_DELTA_MAX 4u

/*
 * RAID-6, data role @p gone out, P's and Q's records @p r agreeing but not the data's: a
 * data block j behind by delta makes S imply delta too much for @p gone, and W then differ
 * by E = delta * (j - gone). Every j fits some delta modulo 32749, so j is located only
 * where exactly one j fits a delta of 1 .. LWC_OUT_DELTA_MAX (e.g. a block one write
 * behind right beside @p gone, which a block two behind, two places off, would also fit:
 * then nothing is located). LWC_DATA, else LWC_UNLOCATED.
 */
static struct lwc_verdict lwc_locate_out(const struct layout *l, uint32_t *g,
					 struct tag_rec r, unsigned gone)
{
	struct lwc_verdict v = { LWC_UNLOCATED, 0, 0, 0 };
	unsigned found = 0;
	uint32_t e;

	lwc_imply(g, l->ndata, gone, r);
	e = (r.w + TAG_GEN_PRIME - tag_rec_make(g, l->ndata).w) % TAG_GEN_PRIME;
	for (unsigned j = 0; j < l->ndata; j++) {
		uint32_t d = (j + TAG_GEN_PRIME - gone) % TAG_GEN_PRIME, delta;

		if (j == gone)
			continue;
		delta = (uint32_t)((uint64_t)e * tag_gen_inverse(d) % TAG_GEN_PRIME);
		if (delta >= 1 && delta <= LWC_OUT_DELTA_MAX && !found++)
			v = (struct lwc_verdict){ LWC_DATA, j, delta, 0 };
	}
	return found == 1 ? v : (struct lwc_verdict){ LWC_UNLOCATED, 0, 0, 0 };
}

/*
 * A rebuild's judgement of a column with role @p gone out (it is being rebuilt), both
 * levels: the record's S gives the missing data block's generation, W checks it. Nothing
 * is left over to check a rebuild with, so a stale block is located only where no other
 * block explains the mismatch as well: RAID-6 beside a data role out lwc_locate_out();
 * beside a parity out, the other's record against all the data, one write behind only (as
 * RAID-5 locates: a larger dS may be two blocks). Never the role out. RAID-5 beside a data
 * block out: any mismatch LWC_UNLOCATED (two erasures, past its parity); P out: nothing to
 * compare, LWC_OK. RAID-6: P's and Q's records disagreeing, the one that is the data's is
 * right (LWC_PARITY, the other). Else LWC_UNLOCATED.
 */
static struct lwc_verdict lwc_judge_out(const struct layout *l, uint32_t *g,
					const struct tag_rec *rec, unsigned gone)
{
	struct lwc_verdict v = { LWC_UNLOCATED, 0, 0, 0 };
	struct tag_rec_where at;

	if (gone >= l->ndata) {
		unsigned o = l->nparity == 1 ? 0 : gone == l->ndata ? 1 : 0;

		if (l->nparity == 1)
			return (struct lwc_verdict){ LWC_OK, 0, 0, 0 };
		at = tag_rec_locate(rec[o], g, l->ndata);
		if (at.verdict == TAG_REC_CONSISTENT)
			v.kind = LWC_OK;
		else if (at.verdict == TAG_REC_PARITY_STALE)
			v = (struct lwc_verdict){ LWC_PARITY, 0, 0, 1u << o };
		else if (at.verdict == TAG_REC_DATA_BEHIND && at.delta == 1)
			v = (struct lwc_verdict){ LWC_DATA, at.j, 1, 0 };
		return v;
	}
	for (unsigned p = 0; p < l->nparity; p++) {
		lwc_imply(g, l->ndata, gone, rec[p]);
		if (tag_rec_eq(tag_rec_make(g, l->ndata), rec[p]))
			return l->nparity == 1 || tag_rec_eq(rec[0], rec[1])
				       ? (struct lwc_verdict){ LWC_OK, 0, 0, 0 }
				       : (struct lwc_verdict){ LWC_PARITY, 0, 0, 2u >> p };
	}
	if (l->nparity == 1 || !tag_rec_eq(rec[0], rec[1]))
		return v;
	return lwc_locate_out(l, g, rec[0], gone);
}

/*
 * Judge column @p c: RAID-5 heals a data block behind by one write only (a larger dS may be
 * two blocks); RAID-6 names the block for any delta (LWC_DATA_Q) and leaves it to Q to
 * confirm (lwc_q_confirms()), and a parity whose record alone differs is the stale one.
 */
static struct lwc_verdict lwc_judge_tags(const struct lwc_row *w, const struct layout *l,
					 unsigned c, bool unlocked);

/*
 * An absent tag says nothing of its block's generation: a tag block lost to a bad sector
 * is answered all absent (tag_store.c tag_get(), written back so), and a block never
 * written since the tags were zeroed is absent too. A mismatch that blames an absent tag,
 * or that absent tags could explain (a RAID-6 "one block behind" whose rebuild Q would
 * confirm whatever: the data is right; no single block), is not judged: as
 * docs/INTEGRITY.md's table says of a block whose tag was absent, not caught.
 */
static struct lwc_verdict lwc_judge(const struct lwc_row *w, const struct layout *l,
				    unsigned c, bool unlocked)
{
	struct lwc_verdict v = lwc_judge_tags(w, l, c, unlocked);
	const struct lwc_verdict unchecked = { LWC_UNCHECKED, 0, 0, 0 };
	bool any = false, blamed = false;

	if (v.kind == LWC_OK || v.kind == LWC_UNCHECKED)
		return v;
	for (unsigned r = 0; r < w->nroles; r++) {
		bool absent = w->present[r] && !tag_valid(lwc_pk(w, r, c)->tag);

		any |= absent;
		if (absent && (v.kind == LWC_DATA || v.kind == LWC_DATA_Q) && r == v.j)
			blamed = true;
		if (absent && v.kind == LWC_PARITY && r >= l->ndata &&
		    ((v.pmask >> (r - l->ndata)) & 1u))
			blamed = true;
	}
	if (blamed || (any && (v.kind == LWC_DATA_Q || v.kind == LWC_UNLOCATED)))
		return unchecked;
	return v;
}

static struct lwc_verdict lwc_judge_tags(const struct lwc_row *w, const struct layout *l,
					 unsigned c, bool unlocked)
{
	struct lwc_verdict v = { LWC_UNCHECKED, 0, 0, 0 };
	uint32_t g[GRAID_MAX_MEMBERS];
	struct tag_rec_where at[2] = { { 0 }, { 0 } };
	struct tag_rec rec[2] = { { 0, 0 }, { 0, 0 } }, made;

	unsigned out = 0, gone = 0;

	if (w->unresynced)
		return v;
	for (unsigned r = 0; r < w->nroles; r++) {
		const struct tag_peek *p = lwc_pk(w, r, c);

		if (!w->present[r]) {
			out++;
			gone = r;
			continue;
		}
		if (!p->cached || (unlocked && p->inflight))
			return v;
		if (r < l->ndata)
			g[r] = tag_gen(p->tag);
		else
			rec[r - l->ndata] = tag_rec_of_tag(p->tag);
	}
	if (out == 1 && w->judge_out)
		return lwc_judge_out(l, g, rec, gone);
	if (out)
		return out == 1 && l->nparity == 2 ? lwc_judge_degraded(w, l, g, rec, gone) : v;
	/* The common case, consistent, without the locator's arithmetic. */
	made = tag_rec_make(g, l->ndata);
	if (tag_rec_eq(rec[0], made) && (l->nparity == 1 || tag_rec_eq(rec[1], made))) {
		v.kind = LWC_OK;
		return v;
	}
	for (unsigned p = 0; p < l->nparity; p++)
		at[p] = tag_rec_locate(rec[p], g, l->ndata);
	if (at[0].verdict == TAG_REC_CONSISTENT &&
	    (l->nparity == 1 || at[1].verdict == TAG_REC_CONSISTENT)) {
		v.kind = LWC_OK;
		return v;
	}
	if (l->nparity == 2 && !tag_rec_eq(rec[0], rec[1])) {
		/* The one that is the data's is right; the other parity missed writes. */
		if (at[0].verdict == TAG_REC_CONSISTENT || at[1].verdict == TAG_REC_CONSISTENT) {
			v.kind = LWC_PARITY;
			v.pmask = at[0].verdict == TAG_REC_CONSISTENT ? 2u : 1u;
		} else {
			v.kind = LWC_UNLOCATED;
		}
		return v;
	}
	if (at[0].verdict == TAG_REC_DATA_BEHIND && l->nparity == 2) {
		v.kind = LWC_DATA_Q;
		v.j = at[0].j;
		v.delta = at[0].delta;
	} else if (at[0].verdict == TAG_REC_DATA_BEHIND && at[0].delta == 1) {
		v.kind = LWC_DATA;
		v.j = at[0].j;
		v.delta = 1;
	} else if (at[0].verdict == TAG_REC_PARITY_STALE) {
		v.kind = LWC_PARITY;
		v.pmask = l->nparity == 2 ? 3u : 1u;
	} else {
		v.kind = LWC_UNLOCATED;
	}
	return v;
}

/*
 * The span check (docs/INTEGRITY.md, "The span flag"): every column of the span of tag
 * block @p span (member blocks span * 512 .. + 511: the same member offsets on every role,
 * so the same rows and columns whatever role the reader plays in each row) judged from the
 * tags, tag-area roles' tag blocks read where not cached. True only when every column was
 * judged consistent: nothing in flight, no row still to resync, every inline role's copy
 * cached, no mismatch. A mismatch is not handled here: the read's own columns are judged
 * after (lwc_read_suspect), the others when read or scrubbed.
 */
/*
 * Whether the row of member block @p b has as many members out as it has parities: RAID-5
 * with one out, RAID-6 with two, judge no column there (lwc_judge_tags(): the missing
 * block's record is all there is), so nobody reads other members' tag blocks for it.
 */
static bool lwc_row_unjudged(struct graid_array *a, uint64_t b)
{
	const struct layout *l = lwc_geo(a, b * TAG_DATA_BLOCK / a->lay.chunk);
	unsigned out = 0;

	if (!l)
		return true;
	for (unsigned m = 0; m < l->ndata + l->nparity; m++)
		out += !array_role_readable(a, m, (b * TAG_DATA_BLOCK / l->chunk + 1) * l->chunk);
	return out >= l->nparity;
}

static bool lwc_span_consistent(struct graid_array *a, uint64_t span)
{
	const struct layout *l = &a->lay;
	const uint64_t lim = l->member_bytes / TAG_DATA_BLOCK;
	uint64_t b = span * TAGS_PER_BLOCK, end = b + TAGS_PER_BLOCK;
	struct lwc_row w;
	bool ok = true;

	if (end > lim)
		end = lim;
	/*
	 * RAID-5 with a member out of the span's first row (RAID-6: two) judges no column of
	 * it (lwc_judge_tags(): the missing block's record is all there is): the span cannot
	 * pass, so the other members' tag blocks are not read for it. A degraded array's spans
	 * are never marked, and each read of them comes here again: without this, a random
	 * read beyond the cache's reach paid a synchronous 4 KiB read per other member.
	 */
	if (lwc_row_unjudged(a, b))
		return false;
	w.pk = NULL;
	while (b < end && ok) {
		uint64_t stripe = b * TAG_DATA_BLOCK / l->chunk;
		uint64_t row_end = (stripe + 1) * l->chunk / TAG_DATA_BLOCK;
		unsigned n = (unsigned)((end < row_end ? end : row_end) - b);

		if (n > LWC_BATCH)
			n = LWC_BATCH;
		ok = lwc_row_load(a, &w, stripe, b, n, LWC_LOAD_AREA) == 0;
		for (unsigned c = 0; c < n && ok; c++)
			ok = lwc_judge(&w, w.l, c, true).kind == LWC_OK;
		b += n;
	}
	lwc_row_free(&w);
	return ok;
}

/*
 * Whether every span [off, off + len) of @p member touches is checked: its flag set, or its
 * span check passing now (the flag then set on the entry checked). An inline member carries
 * no flag: false (its columns are judged from the cache, as before the flag).
 */
static bool lwc_spans_checked(struct graid_array *a, unsigned member, uint64_t off,
			      uint32_t len)
{
	const uint64_t first = off / TAG_DATA_BLOCK / TAGS_PER_BLOCK;
	const uint64_t last = (off + len - 1) / TAG_DATA_BLOCK / TAGS_PER_BLOCK;
	bool all = true;

	for (uint64_t t = first; t <= last; t++) {
		struct tag_span sp;

		/* Verify has just used the tag block: cached, unless evicted since. */
		if (tag_store_span(a, member, t * TAGS_PER_BLOCK, true, &sp)) {
			all = false;
			continue;
		}
		if (sp.checked)
			continue;
		if (lwc_span_consistent(a, t))
			tag_store_span_mark(a, member, t * TAGS_PER_BLOCK, sp.token);
		else
			all = false;
	}
	return all;
}

bool lwc_read_suspect(struct graid_array *a, unsigned member, uint64_t off, uint32_t len)
{
	const struct layout *l = &a->lay;
	uint64_t b = off / TAG_DATA_BLOCK, end = (off + len + TAG_DATA_BLOCK - 1) / TAG_DATA_BLOCK;
	struct lwc_row w;
	bool suspect = false;

	if (!lwc_active(a) || len == 0)
		return false;
	/*
	 * The common case: the spans read were compared since their tag blocks were loaded (one
	 * flag test each). Else the read's own columns are judged, the tag-area roles' tag
	 * blocks read where not cached: the span check may have stopped at a mismatch or a
	 * write in flight elsewhere in the span before it loaded them, and a column judged from
	 * the cache alone would pass a stale block it could not see.
	 */
	if (lwc_spans_checked(a, member, off, len))
		return false;
	w.pk = NULL;
	while (b < end && !suspect) {
		uint64_t stripe = b * TAG_DATA_BLOCK / l->chunk;
		uint64_t row_end = (stripe + 1) * l->chunk / TAG_DATA_BLOCK;
		unsigned n = (unsigned)((end < row_end ? end : row_end) - b);

		if (n > LWC_BATCH)
			n = LWC_BATCH;
		/* An inline role's copy not cached (or an error): not judged; the CRC stands. */
		if (!lwc_row_unjudged(a, b) && lwc_row_load(a, &w, stripe, b, n, LWC_LOAD_AREA) == 0)
			for (unsigned c = 0; c < n && !suspect; c++) {
				enum lwc_kind k = lwc_judge(&w, w.l, c, true).kind;

				suspect = k != LWC_OK && k != LWC_UNCHECKED;
			}
		b += n;
	}
	lwc_row_free(&w);
	return suspect;
}

/*
 * RAID-6: data block @p j of one 4 KiB column (@p col: the k data blocks, P, Q) rebuilt
 * from P gives, with the others, the Q the column holds. Two stale blocks can look like one
 * behind by their sum (its index their mean); Q tells them apart. @p col[j] is left as the
 * rebuild. @p scratch: two 4 KiB blocks. False also when the engine fails.
 */
static bool lwc_q_holds(struct graid_array *a, unsigned k, uint8_t *const *col, unsigned j,
			uint8_t *scratch)
{
	uint8_t *g[GRAID_MAX_MEMBERS + 2];

	memcpy(col[j], col[k], TAG_DATA_BLOCK);
	for (unsigned d = 0; d < k; d++)
		for (unsigned x = 0; d != j && x < TAG_DATA_BLOCK; x++)
			col[j][x] ^= col[d][x];
	for (unsigned d = 0; d < k; d++)
		g[d] = col[d];
	g[k] = scratch;
	g[k + 1] = scratch + TAG_DATA_BLOCK;
	return graid_parity_gen(a->be, k, 2, TAG_DATA_BLOCK, 1, g) == 0 &&
	       memcmp(scratch + TAG_DATA_BLOCK, col[k + 1], TAG_DATA_BLOCK) == 0;
}

/*
 * Whether block @p x of column @p c of @p w, as @p buf holds it, is the one its tag vouches
 * for (the tag @p w loaded: under the stripe lock, no write of it in flight). An absent tag
 * vouches for nothing: false.
 */
static bool lwc_crc_holds(struct graid_array *a, const struct lwc_row *w, unsigned c,
			  unsigned x, const uint8_t *buf)
{
	tag_t t = lwc_pk(w, x, c)->tag;

	return tag_valid(t) &&
	       tag_crc_of(t) == tag_crc(a->uuid, w->member[x], w->block0 + c, buf);
}

/*
 * RAID-6: data block @p j of column @p c (@p col: the k data blocks, P, Q) stale, and role
 * @p x bad beside it (a CRC failure, a sector that cannot be read): both rebuilt from the
 * other k blocks with P and Q, two erasures. Nothing is left over to check the rebuild with
 * but @p x's own tag: its CRC must hold on the rebuilt @p x (a wrongly named @p j, or a
 * third bad block, gives a rebuilt @p x that fails it). @p col[j] and @p col[x] are left as
 * the rebuild. False also when the engine fails.
 */
static bool lwc_two_hold(struct graid_array *a, const struct lwc_row *w, unsigned c,
			 uint8_t *const *col, unsigned j, unsigned x)
{
	const unsigned lost[2] = { j, x };

	if (graid_parity_recover(a->be, w->l->ndata, 2, TAG_DATA_BLOCK, 1, col, 2, lost))
		return false;
	return lwc_crc_holds(a, w, c, x, col[x]);
}

/*
 * The roles of column @p c of @p w other than @p j that are bad: noted bad in @p s, not
 * readable, or read into @p blk failing their tags. Their count; the first in *@p x.
 */
static unsigned lwc_col_read(struct graid_array *a, const struct lwc_row *w, unsigned c,
			     unsigned j, const struct sop *s, uint8_t *const *blk, unsigned *x)
{
	const uint64_t off = (w->block0 + c) * TAG_DATA_BLOCK;
	unsigned nbad = 0;

	for (unsigned r = 0; r < w->nroles; r++) {
		/* member_pio: NVMe passthrough members too, which a pread of theirs fails. */
		bool bad = !w->present[r] ||
			   member_pio(&a->members[w->member[r]], blk[r], TAG_DATA_BLOCK,
				      a->data_offset + off, false) != 0;

		if (bad)
			memset(blk[r], 0, TAG_DATA_BLOCK); /* nothing of a failed read is used */
		if (r == j)
			continue; /* rebuilt whatever it holds */
		bad = bad || (s && sop_is_bad(s, w->member[r])) ||
		      !lwc_crc_holds(a, w, c, r, blk[r]);
		if (bad && !nbad++)
			*x = r;
	}
	return nbad;
}

/*
 * lwc_q_holds() for column @p c of @p w as the members hold it, read now (synchronously:
 * the rare path). The bytes as read first: Q holding says every block but @p j is right,
 * whatever their tags say (a tag that alone is wrong leaves its block right). Else, with one
 * other block bad beside @p j (noted bad in @p s, unreadable, or failing its tag), the two
 * rebuilt as erasures (lwc_two_hold()); with more, false: past what RAID-6 rebuilds. False
 * also when the engine fails or memory runs out.
 */
static bool lwc_q_confirms(struct graid_array *a, const struct lwc_row *w, unsigned c,
			   unsigned j, const struct sop *s)
{
	const unsigned nroles = w->l->ndata + 2;
	uint8_t *mem = aligned_alloc(ARRAY_ALIGN, (size_t)(nroles + 2) * TAG_DATA_BLOCK);
	uint8_t *blk[GRAID_MAX_MEMBERS + 2], *scratch;
	unsigned nbad, x = 0;
	bool ok = false;

	if (!mem)
		return false;
	for (unsigned r = 0; r < nroles; r++)
		blk[r] = mem + (size_t)r * TAG_DATA_BLOCK;
	scratch = mem + (size_t)nroles * TAG_DATA_BLOCK;
	nbad = lwc_col_read(a, w, c, j, s, blk, &x);
	ok = lwc_q_holds(a, w->l->ndata, blk, j, scratch);
	if (!ok && nbad == 1)
		ok = lwc_two_hold(a, w, c, blk, j, x);
	free(mem);
	return ok;
}

/*
 * Member @p m to be noted bad in @p s for a lost write of column @p block: added to @p note,
 * and kept pending as a lost write (csum_pend_add_lost(): not counted yet) as a checksum
 * mismatch is, so that it is settled by what happens to it: the rebuilt block's write, once
 * done, reports it healed (csum_report_written), an operation that fails reports it -EIO
 * (sop_finish). Reported at once only where nothing will be written (a read-only handle):
 * -EIO, and once per block while its entry waits, not once per read. False: more than a
 * stripe operation can note.
 */
static bool lwc_note(struct graid_array *a, const struct sop *s, unsigned m, uint64_t block,
		     unsigned *note, unsigned *nnote)
{
	if (sop_is_bad(s, m))
		return true;
	for (unsigned i = 0; i < *nnote; i++)
		if (note[i] == m)
			return true;
	if (s->nbad + *nnote >= LWC_NOTE_MAX)
		return false;
	note[(*nnote)++] = m;
	if (csum_pend_add_lost(&a->members[m].role.csum_pend, block, 0) && a->read_only)
		csum_report_lost_write(a, (int)m, block, 1, -EIO);
	return true;
}

int lwc_sop_check(struct graid_array *a, const struct sop *s, unsigned *note, unsigned *nnote)
{
	const struct layout *l = s->lay ? s->lay : &a->lay; /* a grow's: by position */
	uint64_t b, end;
	struct lwc_row w;
	int rc = 0;

	*nnote = 0;
	if (!lwc_active(a) || s->nrun != 1 || s->hi <= s->lo)
		return 0;
	b = sop_member_off(l, s->stripe, s->lo) / TAG_DATA_BLOCK;
	end = (sop_member_off(l, s->stripe, s->hi) + TAG_DATA_BLOCK - 1) / TAG_DATA_BLOCK;
	w.pk = NULL;
	while (b < end && rc == 0) {
		unsigned n = (unsigned)(end - b < LWC_BATCH ? end - b : LWC_BATCH);

		/* A tag block that cannot be read: judged by nothing here (its CRCs judge). */
		if (lwc_row_load(a, &w, s->stripe, b, n, LWC_LOAD) != 0) {
			b += n;
			continue;
		}
		for (unsigned c = 0; c < n && rc == 0; c++) {
			struct lwc_verdict v = lwc_judge(&w, w.l, c, false);

			if (v.kind == LWC_DATA_Q)
				v.kind = lwc_q_confirms(a, &w, c, v.j, s) ? LWC_DATA : LWC_UNLOCATED;

			if (v.kind == LWC_DATA &&
			    !lwc_note(a, s, w.member[v.j], b + c, note, nnote))
				rc = -EIO;
			for (unsigned p = 0; v.kind == LWC_PARITY && p < l->nparity; p++)
				if ((v.pmask >> p) & 1u &&
				    !lwc_note(a, s, w.member[l->ndata + p], b + c, note, nnote))
					rc = -EIO;
			if (v.kind == LWC_UNLOCATED && !s->req->write) {
				csum_report_lost_write(a, -1, b + c, 1, -EIO);
				rc = -EIO;
			}
		}
		b += n;
	}
	lwc_row_free(&w);
	return rc;
}

/* Data index @p d is written anew over byte @p x of its chunk by @p s's request. */
static bool lwc_written(const struct layout *l, const struct sop *s, unsigned d, uint32_t x)
{
	uint32_t ws, we;

	if (!s || !s->req->write)
		return false;
	if (s->plan == PLAN_RUN)
		return true;
	return sop_span(l, s, d, &ws, &we) && x >= ws && x < we;
}

/* The meta word of role @p role of column @p c, after @p s's writes. */
static uint32_t lwc_column_meta(struct graid_array *a, const struct lwc_row *w,
				const struct sop *s, unsigned role, unsigned c)
{
	const struct layout *l = w->l;
	const uint32_t x = (uint32_t)((w->block0 + c) * TAG_DATA_BLOCK - w->stripe * l->chunk);
	struct lwc_verdict v = lwc_judge(w, l, c, false);
	uint32_t t[GRAID_MAX_MEMBERS], nw[GRAID_MAX_MEMBERS];
	struct tag_rec old = { 0, 0 }, made;
	unsigned missing = 0, miss = 0, miss0 = 0, all_written = 1;
	bool have_rec = false;

	/*
	 * A stripe operation: Q confirmed it at the plan (lwc_sop_check) if the block is noted
	 * bad. A block not noted (a run of whole stripes, nrun > 1, is not checked before it)
	 * is written with its own generation + 1 (lwc_own_meta()): the record counts the same,
	 * not the expected one, or a column written whole would come out inconsistent. A job's
	 * write (the block still stale on its member): asked of Q now.
	 */
	if ((v.kind == LWC_DATA_Q || v.kind == LWC_DATA) && s)
		v.kind = sop_is_bad(s, w->member[v.j]) ? LWC_DATA : LWC_UNLOCATED;
	else if (v.kind == LWC_DATA_Q)
		v.kind = lwc_q_confirms(a, w, c, v.j, NULL) ? LWC_DATA : LWC_UNLOCATED;
	for (unsigned p = 0; p < l->nparity && !have_rec; p++)
		if (w->present[l->ndata + p]) {
			old = tag_rec_of_tag(lwc_pk(w, l->ndata + p, c)->tag);
			have_rec = true;
		}
	for (unsigned d = 0; d < l->ndata; d++) {
		if (w->present[d]) {
			t[d] = tag_gen(lwc_pk(w, d, c)->tag);
		} else {
			t[d] = 0;
			if (!missing++)
				miss0 = d;
			miss = d;
		}
	}
	/* Before the implied ones: a block located behind beside a role out counts as healed. */
	if (v.kind == LWC_DATA)
		t[v.j] = tag_gen_res(t[v.j] + v.delta);
	/* One data block out: its generation is the one the record implies (S - the others). */
	if (missing == 1 && have_rec) {
		struct tag_rec r = old;

		for (unsigned d = 0; d < l->ndata; d++)
			if (d != miss)
				tag_rec_sub(&r, 0, t[d]);
		t[miss] = r.s % TAG_GEN_PRIME;
	}
	/*
	 * RAID-6, two data blocks out (a, b): S and W, less the others, are two equations,
	 * g_a + g_b = dS and (a + 1) g_a + (b + 1) g_b = dW, so g_b = (dW - (a + 1) dS) / (b - a)
	 * (mod 32749, a prime): both implied. Zero for them would leave a rebuilt column whose
	 * S may hold but whose W does not, a mismatch no single block explains.
	 */
	if (missing == 2 && have_rec) {
		struct tag_rec r = old;
		uint32_t ga, gb;

		for (unsigned d = 0; d < l->ndata; d++)
			if (w->present[d])
				tag_rec_sub(&r, d, t[d]);
		gb = (uint32_t)((uint64_t)((r.w + TAG_GEN_PRIME -
					    (uint64_t)(miss0 + 1u) * r.s % TAG_GEN_PRIME) %
					   TAG_GEN_PRIME) *
				tag_gen_inverse(miss - miss0) % TAG_GEN_PRIME);
		ga = (r.s + TAG_GEN_PRIME - gb) % TAG_GEN_PRIME;
		t[miss0] = ga;
		t[miss] = gb;
	}
	for (unsigned d = 0; d < l->ndata; d++) {
		bool wr = lwc_written(l, s, d, x);
		bool exact = w->present[d] && !(v.kind == LWC_DATA && v.j == d);

		all_written &= wr;
		/* A block written keeps counting from its own generation where that is right. */
		nw[d] = wr ? tag_gen_next(t[d]) : t[d];
		if (!exact)
			nw[d] = tag_gen_res(nw[d]);
	}
	if (role < l->ndata)
		return nw[role];
	if (v.kind == LWC_UNLOCATED && !all_written && have_rec) {
		/* Not located: the record moves by the writes alone, the mismatch stays seen. */
		made = old;
		for (unsigned d = 0; d < l->ndata; d++)
			if (nw[d] != t[d]) {
				tag_rec_sub(&made, d, t[d]);
				tag_rec_add(&made, d, nw[d]);
			}
		return tag_rec_encode(made);
	}
	return tag_rec_encode(tag_rec_make(nw, l->ndata));
}

/*
 * A data block of a stripe operation whose member is not noted bad: its generation is its
 * own (the next one where the request writes it), whatever the column holds elsewhere, so
 * only its own tags are looked at (the common case costs one peek, not one per role).
 */
static int lwc_own_meta(struct graid_array *a, const struct sop *s, unsigned member,
			uint64_t b, uint64_t end, uint32_t *meta)
{
	const struct layout *l = s->lay ? s->lay : &a->lay; /* a grow's: by position */
	struct tag_peek pk[LWC_BATCH];
	const uint64_t first = b;

	while (b < end) {
		uint64_t stripe = b * TAG_DATA_BLOCK / l->chunk;
		uint64_t row_end = (stripe + 1) * l->chunk / TAG_DATA_BLOCK;
		unsigned n = (unsigned)((end < row_end ? end : row_end) - b);
		unsigned role = layout_member_role(l, stripe, member);
		int rc;

		if (n > LWC_BATCH)
			n = LWC_BATCH;
		if (role >= l->ndata)
			return -EAGAIN; /* parity here: the whole column is needed */
		rc = tag_store_peek_load(a, member, b, n, pk);
		if (rc)
			return rc;
		for (unsigned c = 0; c < n; c++) {
			uint32_t x = (uint32_t)((b + c) * TAG_DATA_BLOCK - stripe * l->chunk);
			uint32_t g = tag_gen(pk[c].tag);

			meta[b + c - first] = lwc_written(l, s, role, x) ? tag_gen_next(g) : g;
		}
		b += n;
	}
	return 0;
}

int lwc_write_meta(struct graid_array *a, const struct sop *s, unsigned member, uint64_t off,
		   uint32_t len, uint32_t *meta)
{
	const struct layout *l = &a->lay; /* its chunk (the same in both geometries of a grow) */
	uint64_t b = off / TAG_DATA_BLOCK, end = (off + len) / TAG_DATA_BLOCK, first = b;
	struct lwc_row w;
	int rc = 0;

	if (off % TAG_DATA_BLOCK || len % TAG_DATA_BLOCK)
		return -EINVAL;
	if (s && !sop_is_bad(s, member)) {
		rc = lwc_own_meta(a, s, member, b, end, meta);
		if (rc != -EAGAIN)
			return rc;
		rc = 0;
	}
	w.pk = NULL;
	while (b < end && rc == 0) {
		uint64_t stripe = b * TAG_DATA_BLOCK / l->chunk;
		uint64_t row_end = (stripe + 1) * l->chunk / TAG_DATA_BLOCK;
		unsigned n = (unsigned)((end < row_end ? end : row_end) - b), role;

		if (n > LWC_BATCH)
			n = LWC_BATCH;
		rc = lwc_row_load(a, &w, stripe, b, n, LWC_LOAD);
		/* A job's write beside a role out: judged as the rebuild judged it. */
		w.judge_out = !s;
		role = rc == 0 ? layout_member_role(w.l, stripe, member) : 0;
		if (rc == 0 && role >= w.nroles)
			rc = -EINVAL;
		for (unsigned c = 0; rc == 0 && c < n; c++)
			meta[b + c - first] = lwc_column_meta(a, &w, s, role, c);
		b += n;
	}
	lwc_row_free(&w);
	return rc;
}

/*
 * One located column of a scrubbed row: rebuilt in @p blk, and with @p io->write_col
 * written. *@p refused set where a data block's rebuild reproduced its stale bytes.
 */
static int lwc_scrub_col(struct graid_array *a, const struct lwc_scrub_io *io,
			 const struct lwc_row *w, unsigned c, unsigned col, struct lwc_verdict v,
			 uint8_t **ptrs, bool *refused, uint64_t *healed)
{
	const struct layout *l = &a->lay;
	int rc = 0;

	if (v.kind == LWC_DATA) {
		/* From P: the others and P are what the column was before the lost write. */
		memcpy(ptrs[v.j], ptrs[l->ndata], TAG_DATA_BLOCK);
		for (unsigned d = 0; d < l->ndata; d++)
			for (unsigned x = 0; d != v.j && x < TAG_DATA_BLOCK; x++)
				ptrs[v.j][x] ^= ptrs[d][x];
		/*
		 * The rebuild is the stale block again (its own tag's CRC holds on it): the other
		 * blocks were rebuilt with it in place, or the lost write rewrote the same bytes.
		 * Not healed here (nothing shows which): reported -EIO, the row left uncompared;
		 * a read of the block judges it again.
		 */
		if (lwc_crc_holds(a, w, c, v.j, ptrs[v.j])) {
			csum_report_lost_write(a, (int)w->member[v.j], w->block0 + c, 1, -EIO);
			*refused = true;
			return 0;
		}
		if (io->write_col)
			rc = io->write_col(io->arg, w->stripe, v.j, col, ptrs[v.j]);
		csum_report_lost_write(a, (int)w->member[v.j], w->block0 + c, 1,
				       io->write_col && rc == 0 ? 0 : -EIO);
		*healed += io->write_col && rc == 0;
		return rc;
	}
	/* A parity behind: made from the data, its record from the data's generations. */
	rc = graid_parity_gen(a->be, l->ndata, l->nparity, TAG_DATA_BLOCK, 1, ptrs);
	for (unsigned p = 0; rc == 0 && p < l->nparity; p++) {
		if (!((v.pmask >> p) & 1u))
			continue;
		if (io->write_col)
			rc = io->write_col(io->arg, w->stripe, l->ndata + p, col,
					   ptrs[l->ndata + p]);
		csum_report_lost_write(a, (int)w->member[l->ndata + p], w->block0 + c, 1,
				       io->write_col && rc == 0 ? 0 : -EIO);
		*healed += io->write_col && rc == 0;
	}
	return rc;
}

int lwc_scrub_row(struct graid_array *a, const struct lwc_scrub_io *io, uint64_t row,
		  uint8_t **blk, const struct bbl_cols *skip, bool *unlocated, uint64_t *healed)
{
	const struct layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity, cols = l->chunk / TAG_DATA_BLOCK;
	uint8_t scratch[2 * TAG_DATA_BLOCK] __attribute__((aligned(64)));
	uint8_t *ptrs[GRAID_MAX_MEMBERS], save[TAG_DATA_BLOCK];
	struct lwc_row w;
	int rc = 0;

	*unlocated = false;
	if (!lwc_active(a))
		return 0;
	w.pk = NULL;
	for (unsigned c0 = 0; c0 < cols && rc == 0; c0 += LWC_BATCH) {
		unsigned n = cols - c0 < LWC_BATCH ? cols - c0 : LWC_BATCH;

		if (lwc_row_load(a, &w, row, row * (l->chunk / TAG_DATA_BLOCK) + c0, n, LWC_LOAD))
			continue; /* tags that cannot be read: their CRCs judge, not this */
		for (unsigned c = 0; c < n && rc == 0; c++) {
			struct lwc_verdict v = lwc_judge(&w, l, c, false);

			/* Settled with the erasures (lwc_scrub_erasures()): not reported twice. */
			if (skip && bbl_cols_test(skip, c0 + c))
				continue;
			for (unsigned r = 0; r < nroles; r++)
				ptrs[r] = blk[r] + (size_t)(c0 + c) * TAG_DATA_BLOCK;
			if (v.kind == LWC_DATA_Q) {
				/* Q judges the rebuild; the data block is put back if it fails. */
				memcpy(save, ptrs[v.j], TAG_DATA_BLOCK);
				v.kind = lwc_q_holds(a, l->ndata, ptrs, v.j, scratch) ? LWC_DATA
									    : LWC_UNLOCATED;
				memcpy(ptrs[v.j], save, TAG_DATA_BLOCK);
			}
			if (v.kind == LWC_UNLOCATED) {
				csum_report_lost_write(a, -1, w.block0 + c, 1, -EIO);
				*unlocated = true;
			} else if (v.kind == LWC_DATA || v.kind == LWC_PARITY) {
				rc = lwc_scrub_col(a, io, &w, c, c0 + c, v, ptrs, unlocated, healed);
			}
		}
	}
	lwc_row_free(&w);
	return rc;
}

/* @p role of column @p c of @p w added to the erasures: pending as a lost write. */
static void lwc_erase(struct graid_array *a, const struct lwc_row *w, unsigned c, unsigned col,
		      unsigned role, struct bbl_cols *era, struct lwc_scrub_cols *sc, bool past)
{
	const unsigned m = w->member[role];

	bbl_cols_set(&era[role], col);
	bbl_cols_set(&sc->added, col);
	/* @p past: the write-back's csum_report_lost() settles it (-EIO), once. */
	if (csum_pend_add_lost(&a->members[m].role.csum_pend, w->block0 + c, 0) && a->read_only &&
	    !past)
		csum_report_lost_write(a, (int)m, w->block0 + c, 1, -EIO);
}

/*
 * lwc_scrub_erasures() of column @p c of @p w (column @p col of the row's chunks), @p nerased
 * of its roles erased, the last @p x. A block the records locate stale outside the erasures
 * is one too: rebuilt with its stale bytes in place, the erased blocks would come out wrong
 * (and P, Q made consistent with them by construction, nothing after could tell). Within
 * the parities the column is rebuilt whole; past them, or where the records mismatch but
 * place nothing (nothing checks the rebuild), it is set in @p lost: nothing of it written.
 */
static void lwc_scrub_erased_col(struct graid_array *a, const struct lwc_row *w, unsigned c,
				 unsigned col, unsigned nerased, unsigned x, uint8_t *const *blk,
				 struct bbl_cols *era, struct lwc_scrub_cols *sc)
{
	const struct layout *l = &a->lay;
	uint8_t scratch[2 * TAG_DATA_BLOCK] __attribute__((aligned(64)));
	uint8_t *ptrs[GRAID_MAX_MEMBERS], save[2][TAG_DATA_BLOCK];
	struct lwc_verdict v = lwc_judge(w, l, c, false);
	bool confirmed = true;

	if (v.kind == LWC_UNLOCATED) {
		csum_report_lost_write(a, -1, w->block0 + c, 1, -EIO);
		bbl_cols_set(&sc->lost, col);
		return;
	}
	if ((v.kind == LWC_DATA || v.kind == LWC_DATA_Q) && !bbl_cols_test(&era[v.j], col)) {
		if (v.kind == LWC_DATA_Q && nerased == 1) {
			for (unsigned r = 0; r < w->nroles; r++)
				ptrs[r] = blk[r] + (size_t)col * TAG_DATA_BLOCK;
			memcpy(save[0], ptrs[v.j], TAG_DATA_BLOCK);
			memcpy(save[1], ptrs[x], TAG_DATA_BLOCK);
			/* As lwc_q_confirms(): the erased block's bytes as read first. */
			confirmed = lwc_q_holds(a, l->ndata, ptrs, v.j, scratch) ||
				    lwc_two_hold(a, w, c, ptrs, v.j, x);
			/* As read: row_heal_parity() rebuilds what is erased. */
			memcpy(ptrs[v.j], save[0], TAG_DATA_BLOCK);
			memcpy(ptrs[x], save[1], TAG_DATA_BLOCK);
		}
		if (!confirmed) /* as a read finds it: placed on no member */
			csum_report_lost_write(a, -1, w->block0 + c, 1, -EIO);
		else
			lwc_erase(a, w, c, col, v.j, era, sc, nerased + 1 > l->nparity);
		if (!confirmed || nerased + 1 > l->nparity)
			bbl_cols_set(&sc->lost, col);
		return;
	}
	/*
	 * RAID-6, the erased block is the one the records name: two stale blocks can name
	 * their mean, so its rebuild from P must give the Q the column holds, or the column
	 * is lost (a wrong rebuild under a fresh tag otherwise).
	 */
	if ((v.kind == LWC_DATA || v.kind == LWC_DATA_Q) && l->nparity == 2 && nerased == 1) {
		for (unsigned r = 0; r < w->nroles; r++)
			ptrs[r] = blk[r] + (size_t)col * TAG_DATA_BLOCK;
		memcpy(save[0], ptrs[v.j], TAG_DATA_BLOCK);
		confirmed = lwc_q_holds(a, l->ndata, ptrs, v.j, scratch);
		memcpy(ptrs[v.j], save[0], TAG_DATA_BLOCK);
		if (!confirmed) {
			csum_report_lost_write(a, -1, w->block0 + c, 1, -EIO);
			bbl_cols_set(&sc->lost, col);
		}
		return;
	}
	for (unsigned p = 0; v.kind == LWC_PARITY && p < l->nparity; p++)
		if ((v.pmask >> p) & 1u && !bbl_cols_test(&era[l->ndata + p], col))
			nerased++;
	for (unsigned p = 0; v.kind == LWC_PARITY && p < l->nparity; p++)
		if ((v.pmask >> p) & 1u && !bbl_cols_test(&era[l->ndata + p], col))
			lwc_erase(a, w, c, col, l->ndata + p, era, sc, nerased > l->nparity);
	if (nerased > l->nparity)
		bbl_cols_set(&sc->lost, col);
}

/* lwc_scrub_erasures(), and with @p out lwc_rebuild_erasures(). */
static void lwc_erasures(struct graid_array *a, uint64_t row, uint8_t *const *blk,
			 struct bbl_cols *era, struct lwc_scrub_cols *sc, bool out)
{
	const struct layout *l = &a->lay;
	const unsigned cols = l->chunk / TAG_DATA_BLOCK, nroles = l->ndata + l->nparity;
	struct lwc_row w;

	if (!lwc_active(a))
		return;
	w.pk = NULL;
	for (unsigned c0 = 0; c0 < cols; c0 += LWC_BATCH) {
		unsigned n = cols - c0 < LWC_BATCH ? cols - c0 : LWC_BATCH;
		bool judged = lwc_row_load(a, &w, row, row * cols + c0, n, LWC_LOAD) == 0;

		w.judge_out = out;
		for (unsigned c = 0; c < n; c++) {
			unsigned nerased = 0, x = 0;

			for (unsigned r = 0; r < nroles; r++)
				if (bbl_cols_test(&era[r], c0 + c)) {
					nerased++;
					x = r;
				}
			if (nerased == 0 || bbl_cols_test(&sc->lost, c0 + c))
				continue;
			/* Tags that cannot be read: nothing places a stale block; reads check. */
			if (!judged)
				bbl_cols_set(&sc->hold, c0 + c);
			else
				lwc_scrub_erased_col(a, &w, c, c0 + c, nerased, x, blk, era, sc);
		}
	}
	lwc_row_free(&w);
}

void lwc_scrub_erasures(struct graid_array *a, uint64_t row, uint8_t *const *blk,
			struct bbl_cols *era, struct lwc_scrub_cols *sc)
{
	lwc_erasures(a, row, blk, era, sc, false);
}

void lwc_rebuild_erasures(struct graid_array *a, uint64_t row, uint8_t *const *blk,
			  struct bbl_cols *era, struct lwc_scrub_cols *sc)
{
	lwc_erasures(a, row, blk, era, sc, true);
}

bool lwc_rebuild_suspect(struct graid_array *a, uint64_t row)
{
	const struct layout *l = &a->lay;
	const unsigned cols = l->chunk / TAG_DATA_BLOCK;
	bool any = false;
	struct lwc_row w;

	if (!lwc_active(a))
		return false;
	w.pk = NULL;
	for (unsigned c0 = 0; c0 < cols && !any; c0 += LWC_BATCH) {
		unsigned n = cols - c0 < LWC_BATCH ? cols - c0 : LWC_BATCH;

		if (lwc_row_load(a, &w, row, row * cols + c0, n, LWC_LOAD))
			continue; /* tags that cannot be read: nothing places a stale block */
		w.judge_out = true;
		for (unsigned c = 0; c < n && !any; c++) {
			enum lwc_kind k = lwc_judge(&w, l, c, false).kind;

			any = k != LWC_OK && k != LWC_UNCHECKED;
		}
	}
	lwc_row_free(&w);
	return any;
}
