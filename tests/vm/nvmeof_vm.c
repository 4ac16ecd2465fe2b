/* SPDX-License-Identifier: MIT */
/*
 * The nvmeof suite's scenarios (tests/vm/suites, guest/nvmeof.sh; issue 18): arrays whose
 * members are NVMe-oF namespaces on storage "hosts" (network namespaces exporting null_blk
 * through nvmet-tcp, guest/nvmeof-lib.sh), through the public API only.
 *
 *   nvmeof_vm [SCENARIO...]     default: all of them, in this order
 *     perf        throughput and CPU per I/O, local null_blk against nvme-tcp members
 *     lost5 lost6 lost10   a storage host lost mid-write (RAID-5, -6, -10) and back; with
 *                 RAID-5, graidctl status --json (another process) while it is unreachable
 *     iotimeout   the same with an I/O timeout of 1 s: no write waits much longer
 *     outage      shorter than ctrl_loss_tmo: no rebuild; longer: fails, remote spare
 *     media       a bad block on a remote member repaired from parity
 *     multipath   one of two paths lost: no error, not degraded
 *     flap        a member flaps 20 times: no failure, no second rebuild
 *     rename      a reconnect renames the device node: reassembled by identity
 *
 * Breaking things is the shell's (sh $NVMF_LIB COMMAND, through system()). Writers run
 * while it happens; every acknowledged write is checked afterwards against a per-block
 * generation shadow, and each scenario ends with a scrub that must find no mismatch.
 * Prints PASS/FAIL lines, and "FIGURE" lines with what docs/REMOTE.md reports.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define KIB 1024u
#define MIB (1024u * 1024u)
#define BLK 4096u   /* the shadow's granule: one generation per 4 KiB block */
#define WRITE_LEN (64u * KIB)
#define NWRITERS 2
#define MAXLAT 200000

static int failed;
static char why[512];
static double t_start;
/*
 * SIGPIPEs that reached this program: the kernel's nvme-tcp raises one in a thread whose
 * request it sends on a reset connection, and libgraid must absorb it (lib/core/common/signals.h).
 * Counted here rather than left to kill the program, so a scenario names it.
 */
static volatile sig_atomic_t sigpipes;
static int sigpipes_reported;
static atomic_int sigpipe_absorbed_logs;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	if (strstr(msg, "raised SIGPIPE"))
		atomic_fetch_add(&sigpipe_absorbed_logs, 1);
	fprintf(stderr, "  libgraid[%d] %.1f: %s\n", level, now() - t_start, msg);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;
	if (why[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

static void result(const char *name)
{
	int pipes = sigpipes;

	if (pipes > sigpipes_reported && !why[0])
		snprintf(why, sizeof(why), "SIGPIPE reached the application %d time(s)",
			 pipes - sigpipes_reported);
	sigpipes_reported = pipes;
	if (why[0]) {
		printf("FAIL %s: %s\n", name, why);
		failed = 1;
	} else {
		printf("PASS %s\n", name);
	}
	fflush(stdout);
	why[0] = '\0';
}

static void figure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void figure(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FIGURE ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

/* ---- the bed's helpers (guest/nvmeof-lib.sh) ------------------------------------------ */

static int bed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bed(const char *fmt, ...)
{
	char cmd[512];
	int n = snprintf(cmd, sizeof(cmd), "sh %s ", getenv("NVMF_LIB"));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "  %.1f $ %s\n", now() - t_start, cmd);
	int r = system(cmd);
	return r == 0 ? 0 : bad("bed: '%s' failed (%d)", cmd, r);
}

/* The first line a helper prints; "" when it fails. */
static char *bed_out(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static char *bed_out(char *out, size_t len, const char *fmt, ...)
{
	char cmd[512];
	int n = snprintf(cmd, sizeof(cmd), "sh %s ", getenv("NVMF_LIB"));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	out[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (p) {
		if (!fgets(out, (int)len, p))
			out[0] = '\0';
		pclose(p);
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

static char devs[10][64];
static const char *dev_of(int k)
{
	bed_out(devs[k], sizeof(devs[k]), "dev %d 1", k);
	if (!devs[k][0])
		bad("bed: no device for host h%d", k);
	return devs[k];
}

/* Controllers of host k still present, and how many are live. */
static int ctrls(int k, int *live)
{
	char s[256];
	bed_out(s, sizeof(s), "state %d", k);
	int n = 0, l = 0;
	for (char *p = strtok(s, " "); p; p = strtok(NULL, " ")) {
		n++;
		l += strstr(p, "=live") != NULL;
	}
	if (live)
		*live = l;
	return n;
}

/* ---- events ----------------------------------------------------------------------------- */

#define MAXEV 4096
static struct ev {
	double t;
	int type, member;
} evs[MAXEV];
static atomic_int nev;

static void on_event(void *arg, const struct graid_event *e)
{
	(void)arg;
	int i = atomic_fetch_add(&nev, 1);
	if (i < MAXEV)
		evs[i] = (struct ev){ now(), e->type, e->member };
	fprintf(stderr, "  event %.1f: type %d member %d error %d\n", now() - t_start, e->type,
		e->member, e->error);
}

static void events_reset(void) { atomic_store(&nev, 0); }

static int events_count(int type, int member)
{
	int n = 0, m = atomic_load(&nev);
	for (int i = 0; i < m && i < MAXEV; i++)
		n += evs[i].type == type && (member < 0 || evs[i].member == member);
	return n;
}

static double event_time(int type, int member) /* first one, or 0 */
{
	int m = atomic_load(&nev);
	for (int i = 0; i < m && i < MAXEV; i++)
		if (evs[i].type == type && evs[i].member == member)
			return evs[i].t;
	return 0;
}

/* ---- data: blocks tagged with their offset and generation ------------------------------ */

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Generation 0 is the zeroes of a new array; others: words 0 and 1 tell offset and gen. */
static void fill_block(uint8_t *p, uint64_t off, uint32_t gen)
{
	uint64_t *w = (uint64_t *)p;
	if (!gen) {
		memset(p, 0, BLK);
		return;
	}
	w[0] = off;
	w[1] = gen;
	for (size_t i = 2; i < BLK / 8; i++)
		w[i] = splitmix((off + i * 8) ^ ((uint64_t)gen << 40));
}

struct lat {
	double t;
	float s;
};

struct load {
	struct graid_array *a;
	uint64_t hot;                /* writers write [0, hot) of the array */
	_Atomic uint32_t *shadow;    /* acknowledged generation of each block */
	atomic_bool stop;
	atomic_uint_fast64_t bytes, writes, errors;
	atomic_int first_err;
	pthread_t t[NWRITERS];
	struct lat *lat[NWRITERS];
	atomic_uint nlat[NWRITERS];
	uint32_t gen;
};

struct writer_arg {
	struct load *ld;
	unsigned id;
};
static struct writer_arg wargs[NWRITERS];

/* Writer id owns the 64 KiB extents e with e % NWRITERS == id: no two writers race on a
 * block, so the shadow's generation is the only one a block may hold. */
static void *writer_main(void *arg)
{
	struct writer_arg *wa = arg;
	struct load *ld = wa->ld;
	uint8_t *buf = aligned_alloc(4096, WRITE_LEN);
	uint64_t next = splitmix(wa->id + 77), extents = ld->hot / WRITE_LEN;
	uint32_t gen = ld->gen + wa->id;
	while (!atomic_load(&ld->stop)) {
		next = splitmix(next);
		uint64_t e = (next % (extents / NWRITERS)) * NWRITERS + wa->id;
		uint64_t off = e * WRITE_LEN;
		gen += NWRITERS;
		for (unsigned b = 0; b < WRITE_LEN / BLK; b++)
			fill_block(buf + b * BLK, off + b * BLK, gen);
		double t0 = now();
		ssize_t r = graid_array_write(ld->a, buf, WRITE_LEN, off);
		double t1 = now();
		unsigned i = atomic_load(&wa->ld->nlat[wa->id]);
		if (i < MAXLAT) {
			ld->lat[wa->id][i] = (struct lat){ t0, (float)(t1 - t0) };
			atomic_store(&ld->nlat[wa->id], i + 1);
		}
		if (r == (ssize_t)WRITE_LEN) {
			for (unsigned b = 0; b < WRITE_LEN / BLK; b++)
				atomic_store(&ld->shadow[off / BLK + b], gen);
			atomic_fetch_add(&ld->bytes, WRITE_LEN);
			atomic_fetch_add(&ld->writes, 1);
		} else {
			/* Not acknowledged: the blocks may hold either generation now. */
			for (unsigned b = 0; b < WRITE_LEN / BLK; b++)
				atomic_store(&ld->shadow[off / BLK + b], UINT32_MAX);
			atomic_fetch_add(&ld->errors, 1);
			int z = 0;
			atomic_compare_exchange_strong(&ld->first_err, &z, r < 0 ? (int)r : -EIO);
			usleep(10000);
		}
	}
	free(buf);
	return NULL;
}

static struct load *load_new(struct graid_array *a, uint64_t hot)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(a, &info);
	struct load *ld = calloc(1, sizeof(*ld));
	ld->a = a;
	ld->hot = hot < info.size ? hot : info.size;
	ld->hot -= ld->hot % (WRITE_LEN * NWRITERS);
	ld->shadow = calloc(info.size / BLK, sizeof(*ld->shadow));
	ld->gen = 1;
	for (int i = 0; i < NWRITERS; i++)
		ld->lat[i] = calloc(MAXLAT, sizeof(struct lat));
	return ld;
}

static void load_start(struct load *ld)
{
	atomic_store(&ld->stop, false);
	for (unsigned i = 0; i < NWRITERS; i++) {
		wargs[i] = (struct writer_arg){ ld, i };
		pthread_create(&ld->t[i], NULL, writer_main, &wargs[i]);
	}
}

static void load_stop(struct load *ld)
{
	atomic_store(&ld->stop, true);
	for (unsigned i = 0; i < NWRITERS; i++)
		pthread_join(ld->t[i], NULL);
	ld->gen += 1u << 20; /* a later run writes generations of its own */
}

static void load_free(struct load *ld)
{
	if (!ld)
		return;
	for (int i = 0; i < NWRITERS; i++)
		free(ld->lat[i]);
	free((void *)ld->shadow);
	free(ld);
}

static int cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;
	return (a > b) - (a < b);
}

/* p-quantile (0..1) of the write latencies of writes issued in [t0, t1), in ms; n: how many. */
static double lat_quantile(struct load *ld, double t0, double t1, double q, unsigned *n)
{
	unsigned m = 0, cap = 0;
	for (int i = 0; i < NWRITERS; i++)
		cap += atomic_load(&ld->nlat[i]);
	float *v = malloc((cap + 1) * sizeof(float));
	for (int i = 0; i < NWRITERS; i++)
		for (unsigned j = 0; j < atomic_load(&ld->nlat[i]); j++)
			if (ld->lat[i][j].t >= t0 && ld->lat[i][j].t < t1)
				v[m++] = ld->lat[i][j].s;
	*n = m;
	double r = 0;
	if (m) {
		qsort(v, m, sizeof(float), cmp_float);
		r = v[(size_t)(q * (m - 1))] * 1e3;
	}
	free(v);
	return r;
}

static uint64_t bytes_between(struct load *ld, double t0, double t1)
{
	uint64_t n = 0;
	for (int i = 0; i < NWRITERS; i++)
		for (unsigned j = 0; j < atomic_load(&ld->nlat[i]); j++)
			if (ld->lat[i][j].t >= t0 && ld->lat[i][j].t + ld->lat[i][j].s < t1)
				n += WRITE_LEN;
	return n;
}

/* Every block of the array holds the generation of its last acknowledged write (or 0). */
static int verify(struct load *ld, const char *what)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(ld->a, &info);
	uint8_t *buf = aligned_alloc(4096, MIB), *want = aligned_alloc(4096, BLK);
	uint64_t unknown = 0;
	for (uint64_t off = 0; off < info.size && !why[0]; off += MIB) {
		size_t len = info.size - off < MIB ? (size_t)(info.size - off) : MIB;
		ssize_t r = graid_array_read(ld->a, buf, len, off);
		if (r != (ssize_t)len) {
			bad("%s: read at %" PRIu64 ": %s", what, off,
			    r < 0 ? graid_strerror((int)r) : "short");
			break;
		}
		for (size_t b = 0; b < len; b += BLK) {
			uint32_t g = atomic_load(&ld->shadow[(off + b) / BLK]);
			if (g == UINT32_MAX) {
				unknown++;
				continue;
			}
			fill_block(want, off + b, g);
			if (memcmp(buf + b, want, BLK)) {
				const uint64_t *w = (const uint64_t *)(buf + b);
				bad("%s: block at %" PRIu64 " holds (offset %" PRIu64 ", gen %" PRIu64
				    "), the acknowledged write was gen %u",
				    what, off + b, w[0], w[1], g);
				break;
			}
		}
	}
	if (unknown)
		fprintf(stderr, "  %s: %" PRIu64 " blocks of failed writes not checked\n", what, unknown);
	free(buf);
	free(want);
	return why[0] ? -1 : 0;
}

/* After a check already failed: still say whether every acknowledged write reads back (the
 * first reason stays the result's). */
static void verify_anyway(struct load *ld, const char *what)
{
	char saved[sizeof(why)];
	if (!why[0]) {
		verify(ld, what);
		return;
	}
	snprintf(saved, sizeof(saved), "%s", why);
	why[0] = '\0';
	verify(ld, what);
	fprintf(stderr, "  %s: acknowledged writes %s\n", what, why[0] ? why : "all read back");
	snprintf(why, sizeof(why), "%s", saved);
}

static int scrub_clean(struct graid_array *a, const char *what)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	int r = graid_array_scrub(a, 0, &rep);
	if (r)
		return bad("%s: scrub: %s", what, graid_strerror(r));
	if (rep.mismatches || !rep.stripes_checked)
		return bad("%s: scrub checked %" PRIu64 " stripes, found %" PRIu64 " mismatches",
			   what, rep.stripes_checked, rep.mismatches);
	fprintf(stderr, "  %s: scrub of %" PRIu64 " stripes clean\n", what, rep.stripes_checked);
	return 0;
}

/* ---- arrays ------------------------------------------------------------------------------ */

static struct graid_array *create(int level, const char *const *m, unsigned n)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = 64 * KIB, .flags = GRAID_CREATE_FORCE };
	struct graid_array *a = NULL;
	if (why[0])
		return NULL;
	double t0 = now();
	int r = graid_array_create(m, n, &cfg, &a);
	if (r) {
		bad("create RAID-%d over %s..: %s", level, m[0], graid_strerror(r));
		return NULL;
	}
	fprintf(stderr, "  created RAID-%d over %u members in %.1f s\n", level, n, now() - t0);
	graid_array_set_event_callback(a, on_event, NULL);
	events_reset();
	return a;
}

static struct graid_member_info minfo(struct graid_array *a, unsigned role)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	if (graid_array_member_info(a, role, &mi))
		mi.state = -1;
	return mi;
}

static unsigned nfailed(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(a, &info);
	return info.nfailed;
}

static uint64_t member_data_bytes(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(a, &info);
	unsigned data = info.level == 5 ? info.nmembers - 1 : info.level == 6 ? info.nmembers - 2
		      : info.level == 10 ? info.nmembers / 2 : info.nmembers;
	return info.size / data;
}

static const char *state_name(int s)
{
	static const char *n[] = { "active", "failed", "missing", "rebuilding", "spare",
				   "unreachable" };
	return s >= 0 && s < 6 ? n[s] : "?";
}

/* What a watched member went through: states seen (bit per state), the most catch-up work
 * seen, the first time it left ACTIVE. */
struct watch {
	unsigned seen;
	uint64_t catchup_max;
	double t_left, t_unreach;
};

static void watch_poll(struct graid_array *a, unsigned role, struct watch *w)
{
	struct graid_member_info mi = minfo(a, role);
	if (mi.state < 0)
		return;
	w->seen |= 1u << mi.state;
	if (mi.catchup_total > w->catchup_max)
		w->catchup_max = mi.catchup_total;
	if (mi.state != GRAID_MEMBER_ACTIVE && !w->t_left)
		w->t_left = now();
	if (mi.state == GRAID_MEMBER_UNREACHABLE && !w->t_unreach)
		w->t_unreach = now();
}

/* Poll for @secs, watching @role. */
static void watch_for(struct graid_array *a, unsigned role, struct watch *w, double secs)
{
	double end = now() + secs;
	while (now() < end) {
		watch_poll(a, role, w);
		usleep(50000);
	}
}

/* Wait until @role is ACTIVE and nothing is rebuilding, for up to @secs; 0 when it is. A
 * role that is failed or missing with no spare to take it will not get there: -1 at once. */
static int wait_active(struct graid_array *a, unsigned role, struct watch *w, double secs)
{
	double end = now() + secs;
	while (now() < end) {
		watch_poll(a, role, w);
		int st = minfo(a, role).state;
		if (st == GRAID_MEMBER_ACTIVE && !nfailed(a))
			return 0;
		if (st == GRAID_MEMBER_FAILED || st == GRAID_MEMBER_MISSING)
			return -1;
		usleep(50000);
	}
	return -1;
}

static void seen_str(unsigned seen, char *s, size_t len)
{
	s[0] = '\0';
	for (int i = 0; i < 6; i++)
		if (seen & (1u << i))
			snprintf(s + strlen(s), len - strlen(s), "%s%s", s[0] ? "," : "",
				 state_name(i));
}

/* ---- perf: local against nvme-tcp -------------------------------------------------------- */

static uint64_t cpu_busy_ticks(void) /* all CPUs, from /proc/stat: not idle, not iowait */
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		       &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return 0;
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

struct perf {
	double mbps, cpu_us_per_io, iops;
};

/* One thread, @len per I/O, sequential over the array (wrapping), for @secs. */
static struct perf perf_run(struct graid_array *a, int write, size_t len, int random, double secs)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(a, &info);
	uint8_t *buf = aligned_alloc(4096, len);
	memset(buf, 0x5a, len);
	uint64_t ios = 0, off = 0, x = 1, span = info.size - info.size % len;
	uint64_t c0 = cpu_busy_ticks();
	double t0 = now(), t1;
	while ((t1 = now()) - t0 < secs) {
		if (random) {
			x = splitmix(x);
			off = (x % (span / len)) * len;
		}
		ssize_t r = write ? graid_array_write(a, buf, len, off) : graid_array_read(a, buf, len, off);
		if (r != (ssize_t)len) {
			bad("perf: %s at %" PRIu64 ": %s", write ? "write" : "read", off,
			    r < 0 ? graid_strerror((int)r) : "short");
			break;
		}
		ios++;
		off = (off + len) % span;
	}
	uint64_t c1 = cpu_busy_ticks();
	free(buf);
	double el = t1 - t0;
	long hz = sysconf(_SC_CLK_TCK);
	return (struct perf){ ios * len / el / 1e6, ios ? (c1 - c0) * 1e6 / hz / ios : 0, ios / el };
}

static void run_perf(const char *const *local, const char *const *remote)
{
	static const struct {
		const char *what;
		int write, random;
		size_t len;
	} kind[] = { { "seq write 1 MiB", 1, 0, MIB }, { "seq read 1 MiB", 0, 0, MIB },
		     { "rand read 4 KiB", 0, 1, 4 * KIB }, { "rand write 4 KiB", 1, 1, 4 * KIB } };
	struct perf p[2][4];
	const char *const *set[2] = { local, remote };
	for (int s = 0; s < 2 && !why[0]; s++) {
		struct graid_array *a = create(5, set[s], 3);
		if (!a)
			break;
		for (int k = 0; k < 4 && !why[0]; k++)
			p[s][k] = perf_run(a, kind[k].write, kind[k].len, kind[k].random, 2.0);
		graid_array_close(a);
	}
	if (!why[0])
		for (int k = 0; k < 4; k++)
			figure("perf RAID-5 x3 %-16s local null_blk %7.1f MB/s %6.0f IOPS %6.0f us CPU/IO | nvme-tcp %7.1f MB/s %6.0f IOPS %6.0f us CPU/IO",
			       kind[k].what, p[0][k].mbps, p[0][k].iops, p[0][k].cpu_us_per_io,
			       p[1][k].mbps, p[1][k].iops, p[1][k].cpu_us_per_io);
	result("perf-local-vs-tcp");
}

/* ---- 1. a storage host lost mid-write ------------------------------------------------------- */

/* Writers on; host @k (role @role) silent for @outage_s; back; caught up. Checks what the
 * issue asks and prints the figures. The caller verifies, scrubs and closes. */
/* What `graidctl status --json` (another process: it reads the holder's live view) says of
 * a role while it is unreachable; "" when it says what it should, else why not. Checked once
 * per outage when status_members is set. */
static char status_members[1024];
static char status_why[512];
static int status_checked;

static void status_look(unsigned role, int k)
{
	char cmd[1200], out[65536], want[64];
	snprintf(cmd, sizeof(cmd), "%s status --json %s 2>/dev/null", getenv("NVMF_GRAIDCTL"),
		 status_members);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int c;
	while (p && (c = fgetc(p)) != EOF && n + 1 < sizeof(out))
		if (c != ' ' && c != '\n' && c != '\t')
			out[n++] = (char)c; /* blanks out: one form to search */
	out[n] = '\0';
	if (p)
		pclose(p);
	status_checked = 1;
	snprintf(want, sizeof(want), "\"role\":%u,\"state\":\"", role);
	char *r = strstr(out, want), *end;
	if (!r) {
		snprintf(status_why, sizeof(status_why), "graidctl status --json names no role %u: %.200s",
			 role, out);
		return;
	}
	end = strstr(r + 1, "\"role\":");
	if (end)
		*end = '\0';
	char addr[64];
	snprintf(addr, sizeof(addr), "\"address\":\"traddr=10.18.%d.2", k);
	if (strncmp(r + strlen(want), "unreachable\"", 12))
		snprintf(status_why, sizeof(status_why), "graidctl status: role %u is %.20s, not unreachable",
			 role, r + strlen(want));
	else if (!strstr(r, addr))
		snprintf(status_why, sizeof(status_why), "graidctl status: role %u has no %s...: %.300s",
			 role, addr, r);
	else if (strstr(r, "\"controller_state\":\"live\"") || !strstr(r, "\"controller_state\":\""))
		snprintf(status_why, sizeof(status_why), "graidctl status: role %u's controller state "
			 "is not shown as other than live: %.300s", role, r);
	else if (!strstr(r, "\"transport\":\"tcp\""))
		snprintf(status_why, sizeof(status_why), "graidctl status: role %u's transport is not tcp",
			 role);
	else
		fprintf(stderr, "  graidctl status --json, role %u: %.400s\n", role, r);
}

/* The outage lasts @outage_s, longer (up to @extend_s more) until the member has been seen
 * unreachable for 2 s: a slow guest must not turn the test into one of a shorter outage. */
/* A scenario's end: every acknowledged block read back, a clean scrub, the array closed. */
static void verify_scrub_close(struct graid_array *a, struct load *ld, const char *name)
{
	verify_anyway(ld, name);
	if (!why[0])
		scrub_clean(a, name);
	graid_array_close(a);
}

/* Returns the worst write latency of the outage, in ms (0 if the bed failed). */
static double outage_under_load(struct graid_array *a, struct load *ld, int k, unsigned role,
				double outage_s, double extend_s, const char *name,
				int want_no_rebuild)
{
	struct watch w = { 0 };
	load_start(ld);
	usleep(1500000);
	double t_out = now(), t_ctrl = 0;
	if (bed("outage %d", k)) {
		load_stop(ld);
		return 0;
	}
	while (now() - t_out < outage_s ||
	       (now() - t_out < outage_s + extend_s && (!w.t_unreach || now() - w.t_unreach < 2))) {
		watch_poll(a, role, &w);
		if (status_members[0] && !status_checked && w.t_unreach && now() - w.t_unreach > 1)
			status_look(role, k);
		if (!t_ctrl) {
			int live;
			ctrls(k, &live);
			if (!live)
				t_ctrl = now();
		}
		usleep(100000);
	}
	struct graid_member_info mid = minfo(a, role);
	double t_heal = now();
	bed("heal %d", k);
	double t_live = 0;
	while (now() - t_heal < 20 && !t_live) {
		int live;
		if (ctrls(k, &live) && live)
			t_live = now();
		watch_poll(a, role, &w);
		usleep(100000);
	}
	int settled = wait_active(a, role, &w, 90);
	double t_active = now();
	usleep(500000);
	load_stop(ld);

	unsigned n0, n1;
	double p99_before = lat_quantile(ld, t_out - 1.5, t_out, 0.99, &n0);
	double p99_out = lat_quantile(ld, t_out, t_live ? t_live : t_heal, 0.99, &n1);
	uint64_t written = bytes_between(ld, t_out, t_live ? t_live : t_heal);
	double t_ret = event_time(GRAID_EVENT_MEMBER_RETURNED, (int)role);
	double t_done = 0;
	int m = atomic_load(&nev);
	for (int i = 0; i < m && i < MAXEV; i++)
		if (evs[i].type == GRAID_EVENT_REBUILD_DONE && evs[i].member == (int)role &&
		    evs[i].t >= t_ret)
			t_done = evs[i].t;
	figure("%s detection: controller left live %.1f s after the outage began, member left "
	       "active %.1f s, unreachable %.1f s (keep_alive_tmo=2 fast_io_fail_tmo=2)",
	       name, t_ctrl ? t_ctrl - t_out : -1, w.t_left ? w.t_left - t_out : -1,
	       w.t_unreach ? w.t_unreach - t_out : -1);
	double max_before = lat_quantile(ld, t_out - 1.5, t_out, 1.0, &n0);
	double max_out = lat_quantile(ld, t_out, t_live ? t_live : t_heal, 1.0, &n1);
	figure("%s write latency: p99 %.1f ms, max %.1f ms before (%u writes); p99 %.1f ms, max "
	       "%.1f ms during the outage (%u writes of 64 KiB, %d writers)",
	       name, p99_before, max_before, n0, p99_out, max_out, n1, NWRITERS);
	figure("%s resync: %" PRIu64 " KiB caught up against %" PRIu64 " KiB written during the "
	       "outage (over the first %" PRIu64 " KiB of the array; member data %" PRIu64
	       " KiB), in %.1f s; live again %.1f s after heal",
	       name, w.catchup_max / KIB, written / KIB, ld->hot / KIB, member_data_bytes(a) / KIB,
	       t_ret && t_done ? t_done - t_ret : t_active - (t_live ? t_live : t_heal),
	       t_live ? t_live - t_heal : -1);

	char seen[96];
	seen_str(w.seen, seen, sizeof(seen));
	if (!t_ctrl)
		bad("bed: h%d's controller never left 'live' during a %.0f s outage", k, outage_s);
	else if (atomic_load(&ld->errors))
		bad("%" PRIu64 " writes failed (first: %s): the array must serve degraded",
		    (uint64_t)atomic_load(&ld->errors), graid_strerror(atomic_load(&ld->first_err)));
	else if (mid.state != GRAID_MEMBER_UNREACHABLE || !w.t_unreach)
		bad("role %u was %s during the outage (states seen: %s), not unreachable", role,
		    state_name(mid.state), seen);
	else if (want_no_rebuild && (w.seen & (1u << GRAID_MEMBER_FAILED)))
		bad("role %u was failed during an outage shorter than ctrl_loss_tmo", role);
	else if (want_no_rebuild && events_count(GRAID_EVENT_MEMBER_FAILED, -1))
		bad("a MEMBER_FAILED event during an outage shorter than ctrl_loss_tmo");
	else if (!events_count(GRAID_EVENT_MEMBER_UNREACHABLE, (int)role) ||
		 !events_count(GRAID_EVENT_MEMBER_RETURNED, (int)role))
		bad("events: %d UNREACHABLE, %d RETURNED for role %u (want 1 each)",
		    events_count(GRAID_EVENT_MEMBER_UNREACHABLE, (int)role),
		    events_count(GRAID_EVENT_MEMBER_RETURNED, (int)role), role);
	else if (settled)
		bad("role %u did not settle active within 90 s of the heal (it is %s)", role,
		    state_name(minfo(a, role).state));
	else if (!w.catchup_max)
		bad("no catch-up work was shown (catchup_total stayed 0)");
	else if (w.catchup_max >= member_data_bytes(a))
		bad("the catch-up copied %" PRIu64 " KiB, the whole member (%" PRIu64
		    " KiB): a full rebuild, not the dirtied regions",
		    w.catchup_max / KIB, member_data_bytes(a) / KIB);
	else if (minfo(a, role).outages < 1)
		bad("member_info.outages is 0 after an outage");
	fprintf(stderr, "  %s: states seen %s\n", name, seen);
	return max_out;
}

static void run_lost(int level)
{
	char name[32];
	snprintf(name, sizeof(name), "lost-midwrite-raid%d", level);
	unsigned n = level == 6 ? 5 : 4;
	const char *m[5];
	for (unsigned i = 0; i < n && !why[0]; i++)
		m[i] = dev_of((int)i + 1);
	struct graid_array *a = create(level, m, n);
	struct load *ld = NULL;
	snprintf(status_why, sizeof(status_why), "no array to look at");
	if (a) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		graid_array_info(a, &info);
		/* a hot quarter: the regions an outage dirties are a part of the member */
		ld = load_new(a, info.size / 4);
		/* RAID-5: graidctl status is looked at while the member is unreachable */
		status_members[0] = status_why[0] = '\0';
		status_checked = 0;
		for (unsigned i = 0; level == 5 && i < n; i++)
			snprintf(status_members + strlen(status_members),
				 sizeof(status_members) - strlen(status_members), "%s ", m[i]);
		outage_under_load(a, ld, 2, 1, 10.0, 10.0, name, 1);
		if (status_members[0] && !status_checked)
			snprintf(status_why, sizeof(status_why),
				 "not looked at: the member was never unreachable for 1 s");
		status_members[0] = '\0';
		verify_scrub_close(a, ld, name);
	}
	load_free(ld);
	result(name);
	if (level == 5) {
		if (status_why[0])
			bad("%s", status_why);
		result("status-shows-unreachable");
	}
}

/*
 * ---- 1b. the array's I/O timeout: the writes in flight when a path goes silent wait for
 * the bound, not for the keep-alive and fast_io_fail_tmo (about 6 s here) ----------------
 */
#define IOT_MS 1000u

static void run_iotimeout(void)
{
	const char *name = "io-timeout-outage";
	const char *m[4];
	for (unsigned i = 0; i < 4 && !why[0]; i++)
		m[i] = dev_of((int)i + 1);
	struct graid_array *a = create(5, m, 4);
	struct load *ld = NULL;
	if (a) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		graid_array_info(a, &info);
		int r = graid_array_set_io_timeout(a, IOT_MS);
		if (r)
			bad("set_io_timeout: %s", graid_strerror(r));
		ld = load_new(a, info.size / 4);
		double worst = why[0] ? 0 : outage_under_load(a, ld, 2, 1, 10.0, 10.0, name, 1);
		struct graid_member_info mi = minfo(a, 1);
		figure("%s: worst write of the outage %.0f ms with an I/O timeout of %u ms "
		       "(keep_alive_tmo=2 fast_io_fail_tmo=2); %" PRIu64 " I/O given up on",
		       name, worst, IOT_MS, mi.timeouts);
		if (!why[0] && mi.timeouts == 0)
			bad("no I/O was given up on: the outage was noticed by the kernel first");
		else if (!why[0] && worst > IOT_MS + 2000)
			bad("a write waited %.0f ms, with an I/O timeout of %u ms", worst, IOT_MS);
		verify_scrub_close(a, ld, name);
	}
	load_free(ld);
	result(name);
}

/* ---- 2. short outage: no rebuild; long outage: remote spare -------------------------------- */

/* Time a spare's rebuild after @role failed; bytes/s of member data. */
static double rebuild_rate(struct graid_array *a, unsigned role, double t_fail)
{
	double t0 = event_time(GRAID_EVENT_REBUILD_STARTED, (int)role);
	int r = graid_array_rebuild(a, NULL, NULL);
	double t1 = event_time(GRAID_EVENT_REBUILD_DONE, (int)role);
	if (r) {
		bad("rebuild onto the spare: %s", graid_strerror(r));
		return 0;
	}
	if (!t0)
		t0 = t_fail;
	if (!t1)
		t1 = now();
	return member_data_bytes(a) / (t1 - t0);
}

static void run_outage(const char *const *local)
{
	const char *m[3] = { dev_of(1), dev_of(3), dev_of(5) };
	const unsigned role = 2; /* h5: ctrl_loss_tmo=9, reconnect_delay=3 */
	struct graid_array *a = create(5, m, 3);
	struct load *ld = NULL;
	double remote_rate = 0, local_rate = 0;
	if (a) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		graid_array_info(a, &info);
		int r = graid_array_add_spare(a, dev_of(6));
		if (r)
			bad("add the remote spare %s: %s", devs[6], graid_strerror(r));
		ld = load_new(a, info.size / 4);
		/* a. 9 s: the controller is deleted after 3 failed reconnects (~20 s of silence),
		 * so this one comes back */
		if (!why[0])
			outage_under_load(a, ld, 5, role, 9.0, 3.0, "outage-short", 1);
		struct graid_member_info sp = minfo(a, 3);
		if (!why[0] && sp.state != GRAID_MEMBER_SPARE)
			bad("the spare is %s after a short outage: a rebuild started",
			    state_name(sp.state));
		if (!why[0])
			verify(ld, "outage-short");
		if (!why[0])
			scrub_clean(a, "outage-short");
		result("outage-short-no-rebuild");

		/* b. until the controller is deleted (3 failed reconnects): failed, the remote spare
		 * takes the role and is rebuilt while the writers go on */
		struct watch w = { 0 };
		events_reset();
		load_start(ld);
		usleep(1000000);
		double t_out = now(), t_gone = 0;
		bed("outage 5");
		while (now() - t_out < 60 && !t_gone) {
			watch_poll(a, role, &w);
			if (!ctrls(5, NULL))
				t_gone = now();
			usleep(200000);
		}
		double t_fail = now();
		while (now() - t_fail < 10 && !events_count(GRAID_EVENT_MEMBER_FAILED, (int)role))
			usleep(100000);
		double t_failed_ev = event_time(GRAID_EVENT_MEMBER_FAILED, (int)role);
		if (!t_gone)
			bad("bed: h5's controller was not deleted within 60 s (ctrl_loss_tmo=9, reconnect_delay=3)");
		else if (!t_failed_ev)
			bad("no MEMBER_FAILED for role %u after its controller was deleted", role);
		else if (t_failed_ev < t_gone - 0.5 && events_count(GRAID_EVENT_MEMBER_UNREACHABLE, (int)role) == 0)
			bad("role %u failed %.1f s before its controller was deleted, never unreachable",
			    role, t_gone - t_failed_ev);
		if (!why[0])
			remote_rate = rebuild_rate(a, role, t_failed_ev);
		load_stop(ld);
		bed("heal 5");
		if (!why[0] && atomic_load(&ld->errors))
			bad("%" PRIu64 " writes failed during the long outage and the rebuild",
			    (uint64_t)atomic_load(&ld->errors));
		struct graid_member_info mi = minfo(a, role);
		if (!why[0] && (mi.state != GRAID_MEMBER_ACTIVE || strcmp(mi.path, devs[6])))
			bad("role %u is %s on %s after the rebuild, not active on the spare %s", role,
			    state_name(mi.state), mi.path, devs[6]);
		figure("outage-long: controller deleted %.1f s after the outage began (ctrl_loss_tmo=9 reconnect_delay=3), "
		       "member failed %.1f s after it began",
		       t_gone ? t_gone - t_out : -1, t_failed_ev ? t_failed_ev - t_out : -1);
		if (!why[0])
			verify(ld, "outage-long");
		if (!why[0])
			scrub_clean(a, "outage-long");
		graid_array_close(a);
		load_free(ld);
		ld = NULL;
	}
	result("outage-long-remote-spare");

	/* The same with local null_blk and a local spare, failed by request: the rate beside. */
	if (remote_rate > 0) {
		struct graid_array *b = create(5, local, 3);
		if (b && !graid_array_add_spare(b, local[3])) {
			struct graid_array_info info = { .struct_size = sizeof(info) };
			graid_array_info(b, &info);
			struct load *l2 = load_new(b, info.size / 4);
			load_start(l2);
			usleep(1000000);
			double t = now();
			graid_array_fail_member(b, role);
			local_rate = rebuild_rate(b, role, t);
			load_stop(l2);
			load_free(l2);
		}
		if (b)
			graid_array_close(b);
		figure("rebuild rate under a writer (engine %s): remote spare over nvme-tcp %.1f MB/s, "
		       "local null_blk spare %.1f MB/s",
		       getenv("GRAID_BACKEND") ? getenv("GRAID_BACKEND") : "default", remote_rate / 1e6,
		       local_rate / 1e6);
		why[0] = '\0'; /* a figure, not a test */
	}
}

/* ---- 3. a media error on a remote member ----------------------------------------------------- */

static void run_media(void)
{
	const char *m[3] = { dev_of(2), dev_of(3), dev_of(4) };
	struct graid_array *a = create(5, m, 3);
	struct load *ld = NULL;
	if (a) {
		ld = load_new(a, 24 * MIB);
		/* every block of the first 24 MiB written once, acknowledged */
		uint8_t *buf = aligned_alloc(4096, MIB);
		for (uint64_t off = 0; off < ld->hot && !why[0]; off += MIB) {
			for (unsigned b = 0; b < MIB / BLK; b++)
				fill_block(buf + b * BLK, off + b * BLK, 7);
			if (graid_array_write(a, buf, MIB, off) != (ssize_t)MIB)
				bad("write at %" PRIu64, off);
			for (unsigned b = 0; b < MIB / BLK; b++)
				atomic_store(&ld->shadow[off / BLK + b], 7);
		}
		free(buf);
		/* A bad 64 KiB chunk on role 1 (h3) in a row where it holds data, not parity: a
		 * parity chunk is read by no read, only by a scrub (whose errors take the member
		 * out). Which rows those are is found by probing: member row R is at member byte
		 * 1 MiB (the data area's start) + R x 64 KiB and holds array bytes R x 128 KiB ..
		 * (R+1) x 128 KiB; a read of those that meets the bad range on role 1 counts an
		 * error there. The probe leaves the data as it is. */
		uint64_t err0 = minfo(a, 1).errors;
		unsigned row = 0;
		uint8_t *rb = aligned_alloc(4096, 128 * KIB);
		for (unsigned r = 80; r < 86 && !row && !why[0]; r++) {
			unsigned sect = (MIB + r * 64 * KIB) / 512;
			if (bed("media_error 3 1 %u 128 keep", sect))
				break;
			if (graid_array_read(a, rb, 128 * KIB, (uint64_t)r * 128 * KIB) != 128 * KIB)
				bad("probe read of row %u failed", r);
			if (minfo(a, 1).errors > err0)
				row = r;
			bed("media_clear 3 1");
		}
		free(rb);
		if (!why[0] && !row)
			bad("bed: no read of rows 80-85 met a bad range on role 1");
		err0 = minfo(a, 1).errors;
		if (!why[0])
			bed("media_error 3 1 %u 128", (MIB + row * 64 * KIB) / 512);
		if (!why[0])
			verify(ld, "read over the bad block");
		struct graid_member_info mi = minfo(a, 1);
		if (!why[0] && mi.errors == err0)
			bad("bed: role 1 saw no I/O error: the bad block was not hit");
		else if (!why[0] && mi.state != GRAID_MEMBER_ACTIVE)
			bad("role 1 is %s after a media error with its controller live, not active",
			    state_name(mi.state));
		else if (!why[0] && nfailed(a))
			bad("%u roles failed after a media error", nfailed(a));
		/* the drive "remaps": reads work again and show what was written there */
		bed("media_clear 3 1");
		if (!why[0])
			scrub_clean(a, "media (the repair must have rewritten the lost block)");
		if (!why[0])
			verify(ld, "media after the repair");
		fprintf(stderr, "  media: row %u, role 1 errors %" PRIu64 " -> %" PRIu64 "\n", row,
			err0, mi.errors);
		graid_array_close(a);
	}
	load_free(ld);
	result("media-error-repaired");
}

/* ---- 4. two paths, one lost ------------------------------------------------------------------ */

static void run_multipath(void)
{
	int live = 0, n = ctrls(1, &live);
	if (n != 2 || live != 2) {
		printf("SKIP multipath-one-path-lost: bed: h1 has %d controllers (%d live), not 2 "
		       "(nvme_core multipath off?)\n", n, live);
		return;
	}
	const char *m[3] = { dev_of(1), dev_of(2), dev_of(3) };
	struct graid_array *a = create(5, m, 3);
	struct load *ld = NULL;
	struct graid_member_info mid = { 0 };
	if (a) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		graid_array_info(a, &info);
		ld = load_new(a, info.size / 4);
		struct watch w = { 0 };
		unsigned worst = 0;
		load_start(ld);
		usleep(1500000);
		double t0 = now();
		bed("outage 1 a");
		while (now() - t0 < 12) {
			watch_poll(a, 0, &w);
			unsigned f = nfailed(a);
			worst = f > worst ? f : worst;
			usleep(100000);
		}
		mid = minfo(a, 0);
		int live_mid;
		ctrls(1, &live_mid);
		bed("heal 1 a");
		for (double t1 = now(); now() - t1 < 15; usleep(100000))
			if (ctrls(1, &live) == 2 && live == 2)
				break;
		load_stop(ld);
		unsigned nw0, nw1;
		double p99a = lat_quantile(ld, t0 - 1.5, t0, 0.99, &nw0);
		double p99b = lat_quantile(ld, t0, t0 + 12, 0.99, &nw1);
		double maxb = lat_quantile(ld, t0, t0 + 12, 1.0, &nw1);
		figure("multipath: write p99 %.1f ms before, %.1f ms (max %.1f ms) with one path of "
		       "two lost (%u writes)", p99a, p99b, maxb, nw1);
		char seen[96];
		seen_str(w.seen, seen, sizeof(seen));
		if (live_mid != 1)
			bad("bed: %d of h1's paths live during the outage of one, not 1", live_mid);
		else if (atomic_load(&ld->errors))
			bad("%" PRIu64 " writes failed with one path of two lost",
			    (uint64_t)atomic_load(&ld->errors));
		else if (w.seen != 1u << GRAID_MEMBER_ACTIVE || worst)
			bad("role 0 went through %s (%u roles out) with one path of two lost", seen,
			    worst);
		else if (events_count(GRAID_EVENT_MEMBER_UNREACHABLE, -1) ||
			 events_count(GRAID_EVENT_MEMBER_FAILED, -1))
			bad("events UNREACHABLE/FAILED with one path of two lost");
		if (!why[0])
			verify(ld, "multipath");
		if (!why[0])
			scrub_clean(a, "multipath");
		graid_array_close(a);
	}
	load_free(ld);
	result("multipath-one-path-lost");
	/* What status shows of it (new member_info fields). */
	if (a && (mid.nvme_paths != 2 || mid.nvme_paths_live != 1 || strcmp(mid.nvme_transport, "tcp")))
		bad("member_info during the outage: nvme_paths %u, nvme_paths_live %u, transport "
		    "'%s' (want 2, 1, tcp)", mid.nvme_paths, mid.nvme_paths_live, mid.nvme_transport);
	result("multipath-paths-shown");
}

/* ---- 5. a member that flaps ------------------------------------------------------------------ */

static void run_flap(void)
{
	const char *m[3] = { dev_of(2), dev_of(3), dev_of(4) };
	const unsigned role = 2, flaps = 20;
	struct graid_array *a = create(5, m, 3);
	struct load *ld = NULL;
	if (a) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		graid_array_info(a, &info);
		ld = load_new(a, info.size / 4);
		struct watch w = { 0 };
		load_start(ld);
		usleep(1000000);
		double t0 = now();
		/* unlink: nvmet drops the controller at once (a reset connection, not a silent
		 * loss), so each flap is noticed without waiting for the keep-alive; down 2.5 s is
		 * past fast_io_fail_tmo=2, so queued I/O fails and the member leaves I/O */
		for (unsigned i = 0; i < flaps && !why[0]; i++) {
			if (w.seen & (1u << GRAID_MEMBER_FAILED))
				break; /* given up on: the rest of the flaps would test nothing */
			bed("unlink 4");
			watch_for(a, role, &w, 2.5);
			bed("link 4");
			watch_for(a, role, &w, 1.0);
		}
		int settled = wait_active(a, role, &w, 90);
		double t_settle = now() - t0;
		usleep(500000);
		load_stop(ld);
		struct graid_member_info mi = minfo(a, role);
		char seen[96];
		seen_str(w.seen, seen, sizeof(seen));
		int unr = events_count(GRAID_EVENT_MEMBER_UNREACHABLE, (int)role);
		int ret = events_count(GRAID_EVENT_MEMBER_RETURNED, (int)role);
		int started = events_count(GRAID_EVENT_REBUILD_STARTED, (int)role);
		int done = events_count(GRAID_EVENT_REBUILD_DONE, (int)role);
		figure("flap: %u flaps, settled %.1f s after the first; outages %" PRIu64
		       ", events unreachable %d returned %d rebuild-started %d rebuild-done %d; most "
		       "catch-up work %" PRIu64 " KiB of %" PRIu64 " KiB member data",
		       flaps, t_settle, mi.outages, unr, ret, started, done, w.catchup_max / KIB,
		       member_data_bytes(a) / KIB);
		if (!why[0] && atomic_load(&ld->errors))
			bad("%" PRIu64 " writes failed while a member flapped",
			    (uint64_t)atomic_load(&ld->errors));
		else if (!why[0] && (w.seen & (1u << GRAID_MEMBER_FAILED)))
			bad("role %u was failed while it flapped (states seen: %s)", role, seen);
		else if (!why[0] && settled)
			bad("role %u did not settle active within 90 s (now %s)", role,
			    state_name(mi.state));
		else if (!why[0] && !(w.seen & (1u << GRAID_MEMBER_UNREACHABLE)))
			bad("role %u was never seen unreachable in %u flaps (states: %s)", role,
			    flaps, seen);
		else if (!why[0] && (mi.outages < 1 || mi.outages > flaps))
			bad("member_info.outages %" PRIu64 " after %u flaps", mi.outages, flaps);
		else if (!why[0] && events_count(GRAID_EVENT_MEMBER_FAILED, -1))
			bad("a MEMBER_FAILED event while a member flapped");
		else if (!why[0] && w.catchup_max >= member_data_bytes(a))
			bad("a catch-up of the whole member (%" PRIu64 " KiB): a full rebuild",
			    w.catchup_max / KIB);
		else if (!why[0] && (started > ret || done > ret))
			bad("%d rebuilds started and %d done for %d returns: a member rebuilt twice",
			    started, done, ret);
		verify_anyway(ld, "flap");
		if (!why[0])
			scrub_clean(a, "flap");
		graid_array_close(a);
	}
	load_free(ld);
	result("flap-20-settles");
}

/* ---- 6. renamed by a reconnect: reassembled by identity ------------------------------------ */

static void run_rename(void)
{
	char old3[64], nqn2[256], nguid3[64], uuid4[64], spec[3][300];
	const char *m[3] = { dev_of(2), dev_of(3), dev_of(4) };
	snprintf(old3, sizeof(old3), "%s", m[1]);
	struct graid_array *a = create(5, m, 3);
	struct load *ld = NULL;
	if (a) {
		ld = load_new(a, 16 * MIB);
		load_start(ld);
		usleep(2000000);
		load_stop(ld);
		if (atomic_load(&ld->errors))
			bad("writes failed before the reconnect");
		graid_array_close(a);
		ld->a = NULL;
		/* h3 leaves; h7 takes the freed instance; h3 comes back under another name */
		bed("disconnect 3");
		for (double t = now(); now() - t < 10 && ctrls(3, NULL); usleep(100000))
			;
		bed("connect 7 a >/dev/null");
		bed("connect 3 a >/dev/null");
		const char *new3 = dev_of(3);
		fprintf(stderr, "  h3's namespace: %s before, %s after the reconnect\n", old3, new3);
		if (!why[0] && !strcmp(old3, new3))
			bad("bed: the reconnect did not rename h3's namespace (%s)", old3);
		bed_out(nqn2, sizeof(nqn2), "nqn 2");
		bed_out(nguid3, sizeof(nguid3), "nguid 3 1");
		bed_out(uuid4, sizeof(uuid4), "uuid 4 1");
		snprintf(spec[0], sizeof(spec[0]), "nqn=%s,nsid=1", nqn2);
		snprintf(spec[1], sizeof(spec[1]), "nguid=%s", nguid3);
		snprintf(spec[2], sizeof(spec[2]), "uuid=%s", uuid4);
		/* graid_member_resolve() looked up at run time, so that this program builds with
		 * a library that does not have it yet (the test then fails, saying so) */
		int (*resolve)(const char *, char *, size_t) =
			(int (*)(const char *, char *, size_t))dlsym(RTLD_DEFAULT, "graid_member_resolve");
		char got[256] = "";
		if (!why[0] && !resolve)
			bad("this libgraid has no graid_member_resolve()");
		else if (!why[0]) {
			int r = resolve(spec[1], got, sizeof(got));
			if (r || strcmp(got, new3))
				bad("graid_member_resolve(%s) = %d '%s', want %s", spec[1], r, got, new3);
		}
		/* given in another order than the roles, by identity only */
		const char *byid[3] = { spec[2], spec[0], spec[1] };
		struct graid_array *b = NULL;
		if (!why[0]) {
			int r = graid_array_open(byid, 3, NULL, &b);
			if (r)
				bad("open by identity (%s ...): %s", spec[0], graid_strerror(r));
		}
		if (b) {
			const char *want[3] = { devs[2], new3, devs[4] };
			const char *wantnqn[3] = { "h2", "h3", "h4" };
			for (unsigned i = 0; i < 3 && !why[0]; i++) {
				struct graid_member_info mi = minfo(b, i);
				size_t l = strlen(mi.nvme_subsysnqn);
				if (mi.state != GRAID_MEMBER_ACTIVE || strcmp(mi.path, want[i]))
					bad("role %u is %s on '%s', want active on %s", i,
					    state_name(mi.state), mi.path, want[i]);
				else if (l < 2 || strcmp(mi.nvme_subsysnqn + l - 2, wantnqn[i]))
					bad("role %u: nvme_subsysnqn '%s', want h%u's", i,
					    mi.nvme_subsysnqn, i + 2);
			}
			ld->a = b;
			if (!why[0])
				verify(ld, "rename");
			if (!why[0])
				scrub_clean(b, "rename");
			graid_array_close(b);
		}
		bed("disconnect 7");
	}
	load_free(ld);
	result("rename-reassembles-by-identity");
}

int main(int argc, char **argv)
{
	t_start = now();
	if (!getenv("NVMF_LIB") || !getenv("NVMF_LOCAL") || !getenv("NVMF_GRAIDCTL")) {
		fprintf(stderr, "nvmeof_vm: run by guest/nvmeof.sh (NVMF_LIB, NVMF_LOCAL, NVMF_GRAIDCTL)\n");
		return 2;
	}
	graid_log_set(log_sink, NULL, GRAID_LOG_NOTICE);
	struct sigaction sa = { .sa_handler = on_sigpipe };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	static char lbuf[512];
	snprintf(lbuf, sizeof(lbuf), "%s", getenv("NVMF_LOCAL"));
	const char *local[4] = { 0 };
	int nl = 0;
	for (char *p = strtok(lbuf, " "); p && nl < 4; p = strtok(NULL, " "))
		local[nl++] = p;
	if (nl < 4) {
		fprintf(stderr, "nvmeof_vm: NVMF_LOCAL names %d devices, want 4\n", nl);
		return 2;
	}
	static const char *all[] = { "perf", "lost5", "lost6", "lost10", "iotimeout", "outage",
				     "media", "multipath", "flap", "rename" };
	const char *const *sc = argc > 1 ? (const char *const *)argv + 1 : all;
	int nsc = argc > 1 ? argc - 1 : (int)(sizeof(all) / sizeof(all[0]));
	for (int i = 0; i < nsc; i++) {
		double t0 = now();
		why[0] = '\0';
		if (!strcmp(sc[i], "perf")) {
			const char *remote[3] = { dev_of(2), dev_of(3), dev_of(4) };
			run_perf(local, remote);
		} else if (!strcmp(sc[i], "lost5"))
			run_lost(5);
		else if (!strcmp(sc[i], "lost6"))
			run_lost(6);
		else if (!strcmp(sc[i], "lost10"))
			run_lost(10);
		else if (!strcmp(sc[i], "iotimeout"))
			run_iotimeout();
		else if (!strcmp(sc[i], "outage"))
			run_outage(local);
		else if (!strcmp(sc[i], "media"))
			run_media();
		else if (!strcmp(sc[i], "multipath"))
			run_multipath();
		else if (!strcmp(sc[i], "flap"))
			run_flap();
		else if (!strcmp(sc[i], "rename"))
			run_rename();
		else {
			fprintf(stderr, "nvmeof_vm: unknown scenario '%s'\n", sc[i]);
			return 2;
		}
		fprintf(stderr, "  scenario %s: %.1f s\n", sc[i], now() - t0);
	}
	figure("sigpipe: libgraid absorbed one or more: %s; reached the application: %d",
	       atomic_load(&sigpipe_absorbed_logs) ? "yes" : "no", (int)sigpipes);
	return failed;
}
