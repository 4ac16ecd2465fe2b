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
	a->nspare_paths = 0;
	a->level = (int)gctl_ctl_u64(r, "level");
	for (size_t i = 0; i < json_object_array_length(members); i++) {
		struct json_object *o = json_object_array_get_idx(members, i);
		unsigned role = (unsigned)gctl_ctl_u64(o, "role");

		if (i >= n) {
			if (a->nspares < MON_SPARE_PATHS)
				snprintf(a->spare_path[a->nspares], sizeof(a->spare_path[0]), "%s",
					 gctl_ctl_str(o, "path"));
			a->nspares++;
			if (a->nspare_paths < MON_SPARE_PATHS)
				a->nspare_paths++;
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

static void served_flush(struct mon *m, struct mon_array *a);

static void served_end(struct mon *m, struct mon_array *a, const char *why)
{
	/* A replay cut short: what came of it is reported (the status after it still holds). */
	if (a->npend)
		served_flush(m, a);
	a->replay_to = 0;
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
	/* The events that name a place: a stripe, or a checksum's 4 KiB block of the role. */
	if (!strcmp(name, "scrub-mismatch") || !strcmp(name, "bad-block") ||
	    !strcmp(name, "block-repaired") || !strncmp(name, "checksum-", 9))
		off += (size_t)snprintf(buf + off, len - off, "stripe=%llu ",
					(unsigned long long)gctl_ctl_u64(o, "stripe"));
	if (off < len)
		snprintf(buf + off, len - off, "source=holder");
}

/* An event of a replay, held until the replay is whole. */
struct mon_pending {
	struct mon_event e;
	char name[72];
	uint64_t seq;
	int moves;              /* the role's device may have changed at it */
};

static void served_pend(struct mon_array *a, const struct mon_event *e, uint64_t seq)
{
	struct mon_pending *p = realloc(a->pend, (size_t)(a->npend + 1) * sizeof(*p));

	if (!p)
		return;
	a->pend = p;
	p += a->npend++;
	p->e = *e;
	snprintf(p->name, sizeof(p->name), "%s", e->name);
	p->seq = seq;
	p->moves = 0;
}

enum { KIND_NONE, KIND_REGULAR, KIND_IN_SERVICE, KIND_UNKNOWN };

/*
 * A replay reported. The roles' devices known are the status's, taken after the replay's
 * last event: an event names its role's device only where no event after it (up to that
 * status) may have changed the device. Those are rebuild-started, spare-activated and
 * member-returned, and the rebuild-done of a replace in service (its swap): a rebuild that
 * started on a role out of the array is a plain one, whose rebuild-done changes nothing; one
 * that started on an active role is a replace in service; one whose role's state then is not
 * known is taken for one.
 */
static void served_flush(struct mon *m, struct mon_array *a)
{
	uint8_t st[GRAID_MAX_MEMBERS], kind[GRAID_MAX_MEMBERS] = { 0 }, known[GRAID_MAX_MEMBERS];

	memcpy(st, a->replay_state, sizeof(st));
	for (int i = 0; i < a->npend; i++) {
		struct mon_pending *p = &a->pend[i];
		int r = p->e.role;
		const char *n = p->name;

		if (r < 0)
			continue;
		if (!strcmp(n, "member-failed") || !strcmp(n, "member-unreachable")) {
			st[r] = GRAID_MEMBER_FAILED;
		} else if (!strcmp(n, "member-returned")) {
			p->moves = 1;
			st[r] = GRAID_MEMBER_ACTIVE;
		} else if (!strcmp(n, "spare-activated")) {
			p->moves = 1;
			st[r] = GRAID_MEMBER_REBUILDING;
			kind[r] = KIND_REGULAR;
		} else if (!strcmp(n, "rebuild-started")) {
			p->moves = 1;
			kind[r] = st[r] == MON_STATE_UNKNOWN ? KIND_UNKNOWN :
				  st[r] == GRAID_MEMBER_ACTIVE ? KIND_IN_SERVICE : KIND_REGULAR;
		} else if (!strcmp(n, "rebuild-done")) {
			p->moves = kind[r] != KIND_REGULAR;
			st[r] = GRAID_MEMBER_ACTIVE;
			kind[r] = KIND_NONE;
		} else if (!strcmp(n, "rebuild-stopped")) {
			kind[r] = KIND_NONE;
		}
	}
	memset(known, 1, sizeof(known));
	for (int i = a->npend - 1; i >= 0; i--) {
		struct mon_pending *p = &a->pend[i];

		if (p->e.role < 0)
			continue;
		p->e.unsure = !known[p->e.role];
		if (p->moves)
			known[p->e.role] = 0;
	}
	for (int i = 0; i < a->npend && !m->out_gone; i++) {
		struct mon_pending *p = &a->pend[i];

		p->e.name = p->name;
		p->e.a = a;
		mon_report(m, &p->e);
		if (m->out_gone)
			break;
		a->last_seq = p->seq;
		a->seq_known = 1;
	}
	free(a->pend);
	a->pend = NULL;
	a->npend = 0;
	a->replay_to = 0;
}

/* An event after the replay: its role's device is the latest status's. */
static void served_live(struct mon *m, struct mon_array *a, struct mon_event *e, uint64_t seq)
{
	int st = served_member_state(e->name);

	if (e->role >= 0 && served_moves(e->name)) {
		/* No status (the holder went): the role's state is not known, nor its device. */
		if (served_status(m, a)) {
			a->state[e->role] = MON_STATE_UNKNOWN;
			a->path[e->role][0] = '\0';
		}
	} else if (e->role >= 0 && st >= 0) {
		a->state[e->role] = (uint8_t)st;
	}
	mon_report(m, e);
	/* Not printed (stdout gone): a monitor started again reports it. */
	if (m->out_gone)
		return;
	a->last_seq = seq;
	a->seq_known = 1;
}

/* One line of the stream: an event, or a missed line. */
static void served_line(struct mon *m, struct mon_array *a, const char *line)
{
	struct json_object *o = json_tokener_parse(line);
	struct mon_event e = { .a = a, .role = -1 };
	const char *name;
	uint64_t seq, prev;
	int replayed;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return;
	}
	name = gctl_ctl_str(o, "event");
	seq = gctl_ctl_u64(o, "seq");
	replayed = a->replay_to && seq <= a->replay_to;
	if (!replayed && a->npend)
		served_flush(m, a);
	prev = a->npend ? a->pend[a->npend - 1].seq : a->last_seq;
	if (!strcmp(name, "missed")) {
		uint64_t n = gctl_ctl_u64(o, "missed");

		e.name = "missed";
		snprintf(e.detail, sizeof(e.detail), "missed=%llu first=%llu last=%llu "
			 "source=holder", (unsigned long long)n, (unsigned long long)(seq - n + 1),
			 (unsigned long long)seq);
		if (replayed) {
			served_pend(a, &e, seq);
		} else {
			mon_report(m, &e);
			if (!m->out_gone)
				a->last_seq = seq;
		}
		goto out;
	}
	/* The name is a word of the line and an argument of --program: nothing else passes. */
	if (name[strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-")] || strlen(name) > 64)
		name = "event-unknown";
	if (!name[0] || (a->seq_known && seq <= prev))
		goto out;
	if (a->seq_known && seq > prev + 1) {
		/* Not the protocol's promise (it sends a missed line), but said if it happens. */
		struct mon_event g = { .name = "missed", .a = a, .role = -1 };

		snprintf(g.detail, sizeof(g.detail), "missed=%llu first=%llu last=%llu source=holder",
			 (unsigned long long)(seq - prev - 1),
			 (unsigned long long)(prev + 1), (unsigned long long)(seq - 1));
		if (replayed)
			served_pend(a, &g, seq - 1);
		else
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
	served_detail(o, name, e.detail, sizeof(e.detail));
	/* The event's line is built before the object (which owns @p name) goes. */
	if (replayed)
		served_pend(a, &e, seq);
	else
		served_live(m, a, &e, seq);
out:
	if (replayed && seq >= a->replay_to)
		served_flush(m, a);
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

/*
 * Its holder's start from a status: the "since ..." of its holder text, spaces made '_' (a
 * word of the state file); "" when the status has none.
 */
static void served_since(struct json_object *r, char *buf, size_t len)
{
	const char *h = gctl_ctl_str(r, "holder"), *s = strstr(h, " since ");

	buf[0] = '\0';
	if (!s || !s[7] || !strcmp(s + 7, "?"))
		return;
	snprintf(buf, len, "%s", s + 7);
	for (char *p = buf; *p; p++)
		if (*p == ' ')
			*p = '_';
}

/*
 * The holder behind the endpoint is the one the saved number belongs to: the same process
 * (its pid) started at the same time (a pid can be reused, by a holder whose numbers start
 * from 1 again). Where neither is known on either side, the number is kept: asking from 0
 * at each reconnect would report the holder's ring again each time.
 */
static int served_same_holder(const struct mon_array *a, uint32_t pid, const char *since)
{
	if (!a->seq_known)
		return 0;
	if (pid && a->holder_pid && pid != a->holder_pid)
		return 0;
	if (since[0] && a->holder_since[0] && strcmp(since, a->holder_since))
		return 0;
	/* Known now but not before (or the other way): which one it was cannot be told. */
	if ((pid != 0) != (a->holder_pid != 0) || (since[0] != 0) != (a->holder_since[0] != 0))
		return 0;
	return 1;
}

static int served_subscribe(struct mon *m, struct mon_array *a, int again)
{
	struct json_object *req, *reply;
	char path[4200], why[256], since_text[sizeof(a->holder_since)] = "";
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
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("status"));
	rc = gctl_ctl_call(&a->ctl, req, &reply, why, sizeof(why));
	json_object_put(req);
	if (rc == 0) {
		if (!pid)
			pid = (uint32_t)gctl_ctl_u64(reply, "holder_pid");
		served_since(reply, since_text, sizeof(since_text));
		if (!served_same_holder(a, pid, since_text))
			a->seq_known = 0;
		/* The roles' states where the replay starts: known only for the same holder. */
		if (a->seq_known)
			memcpy(a->replay_state, a->state, sizeof(a->replay_state));
		else
			memset(a->replay_state, MON_STATE_UNKNOWN, sizeof(a->replay_state));
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
	snprintf(a->holder_since, sizeof(a->holder_since), "%s", since_text);
	if (!a->seq_known) {
		a->last_seq = 0;
		a->seq_known = 1;
	}
	/*
	 * The replay (the events after since, up to last) is named from a status taken after
	 * it: the one above may predate some of them. Without it no role's device is sure.
	 */
	a->replay_to = last > a->last_seq ? last : 0;
	if (a->replay_to && served_status(m, a))
		memset(a->path, 0, sizeof(a->path));
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

/* Roles saved as one character per role, its state's digit ('u': unknown); 0 taken. */
static int state_take_roles(struct mon_array *a, const char *roles)
{
	size_t n = strlen(roles);

	if (n > GRAID_MAX_MEMBERS || strspn(roles, "u012345") != n)
		return -1;
	for (size_t r = 0; r < n; r++)
		a->state[r] = roles[r] == 'u' ? MON_STATE_UNKNOWN : (uint8_t)(roles[r] - '0');
	a->nmembers = (unsigned)n;
	return 0;
}

static void state_put_roles(FILE *f, const struct mon_array *a)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		fputc(a->state[r] == MON_STATE_UNKNOWN ? 'u' : '0' + a->state[r], f);
}

/* A look line's roles and spares. */
static void state_take_look(struct mon_array *a, const char *roles, unsigned nspares)
{
	if (state_take_roles(a, roles))
		return;
	a->nspares = nspares;
	a->have_base = 1;
	a->known = 1;
}

void mon_state_load(struct mon *m)
{
	FILE *f = m->state_file[0] ? fopen(m->state_file, "r") : NULL;
	char line[512], text[64], roles[GRAID_MAX_MEMBERS + 2];
	char since[48];
	unsigned long pid;
	unsigned long long seq;
	unsigned nspares;
	int k;

	while (f && fgets(line, sizeof(line), f)) {
		uint8_t uuid[16];
		struct mon_array *a;

		if (sscanf(line, "%63s", text) != 1 || gctl_uuid_parse(text, uuid) ||
		    !(a = mon_array_get(m, uuid)))
			continue;
		if (sscanf(line, "%*s look %257s %u", roles, &nspares) == 2) {
			state_take_look(a, roles, nspares);
		} else if ((k = sscanf(line, "%*s %lu %llu %47s %257s", &pid, &seq, since,
				      roles)) >= 2) {
			a->holder_pid = (uint32_t)pid;
			a->last_seq = seq;
			a->seq_known = 1;
			a->known = 1;
			snprintf(a->holder_since, sizeof(a->holder_since), "%s",
				 k >= 3 && strcmp(since, "-") ? since : "");
			/* The roles' states as of that number: where its replay starts. */
			if (k == 4 && strcmp(roles, "-"))
				state_take_roles(a, roles);
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

		/* The holder (pid, start) the number belongs to, its roles' states as of it. */
		if (a->seq_known && (a->holder_pid || a->holder_since[0])) {
			fprintf(f, "%s %u %llu %s ", a->uuid_text, a->holder_pid,
				(unsigned long long)a->last_seq,
				a->holder_since[0] ? a->holder_since : "-");
			if (a->nmembers)
				state_put_roles(f, a);
			else
				fputc('-', f);
			fputc('\n', f);
		}
		/* An unserved array's last look: a monitor started again reports what changed. */
		if (!a->subscribed && a->have_base && a->nmembers) {
			fprintf(f, "%s look ", a->uuid_text);
			state_put_roles(f, a);
			fprintf(f, " %u\n", a->nspares);
		}
	}
	/* On disk before the rename: else a crash can leave the new name on an empty file. */
	if ((fflush(f) | fsync(fileno(f)) | fclose(f)) == 0)
		rename(tmp, m->state_file);
	else
		unlink(tmp);
}
