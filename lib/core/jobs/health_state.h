/* SPDX-License-Identifier: MIT */
/*
 * What the health watch knows of each drive (its struct, kept here), and the questions others
 * ask of it without sending a command: the last sample, whether a critical rule holds.
 * Apart from health_watch.c so that the replace (which asks) and the watch (which starts a
 * replace on a critical verdict) do not need each other.
 */
#ifndef LIBGRAID_CORE_JOBS_HEALTH_STATE_H
#define LIBGRAID_CORE_JOBS_HEALTH_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "array/array.h"
#include "jobs/health_policy.h"

#define HEALTH_SLOTS (GRAID_MAX_MEMBERS + GRAID_MAX_SPARES)

/*
 * What the watch remembers; under meta_lock. Its own thread: a drive whose admin command
 * hangs holds the watch, never the worker's spares, rebuilds and resync, and the watch
 * samples on while they run.
 */
struct health_watch {
	pthread_t thread;
	pthread_cond_t cond;   /* on meta_lock: an interval changed, or stop */
	bool started, stop;
	struct health_policy policy;
	uint64_t interval_ns;  /* 0: not watching */
	uint64_t next_ns;      /* when the next round of samples is due */
	bool auto_replace_off; /* a critical role is not replaced onto a spare (replace.c) */
	unsigned cursor;       /* the slot a round that gave way to other work goes on from */
	struct {
		dev_t devno;   /* the device the track is of: another one starts afresh */
		ino_t ino;
		struct health_track track;
		struct graid_member_health last; /* its last sample, for the metrics */
		uint64_t last_ns;                /* when it was taken; 0: none yet */
	} slot[HEALTH_SLOTS];
};

/* Slot @p idx's member: a role (idx < nmembers) or a hot spare; NULL past the spares. */
struct member *health_member(struct graid_array *a, unsigned idx);
/*
 * The watch's last sample of slot @p idx's present device and its CLOCK_MONOTONIC time;
 * false when it has none (not watched, not sampled yet, another device since). meta_lock
 * held; sends no command, so a hung drive never holds the caller.
 */
bool array_health_cached(struct graid_array *a, unsigned idx, struct graid_member_health *h,
			 uint64_t *at_ns);
/*
 * Whether a critical rule holds for role or spare @p idx's drive at its last sample (a
 * slot's track of another device says nothing of this one); false when none is watched.
 * meta_lock held.
 */
bool array_health_critical(const struct graid_array *a, unsigned idx);
/*
 * The rules that hold for role or spare @p idx's present device (GRAID_HEALTH_RULE_* bits,
 * the I/O-error rule's included); 0 when none or nothing is watched. meta_lock held.
 */
uint32_t array_health_rules(const struct graid_array *a, unsigned idx);

#endif /* LIBGRAID_CORE_JOBS_HEALTH_STATE_H */
