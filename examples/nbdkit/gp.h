/* SPDX-License-Identifier: MIT */
/* nbdkit-graid-plugin's shared state, and what its start, log and command-line files offer. */
#ifndef GP_H
#define GP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <libgraid/graid.h>

struct metrics_http;

/* health-interval='s largest: a day (a longer one is as good as none). */
#define GP_HEALTH_INTERVAL_MAX_MS 86400000u

/* nbdkit's --log, as its command line gave it. */
enum gp_log_to { GP_LOG_DEFAULT, GP_LOG_STDERR, GP_LOG_SYSLOG, GP_LOG_NULL };

/* Where this process's messages end up, as nbdkit decides for its own errors. */
enum gp_sink { GP_SINK_STDERR, GP_SINK_SYSLOG, GP_SINK_NULL };

/* What nbdkit's command line says about the server (gp_server.c). */
struct gp_server {
	bool readonly;         /* -r: every connection is read-only */
	bool run;              /* --run: the server is a child that nbdkit forks, stderr kept */
	enum gp_log_to log_to; /* --log */
};

/*
 * One array per server, not per connection: every client sees the same bytes, a flush
 * reaches every member whichever connection sends it (so multi-conn is safe), and the
 * members' superblocks have one owner.
 */
struct gp_state {
	char **members;            /* absolute paths, from member= (in any order) */
	unsigned nmembers;
	char *backend;             /* backend=, NULL: $GRAID_BACKEND, else auto */
	/* rebuild-max-rate= and rebuild-busy-rate=: bytes a second per member, 0 none */
	struct graid_rebuild_options rebuild;
	bool rebuild_set;
	unsigned io_timeout_ms;    /* io-timeout=: graid_array_set_io_timeout(), 0 none */
	unsigned health_interval_ms; /* health-interval=: graid_health_options::interval_ms */
	bool health_set;
	char *lease;               /* lease=: graid_open_options::lease, NULL none */
	bool degraded_ok;          /* degraded=1: serve with roles that have no member */
	bool no_control;           /* control=off: no control endpoint (docs/CONTROL.md) */
	char *run_dir;             /* run-dir=: the endpoint's run directory, NULL the library's */
	char *metrics;             /* metrics=ADDR:PORT: GET /metrics served there, NULL none */
	struct metrics_http *metrics_http; /* serving it, from after_fork to cleanup */
	struct gp_server srv;      /* read in get_ready */
	struct graid_array *array; /* opened in after_fork, closed in cleanup */
	struct graid_array_info info;
	/*
	 * Writes that are not block-aligned read, patch and write back their edge blocks.
	 * Two such writes to different bytes of one block must not interleave (one would
	 * write back the other's old bytes), nor may an aligned write to that block land
	 * between an edge read and its write-back. Unaligned writes therefore take this lock
	 * exclusively and aligned ones shared: aligned writes still run in parallel, and the
	 * clients that honour the advertised block size never wait.
	 */
	pthread_rwlock_t edge_lock;
	/* The start (gp_start.c). */
	pid_t ready_pid;           /* the process nbdkit called get_ready in; 0 before */
	int lock_fd;               /* the array's start lock, held while serving; -1 none */
	int report_fd[2];          /* after_fork's verdict, to ready_pid; -1 none */
	bool forked;               /* ready_pid has forked the server off since get_ready */
};

extern struct gp_state gp;

/* ---- gp_server.c ---- */

/* Read -r, --run and --log from nbdkit's command line; 0, or -1 (said why). */
int gp_server_read(struct gp_server *srv);

/* ---- gp_log.c ---- */

/* The library's log callback (graid_log_set()). */
void gp_log_lib(void *arg, int level, const char *msg);

/* The plugin's own errors at the start: nbdkit_error(), or the check's relay. */
void gp_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A warning of the plugin's own, where the library's warnings go. */
void gp_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* In the check's process: every message goes to @p fd as a record, for gp_log_replay(). */
void gp_log_relay(int fd);

/*
 * Print the records a check wrote (@p len bytes, and one more to spare), each text once;
 * the texts are kept for gp_log_start().
 */
void gp_log_replay(char *records, size_t len);

/*
 * From here to gp_log_started(): a text printed already (by gp_log_replay(), to the same
 * place) goes to the debug log only, and errors are kept when @p keep_errors.
 */
void gp_log_start(bool keep_errors);

/* The errors kept since gp_log_start() (a string to free, "" none); texts are forgotten. */
char *gp_log_started(void);

/* Where this process's messages go; gp_sink_of(true): the get_ready process's. */
enum gp_sink gp_sink_of(bool ready_process);

/* ---- gp_start.c ---- */

/* .get_ready: the check before any fork; 0, or -1 (said why). */
int gp_start_check(void);

/* .after_fork: the array, opened where it is served; 0, or -1 (said why). */
int gp_start_serve(void);

#endif /* GP_H */
