/* SPDX-License-Identifier: MIT */
/* Prepare one member read or write on a ring; the one place that knows about injected faults. */
#ifndef LIBGRAID_CORE_MEMBER_IO_H
#define LIBGRAID_CORE_MEMBER_IO_H

#include <limits.h>
#include <sys/types.h>
#include <liburing.h>

#include "array/array.h"

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
	uint64_t start_ns;            /* when it was prepared: its latency's start (io_stats.c) */
	/* Set by member_io_done(): a MEMBER_SLOW event for the caller to send, ms; or 0. */
	uint64_t slow_ms;
	/*
	 * Kept at prep for a checksummed array (member/tag_store.h): the transfer (@c iov, or
	 * @c buf alone) and where it lands in the data area (UINT64_MAX: outside it, the
	 * journal's log, never tagged); they must live until the I/O ends, as the ring wants.
	 */
	void *buf;
	const struct iovec *iov;
	unsigned iovcnt;
	uint64_t off;
	bool write;
	bool tagged;                  /* a write whose new tags are pending until its end */
	/*
	 * Set by the caller before prep (prep keeps it): a read taken as it is, its tags made
	 * from its bytes instead of checked (resync: the data is the truth there).
	 */
	bool unverified;
	/*
	 * Set by the caller before prep, consumed (and cleared) by it: a write's meta words,
	 * one per 4 KiB block of the transfer (tag_store_write_begin_meta), NULL for the
	 * default next generation of each block. Must live until prep returns.
	 */
	const uint32_t *meta_in;
	/*
	 * Set by the caller before prep, consumed (and cleared) by it: instead of meta words,
	 * the -errno a data-area write that makes tags ends with, not issued (its generations
	 * could not be chosen: io/lost_write_column.h); 0 otherwise.
	 */
	int meta_err;
	/*
	 * Set by the caller before prep (prep keeps it): a read not under its stripe lock, which
	 * a write of the same blocks may overtake. A mismatch after a write of the role ended
	 * since its prep (@c wgen) may be that write's new tag over the old bytes read: the read
	 * ends stale (-ESTALE, done again under the lock), not as a checksum failure.
	 */
	bool racy;
	uint64_t wgen;
	/*
	 * A tagged write of the role was in flight at the read's prep, or @c wbegun (the role's
	 * count of begun ones then) moved since: the bytes of a block it wrote may be torn
	 * between old and new, matching neither tag. A racy read's mismatch then ends stale too.
	 */
	bool wbusy;
	uint64_t wbegun;
	/*
	 * Set by member_io_done(): the read ended -EBADMSG because its bytes failed their tags
	 * (not the drive's own -EBADMSG); the blocks are the role's csum_pend entries.
	 */
	bool csum;
	/*
	 * A passthrough member whose format has metadata (member/tag_inline.h): the buffer every
	 * command's metadata comes from, allocated at prep and freed at the end; where the I/O
	 * starts on the member (bytes); whether the buffer carries the role's tags; and whether
	 * a piece of a read failed the drive's end-to-end check. meta_fmt and meta_prefix: the
	 * format of the device it was issued to, as the buffer is laid out, and the role's tag
	 * key, both taken at prep (a replace's swap does not wait for reads: by the I/O's end
	 * the role may have another device, or one whose fields are not yet set).
	 */
	void *meta;
	struct nvme_meta_fmt meta_fmt;
	uint32_t meta_prefix;
	uint64_t meta_at;
	bool meta_tags;
	bool e2e;
	/*
	 * A write of an inline role with generations: the meta words the tag store gave its
	 * blocks (their copy in the tag area), for the tags its metadata carries; allocated at
	 * prep, freed with @c meta (tag_inline_free). NULL otherwise (generation 0).
	 */
	uint32_t *meta_gens;
	/*
	 * A read of an inline role with generations: per block, whether its metadata tag is
	 * behind its tag-area copy (tag_store_behind(), set by member_io_done() before
	 * tag_inline_verify(), which takes it: a lost write when every CRC held); or NULL.
	 */
	bool *meta_stale;
};

/*
 * Queue the I/O (at `off` inside the member's data area) on `ring` with `user_data`; a
 * stalled member gets a linked timeout first, whose completion carries NULL user data and
 * must be ignored. With the ring full, what it holds is submitted first, through
 * member_ring_submit(). Returns 0, or -EAGAIN when the ring has no room because the kernel
 * would not take its entries (member_ring_submit() failed: the ring is unusable, no member
 * is to blame).
 */
int member_prep_io(struct io_uring *ring, struct graid_array *a, unsigned member, bool write,
		   void *buf, unsigned len, uint64_t off, void *user_data,
		   struct member_io_fault *mf);

/*
 * The same with [buf, buf + len) inside fixed buffer @p buf_index of @p ring (-1: none,
 * as member_prep_io): READ_FIXED or WRITE_FIXED, or a passthrough command with
 * IORING_URING_CMD_FIXED, and the kernel pins nothing.
 */
int member_prep_io_fixed(struct io_uring *ring, struct graid_array *a, unsigned member,
			 bool write, void *buf, unsigned len, uint64_t off, int buf_index,
			 void *user_data, struct member_io_fault *mf);

/*
 * The same for a vectored write of iovcnt pieces landing contiguously at `off`; the iovec
 * array must live until the I/O completes.
 */
int member_prep_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, void *user_data,
		       struct member_io_fault *mf);

/*
 * A journal write (journal.c): a vectored write at `member_off` bytes from the member's
 * start (not the data area), complete on stable storage when it completes (RWF_DSYNC).
 */
int member_prep_log_writev(struct io_uring *ring, struct graid_array *a, unsigned member,
			   const struct iovec *iov, unsigned iovcnt, uint64_t member_off,
			   void *user_data, struct member_io_fault *mf);

/*
 * Submit what @p ring holds and, with @p wait_nr, wait for that many completions. The
 * kernel's "not now" answers (-EAGAIN, -EBUSY, -ENOMEM, -EINTR) are waited out, for 10 s at
 * most; what stays is logged and returned. Returns the entries submitted or -errno; on an
 * error the entries stay in the ring for the next call.
 */
int member_ring_submit(struct io_uring *ring, unsigned wait_nr);

/*
 * Ring setup flags the array's members need: IORING_SETUP_SQE128 | IORING_SETUP_CQE32 when
 * any member or spare is an NVMe generic device (passthrough commands), else 0.
 */
unsigned member_ring_flags(const struct graid_array *a);

/*
 * A regular file in RAM (tmpfs, ramfs) without fault injection or passthrough: its I/O is
 * a memory copy that io_uring hands to a worker thread (tmpfs has no non-blocking path), so
 * doing it in the calling thread costs less. One fstat and fstatfs: call it at setup.
 */
bool member_io_in_ram(const struct member *m);

/* The most iovec pieces member_io_now() takes. */
#define MEMBER_IOV_MAX 64

/*
 * The I/O done now in this thread with preadv/pwritev (@iov NULL: @buf and @len), at `off`
 * inside the data area, on the member's descriptor @fd as the caller took it. Returns the
 * bytes moved (short only at the end of the file) or -errno. For members
 * member_io_in_ram() accepted; nothing here knows about faults.
 */
ssize_t member_io_now(struct graid_array *a, int fd, bool write, void *buf, unsigned len,
		      const struct iovec *iov, unsigned iovcnt, uint64_t off);

/*
 * member_io_now()'s setup, before it: @p mf filled as a prep fills it (descriptor, start,
 * the transfer kept) and, for a write of a checksummed array's data area, its new tags
 * pending (tag_store_write_begin). 0, or the -errno the I/O is to end with, not done.
 * Its end is member_io_done(), as for an I/O on a ring.
 */
int member_io_now_begin(struct graid_array *a, unsigned member, bool write, void *buf,
			unsigned len, const struct iovec *iov, unsigned iovcnt, uint64_t off,
			struct member_io_fault *mf);

/*
 * An I/O given up on (the I/O timeout) that will never reach member_io_done(): a write's
 * pending tags are dropped (the old ones stay; its member is out of the array).
 */
void member_io_abandon(struct graid_array *a, unsigned member, uint32_t len,
		       struct member_io_fault *mf);

/* member_io_result(): more pieces of this I/O are still to complete. */
#define MEMBER_IO_MORE INT_MIN

/*
 * Translate one CQE of a member I/O prepared by the calls above into what a plain read or
 * write returns: @len bytes or -errno. An NVMe passthrough I/O completes as several CQEs
 * (one per command); all but the last return MEMBER_IO_MORE, the last the whole result.
 * NVMe status codes are logged with their names and become an errno (nvme_cmd.c).
 */
int member_io_result(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		     unsigned len, int res);

/*
 * The end of one member I/O of @p len bytes whose member_io_result() was @p res: what the
 * caller reports. The member's counters take a whole transfer; a stale read (its role
 * changed device between plan and issue) is -ESTALE, an injected fault its injected error,
 * a short transfer -ENXIO (the member ended early: never a bad sector to repair). Failing
 * the member, or repairing a read, is the caller's choice; so is sending the MEMBER_SLOW
 * event @p mf->slow_ms asks for (its I/O statistics are counted here).
 * On a checksummed array a write's new tags take effect (or, failed, the old ones stay),
 * and a whole read of the data area is checked against its tags: a mismatch ends it
 * -EBADMSG with @p mf->csum set, the bad blocks counted (the role's csum_errors) and kept
 * in the role's csum_pend; it counts as a completed transfer, not as a failed I/O (the
 * I/O-error rule). A tag block that cannot be read ends the read with that error.
 * @return @p len, or -errno.
 */
int member_io_done(struct graid_array *a, unsigned member, bool write, uint32_t len,
		   struct member_io_fault *mf, int res);

/*
 * Before member_io_done() of several I/Os that ended together: for a read of a checksummed
 * array's data area, its tags are asked into the CPU's cache (tag_store_prefetch), so that
 * the verifies that follow find them there; otherwise nothing. Changes nothing.
 */
void member_io_prefetch(struct graid_array *a, unsigned member, bool write, uint32_t len,
			const struct member_io_fault *mf);

#endif
