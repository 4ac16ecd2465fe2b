/* SPDX-License-Identifier: MIT */
/* array_bench: the BENCHMARKS.md fio profiles on RAID arrays, next to JBOD on the same files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "../bench_util.h"
#include "ab.h"

#define MAIN_META_BYTES (1ull << 20) /* the library's default data offset */

static void main_header(int argc, char **argv, const struct ab_opts *o)
{
	char model[272], date[64];
	time_t now = time(NULL);

	bench_cpu_model(model, sizeof(model));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	printf("# array_bench, libgraid %s, %s\n# CPU: %s, %ld online cores\n# command:", graid_version(),
	       date, model, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n# %u threads x qd", o->threads);
	for (unsigned i = 0; i < o->nqds; i++)
		printf("%s%u", i ? "," : " ", o->qds[i]);
	printf(", %.2f s per profile and target", o->seconds);
	if (o->repeat > 1)
		printf(" per round, %u rounds alternating %s", o->repeat,
		       o->csum_ab ? "checksums off and on" : "array and JBOD");
	printf(", chunk %u KiB\n", o->chunk >> 10);
	bench_print_loadavg("at start (1 min)");
}

/* Member reads and writes so far: the I/O amplification of each profile. */
static uint64_t main_member_ios(struct graid_array *a, unsigned n)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		if (graid_array_member_info(a, i, &mi) == 0)
			sum += mi.reads + mi.writes;
	return sum;
}

/* Prefill once, so that reads return written data rather than holes. */
static int main_prefill(struct graid_array *a, uint64_t size, uint64_t seed)
{
	uint64_t len = size / (1u << 20) * (1u << 20);
	uint8_t *buf;
	uint64_t t0 = bench_now_ns();
	int rc;

	if (posix_memalign((void **)&buf, 4096, 1u << 20))
		return -ENOMEM;
	for (uint32_t o = 0; o < (1u << 20); o += 8) {
		uint64_t v = ab_rand(&seed);

		memcpy(buf + o, &v, 8);
	}
	rc = ab_array_stream(a, true, buf, 0, len, 1u << 20, true);
	if (rc == 0)
		printf("prefill: %llu MiB in 1 MiB sequential writes, %.2f GB/s\n",
		       (unsigned long long)(len >> 20),
		       (double)len / (double)(bench_now_ns() - t0));
	free(buf);
	return rc;
}

static int main_level(const struct ab_opts *o, const struct ab_members *m, int level,
		      bool journal, struct ab_row *rows, unsigned *nrows, FILE *csv, bool direct)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = o->chunk, .backend = o->backend,
					  /* Given devices: only with --force over a libgraid array. */
					  .flags = (m->given && !o->force ? 0 : GRAID_CREATE_FORCE) |
						   (journal ? GRAID_CREATE_JOURNAL : 0) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct ab_geom g = { .level = level, .n = o->members, .chunk = o->chunk,
			     .journal = journal };
	struct graid_array *a;
	struct ab_hist *hist = calloc(2, sizeof(*hist));  /* array, JBOD */
	struct ab_jbod jbod;
	const char *queues = o->queue_flags ? "of one thread asked (not made)"
					    : "plain (--one-thread off)";
	int rc;

	if (!hist)
		return -ENOMEM;
	bench_watch("graid_array_create", 10);
	rc = graid_array_create(m->paths, m->n, &cfg, &a);
	if (rc) {
		free(hist);
		fprintf(stderr, "array_bench: RAID-%d create: %s\n", level, graid_strerror(rc));
		return rc;
	}
	graid_array_info(a, &info);
	graid_array_member_info(a, 0, &mi);
	ab_array_queue_flags = o->queue_flags;
	/* What the load threads' queues will get: the flag holds only where the kernel can. */
	if (o->queue_flags) {
		struct graid_queue *probe;

		if (graid_queue_create_flags(a, 1, o->queue_flags, &probe) == 0) {
			queues = graid_queue_flags(probe) ? "of one thread (deferred completion work)"
							  : "plain (this kernel cannot defer)";
			graid_queue_destroy(probe);
		}
	}
	if (o->io_timeout_ms) {
		graid_array_set_io_timeout(a, o->io_timeout_ms);
		printf("io timeout: %u ms (member reads through the library's buffers)\n",
		       o->io_timeout_ms);
	}
	printf("\n== RAID-%d%s: %u members, chunk %u KiB, %llu MiB usable, engine %s, "
	       "member I/O %s, queues %s\n", level, journal ? " with journal" : "", info.nmembers,
	       info.chunk_bytes >> 10, (unsigned long long)(info.size >> 20), info.engine,
	       mi.direct_io ? "O_DIRECT" : "buffered",
	       queues);
	/*
	 * Given devices (--devices) are used whole by the array; the runs keep to --member-mib
	 * of data per member, as on files, so that a large drive is not filled for hours and the
	 * JBOD side covers the same data.
	 */
	if (m->given) {
		unsigned n = info.nmembers;
		uint64_t ndata = level == 0 ? n : level == 1 ? 1 : level == 5 ? n - 1
			       : level == 6 ? n - 2 : n / 2;
		uint64_t cap = o->data_bytes * ndata;

		if (cap < info.size)
			info.size = cap / info.chunk_bytes / ndata * info.chunk_bytes * ndata;
		printf("runs on the first %llu MiB of the array (--member-mib of data per member)\n",
		       (unsigned long long)(info.size >> 20));
	}
	bench_watch("prefill", (double)info.size / 1e8);
	rc = main_prefill(a, info.size, o->seed);
	if (rc == -ENOSYS || rc == -EPERM) {
		printf("array_bench: io_uring is not available here (%s): skipped\n",
		       graid_strerror(rc));
		graid_array_close(a);
		free(hist);
		return 77;
	}
	/* The members verify.c fails later, failed now: the profiles measure degraded I/O. */
	for (unsigned k = 0; rc == 0 && k < o->degraded && level != 0; k++) {
		unsigned idx = k == 0 ? 1 : 1 + o->members / 2;

		rc = graid_array_fail_member(a, idx);
		if (rc)
			fprintf(stderr, "array_bench: --degraded: fail_member(%u): %s\n", idx,
				graid_strerror(rc));
		else
			printf("degraded: member %u failed before the profiles\n", idx);
	}
	if (rc == 0 && o->hist_ab) {
		rc = ab_hist_ab(a, o, info.size);
		graid_array_close(a);
		free(hist);
		return rc;
	}
	if (rc == 0)
		rc = ab_jbod_open(&jbod, m->paths, m->n, MAIN_META_BYTES, o->data_bytes);
	if (rc) {
		graid_array_close(a);
		free(hist);
		return rc;
	}
	if (jbod.direct != direct)
		printf("note: the JBOD baseline got %s I/O, unlike the library\n",
		       jbod.direct ? "O_DIRECT" : "buffered");
	for (unsigned qi = 0; qi < o->nqds && rc == 0; qi++) {
		struct ab_row *first = &rows[*nrows];

		for (unsigned pi = 0; pi < o->nprofiles && rc == 0; pi++) {
			struct ab_row *r = &rows[(*nrows)++];
			struct ab_run_cfg rc_arr = { .p = o->profiles[pi], .threads = o->threads,
						     .qd = o->qds[qi], .seconds = o->seconds,
						     .size = info.size, .seed = o->seed + pi };
			struct ab_run_cfg rc_jbod = rc_arr;

			rc_jbod.size = ab_jbod_size(&jbod);
			*r = (struct ab_row){ .g = g, .qd = o->qds[qi], .p = o->profiles[pi] };
			bench_watch(r->p->name, o->seconds * 2 * o->repeat);
			/* Alternating rounds put both sides under the same background load on a
			 * shared machine, so their ratio stays meaningful when the load moves. */
			memset(hist, 0, 2 * sizeof(*hist));
			for (unsigned k = 0; k < o->repeat && rc == 0; k++) {
				uint64_t mio0 = main_member_ios(a, o->members);

				if (o->only != AB_SIDE_JBOD)
					rc = ab_run(&ab_array_ops, a, &rc_arr, &r->arr, &hist[0]);
				r->arr.member_ios += main_member_ios(a, o->members) - mio0;
				if (rc == 0 && o->only != AB_SIDE_ARRAY)
					rc = ab_run(&ab_jbod_ops, &jbod, &rc_jbod, &r->jbod, &hist[1]);
			}
			if (rc)
				break;
			ab_result_finish(&r->arr, &hist[0]);
			ab_result_finish(&r->jbod, &hist[1]);
			r->best_iops = ab_best_iops(&g, r->p, r->jbod.iops);
			if (csv)
				ab_report_csv_row(csv, r, o->threads, o->seconds * o->repeat,
						  m->given ? "(--devices)" : o->dir,
						  direct);
		}
		if (rc == 0) {
			printf("\nRAID-%d%s, %u threads x qd %u:\n", level,
			       journal ? " with journal" : "", o->threads, o->qds[qi]);
			ab_report_table(stdout, first, (unsigned)(&rows[*nrows] - first));
		}
	}
	ab_jbod_close(&jbod);
	free(hist);
	if (rc == 0) {
		bench_watch("verify", 10);
		rc = ab_verify(a, &g, o->quick ? 8ull << 20 : 64ull << 20, o->seed + 99) ? -EIO : 0;
	}
	bench_watch("graid_array_close", 10);
	if (graid_array_close(a) && rc == 0 && level != 0)
		printf("note: close reported an error after the verification failed members\n");
	return rc;
}

int main(int argc, char **argv)
{
	struct ab_opts o;
	struct ab_members m;
	struct ab_row *rows;
	struct statfs sfs;
	uint64_t member_bytes;
	unsigned nrows = 0;
	bool ram, direct;
	FILE *csv = NULL;
	int rc = ab_opts_parse(&o, argc, argv);

	if (rc)
		return rc > 0 ? 0 : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_watch_init("array_bench");
	main_header(argc, argv, &o);
	member_bytes = MAIN_META_BYTES + o.data_bytes + (o.journal ? ab_journal_bytes(o.chunk) : 0);
	if (o.ndevices ? ab_members_use(&m, o.devices, o.ndevices, member_bytes)
		       : ab_members_create(&m, o.dir, o.members, member_bytes))
		return 1;
	direct = ab_path_direct(m.paths[0]);
	ram = !m.given && statfs(m.dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
	printf("# members: %u x (1 MiB metadata + %llu MiB data) %s %s: %s, %s\n", m.n,
	       (unsigned long long)(o.data_bytes >> 20), m.given ? "on" : "in",
	       m.given ? m.paths[0] : m.dir,
	       m.given ? "the devices given (--devices)" : ram ? "RAM-backed (tmpfs)" : "on disk",
	       direct ? "O_DIRECT" : "no O_DIRECT there, so the library and the JBOD baseline "
				     "use buffered I/O");
	rows = calloc((size_t)o.nlevels * o.nqds * o.nprofiles, sizeof(*rows));
	if (o.csv && !(csv = fopen(o.csv, "w")))
		perror(o.csv);
	if (csv)
		ab_report_csv_header(csv);
	rc = rows ? 0 : -ENOMEM;
	if (rc == 0 && o.csum_ab) {
		rc = ab_csum_ab(&o, &m);
		o.nlevels = 0;
		nrows = 0;
	}
	for (unsigned li = 0; li < o.nlevels && rc == 0; li++) {
		bool parity = o.levels[li] == 5 || o.levels[li] == 6;

		if (o.journal != AB_JOURNAL_ON || !parity)
			rc = main_level(&o, &m, o.levels[li], false, rows, &nrows, csv, direct);
		if (rc == 0 && o.journal != AB_JOURNAL_OFF && parity)
			rc = main_level(&o, &m, o.levels[li], true, rows, &nrows, csv, direct);
	}
	alarm(0);
	if (rc == 0) {
		if (!o.csum_ab)
			ab_report_targets(stdout, rows, nrows, ram);
		if (o.journal == AB_JOURNAL_BOTH)
			ab_report_journal(stdout, rows, nrows);
		bench_print_loadavg("at end (1 min)");
	}
	if (csv)
		fclose(csv);
	ab_members_remove(&m);
	free(rows);
	if (rc == 77)
		return 77;
	if (rc) {
		fprintf(stderr, "array_bench: FAILED: %s\n", graid_strerror(rc));
		return 1;
	}
	return 0;
}
