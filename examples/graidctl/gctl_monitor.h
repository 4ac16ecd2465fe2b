/* SPDX-License-Identifier: MIT */
/* graidctl monitor: what its files share (the arrays it follows, the events it reports). */
#ifndef GCTL_MONITOR_H
#define GCTL_MONITOR_H

#include <stdint.h>
#include <sys/types.h>

#include <libgraid/graid.h>

#include "gctl_ctl.h"

/* The member states of a role the monitor tracks; enum graid_member_state's values. */
#define MON_STATE_UNKNOWN 255

struct mon_pending;

/* Hot spares' devices a holder's status is remembered for. */
#define MON_SPARE_PATHS 16

/* One array the monitor knows, served or not, by UUID. */
struct mon_array {
	uint8_t uuid[16];
	char uuid_text[37];
	char name[64];          /* its ARRAY line's name=, or "" */
	/* Served: a subscription on its holder's endpoint. */
	struct gctl_ctl ctl;    /* fd -1: not subscribed */
	int subscribed;
	uint32_t holder_pid;    /* the endpoint's process (SO_PEERCRED, or its status); 0 unknown */
	char holder_since[48];  /* its status's holder "since" (no spaces), "" unknown */
	uint64_t last_seq;      /* the last event number reported from this holder */
	int seq_known;          /* last_seq belongs to that holder (saved or seen) */
	/*
	 * A subscribe's replay (the events numbered up to replay_to, which the status taken after
	 * it has seen): held until whole, then each named only where sure (gctl_monitor_served.c).
	 */
	uint64_t replay_to;
	struct mon_pending *pend;
	int npend;
	uint8_t replay_state[GRAID_MAX_MEMBERS]; /* the roles' states at the replay's start */
	double retry_at;        /* no connect before this (gctl_now()) */
	int ctl_error;          /* the last subscription's failure, said once */
	int endpoint_seen;      /* its socket was in the run directory at the last look there */
	/* Role paths and states as last known (a holder's status, or a look). */
	int level;              /* RAID level (a holder's status, or a look); -1 unknown */
	unsigned nmembers;
	uint8_t state[GRAID_MAX_MEMBERS];
	char path[GRAID_MAX_MEMBERS][256];
	uint8_t id[GRAID_MAX_MEMBERS][16]; /* the role's device's member UUID (a look's); 0 unknown */
	unsigned nspares;
	/* Its holder's spares' devices (a status's): with its roles', not read by a look. */
	char spare_path[MON_SPARE_PATHS][256];
	unsigned nspare_paths;
	/* Unserved: the last look, which the next one is compared with. */
	int have_base;
	int known;              /* followed before: not new when found again */
	int look_failed;        /* the last look could not open it (reported once) */
	int found;              /* found by the last device scan */
	int served_now;         /* --oneshot/--test: its holder answered a status */
};

struct mon {
	const char *config;     /* --config, or NULL: graidctl's default */
	char run_dir[4000];
	char state_file[4096];  /* "" none */
	int state_loaded;       /* read (or found absent): only then is it written */
	const char *program;    /* --program, or NULL */
	double program_timeout;
	double delay;           /* seconds between looks at unserved arrays */
	int use_syslog;
	int oneshot;
	int test;
	int started;            /* the first round is over: arrays found later are new */
	struct mon_array **arr; /* pointers: an entry stays where it is as others are added */
	int narr;
	int look_soon;          /* a holder went away: look at its array now */
	int attention;          /* --oneshot: an array needs attention */
	int out_gone;           /* stdout's reader went away: the monitor stops */
	int lock_fd;            /* the state file's lock, held while following; -1 none */
};

/* One event to report. */
struct mon_event {
	const char *name;       /* the contract's name ("member-failed"), or the monitor's own */
	const struct mon_array *a;
	int role;               /* -1: none */
	uint64_t seq;           /* the holder's number; 0: derived by the monitor */
	int64_t time_ns;        /* CLOCK_REALTIME; 0: now */
	int unsure;             /* the role's device then is not known: named role:N */
	char detail[256];       /* "key=value ..." after the member */
};

/* gctl_monitor_report.c */
void mon_report_open(struct mon *m);
void mon_report(struct mon *m, const struct mon_event *e);
/* Reap the --program child, start the next queued one; seconds until it must be looked at. */
double mon_program_tick(struct mon *m);
/* Wait for queued --program runs (each within its timeout): at exit. */
void mon_program_drain(struct mon *m);
/* syslog priority of an event name. */
int mon_event_priority(const char *name);

/* gctl_monitor_served.c */
struct mon_array *mon_array_get(struct mon *m, const uint8_t uuid[16]);
/* Subscribe to every endpoint in the run directory not yet followed. */
void mon_endpoints_scan(struct mon *m);
/* Read what the subscription of @p a has; on its end, @p a is unserved again. */
void mon_served_read(struct mon *m, struct mon_array *a);
/* --oneshot / --test on served arrays: a status of each, no subscription. */
void mon_served_once(struct mon *m);
void mon_state_load(struct mon *m);
void mon_state_save(const struct mon *m);

/* What one look (or a holder's status) says: each role's state and device, and the spares. */
struct mon_snap {
	unsigned nmembers;
	uint8_t state[GRAID_MAX_MEMBERS];
	char path[GRAID_MAX_MEMBERS][256];
	uint8_t id[GRAID_MAX_MEMBERS][16]; /* member UUIDs from the probe; 0: unknown */
	unsigned nspares;
	int unclean;             /* not closed cleanly, no holder: the next open resyncs */
	int elsewhere;           /* its owner record names another host, which may hold it */
	uint64_t resync_regions; /* the write-intent bitmap's regions it will resync */
};

/* gctl_monitor_look.c: every array on the host's devices that is not subscribed. */
/*
 * The events between what @p a last knew and @p now (source= @p source on their lines);
 * @p a then knows @p now's states (its paths: the caller's to take).
 */
void mon_diff(struct mon *m, struct mon_array *a, const struct mon_snap *now, const char *source);
void mon_look_round(struct mon *m);
/* "degraded" when a role of @p a is not active (from its last known states). */
int mon_array_degraded(const struct mon_array *a);
/* More roles out than @p a's level tolerates (its last known states); 0 when not known. */
int mon_array_lost(const struct mon_array *a);
const char *mon_state_word(int state);

#endif /* GCTL_MONITOR_H */
