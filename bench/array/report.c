/* SPDX-License-Identifier: MIT */
/* Output: one table per level and queue depth, CSV rows, and the issue's targets. */
#include <string.h>

#include "ab.h"

static double report_ratio(const struct ab_row *r)
{
	return r->best_iops > 0 ? r->arr.iops / r->best_iops : 0;
}

/* Member I/Os per array request (JBOD: 1 by construction). */
static double report_mio(const struct ab_row *r)
{
	return r->arr.all_ios ? (double)r->arr.member_ios / (double)r->arr.all_ios : 0;
}

void ab_report_table(FILE *out, const struct ab_row *rows, unsigned nrows)
{
	char rule[64];

	fprintf(out, "%-14s %11s %7s %9s %9s %8s %11s %11s %6s %7s  %s\n", "profile",
		"array IOPS", "GB/s", "avg us", "p99 us", "CPU s/GB", "JBOD IOPS", "best case",
		"ratio", "mIO/req", "best-case rule");
	for (unsigned i = 0; i < nrows; i++) {
		const struct ab_row *r = &rows[i];

		ab_best_rule(&r->g, r->p, rule, sizeof(rule));
		fprintf(out, "%-14s %11.0f %7.3f %9.1f %9.1f %8.2f %11.0f %11.0f %6.2f %7.2f  %s\n",
			r->p->name, r->arr.iops, r->arr.gbps, r->arr.avg_us, r->arr.p99_us,
			r->arr.cpu_s_per_gb, r->jbod.iops, r->best_iops, report_ratio(r),
			report_mio(r), rule);
	}
}

void ab_report_csv_header(FILE *csv)
{
	fprintf(csv, "level,journal,members,chunk,dir,io,threads,qd,seconds,profile,bs,read_pct,"
		     "array_iops,array_gbps,array_avg_us,array_p99_us,array_cpu_s_per_gb,"
		     "jbod_iops,jbod_gbps,jbod_avg_us,jbod_p99_us,jbod_cpu_s_per_gb,"
		     "best_iops,ratio,member_ios_per_req\n");
}

void ab_report_csv_row(FILE *csv, const struct ab_row *r, unsigned threads, double seconds,
		       const char *dir, bool direct)
{
	fprintf(csv, "%d,%d,%u,%u,%s,%s,%u,%u,%.2f,%s,%u,%u,%.0f,%.4f,%.2f,%.2f,%.3f,"
		     "%.0f,%.4f,%.2f,%.2f,%.3f,%.0f,%.4f,%.3f\n",
		r->g.level, r->g.journal, r->g.n, r->g.chunk, dir, direct ? "direct" : "buffered", threads, r->qd,
		seconds, r->p->name, r->p->bs, r->p->read_pct, r->arr.iops, r->arr.gbps,
		r->arr.avg_us, r->arr.p99_us, r->arr.cpu_s_per_gb, r->jbod.iops, r->jbod.gbps,
		r->jbod.avg_us, r->jbod.p99_us, r->jbod.cpu_s_per_gb, r->best_iops,
		report_ratio(r), report_mio(r));
}

struct report_target {
	int level;
	const char *profile;
	const char *against;
	double goal;
	/* RAID-6 random writes: the issue fixes the divisor at 6, whatever the member count. */
	double jbod_div;
};

static const struct report_target report_targets[] = {
	{ .level = 0, .profile = "4k-randread", .against = "JBOD 4k-randread IOPS",
	  .goal = 0.90 },
	{ .level = 6, .profile = "1m-seqwrite", .against = "(n-2)/n x JBOD write bandwidth",
	  .goal = 0.70 },
	{ .level = 6, .profile = "4k-randwrite", .against = "JBOD 4k-randwrite IOPS / 6",
	  .goal = 0.80, .jbod_div = 6 },
};

void ab_report_targets(FILE *out, const struct ab_row *rows, unsigned nrows, bool ram_backed)
{
	fprintf(out, "\ntargets (ratios from this run, shown not asserted%s):\n",
		ram_backed ? "" : "; the targets are set for RAM-backed members");
	for (size_t t = 0; t < sizeof(report_targets) / sizeof(report_targets[0]); t++) {
		const struct report_target *tg = &report_targets[t];
		bool any = false;

		for (unsigned i = 0; i < nrows; i++) {
			const struct ab_row *r = &rows[i];
			double ratio, share, by_cpu = 0;

			if (r->g.level != tg->level || r->g.journal || strcmp(r->p->name, tg->profile))
				continue;
			if (!tg->jbod_div)
				ratio = report_ratio(r);
			else
				ratio = r->jbod.iops > 0 ? r->arr.iops * tg->jbod_div / r->jbod.iops
							 : 0;
			/*
			 * The same comparison per CPU second instead of per wall second: what the
			 * ratio would be if both sides got the same CPU, which a shared machine
			 * does not promise from one round to the next.
			 */
			share = tg->jbod_div ? 1.0 / tg->jbod_div
					     : (r->jbod.iops > 0 ? r->best_iops / r->jbod.iops : 0);
			if (r->arr.cpu_s_per_gb > 0 && share > 0)
				by_cpu = r->jbod.cpu_s_per_gb / (r->arr.cpu_s_per_gb * share);
			fprintf(out, "  RAID-%d %-13s vs %-32s qd %-3u %5.2f  (goal >= %.2f) %-7s "
				     "by CPU time %.2f\n",
				tg->level, tg->profile, tg->against, r->qd, ratio, tg->goal,
				ratio >= tg->goal ? "met" : "NOT met", by_cpu);
			any = true;
		}
		if (!any)
			fprintf(out, "  RAID-%d %-13s vs %-32s not measured (level or profile not run)\n",
				tg->level, tg->profile, tg->against);
	}
}

void ab_report_journal(FILE *out, const struct ab_row *rows, unsigned nrows)
{
	fprintf(out, "\nWhat the write-hole journal costs (same run, same members):\n");
	fprintf(out, "  %-8s %-14s %4s %12s %12s %8s %10s %10s\n", "level", "profile", "qd",
		"plain IOPS", "journal IOPS", "ratio", "plain p99", "jrnl p99");
	for (unsigned i = 0; i < nrows; i++) {
		const struct ab_row *j = &rows[i];

		if (!j->g.journal)
			continue;
		for (unsigned k = 0; k < nrows; k++) {
			const struct ab_row *p = &rows[k];

			if (p->g.journal || p->g.level != j->g.level || p->qd != j->qd ||
			    p->p != j->p)
				continue;
			fprintf(out, "  RAID-%-3d %-14s %4u %12.0f %12.0f %8.2f %8.0fus %8.0fus\n",
				j->g.level, j->p->name, j->qd, p->arr.iops, j->arr.iops,
				p->arr.iops > 0 ? j->arr.iops / p->arr.iops : 0, p->arr.p99_us,
				j->arr.p99_us);
		}
	}
}
