/* SPDX-License-Identifier: MIT */
/* The handle's ring of recent events, read after a given number; its watcher; event names. */
#include <errno.h>
#include <stddef.h>

#include "api/array_events.h"
#include "common/internal.h"

unsigned array_events_read(struct graid_array *a, uint64_t since, struct graid_event *out,
			   unsigned max, uint64_t *last)
{
	uint64_t first, n;

	pthread_mutex_lock(&a->event_ring.lock);
	*last = a->event_ring.last;
	first = *last > ARRAY_EVENT_RING ? *last - ARRAY_EVENT_RING + 1 : 1;
	first = first > since ? first : since + 1;
	n = since < *last ? *last - first + 1 : 0;
	n = n < max ? n : max;
	for (uint64_t i = 0; i < n; i++)
		out[i] = a->event_ring.ring[(first + i) % ARRAY_EVENT_RING];
	pthread_mutex_unlock(&a->event_ring.lock);
	return (unsigned)n;
}

void array_events_watch(struct graid_array *a, int fd)
{
	pthread_mutex_lock(&a->event_ring.lock);
	a->event_ring.watch_fd = fd;
	pthread_mutex_unlock(&a->event_ring.lock);
}

void array_events_forget_watch(struct graid_array *a)
{
	a->event_ring.watch_fd = -1;
}

GRAID_API int graid_array_events(struct graid_array *a, uint64_t since,
				 struct graid_event *out, unsigned max, uint64_t *last)
{
	uint64_t newest;
	unsigned n;

	if (!a || (!out && max))
		return -EINVAL;
	/* The count returned is an int: a ring holds far fewer anyway. */
	n = array_events_read(a, since, out, max < ARRAY_EVENT_RING ? max : ARRAY_EVENT_RING,
			      &newest);
	if (last)
		*last = newest;
	return (int)n;
}

GRAID_API int graid_array_set_event_options(struct graid_array *a,
					    const struct graid_event_options *opts)
{
	if (!a || !opts || opts->struct_size < offsetof(struct graid_event_options,
							progress_percent) +
					       sizeof(opts->progress_percent) ||
	    opts->progress_percent > 100)
		return -EINVAL;
	atomic_store(&a->event.progress_step, opts->progress_percent);
	return 0;
}

static const char *const event_names[] = {
	[GRAID_EVENT_MEMBER_FAILED] = "member-failed",
	[GRAID_EVENT_ARRAY_FAILED] = "array-failed",
	[GRAID_EVENT_REBUILD_STARTED] = "rebuild-started",
	[GRAID_EVENT_REBUILD_DONE] = "rebuild-done",
	[GRAID_EVENT_SCRUB_MISMATCH] = "scrub-mismatch",
	[GRAID_EVENT_RESYNC_DONE] = "resync-done",
	[GRAID_EVENT_MEMBER_UNREACHABLE] = "member-unreachable",
	[GRAID_EVENT_MEMBER_RETURNED] = "member-returned",
	[GRAID_EVENT_ARRAY_FOREIGN] = "array-foreign",
	[GRAID_EVENT_BAD_BLOCK] = "bad-block",
	[GRAID_EVENT_BLOCK_REPAIRED] = "block-repaired",
	[GRAID_EVENT_HEALTH_CRITICAL] = "health-critical",
	[GRAID_EVENT_HEALTH_WARNING] = "health-warning",
	[GRAID_EVENT_DEGRADED] = "degraded",
	[GRAID_EVENT_OPTIMAL] = "optimal",
	[GRAID_EVENT_REBUILD_PROGRESS] = "rebuild-progress",
	[GRAID_EVENT_REBUILD_STOPPED] = "rebuild-stopped",
	[GRAID_EVENT_SCRUB_STARTED] = "scrub-started",
	[GRAID_EVENT_SCRUB_PROGRESS] = "scrub-progress",
	[GRAID_EVENT_SCRUB_DONE] = "scrub-done",
	[GRAID_EVENT_RESYNC_STARTED] = "resync-started",
	[GRAID_EVENT_SPARE_ACTIVATED] = "spare-activated",
	[GRAID_EVENT_SPARES_MISSING] = "spares-missing",
	[GRAID_EVENT_JOURNAL_REPLAYED] = "journal-replayed",
	[GRAID_EVENT_MEMBER_SLOW] = "member-slow",
	[GRAID_EVENT_CSUM_ERROR] = "checksum-error",
	[GRAID_EVENT_CSUM_TAG_ERROR] = "checksum-tag-error",
	[GRAID_EVENT_CSUM_UNVERIFIED] = "checksum-unverified",
	[GRAID_EVENT_CSUM_LOST_WRITE] = "checksum-lost-write",
	[GRAID_EVENT_RESHAPE_STARTED] = "reshape-started",
	[GRAID_EVENT_RESHAPE_PROGRESS] = "reshape-progress",
	[GRAID_EVENT_RESHAPE_PAUSED] = "reshape-paused",
	[GRAID_EVENT_RESHAPE_DONE] = "reshape-done",
};

GRAID_API const char *graid_event_name(int type)
{
	if (type <= 0 || (size_t)type >= sizeof(event_names) / sizeof(event_names[0]))
		return NULL;
	return event_names[type];
}
