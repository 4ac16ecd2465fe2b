/* SPDX-License-Identifier: MIT */
/**
 * @file graid.h
 * @brief libgraid's public API: parity engines and parity math on batches of stripes; RAID
 *   arrays over files, block devices and NVMe namespaces (create, open, I/O, the
 *   asynchronous queue, members, spares, rebuild, scrub, events); logging.
 *
 * Conventions, for every function here:
 * - A return of 0 (or a count) is success; a negative errno is failure, and
 *   graid_strerror() names it. Nothing exits, aborts or prints to stdout.
 * - Structures that cross the API start with a `struct_size` that the caller sets to the
 *   sizeof it was compiled with, so they can grow at the end without breaking the ABI.
 * - Handles are opaque. An engine handle may be used from many threads at once.
 *
 * Parity is that of Linux md RAID-6 and ISA-L's pq_gen: P = XOR of the data blocks,
 * Q = sum of g^k * D_k over GF(2^8) with polynomial 0x11d, g = 2, k the data block's
 * index in its stripe (see graid_gf.h).
 */
#ifndef LIBGRAID_GRAID_H
#define LIBGRAID_GRAID_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <libgraid/graid_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the functions libgraid exports (everything else is hidden). */
#if defined(__GNUC__)
#define GRAID_API __attribute__((visibility("default")))
#else
#define GRAID_API
#endif

/** @brief An open parity engine. */
struct graid_backend;

/**
 * @brief Open a parity engine.
 *
 * @param name "auto", "ref", "isal", "cuda", "opencl", or the name of a plugin found on the
 *   plugin path; NULL means the GRAID_BACKEND environment variable, else "auto". "auto"
 *   probes every engine present, times each on a short fixed workload (once per process)
 *   and opens the fastest; the figures are logged and can be read with
 *   graid_backend_list().
 * @param out where the handle is stored; untouched on failure.
 * @return 0 on success;
 *   -EINVAL @p out is NULL, or @p name names no engine known here;
 *   -ENODEV the engine is known but not usable on this machine (no device, no driver, or
 *           its plugin is not installed), or it is a plugin engine whose runtime a parent
 *           of this forked process started (CUDA and OpenCL do not survive fork(); "auto"
 *           then opens the CPU engine);
 *   -ENOEXEC the engine's plugin was found but refused (wrong ABI, missing operation; the
 *           log says which);
 *   -ENOMEM out of memory; or another negative errno from the engine's own open.
 */
GRAID_API int graid_backend_open(const char *name, struct graid_backend **out);

/**
 * @brief Close an engine opened with graid_backend_open(). NULL is ignored.
 * @param be the engine; no call on it may be in progress.
 */
GRAID_API void graid_backend_close(struct graid_backend *be);

/**
 * @brief The name of the engine behind a handle ("isal", "opencl", ...; never "auto").
 * @param be the engine.
 * @return a string that lives as long as @p be; "(null)" for NULL.
 */
GRAID_API const char *graid_backend_name(const struct graid_backend *be);

/**
 * @brief Compute parity for a batch of stripes.
 *
 * @param be the engine.
 * @param ndata data blocks per stripe, 1..255.
 * @param nparity 1 (P, RAID-5) or 2 (P and Q, RAID-6).
 * @param len bytes in every block, >= 1. Any length works; multiples of 64 are fastest.
 * @param nstripes stripes in the batch, >= 1.
 * @param blocks nstripes * (ndata + nparity) pointers, stripe after stripe: the data
 *   blocks in logical order, then P, then Q. No pointer may be NULL. Any alignment
 *   works; 64-byte aligned blocks take the fast paths.
 * @return 0 on success, P (and Q) written;
 *   -EINVAL a NULL @p be or @p blocks or block pointer, @p ndata 0 or > 255, @p nparity
 *           not 1 or 2, @p len or @p nstripes 0 (nothing is written);
 *   -ENOMEM out of memory; -EIO the engine and its CPU fallback both failed.
 */
GRAID_API int graid_parity_gen(struct graid_backend *be, unsigned ndata, unsigned nparity,
			       size_t len, size_t nstripes, uint8_t *const *blocks);

/**
 * @brief Rebuild lost blocks, in place, for a batch of stripes.
 *
 * Every case RAID-6 survives is covered: one data block, two data blocks, data + P,
 * data + Q, P + Q, P alone, Q alone (and with nparity 1: one data block, or P).
 *
 * @param be the engine.
 * @param ndata, nparity, len, nstripes, blocks as for graid_parity_gen().
 * @param nlost how many blocks are lost in each stripe, 0..nparity (0 does nothing).
 * @param lost their indices in the stripe, 0..ndata+nparity-1 (ndata is P, ndata+1 is
 *   Q), in any order; the same for every stripe of the batch.
 * @return 0 on success, the lost blocks rewritten;
 *   -EINVAL any graid_parity_gen() argument error, @p lost NULL with @p nlost > 0,
 *           more lost blocks than parity blocks, or a repeated or out-of-range index
 *           (nothing is written);
 *   -ENOMEM out of memory; -EIO the engine and its CPU fallback both failed.
 */
GRAID_API int graid_parity_recover(struct graid_backend *be, unsigned ndata,
				   unsigned nparity, size_t len, size_t nstripes,
				   uint8_t *const *blocks, unsigned nlost,
				   const unsigned *lost);

/**
 * @brief graid_parity_gen() with batch hints.
 *
 * @param be, ndata, nparity, len, nstripes, blocks as for graid_parity_gen().
 * @param flags GRAID_BATCH_F_* hints (graid_backend.h), 0 for none: ::GRAID_BATCH_F_STREAM
 *   when P (and Q) go to the drives and will not be read back soon. No hint changes the
 *   bytes written.
 * @return as graid_parity_gen(); also -EINVAL for a bit of @p flags that is not a
 *   GRAID_BATCH_F_* hint (nothing is written).
 */
GRAID_API int graid_parity_gen_flags(struct graid_backend *be, unsigned ndata,
				     unsigned nparity, size_t len, size_t nstripes,
				     uint8_t *const *blocks, uint32_t flags);

/**
 * @brief graid_parity_recover() with batch hints.
 *
 * @param be, ndata, nparity, len, nstripes, blocks, nlost, lost as for
 *   graid_parity_recover().
 * @param flags GRAID_BATCH_F_* hints, 0 for none: ::GRAID_BATCH_F_STREAM when the
 *   recovered blocks go to a drive (a rebuild) and will not be read back soon.
 * @return as graid_parity_recover(); also -EINVAL for a bit of @p flags that is not a
 *   GRAID_BATCH_F_* hint (nothing is written).
 */
GRAID_API int graid_parity_recover_flags(struct graid_backend *be, unsigned ndata,
					 unsigned nparity, size_t len, size_t nstripes,
					 uint8_t *const *blocks, unsigned nlost,
					 const unsigned *lost, uint32_t flags);

/**
 * @brief Check the parity of a batch of stripes (the scrub primitive), and name the wrong
 * block where the math can.
 *
 * With two parity blocks a stripe in which exactly one block (data, P or Q) is wrong is
 * located from the P and Q syndromes; with one parity block, or with several blocks
 * wrong, the mismatch is reported as ::GRAID_CHECK_UNLOCATED. Nothing is written to any
 * block: repair is the caller's choice.
 *
 * @param be the engine.
 * @param ndata, nparity, len, nstripes, blocks as for graid_parity_gen().
 * @param result nstripes entries, one verdict per stripe: ::GRAID_CHECK_CLEAN, the index
 *   of the one wrong block (0..ndata+nparity-1), or ::GRAID_CHECK_UNLOCATED. May be NULL
 *   when only the count is wanted.
 * @return the number of stripes whose parity does not match (a result, not an error);
 *   -EINVAL as for graid_parity_gen(); -ENOMEM; -EIO the engine and its fallback failed.
 */
GRAID_API long graid_parity_check(struct graid_backend *be, unsigned ndata,
				  unsigned nparity, size_t len, size_t nstripes,
				  uint8_t *const *blocks, int32_t *result);

/**
 * @brief Register a long-lived buffer with an engine, so that batches whose blocks lie in it
 *   need no preparation per call.
 *
 * The CUDA engine pins and maps the buffer once: its mapped path
 * (GRAID_CUDA_PATH=mapped) then neither pins and unpins the pages under every call nor
 * asks the driver about memory pinned elsewhere. Engines that read host memory as it is
 * (ref, isal, a plugin without the operation) have nothing to do and return 0.
 *
 * @param be the engine.
 * @param addr the buffer's first byte; any alignment (whole pages around it are pinned).
 * @param len its length in bytes, >= 1.
 * @pre the buffer stays allocated until graid_backend_unregister_memory() or
 *   graid_backend_close(); no batch that uses it runs during either call.
 * @return 0 registered, or nothing to do for this engine;
 *   -EINVAL @p be or @p addr NULL, @p len 0, or the pages overlap a buffer already
 *           registered with this engine;
 *   -ENOMEM the memory could not be pinned (RLIMIT_MEMLOCK, or out of memory);
 *   -ENODEV the engine's device is gone; -EIO another engine error (logged).
 */
GRAID_API int graid_backend_register_memory(struct graid_backend *be, void *addr, size_t len);

/**
 * @brief Undo graid_backend_register_memory().
 * @param be the engine.
 * @param addr the address given to graid_backend_register_memory().
 * @pre no batch that uses the buffer is running.
 * @return 0 (also for an engine that had nothing to do, and for every address once the
 *   engine's device is gone: all its registrations were released then);
 *   -EINVAL @p be NULL, or no buffer registered with this engine starts at @p addr.
 */
GRAID_API int graid_backend_unregister_memory(struct graid_backend *be, void *addr);

/** @brief What graid_backend_list() reports of one engine. */
struct graid_backend_desc {
	size_t struct_size;      /**< set by the caller, in every element */
	char name[32];           /**< the engine's name */
	char description[96];    /**< one line on what it is */
	/** 0 usable; -ENODEV not on this machine; -ENOEXEC plugin refused; other errno */
	int status;
	/** what the probe found, in words; where status is not 0, why not (may be empty) */
	char device[128];
	uint32_t flags;          /**< GRAID_BACKEND_F_* from the probe */
	/** RAID-6 8+2 P+Q generation speed in GB/s of data, 0 if not measured */
	double gen_gbps;
};

/** graid_backend_list() flag: time every usable engine now (as "auto" does) */
#define GRAID_LIST_MEASURE 0x1u

/**
 * @brief List the engines this build knows, with what their probes found.
 *
 * @param descs array of @p max entries, each with struct_size set; may be NULL if
 *   @p max is 0.
 * @param max entries in @p descs.
 * @param flags 0, or ::GRAID_LIST_MEASURE to time every usable engine (tens of
 *   milliseconds each; the figures are kept for the process and reused by "auto").
 * @return the number of engines known (may exceed @p max; only @p max are filled);
 *   -EINVAL @p descs NULL with @p max > 0, a struct_size too small, or unknown flags.
 */
GRAID_API int graid_backend_list(struct graid_backend_desc *descs, unsigned max,
				 unsigned flags);

/* ------------------------------------------------------------------------------------ */
/** @name Arrays
 * An array is assembled from members (regular files or block devices) that each carry a
 * libgraid superblock (docs/FORMAT.md). Offsets and lengths of data calls are multiples of
 * the array's block size; buffers may have any alignment.
 * @{
 */

/** @brief An open array. Safe to use from many threads at once. */
struct graid_array;

/** The most members an array can have. */
#define GRAID_MAX_MEMBERS 256

/** graid_array_config::flags: overwrite members that carry a libgraid superblock. */
#define GRAID_CREATE_FORCE 0x1u

/**
 * graid_array_config::flags: RAID-5 and RAID-6 only — keep a write-hole journal on every
 * member (docs/JOURNAL.md). Before a stripe update touches any member in place, each member
 * it writes logs its own new bytes durably; after a crash, reopening replays the updates
 * whose log writes all finished and drops the others, so no stripe is left half-updated,
 * even when a member is lost before any resync. Costs a second, synchronous write of every
 * byte written; the log takes graid_array_info::journal_bytes of each member.
 */
#define GRAID_CREATE_JOURNAL 0x2u

/**
 * graid_array_config::flags: RAID-1, 5, 6 and 10 only — per-block checksums. Every 4 KiB
 * block of every member (data and parity alike) gets a tag, a CRC-32C seeded with the
 * array, the role and the block's place, kept in a tag area after each member's data area
 * (docs/FORMAT.md, "Checksums"). Reads are verified; a block that fails its tag is treated
 * as a media error: rebuilt from the other members, returned and written back, never
 * returned wrong (docs/INTEGRITY.md). The array's block size is 4096. Costs: the tag area
 * (8 bytes per 4 KiB block: about 0.2 % of each member, taken from the data area), a
 * CRC-32C of every block read and written, and the tags' own I/O (cached, at most
 * 64 MiB per array; a tag block not cached is read before the I/O that needs it). RAID-0
 * has nothing to heal from: -EINVAL. The array also keeps write generations, with which
 * lost writes are detected (::GRAID_EVENT_CSUM_LOST_WRITE). An array with checksums cannot
 * be opened by a libgraid older than the version that made it (its superblocks are format
 * major 3 with the feature bit GENERATIONS; an older checksummed array, major 2, gets it at
 * its first writable open).
 */
#define GRAID_CREATE_CHECKSUMS 0x4u

/** @brief How to create an array. */
struct graid_array_config {
	size_t struct_size;      /**< sizeof(struct graid_array_config) as compiled */
	int level;               /**< 0, 1, 5, 6 or 10 */
	uint32_t chunk_bytes;    /**< power of two, 4 KiB .. 1 MiB; 0 means 64 KiB */
	const char *backend;     /**< parity engine name as for graid_backend_open(); NULL: default */
	unsigned flags;          /**< GRAID_CREATE_* */
};

/**
 * graid_open_options::flags: after an unclean shutdown, resynchronise the dirty regions in
 * a background thread instead of before graid_array_open() returns. Meanwhile a block
 * being written at the crash reads as its old or its new contents, and keeps reading so
 * once the resync has passed it: on RAID-1/10, reads of a region not yet resynced go only
 * to the copy the resync copies from. Until it finishes, a degraded read may still return
 * another value than before: on RAID-5/6, a stripe being written at the crash read through
 * stale parity (the write hole; the journal mode closes that); on RAID-1/10, a chunk whose
 * copy the reads went to failed, so that the next copy (which may hold the block's other
 * value) is read and resynced from instead. Flushes meanwhile keep the marks of the
 * regions it has not reached. Not honoured while a RAID-5/6 grow is under way: the open
 * resyncs first, before the reshape moves anything (logged; docs/RESHAPE.md).
 */
#define GRAID_OPEN_RESYNC_BACKGROUND 0x1u

/**
 * graid_open_options::flags: open without writing anything to any member (for status
 * tools): no superblock update, no resync; writes and every call that changes the array
 * return -EROFS. The members are opened read-only (O_RDONLY), so a look works on members
 * the caller may read but not write (a write-protected device, a read-only mount, another
 * user's files).
 */
#define GRAID_OPEN_READ_ONLY 0x2u

/**
 * graid_open_options::flags: forced assembly, for the day a transient error took out one
 * member too many. When the members that agree cannot carry the array, members that the
 * others recorded failed (or stale) are taken back, freshest first, until they can; each is
 * logged with the event count it comes from. The regions written after such a member left
 * are resynced (those the write-intent bitmap names, or the whole array when it does not
 * cover the gap). Data written to those regions while the member was out may be lost where
 * no redundancy was left. Without the flag nothing changes; not with ::GRAID_OPEN_READ_ONLY.
 */
#define GRAID_OPEN_FORCE 0x4u

/**
 * graid_open_options::flags: take the array over from another host. An array whose
 * superblocks name another host as its last writable owner (by machine id, else host name)
 * is never opened writable without this flag: the open fails with -EBUSY, names that host
 * and the owner epoch, and writes nothing. With it the owner epoch goes up by one and this
 * host is recorded; the old owner sees the higher epoch on the members within about a
 * second and stops (::GRAID_EVENT_ARRAY_FOREIGN; its calls return -ESTALE). Use it only
 * when the other host is down or has let go: until the old owner notices, both may write
 * (docs/REMOTE.md, "A second host"). Not with ::GRAID_OPEN_READ_ONLY (a read-only open of
 * another host's array needs no flag).
 */
#define GRAID_OPEN_TAKEOVER 0x8u

/**
 * graid_open_options::flags: fence with the drives themselves. Before it writes anything the
 * open registers this host's key (the first 8 bytes of its machine id) on every member and
 * spare and takes a Write Exclusive persistent reservation through the Linux PR ioctls
 * (NVMe reservations, SCSI persistent reservations): from then on the drives refuse every
 * other host's writes. A member whose reservation another host's key holds is preempted
 * when an owner record of the array names that key (a takeover's old owner), and the
 * open fails with -EBUSY when none does. The close releases the reservations. With this
 * flag every member must support them: a file, an NVMe generic device, or a target without
 * reservations (Debian 6.12's nvmet) fails the open with -EOPNOTSUPP. Without the flag an
 * open that holds a lease (graid_open_options::lease) or takes the array over
 * (::GRAID_OPEN_TAKEOVER) reserves the members that support reservations and leaves the
 * others to the lease and the owner epoch. A handle whose write a drive refuses for a
 * reservation conflict stops as a taken-over one does (::GRAID_EVENT_ARRAY_FOREIGN with
 * error -EBADE); the member is not failed. Not with ::GRAID_OPEN_READ_ONLY.
 * docs/REMOTE.md, "Reservations".
 */
#define GRAID_OPEN_RESERVE 0x10u

/** @brief How to open an array; NULL options mean all defaults. */
struct graid_open_options {
	size_t struct_size;      /**< sizeof(struct graid_open_options) as compiled */
	const char *backend;     /**< parity engine name; NULL: GRAID_BACKEND, else auto */
	unsigned flags;          /**< GRAID_OPEN_* */
	/**
	 * Appended: the array's lease from a lock manager, held by a writable open for its
	 * whole life (ignored by ::GRAID_OPEN_READ_ONLY opens); NULL: none. Today
	 * "sanlock:host-id=N[,io-timeout=S][,offset=BYTES]:PATH": a sanlock lease area at
	 * PATH (a small namespace or file every RAID host reaches) written by
	 * graid_lease_init(), with N this host's id there (1 .. 2000, unique per host). While
	 * another host holds it the open fails with -EBUSY naming that host, and writes
	 * nothing. A handle whose lease is lost (the sanlock daemon gone, or the lease not
	 * renewed within its timeouts) stops at once as a taken-over one does
	 * (::GRAID_EVENT_ARRAY_FOREIGN with error -ENOLCK, -ESTALE from its calls). sanlock
	 * tells of the loss by touching a flag file in `GRAID_RUN_DIR` (default /run/graid: a
	 * directory of the user's own that nobody else may write; non-root users set one). docs/REMOTE.md ("The lease") has
	 * the timeouts and what each costs.
	 */
	const char *lease;
};

/** @brief The state of one member role. */
enum graid_member_state {
	GRAID_MEMBER_ACTIVE = 0,     /**< in sync, serving I/O */
	GRAID_MEMBER_FAILED = 1,     /**< failed (I/O error, a short read or write,
					  graid_array_fail_member()), or found at an open with
					  contents that cannot be trusted (smaller than its
					  superblock says, or its superblock on another NVMe
					  namespace than it was written on): out until replaced
					  (its own device is accepted) and rebuilt whole, or
					  forced back (::GRAID_OPEN_FORCE) */
	GRAID_MEMBER_MISSING = 2,    /**< not given at open (or given and not usable as it is:
					  graid_array_given_info() says why); a member that
					  comes back catches up from the write-intent bitmap */
	GRAID_MEMBER_REBUILDING = 3, /**< replaced, being rebuilt */
	GRAID_MEMBER_SPARE = 4,      /**< a hot spare */
	GRAID_MEMBER_UNREACHABLE = 5, /**< an NVMe-oF namespace none of whose controllers is live
					   while one is reconnecting (a path outage, not a failed
					   drive), or one whose I/O timed out (graid_array_set_io_timeout(),
					   or the kernel's -ETIMEDOUT) while a controller still reads
					   live: out of I/O, writes to it are recorded in the
					   write-intent bitmap, and it is caught up from those
					   regions by itself when a controller is live again; it
					   fails (and a spare takes over) when the last controller
					   is deleted (its ctrl_loss_tmo passed). Only while the
					   other roles carry the array, and only in a libgraid built
					   with libnvme (which identifies NVMe members) */
};

/** @brief What graid_array_info() reports. */
struct graid_array_info {
	size_t struct_size;      /**< set by the caller */
	uint64_t size;           /**< usable bytes */
	uint32_t block_size;     /**< offsets and lengths are multiples of this: 4096 or 512 */
	/** 0, 1, 5, 6, 10; 5 while a RAID-5 becomes a RAID-6 (::GRAID_GROW_RAID6), 6 once done */
	int level;
	uint32_t chunk_bytes;    /**< chunk size */
	unsigned nmembers;       /**< member roles */
	unsigned nfailed;        /**< roles failed or missing */
	char engine[32];         /**< parity engine in use ("none" for levels 0, 1, 10) */
	uint8_t uuid[16];        /**< array UUID */
	uint64_t events;         /**< event counter of the superblocks */
	uint8_t member_state[GRAID_MAX_MEMBERS]; /**< enum graid_member_state per role */
	uint64_t journal_bytes;  /**< write-hole journal per member (::GRAID_CREATE_JOURNAL); 0: none */
	uint64_t journal_replayed; /**< updates the journal replayed when this handle was opened */
	/**
	 * Appended: bytes of the array in regions of the live-data map that are in
	 * use (written since create and not wholly discarded since); rebuild, resync and scrub
	 * skip the rest. @c size on arrays without a map (RAID-0, format 1.0/1.1).
	 */
	uint64_t used_bytes;
	/**
	 * Appended: the owner epoch, one more at each takeover by another host
	 * (0 unknown: written before format 1.3); this handle's for a writable open, the one
	 * the superblocks record for a read-only one.
	 */
	uint64_t owner_epoch;
	char owner_host[64];     /**< the owner's host name, as for @c owner_epoch */
	/**
	 * Appended: 1 when the array was not closed cleanly and its resync has not run: for a
	 * ::GRAID_OPEN_READ_ONLY look, the superblocks lack the clean flag and no live process
	 * on this host holds the array (a crash, or a holder on another host: @c owner_host);
	 * the next writable open resyncs (and replays the journal, if any). For a writable
	 * handle, 1 while the resync of its open (::GRAID_OPEN_RESYNC_BACKGROUND) is under
	 * way. 0 otherwise.
	 */
	int unclean;
	/**
	 * Appended, with @c unclean: regions marked in the write-intent bitmap, which a resync
	 * reads (marks kept while a role is out count too); 0 without a bitmap.
	 */
	uint64_t resync_regions;
	/**
	 * Appended: for a ::GRAID_OPEN_READ_ONLY look, the process on this host that holds the
	 * array writable (alive now), 0 when none; for a writable handle, this process.
	 */
	uint32_t holder_pid;
	/** Appended: that holder described: "pid 4242 (nbdkit) on host h since ..."; "" none. */
	char holder[192];
	/**
	 * Appended, for a writable handle (0 for a look): 1 while a rebuild by the library's
	 * background thread is due or runs (graid_array_rebuild_start(), a spare that took a
	 * role); it may wait for a resync of that thread's to end first.
	 */
	int rebuild_running;
	/**
	 * Appended, with @c rebuild_running: the negative errno the last background rebuild
	 * stopped with (-EIO: too many members lost, or the new member failed; -ENOMEM), 0 when
	 * it ended well or none ran; a rebuild made due again clears it. Roles it left
	 * REBUILDING stay so until a rebuild finishes them.
	 */
	int rebuild_error;
	/** Appended: 1 when the array keeps per-block checksums (::GRAID_CREATE_CHECKSUMS), else 0. */
	uint32_t checksums;
	/**
	 * Appended (docs/RESHAPE.md): 1 while a reshape (graid_array_grow()) is recorded on
	 * the array and has not finished: moving, stopped on a failure (@c reshape_error), or
	 * routed by position in a read-only open; also while the superblock round that ends it
	 * is written, and after that round failed (@c reshape_error; the old size stays until
	 * the next open finishes it); 0 otherwise: once it is done, with @c size the new size.
	 */
	int reshaping;
	/**
	 * Appended, with @c reshaping: 1 while this handle's job moves the data (a writable
	 * handle), 0 when it is not running (stopped, or a read-only open).
	 */
	int reshape_running;
	/**
	 * Appended, with @c reshaping: the negative errno the job stopped with (-EIO a member
	 * failed, or the error of the superblock round that ends it; not -ECANCELED at a
	 * close), 0 while it runs or none stopped.
	 */
	int reshape_error;
	/**
	 * Appended, with @c reshaping: array bytes moved to the new geometry so far (the
	 * recorded position; a resumed reshape counts what was moved before the resume).
	 */
	uint64_t reshape_done;
	/** Appended, with @c reshaping: array bytes to move in all (the size before the grow). */
	uint64_t reshape_total;
	/**
	 * Appended, with @c reshape_running: array bytes moved a second, over the last seconds
	 * (0: not measured yet).
	 */
	uint64_t reshape_bytes_per_sec;
	/**
	 * Appended, with @c reshape_running: seconds left at that rate, rounded up
	 * (UINT64_MAX: unknown, no rate measured yet).
	 */
	uint64_t reshape_eta_sec;
};

/** @brief What graid_array_member_info() reports of one member role. */
struct graid_member_info {
	size_t struct_size;      /**< set by the caller */
	unsigned role;           /**< role index, its position in the create call */
	int state;               /**< enum graid_member_state */
	char path[256];          /**< path it was opened by ("" if missing) */
	char identity[128];      /**< device identity: "block 259:1" or "file dev 8:1 ino 42" */
	int direct_io;           /**< 1 when opened with O_DIRECT, 0 when buffered */
	uint64_t reads;          /**< reads completed */
	uint64_t writes;         /**< writes completed */
	uint64_t read_bytes;     /**< bytes read */
	uint64_t write_bytes;    /**< bytes written */
	uint64_t errors;         /**< I/O errors seen */
	/* Appended: NVMe namespaces. All zero or "" for members that are not. */
	int nvme;                /**< 1 when the member is an NVMe namespace identified through
				      libnvme (block device /dev/nvmeXnY or generic /dev/ngXnY) */
	int nvme_passthrough;    /**< 1 when its I/O is io_uring NVMe passthrough (/dev/ngXnY) */
	char nvme_ctrl[32];      /**< controller name in sysfs ("nvme0"), "" if unknown */
	char nvme_model[41];     /**< Identify Controller MN, trailing spaces removed */
	char nvme_serial[21];    /**< Identify Controller SN, trailing spaces removed */
	char nvme_firmware[9];   /**< Identify Controller FR, trailing spaces removed */
	uint32_t nvme_nsid;      /**< namespace ID */
	uint32_t nvme_lba_bytes; /**< LBA data size of the namespace's format in use */
	uint32_t nvme_meta_bytes; /**< metadata bytes per LBA of that format (0: none) */
	uint64_t nvme_capacity;  /**< namespace size (NSZE) in bytes */
	uint32_t nvme_mdts_bytes; /**< MDTS in bytes, minimum page size taken as 4 KiB; 0: no
				       limit */
	uint32_t nvme_max_transfer; /**< bytes libgraid puts in one passthrough command (MDTS
					 and the kernel's per-request limits) */
	int nvme_volatile_write_cache; /**< 1: a volatile write cache (VWC): writes are durable
					    after a Flush or with FUA */
	int nvme_dealloc_zeroes; /**< 1: deallocated blocks read as zeroes (DLFEAT 001b) and
				      Dataset Management is supported: create can skip zeroing */
	uint8_t nvme_dlfeat;     /**< DLFEAT byte of Identify Namespace, as reported */
	/* Appended: NVMe identity and fabric paths (docs/REMOTE.md). */
	uint8_t nvme_nguid[16];  /**< namespace NGUID; all zero when the namespace has none */
	uint8_t nvme_eui64[8];   /**< namespace EUI-64; all zero when none */
	uint8_t nvme_uuid[16];   /**< namespace UUID (identification descriptor); zero: none */
	char nvme_subsysnqn[224]; /**< NVM subsystem NQN, "" if unknown */
	char nvme_transport[8];  /**< "pcie", "tcp", "rdma", "fc" or "loop"; "" if unknown */
	char nvme_address[128];  /**< transport address of the controller in nvme_ctrl, as sysfs
				      gives it ("traddr=10.0.0.2,trsvcid=4420"; PCIe: the PCI
				      address) */
	char nvme_ctrl_state[16]; /**< that controller's state: "live", "connecting",
				       "resetting", "deleting", "dead", ... ("" if unknown) */
	unsigned nvme_paths;     /**< controllers through which the namespace is reached (2 or
				      more with native NVMe multipath) */
	unsigned nvme_paths_live; /**< of those, the ones in state "live" */
	uint64_t catchup_done;   /**< bytes copied so far by the current or last catch-up (or
				      rebuild) of this role */
	uint64_t catchup_total;  /**< bytes that catch-up or rebuild has to copy in all (equal to
				      catchup_done once it finished); 0: none ran since the open */
	uint64_t outages;        /**< times this member became unreachable since the open, or
				      since the role's last replacement */
	/* Appended: the I/O timeout (graid_array_set_io_timeout()). */
	uint64_t timeouts;       /**< I/Os of this role given up on after the array's I/O
				      timeout since the open */
	unsigned late_ios;       /**< of those, the ones on its device that the kernel has not
				      ended yet (while not 0 the role is not caught up) */
	/* Appended: bad blocks and repaired read errors (docs/ARRAYS.md, "Bad blocks"). */
	uint64_t bad_blocks;     /**< 4 KiB blocks of this role's device in its bad-block log
				      (graid_array_bad_blocks() lists them) */
	uint64_t read_repaired;  /**< blocks it could not read that were recomputed from
				      redundancy and written back since the open */
	/* Appended: a replace in service (graid_array_replace_start()). */
	int replacing;           /**< 1: the role is being copied onto replace_path while it
				      stays ACTIVE on this member; 0 none */
	char replace_path[256];  /**< the device the copy writes to ("" when none) */
	uint64_t replace_done;   /**< bytes of the role's data area in sync on it so far */
	uint64_t replace_total;  /**< bytes of the role's data area in all */
	/* Appended: per-block checksums (docs/INTEGRITY.md, "What an operator sees"). */
	/**
	 * 4 KiB blocks of this role that failed their checksum when read since the open, or
	 * since the role's last replacement (a spare, replace or replace in service starts it
	 * at 0); not kept across a close. A healed mismatch (data or tag wrong) counts once,
	 * though read again before its repair; a block that fails again after its repair counts
	 * again; a block beyond repair counts at each read that fails -EIO for it. Not counted:
	 * a replace's reads of its source roles; mismatches in regions still to resync
	 * after a crash (::GRAID_EVENT_CSUM_UNVERIFIED). Never an I/O error (@c errors), nor a
	 * read error against the member. 0 on arrays without checksums, for spares, and for a
	 * read-only look (its own reads only: a holder's count is its control endpoint's).
	 */
	uint64_t checksum_errors;
	/**
	 * Of @c checksum_errors, the blocks whose repair found their data right and only their
	 * tag wrong (::GRAID_EVENT_CSUM_TAG_ERROR); the rest held wrong data, or could not be
	 * repaired. Counted when the repair is written, so briefly behind @c checksum_errors.
	 */
	uint64_t checksum_tag_errors;
	/**
	 * Appended: of @c checksum_errors, the blocks found stale by their write generation
	 * (::GRAID_EVENT_CSUM_LOST_WRITE: the member acknowledged a write of data and tag and
	 * kept neither), healed or not. A drive that loses acknowledged writes (a volatile
	 * cache reported safe, firmware) calls for another answer than bit rot. Counted when
	 * found; 0 on arrays that keep no generations.
	 */
	uint64_t checksum_lost_writes;
};

/** @brief Why a block is in a member's bad-block log (flags of struct graid_bad_block). */
#define GRAID_BAD_BLOCK_LOST 0x1u       /**< a rebuild had no redundancy left to compute it */
#define GRAID_BAD_BLOCK_UNREADABLE 0x2u /**< the device could not read it, and no redundancy
					     was left to rewrite it */

/** @brief One range of a member's bad-block log. */
struct graid_bad_block {
	uint64_t member_offset;  /**< bytes from the start of the member's data area (4 KiB
				      aligned) */
	uint64_t len;            /**< bytes, a multiple of 4096 */
	unsigned flags;          /**< GRAID_BAD_BLOCK_* */
	/**
	 * The array bytes the range's first block holds: its array offset, or UINT64_MAX when
	 * that block holds parity (RAID-5/6) or no chunk (the unused slot of an odd RAID-10).
	 * While a grow moves data, the byte the place holds now (by the move's position);
	 * UINT64_MAX also for a place it has moved from and not yet written.
	 */
	uint64_t array_offset;
};

/** @brief What graid_member_probe() found on a device. */
struct graid_member_probe {
	size_t struct_size;      /**< set by the caller */
	int has_superblock;      /**< 1: a valid libgraid superblock; 0: none, and the fields
				      below are zero */
	uint8_t array_uuid[16];  /**< the array it belongs to */
	uint8_t member_uuid[16]; /**< the member's own UUID */
	int level;               /**< RAID level of that array */
	unsigned nmembers;       /**< member roles of that array */
	unsigned role;           /**< this device's role (a hot spare's slot when >= nmembers) */
	uint64_t events;         /**< event counter of its superblock */
	int state;               /**< enum graid_member_state of its role, as it recorded */
};

/**
 * @brief What became of a device given to graid_array_open() (graid_given_info::verdict).
 *   docs/ARRAYS.md, "Members left out at open", has what each costs.
 */
enum graid_given_verdict {
	GRAID_GIVEN_MEMBER = 0,       /**< in its role: active, being rebuilt, or catching up */
	GRAID_GIVEN_SPARE = 1,        /**< a hot spare */
	GRAID_GIVEN_UNOPENED = 2,     /**< it could not be opened (@c error says why) */
	GRAID_GIVEN_NOT_WRITABLE = 3, /**< a writable open could not open it for writing
					   (EACCES, EPERM, EROFS): its role is missing, and it
					   catches up when given writable */
	GRAID_GIVEN_TWICE = 4,        /**< the same device as an earlier path given */
	GRAID_GIVEN_NO_SUPERBLOCK = 5, /**< no libgraid superblock (or too small for one) */
	GRAID_GIVEN_BAD_SUPERBLOCK = 6, /**< a superblock with a wrong checksum or invalid
					     fields, or one that could not be read */
	GRAID_GIVEN_UNREACHABLE = 7,  /**< unreadable while its NVMe-oF controllers reconnect */
	GRAID_GIVEN_OTHER_ARRAY = 8,  /**< a member of another array */
	GRAID_GIVEN_GEOMETRY = 9,     /**< its superblock's geometry is not the array's */
	GRAID_GIVEN_REPLACED = 10,    /**< its role was given to another device */
	GRAID_GIVEN_SHRUNK = 11,      /**< smaller than its superblock says: its role is
					   recorded failed, never caught up */
	GRAID_GIVEN_IDENTITY = 12,    /**< its superblock was written on another NVMe namespace
					   (a copy): its role is recorded failed */
	GRAID_GIVEN_STALE = 13,       /**< behind the others, which recorded it failed or out */
	GRAID_GIVEN_FAILED = 14,      /**< its role is recorded failed */
	GRAID_GIVEN_DIVERGED = 15,    /**< written after the others recorded it out (a split) */
	GRAID_GIVEN_ROLE_TAKEN = 16,  /**< another device given holds the same role */
	GRAID_GIVEN_NOT_HELD = 17,    /**< a writable open could not hold it (its path now
					   names another device) */
	GRAID_GIVEN_SPARES_FULL = 18, /**< a spare past the ::GRAID_MAX_SPARES the array keeps */
};

/** @brief What graid_array_given_info() reports of one device given to the open. */
struct graid_given_info {
	size_t struct_size;      /**< set by the caller */
	int verdict;             /**< enum graid_given_verdict */
	int role;                /**< the role (or a spare's slot, >= nmembers) its superblock
				      names; -1 when it has none that could be read */
	int error;               /**< the negative errno that kept it out, or 0 */
	uint64_t events;         /**< its superblock's event count; 0 when none */
	char why[160];           /**< the reason in words, as the log gave it; "" when in */
	/**
	 * 1 when this process may write the device: a writable open opened it for writing;
	 * a ::GRAID_OPEN_READ_ONLY look checks without writing (its permissions for this
	 * process, a read-only mount, a block device set read-only), so that a front-end can
	 * tell before a writable open would leave it out (::GRAID_GIVEN_NOT_WRITABLE). 0 when
	 * it may not, or was not opened.
	 */
	int writable;
};

/**
 * @brief Create an array on members and open it.
 *
 * Every member gets a superblock; the data area is zeroed (hole punch on files, BLKZEROOUT
 * on block devices, written zeroes where neither works), so a new array reads as zeroes and
 * its parity is consistent from the start. Fast init: when every member is an NVMe
 * namespace that reads deallocated blocks as zeroes (DLFEAT), the data areas are
 * deallocated instead (Dataset Management, or BLKDISCARD on the block device) and checked,
 * which takes moments on any size; the log says which was done (docs/NVME.md).
 * Members may be NVMe generic char devices (/dev/ngXnY): their I/O is io_uring NVMe
 * passthrough.
 *
 * @param members paths (at most 255 bytes each: a longer one is refused with -EINVAL and
 *   logged); a member's role is its position here.
 * @param nmembers how many: RAID-0 >= 2, RAID-1 >= 2, RAID-5 >= 3, RAID-6 >= 4,
 *   RAID-10 >= 2; at most ::GRAID_MAX_MEMBERS.
 * @param cfg level, chunk, engine, flags.
 * @param out the open array; untouched on failure.
 * @return 0;
 *   -EINVAL NULL arguments, bad level or chunk size, too few or too many members, a member
 *           given twice, a member too small, or a member that carries a libgraid
 *           superblock without ::GRAID_CREATE_FORCE (the log names the member and reason),
 *           an unknown flag, ::GRAID_CREATE_JOURNAL for a level without parity, or
 *           ::GRAID_CREATE_CHECKSUMS for RAID-0 (the log names the level);
 *   -ENOENT a member path does not exist; -EACCES/-EPERM no permission; -EBUSY a member
 *           is in use (a block device held or mounted, or a member file locked by another
 *           open array, in this process or another); -ENOLCK the lock directory cannot be
 *           used (see graid_array_open()); -ENODEV / -ENOEXEC the parity engine (see
 *           graid_backend_open()); -EOPNOTSUPP a char device that is not an NVMe
 *           namespace, an NVMe generic device whose LBA format's metadata cannot be
 *           carried (extended LBAs, or protection information with a guard other than
 *           16 bits; the log says which: docs/NVME.md, "Metadata and protection
 *           information"), or a generic device in a libgraid built without
 *           libnvme; -EIO a member failed while being written; -ENOMEM out of memory,
 *           or the array's worker thread (spares, background rebuilds) could not
 *           be started.
 *   On any failure before member data is written, no member is modified.
 */
GRAID_API int graid_array_create(const char *const *members, unsigned nmembers,
				 const struct graid_array_config *cfg, struct graid_array **out);

/**
 * @brief Assemble an array from its members' superblocks.
 *
 * Members may be given in any order; each is put back in its role. Members of another
 * array, members with a corrupt superblock, a path given twice, and members that fresher
 * ones recorded failed are left out with a logged reason. With roles missing the array
 * opens degraded if the level can bear it, and the log names the roles out.
 *
 * Ownership (docs/ARRAYS.md, "Who owns an array"): a writable open holds the array, all or
 * none, before it writes anything: this host's lock on the array's UUID (a file in
 * `GRAID_LOCK_DIR`, default `/run/lock/libgraid` for root and `/run/lock/libgraid-UID` for
 * other users), then each member (flock(), and O_EXCL on
 * block devices) in role order. If another open holds any of it, nothing is written and
 * the call fails with -EBUSY — at once when the recorded holder (pid, process start time,
 * host, in the superblocks) is alive, after waiting up to 10 s for the kernel to let go of
 * the members when it died (a killed process's io_uring releases its files late). A
 * ::GRAID_OPEN_READ_ONLY open takes no lock and succeeds while another holds the array.
 *
 * Members that come back: a member left out of earlier opens because it was absent (never
 * one recorded failed) rejoins its role when given again. While any role is out the
 * write-intent bitmap keeps every mark, so such a member is copied only the regions written
 * since it left (nothing at all when nothing was written), in the background as a spare is;
 * one whose gap the bitmap does not cover is rebuilt whole. graid_array_rebuild() waits for
 * either. A member whose contents cannot be trusted as a whole never catches up: one found
 * smaller than its superblock says (data offset + data bytes), or whose superblock was
 * written on another NVMe namespace than the one it is on now, is left out and its role
 * recorded failed, so that it is rebuilt whole once replaced (by itself, if it is whole
 * again). graid_array_given_info() says what became of each device given; docs/ARRAYS.md,
 * "Members left out at open", lists every case and what it costs.
 *
 * @param members paths (at most 255 bytes each: a longer one is left out, logged).
 * @param nmembers how many, 1 .. ::GRAID_MAX_MEMBERS.
 * @param opts NULL, or options.
 * @param out the open array; untouched on failure.
 * @return 0;
 *   -EINVAL NULL arguments, unknown flags, ::GRAID_OPEN_FORCE, ::GRAID_OPEN_TAKEOVER or
 *           ::GRAID_OPEN_RESERVE with ::GRAID_OPEN_READ_ONLY, or no member carries a valid
 *           libgraid superblock;
 *   -EACCES/-EPERM/-EROFS a writable open could open no member that carries a superblock
 *           for writing (logged; ::GRAID_OPEN_READ_ONLY can look at them);
 *   -EIO more roles missing or failed than the level tolerates (nothing is written);
 *   -EIO also: the members given record two geometries at their freshest event, the
 *           array split across a graid_array_convert() (one side took its round, the
 *           other was opened without it and moved on, both sides at the same event):
 *           logged naming both, each member given logged as ::GRAID_GIVEN_DIVERGED (the
 *           log alone carries these verdicts: no handle exists, so
 *           graid_array_given_info() cannot be asked), nothing written; give one side's
 *           members alone;
 *   -EBUSY the array (any of its members given, or its UUID on this host) is held by
 *           another open, in this process or another, or a member block device is held
 *           by something else (mounted, md, dm); nothing is written;
 *   -ENOLCK the lock directory cannot be used (it must be a directory of this user's or
 *           root's that nobody else can write; `GRAID_LOCK_DIR` names another);
 *   -EAGAIN the members changed arrays while being assembled (a concurrent create);
 *   -EBUSY also: a member's persistent reservation is held by a host no owner record of
 *           the array names (an open that reserves: ::GRAID_OPEN_RESERVE, a lease, or a
 *           takeover; logged, naming the member; nothing is written);
 *   -EOPNOTSUPP also: ::GRAID_OPEN_RESERVE and a member without persistent reservations,
 *           or this host without a machine id (nothing is written);
 *   -EIO also: ::GRAID_OPEN_RESERVE and a member whose reservation commands failed (logged
 *           with the device's status; nothing is written);
 *   -EBUSY also: graid_open_options::lease is held by another host (logged, naming it).
 *           While that host renews its lease the open fails within about 2 x io-timeout.
 *           Once it has stopped renewing (it died), sanlock waits inside the open until it
 *           counts that host dead: 8 x io-timeout + 60 s (68 s with io-timeout=1) from
 *           when this host's daemon first saw the renewals stop, in full for a host that
 *           joins the lockspace only now; then the open takes the lease, or fails -EBUSY
 *           if another host took it first;
 *   -ENOLCK also: the lease could not be taken for another reason (no sanlock daemon, the
 *           area not written by graid_lease_init(); logged); -EOPNOTSUPP also: a lease
 *           of a lock manager this libgraid was built without;
 *   -EPROTO the superblocks record a bitmap region size that does not fit the bitmap;
 *   -EOPNOTSUPP also: the freshest superblock records a reshape in progress (written by a
 *           libgraid that grows arrays), which this build cannot resume (logged, naming
 *           the array and where its reshape record says the reshape stands, or that no
 *           member holds a valid record, the array then damaged; nothing is written,
 *           read-only opens included);
 *   -ENODEV/-ENOEXEC the parity engine; -EOPNOTSUPP as for graid_array_create() (NVMe
 *           generic devices); -ENOMEM out of memory, or (writable opens) the array's
 *           worker thread could not be started.
 */
GRAID_API int graid_array_open(const char *const *members, unsigned nmembers,
			       const struct graid_open_options *opts, struct graid_array **out);

/**
 * @brief Write the lease area a lease spec names (graid_open_options::lease) for the array
 *   @p array_uuid, once, before its first open with that lease: sanlock's lockspace and the
 *   array's lease, with the spec's io-timeout (which sets how fast a dead host's lease can
 *   be taken: 8 x io-timeout + 60 s). Needs a running sanlock daemon. Overwrites whatever
 *   the area held: never while an open holds the lease.
 * @param spec the lease spec, as for graid_open_options::lease.
 * @param array_uuid the array's UUID (graid_array_info::uuid, graid_member_probe()).
 * @return 0; -EINVAL a malformed spec or NULL arguments (logged); -EOPNOTSUPP this libgraid
 *   was built without sanlock; -ENOENT the path does not exist; -EBUSY this host is in the
 *   area's lockspace (hosts stay in it after a close: leave it first, logged how); -EIO or
 *   another -errno the sanlock daemon could not write it (logged with sanlock's reason);
 *   -ENOMEM.
 */
GRAID_API int graid_lease_init(const char *spec, const uint8_t array_uuid[16]);

/**
 * @brief Flush, mark the array clean on every member, and free it. A resync after an
 *   unclean open that failed (logged) leaves the array marked unclean instead, so that the
 *   next open resyncs the regions still marked.
 * @param a the array (NULL is ignored); no call on it may be in progress, but for
 *   graid_array_replace_start() with ::GRAID_REPLACE_WAIT or graid_array_grow() with
 *   ::GRAID_GROW_WAIT on another thread: its copy or move is stopped (that call returns
 *   -ECANCELED; a grow's next open resumes it) and the close waits until that call returned.
 * @return 0; -EIO a member could not be flushed or updated (the array is freed anyway);
 *   -ESTALE another host took the array over: nothing was written at close; -EDEADLK
 *   called on the array's control endpoint's own thread (an event callback run by a
 *   request) or on the thread of a scrub the endpoint started: nothing was done, the array
 *   stays open.
 */
GRAID_API int graid_array_close(struct graid_array *a);

/**
 * @brief Read from the array.
 * @param a the array.
 * @param buf destination, any alignment.
 * @param len bytes, a multiple of the block size.
 * @param offset array offset, a multiple of the block size; offset + len <= size.
 * @return @p len; -EINVAL misaligned or out of range; -EIO the data cannot be read (more
 *   members failed than the level tolerates); -ENOMEM; -ESTALE another host took the
 *   array over (::GRAID_EVENT_ARRAY_FOREIGN).
 */
GRAID_API ssize_t graid_array_read(struct graid_array *a, void *buf, size_t len,
				   uint64_t offset);

/**
 * @brief Write to the array. Parity is updated before the call returns; a member that fails
 *   during the write is marked failed and the write succeeds degraded if the level allows.
 * @param a the array.
 * @param buf source, any alignment.
 * @param len bytes, a multiple of the block size.
 * @param offset array offset, a multiple of the block size; offset + len <= size.
 * @return @p len; -EINVAL misaligned or out of range; -EIO too many members failed, or
 *   the durable mark that a region's first write needs (write-intent bitmap, live-data map)
 *   reached no member: that part was sent to no member (logged);
 *   -ENOMEM; -EROFS the array was opened read-only; -ESTALE another host took the array
 *   over (::GRAID_EVENT_ARRAY_FOREIGN).
 */
GRAID_API ssize_t graid_array_write(struct graid_array *a, const void *buf, size_t len,
				    uint64_t offset);

/**
 * @brief Discard a range: afterwards it reads back as zeroes, on every level, degraded or
 *   not, and parity stays consistent. Whole stripes (whole chunks on RAID-1/10) are
 *   deallocated on every writable member where each reads deallocated blocks as zeroes: a
 *   hole punched in a file, BLKZEROOUT on a block device (the kernel unmaps where the device
 *   can), NVMe Dataset Management where the namespace's DLFEAT says deallocated blocks read
 *   zeroes. Anything else, partial stripes, and every stripe of an array that keeps the
 *   write-hole journal, is written as zeroes through the ordinary write path. It takes the
 *   stripe locks and marks the write-intent bitmap as a write does; a crash in the middle
 *   leaves each block of the range its old content or zeroes, never anything else.
 * @param a the array.
 * @param offset array offset, a multiple of the block size.
 * @param len bytes, a multiple of the block size; offset + len <= size (0: nothing).
 * @return 0; -EINVAL @p a NULL, misaligned or out of range (nothing changed); -EROFS the
 *   array was opened read-only; -EIO the array has failed (more members lost than the level
 *   tolerates), or a RAID-0 member failed during the call; -ENOMEM; -ESTALE another host
 *   took the array over.
 */
GRAID_API int graid_array_discard(struct graid_array *a, uint64_t offset, uint64_t len);

/**
 * @brief Write zeroes over a range; as graid_array_discard(), which it equals in effect: the
 *   zeroes may be stored by deallocation where members read deallocated blocks as zeroes.
 * @param a the array.
 * @param offset array offset, a multiple of the block size.
 * @param len bytes, a multiple of the block size; offset + len <= size.
 * @return 0; -EINVAL; -EROFS; -EIO; -ENOMEM (as graid_array_discard()).
 */
GRAID_API int graid_array_write_zeroes(struct graid_array *a, uint64_t offset, uint64_t len);

/**
 * @brief Make every completed write durable on every active member, and on the device a
 *   replace in service copies a role onto (graid_array_replace_start()).
 * @param a the array.
 * @return 0; -EINVAL @p a NULL; -EIO a member failed to flush (it is marked failed; the
 *   new device of a replace failing its flush ends that copy instead, not this call);
 *   -ESTALE another host took the array over (::GRAID_EVENT_ARRAY_FOREIGN).
 */
GRAID_API int graid_array_flush(struct graid_array *a);

/**
 * @brief Describe the array.
 * @param a the array.
 * @param info filled up to its struct_size.
 * @return 0; -EINVAL NULL argument or struct_size too small.
 */
GRAID_API int graid_array_info(struct graid_array *a, struct graid_array_info *info);

/**
 * @brief Describe one member role, or a hot spare.
 * @param a the array.
 * @param idx role, 0 .. nmembers-1; nmembers .. nmembers+spares-1 name the hot spares
 *   (state GRAID_MEMBER_SPARE).
 * @param mi filled up to its struct_size: a caller built before the NVMe fields were
 *   appended gets the fields it knows.
 * @return 0; -EINVAL NULL argument, @p idx out of range or struct_size smaller than the
 *   struct up to and including @c errors.
 */
GRAID_API int graid_array_member_info(struct graid_array *a, unsigned idx,
				      struct graid_member_info *mi);

/**
 * @brief List a member role's bad-block log: the 4 KiB blocks of its device that hold
 *   nothing valid (docs/ARRAYS.md, "Bad blocks"). A read that needs one of them takes it
 *   from redundancy where the rest of its stripe allows, and fails with -EIO otherwise. A
 *   write of valid contents over the whole block clears it: on RAID-1/10 any write that
 *   covers it; on RAID-5/6 one that can make its stripe whole (where redundancy still
 *   covers the block, any write of it; where it does not, one that rewrites every lost data
 *   chunk of the stripe whole — a smaller write into such a stripe's lost chunks fails with
 *   -EIO, while writes to its intact chunks go through).
 * @param a the array (a read-only open lists what the devices recorded).
 * @param idx role, 0 .. nmembers-1.
 * @param out receives up to @p max ranges, in member order; may be NULL when @p max is 0.
 * @param max entries @p out has room for.
 * @return how many ranges the log holds in all (more than @p max: only @p max were copied),
 *   0 when it holds none or the array keeps no log (RAID-0, or a missing role);
 *   -EINVAL NULL @p a, @p idx out of range, or NULL @p out with @p max not 0.
 */
GRAID_API int graid_array_bad_blocks(struct graid_array *a, unsigned idx,
				     struct graid_bad_block *out, unsigned max);

/**
 * @brief Say what became of the @p idx-th path given to graid_array_open(): in its role, a
 *   spare, or left out and why. A front-end names the reason a member given is not in the
 *   array with it (the log says the same, once). Arrays from graid_array_create() report
 *   every member in its role.
 * @param a the array.
 * @param idx position in the @c members of graid_array_open(), 0 .. nmembers-1.
 * @param out filled up to its struct_size.
 * @return 0; -EINVAL NULL argument, @p idx out of range, or struct_size smaller than the
 *   struct up to and including @c why.
 */
GRAID_API int graid_array_given_info(struct graid_array *a, unsigned idx,
				     struct graid_given_info *out);

/** @name Drive health
 * @{
 */

/** Critical warning bits (struct graid_member_health::critical_warning), as NVMe defines
 *  them in byte 0 of its SMART / Health Information log page. */
#define GRAID_HEALTH_CRIT_SPARE 0x01u       /**< available spare below its threshold */
#define GRAID_HEALTH_CRIT_TEMPERATURE 0x02u /**< a temperature past a threshold */
#define GRAID_HEALTH_CRIT_RELIABILITY 0x04u /**< reliability degraded by media or internal
					         errors */
#define GRAID_HEALTH_CRIT_READ_ONLY 0x08u   /**< the media was made read-only */
#define GRAID_HEALTH_CRIT_BACKUP 0x10u      /**< a volatile memory backup device failed */
#define GRAID_HEALTH_CRIT_PMR 0x20u         /**< the persistent memory region went read-only */

/**
 * @brief A drive's health, as its SMART / Health Information log says it now
 *   (graid_array_member_health()). Counters are the drive's own, over its life.
 */
struct graid_member_health {
	size_t struct_size;          /**< set by the caller */
	uint64_t sampled_ns;         /**< CLOCK_MONOTONIC when it was read */
	char source[16];             /**< "nvme": the drive's log page; "scripted": a test's */
	uint8_t critical_warning;    /**< GRAID_HEALTH_CRIT_* bits */
	uint8_t available_spare;     /**< spare capacity left, percent */
	uint8_t spare_threshold;     /**< the drive's threshold for it, percent */
	uint8_t percent_used;        /**< life used, percent (may pass 100; at most 255) */
	int temperature_c;           /**< composite temperature, degrees Celsius */
	uint64_t media_errors;       /**< unrecovered data integrity errors */
	uint64_t error_log_entries;  /**< error information log entries */
	uint64_t power_on_hours;     /**< hours powered on */
	uint64_t power_cycles;       /**< power cycles */
	uint64_t unsafe_shutdowns;   /**< shutdowns without notice */
	uint64_t data_units_read;    /**< units of 512,000 bytes read by hosts */
	uint64_t data_units_written; /**< units of 512,000 bytes written by hosts */
	uint32_t warning_temp_minutes;  /**< minutes above the warning temperature */
	uint32_t critical_temp_minutes; /**< minutes above the critical temperature */
};

/**
 * @brief Read a member's (or hot spare's) health from the drive now: the NVMe SMART /
 *   Health Information log page (controller-wide), for NVMe namespaces local or over a
 *   fabric, through libnvme. One admin command: it may take milliseconds, more on a fabric
 *   whose controller is reconnecting; call it from a thread that may wait. Counters above
 *   2^64 - 1 read as 2^64 - 1.
 * @param a the array.
 * @param idx the role (0 .. nmembers - 1), or a spare (nmembers ..), as for
 *   graid_array_member_info().
 * @param out filled up to its struct_size when 0 is returned.
 * @return 0; -EINVAL NULL arguments, @p idx out of range or struct_size smaller than up to
 *   @c media_errors; -ENODEV the role has no device (missing); -EOPNOTSUPP the member is
 *   no NVMe namespace (a file, another block device) or libgraid was built without
 *   libnvme; -EIO or another negative errno from the command (an NVMe status is logged).
 */
GRAID_API int graid_array_member_health(struct graid_array *a, unsigned idx,
					struct graid_member_health *out);

/**
 * @brief What the array's health watch last read of a member's (or hot spare's) drive,
 *   and the policy's rules that hold for it: no command is sent and nothing waits on the
 *   drive, so a holder may call it from any thread (a control endpoint's, an HTTP
 *   endpoint's) while a drive hangs. Takes the array's metadata lock for a copy.
 * @param a the array, opened writable (a read-only open has no watch: use
 *   graid_array_member_health()).
 * @param idx the role (0 .. nmembers - 1), or a spare (nmembers ..), as for
 *   graid_array_member_info().
 * @param out filled up to its struct_size when 0 is returned; @c sampled_ns is when the
 *   watch took the sample (CLOCK_MONOTONIC).
 * @param rules NULL, or set on 0 and on -ENODATA to the GRAID_HEALTH_RULE_* bits that hold
 *   for the device the role (or spare) has now: those whose crossing was reported and that
 *   have not stopped holding since (::GRAID_HEALTH_RULE_IO_ERRORS also for a member with no
 *   health log); 0 when none holds.
 * @return 0; -EINVAL NULL @p a or @p out, @p idx out of range or struct_size smaller than
 *   up to @c media_errors; -EROFS the array was opened read-only; -ENODATA the watch has
 *   no sample of the device the slot has now (the watch is off, its first round has not
 *   reached it, the device was replaced since, or it has no health log: a file, another
 *   block device; @p rules is still set).
 */
GRAID_API int graid_array_member_health_last(struct graid_array *a, unsigned idx,
					     struct graid_member_health *out, uint32_t *rules);

/** The health policy's rules: bits of struct graid_event::count of the health events
 *  (docs/HEALTH.md has each one's reason). */
#define GRAID_HEALTH_RULE_CRITICAL_BIT 0x01u /**< a critical warning bit newly set (critical) */
#define GRAID_HEALTH_RULE_SPARE_LOW 0x02u    /**< available spare at or below its threshold
					          (critical) */
#define GRAID_HEALTH_RULE_WEAR 0x04u         /**< percent used at the wear limit (warning) */
#define GRAID_HEALTH_RULE_MEDIA_RISING 0x08u /**< media errors rising in consecutive samples
					          (warning) */
#define GRAID_HEALTH_RULE_MEDIA_BURST 0x10u  /**< many media errors within the window
					          (warning) */
#define GRAID_HEALTH_RULE_IO_ERRORS 0x20u    /**< failed I/Os of the member's device, many in
					          a row or many within the window, on any
					          kind of member (critical) */

/** The most graid_health_options::io_errors_burst may be. */
#define GRAID_HEALTH_IO_BURST_MAX 32u

/** The shortest interval graid_array_set_health_options() takes. */
#define GRAID_HEALTH_INTERVAL_MIN_MS 100u

/**
 * @brief How the array's health watch samples its members' drive health
 *   (graid_array_set_health_options()). Zero in a field of a policy setting turns that
 *   rule off; the defaults are what a writable open starts with.
 */
struct graid_health_options {
	size_t struct_size;          /**< sizeof(struct graid_health_options) as compiled */
	uint32_t interval_ms;        /**< sample every member this often, at least
				          ::GRAID_HEALTH_INTERVAL_MIN_MS; 0: no watch (default
				          60000) */
	uint32_t wear_percent;       /**< ::GRAID_HEALTH_RULE_WEAR at this percent used, at
				          most 255 (default 90) */
	uint32_t media_rising;       /**< ::GRAID_HEALTH_RULE_MEDIA_RISING after media errors
				          rose in this many samples in a row (default 2) */
	uint32_t media_burst;        /**< ::GRAID_HEALTH_RULE_MEDIA_BURST at this many media
				          errors... (default 25) */
	uint32_t media_window_s;     /**< ...within this many seconds (default 600) */
	/* Appended: what a critical verdict does (graid_array_replace_start()). */
	uint32_t auto_replace_off;   /**< 1: a ::GRAID_EVENT_HEALTH_CRITICAL verdict on an active
				          role starts nothing; 0 (default): it starts a replace of
				          the role onto the array's last hot spare whose own drive
				          is not in critical health, in service, where there is one
				          and no other replace runs */
	/* Appended: the I/O-error rule, judged for every active role whatever its kind. */
	uint32_t io_errors_in_row;   /**< ::GRAID_HEALTH_RULE_IO_ERRORS after this many failed
				          I/Os of a role's device with no success between them;
				          UINT32_MAX: never; 0: the default (3) */
	uint32_t io_errors_burst;    /**< ::GRAID_HEALTH_RULE_IO_ERRORS at this many failed
				          I/Os... at most ::GRAID_HEALTH_IO_BURST_MAX; UINT32_MAX:
				          never; 0: the default (10) */
	uint32_t io_errors_window_s; /**< ...within this many seconds; 0: the default (600) */
};

/**
 * @brief Set how the array watches its members' health. A writable open watches with the
 *   defaults of struct graid_health_options: every minute, the array's health watch (a
 *   thread beside its worker) reads each NVMe member's and spare's health (graid_array_member_health()), judges it
 *   against the policy, and sends ::GRAID_EVENT_HEALTH_CRITICAL or
 *   ::GRAID_EVENT_HEALTH_WARNING when a rule begins to hold (once per crossing). Members
 *   that are no NVMe namespace have no health log to read; every active role, whatever its
 *   kind, is judged at each round on its failed I/Os (::GRAID_HEALTH_RULE_IO_ERRORS, off
 *   with UINT32_MAX in both io_errors_in_row and io_errors_burst). The options take
 *   effect at once: a round of samples is taken now, then one every interval.
 * @param a the array, opened writable.
 * @param opts the options.
 * Roles failed, missing or unreachable are not sampled. The watch samples also while the
 *   worker rebuilds or resyncs (docs/HEALTH.md). A log read waits for the kernel's admin
 *   timeout, during which only the watch waits: the worker's spares, rebuilds and resync
 *   go on, and a close waits for the read to end.
 * A critical verdict on an active role starts graid_array_replace_start(a, role, NULL, 0)
 *   (the last hot spare not itself in critical health takes a copy of the role while the
 *   member stays in service; its events follow the HEALTH_CRITICAL one), unless
 *   auto_replace_off is set or the array has no such spare or a replace under way (logged).
 * @return 0; -EINVAL NULL arguments, struct_size smaller than the struct's first version,
 *   wear_percent above 255, interval_ms below ::GRAID_HEALTH_INTERVAL_MIN_MS (and not
 *   0), or io_errors_burst above ::GRAID_HEALTH_IO_BURST_MAX (and not UINT32_MAX);
 *   -EROFS the array was opened read-only (it has no worker); -ENOMEM the open could
 *   not get the watch's memory or thread (logged then): nothing is watched.
 */
GRAID_API int graid_array_set_health_options(struct graid_array *a,
					     const struct graid_health_options *opts);

/** @} */

/**
 * @name I/O statistics
 * Counts of the I/O an array was asked for and of what its members did (docs/STATS.md).
 * @{
 */

/** @brief The kinds of I/O counted (struct graid_io_stats::io's index). */
enum graid_io_kind {
	GRAID_IO_READ = 0,    /**< reads */
	GRAID_IO_WRITE = 1,   /**< writes */
	GRAID_IO_FLUSH = 2,   /**< flushes (the array's; a member's fdatasync or NVMe Flush) */
	GRAID_IO_DISCARD = 3, /**< discards and writes of zeroes (the array's); a member's
				   deallocation (hole, BLKDISCARD, NVMe deallocate) */
};

/** The number of kinds in enum graid_io_kind. */
#define GRAID_IO_KINDS 4
/** The number of buckets of struct graid_io_counts::latency. */
#define GRAID_LATENCY_BUCKETS 32

/** @brief The counts of one kind of I/O. */
struct graid_io_counts {
	uint64_t ops;            /**< I/Os completed, failed ones too */
	uint64_t bytes;          /**< bytes of the I/Os that succeeded (0 for flushes) */
	uint64_t errors;         /**< I/Os that failed */
	uint64_t latency_ns_sum; /**< the sum of every I/O's latency, nanoseconds */
	/**
	 * The sum of the latencies, nanoseconds, of the I/Os counted in @c latency (those that
	 * completed while ::GRAID_STATS_HISTOGRAMS was on): with their count, the mean of the
	 * histogram's I/Os. Like every counter here it never goes down while the role keeps
	 * its device, histograms on or off.
	 */
	uint64_t latency_hist_ns_sum;
	/**
	 * With ::GRAID_STATS_HISTOGRAMS on: I/Os that completed in [2^(i+9), 2^(i+10)) ns;
	 * latency[0] also everything faster, latency[31] everything slower. Counted only while
	 * histograms are on, so they sum to @c ops only if they were on all along.
	 */
	uint64_t latency[GRAID_LATENCY_BUCKETS];
};

/** @brief What graid_array_stats() reports. */
struct graid_io_stats {
	size_t struct_size;      /**< set by the caller */
	struct graid_io_counts io[GRAID_IO_KINDS]; /**< by enum graid_io_kind */
	uint64_t since_ns;       /**< when counting began: CLOCK_MONOTONIC, nanoseconds (the
				      open, or for a member the day its device joined the role) */
};

/**
 * @brief Read the array's I/O counters. Counting is always on; the counters are read
 *   without a lock, each one whole, while I/O goes on (two counters of one call may be an
 *   I/O apart). A call's counts never go down until the device of a role changes.
 * @param a the array.
 * @param member -1: the array's own I/O, as its callers asked it (synchronous calls and
 *   queues; a request that was refused before it started is not counted); 0 ..
 *   nmembers - 1: the device in that role (its share of the callers' I/O and the jobs':
 *   rebuild, scrub, resync; the write-hole journal's records the I/O path writes; not
 *   superblocks, the write-intent bitmap, the live-data map nor the bad-block log: see
 *   docs/STATS.md); nmembers + k: the k-th hot spare.
 *   A role that gets another device counts from zero again.
 * @param out filled up to its struct_size when 0 is returned.
 * @return 0; -EINVAL NULL arguments, struct_size smaller than up to @c io, or @p member
 *   out of range.
 */
GRAID_API int graid_array_stats(struct graid_array *a, int member, struct graid_io_stats *out);

/** graid_stats_options::flags: keep log2 latency histograms (struct graid_io_counts). */
#define GRAID_STATS_HISTOGRAMS 0x1u
/** The slow limit of ::GRAID_EVENT_MEMBER_SLOW when graid_stats_options::slow_ms is 0. */
#define GRAID_STATS_SLOW_MS_DEFAULT 5000u

/** @brief How an array counts its I/O (graid_array_set_stats_options()). */
struct graid_stats_options {
	size_t struct_size;      /**< set by the caller */
	unsigned flags;          /**< ::GRAID_STATS_HISTOGRAMS, or 0 (the default: off) */
	unsigned slow_ms;        /**< a member I/O that takes longer sends
				      ::GRAID_EVENT_MEMBER_SLOW (one a member a minute at most);
				      0: ::GRAID_STATS_SLOW_MS_DEFAULT */
};

/**
 * @brief Turn latency histograms on or off and set the slow limit; takes effect for I/O that
 *   completes afterwards. Counts already made stay.
 * @param a the array.
 * @param opts the options.
 * @return 0; -EINVAL NULL arguments, struct_size smaller than the struct, or a flag this
 *   library does not know.
 */
GRAID_API int graid_array_set_stats_options(struct graid_array *a,
					    const struct graid_stats_options *opts);

/** @} */

/**
 * @brief Look at a device or file, without opening any array: does it carry a libgraid
 *   superblock, and of which array and role? Reads 4 KiB at its start, read-only and
 *   unlocked (it works while an array has the device open); NVMe generic char devices
 *   (/dev/ngXnY) are read through NVMe passthrough.
 * @param path a regular file, block device or NVMe generic char device.
 * @param out filled (struct_size set by the caller) when 0 is returned; untouched otherwise.
 * @return 0, also when there is no superblock (has_superblock 0);
 *   -EINVAL NULL argument, struct_size too small, a path that is no file or device (or a
 *           "faulty:" test path); -ENOENT/-EACCES/-EPERM opening @p path; -EOPNOTSUPP a
 *           char device that is not an NVMe namespace, or libgraid built without libnvme;
 *           -EBADMSG a libgraid superblock with a wrong checksum; -EPROTO one of an unknown
 *           version; -EIO or another negative errno reading it; -ENOMEM.
 */
GRAID_API int graid_member_probe(const char *path, struct graid_member_probe *out);

/**
 * @brief Find the device node of an NVMe namespace named by its identity, not its path.
 *   Device names follow the order in which controllers connected (a reconnect over a fabric
 *   can turn /dev/nvme3n1 into /dev/nvme5n1); the identity does not change. Every member
 *   path given to graid_array_create(), graid_array_open(), graid_array_replace_member() and
 *   graid_array_add_spare() may be such a spec; it is resolved through this call.
 * @param spec one of "nqn=SUBSYSTEM-NQN,nsid=N", "nguid=32 hex digits",
 *   "eui64=16 hex digits" or "uuid=xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (hex digits of
 *   either case; NGUID and EUI-64 may contain '-' or ':' between digits).
 * @param path receives the namespace's block device ("/dev/nvme0n1"; with native NVMe
 *   multipath the namespace head that every path serves).
 * @param size bytes at @p path.
 * @return 0; -EINVAL NULL argument or a malformed spec (the log names the part);
 *   -ENOENT no namespace on this host has that identity; -ENOTUNIQ more than one does;
 *   -ENAMETOOLONG @p size too small; another negative errno reading /sys/block.
 */
GRAID_API int graid_member_resolve(const char *spec, char *path, size_t size);

/**
 * @brief Tell whether a member path is an identity spec that graid_member_resolve() takes.
 * @param path a member path.
 * @return 1 when @p path starts with "nqn=", "nguid=", "eui64=" or "uuid="; 0 otherwise
 *   (also for NULL).
 */
GRAID_API int graid_member_is_spec(const char *path);

/**
 * @brief Mark a member failed, as if it had returned an I/O error. It is no longer read or
 *   written; the superblocks of the other members record it. A member being rebuilt can be
 *   failed too: graid_array_rebuild() then stops with -EIO, unless the role is replaced
 *   again before it notices (then the new device is rebuilt from the start).
 * @param a the array.
 * @param idx role, 0 .. nmembers-1.
 * @return 0 (also if it was failed already); -EINVAL @p idx out of range; -EBUSY failing
 *   it would leave the array without its data (more failures than the level tolerates);
 *   -EROFS the array was opened read-only; -ESTALE another host took the array over
 *   (::GRAID_EVENT_ARRAY_FOREIGN).
 */
GRAID_API int graid_array_fail_member(struct graid_array *a, unsigned idx);

/** @} */

/* ------------------------------------------------------------------------------------ */
/** @name Healing: replace, rebuild, spares, scrub
 * @{
 */

/**
 * @brief Called as a rebuild proceeds.
 * @param arg the value given with the callback.
 * @param done bytes rebuilt so far (never goes backwards).
 * @param total bytes to rebuild; done == total at the last call. It grows when the work
 *   grows: a member replaced again during its rebuild is rebuilt from the start, and that
 *   work is added to @p total (the bytes done for the old device stay counted in both).
 */
typedef void (*graid_progress_fn)(void *arg, uint64_t done, uint64_t total);

/**
 * @brief Put a new device in the role of a failed or missing member. The role becomes
 *   REBUILDING: it takes writes at once, serves reads once graid_array_rebuild() has
 *   brought it into sync.
 * @param a the array.
 * @param idx the role, 0 .. nmembers-1; it must be failed, missing or unreachable.
 * @param path the new member: a file or block device at least as large as the others
 *   (data offset + data bytes). A device carrying another array's superblock is refused,
 *   and so is a member of this array in another role: one the array has open, or one it
 *   would take back into its role if it were given (its superblock names that role, the
 *   role is missing or unreachable and still recorded as this device's, and it has not
 *   diverged); the log names the role. The role's own device, failed or missing, is
 *   accepted and rebuilt whole, unless this handle still has it open since it went out
 *   (its late I/O may still land: open the array again first). The device the role had
 *   is let go at once (its lock and the device itself: it can be wiped, pulled, or added
 *   back as a spare while the array stays open), except where I/O given up on after the
 *   I/O timeout may still land on it, and on an array that holds persistent reservations
 *   (they are given back at close): then it is held until the array closes.
 * @return 0; -EINVAL bad arguments, device too small, or another array's member; -EEXIST
 *   the device is a member of this array (the log names its role); -EBUSY the role is
 *   active or rebuilding; -EOPNOTSUPP RAID-0 (no redundancy to
 *   rebuild from); -ENOENT/-EACCES opening @p path; -EIO writing its superblock; -ESTALE
 *   another host took the array over. An array that holds persistent reservations
 *   (::GRAID_OPEN_RESERVE, a lease, a takeover) reserves the device before writing it:
 *   -EBUSY another host holds its reservation; with ::GRAID_OPEN_RESERVE, -EOPNOTSUPP it
 *   has none (or another -errno its reservation commands returned).
 */
GRAID_API int graid_array_replace_member(struct graid_array *a, unsigned idx,
					 const char *path);

/** @brief graid_array_replace_start(): return when the replace has ended, with its result. */
#define GRAID_REPLACE_WAIT 0x1u

/**
 * @brief Replace an active member without losing redundancy (md's --replace): copy its role
 *   onto a new device or a hot spare while it stays in service, then retire it.
 *
 * The role stays ::GRAID_MEMBER_ACTIVE on its member throughout: reads come from it (a
 * block it cannot read, or records bad, from the redundancy, as always), and every write
 * of the role goes to the new device too. A copy of the role's rows, each batch under its
 * stripe locks, at the rebuild rate (graid_array_set_rebuild_options()), zeroing rows the
 * live-data map records unused, brings the new device into sync; then the new device takes
 * the role in one superblock round (its own superblock first) and the old one is held,
 * unused, until the array closes (reads planned on it may still be in the kernel's hands).
 * graid_array_member_info() shows the copy (replacing, replace_path, replace_done,
 * replace_total). Events, member = the role: ::GRAID_EVENT_SPARE_ACTIVATED (a hot spare
 * was taken), ::GRAID_EVENT_REBUILD_STARTED, ::GRAID_EVENT_REBUILD_PROGRESS every 10 %,
 * then ::GRAID_EVENT_REBUILD_DONE (swapped) or ::GRAID_EVENT_REBUILD_STOPPED (error: why).
 *
 * graid_array_flush() makes the writes the new device took durable on it too, and the swap
 * flushes it before its superblock names it the role's device, after its bad-block log and
 * the maps are on it.
 *
 * Faults: the new device failing a write or a flush, at any time up to the swap, ends the
 * copy with no swap (-EIO, REBUILD_STOPPED): the member keeps its role. The member failing
 * during the copy: the new device takes the role, REBUILDING, and the background rebuild
 * brings it into sync (no spare is taken). A crash or close before the swap forgets the
 * copy: the member keeps its role; a hot spare that was taken stays recorded as a hot spare
 * on disk until the swap, and is one again after a crash or whenever the copy ends without
 * a swap, unless the spare itself failed (docs/REPLACE.md). 4 KiB blocks that neither the
 * member nor the redundancy can give are zeroes on the new device and recorded lost in its
 * bad-block log, unless a write of the role covered them since (more than 64 of them, or
 * an array that keeps no bad-block log: no swap). One replace at a time per array.
 * @param a the array, opened writable.
 * @param idx the role, 0 .. nmembers-1; it must be active.
 * @param path the new device, checked as graid_array_replace_member() checks it; NULL:
 *   the array's last hot spare whose drive the health watch does not judge critical.
 * @param flags 0 (the copy runs on a thread of its own; this returns once it started) or
 *   ::GRAID_REPLACE_WAIT (it runs in the caller, which gets its result).
 * @return 0 started (with ::GRAID_REPLACE_WAIT: the new device has the role, or the member
 *   failed during the copy and the new device is being rebuilt into the role); -EINVAL
 *   NULL @p a, @p idx out of range, unknown @p flags, or @p path too small or another
 *   array's member; -EOPNOTSUPP RAID-0; -EBUSY the role is not active (a failed, missing
 *   or unreachable one takes graid_array_replace_member()); -EALREADY a replace of this
 *   array is under way; -ENOENT @p path NULL and no hot spare, or none but in critical
 *   health (or opening @p path);
 *   -EEXIST @p path is a member of this array; -EACCES opening @p path; -ENOMEM;
 *   -EROFS a read-only open; -ESTALE another host took the array over; -ECANCELED a
 *   graid_array_close() of the handle has begun on another thread (nothing started);
 *   another -errno from starting its thread. With ::GRAID_REPLACE_WAIT (graid_array_close() from another
 *   thread meanwhile stops the copy and waits for this call to return) also: -EIO the new
 *   device failed
 *   a write or a flush (or did not take its superblock or its bad-block log); -ECANCELED
 *   the array was closing; -ENODEV the member became unreachable during the copy (it keeps
 *   its role); -ENOSPC more than 64 blocks could be read from no device, or too many
 *   ranges of them for a bad-block log (the member keeps its role); -EOPNOTSUPP blocks
 *   could be read from no device and the array keeps no bad-block log to record them in
 *   (the member keeps its role).
 */
GRAID_API int graid_array_replace_start(struct graid_array *a, unsigned idx, const char *path,
				       unsigned flags);

/** graid_array_grow(): return only once the reshape has finished (or stopped). */
#define GRAID_GROW_WAIT 0x1u
/**
 * graid_array_grow(): turn a RAID-5 of n members into a RAID-6 of n + 1 by adding the one
 * device given, which holds Q in every stripe (the "Q-last" layout, md's left-symmetric-6);
 * no data moves (docs/RESHAPE.md, "RAID-5 to RAID-6, Q-last, as built").
 */
#define GRAID_GROW_RAID6 0x2u

/**
 * @brief Grow an array online by adding member devices (a reshape): RAID-0, RAID-5,
 *   RAID-6 and RAID-10 in this version.
 *
 * The devices become roles nmembers .. nmembers + n - 1, and the array's data is moved, a
 * window of chunks at a time, from the old placement (over the old members) to the new one
 * (over all of them) while other threads go on reading and writing it: a request below the
 * position reached is served from the new placement, one at or past it from the old, one
 * into the window being moved waits for it. graid_array_info() reports the old size until
 * every byte has moved, then the new one (nmembers is the new count from the start). A
 * crash or a graid_array_close() at any point is safe: the position is recorded durably on
 * every member after each window (docs/RESHAPE.md, docs/FORMAT.md "The reshape record"),
 * and the next graid_array_open() (of all the members, new ones included) resumes the move.
 * Until it has finished, libgraid builds older than this one refuse the array (superblock
 * major 3). The rebuild's rate limits (graid_array_set_rebuild_options()) pace the move,
 * per member written; while reads or writes run and no @c busy_bytes_per_sec is set, the
 * move leaves the members to them three quarters of the time (it sleeps three times each
 * window's own time), so a grow of a busy array takes about four times its idle time and
 * its readers keep most of their speed; a @c busy_bytes_per_sec set replaces that share
 * (UINT64_MAX: full speed under load). Events: ::GRAID_EVENT_RESHAPE_STARTED, ::GRAID_EVENT_RESHAPE_PROGRESS
 * at every step of graid_event_options, then ::GRAID_EVENT_RESHAPE_DONE, or
 * ::GRAID_EVENT_RESHAPE_PAUSED (why) when it stops before its end; graid_array_info()'s
 * @c reshaping, @c reshape_done, @c reshape_total, @c reshape_bytes_per_sec and
 * @c reshape_eta_sec follow it.
 *
 * RAID-5 and RAID-6 keep their rotating layout over more members: whole new stripes are
 * written with their parity; the first few (those whose new stripes overwrite their own
 * sources) are first copied to the first added device's space past the new layout's and
 * moved from there ("staging", no backup file). A member that fails during the move is
 * written around (the move goes on degraded, the rows marked for its catch-up); spares,
 * rebuilds and scrubs wait for the end. With checksums (::GRAID_CREATE_CHECKSUMS) every
 * block the move reads is verified against its tag (one that fails, or that its parity's
 * write-generation record shows stale, is rebuilt from its old stripe's parity, never moved
 * as read) and every block it writes gets its tag, generation and record, on the members
 * before the position moves past it (docs/INTEGRITY.md, "Growing"). With a write-hole
 * journal (::GRAID_CREATE_JOURNAL) requests during the move log their updates as ever, the
 * added devices' logs from the start; a replay after a crash leaves the entries of rows the
 * move has passed, whose bytes it carried (docs/JOURNAL.md, "Across a grow"); its end waits
 * for the updates logged so far and voids their entries, so that a libgraid version before
 * this one finds none to replay over the moved rows (a queue's writes end as it is reaped:
 * a thread that waits here with ::GRAID_GROW_WAIT leaves its own queues' writes, and so the
 * end, waiting, as the start waits for writes queued before it; reap them from another
 * thread, or grow without the flag).
 *
 * With ::GRAID_GROW_RAID6 a RAID-5 becomes a RAID-6 of one member more, the array's size
 * unchanged: its data and P stay where they are and the added device gets Q, computed row
 * by row under the rows' locks (the position: rows below it are RAID-6, rows at or past it
 * still RAID-5, a write there writing data and P only). The superblocks say RAID-6
 * (layout Q-last, superblock major 3, which libgraid builds older than this one refuse for
 * as long as the array keeps that layout) from the start on; once done the array is a
 * RAID-6 in every respect (two members may fail), with RAID-4-like write load on the Q
 * member. Every member must be active at the start; one failing during it is written
 * around, as for a grow. A write-hole journal is kept (its entries are replayed as ever:
 * rows keep their places).
 *
 * RAID-10 (md near-2, any member count, odd ones too) moves chunk by chunk: each chunk is
 * read from one of its two old copies (the other where the first is out, records bad
 * blocks or cannot be read; a block neither copy has is moved as a loss, still failing
 * -EIO at its new place) and written to both new copies. A member that fails during the
 * move is written around (its chunks marked for its catch-up); spares, rebuilds and
 * scrubs wait for the end. RAID-10 arrays with checksums cannot be grown by this version.
 *
 * Before anything is written, every device is opened (exclusively) and checked: it must
 * hold the members' data area (data offset + data bytes of a member), be no member of this
 * array and carry no other libgraid array's superblock (-EINVAL); one that fails is named in the log
 * and nothing is written to it or to any member. One reshape at a time; a handle has room
 * for 16 roles more than it was opened with.
 * @param a the array, opened writable, every member active.
 * @param devices @p n paths of the new devices (as graid_array_open() takes them).
 * @param n how many, at least 1.
 * @param flags 0 (the move runs on a thread of its own; this returns once the reshape is
 *   recorded on every member) or ::GRAID_GROW_WAIT (this returns when it has ended), or'ed
 *   with ::GRAID_GROW_RAID6 for the RAID-5 to RAID-6 conversion.
 * @return 0 started (with ::GRAID_GROW_WAIT: finished, the array has its new size);
 *   -EINVAL NULL @p a or @p devices, @p n 0 or above ::GRAID_MAX_MEMBERS, unknown
 *   @p flags, a NULL path, ::GRAID_GROW_RAID6 with @p n other than 1 or on a RAID-5 of
 *   two members (a RAID-6 has four at least: grow it to three first), or a device
 *   smaller than the members' data area (named in the log); -EEXIST a device that is a
 *   member of this array, or one given twice; -EOPNOTSUPP RAID-1 (the level is
 *   named in the log), ::GRAID_GROW_RAID6 on an array that is not a RAID-5 (named in the
 *   log), a RAID-6 made from a RAID-5 by ::GRAID_GROW_RAID6 (Q-last: no grow takes it
 *   in this version), a RAID-10 with checksums, ::GRAID_GROW_RAID6 on a RAID-5 with
 *   checksums, a RAID-5/6 with checksums given an
 *   NVMe namespace that would keep its tags in its blocks' metadata (named in the log;
 *   nothing written), or an array whose reserved area has
 *   no room for the reshape record (another writer's array); -ENOSPC a RAID-10 whose
 *   write-intent bitmap or live-data
 *   map would have too few bits (or this handle too few regions: close and open again)
 *   for the grown chunk count even with one region covering the whole array (logged;
 *   short of that the start makes the maps' regions coarser, recorded in the superblocks,
 *   docs/RESHAPE.md "Coarsening the region maps"); -E2BIG more devices than this handle
 *   has room for (close and open the array again); -EBUSY a reshape of this array is under
 *   way (or stopped on a failure: the next open resumes it), a scrub, a replace in service
 *   or the resync after an unclean shutdown is under way (logged: grow once it has ended),
 *   another host holds a device's reservation, or (a RAID-10 whose maps must be made
 *   coarser, logged) a rebuild is under way or requests stayed in flight for 10 s (a queue
 *   not reaped while the array is quiesced; while it is, graid_queue_*() calls on a queue
 *   with requests in it return -EAGAIN); -EIO a member is not active, or a member or a new device failed a write of
 *   the first reshape record (no superblock records the reshape; on RAID-0 a member that
 *   failed the write is kept, as the only holder of its chunks, and the call fails), or of
 *   the superblocks that start it (the reshape may be recorded on some members: I/O goes on
 *   by position, no data moves, and the next open resumes it); -EROFS a read-only open;
 *   -ESTALE another host took the array over; -EACCES, -ENOENT or another -errno opening a
 *   device; -ENOMEM. With ::GRAID_GROW_WAIT
 *   also: -ECANCELED graid_array_close() stopped it (the next open resumes it); -EIO a
 *   member failed during the move of a RAID-0, or more than parity covers of a RAID-5/6,
 *   or both copies of a RAID-10 chunk,
 *   or a read or write of the move failed (the reshape stops at its recorded position;
 *   the next open resumes it, and a RAID-5/6's or RAID-10's is tried again by the array's worker: at
 *   once when a member goes out, else after 5 s doubling to 5 min; docs/RESHAPE.md), or
 *   the superblock round that finishes it failed after every byte had moved (the array keeps its old size until an open finishes it); -ENODEV the
 *   RAID-5/6 device holding the staged copy is out before the staging (the reshape waits
 *   at position 0; the next open with it resumes); -ESTALE another host took the array
 *   over during the move; -EPROTO the geometry leaves the move no safe window (logged).
 */
GRAID_API int graid_array_grow(struct graid_array *a, const char *const *devices, unsigned n,
			       unsigned flags);

/**
 * Change an open array's RAID level where no data moves (docs/RESHAPE.md, "Metadata-only
 * level changes, as built"), in one superblock round with the array quiesced (requests
 * held, those in flight drained); its size and every byte stay. Built:
 * - a RAID-6 with Q on its last member (a RAID-5 converted by graid_array_grow() with
 *   ::GRAID_GROW_RAID6) of n + 1 members becomes the RAID-5 of n (@p level 5) by dropping
 *   its last member, whose data and parity are the RAID-5's already; the dropped device's
 *   superblock is cleared (where it is still in) and the device let go. It may be failed or
 *   missing (the usual reason to drop it);
 * - a RAID-1 of two becomes the RAID-5 of two (@p level 5; P = its one data chunk, so both
 *   members keep their bytes; the chunk is the RAID-1's own, given at create), and a RAID-5
 *   of two the RAID-1 of two (@p level 1). A RAID-5 of two grows to three with
 *   graid_array_grow() once the array is opened again (a RAID-1 handle has no room for
 *   more roles: -E2BIG before).
 *
 * @param a      a writable open array
 * @param level  the level wanted
 * @param flags  0
 * @return 0 done (the superblocks record the new level);
 *   -EINVAL NULL @p a, @p flags not 0, or @p level not a RAID level (0, 1, 5, 6, 10);
 *   -EOPNOTSUPP any other change: a RAID-6 with rotating parity, a RAID-1 of other than two
 *   members, a RAID-5 of more than two to RAID-1, any other pair of levels, an array with
 *   checksums or a write-hole journal (each named in the log; nothing written);
 *   -EBUSY a reshape, a scrub, a rebuild (or one due onto a spare that took the Q role), a
 *   replace in service or the resync after an unclean shutdown is under way, another
 *   quiesce holds the array, or requests stayed in flight for 10 s (a queue not reaped while
 *   the array is quiesced: graid_queue_*() calls on a queue with requests in it return
 *   -EAGAIN meanwhile; nothing written);
 *   -EIO a member that stays is not active (the array would be degraded: rebuild it first;
 *   nothing written), the array is broken, or the superblock round failed (logged: if no
 *   member took it the handle stays as it was, and so do the members on disk; a hot spare
 *   that alone took it may make an open given that spare before the handle's next round
 *   open the new level, with the same data; if some member took it, the handle has the new
 *   level from then on, as has the next open, and a dropped Q member's superblock is
 *   cleared all the same); -ECANCELED the array is closing; -EROFS a
 *   read-only open; -ESTALE another host took the array over (the handle keeps the old
 *   level unless a member took the round first); -ENOMEM or a parity engine's error
 *   opening the engine a RAID-1 to RAID-5 needs (the one the array was opened or created
 *   with, else the default; logged; nothing written).
 */
GRAID_API int graid_array_convert(struct graid_array *a, int level, unsigned flags);

/**
 * @brief Bring every rebuilding member into sync, and return when they all are.
 *
 * Online: other threads keep reading and writing the array meanwhile, correctly. Batched
 * through the parity engine, many stripes per call. A checkpoint is written to the
 * superblocks as it goes, so a rebuild stopped by a crash resumes where it was at the next
 * call after reopening. Only one rebuild runs at a time; a second caller waits for it.
 * Rows of regions the live-data map records unused (never written, or wholly discarded:
 * graid_array_info() @c used_bytes) are not copied: the new member gets them deallocated
 * (zeroes written where it cannot deallocate).
 *
 * @param a the array.
 * @param fn NULL, or called as work proceeds (from the calling thread), while the rebuild
 *   holds the stripe locks of the rows it has in flight: it must not write to the array
 *   (nor read it while degraded), or it may wait for itself; hand such work to another
 *   thread.
 * @param arg passed to @p fn.
 * @return 0 (also when nothing needed rebuilding); -EIO the data cannot be rebuilt (too
 *   many members failed) or the new member failed; -ENOMEM; -ECANCELED the array is being
 *   closed; -ESTALE another host took the array over (::GRAID_EVENT_ARRAY_FOREIGN).
 */
GRAID_API int graid_array_rebuild(struct graid_array *a, graid_progress_fn fn, void *arg);

/**
 * @brief Start bringing every rebuilding member into sync in the background, in the
 *   library's own thread (the one that rebuilds hot spares), and return at once: what a
 *   server calls after assembling an array that has a rebuild pending (a replacement whose
 *   rebuild was stopped, a spare that took a role at open). The rate limits of
 *   graid_array_set_rebuild_options() apply. graid_array_rebuild() waits for it;
 *   graid_array_close() stops it at its next batch, and its checkpoint resumes it later.
 *   Errors of the rebuild itself are logged and show in the member states.
 * @param a the array.
 * @return 0 (also when nothing needs rebuilding); -EINVAL @p a is NULL; -EROFS the array
 *   was opened read-only; -EAGAIN/-ENOMEM the background thread could not be started;
 *   -ESTALE another host took the array over.
 */
GRAID_API int graid_array_rebuild_start(struct graid_array *a);

/**
 * @brief How a rebuild shares the members with foreground I/O.
 *
 * Like md's speed_limit_max and speed_limit_min: a rebuild runs at up to
 * @c max_bytes_per_sec, and at up to @c busy_bytes_per_sec while foreground reads or writes
 * are in flight on the array, so it goes at full speed when the array is idle and gives
 * way when it is not (docs/BENCH-REBUILD.md has what each setting kept for readers).
 */
struct graid_rebuild_options {
	size_t struct_size;          /**< sizeof(struct graid_rebuild_options) as compiled */
	uint64_t max_bytes_per_sec;  /**< rebuild rate limit per rebuilt member; 0: unlimited */
	/** microseconds the rebuild pauses between batches while foreground I/O is in flight */
	uint32_t foreground_yield_us;
	/**
	 * rate limit per rebuilt member while foreground I/O is in flight (the lower of it and
	 * @c max_bytes_per_sec applies then); 0: no separate limit (a grow then leaves the
	 * members to foreground I/O three quarters of the time: graid_array_grow()). Added in
	 * 0.1: callers compiled without it pass the shorter struct and keep 0.
	 */
	uint64_t busy_bytes_per_sec;
};

/**
 * @brief Set the rebuild's rate limits and its yield to foreground I/O; takes effect at the
 *   next batch, also for a rebuild in progress.
 * @param a the array.
 * @param opts the options.
 * @return 0; -EINVAL NULL arguments or struct_size smaller than the struct without
 *   @c busy_bytes_per_sec.
 */
GRAID_API int graid_array_set_rebuild_options(struct graid_array *a,
					      const struct graid_rebuild_options *opts);

/** The longest I/O timeout graid_array_set_io_timeout() takes: one hour. */
#define GRAID_IO_TIMEOUT_MAX_MS 3600000u

/**
 * @brief Bound how long one member may hold up a read or write: a member I/O of a queue (or
 *   of a synchronous call) that has not ended @p ms milliseconds after it was issued is
 *   given up on, as md's failfast does, when the other members can carry the array without
 *   that member.
 *
 * The member is then taken out as for an I/O error -ETIMEDOUT (an NVMe-oF member whose
 * controllers reconnect becomes ::GRAID_MEMBER_UNREACHABLE, any other fails and a hot spare
 * takes its role), and the stripe is served from the others: the caller's request ends
 * within about @p ms plus the time the others take. Where no redundancy is left for the
 * member the I/O is waited for, and the kernel's own timeouts bound it. The I/O given up on
 * is still the kernel's: the memory it reads into stays the library's until it ends (so,
 * while a timeout is set, member reads go to the library's buffers and are copied out, a
 * copy per byte read), an unreachable member is not caught up until its late I/O ended
 * and was reaped (an idle queue of the caller's keeps a late end until its next
 * graid_queue_reap(): reap idle queues now and then, say once a second, while a timeout is
 * set; the synchronous calls' queues are reaped by the library), and
 * graid_queue_destroy() and graid_array_close() wait for them. Expiry is noticed inside
 * graid_queue_reap() and the synchronous calls; a caller that only polls notices it at its
 * next call. A fabric member that times out with its controller live three times fails
 * instead of becoming unreachable again. Background work (rebuild, resync, scrub, flushes
 * and metadata writes, also the superblock writes that record the member out) is not
 * bounded by it. Takes effect for I/O issued after the call.
 * docs/ARRAYS.md ("A per-I/O timeout") has the rules.
 * @param a the array.
 * @param ms the bound in milliseconds, 1 .. ::GRAID_IO_TIMEOUT_MAX_MS; 0 turns it off (the
 *   default).
 * @return 0; -EINVAL @p a is NULL or @p ms is above ::GRAID_IO_TIMEOUT_MAX_MS.
 */
GRAID_API int graid_array_set_io_timeout(struct graid_array *a, unsigned ms);

/**
 * @brief Register a hot spare. When a member fails, a spare takes over its role and is
 *   rebuilt in the background without being asked (graid_array_rebuild() waits for it).
 * @param a the array.
 * @param path the spare: as for graid_array_replace_member(); a member of this array, in a
 *   role or as a spare, is refused.
 * @return 0; -EINVAL as for graid_array_replace_member(); -EEXIST the device is a member of
 *   this array (the log names its role); -ENOSPC the array has
 *   ::GRAID_MAX_SPARES spares; -EIO its superblock could not be written (it is not added:
 *   the next open could not find it); -EOPNOTSUPP RAID-0; -ESTALE another host took the array over;
 *   the reservation errors of graid_array_replace_member().
 */
GRAID_API int graid_array_add_spare(struct graid_array *a, const char *path);

/**
 * @brief Take a registered hot spare off the array: it no longer takes a failed role.
 *
 * The members' superblocks are written without it, and its own superblock is cleared
 * (zeroed), so that no later open takes it for this array's spare: given among the members,
 * it is left out as a device without a superblock, free to be used again. Clearing is best
 * effort: if it fails (logged), the members' superblocks no longer list it and an open
 * leaves it out all the same. A spare that already took a role is a member, not a spare:
 * fail or replace it instead.
 * @param a the array.
 * @param path the spare as it was given to graid_array_add_spare() (or at open), or another
 *   path or identity spec (graid_member_is_spec()) naming the same device: matched by the
 *   device's identity, as graid_array_add_spare() refuses a device twice; the path it was
 *   registered under also matches a device gone from it.
 * @return 0; -EINVAL @p a or @p path NULL, or @p path empty; -ENOENT no hot spare of this
 *   array is that device (the log says when it holds a role); -EROFS the array was opened
 *   read-only; -ESTALE another host took the array over (nothing changed, or, when it was
 *   noticed while the spare was taken off, the spare is off).
 */
GRAID_API int graid_array_remove_spare(struct graid_array *a, const char *path);

/** The most hot spares an array keeps. */
#define GRAID_MAX_SPARES 8

/** graid_array_scrub() flag: rewrite what is found wrong (see graid_array_scrub()). */
#define GRAID_SCRUB_REPAIR 1u

/**
 * graid_array_scrub() flag: start where an unfinished scrub of this array stopped (its
 * checkpoint, recorded in the superblocks about once a second), not at row 0.
 */
#define GRAID_SCRUB_RESUME 2u

/** How many mismatches a scrub report names individually. */
#define GRAID_SCRUB_NAMED 16

/** @brief What a scrub found. */
struct graid_scrub_report {
	size_t struct_size;          /**< set by the caller */
	uint64_t stripes_checked;    /**< stripes whose parity (or copies) were compared */
	uint64_t mismatches;         /**< stripes found inconsistent */
	uint64_t repaired;           /**< of those, rewritten (with GRAID_SCRUB_REPAIR) */
	/**
	 * stripes not checkable (a role missing or rebuilding), or left to the resync after an
	 * unclean open that has not reached them yet
	 */
	uint64_t skipped;
	unsigned named;              /**< entries filled below, <= GRAID_SCRUB_NAMED */
	/** the first mismatching stripes (member rows) */
	uint64_t stripe[GRAID_SCRUB_NAMED];
	/** the member found wrong in each, or -1 when no single member can be named */
	int32_t member[GRAID_SCRUB_NAMED];
	/** input: NULL, or called as the scrub proceeds (bytes of member rows checked) */
	graid_progress_fn progress;
	void *progress_arg;          /**< input: passed to progress */
	/**
	 * the member row this scrub began at: 0, or the checkpoint it resumed from with
	 * ::GRAID_SCRUB_RESUME (rows below it were checked by the scrub that stopped). Added
	 * in 0.2: callers compiled without it pass the shorter struct.
	 */
	uint64_t first_row;
	/**
	 * Appended: member rows not read because the live-data map records them
	 * unused (never written, or wholly discarded: zeroes on every member, consistent).
	 */
	uint64_t unused;
	/**
	 * Appended: 4 KiB blocks a member could not read, had recorded bad, or returned with
	 * bytes that failed their checksum tag, that the scrub rebuilt from the rest of their
	 * stripe and wrote back (the member stays; with
	 * ::GRAID_SCRUB_REPAIR or without: a scrub is what finds latent sectors).
	 */
	uint64_t rewritten;
	/**
	 * 4 KiB blocks no redundancy was left to rebuild: recorded in their member's bad-block
	 * log (graid_array_bad_blocks()); the stripes holding them are counted in @c skipped.
	 */
	uint64_t unrecoverable;
};

/**
 * @brief Check every stripe's parity (RAID-5/6) or copies (RAID-1/10).
 *
 * Rows of regions the live-data map records unused hold zeroes on every member and are not
 * read (counted in @c unused of the report). Rows the write-intent bitmap marks that the
 * resync after an unclean open (::GRAID_OPEN_RESYNC_BACKGROUND) has not reached yet are not
 * read either: a write torn by the crash may lie there, which is the resync's to settle, not
 * corruption (counted in @c skipped).
 *
 * RAID-6 names the one member whose block is wrong from the P and Q syndromes and, with
 * ::GRAID_SCRUB_REPAIR, rewrites that block — data or parity — so silent corruption on one
 * member is healed, not spread. On an array with checksums (::GRAID_CREATE_CHECKSUMS) every
 * block read is verified against its tag first and healed as a read is; the vote is then
 * followed only for a block without a tag: where it names a block whose tag holds, that block
 * is kept and P and Q are made from the data, and the mismatch is reported with no member
 * named (docs/INTEGRITY.md). RAID-5 cannot tell which block is wrong: repair rewrites
 * parity, as md does. RAID-1/10 repair copies the first copy over the others, as md does.
 * Every mismatch is also logged with its stripe and member. Runs online, stripe by stripe
 * under the stripe locks.
 *
 * A block a member cannot read (a latent bad sector), or one its bad-block log records, is
 * rebuilt from the rest of its stripe and written back, and the member stays (counted in
 * @c rewritten; not on a read-only array); one no redundancy covers is recorded in the log
 * (@c unrecoverable). A member is failed only when the rewrite fails or its read errors
 * pass the threshold (docs/ARRAYS.md, "Bad blocks").
 *
 * A scrub records how far it got in the superblocks about once a second (not on a
 * read-only array), so one stopped by a crash or a close resumes with ::GRAID_SCRUB_RESUME;
 * a scrub that completes clears the record. graid_array_scrub_stop() (from another thread,
 * or from @c progress) ends it at its next batch, its checkpoint recorded first.
 *
 * @param a the array.
 * @param flags 0, or ::GRAID_SCRUB_REPAIR and/or ::GRAID_SCRUB_RESUME.
 * @param rep filled up to its struct_size (at least up to @c progress_arg).
 * Stripes that use a member being rebuilt are compared once the rebuild has passed them;
 * until then they count as skipped.
 *
 * @return 0; -EINVAL bad arguments or unknown flags; -EOPNOTSUPP RAID-0; -EAGAIN a RAID-1,
 *   RAID-5 or RAID-6 with a member failed or missing: no stripe has every member to
 *   compare, so nothing could be checked (replace and rebuild first); -EROFS
 *   ::GRAID_SCRUB_REPAIR on an array opened read-only; -EIO a member failed while the
 *   scrub read it (a device gone, read errors past the threshold); -ENOMEM; -ESTALE
 *   another host took the array over; -ECANCELED graid_array_scrub_stop() stopped it: @p rep
 *   holds what it checked until then (and @c first_row), and the row it stopped at is
 *   recorded (not on a read-only array), so ::GRAID_SCRUB_RESUME continues from there. A
 *   member a failed rewrite took out (an event says so) leaves the rows read after it
 *   counted in @c skipped, and the scrub returns 0. -EBUSY a RAID-5/6 or RAID-10 reshape
 *   runs (its rows are in two geometries), or the array is quiesced for a moment (a
 *   RAID-10 grow's start making its region maps coarser, a graid_array_convert()).
 */
GRAID_API int graid_array_scrub(struct graid_array *a, unsigned flags,
				struct graid_scrub_report *rep);

/**
 * @brief Stop the scrubs running on this handle: each graid_array_scrub() under way (in any
 *   thread) records its checkpoint and returns -ECANCELED at its next batch, so that a
 *   later scrub with ::GRAID_SCRUB_RESUME continues where it stopped.
 *
 * Returns at once, without waiting for them to end. Only the scrubs under way are asked: a
 * scrub started after this call runs to its end (a stop asked while none runs is not kept
 * for the next one). A scrub that was at its last batch completes instead (returns 0).
 * @param a the array (a read-only handle too: its scrub stops, with no checkpoint recorded).
 * @return 0, also when no scrub is running; -EINVAL @p a is NULL.
 */
GRAID_API int graid_array_scrub_stop(struct graid_array *a);

/** @} */

/* ------------------------------------------------------------------------------------ */
/** @name Events
 * @{
 */

/** @brief What happened to an array. */
enum graid_event_type {
	GRAID_EVENT_MEMBER_FAILED = 1,   /**< a member was taken out (I/O error or request) */
	GRAID_EVENT_ARRAY_FAILED = 2,    /**< more members lost than the level tolerates */
	GRAID_EVENT_REBUILD_STARTED = 3, /**< a member is being rebuilt (replaced or a spare) */
	GRAID_EVENT_REBUILD_DONE = 4,    /**< a rebuilt member is in sync and serving reads */
	GRAID_EVENT_SCRUB_MISMATCH = 5,  /**< a scrub found a stripe inconsistent */
	GRAID_EVENT_RESYNC_DONE = 6,     /**< a resync of dirty regions ended (every
					      RESYNC_STARTED gets one): error 0, or why it
					      failed (-ENOMEM, -EIO, -ESTALE, ...: the regions
					      not reached stay marked for the next open); count:
					      stripes resynchronised */
	GRAID_EVENT_MEMBER_UNREACHABLE = 7, /**< a fabric member lost every live controller
					       while one reconnects: out of I/O, not failed */
	GRAID_EVENT_MEMBER_RETURNED = 8, /**< an unreachable member's controller is live again:
					    its catch-up from the bitmap starts (REBUILD_DONE
					    when it is in sync) */
	GRAID_EVENT_ARRAY_FOREIGN = 9,   /**< another host took the array over (a higher owner
					      epoch on its members; error -ESTALE), a member
					      refused a write for its reservation (error -EBADE,
					      member: that role), or the handle's lease was
					      lost (error -ENOLCK): this handle writes nothing
					      more, and its I/O returns -ESTALE */
	GRAID_EVENT_BAD_BLOCK = 10,      /**< blocks of a member were recorded in its bad-block
					      log (graid_array_bad_blocks()): no redundancy was
					      left to rebuild or rewrite them; reads of the array
					      bytes they hold fail with -EIO until written. stripe:
					      the member row; count: 4 KiB blocks; error -EIO */
	GRAID_EVENT_BLOCK_REPAIRED = 11, /**< a block a member could not read (or had recorded
					      bad) was recomputed from redundancy and written
					      back; the member stays. stripe: the member row;
					      count: 4 KiB blocks rewritten */
	GRAID_EVENT_HEALTH_CRITICAL = 12, /**< the member's drive predicts its failure: count
					       holds the GRAID_HEALTH_RULE_* bits that began to
					       hold (graid_array_set_health_options()); member
					       is the role, or nmembers + k for the k-th hot
					       spare (as graid_array_member_info() numbers
					       them) */
	GRAID_EVENT_HEALTH_WARNING = 13, /**< the member's drive wears or reports media errors:
					      count holds the rules, as above */
	GRAID_EVENT_DEGRADED = 14,       /**< the array runs with fewer roles in sync than it
					      has: sent when the number of roles out (failed,
					      missing, unreachable, rebuilding) rises, and at open
					      when it opens so; member: the role that went out, or
					      -1 at open; count: roles out now. Not sent once the
					      array failed (ARRAY_FAILED is its state), nor by a
					      read-only handle, which records no role out */
	GRAID_EVENT_OPTIMAL = 15,        /**< every role is in sync again (after DEGRADED) */
	GRAID_EVENT_REBUILD_PROGRESS = 16, /**< a rebuild, catch-up or replace in service
					      passed another step (graid_event_options), 100
					      last even where the step does not divide 100;
					      member: its first role (a replace: its role);
					      count: percent done of the pass (a role taken
					      during a pass is rebuilt in another, which counts
					      from its first step again; a resumed rebuild counts
					      the rows done before the resume) */
	GRAID_EVENT_REBUILD_STOPPED = 17, /**< a rebuild ended before its roles were in sync:
					       error says why (-EIO, -ECANCELED at close, ...);
					       member: its first role */
	GRAID_EVENT_SCRUB_STARTED = 18,  /**< a scrub began (or resumed) */
	GRAID_EVENT_SCRUB_PROGRESS = 19, /**< a scrub passed another step, 100 last; count:
					      percent (of the whole array: a resumed scrub starts
					      past 0) */
	GRAID_EVENT_SCRUB_DONE = 20,     /**< a scrub ended; error: 0, -ECANCELED (stopped),
					      or why it failed; count: stripes found inconsistent */
	GRAID_EVENT_RESYNC_STARTED = 21, /**< a resync of dirty regions after an unclean close
					      began; count: regions to resynchronise */
	GRAID_EVENT_SPARE_ACTIVATED = 22, /**< a hot spare took a failed role and is rebuilt
					       into it; member: the role */
	GRAID_EVENT_SPARES_MISSING = 23, /**< the array has fewer hot spares than it recorded:
					      count: spares missing */
	GRAID_EVENT_JOURNAL_REPLAYED = 24, /**< the write-hole journal was replayed at open;
					       count: updates replayed */
	GRAID_EVENT_MEMBER_SLOW = 25,    /**< a member's I/O took longer than the slow limit;
					      member: the role; count: its latency in
					      milliseconds (at most one a member a minute) */
	GRAID_EVENT_CSUM_ERROR = 26,     /**< a checksummed array's block failed its tag (the
					      member returned wrong data without an error);
					      member: the role; stripe: the 4 KiB block number
					      in the member's data area; count: blocks; error: 0
					      healed (rebuilt from the others and written back),
					      -EIO not healed (the read returned -EIO) */
	GRAID_EVENT_CSUM_TAG_ERROR = 27, /**< a block's data was right and its tag wrong: the
					      tag was rewritten; fields as ::GRAID_EVENT_CSUM_ERROR */
	GRAID_EVENT_CSUM_UNVERIFIED = 28, /**< a block failed its tag inside a region still to
					       be resynchronised after an unclean shutdown: its
					       data was kept (as the resync keeps it) and its tag
					       made from it; not a sign of corruption; fields as
					       ::GRAID_EVENT_CSUM_ERROR */
	GRAID_EVENT_CSUM_LOST_WRITE = 29, /**< a block's own tag held but its write generation
					       was behind what the other members of its write
					       record: a write the member acknowledged and never
					       made (docs/INTEGRITY.md, "Lost writes"); member:
					       the role, or -1 when the stale block could not be
					       located (stripe is then the column's block number
					       on its first data member); stripe: the 4 KiB block
					       number in the role's data area; count: blocks;
					       error: 0 healed, -EIO not healed (the reads of
					       that column fail -EIO until a write covers it) */
	GRAID_EVENT_RESHAPE_STARTED = 30, /**< a reshape (graid_array_grow()) began moving
					       data, or a writable open resumed one; count:
					       members added (the new count less the old);
					       followed by RESHAPE_PROGRESS from the percent
					       already moved (a resume starts past 0) */
	GRAID_EVENT_RESHAPE_PROGRESS = 31, /**< a reshape passed another step (graid_event_options),
					       100 last, only once every byte is in the new
					       geometry (just before RESHAPE_DONE); count:
					       percent of the array's data moved (of the
					       whole array: a resumed reshape
					       counts what was moved before the resume) */
	GRAID_EVENT_RESHAPE_PAUSED = 32, /**< a reshape stopped before its end; the record on
					      the members keeps its position and the next
					      writable open resumes it (RESHAPE_STARTED again).
					      error says why: -ECANCELED the handle is closing,
					      -EIO a member failed (or missed the record),
					      -ESTALE the array was taken over, another -errno
					      of a member's I/O; count: percent moved
					      (99 at most: 100 is a done reshape's) */
	GRAID_EVENT_RESHAPE_DONE = 33,   /**< a reshape ended: every byte is in the new
					      geometry and the array has its new size; count:
					      the new size in bytes; error: 0, or the error of
					      the superblock round that ends it (the next open
					      finishes recording it) */
};

/**
 * @brief One event.
 *
 * The library fills it and passes it to the callback; fields are only ever appended. A
 * program built against an older header reads the fields it knows and is not disturbed by
 * the new ones; one that reads @c seq and @c time_ns checks first that @c struct_size
 * reaches them (a library older than these fields does not fill them):
 * `ev->struct_size >= offsetof(struct graid_event, time_ns) + sizeof(ev->time_ns)`.
 */
struct graid_event {
	size_t struct_size;      /**< sizeof(struct graid_event) as the library was built */
	int type;                /**< enum graid_event_type */
	int member;              /**< the member role concerned, or -1 */
	int error;               /**< the negative errno behind it, or 0 */
	uint64_t stripe;         /**< SCRUB_MISMATCH, BAD_BLOCK, BLOCK_REPAIRED: the stripe (member
				      row); else 0 */
	uint64_t count;          /**< RESYNC_DONE: stripes resynchronised; BAD_BLOCK,
				      BLOCK_REPAIRED: 4 KiB blocks; the other types as
				      enum graid_event_type says; else 0 */
	uint64_t seq;            /**< this array handle's event number: 1, 2, 3, ... with no
				      gap, in the order the callback is called (events are
				      numbered whether or not a callback is set; a new handle
				      of the same array counts from 1 again) */
	uint64_t time_ns;        /**< when it was sent: CLOCK_MONOTONIC, nanoseconds */
};

/**
 * @brief Receives events; called from whichever thread noticed (an I/O thread, a rebuild),
 *   possibly with the array's metadata lock held: it must return quickly and must not call
 *   the array's I/O functions (read, write, discard, flush, its queues), functions that
 *   change it (fail, replace, rebuild, add_spare, remove_spare, scrub_stop, close,
 *   control_stop), nor graid_array_info() and graid_array_member_health(), which take
 *   that lock: hand such work to another thread.
 * @param arg the value given to graid_array_set_event_callback().
 * @param ev the event; valid during the call only.
 */
typedef void (*graid_event_fn)(void *arg, const struct graid_event *ev);

/**
 * @brief Send the array's events to @p fn (NULL: stop).
 *
 * Every event is also kept in a ring of the handle's last 256 events, which the control
 * endpoint's `subscribe` replays (docs/CONTROL.md); the callback sees each event once, as
 * it happens, and none sent before it was set: those (the open's own among them) are read
 * with graid_array_events().
 * @param a the array.
 * @param fn the callback, or NULL.
 * @param arg passed to @p fn.
 * @return 0; -EINVAL @p a NULL.
 */
GRAID_API int graid_array_set_event_callback(struct graid_array *a, graid_event_fn fn,
					     void *arg);

/**
 * @brief Copy the events the handle's ring still holds after number @p since.
 *
 * Every event is kept in the handle's ring of its last 256, also those sent before a
 * callback was set (during graid_array_open(): ::GRAID_EVENT_DEGRADED,
 * ::GRAID_EVENT_JOURNAL_REPLAYED, ::GRAID_EVENT_SPARES_MISSING, a spare's rebuild...): a
 * consumer that starts late, or missed some, reads them here, and reads the state itself
 * from graid_array_info() and graid_array_member_info(). Events numbered after @p since
 * that the ring no longer holds are those between @p since and out[0].seq (missed). Takes
 * only the ring's lock: any thread, also from the event callback.
 * @param a the array.
 * @param since the last event number already seen (0: from the oldest kept).
 * @param out where the events go, oldest first.
 * @param max room in @p out; at most 256 are copied (0: only *@p last is set).
 * @param last NULL, or set to the newest event's number (0: none yet).
 * @return how many were copied (0 when none is newer than @p since); -EINVAL @p a NULL,
 *   or @p out NULL with @p max not 0.
 */
GRAID_API int graid_array_events(struct graid_array *a, uint64_t since,
				 struct graid_event *out, unsigned max, uint64_t *last);

/**
 * @brief The event type's name, as the control endpoint's `subscribe` and `graidctl
 *   monitor` write it ("member-failed", "degraded", "rebuild-progress", ...).
 * @param type an enum graid_event_type.
 * @return a static string; NULL for a type this library does not know.
 */
GRAID_API const char *graid_event_name(int type);

/** The percent between progress events until graid_array_set_event_options() says. */
#define GRAID_EVENT_PROGRESS_DEFAULT 10u

/** @brief What the array's events report (graid_array_set_event_options()). */
struct graid_event_options {
	size_t struct_size;        /**< sizeof(struct graid_event_options) */
	/**
	 * percent of a rebuild, catch-up or scrub between its ::GRAID_EVENT_REBUILD_PROGRESS
	 * or ::GRAID_EVENT_SCRUB_PROGRESS events, 1 to 100 (each step sent once, count the
	 * step's percent: 10, 20, ... 100); 0: no progress events. Default
	 * ::GRAID_EVENT_PROGRESS_DEFAULT.
	 */
	unsigned progress_percent;
};

/**
 * @brief Set what the array's events report; rebuilds and scrubs that begin afterwards
 *   follow it (one running keeps the step it began with).
 * @param a the array (a read-only handle too).
 * @param opts the options.
 * @return 0; -EINVAL @p a or @p opts NULL, @c struct_size too small, or
 *   @c progress_percent over 100.
 */
GRAID_API int graid_array_set_event_options(struct graid_array *a,
					    const struct graid_event_options *opts);

/** @} */

/* ------------------------------------------------------------------------------------ */
/** @name Asynchronous I/O
 * A queue keeps many reads and writes in flight on one array. A queue belongs to one thread
 * at a time (as an io_uring ring does; with ::GRAID_QUEUE_F_ONE_THREAD, to one thread for
 * its whole life); an array may have many queues, one per thread.
 * Requests are prepared with graid_queue_read()/graid_queue_write(), sent with
 * graid_queue_submit(), and finished with graid_queue_reap().
 * @{
 */

/** @brief A queue of asynchronous requests on one array. */
struct graid_queue;

/** @brief One finished request. */
struct graid_completion {
	uint64_t user_data;      /**< what the request was given */
	int64_t result;          /**< bytes transferred, or a negative errno */
};

/**
 * @brief Create a queue; the same as graid_queue_create_flags() with no flags.
 * @param a the array.
 * @param depth the most requests in flight at once, 1 .. 4096.
 * @param out the queue.
 * @return 0; -EINVAL bad arguments; -ENOMEM; another negative errno from io_uring setup.
 */
GRAID_API int graid_queue_create(struct graid_array *a, unsigned depth,
				 struct graid_queue **out);

/**
 * The caller's promise that one thread makes every call on the queue, from its creation to
 * graid_queue_destroy(). The library then sets up the queue's io_uring with
 * IORING_SETUP_SINGLE_ISSUER and IORING_SETUP_DEFER_TASKRUN where the kernel has them
 * (Linux 6.1+): the kernel's completion work for the member I/O (and for the caller's own
 * operations, graid_queue_sqe()) waits until that thread reaps, and runs there in one batch,
 * instead of interrupting the thread each time something ends. A kernel without them makes
 * the queue as without the flag (graid_queue_flags() tells which). On such a queue every
 * call from another thread (or from a fork()'s child) is refused with -EEXIST before it
 * changes anything (the kernel would refuse the ring's system calls from there half-way
 * through), but for graid_queue_destroy() of an idle queue. That holds for a thread made
 * after the creator exits too, even one with the creator's pthread_t: once the creator has
 * exited, such a queue can only be destroyed (idle).
 */
#define GRAID_QUEUE_F_ONE_THREAD (1u << 0)
/** Every flag graid_queue_create_flags() knows. */
#define GRAID_QUEUE_F_ALL GRAID_QUEUE_F_ONE_THREAD

/**
 * @brief Create a queue with GRAID_QUEUE_F_* flags.
 * @param a the array.
 * @param depth the most requests in flight at once, 1 .. 4096.
 * @param flags ::GRAID_QUEUE_F_ONE_THREAD or 0.
 * @param out the queue.
 * @return 0; -EINVAL bad arguments, or a bit of @p flags that is not a GRAID_QUEUE_F_*;
 *   -ENOMEM; another negative errno from io_uring setup.
 */
GRAID_API int graid_queue_create_flags(struct graid_array *a, unsigned depth, uint32_t flags,
				       struct graid_queue **out);

/**
 * @brief The GRAID_QUEUE_F_* flags a queue runs with: those asked for that this kernel
 *   honours (::GRAID_QUEUE_F_ONE_THREAD only where the ring defers its completion work).
 * @param q the queue.
 * @return the flags; 0 for @p q NULL.
 */
GRAID_API uint32_t graid_queue_flags(const struct graid_queue *q);

/**
 * @brief Wait for every request in flight, then free the queue. A ring the kernel answers
 *   "not now" (-EAGAIN, -EBUSY) is tried again until the requests finish.
 * @param q the queue (NULL is ignored).
 * @return 0; a negative errno when the queue's io_uring failed for good with requests in
 *   it: they cannot finish; the ring is closed (the kernel ends or cancels what it holds,
 *   the operations sent with graid_queue_sqe() among them, after this returns) and the
 *   queue's memory is left to the kernel, not freed; @p q must not be used again. Keep
 *   the buffers of those requests allocated (the kernel may still read or write them),
 *   and expect I/O to the stripes they hold (and to others sharing their locks) to wait
 *   for good: close the array once nothing else waits on it, and open it again;
 *   -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue with requests, operations or late I/O in
 *   flight, called from a thread other than its owner (only the owner can wait for them;
 *   nothing is freed). An idle queue may be destroyed from any thread.
 */
GRAID_API int graid_queue_destroy(struct graid_queue *q);

/** Slots one graid_queue_register_buffers() call takes at most (io_uring's limit). */
#define GRAID_QUEUE_MAX_BUFFERS 16384u
/** The longest range graid_queue_register_buffers() takes (io_uring's limit): 1 GiB. */
#define GRAID_QUEUE_MAX_BUFFER_BYTES (1ull << 30)

/**
 * @brief Register long-lived memory with a queue: its member I/O into and out of that
 *   memory then skips pinning the pages on every I/O (io_uring's fixed buffers).
 *
 * A read or write whose buffer lies wholly inside one range uses them for the member I/O
 * that moves its data straight from or to that buffer: reads, and writes of part of a
 * stripe or of a mirror. Whole-stripe RAID-5/6 writes (sent as vectored writes), reads
 * under an I/O timeout (which go through the library's buffers) and the library's own
 * buffers (parity) work as before. On NVMe passthrough members the commands name the
 * buffer from Linux 6.1 (earlier kernels refuse the flag: there those members' I/O works
 * as before). The pages are pinned from this call until graid_queue_unregister_buffers()
 * or graid_queue_destroy(), and count against RLIMIT_MEMLOCK where the kernel charges it;
 * the memory must stay mapped as it is until then (no munmap(), mremap() or
 * MADV_DONTNEED: the I/O would go to the pages pinned here). One set of ranges per queue
 * at a time.
 *
 * Entry i is the ring's buffer slot i. An entry { NULL, 0 } leaves its slot empty, for a
 * kernel driver to put its own pages in through an operation sent with graid_queue_sqe()
 * (a ublk server's UBLK_F_AUTO_BUF_REG or UBLK_U_IO_REGISTER_IO_BUF), and
 * graid_queue_read_fixed() reads into what the driver put there.
 * @param q the queue; no request may be in flight.
 * @param iov the slots: each a range of 1 byte .. ::GRAID_QUEUE_MAX_BUFFER_BYTES at a
 *   non-NULL address, none overlapping another, or { NULL, 0 } (empty).
 * @param n how many, 1 .. ::GRAID_QUEUE_MAX_BUFFERS.
 * @return 0; -EINVAL a NULL argument, @p n 0 or too large, a range NULL with a length,
 *   empty with an address, too long or overlapping another; -EBUSY requests in flight, or ranges registered already;
 *   -ENOMEM the pages cannot be pinned (RLIMIT_MEMLOCK) or no memory; -EFAULT a range is
 *   not mapped memory, or not writable; another negative errno from io_uring_register_buffers() (a kernel
 *   without fixed buffers: -EINVAL or -EOPNOTSUPP); -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue called from another thread. On error nothing is registered.
 */
GRAID_API int graid_queue_register_buffers(struct graid_queue *q, const struct iovec *iov,
					   unsigned n);

/**
 * @brief Undo graid_queue_register_buffers().
 * @param q the queue; no request may be in flight.
 * @return 0; -EINVAL @p q NULL or nothing registered; -EBUSY requests in flight, operations
 *   of graid_queue_sqe() in flight (a kernel that quiesces the ring to unregister would
 *   wait for them), or member I/O given up on after the I/O timeout
 *   (graid_array_set_io_timeout()) that has not ended yet (reap, and try again); another negative errno from io_uring_unregister_buffers()
 *   (the ranges stay registered); -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue called from another thread.
 */
GRAID_API int graid_queue_unregister_buffers(struct graid_queue *q);

/**
 * @brief Queue a read. The buffer must stay valid until its completion is reaped.
 * @param q the queue.
 * @param buf destination.
 * @param len bytes, a multiple of the block size.
 * @param offset array offset, a multiple of the block size.
 * @param user_data returned in the completion.
 * @return 0; -EINVAL misaligned or out of range (no completion follows); -EAGAIN the queue
 *   holds depth requests already, or holds some while the array is quiesced for a moment
 *   (a RAID-10 grow's start making its region maps coarser, a graid_array_convert()): reap
 *   some first; a call on
 *   an empty queue then waits until the quiesce ends instead; -ESTALE another host took the array
 *   over (::GRAID_EVENT_ARRAY_FOREIGN; no completion follows); -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue called from another thread (nothing queued).
 */
GRAID_API int graid_queue_read(struct graid_queue *q, void *buf, size_t len, uint64_t offset,
			       uint64_t user_data);

/**
 * @brief Queue a read into slot @p buf_index of the queue's buffer table
 *   (graid_queue_register_buffers()), at @p buf_offset in it.
 *
 * A slot holding the caller's memory: the same as graid_queue_read() into that memory.
 *
 * A slot left empty at registration and filled by a kernel driver with pages this process
 * cannot address (a ublk request's, registered through an operation sent with
 * graid_queue_sqe()): the library reads the members straight into them, and never touches
 * the data itself. So only a read that is plain member reads is served: on RAID-0/5/6
 * every data member of the stripes readable (RAID-1/10: one copy), no I/O timeout
 * (graid_array_set_io_timeout(), whose reads go through the library's memory), no member
 * whose I/O is done in place, NVMe passthrough members only from Linux 6.1, and no
 * checksums (an array created with ::GRAID_CREATE_CHECKSUMS checks every block it reads,
 * which it cannot do in pages it cannot see: every such read is -EXDEV). Anything
 * else (a data member out, a member read that fails or is refused part-way, for whatever
 * reason) ends the request with -EXDEV, and the failed member read is held against no
 * member (it may be the pages' doing: -EINVAL, -EFAULT): the caller reads again with
 * graid_queue_read() into memory of its own, where the library recovers the data from
 * parity, repairs what a member could not read, and fails members as it always does. The
 * pages must stay in the slot until the completion is reaped.
 * @param q the queue.
 * @param buf_index the slot.
 * @param buf_offset where in the slot the read starts.
 * @param len bytes, a multiple of the block size; at most ::GRAID_QUEUE_MAX_BUFFER_BYTES.
 * @param offset array offset, a multiple of the block size.
 * @param user_data returned in the completion.
 * @return 0; -EXDEV a read into a kernel's pages that cannot be served as member reads
 *   straight into them (see above; no completion follows); -EINVAL @p q NULL, no such slot,
 *   the range outside the caller's memory of the slot, or as graid_queue_read(); -EAGAIN;
 *   -ESTALE, -EEXIST (as graid_queue_read()); -ENOMEM. The completion's result: @p len, -EXDEV
 *   (read again into own memory), or a negative errno as graid_queue_read()'s (-EIO: the
 *   array failed).
 */
GRAID_API int graid_queue_read_fixed(struct graid_queue *q, unsigned buf_index,
				     size_t buf_offset, size_t len, uint64_t offset,
				     uint64_t user_data);

struct io_uring_sqe;

/**
 * @brief Send an io_uring operation of the caller's on the queue's ring, beside the array's
 *   member I/O: graid_queue_reap() then waits for it and the requests at once, and returns
 *   its completion among theirs.
 *
 * For a caller that feeds the array from another kernel interface: a ublk server sends its
 * fetch and commit commands this way, and a driver that registers its pages in the ring a
 * command came through puts them where graid_queue_read_fixed() can read into them. The
 * first 64 bytes of @p sqe are copied (a ring of 128-byte entries gets the rest zeroed);
 * the operation goes to the kernel at the next graid_queue_submit() or graid_queue_reap(),
 * in no particular order with the member I/O of requests queued before it. Its buffer
 * index (READ_FIXED, IORING_URING_CMD_FIXED) names the queue's buffer table. Each of its
 * CQEs comes back as one ::graid_completion with @p user_data and the CQE's res as result
 * (nothing else of the CQE: its flags, a big CQE's extra bytes); the caller tells them from
 * its requests' by @p user_data. A multishot operation counts as in flight until its last
 * CQE, but its completions do not say which is the last: send single-shot ones.
 * Operations that act on the ring's other requests or its file table are refused: they
 * would reach the array's member I/O. Operations still in flight at graid_queue_destroy()
 * are cancelled where the kernel can cancel them (polls, commands whose driver allows it),
 * and the completions of any that end while it waits for the requests are dropped; memory
 * they name must stay valid until they end.
 * @param q the queue.
 * @param sqe the operation; its user_data is ignored.
 * @param user_data returned in its completions.
 * @return 0; -EINVAL @p q or @p sqe NULL, flags the queue's ring cannot honour
 *   (IOSQE_FIXED_FILE, IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN,
 *   IOSQE_BUFFER_SELECT, IOSQE_CQE_SKIP_SUCCESS), or an opcode that acts on other
 *   requests or the file table (IORING_OP_ASYNC_CANCEL, POLL_REMOVE, TIMEOUT_REMOVE,
 *   LINK_TIMEOUT, FILES_UPDATE); -EAGAIN twice the queue's depth plus 16
 *   operations are in flight or have completions not reaped yet, or the ring has no room
 *   even after sending what it held (reap, and try again); -ENOMEM; -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue called from another thread.
 */
GRAID_API int graid_queue_sqe(struct graid_queue *q, const struct io_uring_sqe *sqe,
			      uint64_t user_data);

/**
 * @brief Queue a write; as graid_queue_read(). Its completion's result is @p len, or the
 *   negative errno graid_array_write() documents (-EIO, -ESTALE).
 * @param q the queue.
 * @param buf source; must stay unchanged until the completion is reaped.
 * @param len bytes, a multiple of the block size.
 * @param offset array offset, a multiple of the block size.
 * @param user_data returned in the completion.
 * @return 0; -EINVAL; -EAGAIN; -ESTALE; -EEXIST (as graid_queue_read()).
 */
GRAID_API int graid_queue_write(struct graid_queue *q, const void *buf, size_t len,
				uint64_t offset, uint64_t user_data);

/**
 * @brief Queue a discard: graid_array_discard() as a request of this queue. Its completion's
 *   result is @p len, or the negative errno graid_array_discard() documents (-EIO).
 * @param q the queue.
 * @param offset array offset, a multiple of the block size.
 * @param len bytes, a multiple of the block size; offset + len <= size.
 * @param user_data returned in the completion.
 * @return 0; -EINVAL @p q NULL, misaligned or out of range (no completion follows); -EROFS
 *   read-only array; -EAGAIN the queue holds depth requests already; -ENOMEM; -ESTALE,
 *   -EEXIST (as graid_queue_read()).
 */
GRAID_API int graid_queue_discard(struct graid_queue *q, uint64_t offset, uint64_t len,
				  uint64_t user_data);

/**
 * @brief Queue a write of zeroes: graid_array_write_zeroes() as a request of this queue;
 *   otherwise as graid_queue_discard().
 * @param q the queue.
 * @param offset array offset, a multiple of the block size.
 * @param len bytes, a multiple of the block size; offset + len <= size.
 * @param user_data returned in the completion.
 * @return 0; -EINVAL; -EROFS; -EAGAIN; -ENOMEM; -ESTALE; -EEXIST (as
 *   graid_queue_discard()).
 */
GRAID_API int graid_queue_write_zeroes(struct graid_queue *q, uint64_t offset, uint64_t len,
				       uint64_t user_data);

/**
 * @brief Send prepared requests' member I/O to the kernel.
 * @param q the queue.
 * @return the number of requests in flight; -EINVAL @p q NULL; a negative errno from
 *   io_uring when the kernel did not take the I/O (-EAGAIN, -EBUSY, -ENOMEM: not now).
 *   Nothing fails for that: the I/O stays queued, and the next graid_queue_submit() or
 *   graid_queue_reap() sends it. -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD queue called from another thread. Only a kernel that refuses for more than 10 s at a time
 *   fails something: a request whose member I/O could not be queued completes with
 *   -EAGAIN, and a member whose write could not be issued after its stripe's other writes
 *   went out is failed (parity then covers data it never got: docs/ARRAYS.md).
 */
GRAID_API int graid_queue_submit(struct graid_queue *q);

/**
 * @brief Collect finished requests, and the completions of operations sent with
 *   graid_queue_sqe(), waiting until at least @p min_complete are there (or neither a
 *   request nor an operation is left in flight).
 * @param q the queue.
 * @param c room for @p max completions.
 * @param max the most to return.
 * @param min_complete how many to wait for (clamped to what is in flight).
 * @return the number of completions stored; -EINVAL bad arguments; a negative errno from
 *   io_uring when, with nothing completed, the kernel kept refusing the queue's I/O for
 *   10 s, or refused a wait for completions other than with "not now", or the ring is
 *   otherwise unusable (the requests stay queued); -EEXIST a ::GRAID_QUEUE_F_ONE_THREAD
 *   queue called from another thread.
 */
GRAID_API int graid_queue_reap(struct graid_queue *q, struct graid_completion *c,
			       unsigned max, unsigned min_complete);

/** @} */

/** @brief Counters of one open engine. */
struct graid_backend_stats {
	size_t struct_size;      /**< set by the caller */
	uint64_t batches;        /**< gen, recover and check calls that succeeded */
	uint64_t stripes;        /**< stripes in those calls */
	uint64_t bytes;          /**< data and parity bytes in those calls */
	uint64_t failovers;      /**< batches redone on the CPU engine after an engine error */
	/** auto mode: batches small enough that the CPU engine took them instead */
	uint64_t cpu_routed;
	/** auto mode: batches large enough that the CPU and the accelerator shared them */
	uint64_t split;
};

/**
 * @brief Read an engine's counters.
 * @param be the engine.
 * @param stats filled up to its struct_size.
 * @return 0; -EINVAL @p be or @p stats NULL or struct_size too small.
 */
GRAID_API int graid_backend_stats(const struct graid_backend *be,
				  struct graid_backend_stats *stats);

/**
 * @brief Where log messages go.
 * @param arg the value given to graid_log_set().
 * @param level a ::graid_log_level.
 * @param msg one line, without a trailing newline.
 */
typedef void (*graid_log_fn)(void *arg, int level, const char *msg);

/**
 * @brief Send the library's log to @p fn, for messages at @p max_level or more severe.
 *
 * Until this is called, messages at GRAID_LOG_WARNING or more severe go to stderr (the
 * level can be set with the GRAID_LOG_LEVEL environment variable, 3..7). Passing NULL
 * for @p fn silences the log. Process-wide; safe to call at any time.
 *
 * @param fn the sink, called with a lock held: it must not call any libgraid function
 *   (nearly every one may log); NULL for silence.
 * @param arg passed to @p fn unchanged.
 * @param max_level the least severe ::graid_log_level delivered.
 */
GRAID_API void graid_log_set(graid_log_fn fn, void *arg, int max_level);

/* ------------------------------------------------------------------------------------ */
/** @name The control endpoint: an array managed while it is served (docs/CONTROL.md)
 * @{
 */

/** Longest request line the control endpoint reads, newline included; longer closes the client. */
#define GRAID_CONTROL_REQUEST_MAX 65536u
/**
 * Bytes of replies the endpoint keeps queued for one client that does not read them: past
 * it, the client is dropped (a single reply is queued whole, however long). A client that
 * does not read is dropped at this limit or at the idle timeout, whichever comes first.
 */
#define GRAID_CONTROL_REPLY_MAX (256u * 1024u)
/** The control protocol's version, as the "hello" reply gives it. */
#define GRAID_CONTROL_PROTOCOL 1

/** @brief How graid_array_control_start() serves the endpoint. */
struct graid_control_options {
	size_t struct_size;      /**< sizeof(struct graid_control_options) as compiled */
	/**
	 * the run directory the socket goes in; NULL or "": $GRAID_RUN_DIR, else /run/graid.
	 * Made (mode 0700) if missing; it must be a directory of this user's own that nobody
	 * else can write.
	 */
	const char *run_dir;
	/** clients served at once, at most 1024; 0: 16. More are refused */
	unsigned max_clients;
	unsigned idle_timeout_ms; /**< a client silent this long is closed; 0: 60000 */
};

/**
 * @brief Serve the array's control endpoint: the UNIX stream socket
 *   RUN_DIR/UUID.ctl (the array UUID in its 36-character form), mode 0600, where root and
 *   this process's user manage the array with the requests of docs/CONTROL.md (status,
 *   fail, spare-add, replace, rebuild-rate) while the caller keeps serving I/O.
 *
 * Requests are served by a thread of the endpoint's own, never in the caller's I/O calls
 * nor in the array's worker; a client that is slow, silent or hostile is dropped without
 * holding up either. A socket left by a process that died is replaced; one that a live
 * process serves is not. graid_array_control_stop() ends it, and so does
 * graid_array_close(), first. Not to be called concurrently with graid_array_close().
 * @param a the array, opened writable.
 * @param opts NULL for the defaults, or the options.
 * @return 0; -EINVAL @p a NULL, @p opts with struct_size too small to hold idle_timeout_ms
 *   (a larger one, of a later version, is taken), or max_clients above 1024 (logged);
 *   -EROFS the array was opened read-only (a look has nothing to manage); -EALREADY the
 *   endpoint is served already, or another thread is stopping it (start again once that
 *   stop has returned); -EBUSY a live process serves the socket's path; -EEXIST
 *   something other than a socket is at that path (left alone); -ENAMETOOLONG
 *   the socket's path does not fit a socket address; -ENOTDIR the run directory is not a
 *   directory of this user's own that nobody else can write (logged); another -errno
 *   making the run directory, the socket or the thread (logged).
 */
GRAID_API int graid_array_control_start(struct graid_array *a,
					const struct graid_control_options *opts);

/**
 * @brief Stop serving the control endpoint: the request under way finishes, every client
 *   is closed, the socket is removed, and the thread has ended when this returns. A scrub
 *   the endpoint started (its scrub-start op) is stopped as graid_array_scrub_stop() stops
 *   it, at its next batch with its checkpoint recorded, and its thread has ended too. Another
 *   array's endpoint is not held up meanwhile. In a fork()'s child, only the child's copies
 *   are let go: the parent's endpoint and socket stay.
 * @param a the array.
 * @return 0 (also when no endpoint was served); -EINVAL @p a is NULL; -EDEADLK called on
 *   the endpoint's own thread (an event callback run by a request) or on the thread of the
 *   scrub it started (an event callback run by that scrub): it goes on serving.
 */
GRAID_API int graid_array_control_stop(struct graid_array *a);

/**
 * @brief The path of the array's control socket in a run directory: where
 *   graid_array_control_start() would serve it and where a client connects.
 * @param a the array (any open, read-only too: it only needs the UUID).
 * @param run_dir the run directory; NULL or "": $GRAID_RUN_DIR, else /run/graid.
 * @param buf receives the path.
 * @param size bytes at @p buf.
 * @return 0; -EINVAL NULL @p a or @p buf; -ENAMETOOLONG it does not fit @p size or a socket
 *   address.
 */
GRAID_API int graid_array_control_path(struct graid_array *a, const char *run_dir, char *buf,
				       size_t size);

/** @} */

/** @name Metrics: Prometheus's text exposition format (docs/METRICS.md)
 * @{
 */

/** graid_metrics_write() flag: leave out the members' drive health (the
 *  graid_member_health_*, graid_member_critical_warning and the drive's other families). */
#define GRAID_METRICS_NO_HEALTH 0x1u

/**
 * @brief Write the metrics of a set of arrays in Prometheus's text exposition format
 *   (version 0.0.4): each metric family once, its HELP and TYPE lines first, then its
 *   samples for every array in the order given. docs/METRICS.md lists every family, its
 *   type, labels and meaning. What is read: graid_array_info(), graid_array_member_info() of
 *   every role and spare, the drive health of each member that is an NVMe namespace (unless
 *   ::GRAID_METRICS_NO_HEALTH), and the array's last event number and scrub state. The
 *   health of a writable handle is its health watch's last sample, with its age: no admin
 *   command is sent, so a hung drive never holds the caller (none while the watch is off or
 *   before its first sample); a read-only handle has no watch and reads
 *   graid_array_member_health() of each drive, one admin command each. The estimate of a
 *   rebuild's seconds remaining compares successive calls (any caller's, in this process):
 *   the first call that sees a rebuild or catch-up gives none.
 * @param out where the text goes (open_memstream() makes a buffer of it); nothing is
 *   written when an error other than -EIO is returned.
 * @param arrays the arrays (read-only opens too); the same handle twice is an error.
 * @param names the value of each array's @c array label, or NULL (the whole list or one
 *   entry): the array's UUID. A name holds no control character.
 * @param n entries in @p arrays (and @p names); 0 writes nothing and returns 0.
 * @param flags GRAID_METRICS_*.
 * @return 0; -EINVAL NULL @p out, NULL @p arrays with @p n not 0, a NULL handle, the same
 *   handle or array label twice, a name that is empty or holds a control character, or an
 *   unknown flag; -ENOMEM; -EIO writing to @p out failed (part of the text may be written);
 *   another negative errno from graid_array_info() or graid_array_member_info().
 */
GRAID_API int graid_metrics_write(FILE *out, struct graid_array *const *arrays,
				  const char *const *names, unsigned n, unsigned flags);

/** @} */

/**
 * @brief Name an error returned by this library.
 * @param err a negative errno (a positive one is accepted too).
 * @return a static string; never NULL.
 */
GRAID_API const char *graid_strerror(int err);

/**
 * @brief The library's version.
 * @return "MAJOR.MINOR.PATCH", a static string.
 */
GRAID_API const char *graid_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBGRAID_GRAID_H */
