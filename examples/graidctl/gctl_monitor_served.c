/* SPDX-License-Identifier: MIT */
/* graidctl monitor on served arrays: subscribed on their holders' endpoints; the saved state. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>

#include <json-c/json.h>

#include "gctl.h"
#include "gctl_conf.h"
#include "gctl_monitor.h"

/*
 * A connect, hello, status or subscribe that takes longer than this is given up and tried
 * again later: the monitor has other arrays to follow meanwhile.
 */
#define MON_CTL_TIMEOUT_MS 2000

struct mon_array *mon_array_get(struct mon *m, const uint8_t uuid[16])
{
	struct mon_array **v, *a;

	for (int i = 0; i < m->narr; i++)
		if (!memcmp(m->arr[i]->uuid, uuid, 16))
			return m->arr[i];
	v = realloc(m->arr, (size_t)(m->narr + 1) * sizeof(*v));
	if (!v)
		return NULL;
	m->arr = v;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	memcpy(a->uuid, uuid, 16);
	gctl_uuid_format(uuid, a->uuid_text);
	gctl_ctl_init(&a->ctl);
	memset(a->state, MON_STATE_UNKNOWN, sizeof(a->state));
	a->level = -1;
	m->arr[m->narr++] = a;
	return a;
}

static int served_state(const char *s)
{
	static const char *const names[] = { "active", "failed", "missing", "rebuilding", "spare",
					     "unreachable" };

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(s, names[i]))
			return i;
	return MON_STATE_UNKNOWN;
}

/* A status reply's roles and spares into @p a. */
static void served_take_status(struct mon_array *a, struct json_object *r)
{
	struct json_object *members;
	unsigned n = (unsigned)gctl_ctl_u64(r, "nmembers");

	if (n > GRAID_MAX_MEMBERS || !json_object_object_get_ex(r, "members", &members) ||
	    !json_object_is_type(members, json_type_array))
		return;
	a->nmembers = n;
	a->nspares = 0;
	a->level = (int)gctl_ctl_u64(r, "level");
	for (size_t i = 0; i < json_object_array_length(members); i++) {
		struct json_object *o = json_object_array_get_idx(members, i);
		unsigned role = (unsigned)gctl_ctl_u64(o, "role");

		if (i >= n) {
			a->nspares++;
			continue;
		}
		if (role >= n)
			continue;
		a->state[role] = (uint8_t)served_state(gctl_ctl_str(o, "state"));
		snprintf(a->path[role], sizeof(a->path[role]), "%s", gctl_ctl_str(o, "path"));
	}
}

static void served_path(const struct mon *m, const struct mon_array *a, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.ctl", m->run_dir, a->uuid_text);
}

/* A status through a connection of its own: the roles' devices after a replace. */
static int served_status(const struct mon *m, struct mon_array *a)
{
	struct gctl_ctl c;
	struct json_object *req, *reply;
	char path[4200], why[256];
	int rc;

	gctl_ctl_init(&c);
	c.timeout_ms = MON_CTL_TIMEOUT_MS;
	served_path(m, a, path, sizeof(path));
	rc = gctl_ctl_connect(&c, path, why, sizeof(why));
	if (rc)
		return rc;
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("status"));
	rc = gctl_ctl_call(&c, req, &reply, why, sizeof(why));
	json_object_put(req);
	if (rc == 0) {
		served_take_status(a, reply);
		json_object_put(reply);
	}
	gctl_ctl_close(&c);
	return rc;
}

static uint32_t served_peer_pid(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return 0;
	return (uint32_t)cr.pid;
}

/* CLOCK_MONOTONIC nanoseconds of this host (the holder's) as CLOCK_REALTIME. */
static int64_t served_wall(uint64_t mono_ns)
{
	struct timespec r, mo;
	int64_t now_r, now_m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &mo);
	now_r = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
	now_m = (int64_t)mo.tv_sec * 1000000000 + mo.tv_nsec;
	if (!mono_ns || (int64_t)mono_ns > now_m)
		return now_r;
	return now_r - (now_m - (int64_t)mono_ns);
}

static void served_end(struct mon *m, struct mon_array *a, const char *why)
{
	fprintf(stderr, "graidctl monitor: %s: %s; following its superblocks\n", a->uuid_text, why);
	gctl_ctl_close(&a->ctl);
	a->subscribed = 0;
	/*
	 * What the holder last said is the base the first look compares with, so what changed
	 * as it went (or while it was not heard) is reported. Its paths are the holder's (relative
	 * to its directory): the look's names them from here on.
	 */
	a->have_base = a->nmembers > 0;
	memset(a->path, 0, sizeof(a->path));
	memset(a->id, 0, sizeof(a->id));
	a->retry_at = gctl_now() + 1;
	m->look_soon = 1;
}

/*
 * Events after which the role's device and state are taken from a new status, not guessed:
 * a device may have changed (a replace, a spare taking the role, a replace in service's swap
 * at its rebuild-done), and a rebuild's start or end says nothing sure of the role's state
 * (a replace in service keeps it active throughout; a stopped one leaves it as it was).
 */
static int served_moves(const char *name)
{
	return !strcmp(name, "rebuild-started") || !strcmp(name, "spare-activated") ||
	       !strcmp(name, "member-returned") || !strcmp(name, "rebuild-done") ||
	       !strcmp(name, "rebuild-stopped");
}

/* The role's state an event says for sure. */
static int served_member_state(const char *name)
{
	if (!strcmp(name, "member-failed"))
		return GRAID_MEMBER_FAILED;
	if (!strcmp(name, "member-unreachable"))
		return GRAID_MEMBER_UNREACHABLE;
	return -1;
}

/* An event's fields after its member, as key=value words. */
static void served_detail(struct json_object *o, const char *name, char *buf, size_t len)
{
	uint64_t err = gctl_ctl_u64(o, "error"), count = gctl_ctl_u64(o, "count");
	size_t off = 0;

	if (err) {
		const char *en = err < 4096 ? strerrorname_np((int)err) : NULL;

		if (en)
			off += (size_t)snprintf(buf + off, len - off, "error=%s ", en);
		else
			off += (size_t)snprintf(buf + off, len - off, "error=%llu ",
						(unsigned long long)err);
	}
	if (count)
		off += (size_t)snprintf(buf + off, len - off, "count=%llu ",
					(unsigned long long)count);
	if (!strcmp(name, "scrub-mismatch") || !strcmp(name, "bad-block") ||
	    !strcmp(name, "block-repaired"))
		off += (size_t)snprintf(buf + off, len - off, "stripe=%llu ",
					(unsigned long long)gctl_ctl_u64(o, "stripe"));
	if (off < len)
		snprintf(buf + off, len - off, "source=holder");
}

/* One line of the stream: an event, or a missed line. */
static void served_line(struct mon *m, struct mon_array *a, const char *line)
{
	struct json_object *o = json_tokener_parse(line);
	struct mon_event e = { .a = a, .role = -1 };
	const char *name;
	uint64_t seq;
	int st;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return;
	}
	name = gctl_ctl_str(o, "event");
	seq = gctl_ctl_u64(o, "seq");
	if (!strcmp(name, "missed")) {
		uint64_t n = gctl_ctl_u64(o, "missed");

		e.name = "missed";
		snprintf(e.detail, sizeof(e.detail), "missed=%llu first=%llu last=%llu "
			 "source=holder", (unsigned long long)n, (unsigned long long)(seq - n + 1),
			 (unsigned long long)seq);
		mon_report(m, &e);
		a->last_seq = seq;
		json_object_put(o);
		return;
	}
	/* The name is a word of the line and an argument of --program: nothing else passes. */
	if (name[strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-")] || strlen(name) > 64)
		name = "event-unknown";
	if (!name[0] || (a->seq_known && seq <= a->last_seq)) {
		json_object_put(o);
		return;
	}
	if (a->seq_known && seq > a->last_seq + 1) {
		/* Not the protocol's promise (it sends a missed line), but said if it happens. */
		struct mon_event g = { .name = "missed", .a = a, .role = -1 };

		snprintf(g.detail, sizeof(g.detail), "missed=%llu first=%llu last=%llu source=holder",
			 (unsigned long long)(seq - a->last_seq - 1),
			 (unsigned long long)(a->last_seq + 1), (unsigned long long)(seq - 1));
		mon_report(m, &g);
	}
	e.name = name;
	e.seq = seq;
	e.time_ns = served_wall(gctl_ctl_u64(o, "time_ns"));
	{
		struct json_object *v;

		if (json_object_object_get_ex(o, "member", &v) && json_object_is_type(v, json_type_int))
			e.role = json_object_get_int(v);
	}
	if (e.role >= GRAID_MAX_MEMBERS)
		e.role = -1;
	st = served_member_state(name);
	if (e.role >= 0 && served_moves(name)) {
		/* No status (the holder went): the role's state is not known, nor its device. */
		if (served_status(m, a)) {
			a->state[e.role] = MON_STATE_UNKNOWN;
			a->path[e.role][0] = '\0';
		}
	} else if (e.role >= 0 && st >= 0) {
		a->state[e.role] = (uint8_t)st;
	}
	served_detail(o, name, e.detail, sizeof(e.detail));
	/* The event's line is built before the object (which owns @p name) goes. */
	mon_report(m, &e);
	/* Not printed (stdout gone): a monitor started again reports it. */
	if (m->out_gone) {
		json_object_put(o);
		return;
	}
	a->last_seq = seq;
	a->seq_known = 1;
	json_object_put(o);
}

/* Lines already read into the connection's buffer. */
static void served_lines(struct mon *m, struct mon_array *a)
{
	char *nl;
	int any = 0;

	while (a->ctl.len && (nl = memchr(a->ctl.buf, '\n', a->ctl.len))) {
		size_t used = (size_t)(nl - a->ctl.buf) + 1;

		*nl = '\0';
		served_line(m, a, a->ctl.buf);
		memmove(a->ctl.buf, a->ctl.buf + used, a->ctl.len - used);
		a->ctl.len -= used;
		any = 1;
	}
	if (any)
		mon_state_save(m);
}

static int served_subscribe(struct mon *m, struct mon_array *a, int again)
{
	struct json_object *req, *reply;
	char path[4200], why[256];
	uint64_t last, since;
	uint32_t pid;
	int rc;

	gctl_ctl_init(&a->ctl);
	a->ctl.timeout_ms = MON_CTL_TIMEOUT_MS;
	served_path(m, a, path, sizeof(path));
	rc = gctl_ctl_connect(&a->ctl, path, why, sizeof(why));
	if (rc) {
		/* A socket its holder left behind (killed): the look follows the array. */
		a->retry_at = gctl_now() + (rc == -ECONNREFUSED || rc == -ENOENT ? 1 : 10);
		return rc;
	}
	pid = served_peer_pid(a->ctl.fd);
	if (!pid || pid != a->holder_pid)
		a->seq_known = 0;
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("status"));
	rc = gctl_ctl_call(&a->ctl, req, &reply, why, sizeof(why));
	json_object_put(req);
	if (rc == 0) {
		served_take_status(a, reply);
		json_object_put(reply);
		since = a->seq_known ? a->last_seq : 0;
		req = json_object_new_object();
		json_object_object_add(req, "op", json_object_new_string("subscribe"));
		json_object_object_add(req, "since", json_object_new_uint64(since));
		rc = gctl_ctl_call(&a->ctl, req, &reply, why, sizeof(why));
		json_object_put(req);
	}
	if (rc) {
		/* Said once per cause, not at every retry. */
		if (rc != a->ctl_error)
			fprintf(stderr, "graidctl monitor: %s: its holder's endpoint %s: %s\n",
				a->uuid_text, path, why);
		a->ctl_error = rc;
		gctl_ctl_close(&a->ctl);
		a->retry_at = gctl_now() + 10;
		return rc;
	}
	last = gctl_ctl_u64(reply, "seq");
	json_object_put(reply);
	if (a->seq_known && a->last_seq > last && !again) {
		/* The same process opened the array again: its numbers start from 1. */
		gctl_ctl_close(&a->ctl);
		a->seq_known = 0;
		return served_subscribe(m, a, 1);
	}
	a->holder_pid = pid;
	if (!a->seq_known) {
		a->last_seq = 0;
		a->seq_known = 1;
	}
	a->subscribed = 1;
	a->ctl_error = 0;
	/* Served, and never seen before: assembled and served since the monitor started. */
	if (m->started && !a->known) {
		struct mon_event e = { .name = "new-array", .a = a, .role = -1 };

		snprintf(e.detail, sizeof(e.detail), "source=holder");
		mon_report(m, &e);
	}
	a->known = 1;
	a->look_failed = 0;
	served_lines(m, a);
	mon_state_save(m);
	return 0;
}

/* The UUID a run-directory entry is the endpoint of, or -1. */
static int served_entry(const char *name, uint8_t uuid[16])
{
	char text[37];

	if (strlen(name) != 40 || strcmp(name + 36, ".ctl"))
		return -1;
	memcpy(text, name, 36);
	text[36] = '\0';
	return gctl_uuid_parse(text, uuid) ? -1 : 0;
}

void mon_endpoints_scan(struct mon *m)
{
	static int said;
	DIR *d = opendir(m->run_dir);
	struct dirent *e;
	double now = gctl_now();

	/* No run directory yet is no served array yet; one that cannot be read is said once. */
	if (!d && errno != ENOENT && !said) {
		fprintf(stderr, "graidctl monitor: %s: %s: served arrays are followed by their "
			"superblocks only\n", m->run_dir, strerror(errno));
		said = 1;
	}

	for (int i = 0; i < m->narr; i++)
		m->arr[i]->endpoint_seen = 0;
	while (d && (e = readdir(d))) {
		uint8_t uuid[16];
		struct mon_array *a;

		if (served_entry(e->d_name, uuid) || !(a = mon_array_get(m, uuid)))
			continue;
		a->endpoint_seen = 1;
		if (!a->subscribed && now >= a->retry_at)
			served_subscribe(m, a, 0);
	}
	if (d)
		closedir(d);
}

void mon_served_read(struct mon *m, struct mon_array *a)
{
	for (;;) {
		ssize_t n;

		if (a->ctl.cap - a->ctl.len < 65536) {
			size_t cap = a->ctl.cap ? 2 * a->ctl.cap : 131072;
			char *b = cap <= (64u << 20) ? realloc(a->ctl.buf, cap) : NULL;

			if (!b) {
				served_end(m, a, "its events came faster than they could be kept");
				return;
			}
			a->ctl.buf = b;
			a->ctl.cap = cap;
		}
		n = recv(a->ctl.fd, a->ctl.buf + a->ctl.len, a->ctl.cap - a->ctl.len - 1,
			 MSG_DONTWAIT);
		if (n > 0) {
			a->ctl.len += (size_t)n;
			served_lines(m, a);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		served_end(m, a, n == 0 ? "its holder closed its endpoint (no longer served)" :
					 "its holder's endpoint failed");
		return;
	}
}

void mon_served_once(struct mon *m)
{
	DIR *d = opendir(m->run_dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		uint8_t uuid[16];
		struct mon_array *a;

		if (served_entry(e->d_name, uuid) || !(a = mon_array_get(m, uuid)))
			continue;
		/* Reported by --test now: not new-array when the following monitor subscribes. */
		if (served_status(m, a) == 0)
			a->served_now = a->known = 1;
	}
	if (d)
		closedir(d);
}

/* A look line's roles: one character per role, its state's digit ('u': unknown). */
static void state_take_look(struct mon_array *a, const char *roles, unsigned nspares)
{
	size_t n = strlen(roles);

	if (n > GRAID_MAX_MEMBERS)
		return;
	for (size_t r = 0; r < n; r++) {
		if (roles[r] != 'u' && (roles[r] < '0' || roles[r] > '5'))
			return;
		a->state[r] = roles[r] == 'u' ? MON_STATE_UNKNOWN : (uint8_t)(roles[r] - '0');
	}
	a->nmembers = (unsigned)n;
	a->nspares = nspares;
	a->have_base = 1;
	a->known = 1;
}

void mon_state_load(struct mon *m)
{
	FILE *f = m->state_file[0] ? fopen(m->state_file, "r") : NULL;
	char line[512], text[64], roles[GRAID_MAX_MEMBERS + 2];
	unsigned long pid;
	unsigned long long seq;
	unsigned nspares;

	while (f && fgets(line, sizeof(line), f)) {
		uint8_t uuid[16];
		struct mon_array *a;

		if (sscanf(line, "%63s", text) != 1 || gctl_uuid_parse(text, uuid) ||
		    !(a = mon_array_get(m, uuid)))
			continue;
		if (sscanf(line, "%*s look %257s %u", roles, &nspares) == 2) {
			state_take_look(a, roles, nspares);
		} else if (sscanf(line, "%*s %lu %llu", &pid, &seq) == 2) {
			a->holder_pid = (uint32_t)pid;
			a->last_seq = seq;
			a->seq_known = 1;
			a->known = 1;
		}
	}
	if (f)
		fclose(f);
	m->state_loaded = 1;
}

/*
 * The last number reported per holder, so that a monitor started again asks for what came
 * after it, and each unserved array's last look, so that it compares with that. Written whole
 * to a new file renamed over the old: a crash leaves one or the other.
 */
void mon_state_save(const struct mon *m)
{
	char tmp[4200];
	FILE *f;

	if (!m->state_file[0] || !m->state_loaded)
		return;
	snprintf(tmp, sizeof(tmp), "%s.new", m->state_file);
	f = fopen(tmp, "w");
	if (!f) {
		static int said;

		/* Followed all the same; only a restart would report again what it reported. */
		if (!said)
			fprintf(stderr, "graidctl monitor: %s: %s: what was reported is not kept "
				"across a restart\n", tmp, strerror(errno));
		said = 1;
		return;
	}
	for (int i = 0; i < m->narr; i++) {
		const struct mon_array *a = m->arr[i];

		if (a->seq_known && a->holder_pid)
			fprintf(f, "%s %u %llu\n", a->uuid_text, a->holder_pid,
				(unsigned long long)a->last_seq);
		/* An unserved array's last look: a monitor started again reports what changed. */
		if (!a->subscribed && a->have_base && a->nmembers) {
			fprintf(f, "%s look ", a->uuid_text);
			for (unsigned r = 0; r < a->nmembers; r++)
				fputc(a->state[r] == MON_STATE_UNKNOWN ? 'u' : '0' + a->state[r], f);
			fprintf(f, " %u\n", a->nspares);
		}
	}
	/* On disk before the rename: else a crash can leave the new name on an empty file. */
	if ((fflush(f) | fsync(fileno(f)) | fclose(f)) == 0)
		rename(tmp, m->state_file);
	else
		unlink(tmp);
}
