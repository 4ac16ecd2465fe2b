/* SPDX-License-Identifier: MIT */
/*
 * RAID-5 -> RAID-6 Q-last (docs/RESHAPE.md): the record's geometry, the start's refusals,
 * and the one thing the RAID-5/6 job does otherwise (it writes Q alone). Q-last keeps data
 * and P where the RAID-5 had them, so the window math (reshape_map.c) finds no overlap at any
 * position: no staging, one pass.
 */
#include <errno.h>

#include "format/layout.h"
#include "jobs/reshape_qlast.h"

bool reshape_qlast_record(const struct reshape_record *r)
{
	return r->old_geo.level == 5 && r->old_geo.layout == RESHAPE_LAYOUT_DEFAULT &&
	       r->new_geo.level == 6 && r->new_geo.layout == RESHAPE_LAYOUT_Q_LAST &&
	       r->new_geo.nmembers == r->old_geo.nmembers + 1 &&
	       r->new_geo.chunk_bytes == r->old_geo.chunk_bytes &&
	       r->new_geo.data_bytes == r->old_geo.data_bytes;
}

void reshape_qlast_geom(struct reshape_geom *g)
{
	g->level = 6;
	g->layout = RESHAPE_LAYOUT_Q_LAST;
}

int reshape_qlast_check(const struct graid_array *a, unsigned n)
{
	if (a->lay.level != 5) {
		graid__log(GRAID_LOG_ERR, "grow: only a RAID-5 becomes a RAID-6 by adding a "
					  "member; this array is a RAID-%d%s", a->lay.level,
			   a->lay.level == 6 ? " already" : "");
		return -EOPNOTSUPP;
	}
	if (a->csum) {
		/*
		 * Its Q would be written alone, by a path that gives no tags their records in the
		 * new geometry (docs/RESHAPE.md, "Checksums across a grow"): not built.
		 */
		graid__log(GRAID_LOG_ERR, "grow: a RAID-5 with checksums cannot become a RAID-6 "
					  "online by this build");
		return -EOPNOTSUPP;
	}
	if (n != 1) {
		graid__log(GRAID_LOG_ERR, "grow: a RAID-5 becomes a RAID-6 by adding exactly one "
					  "member (the one that holds Q), not %u", n);
		return -EINVAL;
	}
	if (a->nmembers + 1 < 4) {
		/*
		 * Q-last moves no data, but a RAID-6 has four members at least (format/layout.c:
		 * two data, P and Q), so there is no RAID-6 of three to convert to.
		 */
		graid__log(GRAID_LOG_ERR, "grow: a RAID-6 has four members at least; a RAID-5 of "
					  "%u becomes one only once grown to three members (a "
					  "plain grow first)", a->nmembers);
		return -EINVAL;
	}
	return 0;
}

bool reshape_qlast_no_grow(const struct graid_array *a)
{
	if (a->lay.layout_id != LAYOUT_Q_LAST)
		return false;
	graid__log(GRAID_LOG_ERR, "grow: a RAID-6 with Q on its last member (a RAID-5 converted "
				  "by adding one) cannot be grown by this build");
	return true;
}

bool reshape_qlast_rows_kept(const struct array_reshape *rs)
{
	return rs->new_lay.layout_id == LAYOUT_Q_LAST && rs->old_lay.level == 5;
}

bool reshape_qlast_kept(const struct array_reshape *rs, unsigned role)
{
	/* Not Q: a data chunk or P, the same bytes at the same place in both geometries. */
	return reshape_qlast_rows_kept(rs) && role < rs->new_lay.ndata + 1;
}

uint64_t reshape_qlast_per_member(const struct reshape_record *r,
				  const struct array_reshape *rs, uint64_t bytes)
{
	if (reshape_qlast_record(r))
		return bytes / rs->new_lay.ndata; /* a Q chunk per row of data chunks */
	return bytes / rs->new_lay.nmembers;
}
