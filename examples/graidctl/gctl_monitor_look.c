/* SPDX-License-Identifier: MIT */
/* graidctl monitor on arrays nobody serves: their superblocks looked at, differences as events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gctl.h"
#include "gctl_conf.h"
#include "gctl_monitor.h"
#include "gctl_scan.h"

const char *mon_state_word(int state)
{
	return state == MON_STATE_UNKNOWN ? "unknown" : gctl_state_name(state);
}

int mon_array_degraded(const struct mon_array *a)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		if (a->state[r] != GRAID_MEMBER_ACTIVE && a->state[r] != MON_STATE_UNKNOWN)
			return 1;
	return 0;
}

/* A role known to be out of the array. */
static int look_out(int state)
{
	return state != GRAID_MEMBER_ACTIVE && state != MON_STATE_UNKNOWN;
}

int mon_array_lost(const struct mon_array *a)
{
	unsigned n = a->nmembers, lost = 0;

	for (unsigned r = 0; r < n; r++)
		lost += look_out(a->state[r]);
	switch (a->level) {
	case 0:
		return lost > 0;
	case 1:
		return n && lost == n;
	case 5:
		return lost > 1;
	case 6:
		return lost > 2;
	case 10:
		/* Near-2 mirrors (the library's layout): roles 2i, 2i+1 (mod n) hold one chunk. */
		for (unsigned i = 0; i < n; i++) {
			unsigned p = (2 * i) % n, q = (2 * i + 1) % n;

			if (look_out(a->state[p]) && look_out(a->state[q]))
				return 1;
		}
		return 0;
	default:
		return 0;
	}
}

static int look_take(char **members, uint8_t (*ids)[16], int n, struct mon_snap *now)
{
	char host[256] = "";
	struct gctl_look l;
	int rc;

	/* A look's own log (a member left out, say) is what the events say; not repeated. */
	gctl_log_hold();
	rc = gctl_look_open(members, n, &l);
	gctl_log_release(0);
	if (rc)
		return rc;
	memset(now, 0, sizeof(*now));
	now->nmembers = l.info.nmembers > GRAID_MAX_MEMBERS ? GRAID_MAX_MEMBERS : l.info.nmembers;
	memcpy(now->state, l.info.member_state, sizeof(now->state));
	now->unclean = l.info.unclean;
	/*
	 * A holder on another host looks the same to a look here: unclean, nobody alive here.
	 * The record keeps the name cut to its field, less its NUL.
	 */
	now->elsewhere = l.info.owner_host[0] &&
			 (gethostname(host, sizeof(host) - 1) != 0 ||
			  strncmp(l.info.owner_host, host, sizeof(l.info.owner_host) - 1) != 0);
	now->resync_regions = l.info.resync_regions;
	for (int k = 0; k < l.n; k++) {
		const struct graid_given_info *g = &l.given[k];

		if (g->verdict == GRAID_GIVEN_SPARE)
			now->nspares++;
		else if (g->verdict == GRAID_GIVEN_MEMBER && g->role >= 0 &&
			 (unsigned)g->role < now->nmembers) {
			snprintf(now->path[g->role], sizeof(now->path[g->role]), "%s", members[k]);
			memcpy(now->id[g->role], ids[k], 16);
		}
	}
	/* A role out of the array is named by the device it had, where one was given. */
	for (int k = 0; k < l.n; k++) {
		const struct graid_given_info *g = &l.given[k];

		if (g->verdict != GRAID_GIVEN_SPARE && g->role >= 0 &&
		    (unsigned)g->role < now->nmembers && !now->path[g->role][0] &&
		    now->state[g->role] != GRAID_MEMBER_ACTIVE)
			snprintf(now->path[g->role], sizeof(now->path[g->role]), "%s", members[k]);
	}
	gctl_look_free(&l);
	return 0;
}

static void snap_event(struct mon *m, struct mon_array *a, const char *name, int role,
		       const char *detail, const char *source)
{
	struct mon_event e = { .name = name, .a = a, .role = role };

	snprintf(e.detail, sizeof(e.detail), "%s%ssource=%s", detail, detail[0] ? " " : "", source);
	mon_report(m, &e);
}

static void look_event(struct mon *m, struct mon_array *a, const char *name, int role,
		       const char *detail)
{
	snap_event(m, a, name, role, detail, "look");
}

static const char *look_role_event(int was, int now)
{
	switch (now) {
	case GRAID_MEMBER_FAILED:
		return "member-failed";
	case GRAID_MEMBER_MISSING:
		return "member-missing";
	case GRAID_MEMBER_UNREACHABLE:
		return "member-unreachable";
	case GRAID_MEMBER_REBUILDING:
		return "rebuild-started";
	case GRAID_MEMBER_ACTIVE:
		return was == GRAID_MEMBER_REBUILDING ? "rebuild-done" : "member-returned";
	default:
		return NULL;
	}
}

void mon_diff(struct mon *m, struct mon_array *a, const struct mon_snap *now, const char *source)
{
	static const uint8_t zero[16];
	int was_degraded = mon_array_degraded(a), activated = -1, moved;
	unsigned was_spares = a->nspares;
	char detail[128];

	for (unsigned r = 0; r < now->nmembers; r++) {
		int was = a->state[r], is = now->state[r];
		const char *name = look_role_event(was, is);

		if ((was == is && !(memcmp(now->id[r], zero, 16) && memcmp(a->id[r], zero, 16) &&
				     memcmp(now->id[r], a->id[r], 16))) ||
		    was == MON_STATE_UNKNOWN || !name)
			continue;
		/*
		 * Another device in the role (its member UUID, not its name, which a re-plug can
		 * change): the one it had failed (a spare took the role, or it was replaced)
		 * between two looks, its failure not seen by itself; and a role active on the
		 * new one was rebuilt whole.
		 */
		moved = memcmp(now->id[r], zero, 16) && memcmp(a->id[r], zero, 16) &&
			memcmp(now->id[r], a->id[r], 16) &&
			(is == GRAID_MEMBER_REBUILDING || is == GRAID_MEMBER_ACTIVE);
		if (moved && was == GRAID_MEMBER_ACTIVE)
			snap_event(m, a, "member-failed", (int)r, "was=active", source);
		if (moved && is == GRAID_MEMBER_ACTIVE)
			name = "rebuild-done";
		/* A new device in the role (replaced, a spare took it) is the one named. */
		if (is == GRAID_MEMBER_REBUILDING || is == GRAID_MEMBER_ACTIVE)
			if (now->path[r][0])
				snprintf(a->path[r], sizeof(a->path[r]), "%s", now->path[r]);
		/* A spare gone as a role got a new device: the spare took it. */
		if ((is == GRAID_MEMBER_REBUILDING || !strcmp(name, "rebuild-done")) &&
		    activated < 0 && now->nspares < was_spares)
			activated = (int)r;
		if (!a->path[r][0])
			snprintf(a->path[r], sizeof(a->path[r]), "%s", now->path[r]);
		snprintf(detail, sizeof(detail), "was=%s", mon_state_word(was));
		a->state[r] = (uint8_t)is;
		snap_event(m, a, name, (int)r, detail, source);
	}
	a->nmembers = now->nmembers;
	memcpy(a->state, now->state, sizeof(a->state));
	if (!was_degraded && mon_array_degraded(a))
		snap_event(m, a, "degraded", -1, "", source);
	else if (was_degraded && !mon_array_degraded(a))
		snap_event(m, a, "optimal", -1, "", source);
	if (now->nspares < was_spares) {
		snprintf(detail, sizeof(detail), "spares=%u was=%u", now->nspares, was_spares);
		snap_event(m, a, activated >= 0 ? "spare-activated" : "spares-missing", activated,
			   detail, source);
	}
	a->nspares = now->nspares;
}

static void look_keep(struct mon_array *a, const struct mon_snap *now)
{
	a->nmembers = now->nmembers;
	memcpy(a->state, now->state, sizeof(a->state));
	for (unsigned r = 0; r < now->nmembers; r++)
		if (now->path[r][0] || a->state[r] == GRAID_MEMBER_ACTIVE)
			snprintf(a->path[r], sizeof(a->path[r]), "%s", now->path[r]);
	memcpy(a->id, now->id, sizeof(a->id));
	a->nspares = now->nspares;
	a->have_base = 1;
}

static void look_one(struct mon *m, const struct gctl_scan *s, const struct gctl_scan_array *sa,
		     struct mon_array *a)
{
	struct mon_snap now;
	char **members = gctl_scan_members(s, sa), detail[96];
	uint8_t (*ids)[16] = calloc((size_t)sa->ndev + 1, 16);
	int rc;

	for (int k = 0; ids && k < sa->ndev; k++)
		memcpy(ids[k], s->dev[sa->dev[k]].p.member_uuid, 16);
	rc = members && ids ? look_take(members, ids, sa->ndev, &now) : -ENOMEM;

	/* Read while a writer rewrites the superblocks: once more before it is an event. */
	if (rc && rc != -ENOMEM) {
		usleep(200000);
		rc = look_take(members, ids, sa->ndev, &now);
	}
	if (rc) {
		if (!a->look_failed && (a->have_base || m->oneshot)) {
			snprintf(detail, sizeof(detail), "error=%s", graid_strerror(rc));
			for (char *p = detail; *p; p++)
				if (*p == ' ')
					*p = '_';
			look_event(m, a, "array-failed", -1, detail);
		}
		a->look_failed = 1;
		a->have_base = 0;
		free(members);
		free(ids);
		return;
	}
	a->look_failed = 0;
	if (a->have_base) {
		mon_diff(m, a, &now, "look");
		for (unsigned r = 0; r < now.nmembers; r++) {
			if (now.path[r][0])
				snprintf(a->path[r], sizeof(a->path[r]), "%s", now.path[r]);
			if (now.state[r] == GRAID_MEMBER_ACTIVE || now.state[r] == GRAID_MEMBER_REBUILDING)
				memcpy(a->id[r], now.id[r], 16);
		}
		a->nspares = now.nspares;
	} else {
		look_keep(a, &now);
		/* Found after the start: an array assembled, or its members plugged in. */
		if (m->started && !a->known)
			look_event(m, a, "new-array", -1, "");
		a->known = 1;
		if (mon_array_degraded(a))
			look_event(m, a, "degraded", -1, "");
		/*
		 * Its writer died (a crash, a kill): no event of a holder says so, and the parity
		 * of the regions it was writing is not to be trusted until a writable open
		 * resyncs them. Said where an array is first seen, as degraded is. Not for one
		 * whose owner record names another host: it may hold the array now (shared
		 * storage), which cannot be told from here; that host's monitor says it.
		 */
		if (now.unclean && !now.elsewhere) {
			snprintf(detail, sizeof(detail), "regions=%llu",
				 (unsigned long long)now.resync_regions);
			look_event(m, a, "resync-needed", -1, detail);
		}
	}
	free(members);
	free(ids);
}

/* The devices of the arrays a holder reports on: their files' or devices' stat()s. */
struct look_skip {
	struct stat *st;
	int n;
};

static void skip_add(struct look_skip *k, const char *path)
{
	struct stat st, *v;

	/* A holder's relative path is relative to its directory, not ours: not known here. */
	if (path[0] != '/' || stat(path, &st))
		return;
	v = realloc(k->st, (size_t)(k->n + 1) * sizeof(*v));
	if (!v)
		return;
	k->st = v;
	k->st[k->n++] = st;
}

static int skip_has(const struct stat *st, void *arg)
{
	const struct look_skip *k = arg;

	for (int i = 0; i < k->n; i++)
		if (gctl_scan_same(st, &k->st[i]))
			return 1;
	return 0;
}

void mon_look_round(struct mon *m)
{
	struct gctl_conf c;
	struct gctl_scan s;
	struct look_skip k = { 0 };
	int rc;

	if (gctl_conf_load(m->config, &c))
		return;
	/*
	 * A served array's state comes from its holder: its devices are not read, so that a
	 * look of the others is not held up by them (a device that hangs, a busy one).
	 */
	for (int i = 0; i < m->narr; i++) {
		struct mon_array *a = m->arr[i];

		if (!a->subscribed && !a->served_now)
			continue;
		for (unsigned r = 0; r < a->nmembers; r++)
			skip_add(&k, a->path[r]);
		for (unsigned r = 0; r < a->nspare_paths; r++)
			skip_add(&k, a->spare_path[r]);
	}
	rc = gctl_scan_config_skip(&c, &s, k.n ? skip_has : NULL, &k);
	free(k.st);
	if (rc) {
		fprintf(stderr, "graidctl monitor: scan: %s\n", strerror(ENOMEM));
		gctl_conf_free(&c);
		return;
	}
	for (int i = 0; i < m->narr; i++)
		m->arr[i]->found = 0;
	for (int i = 0; i < s.narr; i++) {
		struct mon_array *a = mon_array_get(m, s.arr[i].uuid);

		if (!a)
			continue;
		a->found = 1;
		a->level = s.arr[i].level;
		if (s.arr[i].conf && s.arr[i].conf->name)
			snprintf(a->name, sizeof(a->name), "%s", s.arr[i].conf->name);
		if (a->subscribed || a->served_now)
			continue;
		look_one(m, &s, &s.arr[i], a);
	}
	for (int i = 0; i < m->narr; i++) {
		struct mon_array *a = m->arr[i];

		if (a->found || a->subscribed || a->served_now || !a->have_base)
			continue;
		look_event(m, a, "array-disappeared", -1, "found=0");
		a->have_base = 0;
	}
	mon_state_save(m);
	gctl_scan_free(&s);
	gctl_conf_free(&c);
}
