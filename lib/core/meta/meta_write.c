/* SPDX-License-Identifier: MIT */
/* One block of a metadata area written to every writable member at once, durably. */
#include <errno.h>
#include <stdlib.h>

#include <liburing.h>

#include "format/nvme_cmd.h"
#include "member/member.h"
#include "member/member_io.h"
#include "meta/live.h"
#include "meta/member_fail.h"
#include "meta/meta_write.h"

/*
 * Why a ring: the write-intent bitmap and the live-data map mark a region before the first
 * data write to it reaches any member, and that write (and, in a queue, everything behind
 * it on the thread) waits for the mark. Written member by member, each a pwrite and an
 * fdatasync, a mark took two round trips per member in series: with five members ten. In
 * the VM bed that was 1.24 of the 6.24 member I/Os and all 0.61 flushes per 4 KiB random
 * write on a fresh RAID-6 (docs/PERFORMANCE.md). Here each member gets one write with
 * RWF_DSYNC, all in flight at once: a mark costs the slowest member's one round trip.
 *
 * A member that does not answer within the array's I/O timeout is not waited for: the
 * caller fails it once it has released its lock (meta_timed_settle; meta_lock is taken
 * around the bitmap's lock elsewhere, so not here). Its write stays the kernel's, counted
 * in the member's late_ios as the queues count theirs: its completion is taken off the
 * ring later (each call's writes carry a new generation in their user data, so a late one
 * is told apart), and freeing the ring waits for it.
 */
struct meta_ring {
	struct io_uring ring;
	unsigned flags;             /* member_ring_flags() when it was made */
	uint32_t gen;               /* of the current call, in the high half of the user data */
	unsigned late;              /* completions still due from writes given up on */
	bool broken;                /* the kernel refused it: late ones may never come */
	struct meta_ring *older;    /* rings replaced while they had late writes */
};

/* How long freeing a broken ring waits for its late writes (a healthy one: as long as it takes). */
#define META_BROKEN_WAIT_NS (10ull * 1000 * 1000 * 1000)

/* A member's write in one call, and its result. */
struct meta_slot {
	struct member_io_fault mf;
	unsigned member;
	int fd;                     /* the role's descriptor when the write was issued */
	unsigned sq_end;            /* the ring's SQ tail once its entries were prepared */
	int res;                    /* bytes or -errno; MEMBER_IO_MORE while it is out */
	bool late;                  /* given up on: what of it the kernel took is late */
};

/* A slot's result: the kernel never took its write (written the old way, never late). */
#define META_UNSENT (MEMBER_IO_MORE + 1)

/* user_data of member @p m's write in call @p gen; 0 is the stall timeout's (none). */
static uint64_t meta_ud(uint32_t gen, unsigned m)
{
	return ((uint64_t)gen << 32) | (m + 1);
}

/*
 * A completion of a write given up on: one fewer due, on the ring and on its member. Its
 * error is logged: nobody waits for it any more, and the member was already failed (or
 * kept, as the last copy of something) for its silence, not for this.
 */
static void meta_late_done(struct graid_array *a, struct meta_ring *r, uint64_t ud, int res)
{
	unsigned m = (unsigned)(ud & UINT32_MAX) - 1;

	if (r->late)
		r->late--;
	if (m >= a->nmembers)
		return;
	/* Passthrough: > 0 is an NVMe status; a plain write answers its length. */
	if (res < 0 || (res > 0 && a->members[m].dev.nvme.passthru))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): a metadata write given up on after "
					      "the I/O timeout ended later in error: %s", m,
			   a->members[m].dev.path,
			   graid_strerror(res < 0 ? res : nvme_status_errno(res)));
	atomic_fetch_sub(&a->members[m].late_ios, 1);
}

void meta_ring_free(struct graid_array *a, struct meta_ring *r)
{
	while (r) {
		struct meta_ring *older = r->older;
		uint64_t until = graid__now_ns() + META_BROKEN_WAIT_NS;
		struct io_uring_cqe *cqe;

		if (r->late)
			graid__log(GRAID_LOG_NOTICE, "metadata: waiting for %u write(s) given up on "
						     "after the I/O timeout to end", r->late);
		/*
		 * Their buffer is freed, and their descriptors closed, after this. Every late
		 * write was taken by the kernel (meta_ring_drop_unsent), but a broken ring gets
		 * a bounded wait: a kernel that failed a wait on it may never answer.
		 */
		while (r->late) {
			struct __kernel_timespec ts = { .tv_sec = 1 };
			int rc = r->broken ? io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts)
					   : io_uring_wait_cqe(&r->ring, &cqe);

			if (rc == -EINTR || (rc == -ETIME && graid__now_ns() < until))
				continue;
			if (rc < 0)
				break; /* nothing more completes on it */
			if (cqe->user_data)
				meta_late_done(a, r, cqe->user_data, cqe->res);
			io_uring_cqe_seen(&r->ring, cqe);
		}
		io_uring_queue_exit(&r->ring);
		free(r);
		r = older;
	}
}

/*
 * The ring, made (again) when the members now need flags it lacks or the kernel broke it;
 * one with late writes is kept aside (freed with the new one) rather than waited for here.
 * NULL: io_uring refused (a broken ring stays in *pr, never used again, for close to wait).
 */
static struct meta_ring *meta_ring_get(struct graid_array *a, struct meta_ring **pr)
{
	unsigned flags = member_ring_flags(a);
	struct meta_ring *r = *pr, *fresh;

	if (r && !r->broken && (r->flags & flags) == flags)
		return r;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return NULL;
	/* Two entries a member: a modelled stall puts a timeout in front of its write. */
	if (io_uring_queue_init(2 * a->nmembers, &fresh->ring, flags) < 0) {
		free(fresh);
		return NULL;
	}
	fresh->flags = flags;
	if (r && r->late) {
		fresh->older = r;
	} else if (r) {
		fresh->older = r->older;
		r->older = NULL;
		meta_ring_free(a, r);
	}
	*pr = fresh;
	return fresh;
}

/*
 * One completion: a piece of this call's write to a member (@p slot_of maps the member to
 * its slot), a late one of an earlier call, or the timeout in front of a stalled write
 * (user data 0). True if a slot of this call ended.
 */
static bool meta_ring_cqe(struct graid_array *a, struct meta_ring *r, struct meta_slot *s,
			  const uint16_t *slot_of, const struct io_uring_cqe *cqe, unsigned len)
{
	uint64_t ud = cqe->user_data;
	struct meta_slot *slot;

	if (!ud)
		return false;
	if ((uint32_t)(ud >> 32) != r->gen || !slot_of) {
		meta_late_done(a, r, ud, cqe->res);
		return false;
	}
	slot = &s[slot_of[(ud & UINT32_MAX) - 1]];
	if (slot->late) {
		/* Given up on in this call (a part of it the kernel did not take). */
		meta_late_done(a, r, ud, cqe->res);
		return false;
	}
	if (slot->res != MEMBER_IO_MORE)
		return false;
	slot->res = member_io_result(a, slot->member, &slot->mf, len, cqe->res);
	if (slot->res == MEMBER_IO_MORE)
		return false;
	if (slot->mf.injected)
		slot->res = slot->mf.injected;
	return true;
}

/* Completions already there, none waited for; how many of this call's slots ended. */
static unsigned meta_ring_reap(struct graid_array *a, struct meta_ring *r, struct meta_slot *s,
			       const uint16_t *slot_of, unsigned len)
{
	struct io_uring_cqe *cqe;
	unsigned ended = 0;

	while (io_uring_peek_cqe(&r->ring, &cqe) == 0) {
		ended += meta_ring_cqe(a, r, s, slot_of, cqe, len);
		io_uring_cqe_seen(&r->ring, cqe);
	}
	return ended;
}

/* Slots still out when the call stops waiting: late from now on, each piece still due. */
static void meta_ring_give_up(struct graid_array *a, struct meta_ring *r, struct meta_slot *s,
			      unsigned n, int why)
{
	for (unsigned k = 0; k < n; k++) {
		unsigned due;

		if (s[k].res != MEMBER_IO_MORE)
			continue;
		due = s[k].mf.pieces ? s[k].mf.pieces : 1;
		r->late += due;
		atomic_fetch_add(&a->members[s[k].member].late_ios, due);
		s[k].res = why;
		s[k].late = true;
	}
}

/*
 * Take back what the kernel did not take from the submission queue, so that nothing sends
 * it later: a write that was never counted as out must never run (a wait on a kernel
 * without IORING_FEAT_EXT_ARG submits whatever is queued, and a late end that was never
 * counted would take another write's count off its member). The SQ's tail is ours to
 * move (these rings have no SQPOLL): back to the kernel's head, in liburing's counters
 * too. Returns that head.
 */
static unsigned meta_ring_drop_unsent(struct meta_ring *r)
{
	struct io_uring_sq *sq = &r->ring.sq;
	unsigned head = io_uring_smp_load_acquire(sq->khead);

	sq->sqe_head = head;
	sq->sqe_tail = head;
	io_uring_smp_store_release(sq->ktail, head);
	return head;
}

/*
 * After a submit the kernel took only the first entries of (up to SQ position @p head):
 * each slot whose write did not go whole is written the old way; the pieces of it that
 * went are late from now on. A slot's write is the last of its entries (a modelled stall
 * puts a timeout in front). How many slots did not go whole.
 */
static unsigned meta_ring_settle_partial(struct graid_array *a, struct meta_ring *r,
					 struct meta_slot *s, unsigned n, unsigned head)
{
	unsigned short_slots = 0;

	for (unsigned k = 0; k < n; k++) {
		unsigned pieces = s[k].mf.pieces ? s[k].mf.pieces : 1, sent;
		int untaken = (int)(s[k].sq_end - head);

		if (untaken <= 0)
			continue; /* went whole: waited for as usual */
		sent = (unsigned)untaken < pieces ? pieces - (unsigned)untaken : 0;
		if (sent) {
			r->late += sent;
			atomic_fetch_add(&a->members[s[k].member].late_ios, sent);
			s[k].late = true;
		}
		s[k].res = META_UNSENT;
		short_slots++;
	}
	return short_slots;
}

/* The old way, one member at a time, pwrite and fdatasync: bytes written, or -errno. */
static int meta_write_one(struct graid_array *a, unsigned m, const void *buf, size_t len,
			  uint64_t member_off)
{
	int rc = member_write_durable(&a->members[m], (void *)(uintptr_t)buf, len, member_off);

	return rc ? rc : (int)len;
}

/*
 * The slots whose write the kernel did not take, the old way now: before any wait for
 * those it took, so that a mark durable this way counts when a stalled member's write
 * is given up on after the I/O timeout.
 */
static void meta_write_unsent(struct graid_array *a, struct meta_slot *s, unsigned n,
			      const void *buf, unsigned len, uint64_t member_off)
{
	for (unsigned k = 0; k < n; k++)
		if (s[k].res == META_UNSENT)
			s[k].res = meta_write_one(a, s[k].member, buf, len, member_off);
}

/*
 * Every slot's write on the ring, and their completions, waiting at most the array's I/O
 * timeout (none set: as long as it takes). 0; -errno: the ring broke (what it had sent is
 * late, the slots not answered hold -EIO).
 */
static int meta_ring_run(struct graid_array *a, struct meta_ring *r, struct meta_slot *s,
			 unsigned n, const void *buf, unsigned len, uint64_t member_off)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };
	uint64_t tmo = atomic_load_explicit(&a->io_timeout_ns, memory_order_relaxed);
	uint64_t deadline = graid__now_ns() + tmo;
	uint16_t slot_of[GRAID_MAX_MEMBERS];
	struct io_uring_cqe *cqe;
	unsigned left = n;
	int rc = 0;

	meta_ring_reap(a, r, s, NULL, len); /* late ones of earlier calls */
	r->gen++;
	for (unsigned k = 0; k < n; k++) {
		slot_of[s[k].member] = (uint16_t)k;
		s[k].res = MEMBER_IO_MORE;
		s[k].mf.pieces = 0;
		s[k].late = false;
	}
	for (unsigned k = 0; k < n; k++) {
		rc = member_prep_log_writev(&r->ring, a, s[k].member, &iov, 1, member_off,
					    (void *)(uintptr_t)meta_ud(r->gen, s[k].member),
					    &s[k].mf);
		if (rc)
			break;
		s[k].sq_end = r->ring.sq.sqe_tail;
	}
	/*
	 * Not member_ring_submit's patience: a mark the kernel refuses now is written the old
	 * way at once; what it took is waited for as usual.
	 */
	if (rc == 0)
		rc = io_uring_submit(&r->ring);
	if (rc < 0) {
		/* Nothing went: no slot is late, every one is written the old way. */
		meta_ring_drop_unsent(r);
		for (unsigned k = 0; k < n; k++)
			s[k].res = META_UNSENT;
		meta_write_unsent(a, s, n, buf, len, member_off);
		return rc;
	}
	rc = 0;
	if (io_uring_sq_ready(&r->ring)) {
		left -= meta_ring_settle_partial(a, r, s, n, meta_ring_drop_unsent(r));
		meta_write_unsent(a, s, n, buf, len, member_off);
	}
	while (rc >= 0 && left) {
		if (tmo) {
			uint64_t now = graid__now_ns(), wait = deadline > now ? deadline - now : 0;
			struct __kernel_timespec ts = { .tv_sec = (long long)(wait / 1000000000u),
							.tv_nsec = (long long)(wait % 1000000000u) };

			rc = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
		} else {
			rc = io_uring_wait_cqe(&r->ring, &cqe);
		}
		if (rc == -EINTR)
			rc = 0;
		/* A last look at what arrived, the timeout's too: only the unanswered are late. */
		left -= meta_ring_reap(a, r, s, slot_of, len);
		if (rc == -ETIME) {
			/*
			 * Only once the mark is durable on some member: with none (a degraded
			 * array's last copy, say), giving up would let the data go out with the
			 * region marked nowhere. Then wait as long as it takes, as the queues do
			 * for the last copy of anything.
			 */
			bool somewhere = false;

			for (unsigned k = 0; k < n; k++)
				somewhere = somewhere || s[k].res == (int)len;
			if (somewhere) {
				meta_ring_give_up(a, r, s, n, -ETIMEDOUT);
				return 0;
			}
			tmo = 0;
			rc = 0;
		}
	}
	if (rc < 0) {
		/*
		 * The kernel stopped answering: what it took may still run, and is late (and
		 * only that: it took every write still out). meta_write_all sets the ring aside
		 * as broken, its wait bounded.
		 */
		meta_ring_give_up(a, r, s, n, -EIO);
		return rc;
	}
	return 0;
}

static bool meta_timed_has(const struct meta_timed *t, unsigned member)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->m[i].member == member)
			return true;
	return false;
}

/* Add a member given up on (@p err 0) or whose write failed (-errno) to @p t, once. */
static void meta_timed_add(struct meta_timed *t, unsigned member, int fd, int err)
{
	if (meta_timed_has(t, member))
		return;
	t->m[t->n].member = member;
	t->m[t->n].err = err;
	t->m[t->n++].fd = fd;
}

int meta_write_all(struct graid_array *a, struct meta_ring **pr, const void *buf, size_t len,
		   uint64_t member_off, const char *what, struct meta_timed *timed)
{
	struct meta_slot s[GRAID_MAX_MEMBERS];
	struct meta_ring *r;
	unsigned n = 0;
	int took = 0;

	/* Taken over by another host: its records, not ours, from now on. */
	if (array_foreign(a))
		return -ESTALE;
	/* A member this caller gave up on already (in @p timed) is out soon: not written. */
	for (unsigned i = 0; i < a->nmembers; i++)
		if (a->members[i].dev.fd >= 0 && array_role_writable(a, i) &&
		    !meta_timed_has(timed, i))
			s[n++] = (struct meta_slot){ .member = i, .fd = a->members[i].dev.fd };
	if (n == 0)
		return 0;
	r = meta_ring_get(a, pr);
	if (!r) {
		for (unsigned k = 0; k < n; k++)
			s[k].res = meta_write_one(a, s[k].member, buf, len, member_off);
	} else if (meta_ring_run(a, r, s, n, buf, (unsigned)len, member_off)) {
		/*
		 * The ring broke: set aside with what it has in flight (meta_ring_get makes a
		 * fresh one next time; close still waits for it), and the members it did not
		 * answer for are written the old way (a block written twice with the same
		 * bytes is harmless). Their late_ios stay counted if the broken ring never ends
		 * those writes: such a member is rebuilt whole rather than caught up, the safe
		 * side.
		 */
		r->broken = true;
		for (unsigned k = 0; k < n; k++)
			if (s[k].res == -EIO && s[k].late)
				s[k].res = meta_write_one(a, s[k].member, buf, len, member_off);
	}
	for (unsigned k = 0; k < n; k++) {
		if (s[k].res == (int)len) {
			took++;
			continue;
		}
		if (s[k].res == -ETIMEDOUT) {
			meta_timed_add(timed, s[k].member, s[k].fd, 0);
			continue; /* meta_timed_settle() says it */
		}
		/*
		 * Failed once the caller's lock is released (meta_timed_settle), as md fails a
		 * device on a write error: its data writes may well succeed (only the metadata
		 * area is bad), and a member kept in the array without the marks of data it
		 * holds would be caught up without it, or rebuilt past it, should the members
		 * that have them fail. The caller refuses the write when no member took it.
		 */
		graid__log(GRAID_LOG_ERR, "member %u: %s write failed: %s", s[k].member, what,
			   graid_strerror(s[k].res < 0 ? s[k].res : -EIO));
		meta_timed_add(timed, s[k].member, s[k].fd, s[k].res < 0 ? s[k].res : -EIO);
	}
	return took;
}

int meta_mark_verdict(int took, const char *what, uint64_t region)
{
	if (took > 0)
		return 0;
	if (took == -ESTALE)
		return took; /* taken over by another host, which the write then says */
	graid__log(GRAID_LOG_ERR, "%s: no member took the mark of region %llu: its write fails",
		   what, (unsigned long long)region);
	return -EIO;
}

void meta_timed_settle(struct graid_array *a, const struct meta_timed *timed)
{
	for (unsigned k = 0; k < timed->n; k++)
		if (timed->m[k].err)
			array_member_mark_failed(a, timed->m[k].member, timed->m[k].fd,
						 timed->m[k].err);
		else
			array_member_mark_timed_out(a, timed->m[k].member, timed->m[k].fd);
}

/* The array's region maps (bitmap.c, live.c): NULL where it keeps none. */
static struct region_map *meta_map(struct graid_array *a, unsigned i)
{
	if (i == 0)
		return a->bitmap.enabled ? &a->bitmap.map : NULL;
	return a->live ? &a->live->map : NULL;
}

#define META_MAPS 2u

void meta_rings_free(struct graid_array *a)
{
	for (unsigned i = 0; i < META_MAPS; i++) {
		struct region_map *m = meta_map(a, i);

		if (m) {
			meta_ring_free(a, m->ring);
			m->ring = NULL;
		}
	}
}

/* Late ends already there, on @p r and the rings set aside behind it; those done are freed. */
static void meta_ring_reap_late(struct graid_array *a, struct meta_ring *r)
{
	meta_ring_reap(a, r, NULL, NULL, 0);
	while (r->older) {
		struct meta_ring *older = r->older;

		meta_ring_reap(a, older, NULL, NULL, 0);
		if (older->late) {
			r = older;
			continue;
		}
		r->older = older->older; /* done: unlinked and freed (nothing to wait for) */
		older->older = NULL;
		meta_ring_free(a, older);
	}
}

void meta_rings_reap_late(struct graid_array *a)
{
	for (unsigned i = 0; i < META_MAPS; i++) {
		struct region_map *m = meta_map(a, i);

		/* Busy: whoever holds the lock uses the ring, and reaps it first. */
		if (m && m->ring && pthread_mutex_trylock(&m->lock) == 0) {
			meta_ring_reap_late(a, m->ring);
			pthread_mutex_unlock(&m->lock);
		}
	}
}
