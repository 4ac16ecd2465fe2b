/* SPDX-License-Identifier: MIT */
/* What the control endpoint's files share: its socket, and the requests it serves. */
#ifndef GRAID_CONTROL_H
#define GRAID_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "array/array.h"

/* The socket bound and listening, and what removing it later must check. */
struct control_sock {
	int fd;
	char path[108];          /* sizeof(struct sockaddr_un::sun_path) */
	dev_t dev;               /* the socket file's identity: remove it only if still ours */
	ino_t ino;
};

/*
 * The socket's path, RUN_DIR/UUID.ctl, to @p path; RUN_DIR is @p dir, else $GRAID_RUN_DIR,
 * else /run/graid. 0 or -ENAMETOOLONG (also when it does not fit a socket address).
 */
int control_sock_path(const uint8_t uuid[16], const char *dir, char *path, size_t size);

/* Make the run directory (0700) if missing; it must be this user's, writable by nobody else. */
int control_run_dir(const char *dir);
/*
 * Bind and listen at @p path (non-blocking, close-on-exec), mode 0600, race-free: bound in
 * a private directory and renamed into place. A stale socket is replaced, a live one is
 * not (-EBUSY). 0 or -errno, logged.
 */
int control_sock_open(struct control_sock *s, const char *path);
/* Close it, and remove its path if the file there is still this socket. */
void control_sock_close(struct control_sock *s);

/*
 * Serve one request line (no newline, NUL-terminated) on the array: the reply, one JSON
 * object and its newline, malloc'd; NULL when out of memory.
 */
char *control_request(struct graid_array *a, const char *line);
/* A reply with no id: @p err (a positive errno) and @p why. As control_request(). */
char *control_refusal(int err, const char *why);

struct json_object;

/*
 * json-c asserts on a NULL object, and its constructors return NULL when out of memory: a
 * reply, or a part of one, that could not be made is skipped (the library never aborts).
 * Add @p v to object @p o under @p key, or to array @p list; @p v is freed where it cannot go.
 */
void control_json_add(struct json_object *o, const char *key, struct json_object *v);
void control_json_push(struct json_object *list, struct json_object *v);
/* A request's unsigned integer field @p key, at most @p max: 0, or -EINVAL with @p why. */
int control_get_uint(struct json_object *req, const char *key, uint64_t max, uint64_t *v,
		     char *why, size_t size);

/*
 * The subscribe op (control_events.c), as the other ops of control_ops.c: the reply's
 * "seq", the newest event's number. On success it leaves the subscription for
 * control_subscribed(), which the connection calls after each control_request().
 */
int op_subscribe(struct graid_array *a, struct json_object *req, struct json_object *reply,
		 char *why, size_t size);
/*
 * Whether the request control_request() just served on this thread was a subscribe that
 * succeeded; if so, *@p after: the number after which its events are sent. Clears it.
 */
bool control_subscribed(uint64_t *after);
/*
 * The event lines (docs/CONTROL.md) after *@p after that fit in @p room bytes of @p buf,
 * whole lines only, a "missed" line first where the ring no longer holds the next ones;
 * *@p after advanced to the last one written. Returns the bytes written.
 */
size_t control_event_lines(struct graid_array *a, uint64_t *after, char *buf, size_t room);

/* control_scrub.c: the scrub an endpoint runs in a thread of its own (one at a time). */
struct control_scrub;
/* 0, or -errno. */
int control_scrub_new(struct graid_array *a, struct control_scrub **out);
/*
 * Stop and join a scrub still running (NULL: nothing); the struct stays, for another
 * thread's control_scrub_is_thread(). Not on its thread.
 */
void control_scrub_join(struct control_scrub *s);
/* control_scrub_join(), then free it (NULL: nothing). Not on its thread. */
void control_scrub_free(struct control_scrub *s);
/* Start graid_array_scrub(@p flags) in its thread: 0, -EBUSY one runs, or -errno. */
int control_scrub_start(struct control_scrub *s, unsigned flags);
/*
 * Ask a running scrub to stop and wait (boundedly) for it to end: *stopped false when none
 * was running. 0.
 */
int control_scrub_stop(struct control_scrub *s, bool *stopped);
/* Ask a running scrub to stop, without waiting (the endpoint is being stopped). */
void control_scrub_ask_stop(struct control_scrub *s);
/* Whether the calling thread is the scrub's (a callback it ran). */
bool control_scrub_is_thread(struct control_scrub *s);
/* SCRUBOBJ (docs/CONTROL.md), or NULL (JSON null) when no scrub was started. */
struct json_object *control_scrub_json(struct control_scrub *s);

/* control_jobs.c: the ops that start, follow and stop long-running work (control_ops.c's table). */
int control_op_rebuild(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size);
int control_op_scrub_start(struct graid_array *a, struct json_object *req,
			   struct json_object *r, char *why, size_t size);
int control_op_scrub_stop(struct graid_array *a, struct json_object *req,
			  struct json_object *r, char *why, size_t size);
int control_op_scrub_status(struct graid_array *a, struct json_object *req,
			    struct json_object *r, char *why, size_t size);
/*
 * control_grow.c: the grow op (graid_array_grow() of the devices in field `paths`; field
 * `bytes_per_s`, optional: the rebuild's rate limit set for the move, kept only if the grow
 * starts).
 */
int control_op_grow(struct graid_array *a, struct json_object *req, struct json_object *r,
		    char *why, size_t size);
/*
 * control_convert.c: the convert op (graid_array_convert() to field `level`, done before
 * the reply: a metadata-only level change).
 */
int control_op_convert(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size);
/* RESHAPEOBJ (docs/CONTROL.md): graid_array_info's reshape fields, for status and grow. */
struct json_object *control_reshape_json(const struct graid_array_info *in);
/* control_metrics.c: the metrics op (graid_metrics_write() of the endpoint's array). */
int control_op_metrics(struct graid_array *a, struct json_object *req, struct json_object *r,
		       char *why, size_t size);

/*
 * control_health.c: HEALTHOBJ (docs/CONTROL.md) of role or spare @p idx for status, or NULL
 * (JSON null) when the watch has neither a sample of its device nor a rule holding.
 */
struct json_object *control_health_json(struct graid_array *a, unsigned idx);

/* control_stats.c: STATSOBJ (docs/CONTROL.md), the `stats` op's reply and status's "stats". */
struct json_object *control_stats_json(struct graid_array *a);
int control_op_stats(struct graid_array *a, struct json_object *req, struct json_object *r,
		     char *why, size_t size);

#endif
