/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for tests, like md's faulty personality: a member given as
 * "faulty:OPTIONS:PATH" behaves as PATH until its schedule says otherwise. OPTIONS, comma
 * separated: read-eio-after=N, write-eio-after=N (I/Os of that kind fail with EIO after N
 * succeed), tear-after=N (the N+1th write lands only its first half and fails, and every
 * I/O after it fails: a device dying mid-write), stall-us=N (every I/O waits N
 * microseconds first), meta-stall-us=N (every durable metadata write, of the write-intent
 * bitmap, the live-data map or the journal, waits N microseconds first; data I/O does not:
 * a drive slow only where the library keeps its records), meta-eio-after=N (those durable
 * metadata writes fail with EIO after N succeed; data I/O does not), sb-eio-after=N (superblock
 * writes fail with EIO after N succeed), sb-stall-us=N (every superblock write waits N
 * microseconds first: a slow superblock round), vanish-after=N (after N I/Os of any kind,
 * all fail, flushes too),
 * flush-eio-after=N (flushes fail with EIO after N succeed), flush-stall-us=N (every flush
 * waits N microseconds first: a slow cache flush), flush-eio-stall-us=N (a flush that is to
 * fail waits N microseconds first: a device that hangs, then errors), zero-stall-us=N (a discard or
 * write-zeroes waits N microseconds once the descriptor it goes through is chosen), kill-after=N
 * (at this member's N+1th write the process sends what it has queued and dies by SIGKILL:
 * power lost between the writes of one stripe, for crash tests).
 *
 * Two more options make a member behave like a drive of its own, for benchmarks on a host
 * whose members all share one RAM: mbps=N (the drive moves N * 10^6 bytes per second) and
 * iops=N (it starts at most N I/Os per second). Each I/O holds the drive for
 * max(bytes / rate, 1 / iops), one after another in the order they are issued: the I/O
 * waits until the drive has served everything issued before it plus its own share, then
 * runs. See docs/BENCH-REBUILD.md ("Emulated drives") for what this model leaves out.
 *
 * bad-block=N models a sector the drive cannot read: reads that touch the 4 KiB block at
 * data-area byte N fail with EIO until a write covers the whole block (the drive remaps it
 * then, as a real one does), like a media error with the drive otherwise healthy.
 * bad-block-sticky=N is one the drive cannot remap either: writes that touch it fail too.
 * Up to FAULT_BAD_BLOCKS of them, in any mix, each given as its own option.
 *
 * fabric-state=FILE makes the member behave like an NVMe-oF namespace with one controller
 * whose state is the first word of FILE ("live", "connecting"; FILE absent: the controller
 * was deleted): its I/O and flushes fail with EIO while the state is not "live", as the
 * kernel fails them once fast_io_fail_tmo has passed (docs/REMOTE.md). FILE may contain
 * neither ',' nor ':'.
 *
 * pr=FILE makes the member a drive with persistent reservations (member_pr.c), shared by
 * every handle that names FILE: FILE holds the key that holds Write Exclusive, in hex (empty
 * or absent: none). The key a handle registers through member_pr.c is its own; while FILE
 * names another key, the handle's writes (data, superblock, bitmap, journal) fail with
 * EBADE as a real drive's do (the kernel's reservation conflict). A test that writes FILE
 * itself models another host taking the drive. FILE may contain neither ',' nor ':'.
 *
 * health=FILE scripts the drive's health (graid_array_member_health(), the health watch):
 * FILE's lines "KEY VALUE" name fields of struct graid_member_health (critical_warning,
 * available_spare, spare_threshold, percent_used, temperature_c, media_errors,
 * error_log_entries, power_on_hours, power_cycles, unsafe_shutdowns); the others read 0.
 * Read at each call, so a test rewrites FILE (whole, by rename) to make the drive go bad.
 * FILE may contain neither ',' nor ':'.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array/array.h"
#include "member/member.h"

#define FAULT_BAD_BLOCKS 8

struct member_fault {
	long read_eio_after, write_eio_after, tear_after, vanish_after, kill_after;
	long flush_eio_after;
	long meta_eio_after;            /* meta-eio-after=N: metadata writes only */
	long sb_eio_after;              /* sb-eio-after=N: superblock writes only */
	uint64_t sb_stall_ns;           /* sb-stall-us=N: superblock writes only */
	uint64_t flush_stall_ns;        /* flush-stall-us=N: flushes only */
	uint64_t flush_eio_stall_ns;    /* flush-eio-stall-us=N: failing flushes only */
	uint64_t zero_stall_ns;         /* zero-stall-us=N: discards and write-zeroes only */
	long sb_kill_after;             /* sb-kill-after=N: SIGKILL once N superblocks landed */
	atomic_long sb_writes, sb_landed;
	uint64_t stall_ns;
	uint64_t meta_stall_ns;         /* meta-stall-us=N: metadata writes only */
	long mbps, iops;                /* drive model; 0: unlimited */
	atomic_uint_least64_t busy_until; /* CLOCK_MONOTONIC ns when the drive is next idle */
	atomic_long reads, writes, ios, flushes, meta_writes;
	atomic_bool dead;
	char *fabric_state;             /* fabric-state=FILE, or NULL */
	char *health_file;              /* health=FILE, or NULL */
	/* bad-block=N, bad-block-sticky=N: data-area offsets, -1 none or remapped */
	atomic_llong bad_block[FAULT_BAD_BLOCKS];
	bool bad_sticky[FAULT_BAD_BLOCKS];
	unsigned nbad;
	char *pr_file;                  /* pr=FILE, or NULL */
	atomic_uint_least64_t pr_key;   /* the key this handle registered; 0 none */
};

static bool fault_opt(const char *opt, size_t n, const char *name, long *val)
{
	size_t k = strlen(name);
	char *end;

	if (n <= k + 1 || strncmp(opt, name, k) || opt[k] != '=')
		return false;
	*val = strtol(opt + k + 1, &end, 10);
	return end == opt + n && *val >= 0;
}

int fault_parse(const char *spec, struct member_fault **out, const char **path)
{
	const char *p = spec + strlen("faulty:"), *colon = strchr(p, ':');
	struct member_fault *f;

	if (!colon)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->read_eio_after = f->write_eio_after = f->tear_after = f->vanish_after = -1;
	f->kill_after = -1;
	f->flush_eio_after = -1;
	f->meta_eio_after = -1;
	f->sb_eio_after = -1;
	f->sb_kill_after = -1;
	while (p < colon) {
		const char *end = memchr(p, ',', (size_t)(colon - p));
		size_t n = (size_t)((end ? end : colon) - p);
		long v;

		if (fault_opt(p, n, "read-eio-after", &v))
			f->read_eio_after = v;
		else if (fault_opt(p, n, "write-eio-after", &v))
			f->write_eio_after = v;
		else if (fault_opt(p, n, "tear-after", &v))
			f->tear_after = v;
		else if (fault_opt(p, n, "vanish-after", &v))
			f->vanish_after = v;
		else if (fault_opt(p, n, "kill-after", &v))
			f->kill_after = v;
		else if ((fault_opt(p, n, "bad-block", &v) ||
			  fault_opt(p, n, "bad-block-sticky", &v)) && f->nbad < FAULT_BAD_BLOCKS) {
			f->bad_sticky[f->nbad] = p[9] == '-';
			atomic_init(&f->bad_block[f->nbad++], (long long)v / 4096 * 4096);
		}
		else if (fault_opt(p, n, "flush-eio-after", &v))
			f->flush_eio_after = v;
		else if (fault_opt(p, n, "flush-eio-stall-us", &v))
			f->flush_eio_stall_ns = (uint64_t)v * 1000;
		else if (fault_opt(p, n, "flush-stall-us", &v))
			f->flush_stall_ns = (uint64_t)v * 1000;
		else if (fault_opt(p, n, "zero-stall-us", &v))
			f->zero_stall_ns = (uint64_t)v * 1000;
		else if (fault_opt(p, n, "stall-us", &v))
			f->stall_ns = (uint64_t)v * 1000;
		else if (fault_opt(p, n, "meta-stall-us", &v))
			f->meta_stall_ns = (uint64_t)v * 1000;
		else if (fault_opt(p, n, "meta-eio-after", &v))
			f->meta_eio_after = v;
		else if (fault_opt(p, n, "sb-eio-after", &v))
			f->sb_eio_after = v;
		else if (fault_opt(p, n, "sb-kill-after", &v))
			f->sb_kill_after = v;
		else if (fault_opt(p, n, "sb-stall-us", &v))
			f->sb_stall_ns = (uint64_t)v * 1000;
		else if (n > 13 && !strncmp(p, "fabric-state=", 13) && !f->fabric_state) {
			f->fabric_state = strndup(p + 13, n - 13);
			if (!f->fabric_state) {
				fault_free(f);
				return -ENOMEM;
			}
		} else if (n > 7 && !strncmp(p, "health=", 7) && !f->health_file) {
			f->health_file = strndup(p + 7, n - 7);
			if (!f->health_file) {
				fault_free(f);
				return -ENOMEM;
			}
		} else if (n > 3 && !strncmp(p, "pr=", 3) && !f->pr_file) {
			f->pr_file = strndup(p + 3, n - 3);
			if (!f->pr_file) {
				fault_free(f);
				return -ENOMEM;
			}
		} else if (fault_opt(p, n, "mbps", &v) && v > 0)
			f->mbps = v;
		else if (fault_opt(p, n, "iops", &v) && v > 0)
			f->iops = v;
		else {
			graid__log(GRAID_LOG_ERR, "faulty member: unknown option '%.*s'", (int)n, p);
			fault_free(f);
			return -EINVAL;
		}
		p += n + (end ? 1 : 0);
	}
	*out = f;
	*path = colon + 1;
	return 0;
}

void fault_free(struct member_fault *f)
{
	if (f) {
		free(f->fabric_state);
		free(f->health_file);
		free(f->pr_file);
	}
	free(f);
}

/* One "KEY VALUE" line of a health=FILE into @p h; false: an unknown key or a bad value. */
static bool fault_health_line(const char *key, long long v, struct graid_member_health *h)
{
	static const struct {
		const char *key;
		size_t off, size;
	} fields[] = {
#define HF(name) { #name, offsetof(struct graid_member_health, name), \
		   sizeof(((struct graid_member_health *)0)->name) }
		HF(critical_warning), HF(available_spare), HF(spare_threshold), HF(percent_used),
		HF(temperature_c), HF(media_errors), HF(error_log_entries), HF(power_on_hours),
		HF(power_cycles), HF(unsafe_shutdowns),
#undef HF
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint8_t *at = (uint8_t *)h + fields[i].off;

		if (strcmp(key, fields[i].key))
			continue;
		if (fields[i].size == 1 && v >= 0 && v <= 255)
			*at = (uint8_t)v;
		else if (fields[i].size == sizeof(int) && v >= INT32_MIN && v <= INT32_MAX)
			*(int *)(void *)at = (int)v;
		else if (fields[i].size == 8 && v >= 0)
			*(uint64_t *)(void *)at = (uint64_t)v;
		else
			return false;
		return true;
	}
	return false;
}

char *fault_health_file(const struct member_fault *f)
{
	return f && f->health_file ? strdup(f->health_file) : NULL;
}

int fault_health(struct member_fault *f, struct graid_member_health *h)
{
	if (!f || !f->health_file)
		return -EOPNOTSUPP;
	return fault_health_at(f->health_file, h);
}

int fault_health_at(const char *file, struct graid_member_health *h)
{
	char key[40];
	long long v;
	int rc = 0, n;
	FILE *fp;

	/* A FIFO blocks here until written: a test's drive whose health command hangs. */
	fp = fopen(file, "re");
	if (!fp)
		return -EIO;
	snprintf(h->source, sizeof(h->source), "scripted");
	while (rc == 0 && (n = fscanf(fp, "%39s %lld", key, &v)) != EOF) {
		if (n != 2 || !fault_health_line(key, v, h)) {
			graid__log(GRAID_LOG_ERR, "faulty member: %s: bad health line at '%s'",
				   file, n >= 1 ? key : "?");
			rc = -EINVAL;
		}
	}
	fclose(fp);
	return rc;
}

bool fault_fabric_state(struct member_fault *f, char *state, size_t len)
{
	char word[16] = "";
	FILE *fp;

	if (!f->fabric_state)
		return false;
	fp = fopen(f->fabric_state, "re");
	if (fp) {
		if (fscanf(fp, "%15s", word) != 1)
			word[0] = '\0';
		fclose(fp);
	}
	if (state && len)
		snprintf(state, len, "%s", word);
	return true;
}

/* The modelled controller is not live: its I/O fails (fast_io_fail_tmo has passed). */
static bool fault_fabric_down(struct member_fault *f)
{
	char state[16];

	return fault_fabric_state(f, state, sizeof(state)) && strcmp(state, "live");
}

/*
 * Reserve the drive for one I/O of @p bytes and return how long the I/O must wait before it
 * runs: until the drive has finished everything reserved before it, plus its own time.
 */
static uint64_t fault_drive_wait(struct member_fault *f, uint64_t bytes)
{
	uint64_t cost = 0, now, start, end, prev;

	if (f->mbps)
		cost = bytes * 1000 / (uint64_t)f->mbps; /* bytes / (mbps * 10^6) s, in ns */
	if (f->iops && 1000000000ull / (uint64_t)f->iops > cost)
		cost = 1000000000ull / (uint64_t)f->iops;
	now = graid__now_ns();
	prev = atomic_load(&f->busy_until);
	do {
		start = prev > now ? prev : now;
		end = start + cost;
	} while (!atomic_compare_exchange_weak(&f->busy_until, &prev, end));
	return end - now;
}

/*
 * bad-block=: a read that touches it fails; a write that covers it remaps it (a sticky one
 * fails every write that touches it too). A write that remaps one but fails for another
 * still remaps the first: the drive wrote the sectors it could.
 */
static bool fault_bad_block(struct member_fault *f, bool write, uint64_t off, uint64_t bytes)
{
	bool fail = false;

	for (unsigned i = 0; i < f->nbad; i++) {
		long long bb = atomic_load(&f->bad_block[i]);

		if (bb < 0 || off >= (uint64_t)bb + 4096 || off + bytes <= (uint64_t)bb)
			continue;
		if (!write || f->bad_sticky[i])
			fail = true;
		else if (off <= (uint64_t)bb && off + bytes >= (uint64_t)bb + 4096)
			atomic_store(&f->bad_block[i], -1);
	}
	return fail;
}

/* pr=FILE: the key that holds the modelled reservation now; 0 none. */
static uint64_t fault_pr_holder(const struct member_fault *f)
{
	unsigned long long key = 0;
	FILE *fp = fopen(f->pr_file, "re");

	if (fp) {
		if (fscanf(fp, "%llx", &key) != 1)
			key = 0;
		fclose(fp);
	}
	return key;
}

/* Written whole through a rename: another handle's look never sees it half written. */
static int fault_pr_set_holder(const struct member_fault *f, uint64_t key)
{
	static atomic_uint seq;
	char tmp[4096];
	FILE *fp;
	int rc;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld.%u", f->pr_file, (long)getpid(),
		     atomic_fetch_add(&seq, 1)) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fp = fopen(tmp, "we");
	if (!fp)
		return -errno;
	rc = key ? fprintf(fp, "%016llx\n", (unsigned long long)key) : 0;
	rc = fclose(fp) || rc < 0 ? -EIO : 0;
	if (rc == 0 && rename(tmp, f->pr_file))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

bool fault_pr_refuses(struct member_fault *f)
{
	uint64_t holder;

	if (!f->pr_file)
		return false;
	holder = fault_pr_holder(f);
	return holder && holder != atomic_load(&f->pr_key);
}

int fault_pr(struct member_fault *f, enum fault_pr_op op, uint64_t key, uint64_t victim)
{
	uint64_t holder;

	if (!f->pr_file)
		return -EOPNOTSUPP;
	holder = fault_pr_holder(f);
	switch (op) {
	case FAULT_PR_RESERVE:
		atomic_store(&f->pr_key, key); /* register, ignoring any key it had */
		if (holder == key)
			return 0;
		return holder ? -EBUSY : fault_pr_set_holder(f, key);
	case FAULT_PR_PREEMPT:
		if (atomic_load(&f->pr_key) != key)
			return -EBUSY;
		/*
		 * Like a drive where @victim is registered but another key holds: the preempt
		 * removes only that registration, and succeeds.
		 */
		return holder == victim ? fault_pr_set_holder(f, key) : 0;
	case FAULT_PR_RELEASE:
		atomic_store(&f->pr_key, 0);
		return holder == key ? fault_pr_set_holder(f, 0) : 0;
	}
	return -EINVAL;
}

/* Member writes left before the cut (fault_writes_cut_after); -1: no cut. */
static _Atomic long fault_cut_left = -1;

void fault_writes_cut_after(long n)
{
	atomic_store(&fault_cut_left, n);
}

long fault_writes_cut_left(void)
{
	return atomic_load(&fault_cut_left);
}

bool fault_write_cut(void)
{
	long left = atomic_load(&fault_cut_left);

	while (left > 0 && !atomic_compare_exchange_weak(&fault_cut_left, &left, left - 1))
		;
	return left == 0;
}

enum fault_action fault_decide(struct member_fault *f, bool write, bool meta, uint64_t off,
			       uint64_t bytes, uint64_t *stall_ns)
{
	long n = atomic_fetch_add(&f->ios, 1);
	long k = write ? atomic_fetch_add(&f->writes, 1) : atomic_fetch_add(&f->reads, 1);

	if (write && fault_pr_refuses(f))
		return FAULT_CONFLICT;

	if (atomic_load(&f->dead) || fault_fabric_down(f) ||
	    fault_bad_block(f, write, off, bytes))
		return FAULT_FAIL;
	if (f->vanish_after >= 0 && n >= f->vanish_after) {
		atomic_store(&f->dead, true);
		return FAULT_FAIL;
	}
	if (write && f->kill_after >= 0 && k >= f->kill_after)
		return FAULT_KILL;
	if (write && f->tear_after >= 0 && k >= f->tear_after) {
		atomic_store(&f->dead, true);
		return FAULT_TEAR;
	}
	if ((write ? f->write_eio_after : f->read_eio_after) >= 0 &&
	    k >= (write ? f->write_eio_after : f->read_eio_after))
		return FAULT_FAIL;
	if (write && meta && f->meta_eio_after >= 0 &&
	    atomic_fetch_add(&f->meta_writes, 1) >= f->meta_eio_after)
		return FAULT_FAIL;
	*stall_ns = f->stall_ns + (meta ? f->meta_stall_ns : 0);
	if (f->mbps || f->iops)
		*stall_ns += fault_drive_wait(f, bytes);
	return *stall_ns ? FAULT_STALL : FAULT_NONE;
}

static void fault_sleep(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	while (ns && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool fault_sb_write_fails(struct member_fault *f)
{
	fault_sleep(f->sb_stall_ns);
	return atomic_load(&f->dead) || fault_fabric_down(f) ||
	       (f->sb_eio_after >= 0 && atomic_fetch_add(&f->sb_writes, 1) >= f->sb_eio_after);
}

void fault_sb_landed(struct member_fault *f)
{
	if (f->sb_kill_after >= 0 && atomic_fetch_add(&f->sb_landed, 1) + 1 >= f->sb_kill_after)
		raise(SIGKILL);
}

void fault_zero_stall(struct member_fault *f)
{
	fault_sleep(f->zero_stall_ns);
}

bool fault_flush_fails(struct member_fault *f)
{
	long k = atomic_fetch_add(&f->flushes, 1);

	bool fails;

	fault_sleep(f->flush_stall_ns);
	fails = atomic_load(&f->dead) || fault_fabric_down(f) ||
		(f->flush_eio_after >= 0 && k >= f->flush_eio_after);
	if (fails)
		fault_sleep(f->flush_eio_stall_ns);
	return fails;
}
