/* SPDX-License-Identifier: MIT */
/* An open's members gathered and, for a writable open, the array claimed before any write. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "api/open_claim.h"
#include "api/open_reserve.h"
#include "ownership/array_own.h"
#include "member/member.h"
#include "meta/reshape_rec.h"
#include "jobs/reshape_grow.h"

/* How long a takeover waits after fencing: past two of the old owner's looks (worker.c). */
#define OPEN_FENCE_WAIT_NS (2500ull * 1000 * 1000)

/*
 * No member given is usable: say whether that is for want of a superblock, or because a
 * writable open could open none of those that have one for writing (a look could).
 */
static int open_none_usable(const struct assembly *as)
{
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].verdict == GRAID_GIVEN_NOT_WRITABLE && as->c[i].has_sb) {
			graid__log(GRAID_LOG_ERR, "open: no member could be opened for writing (%s "
						  "is not writable: %s); a read-only open can look",
				   as->c[i].m.dev.path, graid_strerror(as->c[i].error));
			return as->c[i].error;
		}
	graid__log(GRAID_LOG_ERR, "open: no member carries a valid libgraid superblock");
	return -EINVAL;
}

/*
 * A reshape recorded: its position and both geometries are in the reshape record, and
 * reading either geometry alone would return wrong bytes. A RAID-0 growing (what this build
 * resumes: reshape_grow_resumable) is kept in @p as for the open to route by position and
 * go on; every other one is refused at every open, a look included, before anything is
 * written (docs/RESHAPE.md). The log says where the record says the reshape stands; a
 * superblock that says reshaping with no valid record matching it on any current member is
 * damaged (docs/FORMAT.md), refused too.
 */
static int open_refuse_reshape(struct assembly *as)
{
	struct member *m[GRAID_SB_MAX_MEMBERS];
	struct reshape_record rec;
	const char *why = NULL;
	char uuid[37], state[256];
	unsigned n = 0;
	int rc;

	if (!as->fresh || !sb_reshape_recorded(as->fresh))
		return 0;
	sb_uuid_format(as->fresh->array_uuid, uuid);
	/* The layout's roles only: records go to no spare, so a spare's copy is a stale one. */
	for (unsigned i = 0; i < as->n && n < GRAID_SB_MAX_MEMBERS; i++)
		if (as->c[i].valid && as->c[i].join == JOIN_CURRENT &&
		    as->c[i].sb.role < as->fresh->nmembers)
			m[n++] = &as->c[i].m;
	rc = reshape_rec_read(m, n, as->fresh, &rec, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		graid__log(GRAID_LOG_ERR, "open: array %s: reshape in progress, this build "
					  "cannot resume it, and its superblocks record a reshape "
					  "to RAID-%d of %u members but no valid record was found "
					  "(%s): the array is damaged; nothing was written",
			   uuid, as->fresh->level, as->fresh->nmembers, why);
		return -EOPNOTSUPP;
	}
	reshape_rec_describe(&rec, state, sizeof(state));
	/* Members that missed the round that started it hold the old geometry, at position 0. */
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid && as->c[i].join == JOIN_CURRENT &&
		    as->c[i].sb.nmembers != as->fresh->nmembers &&
		    (as->c[i].sb.nmembers != rec.old_geo.nmembers || rec.position != 0 ||
		     rec.phase == RESHAPE_PHASE_STAGED)) {
			graid__log(GRAID_LOG_ERR, "open: array %s: %s has a superblock of %u "
						  "members, which is neither geometry of the reshape "
						  "(%s); nothing was written", uuid, as->c[i].m.dev.path,
				   as->c[i].sb.nmembers, state);
			return -EOPNOTSUPP;
		}
	if (reshape_grow_resumable(&rec, as->fresh->flags & GRAID_SB_F_CHECKSUMS)) {
		/* A RAID-0 growing: served by position, and a writable open goes on moving. */
		graid__log(GRAID_LOG_NOTICE, "open: array %s: reshape in progress (%s): resumed",
			   uuid, state);
		as->reshape = true;
		as->reshape_rec = rec;
		return 0;
	}
	graid__log(GRAID_LOG_ERR, "open: array %s: reshape in progress, this build cannot resume "
				  "it (%s); open it with a libgraid that can; nothing was written",
		   uuid, state);
	return -EOPNOTSUPP;
}

/*
 * The lease, before anything is written (a takeover's fence too): held by this open from
 * here on, or -EBUSY naming the host that holds it and the superblocks' last owner.
 */
static int open_lease(const struct assembly *as, const char *spec, struct array_lease **out)
{
	char holder[160] = "", who[192];
	int rc = lease_open(spec, as->fresh->array_uuid, out);

	if (rc)
		return rc;
	rc = lease_acquire(*out, holder, sizeof(holder));
	if (rc == -EBUSY) {
		owner_describe(&as->fresh->owner, who, sizeof(who));
		graid__log(GRAID_LOG_ERR, "open: the array's lease (%s) is held by %s; the "
					  "superblocks' last writable owner is %s, owner epoch %llu; "
					  "nothing was written", spec, holder, who,
			   (unsigned long long)as->fresh->owner.epoch);
	}
	if (rc) {
		lease_close(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * Whose array it is (docs/REMOTE.md, "A second host"): the freshest superblock's owner
 * record. Another host's is refused unless @p takeover, which raises the owner epoch; the
 * old owner sees the higher epoch on the members and stops. *@p epoch: this open's.
 */
static int open_owner(const struct assembly *as, bool takeover, uint64_t *epoch,
		      bool *took_over)
{
	const struct superblock *fresh = as->fresh;
	const struct sb_owner *rec = &fresh->owner;
	struct sb_owner me;
	uint64_t top = 0;
	char who[192];

	*took_over = false;
	owner_self(&me);
	/* The highest epoch any member of the array shows: a takeover goes past all of them. */
	for (unsigned i = 0; i < as->n; i++)
		if (as->c[i].valid && !memcmp(as->c[i].sb.array_uuid, fresh->array_uuid, 16) &&
		    as->c[i].sb.owner.epoch > top)
			top = as->c[i].sb.owner.epoch;
	*epoch = rec->epoch ? rec->epoch : 1; /* written before owner epochs: the first */
	if (top > *epoch)
		*epoch = top;
	if (!rec->pid || owner_same_host(rec, &me))
		return 0;
	owner_describe(rec, who, sizeof(who));
	if (!takeover) {
		graid__log(GRAID_LOG_ERR, "open: the array belongs to another host: last opened "
					  "writable by %s, owner epoch %llu, %s; nothing was written. "
					  "Take it over (GRAID_OPEN_TAKEOVER, graidctl assemble "
					  "--takeover) only when that host is down or has let go",
			   who, (unsigned long long)*epoch,
			   fresh->flags & GRAID_SB_F_CLEAN ? "closed cleanly there"
							   : "not closed there (it may still be "
							     "writing)");
		return -EBUSY;
	}
	graid__log(GRAID_LOG_NOTICE, "open: taking the array over from %s (%s): owner epoch "
				     "%llu -> %llu", who,
		   fresh->flags & GRAID_SB_F_CLEAN ? "closed cleanly" : "not closed cleanly",
		   (unsigned long long)*epoch, (unsigned long long)(*epoch + 1));
	(*epoch)++;
	*took_over = true;
	return 0;
}

/*
 * A takeover's first write: this host's record, at the new epoch, into the superblock of
 * every member of the array the assembly holds, and nothing else; then a wait in which a
 * live old owner reads it and stops. The open then assembles again from what the members
 * say after that wait (the old owner may have changed them meanwhile): only then does it
 * replay, resync or rewrite anything of the array's.
 */
static int open_fence(const struct assembly *as, uint64_t epoch)
{
	const uint8_t *uuid = as->fresh->array_uuid;
	struct sb_owner me;
	unsigned done = 0;

	owner_self(&me);
	me.epoch = epoch;
	for (unsigned i = 0; i < as->n; i++) {
		struct member *m = &as->c[i].m;
		struct superblock sb;

		if (!as->c[i].valid || m->dev.fd < 0 || member_read_sb(m, &sb) ||
		    memcmp(sb.array_uuid, uuid, 16))
			continue;
		sb.owner = me;
		if (member_write_sb(m, &sb) == 0)
			done++;
	}
	if (!done) {
		graid__log(GRAID_LOG_ERR, "open: takeover: no member took this host's owner record");
		return -EIO;
	}
	graid__log(GRAID_LOG_NOTICE, "open: takeover: owner record (epoch %llu) on %u members; "
				     "waiting %llu ms for the old owner to see it",
		   (unsigned long long)epoch, done, OPEN_FENCE_WAIT_NS / 1000000);
	nanosleep(&(struct timespec){ .tv_sec = (time_t)(OPEN_FENCE_WAIT_NS / 1000000000ull),
				      .tv_nsec = (long)(OPEN_FENCE_WAIT_NS % 1000000000ull) },
		  NULL);
	return 0;
}

/*
 * A writable open's claim on the array it assembled: the lease, the owner epoch (refusing
 * another host's array unless @p flags has GRAID_OPEN_TAKEOVER) and the reservations.
 * *@p took_over: this assembly still shows another host as the owner, and the fence is
 * still to be written.
 */
static int open_claim_owner(const struct assembly *as, unsigned flags, const char *lease_spec,
			    struct open_claim *cl, bool *took_over)
{
	int rc;

	/* Another host's array: not without a takeover, and before anything is written. */
	if (lease_spec && !cl->lease) {
		rc = open_lease(as, lease_spec, &cl->lease);
		if (rc)
			return rc;
	}
	rc = open_owner(as, flags & GRAID_OPEN_TAKEOVER, &cl->epoch, took_over);
	if (rc == 0 && *took_over && cl->fenced) {
		/* Fenced, waited, assembled again: and another owner's record is back. */
		graid__log(GRAID_LOG_ERR, "open: takeover: the old owner is still writing (its "
					  "record came back after this host's); not taken over");
		rc = -EBUSY;
	}
	if (rc)
		return rc;
	/* The drives' own fence, before the first write (the takeover's record too). */
	if ((flags & GRAID_OPEN_RESERVE) || cl->lease || *took_over || cl->fenced) {
		struct sb_owner me;

		owner_self(&me);
		cl->pr_key = me.host_id;
		rc = open_reserve(as, cl->pr_key, flags & GRAID_OPEN_RESERVE);
	}
	return rc;
}

int open_assemble_claimed(struct assembly *as, const char *const *members, unsigned n,
			  unsigned flags, const char *lease_spec, struct open_claim *cl)
{
	bool read_only = flags & GRAID_OPEN_READ_ONLY, took_over = false;
	int rc;

	for (;;) {
		rc = assemble_gather(as, members, n, !read_only);
		if (rc == 0 && as->pick < 0)
			rc = open_none_usable(as);
		if (rc)
			return rc;
		rc = assemble_filter(as);
		if (rc == 0)
			rc = open_refuse_reshape(as);
		if (rc || read_only)
			return rc;
		rc = open_claim_owner(as, flags, lease_spec, cl, &took_over);
		if (rc || !took_over)
			return rc;
		rc = open_fence(as, cl->epoch);
		if (rc)
			return rc;
		/* What the members say after the wait: the old owner may have changed them. */
		cl->fenced = true;
		assemble_release(as);
		*as = (struct assembly){ .lock = { .fd = -1 } };
	}
}
