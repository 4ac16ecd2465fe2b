/* SPDX-License-Identifier: MIT */
/* Two-geometry placement and window math against a brute-force model of FORMAT.md. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "format/reshape_map.h"

#define C 4096u

/*
 * The model: what member m holds in row r, straight from docs/FORMAT.md "Placement", with
 * no code of layout.c: a data chunk's index (>= 0), or one of these.
 */
#define M_NONE (-1)
#define M_P (-2)
#define M_Q (-3)

struct mgeo {
	int level;
	unsigned n;
	bool qlast;
	uint64_t rows;
};

static int64_t m_raid5(unsigned n, uint64_t r, unsigned m)
{
	unsigned p = (n - 1) - (unsigned)(r % n);

	if (m == p)
		return M_P;
	return (int64_t)(r * (n - 1) + (m + n - p - 1) % n);
}

static int64_t m_cell(const struct mgeo *g, uint64_t r, unsigned m)
{
	unsigned n = g->n, p;
	uint64_t slot;

	if (m >= n || r >= g->rows)
		return M_NONE;
	switch (g->level) {
	case 0:
		return (int64_t)(r * n + m);
	case 5:
		return m_raid5(n, r, m);
	case 6:
		if (g->qlast)
			return m == n - 1 ? M_Q : m_raid5(n - 1, r, m);
		p = (n - 1) - (unsigned)(r % n);
		if (m == p)
			return M_P;
		if (m == (p + 1) % n)
			return M_Q;
		return (int64_t)(r * (n - 2) + (m + 2 * n - p - 2) % n);
	default: /* 10 */
		slot = r * n + m;
		return slot / 2 < n * g->rows / 2 ? (int64_t)(slot / 2) : M_NONE;
	}
}

static uint64_t m_chunks(const struct mgeo *g)
{
	switch (g->level) {
	case 0: return g->n * g->rows;
	case 5: return (g->n - 1) * g->rows;
	case 6: return (g->n - 2) * g->rows;
	default: return g->n * g->rows / 2;
	}
}

/* The first copy of chunk @p c: scanning row by row finds the lower slot first. */
static void m_find(const struct mgeo *g, uint64_t c, unsigned *member, uint64_t *row)
{
	for (uint64_t r = 0; r < g->rows; r++)
		for (unsigned m = 0; m < g->n; m++)
			if (m_cell(g, r, m) == (int64_t)c) {
				*member = m;
				*row = r;
				return;
			}
	cr_assert_fail("chunk %llu not in the model", (unsigned long long)c);
}

struct pair {
	const char *name;
	struct mgeo o, w;
};

/* The cases, small; rows enough that staging fits on the added member. */
static const struct pair pairs[] = {
	{ "RAID-0 3->4", { 0, 3, false, 24 }, { 0, 4, false, 24 } },
	{ "RAID-5 4->5", { 5, 4, false, 64 }, { 5, 5, false, 64 } },
	{ "RAID-6 6->7", { 6, 6, false, 128 }, { 6, 7, false, 128 } },
	{ "RAID-10 4->6", { 10, 4, false, 24 }, { 10, 6, false, 24 } },
	{ "RAID-10 3->4", { 10, 3, false, 25 }, { 10, 4, false, 25 } },
	{ "RAID-5(4)->RAID-6(5) Q-last", { 5, 4, false, 24 }, { 6, 5, true, 24 } },
	{ "RAID-6 4->5", { 6, 4, false, 48 }, { 6, 5, false, 48 } },
	/* An odd count: a chunk's two copies in two rows of the new geometry. */
	{ "RAID-10 2->3", { 10, 2, false, 25 }, { 10, 3, false, 25 } },
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

static struct reshape_record p_record(const struct pair *p, uint64_t position, uint32_t phase)
{
	struct reshape_record r;

	memset(&r, 0, sizeof(r));
	r.generation = 1;
	r.old_geo = (struct reshape_geom){ p->o.level, p->o.n, C, 0, p->o.rows * C };
	r.new_geo = (struct reshape_geom){ p->w.level, p->w.n, C,
					   p->w.qlast ? RESHAPE_LAYOUT_Q_LAST : 0, p->w.rows * C };
	r.nadded = p->w.n - p->o.n;
	r.position = position;
	r.phase = phase;
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	return r;
}

static void p_map(const struct pair *p, const struct reshape_record *r, struct reshape_map *m)
{
	uint8_t buf[RESHAPE_COPY_BYTES];
	struct reshape_record back;
	const char *why = "";

	/* Every record the tests use is one the format accepts. */
	reshape_encode(r, buf);
	cr_assert_eq(reshape_decode(buf, &back, &why), 0, "%s: %s", p->name, why);
	cr_assert_eq(reshape_map_init(m, &back), 0);
}

/* Every chunk (three bytes of it) where the model says, for one position. */
static void check_locate(const struct pair *p, const struct reshape_map *m, uint64_t pos,
			 uint64_t stage_end, unsigned stage_role, uint64_t stage_off)
{
	uint64_t end_c = m_chunks(&p->o) < m_chunks(&p->w) ? m_chunks(&p->o) : m_chunks(&p->w);
	static const uint32_t in_chunk[] = { 0, 1234, C - 1 };

	for (uint64_t c = 0; c < m_chunks(&p->w); c++)
		for (unsigned k = 0; k < 3; k++) {
			uint64_t a = c * C + in_chunk[k], row;
			bool is_new = a < pos || c >= end_c;
			struct reshape_loc loc;
			unsigned member;

			cr_assert_eq(reshape_locate(m, a, &loc), 0);
			if (!is_new && a < stage_end) {
				cr_assert_eq(loc.in, RESHAPE_IN_STAGED, "%s pos %llu chunk %llu",
					     p->name, (unsigned long long)pos,
					     (unsigned long long)c);
				cr_assert_eq(loc.member, stage_role);
				cr_assert_eq(loc.member_off, stage_off + a);
				continue;
			}
			m_find(is_new ? &p->w : &p->o, c, &member, &row);
			cr_assert_eq(loc.in, is_new ? RESHAPE_IN_NEW : RESHAPE_IN_OLD,
				     "%s pos %llu chunk %llu", p->name, (unsigned long long)pos,
				     (unsigned long long)c);
			cr_assert_eq(loc.member, member,
				     "%s pos %llu chunk %llu: member %u, model %u", p->name,
				     (unsigned long long)pos, (unsigned long long)c, loc.member,
				     member);
			cr_assert_eq(loc.member_off, row * C + in_chunk[k], "%s chunk %llu",
				     p->name, (unsigned long long)c);
		}
	cr_assert_eq(reshape_locate(m, m_chunks(&p->w) * C, &(struct reshape_loc){ 0 }), -ERANGE);
}

Test(reshape_map, every_byte_in_the_old_new_and_mixed_states_is_where_the_model_says)
{
	for (unsigned i = 0; i < NPAIRS; i++) {
		const struct pair *p = &pairs[i];
		uint64_t end_c = m_chunks(&p->o) < m_chunks(&p->w) ? m_chunks(&p->o)
								   : m_chunks(&p->w);

		for (uint64_t pc = 0; pc <= end_c; pc++) {
			struct reshape_record r = p_record(p, pc * C, RESHAPE_PHASE_COPY);
			struct reshape_map m;

			if (pc == end_c)
				r.phase = RESHAPE_PHASE_FINISHING;
			p_map(p, &r, &m);
			check_locate(p, &m, pc * C, 0, 0, 0);
		}
	}
}

Test(reshape_map, the_staged_range_is_read_from_the_staged_copy_until_it_is_moved)
{
	const struct pair *p = &pairs[1]; /* RAID-5 4->5 */
	struct reshape_record r = p_record(p, 0, RESHAPE_PHASE_STAGED);
	struct reshape_map m;

	r.stage_bytes = 12 * C;
	r.stage_role[0] = 4;
	r.stage_member_off[0] = 50 * C;
	for (uint64_t pc = 0; pc < 12; pc++) {
		r.position = pc * C;
		p_map(p, &r, &m);
		check_locate(p, &m, pc * C, 12 * C, 4, 50 * C);
	}
	/* Moved: COPY, the staged copy no longer read. */
	r.phase = RESHAPE_PHASE_COPY;
	r.position = 12 * C;
	p_map(p, &r, &m);
	check_locate(p, &m, 12 * C, 0, 0, 0);
}

Test(reshape_map, a_backward_record_has_the_new_geometry_from_the_position_on)
{
	/* RAID-5 5->4 (a shrink): the moved bytes are the new, smaller size. */
	const struct pair shrink = { "RAID-5 5->4", { 5, 5, false, 16 }, { 5, 4, false, 16 } };
	uint64_t end = m_chunks(&shrink.w) * C;

	for (uint64_t pos = 0; pos <= end; pos += C) {
		struct reshape_record r = p_record(&shrink, pos, RESHAPE_PHASE_COPY);
		struct reshape_map m;

		r.nadded = 0;
		r.direction = RESHAPE_BACKWARD;
		p_map(&shrink, &r, &m);
		for (uint64_t c = 0; c < m_chunks(&shrink.w); c++) {
			bool is_new = c * C >= pos;
			struct reshape_loc loc;
			unsigned member;
			uint64_t row;

			cr_assert_eq(reshape_locate(&m, c * C + 7, &loc), 0);
			m_find(is_new ? &shrink.w : &shrink.o, c, &member, &row);
			cr_assert_eq(loc.in, is_new ? RESHAPE_IN_NEW : RESHAPE_IN_OLD);
			cr_assert_eq(loc.member, member);
			cr_assert_eq(loc.member_off, row * C + 7);
		}
		cr_assert_eq(reshape_window(&m, 0, C, &(struct reshape_window){ 0 }), -EOPNOTSUPP);
	}
}

/* Whether new parity cell content equals the old: same kind, same row data. */
static bool m_row_same(const struct pair *p, uint64_t r)
{
	unsigned n = p->w.n > p->o.n ? p->w.n : p->o.n;

	for (unsigned m = 0; m < n; m++) {
		int64_t o = m_cell(&p->o, r, m), w = m_cell(&p->w, r, m);

		if ((o >= 0 || w >= 0) && o != w)
			return false;
	}
	return true;
}

static bool m_changed(const struct pair *p, uint64_t r, unsigned m)
{
	int64_t o = m_cell(&p->o, r, m), w = m_cell(&p->w, r, m);

	if (o >= 0 || w >= 0)
		return o != w;
	return o != w || (o != M_NONE && !m_row_same(p, r));
}

/* The highest chunk old row @p r holds, or -1. */
static int64_t m_old_row_max(const struct pair *p, uint64_t r)
{
	int64_t max = -1;

	for (unsigned m = 0; m < p->o.n; m++)
		if (m_cell(&p->o, r, m) > max)
			max = m_cell(&p->o, r, m);
	return max;
}

static bool m_has_parity(const struct mgeo *g)
{
	return g->level == 5 || g->level == 6;
}

/* The cells of old members window [c0, c1) writes: whole rows with parity, else its chunks. */
static bool m_writes(const struct pair *p, uint64_t c0, uint64_t c1, uint64_t r, unsigned m)
{
	int64_t w = m_cell(&p->w, r, m);

	if (!m_changed(p, r, m))
		return false;
	if (m_has_parity(&p->w)) {
		/* Rows holding any of the window's chunks. */
		for (unsigned k = 0; k < p->w.n; k++) {
			int64_t x = m_cell(&p->w, r, k);

			if (x >= (int64_t)c0 && x < (int64_t)c1)
				return true;
		}
		return false;
	}
	return w >= (int64_t)c0 && w < (int64_t)c1;
}

/* The model's verdict: a written old cell holds a chunk >= c0, or parity of a row holding one. */
static bool m_overlap(const struct pair *p, uint64_t c0, uint64_t c1)
{
	for (uint64_t r = 0; r < p->w.rows; r++)
		for (unsigned m = 0; m < p->o.n; m++) {
			int64_t o = m_cell(&p->o, r, m);

			if (!m_writes(p, c0, c1, r, m))
				continue;
			if (o >= (int64_t)c0)
				return true;
			if ((o == M_P || o == M_Q) && m_old_row_max(p, r) >= (int64_t)c0)
				return true;
		}
	return false;
}

Test(reshape_map, the_overlap_of_every_window_is_the_models)
{
	for (unsigned i = 0; i < NPAIRS; i++) {
		const struct pair *p = &pairs[i];
		struct reshape_record r = p_record(p, 0, RESHAPE_PHASE_COPY);
		struct reshape_map m;
		uint64_t unit, end_c;
		unsigned seen[2] = { 0, 0 };

		p_map(p, &r, &m);
		unit = reshape_window_unit(&m) / C;
		end_c = m.end / C;
		cr_assert_eq(unit, m_has_parity(&p->w) ? p->w.n - (p->w.level == 5 ? 1 : 2) : 1);
		for (uint64_t c0 = 0; c0 < end_c; c0 += unit)
			for (uint64_t len = 1; len <= 6 * unit && c0 + len <= end_c; len++) {
				struct reshape_window w;
				bool want = m_overlap(p, c0, c0 + len);

				cr_assert_eq(reshape_window(&m, c0 * C, len * C, &w), 0);
				cr_assert_eq(w.overlap, want,
					     "%s window [%llu, %llu): %d, model %d", p->name,
					     (unsigned long long)c0, (unsigned long long)(c0 + len),
					     w.overlap, want);
				seen[want]++;
			}
		/* Growth by rows with parity overlaps at the start; the others never do. */
		if (m_has_parity(&p->w) && p->w.n - p->o.n == 1 && !p->w.qlast)
			cr_assert(seen[1] > 0, "%s: some window overlaps", p->name);
		cr_assert(seen[0] > 0, "%s: some window is safe", p->name);
	}
}

Test(reshape_map, windows_out_of_range_are_refused)
{
	struct reshape_record r = p_record(&pairs[1], 0, RESHAPE_PHASE_COPY);
	struct reshape_window w;
	struct reshape_map m;

	p_map(&pairs[1], &r, &m);
	cr_assert_eq(reshape_window(&m, 0, 0, &w), -EINVAL);
	cr_assert_eq(reshape_window(&m, 512, C, &w), -EINVAL);
	cr_assert_eq(reshape_window(&m, 0, C + 512, &w), -EINVAL);
	cr_assert_eq(reshape_window(&m, m.end - C, 2 * C, &w), -EINVAL);
	cr_assert_eq(reshape_window(&m, m.end - C, C, &w), 0);
	/* RAID-5 4->5: three old rows hold the first four new rows' data. */
	cr_assert_eq(reshape_window(&m, 0, 16 * C, &w), 0);
	cr_assert_eq(w.new_row0, 0);
	cr_assert_eq(w.new_row1, 3);
	cr_assert_eq(w.old_row0, 0);
	cr_assert_eq(w.old_row1, 5);
	cr_assert_eq(w.nwritten, 4);
	cr_assert(w.overlap);
}

/*
 * The whole reshape on model cells: stage what reshape_stage_need() says on the added
 * member, move it, then windows of reshape_safe_bytes(); after each window's writes (as if
 * a crash tore them) every byte not yet covered by the new position must still be whole in
 * its old place, its old row's parity too, and every byte passed whole in its new place.
 */
static void simulate(const struct pair *p)
{
	struct reshape_record r = p_record(p, 0, RESHAPE_PHASE_COPY);
	uint64_t unit, end_c, stage = 0, room, pos;
	int64_t *cell;
	struct reshape_map m;
	unsigned windows = 0;

	p_map(p, &r, &m);
	unit = reshape_window_unit(&m) / C;
	end_c = m.end / C;
	cr_assert_eq(reshape_stage_need(&m, unit * C, &stage), 0, "%s", p->name);
	room = reshape_stage_room(&m);
	cr_assert_leq(stage, room, "%s: staging %llu fits in %llu", p->name,
		      (unsigned long long)stage, (unsigned long long)room);
	cr_assert_eq(stage % (unit * C), 0);
	/* Memory: what each (row, member) of the new member count holds now. */
	cell = calloc(p->w.rows * p->w.n, sizeof(*cell));
	cr_assert_not_null(cell);
	for (uint64_t row = 0; row < p->w.rows; row++)
		for (unsigned k = 0; k < p->w.n; k++)
			cell[row * p->w.n + k] = k < p->o.n ? m_cell(&p->o, row, k) : M_NONE;
	pos = 0;
	while (pos < end_c) {
		uint64_t len;

		if (pos == 0 && stage) {
			len = stage / C; /* from the staged copy: overlap allowed */
		} else {
			len = reshape_safe_bytes(&m, pos * C, UINT64_MAX) / C;
			cr_assert(len >= unit || pos + len == end_c, "%s at %llu: %llu", p->name,
				  (unsigned long long)pos, (unsigned long long)len);
		}
		/* Write the window's new cells, as the job would (old members and added ones). */
		for (uint64_t row = 0; row < p->w.rows; row++)
			for (unsigned k = 0; k < p->w.n; k++)
				if (m_writes(p, pos, pos + len, row, k) ||
				    (k >= p->o.n && m_cell(&p->w, row, k) >= (int64_t)pos &&
				     m_cell(&p->w, row, k) < (int64_t)(pos + len)))
					cell[row * p->w.n + k] = m_cell(&p->w, row, k);
		/* Torn or not, nothing at or past pos is lost unless it was staged. */
		for (uint64_t c = pos; c < end_c; c++) {
			unsigned mo;
			uint64_t ro;

			if (pos == 0 && stage && c < stage / C)
				continue;
			m_find(&p->o, c, &mo, &ro);
			cr_assert_eq(cell[ro * p->w.n + mo], (int64_t)c, "%s: chunk %llu lost "
				     "moving [%llu, %llu)", p->name, (unsigned long long)c,
				     (unsigned long long)pos, (unsigned long long)(pos + len));
			for (unsigned k = 0; k < p->o.n; k++) {
				int64_t o = m_cell(&p->o, ro, k);

				if (o == M_P || o == M_Q)
					cr_assert_eq(cell[ro * p->w.n + k], o,
						     "%s: old row %llu's parity lost", p->name,
						     (unsigned long long)ro);
			}
		}
		pos += len;
		windows++;
		for (uint64_t c = 0; c < pos; c++) {
			unsigned mw;
			uint64_t rw;

			m_find(&p->w, c, &mw, &rw);
			cr_assert_eq(cell[rw * p->w.n + mw], (int64_t)c);
		}
	}
	/* Q-last moves nothing on the old members: one window is safe for all of it. */
	cr_assert(windows > 1 || p->w.qlast, "%s: %u windows", p->name, windows);
	free(cell);
}

Test(reshape_map, a_whole_reshape_by_safe_windows_loses_nothing_at_any_point)
{
	for (unsigned i = 0; i < NPAIRS; i++)
		simulate(&pairs[i]);
}

Test(reshape_map, staging_is_needed_exactly_where_rows_with_parity_grow)
{
	for (unsigned i = 0; i < NPAIRS; i++) {
		const struct pair *p = &pairs[i];
		struct reshape_record r = p_record(p, 0, RESHAPE_PHASE_COPY);
		struct reshape_map m;
		uint64_t stage = 1, unit;

		p_map(p, &r, &m);
		unit = reshape_window_unit(&m);
		cr_assert_eq(reshape_stage_need(&m, unit, &stage), 0);
		if (m_has_parity(&p->w) && !p->w.qlast) {
			/* k data chunks a row before, k + 1 after: k new rows, k (k + 1) chunks. */
			uint64_t k = p->o.n - (p->o.level == 5 ? 1 : 2);

			cr_assert_eq(stage, k * (k + 1) * C, "%s: %llu", p->name,
				     (unsigned long long)stage);
			cr_assert_eq(reshape_safe_bytes(&m, 0, UINT64_MAX), 0);
		} else {
			cr_assert_eq(stage, 0, "%s: %llu", p->name, (unsigned long long)stage);
		}
		/* Less staged is not enough: some later window has no safe unit. */
		if (stage) {
			uint64_t s = stage - unit, pos = s;

			while (pos < m.end) {
				uint64_t safe = reshape_safe_bytes(&m, pos, unit);

				if (safe < unit && pos + safe < m.end)
					break;
				pos += safe;
			}
			cr_assert_lt(pos, m.end, "%s: %llu staged would do", p->name,
				     (unsigned long long)s);
		}
	}
}

Test(reshape_map, q_last_places_data_and_p_as_raid5_and_q_on_the_last_member)
{
	struct reshape_record r = p_record(&pairs[5], 0, RESHAPE_PHASE_COPY);
	struct reshape_map m;

	p_map(&pairs[5], &r, &m);
	for (uint64_t s = 0; s < 24; s++) {
		unsigned pm = reshape_geo_parity(&m.new_g, s, 0);
		unsigned qm = reshape_geo_parity(&m.new_g, s, 1);

		cr_assert_eq(m_cell(&pairs[5].w, s, pm), M_P);
		cr_assert_eq(qm, 4);
		cr_assert_eq(pm, reshape_geo_parity(&m.old_g, s, 0), "P stays where RAID-5 had it");
		cr_assert_eq(reshape_geo_parity(&m.old_g, s, 1), GRAID_LAYOUT_NONE);
	}
	cr_assert_eq(m.new_g.lay.array_bytes, m.old_g.lay.array_bytes);
}
