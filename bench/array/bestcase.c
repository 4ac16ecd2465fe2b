/* SPDX-License-Identifier: MIT */
/* The most a RAID level can deliver, derived from the JBOD figure measured in the same run. */
#include "ab.h"

static unsigned best_nparity(int level)
{
	return level == 6 ? 2 : level == 5 ? 1 : 0;
}

/*
 * Member I/Os one small (sub-stripe) parity write costs at best: read-modify-write reads and
 * rewrites the k data chunks it touches and every parity (2(k+p)); reconstruct-write reads
 * the other data chunks and writes the rest (n). A good engine picks the cheaper.
 */
static unsigned best_small_write_ios(unsigned n, unsigned p, unsigned k)
{
	unsigned rmw = 2 * (k + p);

	return rmw < n ? rmw : n;
}

/*
 * Array writes per member write, in bytes: 1 for RAID-0, 1/n for RAID-1, 1/2 for RAID-10,
 * (n-p)/n for full-stripe parity writes, and 1/(member I/Os per write) below a stripe.
 * Sequential streams are taken as full stripes (ideal merging), whatever their alignment.
 */
static double best_write_eff(const struct ab_geom *g, const struct ab_profile *pr)
{
	unsigned p = best_nparity(g->level);
	unsigned ndata = g->n - p;
	uint64_t stripe = (uint64_t)ndata * g->chunk;
	uint32_t unit;
	unsigned k;

	switch (g->level) {
	case 0:
		return 1.0;
	case 1:
		return 1.0 / g->n;
	case 10:
		return 0.5;
	default:
		break;
	}
	if (pr->seq || pr->bs % stripe == 0)
		return (double)ndata / g->n;
	unit = pr->bs < g->chunk ? pr->bs : g->chunk;
	k = (pr->bs + g->chunk - 1) / g->chunk;
	return (double)pr->bs / ((double)best_small_write_ios(g->n, p, k) * unit);
}

double ab_best_iops(const struct ab_geom *g, const struct ab_profile *p, double jbod_iops)
{
	double r = p->read_pct / 100.0;
	double w = best_write_eff(g, p);

	/* Reads never touch parity: every level reads at JBOD speed. A mix costs, per array
	 * request, r member I/Os for its reads plus (1-r)/w for its writes. */
	return jbod_iops / (r + (1.0 - r) / w);
}

void ab_best_rule(const struct ab_geom *g, const struct ab_profile *p, char *buf, size_t len)
{
	double w = best_write_eff(g, p);

	if (p->read_pct == 100)
		snprintf(buf, len, "JBOD");
	else if (p->read_pct == 0)
		snprintf(buf, len, "JBOD x %.3f", w);
	else
		snprintf(buf, len, "JBOD / (%.2f + %.2f x %.2f)", p->read_pct / 100.0,
			 1.0 - p->read_pct / 100.0, 1.0 / w);
}
