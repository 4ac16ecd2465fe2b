/* SPDX-License-Identifier: MIT */
/* array_bench --checksums-ab: the same array without and with per-block checksums, in one run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_util.h"
#include "array/array.h"
#include "ab.h"

/*
 * The CPU's vector extensions as docs/PERFORMANCE.md lists them (every avx512*, gfni, avx2:
 * `grep -o 'avx512[a-z_]*\|gfni\|avx2' /proc/cpuinfo | sort -u`, whole names), and those the
 * CRC-32C routines use (sse4_2, pclmulqdq, vpclmulqdq).
 */
static int csum_ab_strcmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void csum_ab_cpu_flags(char *out, size_t len)
{
	static const char *const crc[] = { "sse4_2", "pclmulqdq", "vpclmulqdq" };
	char line[8192], *save = NULL, *tok[256];
	bool has_crc[3];
	unsigned nt = 0;
	size_t used = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && strncmp(line, "flags", 5))
		;
	fclose(f);
	if (strncmp(line, "flags", 5) || !strchr(line, ':'))
		return;
	for (unsigned i = 0; i < 3; i++) {
		char pat[32];

		snprintf(pat, sizeof(pat), " %s", crc[i]);
		has_crc[i] = strstr(line, pat) != NULL;
	}
	for (char *t = strtok_r(strchr(line, ':') + 1, " \n", &save); t && nt < 256;
	     t = strtok_r(NULL, " \n", &save))
		if (!strncmp(t, "avx512", 6) || !strcmp(t, "gfni") || !strcmp(t, "avx2"))
			tok[nt++] = t;
	qsort(tok, nt, sizeof(tok[0]), csum_ab_strcmp);
	out[0] = '\0';
	for (unsigned i = 0; i < nt && used + strlen(tok[i]) + 2 < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "", tok[i]);
	for (unsigned i = 0; i < 3; i++)
		if (has_crc[i] && used + strlen(crc[i]) + 20 < len)
			used += (size_t)snprintf(out + used, len - used, "%s%s", i == 0 ?
						 "; for CRC-32C: " : " ", crc[i]);
}

static int csum_ab_prefill(struct graid_array *a, uint64_t size, uint64_t seed)
{
	uint64_t len = size / (1u << 20) * (1u << 20);
	uint8_t *buf;
	int rc;

	if (posix_memalign((void **)&buf, 4096, 1u << 20))
		return -ENOMEM;
	for (uint32_t o = 0; o < (1u << 20); o += 8) {
		uint64_t v = ab_rand(&seed);

		memcpy(buf + o, &v, 8);
	}
	rc = ab_array_stream(a, true, buf, 0, len, 1u << 20, true);
	free(buf);
	return rc;
}

static int csum_ab_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* One profile: --repeat rounds, off and on back to back, the order flipping each round. */
static int csum_ab_profile(struct graid_array *arr[2], const struct ab_opts *o,
			   const struct ab_profile *p, uint64_t size, double target)
{
	static struct ab_hist hist[2]; /* off, on: not on the stack */
	struct ab_result res[2];
	struct ab_run_cfg cfg = { .p = p, .threads = o->threads, .qd = o->qds[0],
				  .seconds = o->seconds, .size = size, .seed = o->seed };
	double ratio[AB_MAX_REPEAT], med;
	int rc = 0;

	memset(hist, 0, sizeof(hist));
	memset(res, 0, sizeof(res));
	for (unsigned k = 0; k < o->repeat && rc == 0; k++) {
		double iops[2] = { 0, 0 };

		for (unsigned j = 0; j < 2 && rc == 0; j++) {
			unsigned on = j ^ (k & 1);
			uint64_t ios = res[on].ios;
			double secs = res[on].secs;

			rc = ab_run(&ab_array_ops, arr[on], &cfg, &res[on], &hist[on]);
			if (res[on].secs > secs)
				iops[on] = (double)(res[on].ios - ios) / (res[on].secs - secs);
		}
		ratio[k] = iops[0] > 0 ? iops[1] / iops[0] : 0;
	}
	if (rc)
		return rc;
	qsort(ratio, o->repeat, sizeof(ratio[0]), csum_ab_cmp);
	med = o->repeat % 2 ? ratio[o->repeat / 2]
			    : (ratio[o->repeat / 2 - 1] + ratio[o->repeat / 2]) / 2;
	ab_result_finish(&res[0], &hist[0]);
	ab_result_finish(&res[1], &hist[1]);
	printf("%-14s %7u %10.0f %8.3f %8.2f %10.0f %8.3f %8.2f %7.1f %% %7.1f %%  >= %.0f %%: %s\n",
	       p->name, p->bs >> 10, res[0].iops, res[0].gbps, res[0].cpu_s_per_gb, res[1].iops,
	       res[1].gbps, res[1].cpu_s_per_gb,
	       res[0].iops > 0 ? 100.0 * res[1].iops / res[0].iops : 0.0, 100.0 * med,
	       100.0 * target, 100.0 * med >= 100.0 * target ? "met" : "NOT met");
	/* The spread of the rounds' ratios, by which a median is read on a busy machine. */
	/* Quartiles by nearest rank from the bottom: ranks (n-1)/4 and 3(n-1)/4 of 0..n-1. */
	printf("#   %s, %u rounds' on/off: min %.1f %%, quartiles %.1f-%.1f %%, max %.1f %%\n",
	       p->name, o->repeat, 100.0 * ratio[0], 100.0 * ratio[(o->repeat - 1) / 4],
	       100.0 * ratio[3 * (o->repeat - 1) / 4], 100.0 * ratio[o->repeat - 1]);
	return 0;
}

static int csum_ab_create(const struct ab_members *m, const struct ab_opts *o, int level,
			  bool csum, struct graid_array **a)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = o->chunk, .backend = o->backend,
					  .flags = GRAID_CREATE_FORCE |
						   (csum ? GRAID_CREATE_CHECKSUMS : 0) };
	int rc = graid_array_create(m->paths, m->n, &cfg, a);

	if (rc)
		fprintf(stderr, "array_bench: RAID-%d create%s: %s\n", level,
			csum ? " with checksums" : "", graid_strerror(rc));
	/* Every checksummed array keeps write generations (lost writes, docs/INTEGRITY.md). */
	if (rc == 0 && csum)
		printf("array_bench: RAID-%d with checksums keeps generations: %s\n", level,
		       (*a)->csum_gens ? "yes" : "no");
	return rc;
}

/* Both arrays of one level, each on its own member files, filled; then the three profiles. */
static int csum_ab_level(const struct ab_members m[2], const struct ab_opts *o, int level)
{
	struct graid_array_info info[2] = { { .struct_size = sizeof(info[0]) },
					    { .struct_size = sizeof(info[1]) } };
	struct graid_array *arr[2] = { NULL, NULL };
	unsigned k = level == 6 ? o->members - 2 : level == 5 ? o->members - 1 : 1;
	struct ab_profile stripe = { .name = "stripe-write", .bs = (uint32_t)(k * o->chunk),
				     .read_pct = 0, .seq = true };
	const struct ab_profile seqw = { .name = "128k-seqwrite", .bs = 128u << 10,
					 .read_pct = 0, .seq = true };
	uint64_t size;
	int rc = 0;

	for (unsigned on = 0; on < 2 && rc == 0; on++) {
		rc = csum_ab_create(&m[on], o, level, on, &arr[on]);
		if (rc == 0)
			rc = graid_array_info(arr[on], &info[on]);
	}
	if (rc)
		goto out;
	/* The tag area comes out of the data area: both run on the smaller size. */
	size = info[0].size < info[1].size ? info[0].size : info[1].size;
	size -= size % stripe.bs;
	for (unsigned on = 0; on < 2 && rc == 0; on++)
		rc = csum_ab_prefill(arr[on], info[on].size, o->seed);
	if (rc)
		goto out;
	printf("\n== RAID-%d: %u members, chunk %u KiB, the first %llu MiB of each array, engine %s; "
	       "checksums off (created without) and on (GRAID_CREATE_CHECKSUMS, "
	       "graid_array_info.checksums %u), %u threads x qd %u, %u rounds of %.2f s each "
	       "side, alternating\n", level, info[0].nmembers, info[0].chunk_bytes >> 10,
	       (unsigned long long)(size >> 20), info[1].engine, info[1].checksums, o->threads,
	       o->qds[0], o->repeat, o->seconds);
	printf("%-14s %7s %10s %8s %8s %10s %8s %8s %9s %9s\n", "profile", "KiB", "off IOPS",
	       "GB/s", "CPU s/GB", "on IOPS", "GB/s", "CPU s/GB", "on/off", "median");
	rc = csum_ab_profile(arr, o, ab_profile_find("4k-randread"), size, 0.95);
	if (rc == 0)
		rc = csum_ab_profile(arr, o, &seqw, size, 0.90);
	if (rc == 0 && (level == 5 || level == 6))
		rc = csum_ab_profile(arr, o, &stripe, size, 0.90);
out:
	for (unsigned on = 0; on < 2; on++)
		if (arr[on])
			graid_array_close(arr[on]);
	return rc;
}

int ab_csum_ab(const struct ab_opts *o, const struct ab_members *m)
{
	struct ab_members both[2] = { *m };
	char flags[512];
	int rc = 0;

	if (m->given) {
		fprintf(stderr, "array_bench: --checksums-ab makes its two sets of member files "
				"under --dir; not with --devices\n");
		return -EINVAL;
	}
	csum_ab_cpu_flags(flags, sizeof(flags));
	printf("# checksums off against on; CPU flags: %s\n", flags);
	printf("# on/off: the on side's IOPS over the off side's, all rounds; median: of the "
	       "rounds' ratios (the figure to quote: it shrugs off a burst of other load)\n");
	if (ab_members_create(&both[1], o->dir, m->n, m->file_bytes))
		return -EIO;
	for (unsigned li = 0; li < o->nlevels && rc == 0; li++) {
		if (o->levels[li] == 0) {
			printf("\nRAID-0: no checksums (nothing to heal from): skipped\n");
			continue;
		}
		rc = csum_ab_level(both, o, o->levels[li]);
	}
	ab_members_remove(&both[1]);
	return rc;
}
