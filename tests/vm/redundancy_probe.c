/* SPDX-License-Identifier: MIT */
/* Samples a served array's state through its control endpoint: did its redundancy ever drop? */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

/*
 * usage: redundancy_probe [--interval-ms MS] [--stop-file PATH] SOCKET
 *
 * Asks `status` (docs/CONTROL.md) every MS milliseconds (10) until SIGTERM, SIGINT or
 * PATH exists, and keeps what the samples saw: how many, the fewest roles ACTIVE, samples
 * with nfailed > 0 or the array's state "degraded", samples with a role being replaced in
 * service (its path and where it goes), and every role whose device changed between two
 * samples (a replace's swap). One line "probe: sampling ..." once the first sample came,
 * one line per first drop and per swap as they are seen, and a summary line of key=value
 * fields at the end.
 *
 * Exit status: 0 every sample had every role ACTIVE, nfailed 0 and the array not
 * degraded; 1 some sample did not; 2 usage, no connection, or a reply that was not a
 * status (a probe that could not look proves nothing either way).
 */

#define PROBE_MAX_ROLES 64
#define PROBE_REPLY_TIMEOUT_MS 10000

static volatile sig_atomic_t probe_stop;

static void probe_on_signal(int sig)
{
	(void)sig;
	probe_stop = 1;
}

static uint64_t probe_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The connection: a socket and what was read past the last line. */
struct probe_conn {
	int fd;
	char *buf;
	size_t len, cap;
};

static int probe_connect(struct probe_conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "redundancy_probe: %s: too long for a socket address\n", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "redundancy_probe: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* One request line sent and its reply line parsed; NULL (said why) on any failure. */
static struct json_object *probe_ask(struct probe_conn *c, const char *req)
{
	size_t n = strlen(req), off = 0;
	uint64_t until = probe_now_us() + PROBE_REPLY_TIMEOUT_MS * 1000u;

	while (off < n) {
		ssize_t k = send(c->fd, req + off, n - off, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr, "redundancy_probe: send: %s\n", strerror(errno));
			return NULL;
		}
		off += (size_t)k;
	}
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;

		if (nl) {
			size_t line = (size_t)(nl - c->buf) + 1;
			struct json_object *r;

			*nl = '\0';
			r = json_tokener_parse(c->buf);
			if (!r)
				fprintf(stderr, "redundancy_probe: a reply that is not JSON: %.200s\n",
					c->buf);
			memmove(c->buf, c->buf + line, c->len - line);
			c->len -= line;
			return r;
		}
		if (c->cap - c->len < 65536) {
			char *b = realloc(c->buf, c->cap + (1u << 20));

			if (!b) {
				fprintf(stderr, "redundancy_probe: out of memory\n");
				return NULL;
			}
			c->buf = b;
			c->cap += 1u << 20;
		}
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		uint64_t now = probe_now_us();
		int pr = now >= until ? 0 : poll(&p, 1, (int)((until - now) / 1000u) + 1);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			fprintf(stderr, "redundancy_probe: no reply within %d ms\n",
				PROBE_REPLY_TIMEOUT_MS);
			return NULL;
		}
		ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr, "redundancy_probe: the holder closed the connection%s%s\n",
				k < 0 ? ": " : "", k < 0 ? strerror(errno) : "");
			return NULL;
		}
		c->len += (size_t)k;
	}
}

/* What the samples saw. */
struct probe_seen {
	unsigned long samples, nfailed_samples, degraded_samples, replacing_samples;
	int nmembers;
	int fewest_active;            /* -1 before the first sample */
	uint64_t first_us, last_us, max_gap_us;
	unsigned long first_drop;     /* the sample number of the first drop, 0 none */
	int replace_role;             /* the last role seen being replaced, -1 none */
	char replace_path[256];
	unsigned swaps;
	char path[PROBE_MAX_ROLES][256];  /* each role's device at the last sample */
};

static const char *probe_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool probe_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

/* One status reply taken in; -1 (said why) if it is not one. */
static int probe_take(struct probe_seen *s, struct json_object *r, uint64_t t_us)
{
	struct json_object *ok, *members;
	int64_t nmembers, nfailed;
	const char *state = probe_str(r, "state");
	int active = 0;
	bool replacing = false;

	if (!json_object_object_get_ex(r, "ok", &ok) || !json_object_get_boolean(ok)) {
		fprintf(stderr, "redundancy_probe: status refused: %s\n",
			json_object_to_json_string(r));
		return -1;
	}
	if (!probe_int(r, "nmembers", &nmembers) || !probe_int(r, "nfailed", &nfailed) ||
	    !state || !json_object_object_get_ex(r, "members", &members) ||
	    !json_object_is_type(members, json_type_array) || nmembers < 1 ||
	    nmembers > PROBE_MAX_ROLES) {
		fprintf(stderr, "redundancy_probe: a status without nmembers, nfailed, state or "
				"members: %.300s\n", json_object_to_json_string(r));
		return -1;
	}
	s->nmembers = (int)nmembers;
	for (size_t i = 0; i < json_object_array_length(members); i++) {
		struct json_object *m = json_object_array_get_idx(members, i), *v;
		const char *mstate = probe_str(m, "state"), *path = probe_str(m, "path");
		int64_t role;

		if (!probe_int(m, "role", &role) || role < 0 || role >= nmembers)
			continue; /* a hot spare */
		if (mstate && strcmp(mstate, "active") == 0)
			active++;
		if (json_object_object_get_ex(m, "replacing", &v) && json_object_get_boolean(v)) {
			const char *to = probe_str(m, "replace_path");

			replacing = true;
			if (s->replace_role != (int)role)
				printf("probe: role %d being replaced in service onto %s (sample %lu)\n",
				       (int)role, to ? to : "?", s->samples + 1);
			s->replace_role = (int)role;
			snprintf(s->replace_path, sizeof(s->replace_path), "%s", to ? to : "?");
		}
		if (path && s->samples && s->path[role][0] && strcmp(s->path[role], path)) {
			printf("probe: role %d's device %s -> %s (sample %lu)\n", (int)role,
			       s->path[role], path, s->samples + 1);
			s->swaps++;
		}
		if (path)
			snprintf(s->path[role], sizeof(s->path[role]), "%s", path);
	}
	if (s->samples && t_us - s->last_us > s->max_gap_us)
		s->max_gap_us = t_us - s->last_us;
	if (!s->samples)
		s->first_us = t_us;
	s->last_us = t_us;
	s->samples++;
	if (s->fewest_active < 0 || active < s->fewest_active)
		s->fewest_active = active;
	s->nfailed_samples += nfailed > 0;
	s->degraded_samples += strcmp(state, "degraded") == 0;
	s->replacing_samples += replacing;
	if (!s->first_drop && (active < nmembers || nfailed > 0 || !strcmp(state, "degraded"))) {
		s->first_drop = s->samples;
		printf("probe: REDUNDANCY DROPPED at sample %lu (%.3f s): %d of %d roles active, "
		       "nfailed %lld, state %s\n", s->samples, (double)(t_us - s->first_us) / 1e6,
		       active, (int)nmembers, (long long)nfailed, state);
	}
	if (s->samples == 1)
		printf("probe: sampling, %d roles, state %s\n", (int)nmembers, state);
	fflush(stdout);
	return 0;
}

static int probe_usage(void)
{
	fprintf(stderr, "usage: redundancy_probe [--interval-ms MS] [--stop-file PATH] SOCKET\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct probe_seen *s = calloc(1, sizeof(*s));
	struct probe_conn c = { .fd = -1 };
	const char *stop_file = NULL, *sock = NULL;
	unsigned long interval_ms = 10;
	struct sigaction sa = { .sa_handler = probe_on_signal };
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--interval-ms") && i + 1 < argc) {
			char *end;

			interval_ms = strtoul(argv[++i], &end, 10);
			if (*end || interval_ms == 0 || interval_ms > 60000)
				return probe_usage();
		} else if (!strcmp(argv[i], "--stop-file") && i + 1 < argc) {
			stop_file = argv[++i];
		} else if (argv[i][0] != '-' && !sock) {
			sock = argv[i];
		} else {
			return probe_usage();
		}
	}
	if (!sock || !s)
		return probe_usage();
	s->fewest_active = -1;
	s->replace_role = -1;
	/* No SA_RESTART: a signal ends the sleep between samples at once. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (probe_connect(&c, sock))
		return 2;
	while (!probe_stop && !(stop_file && access(stop_file, F_OK) == 0)) {
		uint64_t t = probe_now_us();
		struct json_object *r = probe_ask(&c, "{\"op\": \"status\"}\n");
		int rc = r ? probe_take(s, r, t) : -1;

		json_object_put(r);
		if (rc) {
			status = 2;
			break;
		}
		uint64_t next = t + interval_ms * 1000u, now = probe_now_us();

		if (next > now) {
			struct timespec ts = { .tv_sec = (time_t)((next - now) / 1000000u),
					       .tv_nsec = (long)((next - now) % 1000000u) * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	if (status == 0 && s->samples == 0)
		status = 2;
	if (status == 0 && s->first_drop)
		status = 1;
	printf("probe: samples=%lu seconds=%.3f interval_ms=%lu mean_gap_ms=%.1f max_gap_ms=%.1f "
	       "roles=%d fewest_active=%d nfailed_samples=%lu degraded_samples=%lu "
	       "replacing_samples=%lu replace=%d:%s swaps=%u redundancy=%s\n",
	       s->samples, (double)(s->last_us - s->first_us) / 1e6, interval_ms,
	       s->samples > 1 ? (double)(s->last_us - s->first_us) / 1e3 / (double)(s->samples - 1)
			      : 0.0,
	       (double)s->max_gap_us / 1e3, s->nmembers, s->fewest_active, s->nfailed_samples,
	       s->degraded_samples, s->replacing_samples, s->replace_role,
	       s->replace_role >= 0 ? s->replace_path : "-", s->swaps,
	       status == 0 ? "kept" : status == 1 ? "dropped" : "unknown");
	close(c.fd);
	free(c.buf);
	free(s);
	return status;
}
