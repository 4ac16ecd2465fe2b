/* SPDX-License-Identifier: MIT */
/*
 * The write path's part of a replace in service (jobs/replace.c): the role's writes sent to
 * the new device too, and the copy's own member I/O, through the fault model as any.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "member/member.h"
#include "member/member_replace.h"
#include "format/bbl_format.h"

/* @p meta: a durable metadata write (the journal, the maps), as the fault model tells apart. */
static int replace_io(struct graid_array *a, struct member *m, bool write, bool meta, void *buf,
		      size_t len, uint64_t off)
{
	return member_data_pio(a, m, write, meta, buf, len, off);
}

int replace_pio(struct graid_array *a, struct member *m, bool write, void *buf, size_t len,
		uint64_t off)
{
	return replace_io(a, m, write, false, buf, len, off);
}

/* The copy failed on its new device: the copy thread ends it at its next batch. */
static void replace_dev_failed(struct array_replace *r, int rc)
{
	if (!atomic_exchange(&r->failed, true))
		graid__log(GRAID_LOG_ERR, "replace of member %u: writing %s failed: %s", r->role,
			   r->dev.dev.path, graid_strerror(rc));
}

/*
 * [off, off + len) of the data area holds valid contents on the new device now: the lost
 * units it covers whole are lost no more. Past the list's room the count alone is kept,
 * and the swap is refused whatever is written.
 */
static void replace_unlose(struct array_replace *r, uint64_t off, uint64_t len)
{
	if (off >= r->total || len > r->total - off)
		return; /* a metadata write (its offset wraps around), or none of the data area */
	pthread_mutex_lock(&r->lost_lock);
	for (unsigned i = 0; r->nlost <= REPLACE_LOST_MAX && i < r->nlost;) {
		if (r->lost[i] >= off && r->lost[i] + BBL_UNIT <= off + len)
			r->lost[i] = r->lost[--r->nlost];
		else
			i++;
	}
	pthread_mutex_unlock(&r->lost_lock);
}

void replace_dup_write(struct graid_array *a, unsigned role, const void *buf, size_t len,
		       const struct iovec *iov, unsigned iovcnt, uint64_t off, bool meta)
{
	struct array_replace *r = a->replace;
	uint8_t *flat = NULL;
	int rc = 0;

	if (!r || r->role != role)
		return;
	pthread_rwlock_rdlock(&r->io_lock);
	if (r->gone || atomic_load(&r->failed))
		goto out;
	if (iov) {
		/* One aligned buffer: the device may be O_DIRECT, the pieces need not be. */
		len = 0;
		for (unsigned i = 0; i < iovcnt; i++)
			len += iov[i].iov_len;
		if (posix_memalign((void **)&flat, ARRAY_ALIGN, len ? len : ARRAY_ALIGN)) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0, at = 0; i < iovcnt; at += iov[i].iov_len, i++)
			memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
		buf = flat;
	}
	rc = replace_io(a, &r->dev, true, meta, (void *)buf, len, off);
	/* A durable write (the journal, the maps) is durable on the new device too. */
	if (rc == 0 && meta)
		rc = member_flush(&r->dev);
	if (rc == 0)
		replace_unlose(r, off, len);
out:
	if (rc)
		replace_dev_failed(r, rc);
	pthread_rwlock_unlock(&r->io_lock);
	free(flat);
}

void replace_dup_zero(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	struct array_replace *r = a->replace;
	int rc = 0;

	if (!r || r->role != role)
		return;
	pthread_rwlock_rdlock(&r->io_lock);
	if (!r->gone && !atomic_load(&r->failed)) {
		rc = member_zero_range(&r->dev, a->data_offset + off, len);
		if (rc == 0)
			replace_unlose(r, off, len);
	}
	if (rc)
		replace_dev_failed(r, rc);
	pthread_rwlock_unlock(&r->io_lock);
}


void replace_flush(struct graid_array *a)
{
	struct array_replace *r = a->replace;
	int rc = 0;

	if (!r || atomic_load(&a->replace_role) == 0)
		return;
	pthread_rwlock_rdlock(&r->io_lock);
	/* Gone: moved into its role (the swap flushed it first) or let go. */
	if (!r->gone && !atomic_load(&r->failed))
		rc = member_flush(&r->dev);
	if (rc)
		replace_dev_failed(r, rc);
	pthread_rwlock_unlock(&r->io_lock);
}
