/* SPDX-License-Identifier: MIT */
/* Replace a member and rebuild it online: batches of stripes, recovered through the engine, checkpointed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "stripe_set.h"

/* A batch holds about this much chunk data in memory (all roles of its rows). */
#define REBUILD_BATCH_BYTES (32u << 20)
/* Superblocks get the checkpoint at least this often. */
#define REBUILD_CHECKPOINT_NS (1000000000ull)

static uint64_t rebuild_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int member_attach(struct graid_array *a, struct member *m, const char *path)
{
	struct graid_sb sb;
	dev_t dev;
	ino_t ino;
	int rc;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (member_identity(path, &dev, &ino) == 0)
		for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
			const struct member *o = i < a->nmembers ? &a->members[i]
								 : &a->spares[i - a->nmembers];

			if (o->fd >= 0 && o->dev == dev && o->ino == ino) {
				graid__log(GRAID_LOG_ERR, "%s is already in this array", path);
				return -EINVAL;
			}
		}
	rc = member_open(m, path, true);
	if (rc)
		return rc;
	rc = -EINVAL;
	if (m->size < a->data_offset + a->lay.member_bytes) {
		graid__log(GRAID_LOG_ERR, "%s: %llu bytes, the array needs %llu", path,
			   (unsigned long long)m->size,
			   (unsigned long long)(a->data_offset + a->lay.member_bytes));
		goto fail;
	}
	for (unsigned i = 0; i < a->nmembers + a->nspares; i++) {
		const struct member *o = i < a->nmembers ? &a->members[i]
							 : &a->spares[i - a->nmembers];

		if (o->fd >= 0 && o->dev == m->dev && o->ino == m->ino) {
			graid__log(GRAID_LOG_ERR, "%s is already in this array", path);
			goto fail;
		}
	}
	if (member_read_sb(m, &sb) == 0 && memcmp(sb.array_uuid, a->uuid, 16)) {
		graid__log(GRAID_LOG_ERR, "%s belongs to another libgraid array; wipe it first",
			   path);
		goto fail;
	}
	graid_uuid_generate(m->uuid);
	/* Entries from its earlier life (in this array or another) must never replay. */
	rc = journal_reset_member(a, m);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "%s: writing its journal checkpoint: %s", path,
			   graid_strerror(rc));
		goto fail;
	}
	return 0;
fail:
	member_close(m);
	return rc;
}

/* Move a prepared device into a role as REBUILDING; meta_lock held. */
static void rebuild_install(struct graid_array *a, unsigned role, struct member *nm)
{
	struct member *m = &a->members[role];

	/*
	 * The old descriptor (and fault schedule) may still be in use by an I/O being prepared:
	 * retire them until the array closes, so the number is never reused meanwhile.
	 */
	if (a->nretired < sizeof(a->retired) / sizeof(a->retired[0])) {
		a->retired[a->nretired] = m->fd;
		a->retired_fault[a->nretired++] = m->fault;
	} else {
		if (m->fd >= 0)
			close(m->fd);
		fault_free(m->fault);
	}
	m->fault = nm->fault;
	nm->fault = NULL;
	m->fd = nm->fd;
	m->direct = nm->direct;
	m->is_blk = nm->is_blk;
	m->lbs = nm->lbs;
	m->size = nm->size;
	m->dev = nm->dev;
	m->ino = nm->ino;
	memcpy(m->uuid, nm->uuid, 16);
	memcpy(m->path, nm->path, sizeof(m->path));
	memcpy(m->identity, nm->identity, sizeof(m->identity));
	m->nvme = nm->nvme; /* NVMe identify data; passthrough or not */
	m->rebuild_offset = 0;
	/*
	 * The role's new device joins now: updates numbered from here on may use it, earlier
	 * ones (even in flight) cannot, and recovery must not wait for its entry of them.
	 */
	if (journal_reset_member(a, m))
		graid__log(GRAID_LOG_WARNING, "member %u (%s): journal checkpoint at takeover failed",
			   role, m->path);
	atomic_store(&m->reads, 0);
	atomic_store(&m->writes, 0);
	atomic_store(&m->read_bytes, 0);
	atomic_store(&m->write_bytes, 0);
	atomic_store(&m->errors, 0);
	/* Last: a thread that sees REBUILDING then reads fd gets the new one. */
	atomic_store_explicit(&m->state, GRAID_MEMBER_REBUILDING, memory_order_release);
	a->events++;
	array_recount(a);
	array_write_superblocks(a, 0);
	graid__log(GRAID_LOG_NOTICE, "member %u is now %s, rebuilding", role, m->path);
	array_event(a, GRAID_EVENT_REBUILD_STARTED, (int)role, 0, 0, 0);
}

GRAID_API int graid_array_replace_member(struct graid_array *a, unsigned idx,
					 const char *path)
{
	struct member nm;
	int st, rc;

	if (!a || !path || idx >= a->nmembers)
		return -EINVAL;
	if (a->lay.level == 0)
		return -EOPNOTSUPP;
	if (a->read_only)
		return -EROFS;
	pthread_mutex_lock(&a->meta_lock);
	st = atomic_load(&a->members[idx].state);
	if (st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING) {
		pthread_mutex_unlock(&a->meta_lock);
		graid__log(GRAID_LOG_ERR, "replace: member %u is %s, not failed or missing", idx,
			   st == GRAID_MEMBER_ACTIVE ? "active" : "rebuilding");
		return -EBUSY;
	}
	rc = member_attach(a, &nm, path);
	if (rc == 0)
		rebuild_install(a, idx, &nm);
	pthread_mutex_unlock(&a->meta_lock);
	return rc;
}

void array_spare_takeover(struct graid_array *a, unsigned role)
{
	int st = atomic_load(&a->members[role].state);

	if (a->nspares == 0 || (st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING))
		return;
	a->nspares--;
	rebuild_install(a, role, &a->spares[a->nspares]);
	a->spares[a->nspares].fd = -1;
	a->spare_work = true;
	pthread_cond_signal(&a->spare_cond);
}

/* What one batch of rows needs, allocated once per rebuild. */
struct rebuild_ctx {
	struct graid_array *a;
	unsigned rows_max;
	uint8_t *data;            /* rows_max * nroles chunks */
	uint8_t **ptrs;           /* rows_max * nroles pointers, for the engine */
	struct mbio *ios;         /* rows_max * nmembers */
	struct stripe_set locks;
	unsigned target[GRAID_MAX_MEMBERS];
	unsigned ntarget;
};

static uint8_t *rebuild_chunk(struct rebuild_ctx *c, unsigned row, unsigned role)
{
	unsigned nroles = c->a->lay.ndata + c->a->lay.nparity;

	return c->data + ((size_t)row * nroles + role) * c->a->lay.chunk;
}

/* RAID-5/6 rows [row0, row0 + rows): read survivors, recover per loss pattern, write targets. */
static int rebuild_parity_rows(struct rebuild_ctx *c, uint64_t row0, unsigned rows)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	const unsigned nroles = l->ndata + l->nparity;
	unsigned lost[256][2], nlost[256];
	size_t n = 0;
	int rc;

	for (unsigned i = 0; i < rows; i++) {
		nlost[i] = 0;
		for (unsigned r = 0; r < nroles; r++) {
			unsigned m = r < l->ndata ? graid_layout_data_member(l, row0 + i, r)
						  : graid_layout_parity_member(l, row0 + i,
									       r - l->ndata);

			if (array_role_alive(a, m)) {
				c->ios[n++] = (struct mbio){ .member = m, .buf = rebuild_chunk(c, i, r),
							     .len = l->chunk,
							     .off = (row0 + i) * l->chunk };
				continue;
			}
			if (nlost[i] == l->nparity)
				return -EIO; /* more lost than parity can rebuild */
			lost[i][nlost[i]++] = r;
		}
	}
	rc = mbatch_run(a, c->ios, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (c->ios[i].res != (int)c->ios[i].len)
			rc = -EAGAIN; /* a survivor failed: plan the batch again without it */
	if (rc)
		return rc;
	/* Rotation gives rows different loss patterns: one engine call per pattern. */
	for (unsigned i = 0; i < rows; i++) {
		unsigned ng = 0;

		if (nlost[i] == 0 || nlost[i] == 3)
			continue;
		for (unsigned j = i; j < rows; j++) {
			if (nlost[j] != nlost[i] || lost[j][0] != lost[i][0] ||
			    (nlost[i] > 1 && lost[j][1] != lost[i][1]))
				continue;
			for (unsigned r = 0; r < nroles; r++)
				c->ptrs[ng * nroles + r] = rebuild_chunk(c, j, r);
			ng++;
			if (j != i)
				nlost[j] = 3; /* done with this group */
		}
		rc = graid_parity_recover(a->be, l->ndata, l->nparity, l->chunk, ng, c->ptrs,
					  nlost[i], lost[i]);
		if (rc)
			return rc;
	}
	n = 0;
	for (unsigned i = 0; i < rows; i++)
		for (unsigned t = 0; t < c->ntarget; t++) {
			unsigned m = c->target[t];
			unsigned role = graid_layout_member_role(l, row0 + i, m);

			c->ios[n++] = (struct mbio){ .member = m, .write = true,
						     .buf = rebuild_chunk(c, i, role),
						     .len = l->chunk, .off = (row0 + i) * l->chunk };
		}
	rc = mbatch_run(a, c->ios, n);
	return rc;
}

/* RAID-1/10 rows: copy each target chunk from a live copy. */
static int rebuild_mirror_rows(struct rebuild_ctx *c, uint64_t row0, unsigned rows)
{
	struct graid_array *a = c->a;
	const struct graid_layout *l = &a->lay;
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	size_t n = 0, nw = 0;
	int rc;

	for (unsigned i = 0; i < rows; i++)
		for (unsigned t = 0; t < c->ntarget; t++) {
			uint64_t member_off = (row0 + i) * l->chunk, arr;
			unsigned k, src = GRAID_LAYOUT_NONE;

			if (graid_layout_unmap(l, c->target[t], member_off, &arr))
				continue; /* a RAID-10 slot no chunk uses */
			k = graid_layout_copies(l, arr, members, moff);
			for (unsigned j = 0; j < k && src == GRAID_LAYOUT_NONE; j++)
				if (array_role_alive(a, members[j]))
					src = j;
			if (src == GRAID_LAYOUT_NONE)
				return -EIO;
			c->ios[n] = (struct mbio){ .member = members[src],
						   .buf = c->data + n * (size_t)l->chunk,
						   .len = l->chunk, .off = moff[src] };
			n++;
		}
	/* Reads fill slots 0..n-1; the writes reuse them in the same order. */
	rc = mbatch_run(a, c->ios, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (c->ios[i].res != (int)l->chunk)
			rc = -EAGAIN;
	if (rc)
		return rc;
	for (unsigned i = 0; i < rows; i++)
		for (unsigned t = 0; t < c->ntarget; t++) {
			uint64_t member_off = (row0 + i) * l->chunk, arr;

			if (graid_layout_unmap(l, c->target[t], member_off, &arr))
				continue;
			c->ios[nw] = (struct mbio){ .member = c->target[t], .write = true,
						    .buf = c->data + nw * (size_t)l->chunk,
						    .len = l->chunk, .off = member_off };
			nw++;
		}
	return mbatch_run(a, c->ios, nw);
}

/* The stripe numbers foreground operations lock for member rows [row0, row0 + rows). */
static void rebuild_lock_rows(struct rebuild_ctx *c, uint64_t row0, unsigned rows)
{
	const struct graid_layout *l = &c->a->lay;

	for (unsigned i = 0; i < rows; i++) {
		if (l->level != 10) {
			stripe_set_take(c->a, &c->locks, row0 + i);
			continue;
		}
		for (unsigned t = 0; t < c->ntarget; t++) {
			uint64_t arr;

			if (!graid_layout_unmap(l, c->target[t], (row0 + i) * l->chunk, &arr))
				stripe_set_take(c->a, &c->locks, arr / l->chunk);
		}
	}
}

static int rebuild_batch(struct rebuild_ctx *c, uint64_t row0, unsigned rows)
{
	int rc, tries = 0;

	rebuild_lock_rows(c, row0, rows);
	do {
		rc = c->a->lay.nparity ? rebuild_parity_rows(c, row0, rows)
				       : rebuild_mirror_rows(c, row0, rows);
	} while (rc == -EAGAIN && ++tries <= (int)c->a->nmembers);
	stripe_set_release(c->a, &c->locks);
	for (unsigned t = 0; rc == 0 && t < c->ntarget; t++)
		if (atomic_load(&c->a->members[c->target[t]].state) != GRAID_MEMBER_REBUILDING)
			rc = -EIO; /* the new member itself failed */
	return rc;
}

static void rebuild_checkpoint(struct graid_array *a, struct rebuild_ctx *c, uint64_t bytes)
{
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned t = 0; t < c->ntarget; t++)
		a->members[c->target[t]].rebuild_offset = bytes;
	array_write_superblocks(a, 0);
	pthread_mutex_unlock(&a->meta_lock);
}

static void rebuild_pace(struct graid_array *a, uint64_t t0, uint64_t bytes)
{
	uint64_t rate = atomic_load(&a->rebuild_rate);
	unsigned yield = atomic_load(&a->rebuild_yield_us);

	if (rate) {
		uint64_t due = t0 + bytes * 1000000000ull / rate, now = rebuild_now_ns();

		if (due > now)
			usleep((useconds_t)((due - now) / 1000));
	}
	if (yield && atomic_load(&a->fg_inflight))
		usleep(yield);
}

/* One pass over the members that are REBUILDING when it starts. */
static int rebuild_pass(struct graid_array *a, struct rebuild_ctx *c, graid_progress_fn fn,
			void *arg)
{
	const struct graid_layout *l = &a->lay;
	uint64_t start = l->nstripes, total, done = 0, t0 = rebuild_now_ns(), last_cp = t0;
	int rc = 0;

	c->ntarget = 0;
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned m = 0; m < a->nmembers; m++)
		if (atomic_load(&a->members[m].state) == GRAID_MEMBER_REBUILDING) {
			uint64_t row = a->members[m].rebuild_offset / l->chunk;

			c->target[c->ntarget++] = m;
			if (row < start)
				start = row;
		}
	pthread_mutex_unlock(&a->meta_lock);
	if (c->ntarget == 0)
		return 1; /* nothing to do */
	total = (l->nstripes - start) * l->chunk * c->ntarget;
	graid__log(GRAID_LOG_NOTICE, "rebuild of %u member(s) from row %llu of %llu",
		   c->ntarget, (unsigned long long)start, (unsigned long long)l->nstripes);
	if (fn)
		fn(arg, 0, total);
	for (uint64_t row = start; row < l->nstripes && rc == 0; row += c->rows_max) {
		unsigned rows = (unsigned)(l->nstripes - row < c->rows_max ? l->nstripes - row
									  : c->rows_max);

		if (atomic_load(&a->closing))
			return -ECANCELED;
		rc = rebuild_batch(c, row, rows);
		if (rc)
			break;
		done += (uint64_t)rows * l->chunk * c->ntarget;
		if (rebuild_now_ns() - last_cp >= REBUILD_CHECKPOINT_NS) {
			rebuild_checkpoint(a, c, (row + rows) * l->chunk);
			last_cp = rebuild_now_ns();
		}
		if (fn)
			fn(arg, done, total);
		rebuild_pace(a, t0, done / c->ntarget);
	}
	if (rc) {
		graid__log(GRAID_LOG_ERR, "rebuild stopped: %s", graid_strerror(rc));
		return rc;
	}
	pthread_mutex_lock(&a->meta_lock);
	for (unsigned t = 0; t < c->ntarget; t++) {
		struct member *m = &a->members[c->target[t]];
		int expect = GRAID_MEMBER_REBUILDING;

		m->rebuild_offset = 0;
		if (atomic_compare_exchange_strong(&m->state, &expect, GRAID_MEMBER_ACTIVE))
			array_event(a, GRAID_EVENT_REBUILD_DONE, (int)c->target[t], 0, 0, 0);
	}
	a->events++;
	array_recount(a);
	array_write_superblocks(a, 0);
	pthread_mutex_unlock(&a->meta_lock);
	graid__log(GRAID_LOG_NOTICE, "rebuild done: %u member(s) in sync", c->ntarget);
	return 0;
}

GRAID_API int graid_array_rebuild(struct graid_array *a, graid_progress_fn fn, void *arg)
{
	struct rebuild_ctx c = { .a = a };
	size_t per_row;
	int rc;

	if (!a)
		return -EINVAL;
	if (a->read_only)
		return -EROFS;
	per_row = (size_t)a->nmembers * a->lay.chunk;
	c.rows_max = (unsigned)(REBUILD_BATCH_BYTES / per_row);
	if (c.rows_max < 1)
		c.rows_max = 1;
	if (c.rows_max > 256)
		c.rows_max = 256;
	/* Each RAID-10 row may lock one stripe per target: keep the set within bounds. */
	if (c.rows_max * a->nmembers > STRIPE_SET_MAX)
		c.rows_max = STRIPE_SET_MAX / a->nmembers;
	pthread_mutex_lock(&a->rebuild_lock);
	rc = posix_memalign((void **)&c.data, ARRAY_ALIGN, c.rows_max * per_row) ? -ENOMEM : 0;
	c.ptrs = malloc((size_t)c.rows_max * a->nmembers * sizeof(*c.ptrs));
	c.ios = malloc((size_t)c.rows_max * a->nmembers * sizeof(*c.ios));
	if (!c.ptrs || !c.ios)
		rc = -ENOMEM;
	/* Spares may take over while a pass runs: pass again until nothing is left. */
	while (rc == 0)
		rc = rebuild_pass(a, &c, fn, arg);
	if (rc == 1)
		rc = 0;
	free(c.data);
	free(c.ptrs);
	free(c.ios);
	pthread_mutex_unlock(&a->rebuild_lock);
	return rc;
}

GRAID_API int graid_array_set_rebuild_options(struct graid_array *a,
					      const struct graid_rebuild_options *opts)
{
	if (!a || !opts || opts->struct_size < sizeof(*opts))
		return -EINVAL;
	atomic_store(&a->rebuild_rate, opts->max_bytes_per_sec);
	atomic_store(&a->rebuild_yield_us, opts->foreground_yield_us);
	return 0;
}
