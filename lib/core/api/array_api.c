/* SPDX-License-Identifier: MIT */
/* The synchronous array calls (read, write, discard, write-zeroes), flush, close, info. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/journal.h"
#include "meta/live.h"
#include "member/member_path.h"
#include "io/queue_pool.h"
#include "api/array_life.h"
#include "jobs/reshape_grow.h"
#include "jobs/reshape_progress.h"
#include "jobs/jobs.h"
#include "jobs/replace.h"
#include "member/member_nvme.h"
#include "member/tag_store.h"
#include "meta/array_flush.h"
#include "meta/array_meta.h"
#include "array/stats_count.h"

static ssize_t api_sync_io(struct graid_array *a, uint8_t *buf, size_t len, uint64_t offset,
			   bool write)
{
	int64_t rc = array_sync_request(a, write ? SYNC_WRITE : SYNC_READ, buf, len, offset);

	return rc < 0 ? (ssize_t)rc : (ssize_t)len;
}

GRAID_API ssize_t graid_array_read(struct graid_array *a, void *buf, size_t len,
				   uint64_t offset)
{
	return api_sync_io(a, buf, len, offset, false);
}

GRAID_API ssize_t graid_array_write(struct graid_array *a, const void *buf, size_t len,
				    uint64_t offset)
{
	return api_sync_io(a, (uint8_t *)(uintptr_t)buf, len, offset, true);
}

/* The synchronous calls: one zero request on a pooled queue, as graid_array_write. */
static ssize_t discard_sync(struct graid_array *a, uint64_t offset, uint64_t len, bool discard)
{
	int64_t rc = array_sync_request(a, discard ? SYNC_DISCARD : SYNC_ZEROES, NULL, len, offset);

	return rc < 0 ? (ssize_t)rc : 0;
}

GRAID_API int graid_array_discard(struct graid_array *a, uint64_t offset, uint64_t len)
{
	return (int)discard_sync(a, offset, len, true);
}

GRAID_API int graid_array_write_zeroes(struct graid_array *a, uint64_t offset, uint64_t len)
{
	return (int)discard_sync(a, offset, len, false);
}

GRAID_API int graid_array_flush(struct graid_array *a)
{
	unsigned failed;
	uint64_t start;
	int rc;

	if (!a)
		return -EINVAL;
	start = graid__now_ns();
	rc = array_flush_members(a, &failed);
	if (atomic_load(&a->foreign))
		rc = -ESTALE;
	/* graid.h promises the caller hears of a member that could not make its writes durable. */
	else if (!rc && failed)
		rc = -EIO;
	stats_request(a, GRAID_IO_FLUSH, 0, rc != 0, start);
	return rc;
}

GRAID_API int graid_array_close(struct graid_array *a)
{
	int rc, tags_err;

	if (!a)
		return 0;
	/*
	 * First: a request served meanwhile would change the array under the close. Refused on
	 * the endpoint's own thread (a callback a request ran): the array is in use under it.
	 */
	if (a->control_stop && (rc = a->control_stop(a)) == -EDEADLK)
		return rc;
	/* A background rebuild stops at its next batch; its checkpoint lets it resume. */
	array_worker_stop(a);
	/* A reshape stops between windows: its record says where, and the next open goes on. */
	reshape_job_stop(a);
	/* A replace in service stops: the member keeps its role (docs/REPLACE.md). */
	replace_stop(a);
	if (a->read_only) {
		array_free(a);
		return 0;
	}
	/* Taken over meanwhile? Then the flush's sweeps and the journal's records are not ours. */
	pthread_mutex_lock(&a->meta_lock);
	array_owner_check(a);
	pthread_mutex_unlock(&a->meta_lock);
	rc = graid_array_flush(a);
	/* Records at the next number: a clean open needs to read only these. */
	if (!atomic_load(&a->foreign) && a->journal && journal_reset(a))
		rc = -EIO;
	/*
	 * Every tag on its member before CLEAN says so: a clean open trusts every tag. Tags that
	 * could not be written leave the array unclean, so the next open resyncs (and the
	 * resync recomputes the tags of the regions the bitmap marks).
	 */
	tags_err = atomic_load(&a->foreign) ? 0 : tag_store_flush(a);
	if (tags_err) {
		graid__log(GRAID_LOG_ERR, "close: writing the checksums' tags: %s; the array is "
					  "left marked unclean", graid_strerror(tags_err));
		rc = -EIO;
	}
	pthread_mutex_lock(&a->meta_lock);
	a->events++;
	/*
	 * A resync after an unclean open that did not finish (it failed; its log says why):
	 * not clean, so that the next open resyncs the regions still marked instead of
	 * dropping their marks as a clean open does.
	 */
	if (tags_err) {
		if (array_write_superblocks(a, 0))
			rc = -EIO;
	} else if (a->bitmap.enabled && atomic_load(&a->bitmap.resync_from) != UINT64_MAX) {
		graid__log(GRAID_LOG_WARNING, "close: the resync did not finish; the array is left "
					      "marked unclean, and the next open resyncs it");
		if (array_write_superblocks(a, 0))
			rc = -EIO;
	} else if (array_write_superblocks(a, GRAID_SB_F_CLEAN)) {
		rc = -EIO;
	}
	pthread_mutex_unlock(&a->meta_lock);
	/* Taken over by another host: nothing was written at close; the records are its own. */
	if (atomic_load(&a->foreign))
		rc = -ESTALE;
	array_free(a);
	return rc;
}

GRAID_API int graid_array_info(struct graid_array *a, struct graid_array_info *info)
{
	struct graid_array_info i = { .struct_size = sizeof(i) };
	size_t want;

	/* Callers built before the journal fields pass a shorter struct: fill what they have. */
	if (!a || !info || info->struct_size < offsetof(struct graid_array_info, journal_bytes))
		return -EINVAL;
	want = info->struct_size < sizeof(i) ? info->struct_size : sizeof(i);
	/* Before the size: a reshape told as over (its routing gone) has its new size. */
	reshape_progress_info(a, &i);
	i.size = array_size(a); /* the old size until a reshape is done */
	i.block_size = a->block_size;
	i.level = a->lay.level;
	i.chunk_bytes = a->lay.chunk;
	i.nmembers = a->nmembers;
	snprintf(i.engine, sizeof(i.engine), "%s", a->be ? graid_backend_name(a->be) : "none");
	memcpy(i.uuid, a->uuid, 16);
	pthread_mutex_lock(&a->meta_lock);
	i.events = a->events;
	pthread_mutex_unlock(&a->meta_lock);
	/*
	 * Counted from the states reported beside it, as events reckon them: a->nfailed is
	 * recounted under meta_lock a moment after a state changes, so a query right after an
	 * OPTIMAL event could still have said one role out.
	 */
	i.nfailed = 0;
	for (unsigned r = 0; r < a->nmembers; r++) {
		i.member_state[r] = (uint8_t)atomic_load(&a->members[r].state);
		i.nfailed += i.member_state[r] != GRAID_MEMBER_ACTIVE;
	}
	if (a->view.valid) {
		/* A read-only look at an array in use: the holder's view, not the superblocks'. */
		i.nfailed = 0;
		for (unsigned r = 0; r < a->nmembers; r++) {
			i.member_state[r] = (uint8_t)a->view.role[r].state;
			i.nfailed += i.member_state[r] != GRAID_MEMBER_ACTIVE;
		}
	}
	i.journal_bytes = a->journal ? a->log_area.bytes : 0;
	i.journal_replayed = a->journal_replayed;
	i.used_bytes = live_used_bytes(a);
	i.owner_epoch = a->owner.epoch;
	snprintf(i.owner_host, sizeof(i.owner_host), "%s", a->owner.host);
	if (a->read_only) {
		i.unclean = a->unclean;
		if (a->holder.pid) {
			i.holder_pid = a->holder.pid;
			owner_describe(&a->holder, i.holder, sizeof(i.holder));
		}
	} else {
		/* Its own resync after an unclean open, still under way (in the background). */
		i.unclean = a->bitmap.enabled &&
			    atomic_load(&a->bitmap.resync_from) != UINT64_MAX;
		i.holder_pid = a->owner.pid;
		owner_describe(&a->owner, i.holder, sizeof(i.holder));
		i.rebuild_running = atomic_load(&a->rebuild_bg_running);
		i.rebuild_error = atomic_load(&a->rebuild_bg_error);
	}
	i.resync_regions = a->bitmap.enabled ? bitmap_dirty_regions(a) : 0;
	i.checksums = a->csum;
	i.struct_size = want;
	memcpy(info, &i, want);
	return 0;
}

/*
 * A read-only look at an array in use reports the role as its holder sees it. A member the
 * look could not open itself (an unreachable one) is described by the holder's path and
 * its controllers' state read now from sysfs.
 */
static void member_info_from_view(struct graid_member_info *i, const struct array_holder_role *hr,
				  bool opened)
{
	struct member_paths p;

	i->state = hr->state;
	i->catchup_done = hr->copied;
	i->catchup_total = hr->total;
	i->outages = hr->outages;
	if (opened || !hr->path[0])
		return;
	snprintf(i->path, sizeof(i->path), "%s", hr->path);
	if (!hr->ctrl[0])
		return;
	member_paths_read_names(hr->blk, hr->ctrl, hr->passthru, &p);
	i->nvme = 1;
	i->nvme_passthrough = hr->passthru;
	snprintf(i->nvme_ctrl, sizeof(i->nvme_ctrl), "%s", p.ctrl[0] ? p.ctrl : hr->ctrl);
	snprintf(i->nvme_transport, sizeof(i->nvme_transport), "%.7s", p.transport);
	snprintf(i->nvme_address, sizeof(i->nvme_address), "%s", p.address);
	snprintf(i->nvme_ctrl_state, sizeof(i->nvme_ctrl_state), "%s", p.state);
	i->nvme_paths = p.paths;
	i->nvme_paths_live = p.live;
}

GRAID_API int graid_array_member_info(struct graid_array *a, unsigned idx,
				      struct graid_member_info *mi)
{
	struct graid_member_info i = { .struct_size = sizeof(i) };
	const size_t min = offsetof(struct graid_member_info, errors) + sizeof(i.errors);
	struct member *m;

	if (!a || !mi || idx >= a->nmembers + a->nspares || mi->struct_size < min)
		return -EINVAL;
	m = idx < a->nmembers ? &a->members[idx] : &a->spares[idx - a->nmembers];
	i.role = idx;
	i.state = atomic_load(&m->state);
	snprintf(i.path, sizeof(i.path), "%s", m->dev.path);
	snprintf(i.identity, sizeof(i.identity), "%s", m->dev.identity);
	i.direct_io = m->dev.direct;
	i.reads = atomic_load(&m->role.reads);
	i.writes = atomic_load(&m->role.writes);
	i.read_bytes = atomic_load(&m->role.read_bytes);
	i.write_bytes = atomic_load(&m->role.write_bytes);
	i.errors = atomic_load(&m->role.errors);
	member_nvme_info(&m->dev.nvme, &i);
	if (i.state != GRAID_MEMBER_MISSING && i.state != GRAID_MEMBER_SPARE) {
		struct member_paths p;

		member_paths_read(m, &p);
		snprintf(i.nvme_transport, sizeof(i.nvme_transport), "%.7s", p.transport);
		snprintf(i.nvme_address, sizeof(i.nvme_address), "%s", p.address);
		snprintf(i.nvme_ctrl_state, sizeof(i.nvme_ctrl_state), "%s", p.state);
		i.nvme_paths = p.paths;
		i.nvme_paths_live = p.live;
	}
	i.catchup_done = atomic_load(&m->role.copied);
	i.catchup_total = atomic_load(&m->role.copy_total);
	i.outages = atomic_load(&m->role.outages);
	i.timeouts = atomic_load(&m->timeouts);
	i.late_ios = atomic_load(&m->late_ios);
	i.bad_blocks = idx < a->nmembers ? badblocks_units(a, idx) : 0;
	i.read_repaired = atomic_load(&m->role.readerr_repaired);
	i.checksum_errors = atomic_load(&m->role.csum_errors);
	i.checksum_tag_errors = atomic_load(&m->role.csum_tag_errors);
	i.checksum_lost_writes = atomic_load(&m->role.csum_lost_writes);
	if (idx < a->nmembers && !a->read_only)
		replace_progress(a, idx, &i);
	if (a->view.valid && idx < a->nmembers)
		member_info_from_view(&i, &a->view.role[idx], m->dev.fd >= 0);
	/* The struct grows at its end: a caller's older, shorter one gets what it has room for. */
	i.struct_size = mi->struct_size < sizeof(i) ? mi->struct_size : sizeof(i);
	memcpy(mi, &i, i.struct_size);
	return 0;
}

GRAID_API int graid_array_given_info(struct graid_array *a, unsigned idx,
				     struct graid_given_info *out)
{
	struct graid_given_info i = { .struct_size = sizeof(i), .verdict = GRAID_GIVEN_MEMBER };
	const size_t min = offsetof(struct graid_given_info, why) + sizeof(i.why);

	/* A caller built before fields were appended after why gets what it has room for. */
	if (!a || !out || out->struct_size < min)
		return -EINVAL;
	if (a->given) {
		if (idx >= a->ngiven)
			return -EINVAL;
		i = a->given[idx];
	} else if (idx < a->nmembers) {
		/* Made by graid_array_create(): every path given is the member of its role. */
		i.role = (int)idx;
		i.writable = 1;
		pthread_mutex_lock(&a->meta_lock);
		i.events = a->events;
		pthread_mutex_unlock(&a->meta_lock);
	} else {
		return -EINVAL;
	}
	i.struct_size = out->struct_size < sizeof(i) ? out->struct_size : sizeof(i);
	memcpy(out, &i, i.struct_size);
	return 0;
}

GRAID_API int graid_array_set_io_timeout(struct graid_array *a, unsigned ms)
{
	if (!a || ms > GRAID_IO_TIMEOUT_MAX_MS)
		return -EINVAL;
	atomic_store(&a->io_timeout_ns, (uint64_t)ms * 1000000u);
	return 0;
}
