/* SPDX-License-Identifier: MIT */
/* A member's drive health: read from the drive on request, or the watch's last sample. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "array/array.h"
#include "jobs/health_state.h"
#include "jobs/health_watch.h"

GRAID_API int graid_array_member_health(struct graid_array *a, unsigned idx,
					struct graid_member_health *out)
{
	const size_t min = offsetof(struct graid_member_health, media_errors) +
			   sizeof(out->media_errors);
	struct graid_member_health h;
	dev_t devno;
	ino_t ino;
	int rc;

	if (!a || !out || out->struct_size < min)
		return -EINVAL;
	pthread_mutex_lock(&a->meta_lock);
	rc = array_health_sample(a, idx, &h, &devno, &ino);
	pthread_mutex_unlock(&a->meta_lock);
	if (rc)
		return rc;
	/* The struct grows at its end: a caller's older, shorter one gets what it has room for. */
	h.struct_size = out->struct_size < sizeof(h) ? out->struct_size : sizeof(h);
	memcpy(out, &h, h.struct_size);
	return 0;
}

GRAID_API int graid_array_member_health_last(struct graid_array *a, unsigned idx,
					     struct graid_member_health *out, uint32_t *rules)
{
	const size_t min = offsetof(struct graid_member_health, media_errors) +
			   sizeof(out->media_errors);
	struct graid_member_health h;
	uint64_t at_ns;
	uint32_t held;
	bool have;

	if (!a || !out || out->struct_size < min)
		return -EINVAL;
	if (a->read_only)
		return -EROFS;
	pthread_mutex_lock(&a->meta_lock);
	if (!health_member(a, idx)) {
		pthread_mutex_unlock(&a->meta_lock);
		return -EINVAL;
	}
	have = array_health_cached(a, idx, &h, &at_ns);
	held = array_health_rules(a, idx);
	pthread_mutex_unlock(&a->meta_lock);
	if (rules)
		*rules = held;
	if (!have)
		return -ENODATA;
	h.sampled_ns = at_ns;
	h.struct_size = out->struct_size < sizeof(h) ? out->struct_size : sizeof(h);
	memcpy(out, &h, h.struct_size);
	return 0;
}
