/* SPDX-License-Identifier: MIT */
/* A client of a served array's control endpoint (docs/CONTROL.md): one request, one reply. */
#ifndef GCTL_CTL_H
#define GCTL_CTL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* One connection to a holder's endpoint, after its hello. */
struct gctl_ctl {
	int fd;              /* -1: not connected */
	char *buf;           /* bytes read past the last reply line */
	size_t len, cap;
	uint32_t holder_pid; /* the holder, as the look that found it saw it */
	char holder[192];    /* "pid N (prog) on host h since ..." */
	char version[64];    /* the holder's libgraid, from its hello */
	char path[108];      /* the socket */
	int broken;          /* the last call failed in transport, not with an error reply */
	unsigned timeout_ms; /* how long a connect, or a request and its reply, may take */
};

/* Set by the SIGINT handler gctl_ctl_catch_sigint() installs: the user asked to detach. */
extern volatile sig_atomic_t gctl_ctl_interrupted;

void gctl_ctl_init(struct gctl_ctl *c);
/*
 * Connect to @p path and check the holder speaks protocol 1 (its hello). 0, or -errno:
 * -ENOENT / -ECONNREFUSED nobody serves there; -EPROTO another protocol (@p why says which);
 * the errors of connect() and gctl_ctl_call(). @p why gets the reason in words.
 */
int gctl_ctl_connect(struct gctl_ctl *c, const char *path, char *why, size_t size);
/*
 * Send @p req (one line), read its reply line. 0 with *@p reply the reply ("ok": true; the
 * caller puts it); -E from an "ok": false reply, with its text in @p why; or the transport's
 * -ETIMEDOUT, -ECONNRESET (closed), -EPROTO (not a reply), -EMSGSIZE (past the reply bound),
 * -EINTR (gctl_ctl_interrupted was set meanwhile). @p req is not consumed.
 */
int gctl_ctl_call(struct gctl_ctl *c, struct json_object *req, struct json_object **reply,
		  char *why, size_t size);
/* An "ok": false reply that says the holder does not know the op (its libgraid is older). */
int gctl_ctl_unknown_op(int rc, const char *why);
void gctl_ctl_close(struct gctl_ctl *c);
/* SIGINT sets gctl_ctl_interrupted and interrupts the wait (on: 1), or as before (0). */
void gctl_ctl_catch_sigint(int on);
/* Sleep @p s seconds, cut short by SIGINT; 0, or -EINTR when gctl_ctl_interrupted. */
int gctl_ctl_sleep(double s);

/* Reply fields, 0 / "" / false when absent or of another type. */
uint64_t gctl_ctl_u64(struct json_object *o, const char *key);
const char *gctl_ctl_str(struct json_object *o, const char *key);
int gctl_ctl_bool(struct json_object *o, const char *key);

#endif /* GCTL_CTL_H */

/*
 * gctl_served.c: the commands' halves that go through a holder's endpoint (@p c connected
 * by gctl_open_served()). Each prints as the command does on an unserved array and returns
 * its exit code; @p c is closed by the caller.
 */
int gctl_served_fail(struct gctl_ctl *c, unsigned idx);
int gctl_served_replace(struct gctl_ctl *c, unsigned idx, const char *newpath, int rebuild,
			uint64_t rate);
/* graidctl replace --keep-in-service: @p newpath "spare" takes the array's hot spare. */
int gctl_served_replace_keep(struct gctl_ctl *c, unsigned idx, const char *newpath,
			     uint64_t rate);
int gctl_served_rebuild(struct gctl_ctl *c, const char *cmd, uint64_t rate);
int gctl_served_scrub(struct gctl_ctl *c, int repair, int resume);
int gctl_served_scrub_stop(struct gctl_ctl *c);
int gctl_served_spare_add(struct gctl_ctl *c, const char *path);
int gctl_served_spare_remove(struct gctl_ctl *c, const char *path);
