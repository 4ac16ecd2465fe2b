/* SPDX-License-Identifier: MIT */
/*
 * The array's internal shape: its members, region maps and handle, and the predicates on
 * a role's state every layer above asks. Types and inline helpers only; each module's
 * calls are in its own header.
 */
#ifndef LIBGRAID_CORE_ARRAY_H
#define LIBGRAID_CORE_ARRAY_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include <linux/time_types.h>

#include "array/io_stats.h"
#include "ownership/array_own.h"
#include "common/internal.h"
#include "format/layout.h"
#include "format/nvme_id.h"
#include "format/superblock.h"

/* Memory alignment and I/O granule for O_DIRECT; also the default array block size. */
#define ARRAY_ALIGN 4096u
#define ARRAY_DEFAULT_CHUNK (64u * 1024)
/* Events a handle keeps for readers that catch up (docs/CONTROL.md, subscribe). */
#define ARRAY_EVENT_RING 256u
/*
 * Roles a handle of a level that grows online (RAID-0, 5, 6) has room to add beyond those it
 * was opened with (members[], the bad-block logs and the queues' per-role arrays are sized
 * for them): more need a new open after the reshape.
 */
#define ARRAY_GROW_ROOM 16u
#define ARRAY_GROW_ROOM_FOR(level) \
	(((level) == 0 || (level) == 5 || (level) == 6 || (level) == 10) ? ARRAY_GROW_ROOM : 0u)

struct badblocks;
struct member_fault;
struct journal;
struct live;

/* What a read-only open learns of the array from its holder (array_view.c). */
struct array_holder_role {
	int state;              /* enum graid_member_state, as the holder has it */
	uint64_t copied, total; /* its catch-up or rebuild, bytes */
	uint64_t outages;
	bool passthru;          /* an NVMe generic device */
	char blk[32], ctrl[32]; /* an NVMe member's block device and controller ("" if not) */
	char path[256];         /* the path the holder opened it by ("" if none) */
};

struct array_holder_view {
	bool valid;             /* loaded from a live holder at this read-only open */
	uint32_t pid;
	unsigned nroles;
	struct array_holder_role *role;
};

/*
 * The device that holds a role: what was opened, and how. Replaced whole (role_install)
 * when the role gets another device, under meta_lock while the role is out of every I/O
 * path (its state is neither ACTIVE nor REBUILDING, which readers check first).
 */
struct member_device {
	int fd;                        /* -1 when the role has no device */
	struct member_fault *fault;    /* test-only fault injection ("faulty:" paths), or NULL */
	bool direct;                   /* opened with O_DIRECT */
	bool is_blk;                   /* a block device */
	uint32_t lbs;                  /* logical block size */
	uint64_t size;                 /* bytes */
	dev_t devno;                   /* st_rdev for devices, st_dev for files */
	ino_t ino;                     /* files: inode, for duplicate detection */
	uint8_t uuid[16];              /* member UUID from its superblock */
	/* Its superblock holds this handle's owner record (written since open): see array_meta.c. */
	bool sb_ours;
	char path[256];
	char identity[128];
	struct member_nvme nvme;       /* NVMe identify data; passthrough when nvme.passthru */
};

/* Failed I/Os whose times a role keeps: the most io_errors_burst may ask for. */
#define IOERR_RING GRAID_HEALTH_IO_BURST_MAX
/* Bad areas a role remembers, and how long, so a retry of one is not counted again. */
#define IOERR_AREAS 8
#define IOERR_AREA_WINDOW_NS (600ull * 1000000000ull)

/*
 * A role's checksum mismatches that a read found and its repair has not yet settled
 * (member/csum_pend.h): which 4 KiB blocks, and a CRC-32C of the bytes the member gave, so
 * the write-back can tell a wrong tag (the repair writes those same bytes) from wrong data.
 * A spin lock: a scan of a few entries, taken only where a mismatch is or was.
 */
#define CSUM_PEND_MAX 256u
struct csum_pend {
	atomic_uint lock;
	atomic_uint n;                 /* entries used; read without the lock as "any?" */
	struct {
		uint64_t block;        /* 4 KiB block number in the role's data area */
		uint32_t fp;           /* CRC-32C of the bytes read */
		bool lost;             /* a lost write (generations), not a CRC mismatch */
	} e[CSUM_PEND_MAX];
};

/*
 * What the array knows of a role apart from its device: its place in the superblocks, its
 * catch-up or rebuild, its outages and the errors counted against it. A role that gets a
 * new device starts afresh (member_role_reset): nothing the old device earned carries over.
 * Fields without a note are changed under meta_lock.
 */
struct member_role {
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
	/* Catch-up or rebuild of this role: bytes written to it, and bytes to write in all. */
	atomic_uint_fast64_t copied, copy_total;
	/* UNREACHABLE (array_reach.c): times it went so, and whether a full rebuild was cut. */
	atomic_uint_fast64_t outages;
	bool reach_full;
	/* UNREACHABLE because an I/O timed out with its controller live (member_fail.c). */
	unsigned timeout_outages;
	/* Read errors repaired in place (array_readerr.c): a count that halves every hour. */
	unsigned readerr_count;
	uint64_t readerr_decay_ns;
	atomic_uint_fast64_t readerr_repaired;
	/* I/O counters since the device joined the role (graid_member_info). */
	atomic_uint_fast64_t reads, writes, read_bytes, write_bytes, errors;
	/* graid_array_stats() of the device since it joined, and its last MEMBER_SLOW event. */
	struct io_stats stats;
	_Atomic uint64_t slow_sent_ns;
	/*
	 * Failed I/Os for the health policy's I/O-error rule (member_io_done): how many reads
	 * ([0]) and writes ([1]) failed in a row (a success of that kind sets it back to 0: the
	 * write that repairs a read error does not hide a drive that no longer reads), and the
	 * times of the last IOERR_RING failures in a ring (io_err_next counts every one, so it
	 * modulo IOERR_RING is the next slot). Relaxed: the watch reads them each round, and an
	 * error more or less at the edge changes nothing.
	 */
	atomic_uint io_err_row[2];
	atomic_uint io_err_next;
	_Atomic uint64_t io_err_ns[IOERR_RING];
	/*
	 * The last IOERR_AREAS failures counted above, by data-area range (bit 0 of off: a
	 * write) and time: a failure overlapping one of them is not counted (member_ioerr.c).
	 */
	struct {
		_Atomic uint64_t off, end, ns;
	} io_err_area[IOERR_AREAS];
	atomic_uint io_err_area_next;
	/*
	 * Checksums: 4 KiB blocks of the device whose data failed its tag (not read errors:
	 * neither READERR_MAX nor the I/O-error rule counts them), of those the ones whose
	 * repair found only the tag wrong (csum_report.c), and those awaiting repair.
	 */
	atomic_uint_fast64_t csum_errors;
	atomic_uint_fast64_t csum_tag_errors;
	atomic_uint_fast64_t csum_lost_writes; /* of csum_errors, stale by generation */
	struct csum_pend csum_pend;
	/* Tagged writes of the role that ended (member_io_done): a racing read's witness. */
	atomic_uint_fast64_t csum_wgen;
	/*
	 * Tagged writes of the role begun, and those begun and not yet ended: a read that any
	 * of them overlapped may hold bytes torn between a block's old and new contents.
	 */
	atomic_uint_fast64_t csum_wbegun;
	atomic_uint_fast64_t csum_winflight;
};

/*
 * A role given a new device starts with this: every field zero but the slot's identity.
 * Atomics are stored one by one: readers that look without meta_lock see each field whole.
 */
static inline void member_role_reset(struct member_role *r, uint64_t slot_id)
{
	r->slot_id = slot_id;
	r->catchup = false;
	r->rejoined = false;
	r->forced = false;
	r->left_events = 0;
	atomic_store(&r->rebuild_offset, 0);
	atomic_store(&r->copied, 0);
	atomic_store(&r->copy_total, 0);
	atomic_store(&r->outages, 0);
	r->reach_full = false;
	r->timeout_outages = 0;
	r->readerr_count = 0;
	r->readerr_decay_ns = 0;
	atomic_store(&r->readerr_repaired, 0);
	atomic_store(&r->reads, 0);
	atomic_store(&r->writes, 0);
	atomic_store(&r->read_bytes, 0);
	atomic_store(&r->write_bytes, 0);
	atomic_store(&r->errors, 0);
	io_stats_reset(&r->stats, graid__now_ns());
	atomic_store(&r->slow_sent_ns, 0);
	atomic_store(&r->io_err_row[0], 0);
	atomic_store(&r->io_err_row[1], 0);
	atomic_store(&r->io_err_next, 0);
	for (unsigned i = 0; i < IOERR_RING; i++)
		atomic_store(&r->io_err_ns[i], 0);
	atomic_store(&r->io_err_area_next, 0);
	for (unsigned i = 0; i < IOERR_AREAS; i++)
		atomic_store(&r->io_err_area[i].ns, 0);
	atomic_store(&r->csum_errors, 0);
	atomic_store(&r->csum_tag_errors, 0);
	atomic_store(&r->csum_lost_writes, 0);
	atomic_store(&r->csum_pend.n, 0);
}

/* One member role: its state, its device, and the rest of what the array knows of it. */
struct member {
	atomic_int state;              /* enum graid_member_state; changed under meta_lock */
	struct member_device dev;
	struct member_role role;
	/*
	 * I/O given up on after the array's I/O timeout (io/queue_timeout.c) that the kernel has
	 * not finished yet, on this role's devices, and how many were given up on in all. Not
	 * reset with the role: a replaced device's late I/O still ends and is counted down here.
	 * While late_ios is not zero a device may still be written behind the array's back: it
	 * is not caught up or taken back (array_reach.c).
	 */
	atomic_uint late_ios;
	atomic_uint_fast64_t timeouts;
};

struct meta_ring;
struct region_map_kind;

/*
 * A map of regions kept on every member (region_map.c): what the write-intent bitmap and the
 * live-data map share. Bit 0 of a region's state says it is recorded on disk; the instance
 * may use the bits above it (the bitmap's HOT).
 */
#define REGION_MAP_MARKED 1u

struct region_map {
	const struct region_map_kind *kind; /* the instance's constants (region_map.h) */
	uint64_t offset, bytes;        /* on every member, bytes from its start */
	uint64_t region_stripes;       /* stripes (bitmap numbering) per bit */
	/* Regions counted: grows (region_map_grow) when a RAID-10 grows, up to cap. */
	_Atomic uint64_t nregions;
	uint64_t cap;                  /* regions the per-region arrays have room for */
	_Atomic uint8_t *state;        /* per region: REGION_MAP_MARKED and the instance's bits */
	atomic_uint *inflight;         /* per region: writes in flight (the instance counts them) */
	uint32_t flush_epoch;          /* the last flush's (region_map_epoch); under lock */
	uint8_t *disk;                 /* the map as on disk; under lock */
	pthread_mutex_t lock;          /* the disk image and its writes to the members */
	struct meta_ring *ring;        /* its writes to the members (meta_write.c), under lock */
};

/* Write-intent bitmap (bitmap.c): per region DIRTY (marked on disk) and HOT (written lately). */
#define BITMAP_DIRTY REGION_MAP_MARKED
#define BITMAP_HOT 2u

struct bitmap {
	bool enabled;
	struct region_map map;
	/*
	 * Per region: the epoch of the flush that found it quiet as it began (0: none); only
	 * that flush or a later one may clear it (bitmap_flush_begin, bitmap_sweep). Under
	 * map.lock.
	 */
	uint32_t *quiet_epoch;
	/* Regions from this one on await the resync after an unclean open: never cleared. */
	_Atomic uint64_t resync_from;
};

/* Stripe locks: a stripe hashes to one of these; a bucket is held by one stripe op. */
#define STRIPE_LOCK_BUCKETS 65536u

/*
 * The array handle. Fields are grouped by who may change them and under which lock; a group
 * names its lock in its comment. "Set at open" fields are written before the handle is
 * returned to the caller (or a worker thread starts) and only read afterwards.
 */
struct health_watch;
struct tag_store;
struct array_replace;
struct reshape_job;

/*
 * A RAID-0 growing online (docs/RESHAPE.md): array bytes [0, position) are placed by
 * new_lay, the others by old_lay. Made by the jobs layer when a reshape starts or resumes,
 * freed at close (never before: requests keep pointers to it). The I/O path routes every
 * request of a reshaping array one chunk at a time, each under the stripe lock of its
 * chunk number (stripe_lock.h, key: array byte / chunk): the job moves a window of chunks
 * holding those locks, and advances position before it lets them go, so a request reads
 * the position only under its chunk's lock and never meets a chunk being moved.
 */
struct array_reshape {
	struct layout old_lay, new_lay;
	uint64_t end;                  /* the bytes moved: the old array's size */
	_Atomic uint64_t position;     /* changed under the window's chunk locks */
	/*
	 * RAID-5/6: array bytes [position, fence) are served by no geometry (-EIO): a job
	 * that failed after its STAGED record left their old rows holding new cells, whole
	 * only in the staged copy, until a retry or the next open writes them from it (set
	 * and cleared under those rows' locks; 0: none). docs/RESHAPE.md, "RAID-5/6 growing,
	 * as built".
	 */
	_Atomic uint64_t fence;
	_Atomic uint64_t size;         /* what callers may address: end until done */
	atomic_bool done;              /* every byte in new_lay, the superblocks say so */
	struct array_reshape *prev;    /* an earlier reshape of this open, freed with it */
	/* Requests routed by this state and not yet ended (queue.c queue_route). */
	atomic_uint inflight;
	/* Its job's progress for graid_array_info (jobs/reshape_progress.c); the job writes. */
	atomic_bool running;           /* the job moves data now */
	atomic_int error;              /* -errno the job stopped with (not at a close); 0 */
	_Atomic uint64_t rate;         /* array bytes moved a second, measured; 0: not yet */
};

struct graid_array {
	/* Identity and geometry: set at open. */
	struct layout lay;
	struct graid_backend *be;      /* parity engine; NULL for levels 0, 1, 10 */
	char *be_name; /* the engine named at open or create (NULL: the default), for convert */
	uint64_t data_offset;          /* bytes from member start to data area */
	/* Checksums (docs/INTEGRITY.md): a tag per 4 KiB block of every member, or csum false. */
	bool csum;
	uint64_t tag_offset, tag_bytes; /* each member's tag area, bytes from its start */
	struct tag_store *tags;        /* the cached tags (member/tag_store.h); NULL without */
	/*
	 * The tags' meta words keep write generations and parity records (docs/INTEGRITY.md,
	 * "Lost writes"): the tag store's writes then give each block a generation. Set with
	 * checksums by create, at open from the freshest superblock's GRAID_SB_F_GENERATIONS,
	 * and by a writable open of an older checksummed array before its superblock round
	 * (array_open.c); unit tests may set it on an array they drive by hand. Set before the
	 * open's first write that keeps generations, read-only after.
	 */
	bool csum_gens;
	uint32_t block_size;
	uint8_t uuid[16];
	uint64_t ctime;
	bool read_only;                /* GRAID_OPEN_READ_ONLY: nothing is ever written */
	bool resync_background;        /* resync runs in the background thread */

	/* Ownership of the array: set at open, released at close (ownership/). */
	struct array_uuid_lock uuid_lock; /* this host's lock on the array's UUID */
	struct array_lease *lease;     /* graid_open_options::lease, held while open; or NULL */
	/*
	 * This host's key for the Write Exclusive reservations it holds on the members (the
	 * machine id's first 8 bytes; api/open_reserve.c), or 0: none held. pr_strict:
	 * GRAID_OPEN_RESERVE, so a device added later must take one too.
	 */
	uint64_t pr_key;
	bool pr_strict;

	/*
	 * The roles' recorded state, under meta_lock: what the superblocks say (events, owner,
	 * scrub checkpoint), who is out, and what the worker is asked to do. The atomics are
	 * written under it and read without it by the I/O path.
	 */
	pthread_mutex_t meta_lock;
	uint64_t events;
	/*
	 * The event since which the bitmap keeps every mark (no mark is cleared while a role
	 * is not active, so a member that comes back needs only the marked regions); 0 while
	 * every role is active. Maintained by array_recount().
	 */
	uint64_t history_events;
	uint64_t scrub_offset;         /* member rows an unfinished scrub has checked */
	struct sb_owner owner;         /* recorded in the superblocks while open writable */
	atomic_uint nfailed;           /* roles failed or missing */
	atomic_bool broken;            /* more failed than the level tolerates */
	/*
	 * A member was taken out and the superblock round that records it reached no member
	 * still in: a write is not acknowledged (-EIO) until a round reaches one, since the
	 * next open could take the member back as current and serve its old bytes over the
	 * write (meta/member_fail.h array_member_out_record).
	 */
	atomic_bool fail_unrecorded;
	/* Another host took the array over (a higher owner epoch on the members): no more I/O. */
	atomic_bool foreign;
	/*
	 * A role left the writable states (sb_out_gen, bumped before its state changes) and
	 * the superblocks that record it (sb_out_written, set as each superblock round ends)
	 * may not be on disk yet: a write that completes then waits (array_sb_fence).
	 */
	_Atomic uint64_t sb_out_gen;
	_Atomic uint64_t sb_out_written;
	/*
	 * Superblocks the array's roles took (spares not counted), by every round (nested
	 * rounds too): a caller that changes the geometry compares it across its round to
	 * know whether any member now records the change (jobs/reshape_level.c). A spare that
	 * alone took it is not enough to keep the change: the members (and a dropped Q) still
	 * record the old geometry, and an open given them without that spare would trust a Q
	 * the handle stopped writing. meta_lock held.
	 */
	uint64_t sb_writes;
	bool rebuild_work;             /* a background rebuild is due */
	/* The worker's rebuild: running, and how the last one ended (graid_array_info). */
	atomic_bool rebuild_bg_running;
	atomic_int rebuild_bg_error;
	/* Roles that failed in the I/O path: the worker gives each a spare. */
	bool takeover_due;
	bool takeover_role[GRAID_MAX_MEMBERS];
	/* An open left a member given out (unreachable): no spare takes a MISSING role. */
	bool hold_missing;
	unsigned nspares;
	struct member spares[GRAID_MAX_SPARES];
	/*
	 * Descriptor numbers of replaced members' devices, closed at close, never reused while
	 * an I/O may still name them: /dev/null since the replacement where the device was let
	 * go (roles.c), else the device, whose reservation close gives back.
	 */
	struct {
		unsigned n;
		int fd[2 * GRAID_MAX_MEMBERS];
		struct member_fault *fault[2 * GRAID_MAX_MEMBERS];
		bool let_go[2 * GRAID_MAX_MEMBERS]; /* /dev/null now: nothing to give back */
	} retired;

	/*
	 * Per-member metadata, each with its own lock (docs/ARCHITECTURE.md, "Lock order"): the
	 * region maps (bitmap.map.lock, live->map.lock), the journal, each role's bad-block log.
	 */
	struct bitmap bitmap;
	struct live *live;             /* live-data map (live.c), or NULL: everything is used */
	struct journal *journal;       /* write-hole journal (journal.c), or NULL */
	struct {
		uint64_t offset, bytes;  /* the journal's log area on every member; 0 without one */
	} log_area;
	uint64_t journal_replayed;     /* updates replayed at open */
	/* Per role: its device's bad-block log (badblocks.c); NULL: the array keeps none. */
	struct badblocks *bbl;
	struct {
		uint64_t offset, bytes;  /* the log's area on every member; 0 without one */
	} bbl_area;

	/* Stripe locks (meta/stripe_lock.c): busy flags taken atomically; lock guards seq, cond. */
	struct {
		atomic_bool *busy;       /* STRIPE_LOCK_BUCKETS flags */
		atomic_uint waiters;
		pthread_mutex_t lock;
		pthread_cond_t cond;
		uint64_t seq;
	} stripes;

	/* Idle queues the synchronous calls borrow (io/queue_pool.c), under lock. */
	struct {
		pthread_mutex_t lock;
		struct graid_queue *idle;
	} pool;

	/* Background work and its tuning: atomics, read by the jobs, set by the public calls. */
	atomic_uint fg_inflight;       /* foreground requests in flight, for rebuild's yield */
	/*
	 * Set while the array is quiesced (io/quiesce.c): new requests wait at their queueing,
	 * the worker's jobs are held, and fg_inflight (counted before this is looked at) has
	 * drained to zero once array_quiesce() returns.
	 */
	atomic_bool quiesced;
	atomic_uint fg_started;        /* foreground requests ever started: busy since a look */
	pthread_mutex_t rebuild_lock;  /* one rebuild at a time, held for all of it */
	atomic_uint_fast64_t rebuild_rate;   /* bytes/s per member, 0 unlimited */
	atomic_uint_fast64_t rebuild_busy_rate; /* the same while foreground I/O is in flight */
	atomic_uint rebuild_yield_us;
	/* graid_array_set_io_timeout(): a member I/O older than this is given up on; 0 never. */
	atomic_uint_fast64_t io_timeout_ns;
	atomic_bool closing;
	/* graid_array_scrub_stop() bumps it; a scrub that sees it move stops at its next batch. */
	atomic_uint scrub_stop_gen;
	/* graid_array_scrub() calls under way (the metrics' scrub state). */
	atomic_uint scrubs_running;
	/* GRAID_STATS_HISTOGRAMS and the MEMBER_SLOW limit, set by graid_array_set_stats_options. */
	atomic_uint stats_flags;
	atomic_uint_fast64_t slow_ns;
	/*
	 * I/O statistics (array/io_stats.c): the callers' requests, counted as they complete,
	 * by every thread. Lines of their own: the fields read on each I/O (closing, the I/O
	 * timeout, the rebuild's rates) would otherwise share a line with these adds and be
	 * fetched again after every request of another thread.
	 */
	alignas(64) struct io_stats stats;
	/* The array's worker (jobs/worker.c): started once; worker_cond signalled under meta_lock. */
	pthread_t worker_thread;
	bool worker_started;
	pthread_cond_t worker_cond;
	/* Its watch over drive health (jobs/health_watch.c): made with it; under meta_lock. */
	struct health_watch *health;
	/*
	 * A role copied onto a new device while it stays in service (jobs/replace.c): the
	 * copy, set and cleared under meta_lock; replace_role, the role + 1 (0: none), is what
	 * the write path looks at without the lock (replace_io.c) before it writes a role.
	 */
	struct array_replace *_Atomic replace;
	atomic_uint replace_role;

	/*
	 * A reshape (jobs/reshape_grow.c): its routing state, NULL when none runs (set with
	 * release, after old_lay and new_lay are filled); its job, under meta_lock. While a
	 * reshape runs, a->lay is the old geometry and a->nmembers the new member count.
	 * plain_inflight: RAID-0 requests queued while no reshape was set, still in flight: a
	 * start waits for them (they route by a->lay alone and take no chunk lock), and for
	 * those an earlier reshape of this open routes (its inflight).
	 */
	struct array_reshape *_Atomic reshape;
	struct array_reshape *reshape_mem;
	struct reshape_job *reshape_job;
	bool reshape_starting;         /* a grow between its checks and its install */
	atomic_uint plain_inflight;

	/*
	 * The application's event callback (meta/events.c), called and changed under lock;
	 * the events are numbered under it too (seq: the last number given), so the numbers
	 * follow the callback's order.
	 */
	struct {
		pthread_mutex_t lock;
		graid_event_fn fn;
		void *arg;
		uint64_t seq;
		/*
		 * Roles out (not ACTIVE) when DEGRADED or OPTIMAL was last reckoned: a role's
		 * event that leaves more out sends DEGRADED, one that leaves none OPTIMAL.
		 */
		unsigned out;
		/* graid_array_set_event_options(): percent between progress events, 0 none. */
		atomic_uint progress_step;
	} event;
	/*
	 * The last ARRAY_EVENT_RING events, event n at ring[n % ARRAY_EVENT_RING], for readers
	 * that catch up (api/array_events.h). Its lock is a leaf taken inside event.lock: a
	 * push copies one event and writes the watcher's eventfd, never blocks nor allocates.
	 */
	struct {
		pthread_mutex_t lock;
		uint64_t last;           /* the newest event's seq; 0: none yet */
		int watch_fd;            /* an eventfd told of each push; -1 none */
		struct graid_event ring[ARRAY_EVENT_RING];
	} event_ring;

	/*
	 * The control endpoint (control/), when served: started and stopped by the control
	 * layer's calls, set before its thread starts. Close ends it through the pointer: the
	 * control layer sits above the api layer's close, which calls nothing above it. It
	 * returns as graid_array_control_stop() does (-EDEADLK: called on the endpoint's thread).
	 */
	struct array_control *control;
	int (*control_stop)(struct graid_array *a);
	/* Its scrub (control/control_scrub.c), for the ops its thread serves: set before it starts. */
	struct control_scrub *control_scrub;

	/* What an open learnt for graid_array_given_info() and read-only looks: set at open. */
	struct array_holder_view view; /* read-only opens: the holder's view (array_view.c) */
	/* What became of each device given to the open (graid_array_given_info()). */
	struct graid_given_info *given;
	unsigned ngiven;
	/* Read-only opens: not closed cleanly, and no live process here holds it. */
	bool unclean;
	/* Read-only opens: the live writable holder on this host (pid 0: none). */
	struct sb_owner holder;

	/*
	 * The roles: a role's state is changed under meta_lock and read atomically. nmembers
	 * grows (under meta_lock) when a reshape adds roles, up to member_cap, the room
	 * members[] was allocated with; per-role arrays of queues are sized by member_cap.
	 */
	unsigned member_cap;
	unsigned nmembers;
	struct member members[];
};

/* The bytes callers may address: the old size while a reshape moves data, then the new. */
static inline uint64_t array_size(const struct graid_array *a)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);

	return rs ? atomic_load(&rs->size) : a->lay.array_bytes;
}

/* A role's state as logs and the control endpoint name it (graidctl uses the same words). */
static inline const char *member_state_name(int state)
{
	switch (state) {
	case GRAID_MEMBER_ACTIVE:
		return "active";
	case GRAID_MEMBER_FAILED:
		return "failed";
	case GRAID_MEMBER_MISSING:
		return "missing";
	case GRAID_MEMBER_REBUILDING:
		return "rebuilding";
	case GRAID_MEMBER_SPARE:
		return "spare";
	case GRAID_MEMBER_UNREACHABLE:
		return "unreachable";
	default:
		return "unknown";
	}
}

/* What the superblocks record of a member UUID in slot_id: its first 8 bytes, little-endian. */
static inline uint64_t member_slot_id(const uint8_t uuid[16])
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)uuid[i] << (8 * i);
	return v;
}

/*
 * Another host took the array over (a higher owner epoch on the members): nothing more is
 * written to any member through this handle (meta/array_meta.c array_owner_check).
 */
static inline bool array_foreign(const struct graid_array *a)
{
	return atomic_load_explicit(&a->foreign, memory_order_acquire);
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
		end <= atomic_load_explicit(&a->members[role].role.rebuild_offset,
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
	return array_role_readable(a, role, end) && a->members[role].dev.fd == fd;
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
