/* SPDX-License-Identifier: MIT */
/* One member device (member.c) and its injected faults in test builds (fault.c). */
#ifndef LIBGRAID_CORE_MEMBER_H
#define LIBGRAID_CORE_MEMBER_H

#include <errno.h>

#include "array/array.h"

/* member.c */
/*
 * Open a member device. @p exclusive: hold it at once (O_EXCL on a block device and an
 * exclusive flock; -EBUSY when another open holds it), as create and replace do; otherwise
 * no lock is taken (assembly locks afterwards, in role order, with member_lock()).
 */
int member_open(struct member *m, const char *path, bool exclusive);
/*
 * The same for a look that writes nothing: O_RDONLY, unlocked, so that members the caller
 * may read but not write (a write-protected device, a read-only mount, another user's
 * files) can be looked at. Nothing may be written through it.
 */
int member_open_read_only(struct member *m, const char *path);
/*
 * Whether this process could open the member for writing, told without doing so (a look):
 * its permissions for the effective ids, a read-only mount, a block device set read-only.
 */
bool member_may_write(const struct member *m);
/*
 * Hold an open member exclusively without waiting: reopen a block device with O_EXCL, and
 * flock(). 0; -EBUSY another libgraid open holds it; -EEXIST a block device held by
 * something else (mounted, claimed by md or dm); -ESTALE its path names another device
 * now. Released when the member is closed.
 */
int member_lock(struct member *m);
void member_close(struct member *m);
/*
 * The member's size now (a file truncated or grown, a device resized since it was opened):
 * 0 or -errno. An NVMe generic device reports its size at open.
 */
int member_size_now(struct member *m, uint64_t *size);
/* The identity member_open() would record, without opening: to name duplicates first. */
int member_identity(const char *path, dev_t *dev, ino_t *ino);
int member_read_sb(struct member *m, struct superblock *sb);
int member_write_sb(struct member *m, const struct superblock *sb);
int member_zero_range(struct member *m, uint64_t off, uint64_t len);
/*
 * The same through @p fd, loaded once by the caller: a role's descriptor may change under
 * it (a replace's swap), and every piece of one zeroing is to reach the same device.
 */
int member_zero_range_fd(struct member *m, int fd, uint64_t off, uint64_t len);
/* Make completed writes durable: fdatasync, or the NVMe Flush command. 0 or -errno. */
int member_flush(struct member *m);
/* The same through @p fd, loaded once by the caller (NVMe passthrough aside). */
int member_flush_fd(struct member *m, int fd);
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
 * Synchronous whole transfer of data-area bytes [@p off, + @p len) of @p m (a device of
 * @p a), through the member's injected faults as the ring's I/O goes: for the jobs that
 * move data with plain pread/pwrite (a replace's copy, a reshape). @p meta: a durable
 * metadata write, as the fault model tells apart. 0; -EIO (injected); -EBADE (a modelled
 * reservation refuses it); the device's -errno.
 */
int member_data_pio(struct graid_array *a, struct member *m, bool write, bool meta, void *buf,
		    size_t len, uint64_t off);
/* The same through @p fd rather than the member's current one (NVMe passthrough aside). */
int member_pio_fd(struct member *m, int fd, void *buf, size_t len, uint64_t off, bool write);
/*
 * Make the metadata area [off, off+bytes) of the member equal @p img (bitmap, live-data map):
 * its copy is read into @p scratch and only the 4 KiB blocks that differ are written,
 * durably (all of them when the copy cannot be read). 0 or -errno.
 */
int member_area_match(struct member *m, const uint8_t *img, uint8_t *scratch, uint64_t off,
		      uint64_t bytes);
/* Write and make it durable before returning (superblocks, journal records). */
int member_write_durable(struct member *m, void *buf, size_t len, uint64_t off);


/*
 * fault.c: test-only fault injection for members opened as "faulty:OPTIONS:PATH", compiled
 * only with -Dfault_injection (GRAID_FAULT_INJECTION, see meson.build). Without it no member
 * ever has a fault schedule (m->fault stays NULL: "faulty:..." is opened as a plain path,
 * which does not exist), and the calls below are the no-ops that keep their callers plain.
 */
/* FAULT_CONFLICT: a write refused by a modelled reservation (pr=FILE): EBADE. */
enum fault_action { FAULT_NONE, FAULT_FAIL, FAULT_TEAR, FAULT_STALL, FAULT_KILL, FAULT_CONFLICT };
/* What member_pr.c asks of a modelled reservation (pr=FILE). */
enum fault_pr_op { FAULT_PR_RESERVE, FAULT_PR_PREEMPT, FAULT_PR_RELEASE };
#if GRAID_FAULT_INJECTION
/*
 * A crash as the members see it, for every member at once (the reshape's crash tests):
 * after fault_writes_cut_after(n), the first n member writes from then on land and every
 * later one fails with EIO without reaching its device (data, metadata, superblocks,
 * through the ring or not). -1 turns it off. fault_write_cut() counts one write and says
 * whether it is cut.
 */
void fault_writes_cut_after(long n);
bool fault_write_cut(void);
/* Writes left before the cut (0: cut; -1: off), so a test can count a run's writes. */
long fault_writes_cut_left(void);
int fault_parse(const char *spec, struct member_fault **out, const char **path);
void fault_free(struct member_fault *f);
/*
 * Decide for one I/O of @p bytes (@p meta: a durable write of metadata, not data);
 * FAULT_STALL fills *stall_ns (the wait before it runs).
 */
enum fault_action fault_decide(struct member_fault *f, bool write, bool meta, uint64_t off,
			       uint64_t bytes, uint64_t *stall_ns);
/*
 * Whether this flush of the member fails (flush-eio-after=N, or a vanished device); with
 * flush-stall-us=N it waits first.
 */
bool fault_flush_fails(struct member_fault *f);
/* zero-stall-us=N: a discard or write-zeroes waits N microseconds once its device is chosen. */
void fault_zero_stall(struct member_fault *f);
/*
 * Whether this superblock write fails (sb-eio-after=N, or a vanished device); with
 * sb-stall-us=N it waits first.
 */
bool fault_sb_write_fails(struct member_fault *f);
/* A superblock write landed, durably: with sb-kill-after=N the Nth ends the process (SIGKILL). */
void fault_sb_landed(struct member_fault *f);
/*
 * "fabric-state=FILE": the member models an NVMe-oF namespace whose one controller's state
 * is the first word of FILE ("live", "connecting", ...; no FILE: deleted), and whose I/O
 * fails while it is not live. True for such a member; @p state (may be NULL) gets the word.
 */
bool fault_fabric_state(struct member_fault *f, char *state, size_t len);
/*
 * "pr=FILE": the modelled reservation (fault.c). RESERVE registers @p key and takes Write
 * Exclusive; PREEMPT takes it from @p victim; RELEASE gives it back and unregisters. 0,
 * -EBUSY a conflict (another key holds it, or @p victim does not), -EOPNOTSUPP the member
 * models no reservation.
 */
int fault_pr(struct member_fault *f, enum fault_pr_op op, uint64_t key, uint64_t victim);
/* A write through this handle would be refused: another key holds the modelled reservation. */
bool fault_pr_refuses(struct member_fault *f);
/*
 * "health=FILE": the member's drive health is FILE's "KEY VALUE" lines (the fields of struct
 * graid_member_health, by name), read at each call, so that a test scripts a drive going bad.
 * 0 filled; -EOPNOTSUPP the member scripts none; -EIO FILE unreadable; -EINVAL a bad line.
 */
int fault_health(struct member_fault *f, struct graid_member_health *h);
/* The same from FILE itself, and a copy of the member's FILE (NULL: none, or no memory). */
int fault_health_at(const char *file, struct graid_member_health *h);
char *fault_health_file(const struct member_fault *f);
#else
static inline bool fault_write_cut(void)
{
	return false;
}
static inline void fault_free(struct member_fault *f)
{
	(void)f;
}

static inline enum fault_action fault_decide(struct member_fault *f, bool write, bool meta,
					     uint64_t off, uint64_t bytes, uint64_t *stall_ns)
{
	(void)f, (void)write, (void)meta, (void)off, (void)bytes, (void)stall_ns;
	return FAULT_NONE;
}

static inline void fault_zero_stall(struct member_fault *f)
{
	(void)f;
}

static inline bool fault_flush_fails(struct member_fault *f)
{
	(void)f;
	return false;
}

static inline void fault_sb_landed(struct member_fault *f)
{
	(void)f;
}

static inline bool fault_sb_write_fails(struct member_fault *f)
{
	(void)f;
	return false;
}

static inline bool fault_fabric_state(struct member_fault *f, char *state, size_t len)
{
	(void)f, (void)state, (void)len;
	return false;
}

static inline int fault_pr(struct member_fault *f, enum fault_pr_op op, uint64_t key,
			   uint64_t victim)
{
	(void)f, (void)op, (void)key, (void)victim;
	return -EOPNOTSUPP;
}

static inline bool fault_pr_refuses(struct member_fault *f)
{
	(void)f;
	return false;
}

static inline int fault_health(struct member_fault *f, struct graid_member_health *h)
{
	(void)f;
	(void)h;
	return -EOPNOTSUPP;
}

static inline int fault_health_at(const char *file, struct graid_member_health *h)
{
	(void)file;
	(void)h;
	return -EOPNOTSUPP;
}

static inline char *fault_health_file(const struct member_fault *f)
{
	(void)f;
	return NULL;
}
#endif

#endif /* LIBGRAID_CORE_MEMBER_H */
