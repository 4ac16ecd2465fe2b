/* SPDX-License-Identifier: MIT */
/*
 * The watch over the members' drive health, in a thread of its own beside the worker: every
 * interval, each NVMe member's and spare's health log is read and judged (health_policy.c),
 * and a rule that begins to hold is an event; every active role's failed I/Os are judged
 * too, whatever its device. Also the one way a sample is taken: without
 * meta_lock during the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/signals.h"
#include "jobs/health_policy.h"
#include "jobs/health_state.h"
#include "jobs/health_watch.h"
#include "jobs/replace.h"
#include "member/member.h"
#include "member/member_health.h"
#include "meta/events.h"

#define HEALTH_DEFAULT_INTERVAL_NS (60ull * 1000 * 1000 * 1000)

int array_health_sample(struct graid_array *a, unsigned idx, struct graid_member_health *h,
			dev_t *devno, ino_t *ino)
{
	struct member *m = health_member(a, idx);
	struct member_device d;
	char *file;
	int rc;

	if (!m)
		return -EINVAL;
	d = m->dev;
	*devno = d.devno;
	*ino = d.ino;
	if (d.fd < 0)
		return member_health_read(&d, h);
	/* A scripted drive: its file read without the lock too, as a drive's command is. */
	file = fault_health_file(d.fault);
	if (file) {
		pthread_mutex_unlock(&a->meta_lock);
		rc = member_health_read_scripted(file, h);
		free(file);
		pthread_mutex_lock(&a->meta_lock);
		return rc;
	}
	if (!d.nvme.is_nvme)
		return -EOPNOTSUPP;
	/* A duplicate: a replace meanwhile cannot hand the command another device. */
	d.fault = NULL; /* freed with its device by a replace meanwhile: not read unlocked */
	d.fd = fcntl(m->dev.fd, F_DUPFD_CLOEXEC, 0);
	if (d.fd < 0)
		return -errno;
	pthread_mutex_unlock(&a->meta_lock);
	rc = member_health_read(&d, h);
	close(d.fd);
	pthread_mutex_lock(&a->meta_lock);
	return rc;
}

static void *health_main(void *arg)
{
	struct graid_array *a = arg;
	struct health_watch *w = a->health;

	pthread_mutex_lock(&a->meta_lock);
	while (!w->stop) {
		uint64_t wait = array_health_wait_ns(a);
		struct timespec until;

		if (wait == 0) {
			array_health_watch(a);
			continue;
		}
		if (wait == UINT64_MAX) {
			pthread_cond_wait(&w->cond, &a->meta_lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(wait / 1000000000u);
		until.tv_nsec += (long)(wait % 1000000000u);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cond, &a->meta_lock, &until);
	}
	pthread_mutex_unlock(&a->meta_lock);
	return NULL;
}

int array_health_init(struct graid_array *a)
{
	struct health_watch *w = calloc(1, sizeof(*w));
	pthread_condattr_t mono;
	int rc;

	if (!w)
		return -ENOMEM;
	w->policy = health_policy_default;
	w->interval_ns = HEALTH_DEFAULT_INTERVAL_NS;
	w->next_ns = graid__now_ns() + w->interval_ns;
	pthread_condattr_init(&mono);
	pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &mono);
	pthread_condattr_destroy(&mono);
	a->health = w;
	/* It waits for meta_lock, which the caller holds, before it looks at anything. */
	rc = graid__thread_create(&w->thread, NULL, health_main, a);
	if (rc) {
		pthread_cond_destroy(&w->cond);
		free(w);
		a->health = NULL;
		return -ENOMEM;
	}
	w->started = true;
	return 0;
}

void array_health_free(struct graid_array *a)
{
	struct health_watch *w = a->health;

	if (!w)
		return;
	pthread_mutex_lock(&a->meta_lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&a->meta_lock);
	/* A sample in progress ends first: a hung drive's command holds the close here. */
	if (w->started)
		pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	free(w);
	a->health = NULL;
}

uint64_t array_health_wait_ns(const struct graid_array *a)
{
	const struct health_watch *w = a->health;
	uint64_t now = graid__now_ns();

	if (!w || !w->interval_ns)
		return UINT64_MAX;
	return w->next_ns > now ? w->next_ns - now : 0;
}

/* Slot @p idx's track, started afresh when it was of another device. meta_lock held. */
static struct health_track *health_track_of(struct health_watch *w, unsigned idx, dev_t devno,
					    ino_t ino)
{
	if (w->slot[idx].devno != devno || w->slot[idx].ino != ino) {
		memset(&w->slot[idx], 0, sizeof(w->slot[idx]));
		w->slot[idx].devno = devno;
		w->slot[idx].ino = ino;
	}
	return &w->slot[idx].track;
}

/* Send the rules that began to hold for slot @p idx, and act on a critical one. */
static void health_send(struct graid_array *a, unsigned idx, uint32_t fired)
{
	struct health_watch *w = a->health;
	uint32_t critical = fired & HEALTH_RULES_CRITICAL;

	if (critical)
		array_event(a, GRAID_EVENT_HEALTH_CRITICAL, (int)idx, 0, 0, critical);
	/* A role whose drive is about to fail moves to a spare while it still reads. */
	if (critical && idx < a->nmembers && !w->auto_replace_off)
		replace_auto(a, idx);
	if (fired & ~critical)
		array_event(a, GRAID_EVENT_HEALTH_WARNING, (int)idx, 0, 0, fired & ~critical);
}

/* Judge one sample of slot @p idx and send what began to hold. meta_lock held. */
static void health_judge_slot(struct graid_array *a, unsigned idx,
			      const struct graid_member_health *h, dev_t devno, ino_t ino)
{
	struct health_watch *w = a->health;
	struct health_track *t = health_track_of(w, idx, devno, ino);
	uint32_t fired;

	w->slot[idx].last = *h;
	w->slot[idx].last_ns = graid__now_ns();
	fired = health_judge(t, &w->policy, h);
	if (!fired)
		return;
	for (uint32_t bit = 1; bit <= fired; bit <<= 1)
		if (fired & bit)
			graid__log(bit & HEALTH_RULES_CRITICAL ? GRAID_LOG_ERR : GRAID_LOG_WARNING,
				   "member %u (%s): drive health: %s (critical warning 0x%02x, spare "
				   "%u%% of threshold %u%%, %u%% used, %llu media errors)", idx,
				   health_member(a, idx)->dev.path, health_rule_name(bit),
				   h->critical_warning, h->available_spare, h->spare_threshold,
				   h->percent_used, (unsigned long long)h->media_errors);
	health_send(a, idx, fired);
}

/*
 * Judge role @p idx's failed I/Os, counted as they complete (member_io_done), whatever the
 * kind of its device: a file or a block device has no health log, but its errors count.
 * meta_lock held; no command is sent.
 */
static void health_judge_io_slot(struct graid_array *a, unsigned idx)
{
	struct health_watch *w = a->health;
	struct member *m = &a->members[idx];
	int st = atomic_load(&m->state);
	uint64_t when[IOERR_RING];
	unsigned row;
	uint32_t fired;

	if (m->dev.fd < 0 || (st != GRAID_MEMBER_ACTIVE && st != GRAID_MEMBER_REBUILDING))
		return;
	row = atomic_load_explicit(&m->role.io_err_row[0], memory_order_relaxed);
	if (atomic_load_explicit(&m->role.io_err_row[1], memory_order_relaxed) > row)
		row = atomic_load_explicit(&m->role.io_err_row[1], memory_order_relaxed);
	for (unsigned i = 0; i < IOERR_RING; i++)
		when[i] = atomic_load_explicit(&m->role.io_err_ns[i], memory_order_relaxed);
	fired = health_judge_io(health_track_of(w, idx, m->dev.devno, m->dev.ino), &w->policy,
				row, when, IOERR_RING, graid__now_ns());
	if (!fired)
		return;
	graid__log(GRAID_LOG_ERR, "member %u (%s): drive health: %s (%u failed I/Os in a row)",
		   idx, m->dev.path, health_rule_name(fired), row);
	health_send(a, idx, fired);
}

/* Whether the rest of a health round waits: the array closes. */
static bool health_give_way(const struct graid_array *a)
{
	return a->health->stop || atomic_load(&a->closing);
}

/* Whether slot @p idx's drive is one to sample: a role in use or a spare, NVMe or scripted. */
static bool health_watched(const struct member *m)
{
	int st = atomic_load(&m->state);

	if (m->dev.fd < 0 || (!m->dev.fault && !m->dev.nvme.is_nvme))
		return false;
	/* Out of the array: its verdict changes nothing, and its controller may hang. */
	return st != GRAID_MEMBER_FAILED && st != GRAID_MEMBER_MISSING &&
	       st != GRAID_MEMBER_UNREACHABLE;
}

void array_health_watch(struct graid_array *a)
{
	struct health_watch *w = a->health;
	unsigned idx;

	if (!w || !w->interval_ns)
		return;
	for (idx = w->cursor; idx < HEALTH_SLOTS; idx++) {
		struct graid_member_health h;
		struct member *m = health_member(a, idx);
		dev_t devno;
		ino_t ino;

		if (!m)
			break;
		if (idx > w->cursor && health_give_way(a)) {
			w->cursor = idx;
			return;
		}
		if (idx < a->nmembers)
			health_judge_io_slot(a, idx);
		if (!health_watched(m))
			continue;
		/* The lock was let go: judge only if the slot still has the device read. */
		m = NULL;
		if (array_health_sample(a, idx, &h, &devno, &ino) == 0)
			m = health_member(a, idx);
		if (m && m->dev.devno == devno && m->dev.ino == ino)
			health_judge_slot(a, idx, &h, devno, ino);
	}
	w->cursor = 0;
	w->next_ns = graid__now_ns() + w->interval_ns;
}

GRAID_API int graid_array_set_health_options(struct graid_array *a,
					     const struct graid_health_options *o)
{
	struct health_watch *w;

	const size_t min = offsetof(struct graid_health_options, media_window_s) +
			   sizeof(o->media_window_s);

	/* The first version's fields are all required; later ones keep their defaults. */
	if (!a || !o || o->struct_size < min || o->wear_percent > 255 ||
	    (o->struct_size >= offsetof(struct graid_health_options, io_errors_burst) +
				       sizeof(o->io_errors_burst) &&
	     o->io_errors_burst > GRAID_HEALTH_IO_BURST_MAX && o->io_errors_burst != UINT32_MAX) ||
	    (o->interval_ms && o->interval_ms < GRAID_HEALTH_INTERVAL_MIN_MS))
		return -EINVAL;
	if (a->read_only)
		return -EROFS;
	pthread_mutex_lock(&a->meta_lock);
	w = a->health;
	if (!w) {
		pthread_mutex_unlock(&a->meta_lock);
		return -ENOMEM; /* the worker runs without a watch: its memory was refused */
	}
	w->policy.wear_percent = (uint8_t)o->wear_percent;
	w->policy.media_rising_periods = o->media_rising;
	w->policy.media_burst = o->media_burst;
	w->policy.media_window_ns = (uint64_t)o->media_window_s * 1000000000ull;
	w->interval_ns = (uint64_t)o->interval_ms * 1000000ull;
	w->auto_replace_off = o->struct_size >= offsetof(struct graid_health_options,
							 auto_replace_off) +
						 sizeof(o->auto_replace_off) &&
			      o->auto_replace_off;
	if (o->struct_size >= offsetof(struct graid_health_options, io_errors_window_s) +
				      sizeof(o->io_errors_window_s)) {
		w->policy.io_in_row = o->io_errors_in_row == UINT32_MAX ? 0
				      : o->io_errors_in_row ? o->io_errors_in_row
				      : health_policy_default.io_in_row;
		w->policy.io_burst = o->io_errors_burst == UINT32_MAX ? 0
				     : o->io_errors_burst ? o->io_errors_burst
				     : health_policy_default.io_burst;
		w->policy.io_window_ns = o->io_errors_window_s
						 ? (uint64_t)o->io_errors_window_s * 1000000000ull
						 : health_policy_default.io_window_ns;
	} else {
		w->policy.io_in_row = health_policy_default.io_in_row;
		w->policy.io_burst = health_policy_default.io_burst;
		w->policy.io_window_ns = health_policy_default.io_window_ns;
	}
	w->next_ns = graid__now_ns(); /* a sample at once, then one every interval */
	w->cursor = 0;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&a->meta_lock);
	return 0;
}
