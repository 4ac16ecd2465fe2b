/* SPDX-License-Identifier: MIT */
/* Command-line options of array_bench, with the defaults of docs/BENCH-ARRAY.md. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ab.h"

static void opts_usage(FILE *out)
{
	fprintf(out,
		"usage: array_bench [options]\n"
		"  --dir DIR        where member files go (default /dev/shm: RAM-backed)\n"
		"  --levels LIST    RAID levels, e.g. 0,5,6 (default; 1 and 10 work too)\n"
		"  --members N      member files (default 6)\n"
		"  --devices LIST   comma-separated block devices (or files) to use as the\n"
		"                   members instead of files under --dir: their data is\n"
		"                   overwritten (to compare with md on the same drives); the\n"
		"                   runs keep to --member-mib of data per member\n"
		"  --force          with --devices: even over a libgraid array on them\n"
		"  --member-mib M   data MiB per member, past 1 MiB of metadata (default 256)\n"
		"  --chunk SIZE     chunk, e.g. 64K (default), 4K .. 1M\n"
		"  --backend NAME   parity engine (default: GRAID_BACKEND, else auto)\n"
		"  --seconds S      per profile and target (default 2)\n"
		"  --repeat N       N rounds per profile, array and JBOD alternating, figures summed\n"
		"                   over them (default 1); steadier ratios on a shared machine\n"
		"  --threads T      threads, one queue each (default 2)\n"
		"  --qd LIST        queue depth per thread, e.g. 1,32 (default 32)\n"
		"  --profiles LIST  subset of: 4k-randread,4k-randwrite,4k-70-30,64k-randwrite,\n"
		"                   1m-seqread,1m-seqwrite (default all)\n"
		"  --csv FILE       also write every row as CSV\n"
		"  --seed N         seed of the offsets and data (default 1)\n"
		"  --quick          32 MiB members, 0.3 s per profile, first qd only\n"
		"  --journal MODE   RAID-5/6 write-hole journal: off (default), on, or both\n"
		"                   (each parity level plain, then journalled, and the cost)\n"
		"  --degraded N     fail N members (1, or 2 on RAID-6) after the prefill: the\n"
		"                   profiles run degraded (ratios still against healthy JBOD)\n"
		"  --io-timeout MS  set the array's per-I/O timeout (reads then go through the\n"
		"                   library's buffers: this measures that cost; default off)\n"
		"  --one-thread on|off  each thread's queue made with GRAID_QUEUE_F_ONE_THREAD\n"
		"                   (its ring defers completion work to the thread's waits,\n"
		"                   where the kernel can; default on)\n"
		"  --only SIDE      run only the array or only the jbod side (for a profiler:\n"
		"                   the other side's figures and the ratios read as 0)\n"
		"  --histograms-ab  instead of the profiles: 4k-randread with the array's latency\n"
		"                   histograms off, then on (GRAID_STATS_HISTOGRAMS), --repeat\n"
		"                   rounds alternating, same threads and qd; both IOPS and on/off\n"
		"  --checksums-ab   instead of the profiles: per level, an array without and one\n"
		"                   with per-block checksums (GRAID_CREATE_CHECKSUMS) on two sets\n"
		"                   of files; 4k-randread, 128 KiB sequential writes and RAID-5/6\n"
		"                   full-stripe writes, --repeat rounds alternating; on/off\n");
}

static int opts_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* A comma list of unsigned numbers into @p v (at most @p max). */
static int opts_list(const char *s, unsigned *v, unsigned max, unsigned *n)
{
	char *copy = strdup(s), *save = NULL, *tok;

	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long x = strtoul(tok, &end, 10);

		if (*n == max || end == tok || *end) {
			free(copy);
			return -1;
		}
		v[(*n)++] = (unsigned)x;
	}
	free(copy);
	return *n ? 0 : -1;
}

static int opts_profiles(struct ab_opts *o, const char *s)
{
	char *copy = strdup(s), *save = NULL, *tok;

	o->nprofiles = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct ab_profile *p = ab_profile_find(tok);

		if (!p || o->nprofiles == sizeof(o->profiles) / sizeof(o->profiles[0])) {
			fprintf(stderr, "array_bench: unknown profile %s\n", tok);
			free(copy);
			return -1;
		}
		o->profiles[o->nprofiles++] = p;
	}
	free(copy);
	return o->nprofiles ? 0 : -1;
}

enum { OPT_DIR = 256, OPT_LEVELS, OPT_MEMBERS, OPT_MIB, OPT_CHUNK, OPT_BACKEND, OPT_SECONDS,
       OPT_REPEAT, OPT_THREADS, OPT_QD, OPT_PROFILES, OPT_CSV, OPT_SEED, OPT_QUICK, OPT_JOURNAL,
       OPT_ONLY, OPT_DEGRADED, OPT_IO_TIMEOUT, OPT_DEVICES, OPT_FORCE, OPT_ONE_THREAD,
       OPT_HIST_AB, OPT_CSUM_AB, OPT_HELP };

int ab_opts_parse(struct ab_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "levels", required_argument, NULL, OPT_LEVELS },
		{ "members", required_argument, NULL, OPT_MEMBERS },
		{ "member-mib", required_argument, NULL, OPT_MIB },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "qd", required_argument, NULL, OPT_QD },
		{ "profiles", required_argument, NULL, OPT_PROFILES },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "journal", required_argument, NULL, OPT_JOURNAL },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "degraded", required_argument, NULL, OPT_DEGRADED },
		{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },
		{ "devices", required_argument, NULL, OPT_DEVICES },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "one-thread", required_argument, NULL, OPT_ONE_THREAD },
		{ "histograms-ab", no_argument, NULL, OPT_HIST_AB },
		{ "checksums-ab", no_argument, NULL, OPT_CSUM_AB },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	bool have_mib = false, have_seconds = false;
	unsigned levels[8];
	uint64_t v;
	int c;

	*o = (struct ab_opts){ .dir = "/dev/shm", .levels = { 0, 5, 6 }, .nlevels = 3,
			       .members = 6, .data_bytes = 256ull << 20, .chunk = 64 * 1024,
			       .seconds = 2.0, .repeat = 1, .threads = 2, .qds = { 32 }, .nqds = 1,
			       .seed = 1, .queue_flags = GRAID_QUEUE_F_ONE_THREAD };
	for (unsigned i = 0; i < ab_nprofiles; i++)
		o->profiles[o->nprofiles++] = &ab_profiles[i];
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DIR:
			o->dir = optarg;
			break;
		case OPT_LEVELS:
			if (opts_list(optarg, levels, 8, &o->nlevels))
				goto bad;
			for (unsigned i = 0; i < o->nlevels; i++)
				o->levels[i] = (int)levels[i];
			break;
		case OPT_MEMBERS:
			o->members = (unsigned)strtoul(optarg, NULL, 10);
			if (o->members < 2 || o->members > GRAID_MAX_MEMBERS)
				goto bad;
			break;
		case OPT_MIB:
			o->data_bytes = strtoull(optarg, NULL, 10) << 20;
			have_mib = true;
			if (!o->data_bytes)
				goto bad;
			break;
		case OPT_CHUNK:
			if (opts_size(optarg, &v) || v < 4096 || v > (1u << 20) || (v & (v - 1)))
				goto bad;
			o->chunk = (uint32_t)v;
			break;
		case OPT_BACKEND:
			o->backend = optarg;
			break;
		case OPT_SECONDS:
			o->seconds = strtod(optarg, NULL);
			have_seconds = true;
			if (!(o->seconds > 0))
				goto bad;
			break;
		case OPT_REPEAT:
			o->repeat = (unsigned)strtoul(optarg, NULL, 10);
			if (o->repeat < 1 || o->repeat > AB_MAX_REPEAT)
				goto bad;
			break;
		case OPT_THREADS:
			o->threads = (unsigned)strtoul(optarg, NULL, 10);
			if (o->threads < 1 || o->threads > 1024)
				goto bad;
			break;
		case OPT_QD:
			if (opts_list(optarg, o->qds, 8, &o->nqds))
				goto bad;
			for (unsigned i = 0; i < o->nqds; i++)
				if (o->qds[i] < 1 || o->qds[i] > 4096)
					goto bad;
			break;
		case OPT_PROFILES:
			if (opts_profiles(o, optarg))
				goto bad;
			break;
		case OPT_CSV:
			o->csv = optarg;
			break;
		case OPT_SEED:
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case OPT_QUICK:
			o->quick = true;
			break;
		case OPT_JOURNAL:
			if (!strcmp(optarg, "off"))
				o->journal = AB_JOURNAL_OFF;
			else if (!strcmp(optarg, "on"))
				o->journal = AB_JOURNAL_ON;
			else if (!strcmp(optarg, "both"))
				o->journal = AB_JOURNAL_BOTH;
			else
				goto bad;
			break;
		case OPT_ONLY:
			if (!strcmp(optarg, "array"))
				o->only = AB_SIDE_ARRAY;
			else if (!strcmp(optarg, "jbod"))
				o->only = AB_SIDE_JBOD;
			else
				goto bad;
			break;
		case OPT_DEGRADED:
			o->degraded = (unsigned)strtoul(optarg, NULL, 10);
			if (o->degraded > 2)
				goto bad;
			break;
		case OPT_IO_TIMEOUT: {
			char *end;
			unsigned long ms = strtoul(optarg, &end, 10);

			if (end == optarg || *end || ms > GRAID_IO_TIMEOUT_MAX_MS)
				goto bad;
			o->io_timeout_ms = (unsigned)ms;
			break;
		}
		case OPT_DEVICES: {
			/* A copy to cut up: argv stays whole for the header's command line. */
			char *list = strdup(optarg), *save = NULL, *tok;

			if (!list)
				goto bad;
			o->ndevices = 0;
			for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (o->ndevices == GRAID_MAX_MEMBERS)
					goto bad;
				o->devices[o->ndevices++] = tok;
			}
			if (o->ndevices < 2)
				goto bad;
			break;
		}
		case OPT_FORCE:
			o->force = true;
			break;
		case OPT_ONE_THREAD:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				goto bad;
			o->queue_flags = strcmp(optarg, "on") ? 0 : GRAID_QUEUE_F_ONE_THREAD;
			break;
		case OPT_CSUM_AB:
			o->csum_ab = true;
			break;
		case OPT_HIST_AB:
			o->hist_ab = true;
			break;
		case OPT_HELP:
			opts_usage(stdout);
			return 1;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if (o->ndevices)
		o->members = o->ndevices;
	/* --quick shrinks what was not set explicitly, so `--quick --seconds 1` still works. */
	if (o->quick) {
		if (!have_mib)
			o->data_bytes = 32ull << 20;
		if (!have_seconds)
			o->seconds = 0.3;
		o->nqds = 1;
	}
	return 0;
bad:
	opts_usage(stderr);
	return -1;
}
