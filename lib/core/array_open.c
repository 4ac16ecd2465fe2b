/* SPDX-License-Identifier: MIT */
/* graid_array_open(): assemble an array from its members' superblocks, trusting nothing stale. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "journal.h"

struct open_candidate {
	struct member m;
	struct graid_sb sb;
	bool valid;
};

/* The array to assemble: the UUID most members carry; among equals, the freshest. */
static int open_pick_array(struct open_candidate *c, unsigned n)
{
	int best = -1;
	unsigned best_count = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned count = 0;

		if (!c[i].valid)
			continue;
		for (unsigned j = 0; j < n; j++)
			count += c[j].valid && !memcmp(c[j].sb.array_uuid, c[i].sb.array_uuid, 16);
		if (best < 0 || count > best_count ||
		    (count == best_count && c[i].sb.events > c[best].sb.events)) {
			best = (int)i;
			best_count = count;
		}
	}
	return best;
}

static void open_leave_out(struct open_candidate *c, const char *why)
{
	graid__log(GRAID_LOG_WARNING, "open: leaving out %s: %s", c->m.path, why);
	c->valid = false;
}

/* Read every candidate's superblock; nothing is written here. */
static int open_read_candidates(struct open_candidate *c, const char *const *paths, unsigned n,
				bool exclusive, unsigned *busy)
{
	for (unsigned i = 0; i < n; i++) {
		int rc;

		c[i].m.fd = -1;
		if (!paths[i])
			return -EINVAL;
		rc = member_open(&c[i].m, paths[i], exclusive);
		*busy += rc == -EBUSY;
		if (rc) {
			graid__log(GRAID_LOG_WARNING, "open: %s: %s", paths[i], graid_strerror(rc));
			continue;
		}
		rc = member_read_sb(&c[i].m, &c[i].sb);
		if (rc == 0) {
			c[i].valid = true;
		} else {
			const char *why = rc == -EINVAL	   ? "no libgraid superblock"
					  : rc == -EBADMSG ? "superblock checksum is wrong (corrupt)"
							   : "superblock fields are invalid";

			snprintf(c[i].m.identity, sizeof(c[i].m.identity), "%s", why);
			open_leave_out(&c[i], why);
		}
	}
	return 0;
}

/* Keep only members of the chosen array that agree with its freshest superblock. */
static const struct graid_sb *open_filter(struct open_candidate *c, unsigned n, int pick)
{
	const struct graid_sb *fresh = &c[pick].sb;
	uint8_t uuid[16];

	memcpy(uuid, c[pick].sb.array_uuid, 16);
	for (unsigned i = 0; i < n; i++)
		if (c[i].valid && !memcmp(c[i].sb.array_uuid, uuid, 16) &&
		    c[i].sb.events > fresh->events)
			fresh = &c[i].sb;
	for (unsigned i = 0; i < n; i++) {
		struct graid_sb *sb = &c[i].sb;

		if (!c[i].valid)
			continue;
		if (memcmp(sb->array_uuid, uuid, 16))
			open_leave_out(&c[i], "member of another array");
		else if (sb->level != fresh->level || sb->chunk_bytes != fresh->chunk_bytes ||
			 sb->nmembers != fresh->nmembers || sb->data_offset != fresh->data_offset ||
			 sb->data_bytes != fresh->data_bytes ||
			 (sb->role >= fresh->nmembers &&
			  fresh->member_state[sb->role] != GRAID_MEMBER_SPARE))
			open_leave_out(&c[i], "superblock disagrees with the array's geometry");
		else if (sb->events + 1 < fresh->events)
			/*
			 * One behind is a superblock update cut short (every update is written to
			 * all live members before the next starts): its data is as fresh as the
			 * others', and the freshest superblock's member states say whether it is
			 * still in. Two behind means it missed an update meant for it.
			 */
			open_leave_out(&c[i], "stale (older event count)");
		else if (fresh->member_state[sb->role] != GRAID_MEMBER_ACTIVE &&
			 fresh->member_state[sb->role] != GRAID_MEMBER_REBUILDING &&
			 fresh->member_state[sb->role] != GRAID_MEMBER_SPARE)
			open_leave_out(&c[i], "marked failed by the other members");
		else if (c[i].m.size < sb->data_offset + sb->data_bytes)
			open_leave_out(&c[i], "smaller than its superblock says");
		for (unsigned j = 0; j < i && c[i].valid; j++)
			if (c[j].valid && c[j].sb.role == sb->role)
				open_leave_out(&c[i], "its role is taken by another member given");
		for (unsigned j = 0; j < i && c[i].valid; j++)
			if (c[j].m.fd >= 0 && c[j].m.dev == c[i].m.dev && c[j].m.ino == c[i].m.ino)
				open_leave_out(&c[i], "given twice");
	}
	return fresh;
}

GRAID_API int graid_array_open(const char *const *members, unsigned nmembers,
			       const struct graid_open_options *opts, struct graid_array **out)
{
	uint8_t state[GRAID_MAX_MEMBERS];
	struct open_candidate *c;
	const struct graid_sb *fresh;
	struct graid_array *a = NULL;
	bool read_only;
	unsigned busy = 0;
	int pick, rc;

	if (!members || !out || nmembers == 0 || nmembers > GRAID_MAX_MEMBERS ||
	    (opts && opts->struct_size < offsetof(struct graid_open_options, backend) +
						 sizeof(opts->backend)) ||
	    (opts && opts->struct_size >= offsetof(struct graid_open_options, flags) +
						  sizeof(opts->flags) &&
	     (opts->flags & ~(GRAID_OPEN_RESYNC_BACKGROUND | GRAID_OPEN_READ_ONLY))))
		return -EINVAL;
	read_only = opts && opts->struct_size >= offsetof(struct graid_open_options, flags) +
							 sizeof(opts->flags) &&
		    (opts->flags & GRAID_OPEN_READ_ONLY);
	c = calloc(nmembers, sizeof(*c));
	if (!c)
		return -ENOMEM;
	rc = open_read_candidates(c, members, nmembers, !read_only, &busy);
	pick = rc ? -1 : open_pick_array(c, nmembers);
	if (pick < 0) {
		graid__log(GRAID_LOG_ERR, "open: %s", busy ? "members are held by another open array"
						   : "no member carries a valid libgraid superblock");
		rc = rc ? rc : (busy ? -EBUSY : -EINVAL);
		goto out;
	}
	fresh = open_filter(c, nmembers, pick);
	a = array_alloc(fresh->nmembers);
	rc = a ? graid_layout_init(&a->lay, fresh->level, fresh->nmembers, fresh->chunk_bytes,
				   fresh->data_bytes)
	       : -ENOMEM;
	if (rc)
		goto out;
	for (unsigned i = 0; i < nmembers; i++) {
		struct member *m;

		if (!c[i].valid)
			continue;
		if (c[i].sb.role >= fresh->nmembers) {
			if (a->nspares == GRAID_MAX_SPARES)
				continue;
			m = &a->spares[a->nspares++];
		} else {
			m = &a->members[c[i].sb.role];
		}
		*m = c[i].m;
		memcpy(m->uuid, c[i].sb.member_uuid, 16);
		if (c[i].sb.role >= fresh->nmembers) {
			atomic_init(&m->state, GRAID_MEMBER_SPARE);
		} else if (fresh->member_state[c[i].sb.role] == GRAID_MEMBER_REBUILDING) {
			/* Resume where the checkpoint says; its own superblock holds it. */
			atomic_init(&m->state, GRAID_MEMBER_REBUILDING);
			m->rebuild_offset = c[i].sb.rebuild_offset;
		} else {
			atomic_init(&m->state, GRAID_MEMBER_ACTIVE);
		}
		c[i].m.fd = -1; /* now owned by the array */
		c[i].m.fault = NULL;
	}
	for (unsigned r = 0; r < a->nmembers; r++)
		state[r] = (uint8_t)atomic_load(&a->members[r].state);
	if (!array_roles_survivable(a, state)) {
		unsigned present = 0;

		for (unsigned r = 0; r < a->nmembers; r++)
			present += state[r] == GRAID_MEMBER_ACTIVE;
		graid__log(GRAID_LOG_ERR, "open: only %u of %u members usable; RAID-%d cannot be "
					  "assembled (nothing was written)", present, a->nmembers,
			   a->lay.level);
		rc = busy ? -EBUSY : -EIO;
		goto out;
	}
	rc = array_open_engine(a, opts ? opts->backend : NULL);
	if (rc)
		goto out;
	memcpy(a->uuid, fresh->array_uuid, 16);
	a->block_size = fresh->block_size;
	a->data_offset = fresh->data_offset;
	a->ctime = fresh->ctime;
	rc = bitmap_init(a, fresh->bitmap_offset, fresh->bitmap_bytes);
	if (rc == 0 && !(fresh->flags & GRAID_SB_F_CLEAN))
		rc = bitmap_load(a);
	if (rc == 0 && fresh->log_bytes)
		rc = journal_init(a, fresh->log_offset, fresh->log_bytes);
	if (rc)
		goto out;
	a->read_only = read_only;
	if (read_only && a->journal && !(fresh->flags & GRAID_SB_F_CLEAN))
		graid__log(GRAID_LOG_WARNING, "open: read-only after an unclean shutdown: the "
					      "journal is not replayed, degraded reads of stripes being "
					      "written at the crash may be wrong until a writable open");
	if (read_only) {
		/* Look, don't touch: no event, no resync, no spare takeover. */
		a->events = fresh->events;
		array_recount(a);
		*out = a;
		a = NULL;
		goto out;
	}
	/* Open marks the array in use (not clean) with a new event: a crash leaves that mark. */
	a->events = fresh->events + 1;
	/* Before anything else writes (a spare's rebuild too): settle what a crash cut short. */
	if (a->journal)
		rc = journal_recover(a, fresh->flags & GRAID_SB_F_CLEAN, &a->journal_replayed);
	if (rc)
		goto out;
	pthread_mutex_lock(&a->meta_lock);
	array_recount(a);
	rc = array_write_superblocks(a, 0);
	if (rc == 0 && a->nspares)
		rc = array_spare_thread_start(a);
	for (unsigned r = 0; rc == 0 && r < a->nmembers && a->nspares; r++)
		array_spare_takeover(a, r);
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		goto out;
	if (atomic_load(&a->nfailed))
		graid__log(GRAID_LOG_WARNING, "open: RAID-%d running degraded, %u of %u members "
					      "missing or failed", a->lay.level,
			   atomic_load(&a->nfailed), a->nmembers);
	if (rc == 0 && (fresh->flags & GRAID_SB_F_CLEAN)) {
		rc = bitmap_write_all(a); /* clean: marks left by lazy clearing mean nothing */
	} else if (rc == 0 && bitmap_dirty_regions(a)) {
		graid__log(GRAID_LOG_NOTICE, "open: not closed cleanly; %llu dirty regions to resync",
			   (unsigned long long)bitmap_dirty_regions(a));
		if (opts && opts->struct_size >= offsetof(struct graid_open_options, flags) +
							 sizeof(opts->flags) &&
		    (opts->flags & GRAID_OPEN_RESYNC_BACKGROUND)) {
			pthread_mutex_lock(&a->meta_lock);
			a->resync_background = true;
			rc = array_spare_thread_start(a);
			pthread_cond_signal(&a->spare_cond);
			pthread_mutex_unlock(&a->meta_lock);
		} else {
			rc = array_resync(a);
			if (rc == 0)
				rc = graid_array_flush(a);
		}
	}
	if (rc)
		goto out;
	*out = a;
	a = NULL;
out:
	for (unsigned i = 0; i < nmembers; i++)
		member_close(&c[i].m);
	array_free(a);
	free(c);
	return rc;
}
