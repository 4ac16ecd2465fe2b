/* SPDX-License-Identifier: MIT */
/* A test's client of the control endpoint (docs/CONTROL.md): connect, send, one reply line. */
#ifndef LIBGRAID_TESTS_CTLUTIL_H
#define LIBGRAID_TESTS_CTLUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t cu_now_ms(void);
/* A connection to the socket at @p path: its descriptor, or -errno from connect(). */
int cu_connect(const char *path);
/* Send all of @p s (asserted). */
void cu_send_all(int fd, const char *s, size_t n);
/*
 * One reply line within 10 s (asserted), parsed (asserted JSON); NULL at EOF or a reset.
 * Read a byte at a time: nothing past the line is taken from the socket.
 */
struct json_object *cu_read_reply(int fd);
/* Send @p line, return its reply (asserted). */
struct json_object *cu_ask(int fd, const char *line);
/* Field @p key of @p o (asserted present). */
struct json_object *cu_field(struct json_object *o, const char *key);

#endif /* LIBGRAID_TESTS_CTLUTIL_H */
