/* SPDX-License-Identifier: MIT */
/* The control endpoint's client side: connect, hello, one request line and its reply line. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

/*
 * A request is served to its end before the reply is sent: a replace writes superblocks, a
 * scrub-stop waits for the scrub's batch. A minute covers those on a slow device and still
 * ends a wait on a holder that hangs.
 */
#define CTL_TIMEOUT_MS 60000
/*
 * A status reply grows with the bad-block logs (past the server's 256 KiB queue limit, which
 * one reply may pass); this bound only keeps a broken peer from taking all our memory.
 */
#define CTL_REPLY_MAX (64u << 20)

volatile sig_atomic_t gctl_ctl_interrupted;

static void ctl_on_sigint(int sig)
{
	(void)sig;
	gctl_ctl_interrupted = 1;
}

void gctl_ctl_catch_sigint(int on)
{
	static struct sigaction before;
	struct sigaction sa = { .sa_handler = ctl_on_sigint };

	if (!on) {
		sigaction(SIGINT, &before, NULL);
		return;
	}
	/* No SA_RESTART: the poll or sleep under way returns EINTR and sees the flag. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &before);
}

int gctl_ctl_sleep(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		if (gctl_ctl_interrupted)
			return -EINTR;
	return gctl_ctl_interrupted ? -EINTR : 0;
}

void gctl_ctl_init(struct gctl_ctl *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = CTL_TIMEOUT_MS;
}

void gctl_ctl_close(struct gctl_ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
	c->fd = -1;
}

/* Wait for @p events on the socket until @p deadline (gctl_now()); EINTR-safe. */
static int ctl_wait(struct gctl_ctl *c, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = events };
		double left = deadline - gctl_now();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n < 0 && gctl_ctl_interrupted)
			return -EINTR;
	}
}

static int ctl_send(struct gctl_ctl *c, const char *line, size_t len, double deadline)
{
	while (len) {
		ssize_t n = send(c->fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			line += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		n = ctl_wait(c, POLLOUT, deadline);
		if (n)
			return (int)n;
	}
	return 0;
}

/* One line (without its newline, NUL-terminated) into *@p line; the rest stays buffered. */
static int ctl_read_line(struct gctl_ctl *c, char **line, size_t *used, double deadline)
{
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		ssize_t n;
		int rc;

		if (nl) {
			*nl = '\0';
			*line = c->buf;
			*used = (size_t)(nl - c->buf) + 1;
			return 0;
		}
		if (c->len >= CTL_REPLY_MAX)
			return -EMSGSIZE;
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? 2 * c->cap : 131072;
			char *b = realloc(c->buf, cap);

			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = ctl_wait(c, POLLIN, deadline);
		if (rc)
			return rc;
	}
}

static void ctl_consume(struct gctl_ctl *c, size_t used)
{
	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
}

static const char *ctl_transport_why(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return "no reply in time (a minute; 5 s for status)";
	case -ECONNRESET:
		return "the holder closed the connection";
	case -EMSGSIZE:
		return "its reply was longer than graidctl reads";
	case -EINTR:
		return "interrupted";
	default:
		return strerror(-rc);
	}
}

int gctl_ctl_call(struct gctl_ctl *c, struct json_object *req, struct json_object **reply,
		  char *why, size_t size)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	double deadline = gctl_now() + c->timeout_ms / 1000.0;
	struct json_object *r, *ok, *err;
	size_t used = 0;
	char *line = NULL;
	int rc;

	*reply = NULL;
	c->broken = 1;
	if (!text)
		return -ENOMEM;
	rc = ctl_send(c, text, strlen(text), deadline);
	if (!rc)
		rc = ctl_send(c, "\n", 1, deadline);
	if (!rc)
		rc = ctl_read_line(c, &line, &used, deadline);
	if (rc) {
		snprintf(why, size, "%s", ctl_transport_why(rc));
		return rc;
	}
	r = json_tokener_parse(line);
	ctl_consume(c, used);
	if (!r || !json_object_is_type(r, json_type_object) ||
	    !json_object_object_get_ex(r, "ok", &ok) || !json_object_is_type(ok, json_type_boolean)) {
		json_object_put(r);
		snprintf(why, size, "its reply is not a control protocol reply");
		return -EPROTO;
	}
	c->broken = 0;
	if (json_object_get_boolean(ok)) {
		*reply = r;
		return 0;
	}
	rc = (int)gctl_ctl_u64(r, "errno");
	snprintf(why, size, "%s", json_object_object_get_ex(r, "error", &err) &&
				  json_object_is_type(err, json_type_string) ?
				  json_object_get_string(err) : "(no text)");
	json_object_put(r);
	return rc > 0 && rc < 4096 ? -rc : -EPROTO;
}

int gctl_ctl_unknown_op(int rc, const char *why)
{
	return rc == -EOPNOTSUPP && strncmp(why, "unknown op", 10) == 0;
}

int gctl_ctl_connect(struct gctl_ctl *c, const char *path, char *why, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct json_object *req, *reply;
	uint64_t protocol;
	size_t len = strlen(path);
	int rc;

	if (len >= sizeof(sa.sun_path) || len >= sizeof(c->path)) {
		snprintf(why, size, "%s", strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(c->path, path, len + 1);
	memcpy(sa.sun_path, path, len + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		rc = -errno;
		snprintf(why, size, "%s", strerror(-rc));
		return rc;
	}
	/*
	 * A UNIX socket's connect waits for room in the listener's backlog without end (a
	 * holder whose endpoint is stuck in a long request, with others queued before us): the
	 * send timeout bounds it (EAGAIN when it runs out).
	 */
	{
		struct timeval tv = { .tv_sec = c->timeout_ms / 1000,
				      .tv_usec = (c->timeout_ms % 1000) * 1000 };

		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		if (rc == -ETIMEDOUT)
			snprintf(why, size, "it accepted no connection within %u s", c->timeout_ms / 1000);
		else
			snprintf(why, size, "%s", strerror(-rc));
		gctl_ctl_close(c);
		return rc;
	}
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("hello"));
	rc = gctl_ctl_call(c, req, &reply, why, size);
	json_object_put(req);
	if (rc) {
		gctl_ctl_close(c);
		return rc;
	}
	protocol = gctl_ctl_u64(reply, "protocol");
	snprintf(c->version, sizeof(c->version), "%s", gctl_ctl_str(reply, "version"));
	json_object_put(reply);
	if (protocol != GRAID_CONTROL_PROTOCOL) {
		snprintf(why, size, "it speaks control protocol %llu, this graidctl %d",
			 (unsigned long long)protocol, GRAID_CONTROL_PROTOCOL);
		gctl_ctl_close(c);
		return -EPROTO;
	}
	return 0;
}

uint64_t gctl_ctl_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_uint64(v);
}

const char *gctl_ctl_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

int gctl_ctl_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return 0;
	return json_object_get_boolean(v);
}
