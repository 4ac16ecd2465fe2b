/* SPDX-License-Identifier: MIT */
/* graid_array_member_health(): a member's drive health read from the drive on request. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "member/member_health.h"

/*
 * The role's device as it is now, to read its health without meta_lock: a copy whose fd is
 * a duplicate, so that a replace or a close meanwhile cannot hand the command another
 * device. A scripted health source (fault injection) is read here, under the lock: its
 * state lives with the device. 1 read here (*@p rc its result), 0 @p d to read, -errno.
 */
static int health_take_device(struct graid_array *a, unsigned idx, struct member_device *d,
			      struct graid_member_health *h, int *rc)
{
	const struct member *m;
	int ret = 0;

	pthread_mutex_lock(&a->meta_lock);
	if (idx >= a->nmembers + a->nspares) {
		ret = -EINVAL;
		goto out;
	}
	m = idx < a->nmembers ? &a->members[idx] : &a->spares[idx - a->nmembers];
	*d = m->dev;
	if (d->fd < 0 || d->fault) {
		*rc = member_health_read(d, h);
		ret = 1;
		goto out;
	}
	d->fd = fcntl(m->dev.fd, F_DUPFD_CLOEXEC, 0);
	if (d->fd < 0)
		ret = -errno;
out:
	pthread_mutex_unlock(&a->meta_lock);
	return ret;
}

GRAID_API int graid_array_member_health(struct graid_array *a, unsigned idx,
					struct graid_member_health *out)
{
	const size_t min = offsetof(struct graid_member_health, media_errors) +
			   sizeof(out->media_errors);
	struct graid_member_health h;
	struct member_device d;
	int rc = 0, took;

	if (!a || !out || out->struct_size < min)
		return -EINVAL;
	took = health_take_device(a, idx, &d, &h, &rc);
	if (took < 0)
		return took;
	if (took == 0) {
		/* Without meta_lock: a fabric controller that is reconnecting may take long. */
		rc = member_health_read(&d, &h);
		close(d.fd);
	}
	if (rc)
		return rc;
	/* The struct grows at its end: a caller's older, shorter one gets what it has room for. */
	h.struct_size = out->struct_size < sizeof(h) ? out->struct_size : sizeof(h);
	memcpy(out, &h, h.struct_size);
	return 0;
}
