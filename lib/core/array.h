/* SPDX-License-Identifier: MIT */
/* The array's internal shape, shared by the files that implement arrays and queues. */
#ifndef LIBGRAID_CORE_ARRAY_H
#define LIBGRAID_CORE_ARRAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include <linux/time_types.h>

#include "array_view.h"
#include "array_own.h"
#include "internal.h"
#include "layout.h"
#include "member_nvme.h"
#include "superblock.h"

/* Memory alignment and I/O granule for O_DIRECT; also the default array block size. */
#define ARRAY_ALIGN 4096u
#define ARRAY_DEFAULT_CHUNK (64u * 1024)

struct member_fault;
struct journal;
struct live;

/* One member role. fd is -1 when the role is missing. */
struct member {
	int fd;
	struct member_fault *fault;    /* test-only fault injection ("faulty:" paths), or NULL */
	atomic_int state;              /* enum graid_member_state */
	bool direct;                   /* opened with O_DIRECT */
	bool is_blk;                   /* a block device */
	uint32_t lbs;                  /* logical block size */
	uint64_t size;                 /* bytes */
	dev_t dev;                     /* st_rdev for devices, st_dev for files */
	ino_t ino;                     /* files: inode, for duplicate detection */
	uint8_t uuid[16];              /* member UUID from its superblock */
	/*
	 * The first 8 bytes of the UUID of the device that holds this role, as the superblocks
	 * record it (0: unknown): also known while the role is missing, so a device coming back
	 * can be told from one the role was given away from.
	 */
	uint64_t slot_id;
	/* REBUILDING only to catch up: only the regions the bitmap marks need copying. */
	bool catchup;
	/* Came back at this open after missing updates: its copy of the bitmap is stale. */
	bool rejoined;
	/* Taken back by GRAID_OPEN_FORCE: its copies are the last to trust (resync). */
	bool forced;
	/* Out of the array (MISSING or FAILED): the event that recorded it out; 0 unknown. */
	uint64_t left_events;
	_Atomic uint64_t rebuild_offset; /* REBUILDING: data-area bytes already in sync */
	char path[256];
	char identity[128];
	struct member_nvme nvme;       /* NVMe identify data; passthrough when nvme.passthru */
	atomic_uint_fast64_t reads, writes, read_bytes, write_bytes, errors;
	/* Catch-up or rebuild of this role: bytes written to it, and bytes to write in all. */
	atomic_uint_fast64_t copied, copy_total;
	/* UNREACHABLE (array_reach.c): times it went so, and whether a full rebuild was cut. */
	atomic_uint_fast64_t outages;
	bool reach_full;
	/* Read errors repaired in place (array_readerr.c): a count that halves every hour. */
	unsigned readerr_count;         /* meta_lock */
	uint64_t readerr_decay_ns;
	atomic_uint_fast64_t readerr_repaired;
};

/* Write-intent bitmap (bitmap.c): per region DIRTY (marked on disk) and HOT (written lately). */
#define BITMAP_DIRTY 1u
#define BITMAP_HOT 2u

struct bitmap {
	bool enabled;
	uint64_t offset, bytes;        /* on every member, bytes from its start */
	uint64_t region_stripes;       /* stripes per bit */
	uint64_t nregions;
	_Atomic uint8_t *state;        /* per region */
	atomic_uint *inflight;         /* per region: writes in flight */
	uint8_t *disk;                 /* the bitmap as on disk */
	pthread_mutex_t lock;          /* disk image and bitmap writes */
};

/* Stripe locks: a stripe hashes to one of these; a bucket is held by one stripe op. */
#define STRIPE_LOCK_BUCKETS 65536u

struct graid_array {
	struct graid_layout lay;
	struct graid_backend *be;      /* parity engine; NULL for levels 0, 1, 10 */
	uint64_t data_offset;          /* bytes from member start to data area */
	uint32_t block_size;
	uint8_t uuid[16];
	uint64_t ctime;

	pthread_mutex_t meta_lock;     /* state changes and superblock writes */
	uint64_t events;
	/*
	 * The event since which the bitmap keeps every mark (no mark is cleared while a role
	 * is not active, so a member that comes back needs only the marked regions); 0 while
	 * every role is active. Maintained by array_recount().
	 */
	uint64_t history_events;
	uint64_t scrub_offset;         /* member rows an unfinished scrub has checked */
	struct graid_sb_owner owner;   /* recorded in the superblocks while open writable */
	struct array_uuid_lock uuid_lock; /* this host's lock on the array's UUID */
	atomic_uint nfailed;           /* roles failed or missing */
	atomic_bool broken;            /* more failed than the level tolerates */

	struct bitmap bitmap;
	struct live *live;             /* live-data map (live.c), or NULL: everything is used */
	struct journal *journal;       /* write-hole journal (journal.c), or NULL */
	uint64_t journal_replayed;     /* updates replayed at open */
	bool resync_background;        /* resync runs in the background thread */
	bool read_only;                /* GRAID_OPEN_READ_ONLY: nothing is ever written */
	atomic_bool *stripe_busy;      /* STRIPE_LOCK_BUCKETS flags */
	atomic_uint lock_waiters;
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	uint64_t wait_seq;

	pthread_mutex_t pool_lock;     /* idle queues used by the synchronous calls */
	struct graid_queue *pool;

	atomic_uint fg_inflight;       /* foreground requests in flight, for rebuild's yield */
	atomic_uint fg_started;        /* foreground requests ever started: busy since a look */
	pthread_mutex_t rebuild_lock;  /* one rebuild at a time */
	atomic_uint_fast64_t rebuild_rate;   /* bytes/s per member, 0 unlimited */
	atomic_uint rebuild_yield_us;
	atomic_uint_fast64_t rebuild_busy_rate; /* the same while foreground I/O is in flight */
	atomic_bool closing;
	pthread_t spare_thread;        /* background rebuild after a spare takes over */
	bool spare_thread_started;
	pthread_cond_t spare_cond;     /* signalled (under meta_lock) when a spare takes over */
	bool spare_work;
	bool takeover_due;             /* a member failed in the I/O path: the worker hands out spares */
	unsigned nspares;
	struct member spares[GRAID_MAX_SPARES];
	pthread_mutex_t event_lock;
	graid_event_fn event_fn;
	void *event_arg;
	unsigned nretired;             /* fds of replaced members: closed at close, never reused */
	int retired[2 * GRAID_MAX_MEMBERS];
	struct member_fault *retired_fault[2 * GRAID_MAX_MEMBERS];

	struct array_holder_view view; /* read-only opens: the holder's view (array_view.c) */
	unsigned nmembers;
	struct member members[];
};

/* member.c */
/*
 * Open a member device. @p exclusive: hold it at once (O_EXCL on a block device and an
 * exclusive flock; -EBUSY when another open holds it), as create and replace do; otherwise
 * no lock is taken (assembly locks afterwards, in role order, with member_lock()).
 */
int member_open(struct member *m, const char *path, bool exclusive);
/*
 * Hold an open member exclusively without waiting: reopen a block device with O_EXCL, and
 * flock(). 0; -EBUSY another libgraid open holds it; -EEXIST a block device held by
 * something else (mounted, claimed by md or dm); -ESTALE its path names another device
 * now. Released when the member is closed.
 */
int member_lock(struct member *m);
void member_close(struct member *m);
/* The identity member_open() would record, without opening: to name duplicates first. */
int member_identity(const char *path, dev_t *dev, ino_t *ino);
int member_read_sb(struct member *m, struct graid_sb *sb);
int member_write_sb(struct member *m, const struct graid_sb *sb);
int member_zero_range(struct member *m, uint64_t off, uint64_t len);
/* Make completed writes durable: fdatasync, or the NVMe Flush command. 0 or -errno. */
int member_flush(struct member *m);
/* Deallocated blocks of this member are guaranteed to read back as zeroes. */
bool member_dealloc_zeroes(const struct member *m);
/* Deallocate [off, off+len) and check that it reads as zeroes; 0 or -errno. */
int member_deallocate(struct member *m, uint64_t off, uint64_t len);
/*
 * Create: make every member's data area read as zeroes. Deallocates them (fast init: no
 * zeroing, no initial resync) when every member guarantees deallocated blocks read as
 * zeroes, else zeroes them; logs which. 0 or -errno (the log names the member).
 */
int member_init_data_areas(struct graid_array *a);
/* Synchronous whole transfer at `off` bytes from the member's start (metadata, journal). */
int member_pio(struct member *m, void *buf, size_t len, uint64_t off, bool write);
/*
 * Make the metadata area [off, off+bytes) of the member equal @p img (bitmap, live-data map):
 * its copy is read into @p scratch and only the 4 KiB blocks that differ are written,
 * durably (all of them when the copy cannot be read). 0 or -errno.
 */
int member_area_match(struct member *m, const uint8_t *img, uint8_t *scratch, uint64_t off,
		      uint64_t bytes);
/* Write and make it durable before returning (superblocks, journal records). */
int member_write_durable(struct member *m, void *buf, size_t len, uint64_t off);

/* array_meta.c */
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state);
void array_fill_sb(const struct graid_array *a, unsigned role, struct graid_sb *sb,
		   uint32_t flags);
int array_write_superblocks(struct graid_array *a, uint32_t flags);
/* Recompute nfailed and broken from the member states; meta_lock held. */
void array_recount(struct graid_array *a);
void array_member_failed(struct graid_array *a, unsigned role, int err);
/*
 * An I/O issued on descriptor @p fd of a role failed: fail the role only if it still has
 * that device. A device swapped in since (a spare, a replacement) is not blamed for the
 * late failures of the one it replaced. Retired descriptors stay open until the array
 * closes, so their numbers are not reused meanwhile.
 */
void array_member_io_failed(struct graid_array *a, unsigned role, int fd, int err);
/*
 * array_reach.c: an I/O error of an active or rebuilding fabric member whose controllers
 * are reconnecting makes it UNREACHABLE instead of failed (true); meta_lock held.
 */
bool array_member_unreachable(struct graid_array *a, unsigned role, int err);
/* The worker's look at unreachable members: back (catch-up) or gone (failed); meta_lock held. */
void array_reach_poll(struct graid_array *a);
/* How long the worker may wait before it looks again; 0 when no member is unreachable. */
uint64_t array_reach_interval_ns(const struct graid_array *a);
/*
 * array_readerr.c: a read of @p role on descriptor @p fd failed with @p err. True: a media
 * error on a member that is otherwise healthy, to be repaired from redundancy (the member
 * stays); false: the caller fails it as for any error (array_member_io_failed).
 */
bool array_member_read_error(struct graid_array *a, unsigned role, int fd, int err);
/* A read error of @p role was rewritten from redundancy. */
void array_member_read_repaired(struct graid_array *a, unsigned role);
struct graid_array *array_alloc(unsigned nmembers);
void array_free(struct graid_array *a);
int array_open_engine(struct graid_array *a, const char *name);

/* stripe_lock.c */
unsigned stripe_bucket(uint64_t stripe);
bool stripe_trylock(struct graid_array *a, uint64_t stripe, unsigned *bucket);
void stripe_unlock(struct graid_array *a, unsigned bucket);
/* Sleep until some stripe lock is released (or a short while passes). */
void stripe_wait_release(struct graid_array *a, uint64_t seen_seq);
uint64_t stripe_release_seq(struct graid_array *a);

/* queue.c: used by the synchronous calls. */
struct graid_queue *array_queue_get(struct graid_array *a);
void array_queue_put(struct graid_array *a, struct graid_queue *q);
/* The synchronous calls: one request on a pooled queue, waited for. Its result or -errno. */
enum array_sync_kind { SYNC_READ, SYNC_WRITE, SYNC_DISCARD, SYNC_ZEROES };
int64_t array_sync_request(struct graid_array *a, enum array_sync_kind kind, void *buf,
			   uint64_t len, uint64_t offset);
/* Wait for the one request of a synchronous call; never returns while it is queued. */
int array_queue_sync_wait(struct graid_array *a, struct graid_queue *q,
			  struct graid_completion *c);
void array_queue_pool_free(struct graid_array *a);

/*
 * array_api.c: make every completed write durable on every writable member, failing those
 * that cannot, then let the bitmap clear quiet regions. -EIO when the array is broken (too
 * many failed), else 0; *failed (may be NULL) gets how many members failed to flush. What
 * graid_array_flush() wraps; internal callers carry on degraded when a member fails.
 */
int array_flush_members(struct graid_array *a, unsigned *failed);

/* events.c */
void array_event(struct graid_array *a, int type, int member, int error, uint64_t stripe,
		 uint64_t count);

/* Per-I/O state for injected faults; lives until the I/O completes (member_io.c). */
struct member_io_fault {
	int injected;                 /* the result to report instead of the real one, or 0 */
	struct __kernel_timespec ts;  /* a stall's delay, read by the kernel at submission */
	unsigned pieces;              /* NVMe passthrough: commands still to complete, or 0 */
	int err;                      /* NVMe passthrough: the first piece's error, or 0 */
	int fd;                       /* the member's descriptor when issued: its device */
	/*
	 * A read whose role stopped being readable, or changed device, between its plan and
	 * its issue (array_read_current): its bytes are not the role's. It fails without
	 * blaming anyone.
	 */
	bool stale;
};

/*
 * fault.c: test-only fault injection for members opened as "faulty:OPTIONS:PATH", compiled
 * only with -Dfault_injection (GRAID_FAULT_INJECTION, see meson.build). Without it no member
 * ever has a fault schedule (m->fault stays NULL: "faulty:..." is opened as a plain path,
 * which does not exist), and the calls below are the no-ops that keep their callers plain.
 */
enum fault_action { FAULT_NONE, FAULT_FAIL, FAULT_TEAR, FAULT_STALL, FAULT_KILL };
#if GRAID_FAULT_INJECTION
int fault_parse(const char *spec, struct member_fault **out, const char **path);
void fault_free(struct member_fault *f);
/* Decide for one I/O of @p bytes; FAULT_STALL fills *stall_ns (the wait before it runs). */
enum fault_action fault_decide(struct member_fault *f, bool write, uint64_t off,
			       uint64_t bytes, uint64_t *stall_ns);
/* Whether this flush of the member fails (flush-eio-after=N, or a vanished device). */
bool fault_flush_fails(struct member_fault *f);
/*
 * "fabric-state=FILE": the member models an NVMe-oF namespace whose one controller's state
 * is the first word of FILE ("live", "connecting", ...; no FILE: deleted), and whose I/O
 * fails while it is not live. True for such a member; @p state (may be NULL) gets the word.
 */
bool fault_fabric_state(struct member_fault *f, char *state, size_t len);
#else
static inline void fault_free(struct member_fault *f)
{
	(void)f;
}

static inline enum fault_action fault_decide(struct member_fault *f, bool write,
					     uint64_t off, uint64_t bytes, uint64_t *stall_ns)
{
	(void)f, (void)write, (void)off, (void)bytes, (void)stall_ns;
	return FAULT_NONE;
}

static inline bool fault_flush_fails(struct member_fault *f)
{
	(void)f;
	return false;
}

static inline bool fault_fabric_state(struct member_fault *f, char *state, size_t len)
{
	(void)f, (void)state, (void)len;
	return false;
}
#endif

/* member_batch.c: run member I/Os in parallel on a private ring, synchronously. */
struct mbio {
	struct member_io_fault fault;
	unsigned member;
	bool write;
	uint8_t *buf;
	uint32_t len;
	uint64_t off;        /* inside the data area */
	int res;             /* bytes, or -errno; a failed member is marked failed */
	unsigned cost;       /* ring entries it took: NVMe passthrough splits at the MDTS */
};

/* roles.c: a device into a role. */
int member_attach(struct graid_array *a, struct member *m, const char *path);
/* A hot spare takes @p role if it is failed or missing; meta_lock held. */
void array_spare_takeover(struct graid_array *a, unsigned role);
/* The same for every role; meta_lock held. */
void array_roles_takeover(struct graid_array *a);

/*
 * member_fail.c, from the I/O path: a role failed and a spare may take it. Only marks the
 * work and wakes the worker, which does the takeover (roles.c); meta_lock held.
 */
static inline void array_worker_takeover(struct graid_array *a)
{
	if (a->nspares) {
		a->takeover_due = true;
		pthread_cond_signal(&a->spare_cond);
	}
}

/* spare.c: the array's worker. */
void array_spare_stop(struct graid_array *a);
int array_spare_thread_start(struct graid_array *a);
/* Have the background thread (started if need be) rebuild what is REBUILDING; meta_lock held. */
int array_rebuild_background(struct graid_array *a);

/* What the superblocks record of a member UUID in slot_id: its first 8 bytes, little-endian. */
static inline uint64_t member_slot_id(const uint8_t uuid[16])
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)uuid[i] << (8 * i);
	return v;
}

static inline bool array_role_alive(const struct graid_array *a, unsigned role)
{
	return atomic_load_explicit(&a->members[role].state, memory_order_acquire) ==
	       GRAID_MEMBER_ACTIVE;
}

/*
 * Reads may also use a member being rebuilt, below its checkpoint: the rebuild moves the
 * checkpoint only past rows whose writes have completed, and foreground writes keep them in
 * sync from then on (as md reads below its recovery offset). @p end: the data-area offset
 * just past what would be read from it.
 */
static inline bool array_role_readable(const struct graid_array *a, unsigned role, uint64_t end)
{
	int st = atomic_load_explicit(&a->members[role].state, memory_order_acquire);

	return st == GRAID_MEMBER_ACTIVE ||
	       (st == GRAID_MEMBER_REBUILDING &&
		end <= atomic_load_explicit(&a->members[role].rebuild_offset,
					    memory_order_acquire));
}

/*
 * A read planned while its role was readable must not be served by a device swapped in
 * since: a member that failed and was replaced between the plan and the issue holds bytes
 * not yet rebuilt. Called after the read took descriptor @p fd and before it runs: true if
 * fd is still the role's and the role still readable up to @p end. A takeover stores the
 * new descriptor before the new state, so a descriptor taken too late meets a role not
 * readable yet, and one taken too early a descriptor that is no longer the role's.
 */
static inline bool array_read_current(const struct graid_array *a, unsigned role, int fd,
				      uint64_t end)
{
	/* The descriptor was loaded before: keep every load below after it. */
	atomic_thread_fence(memory_order_acquire);
	return array_role_readable(a, role, end) && a->members[role].fd == fd;
}

/*
 * Test seam, NULL in use (queue.c): called just before a read of @p member (foreground or
 * background) takes its descriptor, so a test can fail and replace the member between the
 * read's plan and its issue. Only in builds with fault injection (GRAID_FAULT_INJECTION).
 */
#if GRAID_FAULT_INJECTION
extern void (*graid__test_before_read)(struct graid_array *a, unsigned member);
#endif

/* Call the seam above, where it is compiled in and set, before a read of @p member. */
static inline void array_test_before_read(struct graid_array *a, unsigned member)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_before_read)
		graid__test_before_read(a, member);
#else
	(void)a, (void)member;
#endif
}

/* Writes go to active members and to members being rebuilt (so what is rebuilt stays so). */
static inline bool array_role_writable(const struct graid_array *a, unsigned role)
{
	int st = atomic_load_explicit(&a->members[role].state, memory_order_acquire);

	return st == GRAID_MEMBER_ACTIVE || st == GRAID_MEMBER_REBUILDING;
}

#endif /* LIBGRAID_CORE_ARRAY_H */
