/* SPDX-License-Identifier: MIT */
/* What graidctl's files share: exit codes, the subcommand table, and the small helpers. */
#ifndef GCTL_H
#define GCTL_H

#include <stdint.h>
#include <stdio.h>

#include <libgraid/graid.h>

/* Exit codes, documented in graidctl.1 and --help; scripts depend on them. */
enum gctl_exit {
	GCTL_EXIT_OK = 0,          /* done; for status: the array is clean */
	GCTL_EXIT_FAILED = 1,      /* the operation failed (the message says why) */
	GCTL_EXIT_USAGE = 2,       /* bad command line: nothing was touched */
	GCTL_EXIT_DEGRADED = 3,    /* done, but the array needs attention (degraded, mismatches) */
	GCTL_EXIT_BROKEN = 4,      /* the array cannot be assembled: too many members lost */
	GCTL_EXIT_UNSUPPORTED = 5, /* this libgraid lacks the operation */
};

/* One subcommand: run() gets argv[0] = "graidctl NAME" so getopt names it in messages. */
struct gctl_cmd {
	const char *name;
	const char *synopsis; /* one line after "graidctl NAME" */
	const char *summary;  /* one line for the command list */
	int (*run)(int argc, char **argv);
	void (*help)(FILE *f);
};

/* Subcommands (cmd_*.c). */
int gctl_cmd_create(int argc, char **argv);
void gctl_help_create(FILE *f);
int gctl_cmd_status(int argc, char **argv);
void gctl_help_status(FILE *f);
int gctl_cmd_iostat(int argc, char **argv);
void gctl_help_iostat(FILE *f);
int gctl_cmd_fail(int argc, char **argv);
void gctl_help_fail(FILE *f);
int gctl_cmd_lease_init(int argc, char **argv);
void gctl_help_lease_init(FILE *f);
int gctl_cmd_backends(int argc, char **argv);
void gctl_help_backends(FILE *f);
int gctl_cmd_bench(int argc, char **argv);
void gctl_help_bench(FILE *f);
int gctl_cmd_replace(int argc, char **argv);
void gctl_help_replace(FILE *f);
int gctl_cmd_rebuild(int argc, char **argv);
void gctl_help_rebuild(FILE *f);
int gctl_cmd_grow(int argc, char **argv);
void gctl_help_grow(FILE *f);
int gctl_cmd_convert(int argc, char **argv);
void gctl_help_convert(FILE *f);
int gctl_cmd_scrub(int argc, char **argv);
void gctl_help_scrub(FILE *f);
int gctl_cmd_spare(int argc, char **argv);
void gctl_help_spare(FILE *f);
int gctl_cmd_list(int argc, char **argv);
void gctl_help_list(FILE *f);
int gctl_cmd_assemble(int argc, char **argv);
void gctl_help_assemble(FILE *f);
int gctl_cmd_incremental(int argc, char **argv);
void gctl_help_incremental(FILE *f);
int gctl_cmd_metrics(int argc, char **argv);
void gctl_help_metrics(FILE *f);
int gctl_cmd_monitor(int argc, char **argv);
void gctl_help_monitor(FILE *f);

/* graidctl.c: the synopsis line that each command's help opens with. */
void gctl_print_cmd_usage(FILE *f, const char *name);

/* gctl_common.c: messages, opening and closing arrays, small conversions. */
void gctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gctl_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How gctl_open() assembles: to change the array (the default), to look, forced. */
#define GCTL_OPEN_LOOK 0x1u  /* read-only: takes no lock, writes nothing on any member */
#define GCTL_OPEN_FORCE 0x2u /* GRAID_OPEN_FORCE: take back members recorded failed */
#define GCTL_OPEN_TAKEOVER 0x4u /* GRAID_OPEN_TAKEOVER: another host's array, taken over */
#define GCTL_OPEN_RESERVE 0x8u  /* GRAID_OPEN_RESERVE: the members' persistent reservations */
#define GCTL_OPEN_RESYNC_LATER 0x10u /* GRAID_OPEN_RESYNC_BACKGROUND: a crash's resync is not waited for */
/* --degraded was given: writable opens may leave roles out (graidctl.c sets it). */
extern int gctl_degraded_ok;
int gctl_open(const char *cmd, char **members, int nmembers, const char *backend,
	      unsigned how, struct graid_array **out);
/*
 * gctl_open() for a command that puts @p newdev into role @p role (replace; -1: a spare):
 * that role being out never needs --degraded, and a refusal for a role left out says so
 * when @p newdev is that role's own member (the new device's path forgotten).
 */
int gctl_open_for(const char *cmd, char **members, int nmembers, const char *backend,
		  unsigned how, int role, const char *newdev, struct graid_array **out);
/*
 * gctl_open_for() for a command the holder's control endpoint can do (fail, replace,
 * rebuild, scrub, spare): an array a live process holds with an endpoint gives
 * GCTL_EXIT_OK with *@p out NULL and @p ctl connected (its hello done); one held without
 * an endpoint is refused naming the holder and how to get one. Unserved: as gctl_open_for.
 */
struct gctl_ctl;
int gctl_open_served(const char *cmd, char **members, int nmembers, int role,
		     const char *newdev, struct graid_array **out, struct gctl_ctl *ctl);
int gctl_close(const char *cmd, struct graid_array *a);
/* @p look: only reading is needed (status), so a path not writable is not a problem. */
void gctl_explain_paths(const char *cmd, char **paths, int n, int look);
void gctl_explain_backend(const char *cmd, const char *name);
const char *gctl_level_reason(int err);
int gctl_parse_index(const char *s, unsigned *out);
const char *gctl_state_name(int state);
void gctl_uuid_format(const uint8_t uuid[16], char out[37]);
double gctl_now(void);

/* gctl_log.c: the library's log, forwarded to stderr; held back while a look runs. */
void gctl_log_forward(void *arg, int level, const char *msg);
void gctl_log_hold(void);
/* Stop holding; print what was held when @p print (each line once), else drop it. */
void gctl_log_release(int print);
/*
 * Lines held so far, taken out of the hold (which goes on) to be given back later with
 * gctl_log_restore(): a look run meanwhile holds and drops only its own.
 */
struct gctl_log_saved {
	size_t n;
	void *v;
};
void gctl_log_take(struct gctl_log_saved *s);
/* Print (@p print) or drop lines taken with gctl_log_take(). */
void gctl_log_restore(struct gctl_log_saved *s, int print);

/* gctl_look.c: a read-only open before a command writes, and what became of each path. */
struct gctl_look {
	struct graid_array_info info;
	struct graid_given_info *given; /* one per path given */
	int n;
	char ctl_path[108]; /* where a holder serves its control endpoint ("" unknown) */
};
/* Open read-only (no lock, nothing written), take what it says, close. 0 or -errno. */
int gctl_look_open(char **members, int n, struct gctl_look *l);
void gctl_look_free(struct gctl_look *l);
/* The path given for @p role that was left out (its index), or -1. */
int gctl_look_left_out(const struct graid_given_info *given, int n, unsigned role);
/* enum graid_given_verdict as the word status --json prints. */
const char *gctl_verdict_name(int verdict);

/* cmd_maint.c: rebuild every role that needs it, with progress; --max-rate's parser. */
int gctl_rebuild(const char *cmd, struct graid_array *a, uint64_t max_rate);
/*
 * After a rebuild or scrub: blocks in the members' bad-block logs are said on stderr, and
 * GCTL_EXIT_DEGRADED returned (the array needs attention); else GCTL_EXIT_OK.
 */
int gctl_report_bad_blocks(const char *cmd, struct graid_array *a);
/* The same, from the count of 4 KiB blocks in the bad-block logs (a holder's status). */
int gctl_report_bad_block_count(const char *cmd, uint64_t blocks);
/* A finished scrub's report on stdout, as `graidctl scrub` prints it; its exit code. */
void gctl_scrub_print(const struct graid_scrub_report *rep, int repair, double secs);
int gctl_scrub_exit(const struct graid_scrub_report *rep);
/* The scrub's refusal of a degraded array (-EAGAIN), in words. */
void gctl_scrub_degraded(void);
/* Why `spare remove` of @p path failed (-errno @p rc), on stderr. */
void gctl_spare_remove_err(const char *path, int rc);
int gctl_parse_rate(const char *cmd, const char *s, uint64_t *rate);

/* gctl_size.c: "64K" <-> bytes. */
int gctl_size_parse(const char *s, uint64_t *out);
void gctl_size_format(uint64_t bytes, char *buf, size_t len);

/* gctl_progress.c: a progress bar on a terminal, periodic lines elsewhere. */
struct gctl_progress {
	const char *what;  /* "rebuild" */
	int tty;           /* stdout is a terminal */
	double t0;         /* when it started */
	double last;       /* when it last printed */
	int printed;       /* a bar is on the screen (needs a newline before other output) */
	int started;       /* a report came: base and t1 hold */
	uint64_t base;     /* done at the first report: work a resumed job did earlier */
	double t1;         /* when the first report came */
};
void gctl_progress_init(struct gctl_progress *p, const char *what);
void gctl_progress_update(void *arg, uint64_t done, uint64_t total);
void gctl_progress_finish(struct gctl_progress *p, int ok);

#endif /* GCTL_H */
