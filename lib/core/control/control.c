/* SPDX-License-Identifier: MIT */
/* The control endpoint's thread: clients of a UNIX socket served by poll(), none able to stall it. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/array_events.h"
#include "common/internal.h"
#include "common/signals.h"
#include "control/control.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_CLIENTS_MAX 1024u /* graid.h promises it */
#define CONTROL_IDLE_MS 60000u
/* Out of descriptors: the listener is left alone this long (a pending client keeps it readable). */
#define CONTROL_ACCEPT_PAUSE_NS 100000000u

struct client {
	int fd;
	uint64_t last_ns;        /* the last byte read or written: idle since */
	size_t in_len;
	char in[GRAID_CONTROL_REQUEST_MAX + 1];
	size_t out_off, out_len; /* bytes sent, bytes queued, of out */
	size_t out_cap;
	char *out;               /* grown to what is queued: about GRAID_CONTROL_REPLY_MAX */
	bool subscriber;         /* sent subscribe: reads nothing more, is sent events */
	uint64_t sent;           /* a subscriber's last event queued (or said missed) */
};

struct array_control {
	struct graid_array *a;
	struct control_sock sock;
	int wake;                /* eventfd: stop */
	int events;              /* eventfd: the array sent an event (array_events_watch) */
	pthread_t thread;
	pid_t pid;               /* the process whose thread serves it */
	unsigned max_clients;
	uint64_t idle_ns;
	uint64_t accept_after_ns; /* not polled for clients before this (out of descriptors) */
	bool accept_logged;      /* the out-of-descriptors pause was logged: once per run of them */
	bool stopping;           /* a stop is joining the thread: other stops wait for it */
	struct client **clients; /* max_clients slots, NULL free */
	struct control_scrub *scrub; /* scrub-start's (control_scrub.c) */
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
	char *start = cl->in, *nl, *reply;
	uint64_t after;
	bool sub;

	while ((nl = memchr(start, '\n', cl->in_len - (size_t)(start - cl->in)))) {
		*nl = '\0';
		if (memchr(start, '\0', (size_t)(nl - start)))
			return "a request holds a NUL byte";
		reply = control_request(c->a, start);
		/* Taken at once: a subscribe whose reply is lost is no other client's. */
		sub = control_subscribed(&after);
		if (!reply)
			return "out of memory for a reply";
		if (client_queue(cl, reply))
			return "its replies were not read (reply buffer full)";
		start = nl + 1;
		if (sub) {
			cl->subscriber = true;
			cl->sent = after;
			/* Its reply goes first, as far as the socket takes it now. */
			if (start != cl->in + cl->in_len) {
				(void)client_flush(cl);
				return "it sent a request after subscribe";
			}
			cl->in_len = 0;
			return NULL;
		}
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
	if (cl->subscriber)
		return "it sent a request after subscribe";
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

	if (fd < 0) {
		/*
		 * The client stays pending and the listener readable: polled again at once, it
		 * would spin. Paused instead; the clients served meanwhile may free descriptors.
		 */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			if (!c->accept_logged)
				graid__log(GRAID_LOG_WARNING, "control: cannot accept a client: "
					   "%s; new clients wait", graid_strerror(-errno));
			c->accept_logged = true;
			c->accept_after_ns = graid__now_ns() + CONTROL_ACCEPT_PAUSE_NS;
		}
		return;
	}
	c->accept_logged = false;
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

/* The poll set's first entries: wake, listener, events; the clients follow. */
#define POLL_FIXED 3u

/* The poll set; map[k] the client of pfd[k + POLL_FIXED]. */
static nfds_t poll_set(struct array_control *c, struct pollfd *pfd, unsigned *map, int *timeout)
{
	uint64_t now = graid__now_ns(), next = UINT64_MAX;
	nfds_t n = POLL_FIXED;

	pfd[0] = (struct pollfd){ .fd = c->wake, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = c->sock.fd, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = c->events, .events = POLLIN };
	if (now < c->accept_after_ns) {
		pfd[1].fd = -1; /* skipped by poll() */
		next = c->accept_after_ns - now;
	}
	for (unsigned i = 0; i < c->max_clients; i++) {
		struct client *cl = c->clients[i];

		if (!cl)
			continue;
		/* A subscriber waits for events as long as it likes: no idle time. */
		if (!cl->subscriber && now - cl->last_ns >= c->idle_ns) {
			client_drop(c, i, "idle past the timeout");
			continue;
		}
		if (!cl->subscriber && cl->last_ns + c->idle_ns - now < next)
			next = cl->last_ns + c->idle_ns - now;
		/* A client with replies waiting is not read: it must read them first. */
		pfd[n] = (struct pollfd){ .fd = cl->fd, .events = cl->out_len ? POLLOUT : POLLIN };
		map[n - POLL_FIXED] = i;
		n++;
	}
	*timeout = next == UINT64_MAX ? -1 : next / 1000000 >= INT_MAX ? INT_MAX :
		   (int)(next / 1000000 + 1);
	return n;
}

/*
 * A subscriber's queue topped up with the events it has not had, up to the reply limit,
 * and sent. Whatever it leaves unread stays in the array's ring, which is what bounds it:
 * the events the ring lets go of meanwhile become one "missed" line. NULL, or the reason
 * it is dropped.
 */
static const char *subscriber_fill(struct array_control *c, struct client *cl)
{
	if (cl->out_off) {
		memmove(cl->out, cl->out + cl->out_off, cl->out_len - cl->out_off);
		cl->out_len -= cl->out_off;
		cl->out_off = 0;
	}
	if (cl->out_cap < GRAID_CONTROL_REPLY_MAX) {
		char *p = realloc(cl->out, GRAID_CONTROL_REPLY_MAX);

		if (!p)
			return "out of memory for its events";
		cl->out = p;
		cl->out_cap = GRAID_CONTROL_REPLY_MAX;
	}
	if (cl->out_len < cl->out_cap)
		cl->out_len += control_event_lines(c->a, &cl->sent, cl->out + cl->out_len,
						   cl->out_cap - cl->out_len);
	return client_flush(cl) ? "a send error" : NULL;
}

/* Every subscriber given what it has room for (after an event, or after it read some). */
static void subscribers_fill(struct array_control *c)
{
	uint64_t count;

	/* Emptied first: an event pushed after this read wakes the next poll. */
	if (read(c->events, &count, sizeof(count)) < 0 && errno != EAGAIN)
		graid__log(GRAID_LOG_WARNING, "control: cannot read the event counter: %s",
			   graid_strerror(-errno));
	for (unsigned i = 0; i < c->max_clients; i++) {
		struct client *cl = c->clients[i];
		const char *why;

		if (cl && cl->subscriber && (why = subscriber_fill(c, cl)))
			client_drop(c, i, why);
	}
}

static void *control_main(void *arg)
{
	struct array_control *c = arg;
	struct pollfd *pfd = calloc(c->max_clients + POLL_FIXED, sizeof(*pfd));
	unsigned *map = calloc(c->max_clients, sizeof(*map));

	while (pfd && map) {
		int timeout;
		nfds_t n = poll_set(c, pfd, map, &timeout);

		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			graid__log(GRAID_LOG_ERR, "control: poll failed: %s; the endpoint stopped "
				   "serving", graid_strerror(-errno));
			break;
		}
		if (pfd[0].revents)
			break;
		for (nfds_t k = POLL_FIXED; k < n; k++) {
			struct client *cl = c->clients[map[k - POLL_FIXED]];
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
				client_drop(c, map[k - POLL_FIXED], why);
		}
		subscribers_fill(c);
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
		if (c->clients && c->clients[i])
			client_drop(c, i, "the endpoint stopped");
	control_sock_close(&c->sock);
	if (c->wake >= 0)
		close(c->wake);
	if (c->events >= 0)
		close(c->events);
	control_scrub_free(c->scrub);
	free(c->clients);
	free(c);
}

static int control_stop_hook(struct graid_array *a)
{
	return graid_array_control_stop(a);
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
	c->max_clients = o->max_clients ? o->max_clients : CONTROL_MAX_CLIENTS;
	c->idle_ns = (uint64_t)(o->idle_timeout_ms ? o->idle_timeout_ms : CONTROL_IDLE_MS) *
		     1000000u;
	c->clients = calloc(c->max_clients, sizeof(*c->clients));
	c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->events = c->wake < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*out = c;
	if (!c->clients || c->events < 0 || control_scrub_new(a, &c->scrub)) {
		int rc = c->events < 0 ? -errno : -ENOMEM;

		control_free(c);
		return rc;
	}
	return 0;
}

/*
 * Start and stop of any array's endpoint, so that two threads starting (or one starting, one
 * stopping) one handle's endpoint cannot both install or both free it. Held for short steps
 * only, never across a join: one array's long request must not hold up another's close.
 * control_stopped is signalled (under it) when a stop has joined and freed an endpoint.
 */
static struct graid_lock control_start_lock = GRAID_LOCK_INIT;
static pthread_cond_t control_stopped = PTHREAD_COND_INITIALIZER;

static void control_lock(void)
{
	/* Taken by fork(): a child must not inherit it held by a thread it does not have. */
	graid__fork_lock_register(&control_start_lock, GRAID_FORK_CONTROL);
	graid__lock(&control_start_lock);
}

/* The options a caller of any version gave: the fields past its struct_size are 0. */
static int control_options(const struct graid_control_options *opts,
			   struct graid_control_options *o)
{
	const size_t min = offsetof(struct graid_control_options, idle_timeout_ms) +
			   sizeof(opts->idle_timeout_ms);

	memset(o, 0, sizeof(*o));
	if (!opts)
		return 0;
	if (opts->struct_size < min)
		return -EINVAL;
	memcpy(o, opts, opts->struct_size < sizeof(*o) ? opts->struct_size : sizeof(*o));
	if (o->max_clients > CONTROL_CLIENTS_MAX) {
		graid__log(GRAID_LOG_ERR, "control: max_clients %u is more than %u",
			   o->max_clients, CONTROL_CLIENTS_MAX);
		return -EINVAL;
	}
	return 0;
}

static int control_start_locked(struct graid_array *a, const struct graid_control_options *given)
{
	struct graid_control_options opts_copy, *opts = &opts_copy;
	const char *dir;
	struct array_control *c;
	char path[108];
	int rc;

	if (!a || control_options(given, opts))
		return -EINVAL;
	dir = opts->run_dir;
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
	a->control_scrub = c->scrub; /* the ops the thread serves find it there */
	if (!rc)
		rc = -graid__thread_create(&c->thread, NULL, control_main, c);
	if (rc) {
		a->control_scrub = NULL;
		control_free(c);
		return rc;
	}
	c->pid = getpid();
	a->control = c;
	a->control_stop = control_stop_hook;
	/* After the thread started: it has no subscriber yet to tell. */
	array_events_watch(a, c->events);
	graid__log(GRAID_LOG_NOTICE, "control: serving %s", path);
	return 0;
}

GRAID_API int graid_array_control_start(struct graid_array *a,
					const struct graid_control_options *opts)
{
	int rc;

	control_lock();
	rc = control_start_locked(a, opts);
	graid__unlock(&control_start_lock);
	return rc;
}

GRAID_API int graid_array_control_stop(struct graid_array *a)
{
	struct array_control *c;
	uint64_t one = 1;

	if (!a)
		return -EINVAL;
	control_lock();
	c = a->control;
	/*
	 * A forked child's copy: its thread and its socket are the parent's, who still serves
	 * them (the eventfd would wake the parent's thread, the unlink remove its socket). The
	 * client list was copied while that thread may have been changing it, so it is left,
	 * not freed; the descriptors that never change after the start are closed.
	 */
	if (c && c->pid != getpid()) {
		array_events_forget_watch(a);
		close(c->sock.fd);
		close(c->wake);
		close(c->events);
		a->control = NULL;
		a->control_stop = NULL;
		a->control_scrub = NULL;
		c = NULL;
	}
	/*
	 * A callback run by a request: joining itself would fail, freeing would pull its stack.
	 * Not logged: a log callback holds the log's lock.
	 */
	if (c && (pthread_equal(pthread_self(), c->thread) || control_scrub_is_thread(c->scrub))) {
		graid__unlock(&control_start_lock);
		return -EDEADLK;
	}
	/* Another thread stops it: this one returns when it is gone, as that one does. */
	while (c && a->control == c && c->stopping) { /* c is freed once a->control moves on */
		/* The owner, as graid__lock() keeps it: nobody's while the wait lets go of it. */
		atomic_store_explicit(&control_start_lock.owner, 0, memory_order_relaxed);
		pthread_cond_wait(&control_stopped, &control_start_lock.mutex);
		atomic_store_explicit(&control_start_lock.owner, (unsigned long)pthread_self(),
				      memory_order_relaxed);
	}
	if (!c || a->control != c) {
		graid__unlock(&control_start_lock);
		return 0;
	}
	c->stopping = true;
	graid__unlock(&control_start_lock);

	/* Its scrub ends at its next batch meanwhile; joined at the free, before the array goes. */
	control_scrub_ask_stop(c->scrub);
	if (write(c->wake, &one, sizeof(one)) != sizeof(one))
		graid__log(GRAID_LOG_ERR, "control: cannot wake the endpoint's thread: %s",
			   graid_strerror(-errno));
	pthread_join(c->thread, NULL);
	array_events_watch(a, -1); /* before its eventfd is closed */
	/*
	 * Its scrub too, before the stop is published: a stop or close waiting on this one
	 * returns when it is published, and a close then frees the array under a scrub still
	 * running. The struct stays until the free below (another stopper asks
	 * control_scrub_is_thread() of it under the lock while a->control is c).
	 */
	control_scrub_join(c->scrub);

	control_lock();
	a->control = NULL;
	a->control_stop = NULL;
	a->control_scrub = NULL;
	pthread_cond_broadcast(&control_stopped);
	graid__unlock(&control_start_lock);
	control_free(c);
	return 0;
}
