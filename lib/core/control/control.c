/* SPDX-License-Identifier: MIT */
/* The control endpoint's thread: clients of a UNIX socket served by poll(), none able to stall it. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "common/signals.h"
#include "control/control.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_IDLE_MS 60000u

struct client {
	int fd;
	uint64_t last_ns;        /* the last byte read or written: idle since */
	size_t in_len;
	char in[GRAID_CONTROL_REQUEST_MAX + 1];
	size_t out_off, out_len; /* bytes sent, bytes queued, of out */
	size_t out_cap;
	char *out;               /* grown to what is queued: about GRAID_CONTROL_REPLY_MAX */
};

struct array_control {
	struct graid_array *a;
	struct control_sock sock;
	int wake;                /* eventfd: stop */
	pthread_t thread;
	pid_t pid;               /* the process whose thread serves it */
	unsigned max_clients;
	uint64_t idle_ns;
	struct client **clients; /* max_clients slots, NULL free */
};

static void client_drop(struct array_control *c, unsigned i, const char *why)
{
	struct client *cl = c->clients[i];

	graid__log(GRAID_LOG_INFO, "control: client closed: %s", why);
	close(cl->fd);
	free(cl->out);
	free(cl);
	c->clients[i] = NULL;
}

/* Send what is queued, without waiting. 0, or -1: the client is gone. */
static int client_flush(struct client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		cl->out_off += (size_t)n;
		cl->last_ns = graid__now_ns();
	}
	cl->out_off = cl->out_len = 0;
	/* Grown for one long reply: given back once it left. */
	if (cl->out_cap > GRAID_CONTROL_REPLY_MAX) {
		free(cl->out);
		cl->out = NULL;
		cl->out_cap = 0;
	}
	return 0;
}

/*
 * Queue a reply. 0, or -1: the client has not been reading (replies queued past the limit).
 * A reply alone is always taken, even one longer than the limit (the status of a large
 * array), so that what a client gets never depends on the array's size.
 */
static int client_queue(struct client *cl, char *reply)
{
	size_t n, left;

	if (!reply)
		return -1;
	n = strlen(reply);
	left = cl->out_len - cl->out_off;
	if (left && left + n > GRAID_CONTROL_REPLY_MAX) {
		free(reply);
		return -1;
	}
	if (cl->out_off) {
		memmove(cl->out, cl->out + cl->out_off, left);
		cl->out_len = left;
		cl->out_off = 0;
	}
	if (left + n > cl->out_cap) {
		size_t cap = cl->out_cap * 2 < GRAID_CONTROL_REPLY_MAX ? cl->out_cap * 2 :
			     GRAID_CONTROL_REPLY_MAX;
		char *p;

		cap = cap > left + n ? cap : left + n < 4096 ? 4096 : left + n;
		p = realloc(cl->out, cap);
		if (!p) {
			free(reply);
			return -1;
		}
		cl->out = p;
		cl->out_cap = cap;
	}
	memcpy(cl->out + cl->out_len, reply, n);
	cl->out_len += n;
	free(reply);
	return 0;
}

/* Serve every whole line read. 0, or the reason the client is dropped. */
static const char *client_lines(struct array_control *c, struct client *cl)
{
	char *start = cl->in, *nl;

	while ((nl = memchr(start, '\n', cl->in_len - (size_t)(start - cl->in)))) {
		*nl = '\0';
		if (memchr(start, '\0', (size_t)(nl - start)))
			return "a request holds a NUL byte";
		if (client_queue(cl, control_request(c->a, start)))
			return "its replies were not read (reply buffer full)";
		start = nl + 1;
	}
	cl->in_len -= (size_t)(start - cl->in);
	memmove(cl->in, start, cl->in_len);
	if (cl->in_len >= GRAID_CONTROL_REQUEST_MAX)
		return "a request longer than the limit";
	return NULL;
}

/*
 * Read what the client sent and serve it: one read per wakeup, so that one busy client
 * cannot keep the others waiting. NULL, or the reason the client is dropped.
 */
static const char *client_read(struct array_control *c, struct client *cl)
{
	ssize_t n = recv(cl->fd, cl->in + cl->in_len, GRAID_CONTROL_REQUEST_MAX - cl->in_len,
			 MSG_DONTWAIT);
	const char *why;

	if (n == 0)
		return "it closed the connection";
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NULL :
		       "a receive error";
	cl->last_ns = graid__now_ns();
	cl->in_len += (size_t)n;
	why = client_lines(c, cl);
	if (!why && client_flush(cl))
		why = "a send error";
	return why;
}

/* A peer of root or of this process's user; anyone else is told so and closed. */
static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return false;
	return cr.uid == 0 || cr.uid == geteuid();
}

static void refuse(int fd, int err, const char *why)
{
	char *r = control_refusal(err, why);

	if (r) {
		/* Best effort, never waited for: the socket is non-blocking. */
		ssize_t n = send(fd, r, strlen(r), MSG_DONTWAIT | MSG_NOSIGNAL);

		(void)n;
		free(r);
	}
	close(fd);
}

static void accept_one(struct array_control *c)
{
	struct client *cl;
	unsigned i;
	int fd = accept4(c->sock.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (!peer_allowed(fd)) {
		graid__log(GRAID_LOG_WARNING, "control: refused a peer that is neither root nor "
					      "this process's user");
		refuse(fd, EACCES, "permission denied: only root and the holder's user may "
				   "manage the array");
		return;
	}
	for (i = 0; i < c->max_clients && c->clients[i]; i++)
		;
	cl = i < c->max_clients ? calloc(1, sizeof(*cl)) : NULL;
	if (!cl) {
		refuse(fd, i < c->max_clients ? ENOMEM : EUSERS, i < c->max_clients ?
		       "out of memory" : "too many clients");
		return;
	}
	cl->fd = fd;
	cl->last_ns = graid__now_ns();
	c->clients[i] = cl;
}

/* The poll set: wake, listener, then clients; map[k] the client of pfd[k + 2]. */
static nfds_t poll_set(struct array_control *c, struct pollfd *pfd, unsigned *map, int *timeout)
{
	uint64_t now = graid__now_ns(), next = UINT64_MAX;
	nfds_t n = 2;

	pfd[0] = (struct pollfd){ .fd = c->wake, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = c->sock.fd, .events = POLLIN };
	for (unsigned i = 0; i < c->max_clients; i++) {
		struct client *cl = c->clients[i];

		if (!cl)
			continue;
		if (now - cl->last_ns >= c->idle_ns) {
			client_drop(c, i, "idle past the timeout");
			continue;
		}
		if (cl->last_ns + c->idle_ns - now < next)
			next = cl->last_ns + c->idle_ns - now;
		/* A client with replies waiting is not read: it must read them first. */
		pfd[n] = (struct pollfd){ .fd = cl->fd, .events = cl->out_len ? POLLOUT : POLLIN };
		map[n - 2] = i;
		n++;
	}
	*timeout = next == UINT64_MAX ? -1 : next / 1000000 >= INT_MAX ? INT_MAX :
		   (int)(next / 1000000 + 1);
	return n;
}

static void *control_main(void *arg)
{
	struct array_control *c = arg;
	struct pollfd *pfd = calloc(c->max_clients + 2, sizeof(*pfd));
	unsigned *map = calloc(c->max_clients, sizeof(*map));

	while (pfd && map) {
		int timeout;
		nfds_t n = poll_set(c, pfd, map, &timeout);

		if (poll(pfd, n, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		for (nfds_t k = 2; k < n; k++) {
			struct client *cl = c->clients[map[k - 2]];
			const char *why = NULL;

			if (!pfd[k].revents)
				continue;
			if (pfd[k].revents & (POLLERR | POLLNVAL))
				why = "a socket error";
			else if (cl->out_len && client_flush(cl))
				why = "a send error";
			else if (!cl->out_len && (pfd[k].revents & (POLLIN | POLLHUP)))
				why = client_read(c, cl);
			if (why)
				client_drop(c, map[k - 2], why);
		}
		if (pfd[1].revents & POLLIN)
			accept_one(c);
	}
	if (!pfd || !map)
		graid__log(GRAID_LOG_ERR, "control: out of memory; the endpoint stopped serving");
	free(pfd);
	free(map);
	return NULL;
}

static void control_free(struct array_control *c)
{
	for (unsigned i = 0; i < c->max_clients; i++)
		if (c->clients[i])
			client_drop(c, i, "the endpoint stopped");
	control_sock_close(&c->sock);
	if (c->wake >= 0)
		close(c->wake);
	free(c->clients);
	free(c);
}

static void control_stop_hook(struct graid_array *a)
{
	graid_array_control_stop(a);
}

GRAID_API int graid_array_control_path(struct graid_array *a, const char *run_dir, char *buf,
				       size_t size)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	int rc;

	if (!a || !buf)
		return -EINVAL;
	rc = graid_array_info(a, &in);
	return rc ? rc : control_sock_path(in.uuid, run_dir, buf, size);
}

static int control_new(struct graid_array *a, const struct graid_control_options *o,
		       struct array_control **out)
{
	struct array_control *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->a = a;
	c->sock.fd = -1;
	c->max_clients = o && o->max_clients ? o->max_clients : CONTROL_MAX_CLIENTS;
	c->idle_ns = (uint64_t)(o && o->idle_timeout_ms ? o->idle_timeout_ms : CONTROL_IDLE_MS) *
		     1000000u;
	c->clients = calloc(c->max_clients, sizeof(*c->clients));
	c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*out = c;
	if (!c->clients || c->wake < 0) {
		int rc = c->wake < 0 ? -errno : -ENOMEM;

		control_free(c);
		return rc;
	}
	return 0;
}

/*
 * Start and stop of any array's endpoint, so that two threads starting (or one starting, one
 * stopping) one handle's endpoint cannot both install or both free it. Never taken by an
 * endpoint's thread, so a stop may join one under it.
 */
static pthread_mutex_t control_start_lock = PTHREAD_MUTEX_INITIALIZER;

static int control_start_locked(struct graid_array *a, const struct graid_control_options *opts)
{
	const char *dir = opts ? opts->run_dir : NULL;
	struct array_control *c;
	char path[108];
	int rc;

	if (!a || (opts && opts->struct_size < sizeof(*opts)))
		return -EINVAL;
	if (a->read_only)
		return -EROFS;
	if (a->control)
		return -EALREADY;
	rc = graid_array_control_path(a, dir, path, sizeof(path));
	if (!rc)
		rc = control_run_dir(dir);
	if (!rc)
		rc = control_new(a, opts, &c);
	if (rc)
		return rc;
	rc = control_sock_open(&c->sock, path);
	if (!rc)
		rc = -graid__thread_create(&c->thread, NULL, control_main, c);
	if (rc) {
		control_free(c);
		return rc;
	}
	c->pid = getpid();
	a->control = c;
	a->control_stop = control_stop_hook;
	graid__log(GRAID_LOG_NOTICE, "control: serving %s", path);
	return 0;
}

GRAID_API int graid_array_control_start(struct graid_array *a,
					const struct graid_control_options *opts)
{
	int rc;

	pthread_mutex_lock(&control_start_lock);
	rc = control_start_locked(a, opts);
	pthread_mutex_unlock(&control_start_lock);
	return rc;
}

static int control_stop_locked(struct graid_array *a)
{
	struct array_control *c;
	uint64_t one = 1;

	if (!a)
		return -EINVAL;
	c = a->control;
	if (!c)
		return 0;
	/*
	 * A forked child's copy: its thread and its socket are the parent's, who still serves
	 * them (the eventfd would wake the parent's thread, the unlink remove its socket). The
	 * client list was copied while that thread may have been changing it, so it is left,
	 * not freed; the descriptors that never change after the start are closed.
	 */
	if (c->pid != getpid()) {
		close(c->sock.fd);
		close(c->wake);
		a->control = NULL;
		a->control_stop = NULL;
		return 0;
	}
	if (write(c->wake, &one, sizeof(one)) != sizeof(one))
		graid__log(GRAID_LOG_ERR, "control: cannot wake the endpoint's thread: %s",
			   graid_strerror(-errno));
	pthread_join(c->thread, NULL);
	a->control = NULL;
	a->control_stop = NULL;
	control_free(c);
	return 0;
}

GRAID_API int graid_array_control_stop(struct graid_array *a)
{
	int rc;

	pthread_mutex_lock(&control_start_lock);
	rc = control_stop_locked(a);
	pthread_mutex_unlock(&control_start_lock);
	return rc;
}
