/* SPDX-License-Identifier: MIT */
/* Command-line options of rebuild_bench, with the defaults of docs/BENCH-REBUILD.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"

static void opts_usage(FILE *out)
{
	fprintf(out,
		"usage: rebuild_bench [options]\n"
		"  --parts LIST       which parts: 1 rebuild throughput, 2 4k-randread during a\n"
		"                     rebuild, 3 reopen after an unclean shutdown, 4 growing by\n"
		"                     members (default 1,2,3,4)\n"
		"  --dir DIR          member files of parts 1 and 2 (default /dev/shm)\n"
		"  --dir2 DIR         sparse member files of part 3 (default /var/tmp: on disk)\n"
		"  --levels LIST      RAID levels of parts 1, 2 and 4 (default 6,5,1; part 4 takes\n"
		"                     0, 5, 6 and 10, and skips the others)\n"
		"  --grow-add K       part 4: members each grow adds (default 1)\n"
		"  --used-pct P       part 4: also grow an array only P%% written (4 MiB runs spread\n"
		"                     over it), its time beside the full grow's (default: full only)\n"
		"  --members N        members of RAID-0/5/6 (default 6; RAID-1 uses 2)\n"
		"  --member-mib M     data MiB per member, past 1 MiB of metadata (default 256)\n"
		"  --chunk SIZE       chunk, e.g. 64K (default), 4K .. 1M\n"
		"  --backend NAME     parity engine (default: GRAID_BACKEND, else auto)\n"
		"  --repeat N         part 1 rebuilds and part 3 trials per figure; medians (default 3)\n"
		"  --seconds S        part 2: measured seconds per row (default 3)\n"
		"  --threads T        part 2: reader threads, one queue each (default 2)\n"
		"  --qd N             part 2: reads in flight per thread (default 32)\n"
		"  --yields LIST      part 2: foreground_yield_us values (default 0,100,1000,\n"
		"                     10000)\n"
		"  --rate-mbps N      part 2: also cap the rebuild (max_bytes_per_sec), MB/s\n"
		"  --busy-mbps N      part 2: cap it while foreground I/O is in flight\n"
		"                     (busy_bytes_per_sec), MB/s: full speed when idle\n"
		"  --drive-mbps N     parts 1 and 2: every member (and every baseline file) behaves\n"
		"                     as a drive of its own that moves N MB/s, one I/O after another\n"
		"                     (the library's \"faulty:mbps=N:\" members); default off\n"
		"  --drive-iops N     ... and starts at most N I/Os per second\n"
		"  --reopen-mib LIST  part 3: data MiB per member (default 256,2048)\n"
		"  --dirty LIST       part 3: dirty 1 MiB regions per trial (default 1,10,100)\n"
		"  --seed N           seed of the data and offsets (default 1)\n"
		"  --quick            32 MiB members, 0.5 s rows, one repeat, dirty 1,10\n");
}

/* A comma list of unsigned numbers into @p v (at most RB_MAX_LIST). */
static int opts_list(const char *s, unsigned *v, unsigned *n)
{
	char *copy = strdup(s), *save = NULL, *tok;

	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long x = strtoul(tok, &end, 10);

		if (*n == RB_MAX_LIST || end == tok || *end) {
			free(copy);
			return -1;
		}
		v[(*n)++] = (unsigned)x;
	}
	free(copy);
	return *n ? 0 : -1;
}

static int opts_chunk(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (end == s || *end || v < 4096 || v > RB_MIB || (v & (v - 1)))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

enum { OPT_PARTS = 256, OPT_DIR, OPT_DIR2, OPT_LEVELS, OPT_MEMBERS, OPT_MIB, OPT_CHUNK,
       OPT_BACKEND, OPT_REPEAT, OPT_SECONDS, OPT_THREADS, OPT_QD, OPT_YIELDS, OPT_RATE, OPT_REOPEN,
       OPT_DIRTY, OPT_SEED, OPT_QUICK, OPT_DRIVE_MBPS, OPT_DRIVE_IOPS, OPT_BUSY, OPT_GROW_ADD, OPT_USED_PCT, OPT_HELP };

static const struct option opts_long[] = {
	{ "parts", required_argument, NULL, OPT_PARTS },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "dir2", required_argument, NULL, OPT_DIR2 },
	{ "levels", required_argument, NULL, OPT_LEVELS },
	{ "members", required_argument, NULL, OPT_MEMBERS },
	{ "member-mib", required_argument, NULL, OPT_MIB },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "qd", required_argument, NULL, OPT_QD },
	{ "yields", required_argument, NULL, OPT_YIELDS },
	{ "rate-mbps", required_argument, NULL, OPT_RATE },
	{ "busy-mbps", required_argument, NULL, OPT_BUSY },
	{ "reopen-mib", required_argument, NULL, OPT_REOPEN },
	{ "dirty", required_argument, NULL, OPT_DIRTY },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "drive-mbps", required_argument, NULL, OPT_DRIVE_MBPS },
	{ "drive-iops", required_argument, NULL, OPT_DRIVE_IOPS },
	{ "grow-add", required_argument, NULL, OPT_GROW_ADD },
	{ "used-pct", required_argument, NULL, OPT_USED_PCT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

/* Which options were given, so --quick shrinks only the others. */
struct opts_seen {
	bool mib, repeat, seconds, dirty;
};

static int opts_one(struct rb_opts *o, int c, struct opts_seen *seen)
{
	unsigned v[RB_MAX_LIST], n;

	switch (c) {
	case OPT_PARTS:
		if (opts_list(optarg, v, &n))
			return -1;
		memset(o->part, 0, sizeof(o->part));
		for (unsigned i = 0; i < n; i++) {
			if (v[i] < 1 || v[i] > 4)
				return -1;
			o->part[v[i]] = true;
		}
		return 0;
	case OPT_DIR:
		o->dir = optarg;
		return 0;
	case OPT_DIR2:
		o->dir2 = optarg;
		return 0;
	case OPT_LEVELS:
		if (opts_list(optarg, v, &o->nlevels))
			return -1;
		for (unsigned i = 0; i < o->nlevels; i++) {
			if (v[i] != 0 && v[i] != 1 && v[i] != 5 && v[i] != 6 && v[i] != 10)
				return -1;
			o->levels[i] = (int)v[i];
		}
		return 0;
	case OPT_MEMBERS:
		o->members = (unsigned)strtoul(optarg, NULL, 10);
		return o->members >= 4 && o->members <= GRAID_MAX_MEMBERS ? 0 : -1;
	case OPT_MIB:
		o->data_bytes = strtoull(optarg, NULL, 10) * RB_MIB;
		seen->mib = true;
		return o->data_bytes ? 0 : -1;
	case OPT_CHUNK:
		return opts_chunk(optarg, &o->chunk);
	case OPT_BACKEND:
		o->backend = optarg;
		return 0;
	case OPT_REPEAT:
		o->repeat = (unsigned)strtoul(optarg, NULL, 10);
		seen->repeat = true;
		return o->repeat >= 1 && o->repeat <= 100 ? 0 : -1;
	case OPT_SECONDS:
		o->seconds = strtod(optarg, NULL);
		seen->seconds = true;
		return o->seconds > 0 ? 0 : -1;
	case OPT_THREADS:
		o->threads = (unsigned)strtoul(optarg, NULL, 10);
		return o->threads >= 1 && o->threads <= 256 ? 0 : -1;
	case OPT_QD:
		o->qd = (unsigned)strtoul(optarg, NULL, 10);
		return o->qd >= 1 && o->qd <= 4096 ? 0 : -1;
	case OPT_YIELDS:
		return opts_list(optarg, o->yields, &o->nyields);
	case OPT_RATE:
		o->rate_mbps = strtoull(optarg, NULL, 10);
		return 0;
	case OPT_BUSY:
		o->busy_mbps = strtoull(optarg, NULL, 10);
		return 0;
	case OPT_REOPEN:
		return opts_list(optarg, o->reopen_mib, &o->nreopen);
	case OPT_DIRTY:
		seen->dirty = true;
		return opts_list(optarg, o->dirty, &o->ndirty);
	case OPT_GROW_ADD:
		o->grow_add = (unsigned)strtoul(optarg, NULL, 10);
		return o->grow_add >= 1 && o->grow_add <= 8 ? 0 : -1;
	case OPT_USED_PCT:
		o->used_pct = (unsigned)strtoul(optarg, NULL, 10);
		return o->used_pct >= 1 && o->used_pct <= 99 ? 0 : -1;
	case OPT_SEED:
		o->seed = strtoull(optarg, NULL, 0);
		return 0;
	case OPT_QUICK:
		o->quick = true;
		return 0;
	case OPT_DRIVE_MBPS:
	case OPT_DRIVE_IOPS:
		if (!GRAID_FAULT_INJECTION) {
			/* The drive model is the library's "faulty:mbps=N:" member. */
			fprintf(stderr, "--drive-mbps/--drive-iops need a libgraid built with "
					"-Dfault_injection (a release build leaves it out)\n");
			return -1;
		}
		if (c == OPT_DRIVE_IOPS) {
			o->drive_iops = strtoull(optarg, NULL, 10);
			return o->drive_iops ? 0 : -1;
		}
		o->drive_mbps = strtoull(optarg, NULL, 10);
		return o->drive_mbps ? 0 : -1;
	default:
		return -1;
	}
}

int rb_opts_parse(struct rb_opts *o, int argc, char **argv)
{
	struct opts_seen seen = { 0 };
	int c;

	*o = (struct rb_opts){ .dir = "/dev/shm", .dir2 = "/var/tmp", .levels = { 6, 5, 1 },
			       .nlevels = 3, .members = 6, .data_bytes = 256 * RB_MIB,
			       .chunk = 64 * 1024, .repeat = 3, .seconds = 3.0, .threads = 2,
			       .qd = 32, .yields = { 0, 100, 1000, 10000 }, .nyields = 4,
			       .reopen_mib = { 256, 2048 }, .nreopen = 2, .dirty = { 1, 10, 100 },
			       .ndirty = 3, .part = { false, true, true, true, true }, .grow_add = 1,
			       .seed = 1 };
	while ((c = getopt_long(argc, argv, "", opts_long, NULL)) != -1) {
		if (c == OPT_HELP) {
			opts_usage(stdout);
			return 1;
		}
		if (opts_one(o, c, &seen)) {
			opts_usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		opts_usage(stderr);
		return -1;
	}
	for (unsigned i = 0; i < o->nlevels && (o->part[1] || o->part[2]); i++)
		if (o->levels[i] == 0) {
			fprintf(stderr, "rebuild_bench: RAID-0 has nothing to rebuild: --levels 0 "
					"goes with --parts 4 only\n");
			return -1;
		}
	/* --quick shrinks what was not set explicitly, so `--quick --seconds 1` still works. */
	if (o->quick) {
		if (!seen.mib)
			o->data_bytes = 32 * RB_MIB;
		if (!seen.repeat)
			o->repeat = 1;
		if (!seen.seconds)
			o->seconds = 0.5;
		if (!seen.dirty)
			o->ndirty = 2;
	}
	return 0;
}
