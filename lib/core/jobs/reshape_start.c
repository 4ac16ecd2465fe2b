/* SPDX-License-Identifier: MIT */
/*
 * The start of a reshape (docs/RESHAPE.md, "RAID-0 growing, as built", the start): the
 * checks before anything is opened, the new devices attached and checked, the first record
 * to them and then to every member, the roles installed and the routing set under
 * meta_lock, the added roles' superblocks and the round that records the reshape; a grow
 * (RAID-0, 5, 6, 10) or a RAID-5's conversion to RAID-6 Q-last.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "jobs/reshape_csum.h"
#include "jobs/reshape_grow.h"
#include "jobs/reshape_grow10.h"
#include "jobs/reshape_job.h"
#include "jobs/reshape_qlast.h"
#include "member/member_pr.h"
#include "meta/array_meta.h"
#include "meta/badblocks.h"

/* ---- the start ----------------------------------------------------------------------- */

/* What must hold before anything is opened; meta_lock held. */
static int grow_check(struct graid_array *a, unsigned n)
{
	struct superblock sb;
	const char *busy;
	int rc;

	/*
	 * A job whose reshape is over (its routing gone, as graid_array_info() tells) may
	 * still be telling its end: not a refusal, the start below joins it.
	 */
	if (atomic_load(&a->reshape) || a->reshape_starting) {
		graid__log(GRAID_LOG_ERR, "grow: a reshape of this array is under way already");
		return -EBUSY;
	}
	/*
	 * Jobs that place rows by a->lay alone, started before: a scrub, a replace in service,
	 * the resync after an unclean open (pending or running). They check for a reshape only
	 * when they begin (scrub.c, replace.c re-check under meta_lock after they count
	 * themselves in), so a grow starting under them would have them compare, repair or copy
	 * rows the job has moved (found by review: a repairing scrub overwrote a RAID-10 copy).
	 */
	if ((busy = array_row_job_running(a))) {
		graid__log(GRAID_LOG_ERR, "grow: %s of this array is under way; grow once it has "
					  "ended", busy);
		return -EBUSY;
	}
	if (a->nmembers + n > a->member_cap) {
		graid__log(GRAID_LOG_ERR, "grow: this open has room for %u more members, not %u; "
					  "close the array and open it again to add more",
			   a->member_cap - a->nmembers, n);
		return -E2BIG;
	}
	if (a->lay.nparity && a->csum && !grow_csum_allowed()) {
		graid__log(GRAID_LOG_ERR, "grow: a RAID-%d with checksums cannot be grown online by "
					  "this build (GROW_CSUM_BUILT is 0 in it: docs/RESHAPE.md, "
					  "\"Checksums across a grow\")", a->lay.level);
		return -EOPNOTSUPP;
	}
	rc = grow10_check(a, a->nmembers + n);
	if (rc)
		return rc;
	for (unsigned r = 0; r < a->nmembers; r++)
		if (!array_role_alive(a, r)) {
			graid__log(GRAID_LOG_ERR, "grow: member %u (%s) is %s: a reshape starts "
						  "only with every member in", r,
				   a->members[r].dev.path,
				   member_state_name(atomic_load(&a->members[r].state)));
			return -EIO;
		}
	array_fill_sb(a, 0, &sb, 0);
	if (!sb_reshape_area_free(&sb)) {
		graid__log(GRAID_LOG_ERR, "grow: the reshape record's area (member bytes [%u, %u)) "
					  "is not free on this array (data at %" PRIu64 ")",
			   GRAID_SB_RESHAPE_OFFSET, GRAID_SB_RESHAPE_OFFSET + GRAID_SB_RESHAPE_BYTES,
			   a->data_offset);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Open and check every new device into @p m; meta_lock held. Nothing is written. */
static int grow_attach(struct graid_array *a, const char *const *paths, unsigned n,
		       struct member *m, unsigned *nopen)
{
	*nopen = 0;
	/*
	 * A device given twice, named before any is opened: once the first is attached (and
	 * locked), the second's open would fail -EBUSY, "in use by another open array".
	 */
	for (unsigned i = 0; i < n; i++) {
		dev_t di, dk;
		ino_t ii, ik;

		if (!paths[i])
			return -EINVAL;
		if (member_identity(paths[i], &di, &ii))
			continue; /* its open says why */
		for (unsigned k = 0; k < i; k++)
			if (!member_identity(paths[k], &dk, &ik) && dk == di && ik == ii) {
				graid__log(GRAID_LOG_ERR, "grow: %s given twice; no member was "
							  "changed", paths[i]);
				return -EEXIST;
			}
	}
	for (unsigned i = 0; i < n; i++) {
		int rc;

		rc = member_attach(a, &m[i], paths[i], (int)(a->nmembers + i));
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: %s refused (%s): no member was changed",
				   paths[i], graid_strerror(rc));
			return rc;
		}
		++*nopen;
		for (unsigned k = 0; k < i; k++)
			if (m[k].dev.devno == m[i].dev.devno && m[k].dev.ino == m[i].dev.ino) {
				graid__log(GRAID_LOG_ERR, "grow: %s given twice; no member was "
							  "changed", paths[i]);
				return -EEXIST;
			}
	}
	return 0;
}

/* The highest generation of this array's record on @p n members @p m (0: none). */
static uint64_t grow_top_generation(struct graid_array *a, struct member *m, unsigned n,
				    uint8_t *buf)
{
	uint64_t top = 0;

	for (unsigned i = 0; i < n; i++) {
		if (m[i].dev.fd < 0 ||
		    member_pio(&m[i], buf, 2 * RESHAPE_COPY_BYTES, GRAID_SB_RESHAPE_OFFSET, false))
			continue;
		for (unsigned b = 0; b < 2; b++) {
			struct reshape_record r;

			if (reshape_decode(buf + b * RESHAPE_COPY_BYTES, &r, NULL) == 0 &&
			    !memcmp(r.array_uuid, a->uuid, 16) && r.generation > top)
				top = r.generation;
		}
	}
	return top;
}

static void grow_record(struct graid_array *a, const struct member *added, unsigned n,
			uint64_t generation, bool to6, struct reshape_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	memcpy(rec->array_uuid, a->uuid, 16);
	rec->generation = generation;
	rec->position = 0;
	rec->phase = RESHAPE_PHASE_COPY;
	rec->direction = RESHAPE_FORWARD;
	rec->old_geo = (struct reshape_geom){ .level = (uint32_t)a->lay.level,
					      .nmembers = a->nmembers,
					      .chunk_bytes = a->lay.chunk,
					      .layout = RESHAPE_LAYOUT_DEFAULT,
					      .data_bytes = a->lay.member_bytes };
	rec->new_geo = rec->old_geo;
	rec->new_geo.nmembers = a->nmembers + n;
	if (to6) /* RAID-5 -> RAID-6 Q-last: the one added member holds Q (reshape_qlast.c) */
		reshape_qlast_geom(&rec->new_geo);
	rec->stage_role[0] = rec->stage_role[1] = RESHAPE_ROLE_NONE;
	rec->nadded = n;
	for (unsigned i = 0; i < n; i++)
		rec->added_id[i] = member_slot_id(added[i].dev.uuid);
}

/*
 * The first record, both blocks, durably: to the new devices first (not in a->members yet:
 * no superblock round may name them before the record is on them), then to every member
 * through reshape_rec_write(). No superblock says RESHAPE yet, so a tear loses nothing.
 */
static int grow_write_first(struct graid_array *a, struct reshape_job *j, struct member *m,
			    unsigned n, uint8_t *buf)
{
	int rc;

	reshape_encode(&j->rec, buf);
	memcpy(buf + RESHAPE_COPY_BYTES, buf, RESHAPE_COPY_BYTES);
	for (unsigned i = 0; i < n; i++) {
		rc = member_write_durable(&m[i], buf, 2 * RESHAPE_COPY_BYTES,
					  GRAID_SB_RESHAPE_OFFSET);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: writing the reshape record to %s: %s",
				   m[i].dev.path, graid_strerror(rc));
			return rc;
		}
	}
	rc = reshape_rec_write(a, &j->io, &j->rec, true);
	if (rc >= 0 && (unsigned)rc < a->nmembers)
		rc = -EIO; /* a member missed it (and was failed): not started */
	return rc < 0 ? rc : 0;
}

/* The new devices into roles old n .. old n + @p n - 1, the routing set; meta_lock held. */
static void grow_install(struct graid_array *a, struct member *m, unsigned n,
			 struct array_reshape *rs, struct reshape_job *j)
{
	unsigned base = a->nmembers;
	struct bbl_image empty; /* about 6 KiB: the caller's thread, not the job's */

	for (unsigned i = 0; i < n; i++) {
		struct member *d = &a->members[base + i];

		memcpy(&d->dev, &m[i].dev, sizeof(d->dev));
		member_role_reset(&d->role, member_slot_id(m[i].dev.uuid));
		/*
		 * RAID-5/6: its log, zeroed on the device (grow56_prep_added), is empty and this
		 * device's own, so that what the job records there (a loss moved to it) names its
		 * owner and is read back at the next open.
		 */
		if (a->lay.level) {
			memset(&empty, 0, sizeof(empty));
			memcpy(empty.member_uuid, m[i].dev.uuid, 16);
			badblocks_adopt(a, base + i, &empty);
		}
		atomic_store(&d->late_ios, 0);
		atomic_store(&d->timeouts, 0);
		atomic_store(&d->state, GRAID_MEMBER_ACTIVE);
	}
	/* Their tags kept before the count shows them (tag_store_add_role cannot fail here). */
	(void)reshape_csum_install(a, base, n);
	rs->prev = a->reshape_mem;
	a->reshape_mem = rs;
	a->reshape_job = j;
	/* The roles are whole before the count shows them (readers look without the lock). */
	atomic_thread_fence(memory_order_release);
	a->nmembers = base + n;
	/* Sequentially consistent: queue_route() counts a plain request, then looks. */
	atomic_store(&a->reshape, rs);
}

/*
 * The added roles' superblocks (recording the reshape, the new member count) at the
 * members' event E, before the round that writes every role's at E + 1. A crash among
 * these leaves every old member at E not reshaping: assembly prefers those among equals
 * (array_assemble.c assemble_freshest) and leaves the added devices out, the old geometry
 * whole at position 0. A crash in the round after leaves some old members at E, which
 * assembly takes as current (assemble_reshape_start_cut), and every added role has its
 * superblock (at E or E + 1: current). meta_lock held.
 */
static int grow_sb_added(struct graid_array *a, unsigned n)
{
	struct superblock sb;

	for (unsigned r = a->nmembers - n; r < a->nmembers; r++) {
		int rc;

		array_fill_sb(a, r, &sb, 0);
		rc = member_write_sb(&a->members[r], &sb);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "grow: writing the superblock of %s: %s",
				   a->members[r].dev.path, graid_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static void grow_close_new(struct graid_array *a, struct member *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (a->pr_key)
			member_pr_release(&m[i], a->pr_key);
		member_close(&m[i]);
	}
}

/*
 * RAID-5/6: how much of the array's start is staged, and where. As little as makes one new
 * row safe at every later position (the least staging: k * k' chunks for one member
 * added); windows then move what is safe up to grow56_limit(), which grows with the
 * position. (the first added role, on
 * the rows past those the new geometry fills), into the first record, phase STAGING.
 * @return 0; -ENOSPC the added member has no room for it (logged); -EINVAL.
 */
static int grow56_plan_stage(struct reshape_record *rec)
{
	struct reshape_map m;
	uint64_t need, room;
	int rc = reshape_map_init(&m, rec);

	if (rc == 0)
		rc = reshape_stage_need(&m, reshape_window_unit(&m), &need);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "grow: no staging makes this reshape safe: %s",
			   graid_strerror(rc));
		return rc;
	}
	if (need == 0)
		return 0;
	room = reshape_stage_room(&m);
	if (need > room) {
		graid__log(GRAID_LOG_ERR, "grow: the first %" PRIu64 " bytes must be staged on the "
					  "added member, which has room for %" PRIu64 " past the "
					  "rows the new geometry fills; members too small to grow "
					  "online", need, room);
		return -ENOSPC;
	}
	rec->phase = RESHAPE_PHASE_STAGING;
	rec->stage_array_off = 0;
	rec->stage_bytes = need;
	rec->stage_role[0] = rec->old_geo.nmembers;
	rec->stage_member_off[0] = m.new_g.lay.member_bytes - room;
	return 0;
}

/*
 * Whether this build grows @p a's level: RAID-0, and RAID-5/6 where switched on; @p to6
 * (a RAID-5 to RAID-6 by @p n members): reshape_qlast_check()'s answer.
 */
static int grow_level_ok(const struct graid_array *a, unsigned n, bool to6)
{
	if (to6)
		return grow56_allowed() ? reshape_qlast_check(a, n) : -EOPNOTSUPP;
	if (reshape_qlast_no_grow(a))
		return -EOPNOTSUPP;
	if (a->lay.level == 0 || ((a->lay.level == 5 || a->lay.level == 6) && grow56_allowed()) ||
	    (a->lay.level == 10 && grow10_allowed()))
		return 0;
	graid__log(GRAID_LOG_ERR, "grow: RAID-%d cannot be grown online by this build; only "
				  "RAID-0%s%s can", a->lay.level, grow56_allowed() ? ", 5, 6" : "",
		   grow10_allowed() ? " and 10" : "");
	return -EOPNOTSUPP;
}

/*
 * The first record (its generation above any copy on the members or the new devices), its
 * staging (RAID-5/6), the job and the routing state: into *@p jp and *@p rsp, which the
 * caller frees on failure. @return 0; -ENOMEM; grow56_plan_stage()'s errors.
 */
static int grow_plan(struct graid_array *a, struct member *m, unsigned n, uint8_t *buf,
		     bool to6, struct reshape_job **jp, struct array_reshape **rsp)
{
	struct reshape_record rec;
	uint64_t top = grow_top_generation(a, a->members, a->nmembers, buf);
	uint64_t top_new = grow_top_generation(a, m, n, buf);
	int rc;

	grow_record(a, m, n, (top > top_new ? top : top_new) + 1, to6, &rec);
	rc = a->lay.nparity ? grow56_plan_stage(&rec) : 0;
	if (rc)
		return rc;
	*jp = grow_job_new(&rec);
	*rsp = *jp ? grow_routing(&rec) : NULL;
	return *rsp ? 0 : -ENOMEM;
}

/* reshape_grow_start(), or with @p to6 reshape_convert_start(): one start, in one order. */
static int grow_start(struct graid_array *a, const char *const *paths, unsigned n, bool wait,
		      bool to6)
{
	struct reshape_job *j = NULL, *done_job, *held = NULL;
	struct array_reshape *rs = NULL;
	struct member *m = NULL;
	uint8_t *buf = NULL;
	unsigned nopen = 0;
	bool starting = false;
	int rc;

	if (!a || !paths || n == 0 || n > GRAID_MAX_MEMBERS)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	rc = grow_level_ok(a, n, to6);
	/* RAID-10: maps too small for the grown chunk count made coarser first (no lock held). */
	if (rc == 0 && !to6)
		rc = grow10_maps_fit(a, a->nmembers + n);
	if (rc)
		return rc;
	m = calloc(n, sizeof(*m));
	buf = aligned_alloc(ARRAY_ALIGN, 2 * RESHAPE_COPY_BYTES);
	if (!m || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&a->meta_lock);
	rc = grow_check(a, n);
	if (rc == 0)
		rc = grow_attach(a, paths, n, m, &nopen);
	/* An earlier grow of this open that ended: its job goes, its routing stays (requests). */
	done_job = rc == 0 ? a->reshape_job : NULL;
	a->reshape_starting = starting = rc == 0;
	pthread_mutex_unlock(&a->meta_lock);
	if (done_job) {
		reshape_job_stop(a);
		grow_job_free(a, done_job);
		a->reshape_job = NULL;
	}
	if (rc)
		goto out;
	rc = grow_plan(a, m, n, buf, to6, &j, &rs);
	if (rc == 0 && a->lay.level)
		rc = grow56_prep_added(a, m, n);
	if (rc == 0)
		rc = grow_write_first(a, j, m, n, buf);
	if (rc)
		goto out;
	pthread_mutex_lock(&a->meta_lock);
	a->reshape_starting = starting = false;
	grow_install(a, m, n, rs, j);
	nopen = 0; /* the array's now */
	rs = NULL;
	array_recount(a); /* the roles added counted, and published for looks */
	/* The added roles' superblocks at the members' event E, then every role's at E + 1. */
	rc = grow_sb_added(a, n);
	a->events++;
	if (rc == 0)
		rc = array_write_superblocks(a, 0);
	if (rc == 0)
		rc = reshape_job_launch(a);
	/*
	 * A caller that waits holds this job before meta_lock goes: a later grow's start (which
	 * frees an ended job) or a close would otherwise free it under the wait.
	 */
	if (rc == 0 && wait) {
		held = j;
		grow_job_hold(held);
	}
	j = NULL;
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		graid__log(GRAID_LOG_ERR, "grow: the superblock round that starts the reshape "
					  "failed: %s; requests go on by the recorded position",
			   graid_strerror(rc));
	else if (to6)
		graid__log(GRAID_LOG_NOTICE, "grow: RAID-5 of %u members becoming a RAID-6 of %u "
					     "(Q on the added member)", a->nmembers - n, a->nmembers);
	else
		graid__log(GRAID_LOG_NOTICE, "grow: RAID-%d of %u members growing to %u",
			   a->lay.level, a->nmembers - n, a->nmembers);
out:
	if (starting) {
		pthread_mutex_lock(&a->meta_lock);
		a->reshape_starting = false;
		pthread_mutex_unlock(&a->meta_lock);
	}
	if (j)
		grow_job_free(a, j);
	free(rs);
	grow_close_new(a, m, nopen);
	free(m);
	free(buf);
	if (held)
		rc = grow_job_wait_held(held);
	return rc;
}

int reshape_grow_start(struct graid_array *a, const char *const *paths, unsigned n, bool wait)
{
	return grow_start(a, paths, n, wait, false);
}

int reshape_convert_start(struct graid_array *a, const char *const *paths, unsigned n,
			  bool wait)
{
	return grow_start(a, paths, n, wait, true);
}
