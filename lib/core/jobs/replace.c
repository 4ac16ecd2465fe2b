/* SPDX-License-Identifier: MIT */
/*
 * Replacing a member that stays in service (md's --replace): the new device takes every
 * write of the role while a copy brings it into sync row by row, then takes the role in
 * one superblock round; the role stays ACTIVE all along (docs/REPLACE.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/stripe_set.h"
#include "jobs/job_progress.h"
#include "jobs/health_state.h"
#include "jobs/jobs.h"
#include "jobs/replace.h"
#include "member/member.h"
#include "member/member_path.h"
#include "member/member_pr.h"
#include "member/tag_store.h"
#include "member/tag_inline.h"
#include "meta/array_meta.h"
#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/events.h"
#include "meta/journal.h"
#include "meta/live.h"
#include "meta/region_map.h"

/* Rows the copy holds locked at once, about this many bytes of the role. */
#define REPLACE_BATCH_BYTES (1u << 20)


/* The stripe locks of rows [row0, row0 + n) of role @p role, into @p set. */
static void replace_add_locks(const struct graid_array *a, unsigned role, uint64_t row0,
			      unsigned n, struct stripe_set *set)
{
	const struct layout *l = &a->lay;

	for (unsigned i = 0; i < n; i++) {
		uint64_t arr;

		if (l->level != 10)
			stripe_set_add(set, row0 + i);
		else if (!layout_unmap(l, role, (row0 + i) * l->chunk, &arr))
			stripe_set_add(set, arr / l->chunk); /* RAID-10 writes lock array chunks */
	}
}

/*
 * One chunk of the role from its member into @p buf: what the member cannot read, or
 * records bad, from the redundancy. 0; -ENODEV the member left its role; -errno.
 */
static int replace_read_chunk(struct graid_array *a, struct array_replace *r, uint64_t off,
			      uint8_t *buf)
{
	const uint32_t chunk = a->lay.chunk;
	struct member *old = &a->members[r->role];
	struct bbl_cols want = { { 0 } }, bad = { { 0 } };
	uint32_t fp[REPLACE_CSUM_UNITS];
	int rc = replace_pio(a, old, false, buf, chunk, off);

	if (!array_role_alive(a, r->role))
		return -ENODEV; /* what was read may be /dev/null's, or nothing */
	if (rc) {
		/* Narrowed to 4 KiB: a bad sector costs its block, not the chunk. */
		for (unsigned u = 0; u < chunk / BBL_UNIT; u++)
			if (replace_pio(a, old, false, buf + (size_t)u * BBL_UNIT, BBL_UNIT,
					off + (uint64_t)u * BBL_UNIT))
				bbl_cols_set(&want, u);
		graid__log(GRAID_LOG_WARNING, "replace of member %u: %s could not read part of "
			   "data-area bytes %llu..%llu: taken from the redundancy", r->role,
			   old->dev.path, (unsigned long long)off,
			   (unsigned long long)(off + chunk));
	}
	/* Bytes the drive gave without complaint may still be wrong: their tags say. */
	if (rc == 0 && a->tags && replace_csum_check(a, r, off, chunk, buf, &want, &bad, fp))
		for (unsigned u = 0; u < chunk / BBL_UNIT; u++)
			bbl_cols_set(&want, u); /* tags unreadable: all of it from the others */
	badblocks_cols(a, r->role, off, chunk, &want);
	if (!bbl_cols_any(&want))
		return 0;
	rc = replace_from_redundancy(a, r, off, chunk, &want, buf);
	if (rc == 0 && bbl_cols_any(&bad))
		replace_csum_settle(a, r, off, buf, &bad, fp);
	return rc;
}

/* Sleep until the bytes done are due at the array's rebuild rate. */
static void replace_pace(struct graid_array *a, struct array_replace *r, uint64_t t0,
			 uint64_t done)
{
	uint64_t rate = atomic_load(&a->rebuild_rate), due, now;

	if (!rate)
		return;
	due = t0 + (uint64_t)((double)done / (double)rate * 1e9);
	now = graid__now_ns();
	while (now < due && !atomic_load(&a->closing) && !atomic_load(&r->stop)) {
		uint64_t ns = due - now < 100000000ull ? due - now : 100000000ull;
		struct timespec ts = { 0, (long)ns };

		nanosleep(&ts, NULL);
		now = graid__now_ns();
	}
}

/* Why the copy must stop now, or 0. */
static int replace_why_stop(struct graid_array *a, struct array_replace *r)
{
	if (atomic_load(&r->stop) || atomic_load(&a->closing))
		return -ECANCELED;
	if (atomic_load(&r->failed))
		return -EIO;
	if (array_foreign(a))
		return -ESTALE;
	if (!array_role_alive(a, r->role))
		return -ENODEV;
	return 0;
}

/* Every row of the role, in order, each batch under its stripe locks. 0 or -errno. */
static int replace_copy(struct graid_array *a, struct array_replace *r)
{
	const struct layout *l = &a->lay;
	const unsigned per = REPLACE_BATCH_BYTES / l->chunk ? REPLACE_BATCH_BYTES / l->chunk : 1;
	const uint64_t t0 = graid__now_ns();
	const uint64_t total = l->nstripes * l->chunk;
	struct stripe_set *set = malloc(sizeof(*set));
	struct job_progress prog;
	uint8_t *buf = NULL;
	int rc = 0;

	if (!set || posix_memalign((void **)&buf, ARRAY_ALIGN, l->chunk)) {
		free(set);
		return -ENOMEM;
	}
	/* The role stays ACTIVE: the events name it, not the first role REBUILDING. */
	job_progress_init(&prog, a, GRAID_EVENT_REBUILD_PROGRESS, NULL, NULL);
	prog.member = (int)r->role;
	for (uint64_t row = 0; row < l->nstripes && rc == 0; row += per) {
		unsigned n = l->nstripes - row < per ? (unsigned)(l->nstripes - row) : per;

		rc = replace_why_stop(a, r);
		if (rc)
			break;
		memset(set, 0, sizeof(*set));
		replace_add_locks(a, r->role, row, n, set);
		stripe_set_lock(a, set);
		for (unsigned i = 0; i < n && rc == 0; i++) {
			uint64_t off = (row + i) * l->chunk;

			if (live_row_unused(a, row + i)) {
				/* As a rebuild leaves them: zeroes, which parity agrees with. */
				if (member_zero_range(&r->dev, a->data_offset + off, l->chunk))
					atomic_store(&r->failed, true);
				continue;
			}
			rc = replace_read_chunk(a, r, off, buf);
			if (rc == 0 && replace_pio(a, &r->dev, true, buf, l->chunk, off))
				atomic_store(&r->failed, true);
		}
		stripe_set_release(a, set);
		if (rc == 0)
			rc = atomic_load(&r->failed) ? -EIO : 0;
		if (rc)
			break;
		atomic_store(&r->done, (row + n) * l->chunk);
		job_progress_note(&prog, (row + n) * l->chunk, total);
		replace_pace(a, r, t0, (row + n) * l->chunk);
	}
	free(buf);
	free(set);
	return rc;
}

/*
 * The maps whole on the new device: of them it took only the marks and sweeps written since
 * the copy began, and every later one reaches it as a write of the role.
 */
static int replace_swap_maps(struct graid_array *a, struct array_replace *r)
{
	int rc = region_map_write_member(a, a->bitmap.enabled ? &a->bitmap.map : NULL, &r->dev);

	if (rc == 0)
		rc = region_map_write_member(a, a->live ? &a->live->map : NULL, &r->dev);
	return rc;
}

/*
 * The role's tags onto the new device: the copy wrote its data, not its tag area (tags are
 * the role's, kept by the store against the role's device). The dirty ones written to the
 * old device first, then the area copied whole. With io_lock held exclusive no new write of
 * the role begins; tags of writes still in flight stay dirty in the store and reach the new
 * device at its next flush, once it holds the role.
 */
static int replace_copy_tags(struct graid_array *a, struct array_replace *r)
{
	struct member *old = &a->members[r->role];
	const struct member_nvme *nv = &r->dev.dev.nvme;
	const size_t piece = 1u << 20;
	uint8_t *buf = NULL;
	int rc = tag_store_flush(a);

	/*
	 * A device that keeps the role's tags in its blocks' metadata never reads its tag area;
	 * zeroed, it holds no stale tags for a later open of the role through another name
	 * (its block device) to meet.
	 */
	if (rc == 0 && a->csum && nv->passthru && nv->meta.mode == NVME_META_TAG) {
		rc = member_zero_range(&r->dev, a->tag_offset, a->tag_bytes);
		if (rc)
			graid__log(GRAID_LOG_ERR, "replace of member %u: the tag area of %s could "
				   "not be zeroed: %s", r->role, r->dev.dev.path, graid_strerror(rc));
		return rc;
	}
	if (rc == 0 && posix_memalign((void **)&buf, ARRAY_ALIGN, piece)) {
		buf = NULL;
		rc = -ENOMEM;
	}
	for (uint64_t at = 0; rc == 0 && at < a->tag_bytes; at += piece) {
		size_t n = a->tag_bytes - at < piece ? (size_t)(a->tag_bytes - at) : piece;

		rc = member_pio(old, buf, n, a->tag_offset + at, false);
		if (rc == 0)
			rc = member_pio(&r->dev, buf, n, a->tag_offset + at, true);
	}
	free(buf);
	if (rc)
		graid__log(GRAID_LOG_ERR, "replace of member %u: its checksum tags could not be "
			   "copied to %s: %s", r->role, r->dev.dev.path, graid_strerror(rc));
	return rc;
}

/*
 * All but the superblock, io_lock held exclusive (no write of the role in flight, none to
 * come before the move): no write to the new device failed, every one it took is durable,
 * and its bad-block log records the units no device could give it. -errno: no swap.
 */
static int replace_swap_ready(struct graid_array *a, struct array_replace *r,
			      struct bbl_image *img)
{
	int rc = 0;

	if (atomic_load(&r->failed)) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: a write to %s failed: it holds "
			   "not every write of the role", r->role, r->dev.dev.path);
		return -EIO;
	}
	if (a->tags)
		rc = replace_copy_tags(a, r);
	if (rc == 0)
		rc = member_flush(&r->dev);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: %s could not make its writes "
			   "durable: %s", r->role, r->dev.dev.path, graid_strerror(rc));
		atomic_store(&r->failed, true);
		return rc;
	}
	rc = badblocks_prepare(a, r->role, &r->dev, r->lost, r->nlost, img);
	if (rc == -EOPNOTSUPP)
		graid__log(GRAID_LOG_ERR, "replace of member %u: %u blocks could be read from no "
			   "device, and the array keeps no bad-block log to record them in (they "
			   "would read as zeroes)", r->role, r->nlost);
	else if (rc == -ENOSPC)
		graid__log(GRAID_LOG_ERR, "replace of member %u: the %u blocks no device could "
			   "give do not fit in a bad-block log", r->role, r->nlost);
	else if (rc) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: writing the bad-block log of %s: "
			   "%s", r->role, r->dev.dev.path, graid_strerror(rc));
		atomic_store(&r->failed, true);
	}
	return rc;
}

/*
 * The new device takes the role. Everything the role needs is on it before its superblock
 * (as for a device installed by role_install, whose log and maps are written before the
 * superblock round that names it): the maps, then, under io_lock held exclusive until the
 * move, its writes flushed and its bad-block log. Its superblock then names it the role's
 * device at the next event (a crash after this write leaves the role to it: the others'
 * older superblocks lose), then the move in memory and every other superblock. Its journal
 * needs no checkpoint here: it took one when the copy began, and every entry since as a
 * write of the role (a checkpoint now would hide the entries of updates in flight). The old
 * device is kept open until close, never reused: reads planned on it before the move may
 * still be in the kernel's hands, and they must find its bytes, which are still the
 * role's. 0; -errno (the member keeps its role). meta_lock held.
 */
static int replace_swap(struct graid_array *a, struct array_replace *r)
{
	struct member *m = &a->members[r->role];
	struct bbl_image *img = calloc(1, sizeof(*img));
	struct superblock sb;
	int rc;

	if (!img)
		return -ENOMEM;
	rc = replace_swap_maps(a, r);
	if (rc) {
		if (rc != -ESTALE && rc != -ENOMEM)
			atomic_store(&r->failed, true);
		free(img);
		return rc;
	}
	pthread_rwlock_wrlock(&r->io_lock);
	rc = replace_swap_ready(a, r, img);
	if (rc) {
		pthread_rwlock_unlock(&r->io_lock);
		free(img);
		return rc;
	}
	r->swapping = true; /* no longer a spare in the superblocks from here on */
	a->events++;
	array_fill_sb(a, r->role, &sb, 0);
	memcpy(sb.member_uuid, r->dev.dev.uuid, 16);
	sb.slot_id[r->role] = member_slot_id(r->dev.dev.uuid);
	member_identity_record(&r->dev.dev.nvme, &sb.nvme);
	rc = member_write_sb(&r->dev, &sb);
	if (rc == 0)
		rc = member_flush(&r->dev);
	if (rc) {
		atomic_store(&r->failed, true);
		pthread_rwlock_unlock(&r->io_lock);
		free(img);
		graid__log(GRAID_LOG_ERR, "replace of member %u: %s did not take its superblock: "
			   "%s; the member keeps its role", r->role, r->dev.dev.path,
			   graid_strerror(rc));
		/*
		 * The write may have landed all the same: the others go one event past it, so
		 * that no crash from here on takes that superblock for the freshest.
		 */
		a->events++;
		array_write_superblocks(a, 0);
		return rc;
	}
	if (a->retired.n < sizeof(a->retired.fd) / sizeof(a->retired.fd[0])) {
		a->retired.fd[a->retired.n] = m->dev.fd;
		a->retired.fault[a->retired.n] = m->dev.fault;
		a->retired.let_go[a->retired.n++] = false;
	} else {
		graid__log(GRAID_LOG_WARNING, "%s: replaced; more replacements than this open "
			   "keeps track of: its descriptor stays open until the process ends",
			   m->dev.path);
	}
	badblocks_adopt(a, r->role, img);
	/* As role_install: fd and fault are read without the lock, each changes in one store. */
	struct member_device d = r->dev.dev;

	d.fd = m->dev.fd;
	d.fault = m->dev.fault;
	m->dev = d;
	m->dev.fault = r->dev.dev.fault;
	atomic_thread_fence(memory_order_release);
	m->dev.fd = r->dev.dev.fd;
	m->dev.sb_ours = false;
	r->dev.dev.fd = -1;
	r->dev.dev.fault = NULL;
	r->gone = true;
	atomic_store(&a->replace_role, 0);
	pthread_rwlock_unlock(&r->io_lock);
	member_role_reset(&m->role, member_slot_id(m->dev.uuid));
	/* Where the role's tags are now follows the new device (its copy's metadata: absent). */
	if (a->tags)
		tag_inline_attach(a, r->role);
	badblocks_adopt_report(a, r->role, img);
	free(img);
	array_recount(a);
	array_write_superblocks(a, 0);
	graid__log(GRAID_LOG_NOTICE, "member %u is now %s: replaced in service", r->role,
		   m->dev.path);
	return 0;
}

/*
 * The new device goes: back to the spares where it was one and nothing failed on it, however
 * the copy ended (it stayed recorded as a spare meanwhile).
 */
static void replace_release(struct graid_array *a, struct array_replace *r)
{
	if (r->from_spare && !atomic_load(&r->failed) && a->nspares < GRAID_MAX_SPARES) {
		a->spares[a->nspares++] = r->dev;
		r->dev.dev.fd = -1;
		r->dev.dev.fault = NULL;
		return;
	}
	if (a->pr_key)
		member_pr_release(&r->dev, a->pr_key);
	member_close(&r->dev);
}

/* The copy is over (@p rc): swap, hand over to a rebuild, or stop. */
static int replace_end(struct graid_array *a, struct array_replace *r, int rc)
{
	pthread_mutex_lock(&a->meta_lock);
	if (r->finished) {
		rc = r->error == -ENODEV ? 0 : r->error; /* taken over as a rebuild */
		pthread_mutex_unlock(&a->meta_lock);
		return rc;
	}
	if (rc == 0 && !array_role_alive(a, r->role))
		rc = -ENODEV; /* out between the last batch and here */
	if (rc == -ENODEV && replace_takeover(a, r->role)) {
		pthread_mutex_unlock(&a->meta_lock);
		return 0;
	}
	pthread_mutex_lock(&r->lost_lock);
	if (rc == 0 && r->nlost > REPLACE_LOST_MAX) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: %u blocks could be read from no "
			   "device, more than a replace records (%u): the member keeps its role "
			   "(a scrub or a rebuild records them all)", r->role, r->nlost,
			   REPLACE_LOST_MAX);
		rc = -ENOSPC;
	}
	pthread_mutex_unlock(&r->lost_lock);
	if (rc == 0)
		rc = replace_swap(a, r);
	if (rc == 0) {
		array_event(a, GRAID_EVENT_REBUILD_DONE, (int)r->role, 0, 0, 0);
	} else {
		replace_detach(a, r);
		if (rc != -ECANCELED)
			graid__log(GRAID_LOG_ERR, "replace of member %u stopped: %s; the member "
				   "keeps its role", r->role, graid_strerror(rc));
		replace_release(a, r);
		array_event(a, GRAID_EVENT_REBUILD_STOPPED, (int)r->role, rc, 0, 0);
	}
	r->finished = true;
	r->error = rc;
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

static void *replace_thread(void *arg)
{
	struct array_replace *r = arg;

	replace_end(r->a, r, replace_copy(r->a, r));
	atomic_store(&r->thread_exited, true); /* joined under meta_lock from here on */
	return NULL;
}

/*
 * The device for the copy: @p path prepared, or the last hot spare not in critical health.
 * meta_lock held.
 */
static int replace_take_device(struct graid_array *a, struct array_replace *r, const char *path)
{
	if (path)
		return member_attach(a, &r->dev, path, (int)r->role);
	unsigned k = a->nspares;

	if (a->nspares == 0) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: the array has no hot spare", r->role);
		return -ENOENT;
	}
	/* The last spare whose own drive the health watch does not judge critical. */
	while (k > 0 && array_health_critical(a, a->nmembers + k - 1))
		k--;
	if (k == 0) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: every hot spare's drive is in "
			   "critical health", r->role);
		return -ENOENT;
	}
	k--;
	r->from_spare = true;
	r->dev = a->spares[k];
	a->spares[k] = a->spares[--a->nspares];
	a->spares[a->nspares].dev.fd = -1;
	a->spares[a->nspares].dev.fault = NULL;
	return 0;
}

/*
 * Writers of the role take io_lock shared at each write, without pause: the swap, which
 * takes it exclusive, is to get it at once, not when they happen to be none (glibc's
 * default lets readers pass a waiting writer). No reader takes it twice.
 */
static void replace_locks_init(struct array_replace *r)
{
	pthread_rwlockattr_t at;

	pthread_rwlockattr_init(&at);
	pthread_rwlockattr_setkind_np(&at, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r->io_lock, &at);
	pthread_rwlockattr_destroy(&at);
	pthread_mutex_init(&r->lost_lock, NULL);
	pthread_cond_init(&r->waited, NULL);
}

/*
 * Take the role's copy onto the device; the copy runs on its own thread unless @p wait.
 * meta_lock held; an ended replace's thread, which only returns once it set finished, is
 * joined first.
 */
static int replace_begin_locked(struct graid_array *a, unsigned idx, const char *path,
				bool wait, struct array_replace **out)
{
	struct array_replace *r, *prev = a->replace;
	int st = atomic_load(&a->members[idx].state), rc;

	/* Its thread may still be on its way out after a takeover ended it. */
	if (prev && (!prev->finished ||
		     (prev->thread_started && !atomic_load(&prev->thread_exited)))) {
		graid__log(GRAID_LOG_ERR, "replace: member %u is being replaced already; one "
			   "replace at a time", prev->role);
		return -EALREADY;
	}
	if (st != GRAID_MEMBER_ACTIVE) {
		graid__log(GRAID_LOG_ERR, "replace: member %u is %s, not active (a failed or "
			   "missing role takes graid_array_replace_member())", idx,
			   member_state_name(st));
		return -EBUSY;
	}
	if (prev && prev->thread_started) {
		pthread_join(prev->thread, NULL);
		prev->thread_started = false;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->a = a;
	r->role = idx;
	r->dev.dev.fd = -1;
	r->total = a->lay.member_bytes;
	replace_locks_init(r);
	rc = replace_take_device(a, r, path);
	if (rc) {
		pthread_rwlock_destroy(&r->io_lock);
		pthread_mutex_destroy(&r->lost_lock);
		pthread_cond_destroy(&r->waited);
		free(r);
		return rc;
	}
	/* Kept until close: a writer may still hold the pointer it loaded (member_replace.c). */
	r->prev = prev;
	a->replace = r;
	atomic_store(&a->replace_role, idx + 1);
	/*
	 * Its journal checkpoint only now that every write of the role reaches it: an entry
	 * logged between an earlier checkpoint and the publication, at or above its tail, would
	 * have no part on it, and a replay after the swap would drop that update.
	 */
	rc = journal_reset_member(a, &r->dev);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "replace of member %u: writing the journal checkpoint "
			   "of %s: %s", idx, r->dev.dev.path, graid_strerror(rc));
		replace_detach(a, r);
		replace_release(a, r);
		r->finished = true;
		r->error = rc;
		return rc;
	}
	graid__log(GRAID_LOG_NOTICE, "member %u (%s): copying onto %s while it stays in service",
		   idx, a->members[idx].dev.path, r->dev.dev.path);
	if (r->from_spare)
		array_event(a, GRAID_EVENT_SPARE_ACTIVATED, (int)idx, 0, 0, 0);
	array_event(a, GRAID_EVENT_REBUILD_STARTED, (int)idx, 0, 0, 0);
	*out = r;
	if (wait)
		return 0;
	rc = pthread_create(&r->thread, NULL, replace_thread, r);
	if (rc == 0) {
		r->thread_started = true;
		return 0;
	}
	replace_detach(a, r);
	replace_release(a, r);
	r->finished = true;
	r->error = -rc;
	array_event(a, GRAID_EVENT_REBUILD_STOPPED, (int)idx, -rc, 0, 0);
	return -rc;
}

void replace_auto(struct graid_array *a, unsigned role)
{
	struct array_replace *r;

	/* Closing: replace_stop() may have passed already, and nothing would join the copy. */
	if (a->nspares == 0 || array_foreign(a) || atomic_load(&a->closing) ||
	    atomic_load(&a->members[role].state) != GRAID_MEMBER_ACTIVE)
		return;
	graid__log(GRAID_LOG_NOTICE, "member %u: drive health critical: replacing it with a hot "
		   "spare while it stays in service", role);
	if (replace_begin_locked(a, role, NULL, false, &r))
		graid__log(GRAID_LOG_WARNING, "member %u: drive health critical, but no replace "
			   "could start (see above)", role);
}

GRAID_API int graid_array_replace_start(struct graid_array *a, unsigned idx, const char *path,
				       unsigned flags)
{
	struct array_replace *r;
	int rc;

	if (!a || idx >= a->nmembers || (flags & ~GRAID_REPLACE_WAIT))
		return -EINVAL;
	if (a->lay.level == 0)
		return -EOPNOTSUPP;
	rc = array_may_change(a);
	if (rc)
		return rc;
	if (array_reshape_holds_jobs(a))
		return -EBUSY;
	pthread_mutex_lock(&a->meta_lock);
	/*
	 * A close on another thread set closing before it stopped the replaces (replace_stop,
	 * under this lock): one begun after that would outlive the handle.
	 */
	if (atomic_load(&a->closing))
		rc = -ECANCELED;
	else if (a->reshape_starting || array_reshape_holds_jobs(a))
		rc = -EBUSY; /* a grow began meanwhile: it checks for a replace under this lock */
	else
		rc = replace_begin_locked(a, idx, path, flags & GRAID_REPLACE_WAIT, &r);
	if (rc == 0 && (flags & GRAID_REPLACE_WAIT))
		r->waiting = true;
	pthread_mutex_unlock(&a->meta_lock);
	if (rc || !(flags & GRAID_REPLACE_WAIT))
		return rc;
	rc = replace_end(a, r, replace_copy(a, r));
	if (rc == 0 && array_foreign(a))
		rc = -ESTALE;
	/* The last touch of the handle: a close waiting for this call may free it now. */
	pthread_mutex_lock(&a->meta_lock);
	r->waiting = false;
	pthread_cond_broadcast(&r->waited);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

void replace_stop(struct graid_array *a)
{
	struct array_replace *r;
	bool join = false;

	pthread_mutex_lock(&a->meta_lock);
	r = a->replace;
	if (r && r->thread_started) {
		atomic_store(&r->stop, true);
		r->thread_started = false;
		join = true;
	}
	/*
	 * A copy run by a GRAID_REPLACE_WAIT caller on another thread (any replace of the
	 * handle, an ended one's caller may still be on its way out): stopped, and waited for
	 * until that call no longer touches the handle, which the close is about to free.
	 */
	for (struct array_replace *w = a->replace; w; w = w->prev) {
		atomic_store(&w->stop, true);
		while (w->waiting)
			pthread_cond_wait(&w->waited, &a->meta_lock);
	}
	pthread_mutex_unlock(&a->meta_lock);
	if (join)
		pthread_join(r->thread, NULL);
}

void replace_free(struct graid_array *a)
{
	struct array_replace *r = a->replace;

	replace_stop(a);
	atomic_store(&a->replace_role, 0);
	a->replace = NULL;
	while (r) {
		struct array_replace *prev = r->prev;

		if (r->dev.dev.fd >= 0 || r->dev.dev.fault)
			member_close(&r->dev);
		pthread_rwlock_destroy(&r->io_lock);
		pthread_mutex_destroy(&r->lost_lock);
		pthread_cond_destroy(&r->waited);
		free(r);
		r = prev;
	}
}

int replace_progress(struct graid_array *a, unsigned role, struct graid_member_info *i)
{
	/*
	 * No meta_lock: event callbacks, sent with it held, may call graid_array_member_info().
	 * A replace is freed only at close; role, total and the path are set before it is
	 * published and never change; done and finished are atomics.
	 */
	struct array_replace *r = atomic_load(&a->replace);

	if (r && !atomic_load(&r->finished) && r->role == role) {
		i->replacing = 1;
		snprintf(i->replace_path, sizeof(i->replace_path), "%s", r->dev.dev.path);
		i->replace_done = atomic_load(&r->done);
		i->replace_total = r->total;
	}
	return 0;
}
