/* SPDX-License-Identifier: MIT */
/* A writable open's persistent reservations on its members, and their release at close. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "api/open_reserve.h"
#include "member/member_pr.h"

/* A member or spare of the array being assembled, open here. */
static bool reserve_candidate(const struct assembly *as, unsigned i)
{
	const struct open_candidate *c = &as->c[i];

	return c->valid && c->m.dev.fd >= 0 && !memcmp(c->sb.array_uuid, as->fresh->array_uuid, 16);
}

/*
 * The keys an old owner may hold the members with: every host its owner records name,
 * highest epoch first; this host's @p key and unknown hosts (0) left out.
 */
static unsigned reserve_victims(const struct assembly *as, uint64_t key, uint64_t *out,
				uint64_t *epoch, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < as->n; i++) {
		const struct sb_owner *o = &as->c[i].sb.owner;
		unsigned at = 0;
		bool seen = false;

		if (!reserve_candidate(as, i) || !o->host_id || o->host_id == key)
			continue;
		for (unsigned k = 0; k < n; k++)
			seen |= out[k] == o->host_id;
		if (seen || n == max)
			continue;
		while (at < n && epoch[at] >= o->epoch)
			at++;
		memmove(out + at + 1, out + at, (n - at) * sizeof(*out));
		memmove(epoch + at + 1, epoch + at, (n - at) * sizeof(*epoch));
		out[at] = o->host_id;
		epoch[at] = o->epoch;
		n++;
	}
	return n;
}

/* Hold one member: reserve, else preempt an old owner's key. 0, or as open_reserve(). */
static int reserve_member(struct member *m, uint64_t key, const uint64_t *victims, unsigned nv)
{
	int rc = member_pr_reserve(m, key);

	for (unsigned v = 0; rc == -EBUSY && v < nv; v++) {
		rc = member_pr_preempt(m, key, victims[v]);
		/*
		 * A preempt of a key that is registered but does not hold the reservation only
		 * removes that registration, and succeeds: only a reserve tells who holds now.
		 */
		if (rc == 0)
			rc = member_pr_reserve(m, key);
		if (rc == 0)
			graid__log(GRAID_LOG_NOTICE, "open: member %s: reservation taken from the old "
						     "owner's key 0x%016llx",
				   m->dev.path, (unsigned long long)victims[v]);
	}
	if (rc == -EBUSY)
		graid__log(GRAID_LOG_ERR, "open: member %s is reserved by a host whose key is none of "
					  "the array's owner records (%u looked at): not opened, nothing "
					  "was written. Clear the reservation (sg_persist --clear, nvme "
					  "resv-release) only when that host is known to be down",
			   m->dev.path, nv);
	return rc;
}

int open_reserve(const struct assembly *as, uint64_t key, bool strict)
{
	uint64_t victims[GRAID_MAX_MEMBERS + GRAID_MAX_SPARES], epochs[GRAID_MAX_MEMBERS + GRAID_MAX_SPARES];
	unsigned nv, held = 0, none = 0;
	uint64_t t0 = graid__now_ns();

	if (!key) {
		graid__log(strict ? GRAID_LOG_ERR : GRAID_LOG_WARNING,
			   "open: this host has no machine id (/etc/machine-id), so no reservation "
			   "key: %s", strict ? "GRAID_OPEN_RESERVE cannot be kept; nothing was written"
					     : "the members are fenced by the lease and the owner "
					       "epoch only");
		return strict ? -EOPNOTSUPP : 0;
	}
	nv = reserve_victims(as, key, victims, epochs, sizeof(victims) / sizeof(victims[0]));
	for (unsigned i = 0; i < as->n; i++) {
		struct member *m = &as->c[i].m;
		bool got;
		int rc;

		if (!reserve_candidate(as, i))
			continue;
		rc = member_pr_settle(m, key, reserve_member(m, key, victims, nv), strict, &got);
		if (rc == -EBUSY || rc == -EOPNOTSUPP)
			return rc;
		if (rc)
			return -EIO; /* the device's failure, logged: graid.h's -EIO */
		held += got;
		none += !got;
	}
	if (held)
		graid__log(GRAID_LOG_NOTICE, "open: Write Exclusive held with key 0x%016llx on %u "
					     "member%s%s (%.3f s)", (unsigned long long)key, held,
			   held == 1 ? "" : "s", none ? "; the others have no reservations" : "",
			   (double)(graid__now_ns() - t0) / 1e9);
	return 0;
}

void open_unreserve(const struct assembly *as, uint64_t key)
{
	for (unsigned i = 0; as->fresh && i < as->n; i++)
		if (reserve_candidate(as, i))
			member_pr_release(&as->c[i].m, key);
}

void array_unreserve(struct graid_array *a)
{
	if (!a->pr_key)
		return;
	for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
		struct member *m = i < a->nmembers ? &a->members[i] : &a->spares[i - a->nmembers];

		if (m->dev.fd >= 0)
			member_pr_release(m, a->pr_key);
	}
	/*
	 * Devices replaced in their roles were reserved too: given back here, outside
	 * meta_lock, through their kept descriptors (an array with reservations keeps them).
	 */
	for (unsigned i = 0; i < a->retired.n; i++) {
		struct member old = { .dev.fd = a->retired.fd[i], .dev.fault = a->retired.fault[i] };
		struct stat st;

		if (old.dev.fd < 0 || a->retired.let_go[i])
			continue;
		old.dev.is_blk = fstat(old.dev.fd, &st) == 0 && S_ISBLK(st.st_mode);
		member_pr_release(&old, a->pr_key);
	}
	a->pr_key = 0;
}
