/* SPDX-License-Identifier: MIT */
/* Two-geometry placement during a reshape, and the window math of moving bytes in place. */
#include <errno.h>
#include <string.h>

#include "format/reshape_map.h"

static int geo_init(struct reshape_geo *g, const struct reshape_geom *r)
{
	int rc = reshape_geom_layout(r, &g->lay);

	if (rc)
		return rc;
	g->layout_id = r->layout;
	g->data = g->lay;
	if (r->layout == RESHAPE_LAYOUT_Q_LAST)
		rc = layout_init(&g->data, 5, r->nmembers - 1, r->chunk_bytes, r->data_bytes);
	return rc;
}

int reshape_map_init(struct reshape_map *m, const struct reshape_record *r)
{
	struct reshape_map out;

	memset(&out, 0, sizeof(out));
	if (geo_init(&out.old_g, &r->old_geo) || geo_init(&out.new_g, &r->new_geo))
		return -EINVAL;
	out.position = r->position;
	out.end = reshape_end(r);
	out.direction = r->direction;
	out.phase = r->phase;
	out.stage_array_off = r->stage_array_off;
	out.stage_bytes = r->stage_bytes;
	out.stage_role = r->stage_role[0];
	out.stage_member_off = r->stage_member_off[0];
	*m = out;
	return 0;
}

void reshape_geo_map(const struct reshape_geo *g, uint64_t array_off, struct layout_pos *pos)
{
	layout_map(&g->data, array_off, pos);
}

unsigned reshape_geo_parity(const struct reshape_geo *g, uint64_t stripe, unsigned which)
{
	if (g->layout_id == RESHAPE_LAYOUT_Q_LAST)
		return which == 1 ? g->lay.nmembers - 1
				  : layout_parity_member(&g->data, stripe, which);
	return layout_parity_member(&g->lay, stripe, which);
}

int reshape_locate(const struct reshape_map *m, uint64_t array_off, struct reshape_loc *loc)
{
	const struct reshape_geo *g;
	struct layout_pos pos;
	bool passed;

	if (array_off >= m->new_g.lay.array_bytes)
		return -ERANGE;
	if (m->direction == RESHAPE_FORWARD)
		passed = array_off < m->position || array_off >= m->end;
	else
		passed = array_off >= m->position;
	if (!passed && m->phase == RESHAPE_PHASE_STAGED && m->stage_bytes &&
	    array_off >= m->stage_array_off && array_off - m->stage_array_off < m->stage_bytes) {
		loc->in = RESHAPE_IN_STAGED;
		loc->member = m->stage_role;
		loc->member_off = m->stage_member_off + (array_off - m->stage_array_off);
		return 0;
	}
	g = passed ? &m->new_g : &m->old_g;
	reshape_geo_map(g, array_off, &pos);
	loc->in = passed ? RESHAPE_IN_NEW : RESHAPE_IN_OLD;
	loc->member = pos.member;
	loc->member_off = pos.member_off;
	return 0;
}

/* What one member holds in one row of a geometry. */
enum cell_kind { CELL_NONE, CELL_DATA, CELL_P, CELL_Q };

struct cell {
	enum cell_kind kind;
	uint64_t array_off;     /* CELL_DATA: the chunk's first array byte */
};

static struct cell geo_cell(const struct reshape_geo *g, uint64_t row, unsigned member)
{
	struct cell c = { CELL_NONE, 0 };
	uint64_t off = row * g->lay.chunk;
	unsigned role;

	if (member >= g->lay.nmembers || row >= g->lay.nstripes)
		return c;
	if (g->layout_id == RESHAPE_LAYOUT_Q_LAST && member == g->lay.nmembers - 1) {
		c.kind = CELL_Q;
		return c;
	}
	if (layout_unmap(&g->data, member, off, &c.array_off) == 0) {
		c.kind = CELL_DATA;
		return c;
	}
	if (g->data.nparity == 0)
		return c; /* RAID-10's unused last slot */
	role = layout_member_role(&g->data, row, member);
	c.kind = role == g->data.ndata ? CELL_P : CELL_Q;
	return c;
}

/* Row @p row holds the same data chunks at the same members in both geometries. */
static bool row_same(const struct reshape_map *m, uint64_t row)
{
	unsigned n = m->new_g.lay.nmembers > m->old_g.lay.nmembers ? m->new_g.lay.nmembers
								 : m->old_g.lay.nmembers;

	for (unsigned i = 0; i < n; i++) {
		struct cell o = geo_cell(&m->old_g, row, i), w = geo_cell(&m->new_g, row, i);

		if ((o.kind == CELL_DATA || w.kind == CELL_DATA) &&
		    (o.kind != w.kind || o.array_off != w.array_off))
			return false;
	}
	return true;
}

/* The highest data byte's chunk start that old row @p row holds; false: it holds none. */
static bool old_row_max(const struct reshape_map *m, uint64_t row, uint64_t *max)
{
	bool any = false;

	for (unsigned i = 0; i < m->old_g.lay.nmembers; i++) {
		struct cell c = geo_cell(&m->old_g, row, i);

		if (c.kind == CELL_DATA && (!any || c.array_off > *max)) {
			*max = c.array_off;
			any = true;
		}
	}
	return any;
}

/* Rows of geometry @p g holding copies of array bytes @p a (lowest) and @p b (highest). */
static void geo_rows(const struct reshape_geo *g, uint64_t a, uint64_t b, uint64_t *lo,
		     uint64_t *hi)
{
	unsigned members[GRAID_LAYOUT_MAX_MEMBERS];
	uint64_t off[GRAID_LAYOUT_MAX_MEMBERS];
	unsigned n = layout_copies(&g->data, a, members, off);

	*lo = UINT64_MAX;
	for (unsigned i = 0; i < n; i++)
		if (off[i] / g->lay.chunk < *lo)
			*lo = off[i] / g->lay.chunk;
	n = layout_copies(&g->data, b, members, off);
	*hi = 0;
	for (unsigned i = 0; i < n; i++)
		if (off[i] / g->lay.chunk > *hi)
			*hi = off[i] / g->lay.chunk;
}

/*
 * Whether writing the window [@p from, @p to)'s part of new row @p row would destroy, on an
 * old member, something not yet moved: a data chunk at or past @p from, or the parity of
 * an old row that still holds one. A new geometry with parity writes its rows whole (the
 * parity is computed over all of a row); one without writes the window's chunks only.
 */
static bool row_overlaps(const struct reshape_map *m, uint64_t row, uint64_t from,
			 uint64_t to, unsigned *written)
{
	bool same = row_same(m, row), hit = false, whole = m->new_g.data.nparity != 0;
	uint64_t max = 0;
	bool live = old_row_max(m, row, &max) && max + m->old_g.lay.chunk > from;

	for (unsigned i = 0; i < m->old_g.lay.nmembers; i++) {
		struct cell o = geo_cell(&m->old_g, row, i), w = geo_cell(&m->new_g, row, i);
		bool changed;

		if (!whole && !(w.kind == CELL_DATA && w.array_off >= from && w.array_off < to))
			continue; /* not this window's to write */
		if (o.kind == CELL_DATA || w.kind == CELL_DATA)
			changed = o.kind != w.kind || o.array_off != w.array_off;
		else
			changed = o.kind != w.kind || (o.kind != CELL_NONE && !same);
		if (!changed)
			continue;
		written[i] = 1;
		if (o.kind == CELL_DATA && o.array_off + m->old_g.lay.chunk > from)
			hit = true;
		if ((o.kind == CELL_P || o.kind == CELL_Q) && live)
			hit = true;
	}
	return hit;
}

uint64_t reshape_window_unit(const struct reshape_map *m)
{
	const struct layout *l = &m->new_g.data;

	return l->nparity ? (uint64_t)l->ndata * l->chunk : l->chunk;
}

int reshape_window(const struct reshape_map *m, uint64_t array_off, uint64_t bytes,
		   struct reshape_window *w)
{
	unsigned written[GRAID_LAYOUT_MAX_MEMBERS] = { 0 };
	uint32_t chunk = m->new_g.lay.chunk;
	struct reshape_window out;

	if (m->direction != RESHAPE_FORWARD || m->old_g.lay.chunk != chunk)
		return -EOPNOTSUPP;
	if (bytes == 0 || array_off % chunk || bytes % chunk || array_off > m->end ||
	    bytes > m->end - array_off)
		return -EINVAL;
	memset(&out, 0, sizeof(out));
	out.array_off = array_off;
	out.array_end = array_off + bytes;
	geo_rows(&m->old_g, array_off, out.array_end - 1, &out.old_row0, &out.old_row1);
	geo_rows(&m->new_g, array_off, out.array_end - 1, &out.new_row0, &out.new_row1);
	/* A parity row is written whole: the rest of its data is past the end, or moved. */
	for (uint64_t r = out.new_row0; r <= out.new_row1; r++)
		out.overlap |= row_overlaps(m, r, array_off, out.array_end, written);
	for (unsigned i = 0; i < m->old_g.lay.nmembers; i++)
		out.nwritten += written[i];
	*w = out;
	return 0;
}

uint64_t reshape_safe_bytes(const struct reshape_map *m, uint64_t array_off, uint64_t limit)
{
	uint64_t unit = reshape_window_unit(m), best = 0, lo = 1, hi;
	struct reshape_window w;

	if (array_off >= m->end)
		return 0;
	/* Units to the end, the last one cut short there. */
	hi = (m->end - array_off + unit - 1) / unit;
	if (limit / unit < hi)
		hi = limit / unit;
	/* A longer window writes more rows over the same sources: safety only shrinks. */
	while (lo <= hi) {
		uint64_t mid = lo + (hi - lo) / 2, bytes = mid * unit;

		if (bytes > m->end - array_off)
			bytes = m->end - array_off;
		if (reshape_window(m, array_off, bytes, &w) == 0 && !w.overlap) {
			best = bytes;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

int reshape_stage_need(const struct reshape_map *m, uint64_t want, uint64_t *bytes)
{
	uint64_t unit = reshape_window_unit(m);

	if (want < unit)
		want = unit;
	for (uint64_t s = 0; s < m->end; s += unit) {
		uint64_t p = s;

		/* Every later window, stepping by what is safe there, must be at least @p want. */
		while (p < m->end) {
			uint64_t safe = reshape_safe_bytes(m, p, want);

			if (safe < want && safe < m->end - p)
				break;
			p += safe;
		}
		if (p >= m->end) {
			*bytes = s;
			return 0;
		}
		/*
		 * Not s + safe: a window's safe length is not monotonic in its position (early
		 * ones gain from chunks that stay where they are), so every candidate is walked.
		 * A candidate that fails does so early, where windows are small.
		 */
	}
	return -ENOSPC;
}

uint64_t reshape_stage_room(const struct reshape_map *m)
{
	uint64_t lo, hi;

	if (m->end == 0)
		return m->new_g.lay.member_bytes;
	geo_rows(&m->new_g, m->end - 1, m->end - 1, &lo, &hi);
	return m->new_g.lay.member_bytes - (hi + 1) * m->new_g.lay.chunk;
}
