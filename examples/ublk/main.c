/* SPDX-License-Identifier: MIT */
/* graid-ublk: serves a libgraid array as the block device /dev/ublkbN until SIGINT/SIGTERM. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "metrics_http.h"
#include "ublk_srv.h"

/* Zero copy takes all three: registration by the driver, and pread/pwrite for the rest. */
#define GU_ZERO_COPY_FLAGS (UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_AUTO_BUF_REG | UBLK_F_USER_COPY)
/* The largest request: two full stripes of a 4+2 array with 64 KiB chunks. */
#define GU_MAX_IO_BYTES (512u << 10)
#define GU_MAX_QUEUES 64u
/* --health-interval's largest: a day (a longer one is as good as none). */
#define GU_HEALTH_INTERVAL_MAX_MS 86400000u

struct gu_opts {
	unsigned queues;
	unsigned depth;
	const char *backend;
	/* --rebuild-max-rate, --rebuild-busy-rate: bytes a second per member; 0 none */
	struct graid_rebuild_options rebuild;
	bool rebuild_set;
	unsigned io_timeout_ms;  /* --io-timeout: graid_array_set_io_timeout(), 0 none */
	/* --health-interval: graid_health_options::interval_ms (0: no watch) */
	unsigned health_interval_ms;
	bool health_set;
	const char *lease;       /* --lease: graid_open_options::lease, NULL none */
	bool takeover;           /* --takeover: GRAID_OPEN_TAKEOVER */
	bool reserve;            /* --reserve: GRAID_OPEN_RESERVE */
	const char *on_foreign;  /* --on-foreign CMD: run when the array goes foreign */
	bool no_control;         /* --control off: no control endpoint (docs/CONTROL.md) */
	const char *run_dir;     /* --run-dir: the endpoint's run directory, NULL the library's */
	const char *metrics;     /* --metrics ADDR:PORT: GET /metrics served there, NULL none */
	bool no_batch;           /* --batch off: the per-tag protocol even where batches exist */
	bool no_fixed;           /* --fixed-buffers off: tag buffers not registered with graid */
	bool no_zero_copy;       /* --zero-copy off: the driver copies each request's data */
	bool no_one_ring;        /* --one-ring off: the ublk commands on a ring of their own */
	bool no_defer;           /* --defer-taskrun off: the queue's ring runs completion work at once */
	/* --queue-cpus: where the queue threads run (the scheduler's choice by default) */
	enum { GU_CPUS_ANY, GU_CPUS_QUEUE, GU_CPUS_LIST } cpus_mode;
	cpu_set_t cpus;          /* GU_CPUS_LIST */
	const char *const *members;
	unsigned nmembers;
};

static void gu_usage(FILE *f)
{
	fprintf(f,
		"usage: graid-ublk [--queues N] [--depth D] [--backend NAME] MEMBER...\n"
		"Serve the libgraid array on MEMBER... as /dev/ublkbN (printed on stdout) until\n"
		"SIGINT or SIGTERM. Needs Linux 6.0+ with ublk_drv loaded, and CAP_SYS_ADMIN.\n"
		"  --queues N      hardware queues, one thread each (default 1, at most %u)\n"
		"  --depth D       requests in flight per queue (default 128, at most %u)\n"
		"  --backend NAME  parity engine: auto, ref, isal, opencl, cuda (default\n"
		"                  $GRAID_BACKEND, else auto)\n"
		"  --rebuild-max-rate SIZE   a rebuild that starts while serving (a hot spare\n"
		"                  taking over) moves at most SIZE bytes a second per member\n"
		"                  (K, M, G: powers of 1024)\n"
		"  --rebuild-busy-rate SIZE  ... and at most SIZE while requests are in flight\n"
		"  --io-timeout MS give up on a member I/O after MS milliseconds where the\n"
		"                  other members carry the array (default 0: never)\n"
		"  --health-interval MS  sample every NVMe member's health (SMART log) every\n"
		"                  MS milliseconds, at least %u, or 0: never (default 60000;\n"
		"                  the other health settings keep their defaults)\n"
		"  --lease SPEC    hold the array's lease while serving (graidctl lease-init)\n"
		"  --takeover      the array's superblocks name another host as its owner:\n"
		"                  take it over (that host must be down or hold no lease)\n"
		"  --reserve       hold a Write Exclusive persistent reservation on every\n"
		"                  member while serving: the drives refuse other hosts' writes\n"
		"                  (every member must support reservations; with --lease or\n"
		"                  --takeover those that do are reserved anyway)\n"
		"  --on-foreign CMD  when the array stops being this host's (taken over, lease\n"
		"                  lost, a drive's reservation taken), hold the requests that\n"
		"                  would fail, run CMD with /bin/sh (environment: GRAID_ARRAY_UUID,\n"
		"                  GRAID_UBLK_DEVICE), then fail them: CMD takes this host's\n"
		"                  export down first (graid-nvmet withdraw \"$GRAID_ARRAY_UUID\"),\n"
		"                  so clients see a path go away, not an I/O error\n"
		"  --queue-cpus WHERE  where the queue threads run: 'queue' (each on the CPUs\n"
		"                  that submit to its hardware queue, as ublksrv does), or a\n"
		"                  CPU list such as 0-3,8 (all of them there); default: where\n"
		"                  the scheduler puts them (docs/PERFORMANCE.md compares)\n"
		"  --batch auto|off  fetch and answer requests in batches where the driver\n"
		"                  can (UBLK_F_BATCH_IO; default auto), or one command per\n"
		"                  request as on older kernels (off)\n"
		"  --fixed-buffers on|off  register the request buffers with the array's queues\n"
		"                  so that member I/O pins no pages (default on)\n"
		"  --zero-copy auto|off  where the driver can (Linux 6.16+), member reads land\n"
		"                  in the client's pages (default auto; takes the place of\n"
		"                  batches, and needs --one-ring)\n"
		"  --one-ring auto|off  the ublk commands go through the array queue's ring,\n"
		"                  one wait for both, wherever batches are not used and the\n"
		"                  driver is 6.5+ (auto, the default), or a ring of their own\n"
		"  --defer-taskrun auto|off  each queue thread's graid queue is made for that\n"
		"                  one thread (GRAID_QUEUE_F_ONE_THREAD): the kernel keeps its\n"
		"                  completion work for the thread's next wait instead of\n"
		"                  interrupting it, where it can (Linux 6.1+; default auto)\n"
		"  --control on|off  serve the array's control endpoint, through which graidctl\n"
		"                  manages the array while it is served (default on)\n"
		"  --run-dir DIR   the endpoint's socket is DIR/UUID.ctl (default\n"
		"                  $GRAID_RUN_DIR, else /run/graid)\n"
		"  --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                  (PORT alone: 127.0.0.1; [IPV6]:PORT; docs/METRICS.md)\n",
		GU_MAX_QUEUES, UBLK_MAX_QUEUE_DEPTH, GRAID_HEALTH_INTERVAL_MIN_MS);
}

static int gu_number(const char *arg, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || v == 0 || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A byte count with an optional K, M or G (powers of 1024); 0 on success. */
static int gu_size(const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (errno || *end || end == arg || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A CPU list ("0-3,8") into @p set; 0 on success, -1 if malformed, empty or too large. */
static int gu_cpu_list(const char *arg, cpu_set_t *set)
{
	const char *p = arg;

	CPU_ZERO(set);
	while (*p) {
		char *end;
		unsigned long lo, hi;

		/* Digits only: strtoul would also take "+2", " 2" and "-2". */
		if (!isdigit((unsigned char)*p))
			return -1;
		errno = 0;
		lo = hi = strtoul(p, &end, 10);
		if (end == p || errno)
			return -1;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -1;
			hi = strtoul(p, &end, 10);
			if (end == p || errno || hi < lo)
				return -1;
		}
		if (hi >= CPU_SETSIZE)
			return -1;
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return -1;
		p = end;
	}
	return CPU_COUNT(set) ? 0 : -1;
}

/*
 * Every CPU of @p set is one this process may run on (online, in its cpuset): 0, or -1
 * with a message naming the first that is not. A thread pinned to none of them would not
 * start; to some of them, it would run on fewer than asked, without a word.
 */
static int gu_cpus_allowed(const cpu_set_t *set, const char *arg)
{
	cpu_set_t mine;

	if (sched_getaffinity(0, sizeof(mine), &mine))
		return 0; /* cannot tell: the threads fall back to anywhere if refused */
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, set) && !CPU_ISSET(c, &mine)) {
			fprintf(stderr, "graid-ublk: --queue-cpus %s: CPU %d is offline or not "
					"one this process may use (see taskset -p %ld)\n", arg, c,
				(long)getpid());
			return -1;
		}
	}
	return 0;
}

enum { GU_OPT_MAX_RATE = 256, GU_OPT_BUSY_RATE, GU_OPT_IO_TIMEOUT, GU_OPT_LEASE,
       GU_OPT_TAKEOVER, GU_OPT_RESERVE, GU_OPT_ON_FOREIGN, GU_OPT_QUEUE_CPUS,
       GU_OPT_BATCH, GU_OPT_FIXED, GU_OPT_ZERO_COPY, GU_OPT_ONE_RING, GU_OPT_DEFER,
       GU_OPT_CONTROL, GU_OPT_RUN_DIR, GU_OPT_METRICS, GU_OPT_HEALTH_INTERVAL };

/* 0, or 2 (usage error, message printed); exits 0 for --help. */
static int gu_parse(int argc, char **argv, struct gu_opts *o)
{
	static const struct option longopts[] = {
		{ "queues", required_argument, NULL, 'q' },
		{ "depth", required_argument, NULL, 'd' },
		{ "backend", required_argument, NULL, 'b' },
		{ "rebuild-max-rate", required_argument, NULL, GU_OPT_MAX_RATE },
		{ "rebuild-busy-rate", required_argument, NULL, GU_OPT_BUSY_RATE },
		{ "io-timeout", required_argument, NULL, GU_OPT_IO_TIMEOUT },
		{ "health-interval", required_argument, NULL, GU_OPT_HEALTH_INTERVAL },
		{ "lease", required_argument, NULL, GU_OPT_LEASE },
		{ "takeover", no_argument, NULL, GU_OPT_TAKEOVER },
		{ "reserve", no_argument, NULL, GU_OPT_RESERVE },
		{ "on-foreign", required_argument, NULL, GU_OPT_ON_FOREIGN },
		{ "queue-cpus", required_argument, NULL, GU_OPT_QUEUE_CPUS },
		{ "batch", required_argument, NULL, GU_OPT_BATCH },
		{ "fixed-buffers", required_argument, NULL, GU_OPT_FIXED },
		{ "zero-copy", required_argument, NULL, GU_OPT_ZERO_COPY },
		{ "one-ring", required_argument, NULL, GU_OPT_ONE_RING },
		{ "defer-taskrun", required_argument, NULL, GU_OPT_DEFER },
		{ "control", required_argument, NULL, GU_OPT_CONTROL },
		{ "run-dir", required_argument, NULL, GU_OPT_RUN_DIR },
		{ "metrics", required_argument, NULL, GU_OPT_METRICS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct gu_opts){ .queues = 1, .depth = 128 };
	while ((c = getopt_long(argc, argv, "q:d:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			if (gu_number(optarg, GU_MAX_QUEUES, &o->queues)) {
				fprintf(stderr, "graid-ublk: --queues: 1 .. %u\n", GU_MAX_QUEUES);
				return 2;
			}
			break;
		case 'd':
			if (gu_number(optarg, UBLK_MAX_QUEUE_DEPTH, &o->depth)) {
				fprintf(stderr, "graid-ublk: --depth: 1 .. %u\n",
					UBLK_MAX_QUEUE_DEPTH);
				return 2;
			}
			break;
		case 'b':
			o->backend = optarg;
			break;
		case GU_OPT_MAX_RATE:
		case GU_OPT_BUSY_RATE:
			if (gu_size(optarg, c == GU_OPT_MAX_RATE ? &o->rebuild.max_bytes_per_sec
								 : &o->rebuild.busy_bytes_per_sec)) {
				fprintf(stderr, "graid-ublk: --%s: a byte count, e.g. 50M, not '%s'\n",
					c == GU_OPT_MAX_RATE ? "rebuild-max-rate"
							     : "rebuild-busy-rate",
					optarg);
				return 2;
			}
			o->rebuild_set = true;
			break;
		case GU_OPT_LEASE:
			o->lease = optarg;
			break;
		case GU_OPT_TAKEOVER:
			o->takeover = true;
			break;
		case GU_OPT_RESERVE:
			o->reserve = true;
			break;
		case GU_OPT_ON_FOREIGN:
			o->on_foreign = optarg;
			break;
		case GU_OPT_BATCH:
			if (strcmp(optarg, "auto") && strcmp(optarg, "off")) {
				fprintf(stderr, "graid-ublk: --batch: 'auto' or 'off', not '%s'\n",
					optarg);
				return 2;
			}
			o->no_batch = strcmp(optarg, "off") == 0;
			break;
		case GU_OPT_ZERO_COPY:
		case GU_OPT_ONE_RING:
		case GU_OPT_DEFER:
			if (strcmp(optarg, "auto") && strcmp(optarg, "off")) {
				fprintf(stderr, "graid-ublk: --%s: 'auto' or 'off', not '%s'\n",
					c == GU_OPT_ZERO_COPY ? "zero-copy"
					: c == GU_OPT_ONE_RING ? "one-ring" : "defer-taskrun",
					optarg);
				return 2;
			}
			if (c == GU_OPT_ZERO_COPY)
				o->no_zero_copy = strcmp(optarg, "off") == 0;
			else if (c == GU_OPT_ONE_RING)
				o->no_one_ring = strcmp(optarg, "off") == 0;
			else
				o->no_defer = strcmp(optarg, "off") == 0;
			break;
		case GU_OPT_CONTROL:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "graid-ublk: --control: 'on' or 'off', not '%s'\n",
					optarg);
				return 2;
			}
			o->no_control = strcmp(optarg, "off") == 0;
			break;
		case GU_OPT_METRICS: {
			char why[160];

			if (metrics_http_parse(optarg, why, sizeof(why))) {
				fprintf(stderr, "graid-ublk: --metrics: %s\n", why);
				return 2;
			}
			o->metrics = optarg;
			break;
		}
		case GU_OPT_RUN_DIR:
			if (!*optarg) {
				fprintf(stderr, "graid-ublk: --run-dir: a directory, not ''\n");
				return 2;
			}
			o->run_dir = optarg;
			break;
		case GU_OPT_FIXED:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "graid-ublk: --fixed-buffers: 'on' or 'off', not "
						"'%s'\n", optarg);
				return 2;
			}
			o->no_fixed = strcmp(optarg, "off") == 0;
			break;
		case GU_OPT_QUEUE_CPUS:
			if (strcmp(optarg, "queue") == 0) {
				o->cpus_mode = GU_CPUS_QUEUE;
			} else if (gu_cpu_list(optarg, &o->cpus) == 0) {
				o->cpus_mode = GU_CPUS_LIST;
				if (gu_cpus_allowed(&o->cpus, optarg))
					return 2;
			} else {
				fprintf(stderr, "graid-ublk: --queue-cpus: 'queue' or a CPU list such "
						"as 0-3,8, not '%s'\n", optarg);
				return 2;
			}
			break;
		case GU_OPT_IO_TIMEOUT:
			if (strcmp(optarg, "0") != 0 &&
			    gu_number(optarg, GRAID_IO_TIMEOUT_MAX_MS, &o->io_timeout_ms)) {
				fprintf(stderr, "graid-ublk: --io-timeout: milliseconds, 0 .. %u, not "
						"'%s'\n", GRAID_IO_TIMEOUT_MAX_MS, optarg);
				return 2;
			}
			break;
		case GU_OPT_HEALTH_INTERVAL:
			/* The library's own bounds, checked here so that a bad value opens nothing. */
			/* Digits only: strtoul would also take "+500" and " 500". */
			if (!isdigit((unsigned char)optarg[0]) ||
			    (strcmp(optarg, "0") != 0 &&
			     (gu_number(optarg, GU_HEALTH_INTERVAL_MAX_MS, &o->health_interval_ms) ||
			      o->health_interval_ms < GRAID_HEALTH_INTERVAL_MIN_MS))) {
				fprintf(stderr, "graid-ublk: --health-interval: milliseconds, 0 or "
						"%u .. %u, not '%s'\n", GRAID_HEALTH_INTERVAL_MIN_MS,
					GU_HEALTH_INTERVAL_MAX_MS, optarg);
				return 2;
			}
			if (strcmp(optarg, "0") == 0)
				o->health_interval_ms = 0;
			o->health_set = true;
			break;
		case 'h':
			gu_usage(stdout);
			exit(0);
		default:
			gu_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		gu_usage(stderr);
		return 2;
	}
	o->members = (const char *const *)argv + optind;
	o->nmembers = (unsigned)(argc - optind);
	return 0;
}

/* Member failures are what an operator must hear about: the array keeps serving degraded. */
/* The array went foreign: set before SIGUSR1 is sent, so that no other SIGUSR1 counts. */
static atomic_bool gu_foreign_seen;
/* A reshape ended (the array may have grown): likewise, for gu_resize() in gu_serve. */
static atomic_bool gu_resize_seen;

static void gu_on_event(void *arg, const struct graid_event *ev)
{
	const char *hook = arg;

	if (ev->type == GRAID_EVENT_ARRAY_FOREIGN && hook) {
		atomic_store(&gu_foreign_seen, true);
		kill(getpid(), SIGUSR1); /* the main thread runs --on-foreign (gu_serve) */
	}
	if (ev->type == GRAID_EVENT_RESHAPE_DONE) {
		/* The control commands are the main thread's: it resizes the device. */
		atomic_store(&gu_resize_seen, true);
		kill(getpid(), SIGUSR1);
	}
	if (ev->type == GRAID_EVENT_MEMBER_FAILED)
		fprintf(stderr, "graid-ublk: member %d failed (%s); serving from the others\n",
			ev->member, graid_strerror(ev->error));
	else if (ev->type == GRAID_EVENT_RESHAPE_STARTED)
		fprintf(stderr, "graid-ublk: growing: %" PRIu64 " member(s) added, data moving\n",
			ev->count);
	else if (ev->type == GRAID_EVENT_RESHAPE_PAUSED)
		fprintf(stderr, "graid-ublk: the grow stopped at %" PRIu64 "%% (%s); the next open "
				"goes on with it\n", ev->count, graid_strerror(ev->error));
	else if (ev->type == GRAID_EVENT_RESHAPE_DONE)
		fprintf(stderr, "graid-ublk: grow done: the array has %" PRIu64 " bytes%s\n",
			ev->count, ev->error ? " (its end not recorded yet: the old size stays)" : "");
	else if (ev->type == GRAID_EVENT_ARRAY_FAILED)
		fprintf(stderr, "graid-ublk: too many members failed: I/O now fails\n");
	else if (ev->type == GRAID_EVENT_ARRAY_FOREIGN)
		fprintf(stderr, "graid-ublk: the array is no longer ours (%s): %s, nothing more "
				"is written\n",
			ev->error == -ENOLCK ? "its lease was lost"
			: ev->error == -EBADE ? "a drive's reservation was taken"
					      : "another host took it over",
			hook ? "requests are held until --on-foreign has run, then fail"
			     : "I/O now fails");
}

/*
 * --health-interval: the interval asked for, every other setting at the default that
 * include/libgraid/graid.h documents for struct graid_health_options (the library has no
 * call that changes one field alone). 0, or -1 with a message.
 */
static int gu_health_interval(struct graid_array *a, unsigned ms)
{
	struct graid_health_options ho = {
		.struct_size = sizeof(ho),
		.interval_ms = ms,
		.wear_percent = 90,
		.media_rising = 2,
		.media_burst = 25,
		.media_window_s = 600,
	};
	int rc = graid_array_set_health_options(a, &ho);

	if (rc) {
		fprintf(stderr, "graid-ublk: --health-interval: %s\n", graid_strerror(rc));
		return -1;
	}
	if (ms)
		fprintf(stderr, "graid-ublk: drive health sampled every %u ms\n", ms);
	else
		fprintf(stderr, "graid-ublk: drive health not watched (--health-interval 0)\n");
	return 0;
}

/*
 * The control endpoint, before the device: the array is open writable, and managing it
 * does not wait for the device. A failure is told and serving goes on: the endpoint is how
 * the array is managed, not how its data is reached, and a server that refused to start
 * over a run directory would take the data away to keep a management socket
 * (README.md, `--control`).
 */
static void gu_control_start(struct graid_array *a, const char *run_dir)
{
	struct graid_control_options co = { .struct_size = sizeof(co), .run_dir = run_dir };
	char path[128];
	int rc;

	if (graid_array_control_path(a, run_dir, path, sizeof(path)))
		snprintf(path, sizeof(path), "(a path too long for a socket)");
	rc = graid_array_control_start(a, &co);
	if (rc == 0)
		fprintf(stderr, "graid-ublk: control endpoint %s (graidctl manages the array "
				"through it)\n", path);
	else
		fprintf(stderr, "graid-ublk: no control endpoint at %s: %s; serving without one "
				"(graidctl cannot change the array while it is served)\n",
			path, graid_strerror(rc));
}

static unsigned gu_log2(uint64_t v)
{
	unsigned s = 0;

	while (s < 63 && (UINT64_C(2) << s) <= v)
		s++;
	return s;
}

/*
 * The block device's shape. Logical and physical block: the array's block size, so the
 * kernel never sends a request graid would refuse as misaligned. io_min/io_opt: chunk and
 * full stripe for the striped levels, as md reports them, so that filesystems align to
 * them (a write below a full stripe costs RAID-5/6 a read-modify-write).
 */
static void gu_params(struct ublk_params *p, const struct graid_array_info *info,
		      uint32_t max_io_bytes)
{
	unsigned bs = gu_log2(info->block_size), cap = gu_log2(max_io_bytes);
	unsigned ndata = 0, io_min = bs, io_opt = bs;
	/* Discard granularity: a full stripe (a chunk on RAID-1/10), what the array deallocates. */
	uint64_t gran = info->chunk_bytes ? info->chunk_bytes : info->block_size;
	uint64_t most = info->size >> 9;

	if (info->level == 0)
		ndata = info->nmembers;
	else if (info->level == 5 || info->level == 6)
		ndata = info->nmembers - (unsigned)(info->level - 4);
	if (ndata && info->chunk_bytes) {
		uint64_t stripe = (uint64_t)info->chunk_bytes * ndata;

		io_min = gu_log2(info->chunk_bytes);
		/* only a shift can be given: a stripe that is not a power of two gets the chunk */
		io_opt = (stripe & (stripe - 1)) ? io_min : gu_log2(stripe);
		gran = stripe;
	}
	if (gran > UINT32_MAX)
		gran = info->block_size;
	if (most > UINT32_MAX)
		most = UINT32_MAX;
	most -= most % (gran >> 9 ? gran >> 9 : 1); /* whole granules per request */
	*p = (struct ublk_params){
		.len = sizeof(*p),
		/* DISCARD too: discards and write-zeroes read back as zeroes on every level */
		.types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_DISCARD,
		.basic = {
			/* writes sit in member caches until a flush: ask the kernel for flushes */
			.attrs = UBLK_ATTR_VOLATILE_CACHE,
			.logical_bs_shift = (uint8_t)bs,
			.physical_bs_shift = (uint8_t)bs,
			.io_min_shift = (uint8_t)(io_min < cap ? io_min : cap),
			.io_opt_shift = (uint8_t)(io_opt < cap ? io_opt : cap),
			.max_sectors = max_io_bytes >> 9,
			.dev_sectors = info->size >> 9,
		},
		.discard = {
			.discard_alignment = 0,
			.discard_granularity = (uint32_t)gran,
			.max_discard_sectors = (uint32_t)most,
			.max_write_zeroes_sectors = (uint32_t)most,
			.max_discard_segments = 1, /* the driver takes single-range discards only */
		},
	};
}

/* /dev/ublkcN appears with ADD_DEV; where udev creates the node, give it a moment. */
static int gu_open_cdev(uint32_t dev_id)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/ublkc%" PRIu32, dev_id);
	for (int i = 0; i < 50; i++) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	if (fd < 0) {
		fd = -errno;
		fprintf(stderr, "graid-ublk: %s: %s\n", path, graid_strerror(fd));
	}
	return fd;
}

/* Start the queue threads and wait until each has its FETCH_REQs in, or has failed. */
static unsigned gu_start_queues(struct uctrl *c, struct usrv *s, unsigned nq, struct uq **qs,
				const struct gu_opts *o)
{
	unsigned started = 0;

	for (; started < nq; started++) {
		cpu_set_t cpus = o->cpus;
		bool pin = o->cpus_mode == GU_CPUS_LIST ||
			   (o->cpus_mode == GU_CPUS_QUEUE &&
			    uctrl_queue_affinity(c, s->dev_id, (uint16_t)started, &cpus) == 0 &&
			    CPU_COUNT(&cpus) > 0);
		int rc = uq_start(s, started, pin ? &cpus : NULL, &qs[started]);

		if (rc) {
			fprintf(stderr, "graid-ublk: queue thread: %s\n", graid_strerror(rc));
			break;
		}
	}
	pthread_mutex_lock(&s->lock);
	while (s->nready + s->nfailed < started)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return started;
}

/* Serve until a signal; returns the exit status. The device exists when this is called. */
static int gu_serve(struct uctrl *c, struct usrv *s, unsigned nq, const uint8_t uuid[16],
		    const sigset_t *sigs, const struct gu_opts *o)
{
	struct uq *qs[GU_MAX_QUEUES];
	unsigned started = gu_start_queues(c, s, nq, qs, o);
	int status = 1, rc, sig = 0;

	if (started == nq && s->nfailed == 0) {
		rc = uctrl_start_dev(c, s->dev_id);
		if (rc == 0) {
			gu_record_write(s->dev_id, uuid);
			printf("/dev/ublkb%" PRIu32 "\n", s->dev_id);
			fflush(stdout);
			/* A grow resumed by the open may have ended before the callback was set. */
			gu_resize(c, s);
			/*
			 * SIGUSR1: the array went foreign or a reshape ended (gu_on_event);
			 * anything else stops.
			 */
			while (sigwait(sigs, &sig) == 0 && sig == SIGUSR1) {
				if (atomic_load(&gu_foreign_seen))
					gu_foreign_hook(s, uuid);
				if (atomic_exchange(&gu_resize_seen, false))
					gu_resize(c, s);
			}
			gu_record_remove(s->dev_id);
			fprintf(stderr, "graid-ublk: %s: stopping /dev/ublkb%" PRIu32 "\n",
				strsignal(sig), s->dev_id);
			status = 0;
		} else {
			fprintf(stderr, "graid-ublk: START_DEV: %s\n", graid_strerror(rc));
		}
	}
	/*
	 * STOP_DEV while the queue threads still serve: the kernel finishes the requests in
	 * flight through them, removes /dev/ublkbN and ends their FETCH_REQs. Then the
	 * eventfd tells every thread to leave its loop.
	 */
	atomic_store(&s->stopping, true);
	/* STOP_DEV waits for every request handed out: held ones fail now. */
	if (s->park_foreign && !atomic_exchange(&s->released, true) &&
	    eventfd_write(s->release_fd, 1))
		perror("graid-ublk: eventfd_write");
	rc = uctrl_stop_dev(c, s->dev_id);
	if (rc) {
		fprintf(stderr, "graid-ublk: STOP_DEV: %s\n", graid_strerror(rc));
		status = 1;
	}
	if (eventfd_write(s->stop_fd, 1))
		perror("graid-ublk: eventfd_write");
	for (unsigned i = 0; i < started; i++) {
		if (uq_join(qs[i]))
			status = 1;
	}
	return status;
}

/*
 * ADD_DEV with @p flags besides those asked for. A driver that lists a feature yet refuses
 * it here (-EINVAL, -EOPNOTSUPP) gets @p dev back as it was, for the next way to try.
 */
static int gu_add_dev_with(struct uctrl *c, struct ublksrv_ctrl_dev_info *dev,
			   uint64_t flags, const char *what)
{
	struct ublksrv_ctrl_dev_info asked = *dev;
	int rc;

	dev->flags |= flags;
	rc = uctrl_add_dev(c, dev);
	if (rc == -EINVAL || rc == -EOPNOTSUPP) {
		fprintf(stderr, "graid-ublk: ADD_DEV with %s: %s; without\n", what,
			graid_strerror(rc));
		*dev = asked;
	}
	return rc;
}

/* Add the device, serve it, delete it; returns the exit status. */
static int gu_run(struct graid_array *a, const struct graid_array_info *info,
		  const struct gu_opts *o, const sigset_t *sigs)
{
	struct ublksrv_ctrl_dev_info dev = {
		.nr_hw_queues = (uint16_t)o->queues,
		.queue_depth = (uint16_t)o->depth,
		.max_io_buf_bytes = GU_MAX_IO_BYTES,
		.dev_id = UINT32_MAX,
		.ublksrv_pid = getpid(),
	};
	struct usrv s = {
		.array = a,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
		.park_foreign = o->on_foreign != NULL,
		.hook = o->on_foreign,
		.release_fd = -1,
	};
	struct ublk_params params;
	struct uctrl c;
	int status = 1, rc;

	rc = uctrl_open(&c);
	if (rc) {
		fprintf(stderr, "graid-ublk: /dev/ublk-control: %s%s\n", graid_strerror(rc),
			rc == -ENOENT ? " (load ublk_drv: modprobe ublk_drv; Linux 6.0+)" : "");
		return 1;
	}
	/*
	 * Zero copy, else batches, where the driver lists them; added once either way (a
	 * driver that keeps the device but drops a flag gets what is left: s.zero_copy and
	 * s.batch read them back).
	 */
	rc = -EOPNOTSUPP;
	/* Not under an I/O timeout: the library then reads through its own memory only. */
	if ((c.features & GU_ZERO_COPY_FLAGS) == GU_ZERO_COPY_FLAGS && !o->no_zero_copy &&
	    !o->no_one_ring && !o->io_timeout_ms)
		rc = gu_add_dev_with(&c, &dev, GU_ZERO_COPY_FLAGS, "zero copy");
	if ((rc == -EINVAL || rc == -EOPNOTSUPP) && (c.features & UBLK_F_BATCH_IO) &&
	    !o->no_batch)
		rc = gu_add_dev_with(&c, &dev, UBLK_F_BATCH_IO, "batches");
	if (rc == -EINVAL || rc == -EOPNOTSUPP)
		rc = uctrl_add_dev(&c, &dev);
	if (rc) {
		fprintf(stderr, "graid-ublk: ADD_DEV: %s\n", graid_strerror(rc));
		uctrl_close(&c);
		return 1;
	}
	/* The driver may have granted fewer queues (one per CPU at most), or a smaller buffer. */
	s.dev_id = dev.dev_id;
	s.depth = dev.queue_depth;
	s.buf_bytes = dev.max_io_buf_bytes;
	s.op_fetch = c.ioctl_encode ? UBLK_U_IO_FETCH_REQ : UBLK_IO_FETCH_REQ;
	s.op_commit = c.ioctl_encode ? UBLK_U_IO_COMMIT_AND_FETCH_REQ
				     : UBLK_IO_COMMIT_AND_FETCH_REQ;
	s.batch = dev.flags & UBLK_F_BATCH_IO;
	s.zero_copy = (dev.flags & GU_ZERO_COPY_FLAGS) == GU_ZERO_COPY_FLAGS;
	/*
	 * One ring wants a driver that takes the commands in 64-byte SQEs (the graid queue's
	 * ring has those): 6.3 and later, 6.1 from about 6.1.47. GET_FEATURES (6.5) says so.
	 */
	s.one_ring = s.zero_copy || (!s.batch && !o->no_one_ring && c.features);
	s.fixed_buffers = !o->no_fixed;
	s.queue_flags = o->no_defer ? 0 : GRAID_QUEUE_F_ONE_THREAD;
	fprintf(stderr, "graid-ublk: RAID-%d, %u members (%u failed), %" PRIu64
		" bytes, block %u; ublk device %" PRIu32 ", %u queue(s) x %u, %zu KiB max I/O, "
		"%s\n", info->level, info->nmembers, info->nfailed, info->size, info->block_size,
		dev.dev_id, (unsigned)dev.nr_hw_queues, s.depth, s.buf_bytes >> 10,
		s.zero_copy  ? "zero copy, one ring"
		: s.batch    ? "batched fetches and commits"
		: s.one_ring ? "a command per request, one ring"
			     : "a command per request");

	gu_params(&params, info, dev.max_io_buf_bytes);
	s.dev_sectors = params.basic.dev_sectors;
	rc = uctrl_set_params(&c, s.dev_id, &params);
	if (rc)
		fprintf(stderr, "graid-ublk: SET_PARAMS: %s\n", graid_strerror(rc));
	if (rc == 0) {
		s.cdev_fd = gu_open_cdev(s.dev_id);
		s.stop_fd = eventfd(0, EFD_CLOEXEC);
		if (s.park_foreign)
			s.release_fd = eventfd(0, EFD_CLOEXEC);
		if (s.stop_fd < 0 || (s.park_foreign && s.release_fd < 0))
			perror("graid-ublk: eventfd");
		else if (s.cdev_fd >= 0)
			status = gu_serve(&c, &s, dev.nr_hw_queues, info->uuid, sigs, o);
		if (s.stop_fd >= 0)
			close(s.stop_fd);
		if (s.release_fd >= 0)
			close(s.release_fd);
		if (s.cdev_fd >= 0)
			close(s.cdev_fd);
	}
	/* Only now: DEL_DEV waits until /dev/ublkcN is closed, the queue rings included. */
	rc = uctrl_del_dev(&c, s.dev_id);
	if (rc) {
		fprintf(stderr, "graid-ublk: DEL_DEV: %s\n", graid_strerror(rc));
		status = 1;
	}
	uctrl_close(&c);
	return status;
}

int main(int argc, char **argv)
{
	struct graid_open_options oo = { .struct_size = sizeof(oo) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct gu_opts o;
	sigset_t sigs;
	struct metrics_http *mh = NULL;
	int rc, status;

	status = gu_parse(argc, argv, &o);
	if (status)
		return status;
	/*
	 * SIGUSR1 (the array went foreign) is taken by sigwait() in gu_serve: blocked before
	 * the library starts any thread, so that none of them takes it instead.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* The --on-foreign hook is waited for: an ignored SIGCHLD inherited would reap it. */
	signal(SIGCHLD, SIG_DFL);
	oo.backend = o.backend;
	oo.lease = o.lease;
	if (o.takeover)
		oo.flags |= GRAID_OPEN_TAKEOVER;
	if (o.reserve)
		oo.flags |= GRAID_OPEN_RESERVE;
	rc = graid_array_open(o.members, o.nmembers, &oo, &a);
	if (rc) {
		fprintf(stderr, "graid-ublk: cannot assemble the array: %s\n", graid_strerror(rc));
		return 1;
	}
	graid_array_info(a, &info);
	graid_array_set_event_callback(a, gu_on_event, (void *)o.on_foreign);
	/*
	 * An event before the callback was set is lost: an array already foreign now (its
	 * flush says so) is one whose hook must still run.
	 */
	if (o.on_foreign && graid_array_flush(a) == -ESTALE) {
		atomic_store(&gu_foreign_seen, true);
		kill(getpid(), SIGUSR1);
	}
	if (o.io_timeout_ms && (rc = graid_array_set_io_timeout(a, o.io_timeout_ms))) {
		fprintf(stderr, "graid-ublk: --io-timeout: %s\n", graid_strerror(rc));
		graid_array_close(a);
		return 1;
	}
	if (o.health_set && gu_health_interval(a, o.health_interval_ms)) {
		graid_array_close(a);
		return 1;
	}
	if (o.rebuild_set) {
		o.rebuild.struct_size = sizeof(o.rebuild);
		rc = graid_array_set_rebuild_options(a, &o.rebuild);
		if (rc) {
			fprintf(stderr, "graid-ublk: rebuild rates: %s\n", graid_strerror(rc));
			graid_array_close(a);
			return 1;
		}
		fprintf(stderr, "graid-ublk: rebuilds at most %llu B/s per member, %llu B/s while "
				"serving requests (0: no limit)\n",
			(unsigned long long)o.rebuild.max_bytes_per_sec,
			(unsigned long long)o.rebuild.busy_bytes_per_sec);
	}
	/* A rebuild left pending (a spare taken at open, a stopped one) goes on while serving. */
	rc = graid_array_rebuild_start(a);
	if (rc)
		fprintf(stderr, "graid-ublk: starting the pending rebuild: %s\n", graid_strerror(rc));
	if (!o.no_control)
		gu_control_start(a, o.run_dir);

	/*
	 * The signals that stop the server are blocked in every thread (the queue threads
	 * inherit the mask) and taken by sigwait() in this one, so a queue thread is never
	 * interrupted mid-request and the shutdown runs in plain code, not in a handler.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* After the mask: the HTTP thread inherits it, and the stop signals stay this thread's. */
	if (o.metrics) {
		char why[256];

		rc = metrics_http_start(&mh, o.metrics, a, why, sizeof(why));
		if (rc) {
			fprintf(stderr, "graid-ublk: --metrics: %s\n", why);
			graid_array_close(a);
			return 1;
		}
		fprintf(stderr, "graid-ublk: metrics at http://%s/metrics\n",
			metrics_http_where(mh));
	}
	status = gu_run(a, &info, &o, &sigs);
	metrics_http_stop(mh);
	rc = graid_array_close(a);
	if (rc) {
		fprintf(stderr, "graid-ublk: closing the array: %s\n", graid_strerror(rc));
		status = 1;
	}
	return status;
}
