/* SPDX-License-Identifier: MIT */
/* Helpers every subcommand uses: messages, assembling and closing an array, conversions. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

void gctl_err(const char *fmt, ...)
{
	va_list ap;

	fputs("graidctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int gctl_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "graidctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'graidctl %s --help'.\n", cmd);
	return GCTL_EXIT_USAGE;
}

/*
 * The library reports "a member could not be opened" without saying which (its log may);
 * checking each path ourselves after the fact names the culprit for the user.
 */
void gctl_explain_paths(const char *cmd, char **paths, int n, int look)
{
	for (int i = 0; i < n; i++) {
		if (access(paths[i], F_OK) != 0)
			gctl_err("%s: %s: %s", cmd, paths[i], strerror(errno));
		else if (access(paths[i], look ? R_OK : R_OK | W_OK) != 0)
			gctl_err("%s: %s: %s", cmd, paths[i], strerror(errno));
	}
}

/*
 * An unknown engine name comes back from the library as a bare -EINVAL, which reads like a
 * problem with the members; if the name is not among the engines known here, say so.
 */
void gctl_explain_backend(const char *cmd, const char *name)
{
	struct graid_backend_desc d[32];
	char known[256] = "";
	int n;

	if (!name || strcmp(name, "auto") == 0)
		return;
	for (unsigned i = 0; i < 32; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 32, 0);
	if (n < 0)
		return;
	for (int i = 0; i < n && i < 32; i++) {
		if (strcmp(d[i].name, name) == 0)
			return;
		snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
			 known[0] ? ", " : "", d[i].name);
	}
	gctl_err("%s: no parity engine named '%s' (known: auto, %s)", cmd, name, known);
}

int gctl_degraded_ok;

/* The same file or device under two names would be locked against itself: say so first. */
static int gctl_given_twice(const char *cmd, char **members, int n)
{
	for (int i = 0; i < n; i++) {
		struct stat si, sj;

		if (stat(members[i], &si))
			continue;
		for (int j = 0; j < i; j++)
			if (stat(members[j], &sj) == 0 && si.st_dev == sj.st_dev &&
			    si.st_ino == sj.st_ino)
				return gctl_usage_err(cmd, "member %s given twice (it is %s)",
						      members[i], members[j]);
	}
	return GCTL_EXIT_OK;
}

/* The path given for role @p r that the look, or a writable open, leaves out; or -1. */
static int gctl_role_blocker(const struct gctl_look *l, unsigned r)
{
	int g = gctl_look_left_out(l->given, l->n, r);

	for (int i = 0; g < 0 && i < l->n; i++)
		if (l->given[i].role == (int)r && l->given[i].verdict == GRAID_GIVEN_MEMBER &&
		    !l->given[i].writable)
			g = i; /* in the look, but not writable here: a writable open leaves it out */
	return g;
}

/*
 * Would the open leave role @p r out because of what was (or was not) given? A role not
 * given at all, or one whose member was given and left out at this open: for being shrunk
 * or a copy (recorded failed now), or not writable, diverged, stale while recorded missing.
 * A role the others recorded failed before needs no --degraded: it is out already.
 */
static int gctl_role_left_out(const struct gctl_look *l, unsigned r)
{
	int g = gctl_role_blocker(l, r);

	if (l->info.member_state[r] == GRAID_MEMBER_MISSING ||
	    (g >= 0 && l->given[g].verdict == GRAID_GIVEN_MEMBER))
		return 1;
	return l->info.member_state[r] == GRAID_MEMBER_FAILED && g >= 0 &&
	       (l->given[g].verdict == GRAID_GIVEN_SHRUNK ||
		l->given[g].verdict == GRAID_GIVEN_IDENTITY);
}

/* What --degraded would do with a member given and left out, as a hint after its reason. */
static const char *gctl_left_out_hint(int verdict)
{
	switch (verdict) {
	case GRAID_GIVEN_SHRUNK:
	case GRAID_GIVEN_IDENTITY:
		return "; --degraded records its role failed: it is rebuilt whole once replaced "
		       "(this device is accepted when it is whole again)";
	case GRAID_GIVEN_NOT_WRITABLE:
		return "; make it writable, or --degraded goes on without it (it catches up when "
		       "given writable)";
	case GRAID_GIVEN_DIVERGED:
		return "; it holds writes the others do not (the array was split): replace it, or "
		       "assemble from it alone to keep its side";
	default:
		return "";
	}
}

/* Is @p newdev the member of role @p r of the array looked at (its own path forgotten)? */
static int gctl_is_role_member(const struct gctl_look *l, const char *newdev, unsigned r)
{
	struct graid_member_probe p = { .struct_size = sizeof(p) };

	return newdev && graid_member_probe(newdev, &p) == 0 && p.has_superblock &&
	       !memcmp(p.array_uuid, l->info.uuid, 16) && p.role == r;
}

/*
 * Before an open that would write: would it run with roles left out? Such an open records
 * them out (missing ones catch up when given again, but meanwhile the array is degraded),
 * which mdadm too does only when told (--run). A look (read-only) tells without writing;
 * its log is printed only if the command is refused on what it found, so that every line
 * of the library's log comes once (the open that follows prints its own). Role @p role
 * (replace's) is exempt; @p newdev is the device the command puts in.
 */
static int gctl_check_complete(const char *cmd, char **members, int n, int role,
			       const char *newdev)
{
	struct gctl_look l;
	unsigned out = 0, forgot = 0, absent = 0;

	gctl_log_hold();
	if (gctl_look_open(members, n, &l)) {
		gctl_log_release(0); /* the real open reports why */
		return GCTL_EXIT_OK;
	}
	/* Held by a live process: the real open is refused, naming it. */
	for (unsigned r = 0; !l.info.holder_pid && r < l.info.nmembers; r++)
		out += (int)r != role && gctl_role_left_out(&l, r);
	if (!out) {
		gctl_log_release(0);
		gctl_look_free(&l);
		return GCTL_EXIT_OK;
	}
	gctl_log_release(1);
	for (unsigned r = 0; r < l.info.nmembers; r++) {
		int g = gctl_role_blocker(&l, r);

		if ((int)r == role || !gctl_role_left_out(&l, r))
			continue;
		if (g >= 0 && l.given[g].verdict == GRAID_GIVEN_MEMBER) {
			gctl_err("%s: role %u: %s was given but cannot be written here (its "
				 "permissions, a read-only mount or device)%s", cmd, r, members[g],
				 gctl_left_out_hint(GRAID_GIVEN_NOT_WRITABLE));
		} else if (g >= 0) {
			gctl_err("%s: role %u: %s was given but left out: %s%s", cmd, r, members[g],
				 l.given[g].why, gctl_left_out_hint(l.given[g].verdict));
		} else if (gctl_is_role_member(&l, newdev, r)) {
			gctl_err("%s: role %u of the array is not among the members given, and %s, "
				 "given as the %s, is role %u's own member: was the %s's path left "
				 "out?", cmd, r, newdev, role >= 0 ? "new device" : "spare", r,
				 role >= 0 ? "new device" : "spare");
			forgot++;
		} else {
			gctl_err("%s: role %u of the array is not among the members given", cmd, r);
			absent++;
		}
	}
	if (forgot)
		gctl_err("%s: nothing was changed", cmd);
	else if (absent)
		gctl_err("%s: nothing was changed; give the missing member%s, or add --degraded to "
			 "go on without %s", cmd, out > 1 ? "s" : "", out > 1 ? "them" : "it");
	else
		gctl_err("%s: nothing was changed; add --degraded to go on without %s", cmd,
			 out > 1 ? "them" : "it");
	gctl_look_free(&l);
	return GCTL_EXIT_FAILED;
}

/* gctl_open_impl()'s answer for an array reached through its holder's endpoint. */
#define GCTL_SERVED (-1)

/*
 * The holder's endpoint, or why there is none to go through. Connection refused or no
 * socket: nobody serves one; anything else (another user's socket, a holder that does not
 * answer, another protocol) is a problem with the one that is there, said as such.
 */
static int gctl_reach_holder(const char *cmd, const struct gctl_look *l, struct gctl_ctl *ctl)
{
	char why[256];
	int rc;

	rc = l->ctl_path[0] ? gctl_ctl_connect(ctl, l->ctl_path, why, sizeof(why)) : -ENOENT;
	if (rc == 0) {
		ctl->holder_pid = l->info.holder_pid;
		snprintf(ctl->holder, sizeof(ctl->holder), "%s", l->info.holder);
		return GCTL_SERVED;
	}
	if (rc == -ENOENT || rc == -ECONNREFUSED) {
		gctl_err("%s: refused while %s holds the array: make the change through that "
			 "program, or stop it and run this command again; it serves no control "
			 "endpoint (nothing listens at %s) through which graidctl could ask it: "
			 "graid-ublk and the nbdkit plugin serve one by default, and a program "
			 "embedding libgraid calls graid_array_control_start(); nothing was changed",
			 cmd, l->info.holder, l->ctl_path[0] ? l->ctl_path : "its socket");
		return GCTL_EXIT_FAILED;
	}
	gctl_err("%s: %s holds the array, and its control endpoint %s cannot be used: %s; "
		 "nothing was changed", cmd, l->info.holder, l->ctl_path, why);
	return rc == -EPROTO ? GCTL_EXIT_UNSUPPORTED : GCTL_EXIT_FAILED;
}

/*
 * A writable open refused with -EBUSY: if a live process holds the array, go through its
 * control endpoint (@p ctl given), or say who holds it and what to do. GCTL_EXIT_OK: not
 * held by a live process (the caller says why the open failed).
 */
static int gctl_refuse_held(const char *cmd, char **members, int n, struct gctl_ctl *ctl)
{
	struct gctl_look l;
	int ex = GCTL_EXIT_OK;

	gctl_log_hold();
	if (gctl_look_open(members, n, &l) == 0) {
		if (l.info.holder_pid && ctl) {
			ex = gctl_reach_holder(cmd, &l, ctl);
		} else if (l.info.holder_pid) {
			gctl_err("%s: refused while %s holds the array: make the change through "
				 "that program, or stop it and run this command again; nothing was "
				 "changed", cmd, l.info.holder);
			ex = GCTL_EXIT_FAILED;
		}
		gctl_look_free(&l);
	}
	gctl_log_release(0);
	return ex;
}

static int gctl_open_impl(const char *cmd, char **members, int nmembers, const char *backend,
			  unsigned how, int role, const char *newdev, struct graid_array **out,
			  struct gctl_ctl *ctl)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = backend };
	int rc, ex = gctl_given_twice(cmd, members, nmembers);

	*out = NULL;
	if (ex == GCTL_EXIT_OK && !(how & GCTL_OPEN_LOOK) && !gctl_degraded_ok)
		ex = gctl_check_complete(cmd, members, nmembers, role, newdev);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (how & GCTL_OPEN_LOOK)
		o.flags |= GRAID_OPEN_READ_ONLY;
	if (how & GCTL_OPEN_FORCE)
		o.flags |= GRAID_OPEN_FORCE;
	if (how & GCTL_OPEN_TAKEOVER)
		o.flags |= GRAID_OPEN_TAKEOVER;
	if (how & GCTL_OPEN_RESERVE)
		o.flags |= GRAID_OPEN_RESERVE;
	if (how & GCTL_OPEN_RESYNC_LATER)
		o.flags |= GRAID_OPEN_RESYNC_BACKGROUND;
	/* The array's lease (graidctl lease-init), for opens that may write. */
	if (!(how & GCTL_OPEN_LOOK) && getenv("GRAID_LEASE") && *getenv("GRAID_LEASE"))
		o.lease = getenv("GRAID_LEASE");
	/*
	 * A command the holder can do: the library's refusal of a held array ("held by pid
	 * ...") is no news if the holder takes the change, and the refusal below says it
	 * better if it cannot. Held back until it is known which.
	 */
	if (ctl)
		gctl_log_hold();
	rc = graid_array_open((const char *const *)members, (unsigned)nmembers, &o, out);
	if (rc == 0 || rc != -EBUSY || (how & GCTL_OPEN_LOOK) || !ctl) {
		if (ctl)
			gctl_log_release(1);
	}
	if (rc == 0)
		return GCTL_EXIT_OK;
	*out = NULL;
	if (rc == -EBUSY && !(how & GCTL_OPEN_LOOK)) {
		struct gctl_log_saved open_log = { 0 };

		if (ctl) {
			gctl_log_take(&open_log);
			gctl_log_release(0);
		}
		ex = gctl_refuse_held(cmd, members, nmembers, ctl);
		/* Not held by a live process: the open's own lines say why it was refused. */
		gctl_log_restore(&open_log, ex == GCTL_EXIT_OK);
		if (ex != GCTL_EXIT_OK)
			return ex;
	}
	if (rc == -ENOENT || rc == -EACCES || rc == -EPERM)
		gctl_explain_paths(cmd, members, nmembers, how & GCTL_OPEN_LOOK);
	if (rc == -EINVAL || rc == -ENODEV)
		gctl_explain_backend(cmd, backend);
	gctl_err("%s: cannot assemble the array from %d member%s: %s", cmd, nmembers,
		 nmembers == 1 ? "" : "s", graid_strerror(rc));
	/* -EIO from open means "too many roles lost": the array is broken, not the call. */
	return rc == -EIO ? GCTL_EXIT_BROKEN : GCTL_EXIT_FAILED;
}

int gctl_open_for(const char *cmd, char **members, int nmembers, const char *backend,
		  unsigned how, int role, const char *newdev, struct graid_array **out)
{
	return gctl_open_impl(cmd, members, nmembers, backend, how, role, newdev, out, NULL);
}

int gctl_open_served(const char *cmd, char **members, int nmembers, int role,
		     const char *newdev, struct graid_array **out, struct gctl_ctl *ctl)
{
	int ex;

	gctl_ctl_init(ctl);
	ex = gctl_open_impl(cmd, members, nmembers, NULL, 0, role, newdev, out, ctl);
	return ex == GCTL_SERVED ? GCTL_EXIT_OK : ex;
}

int gctl_open(const char *cmd, char **members, int nmembers, const char *backend,
	      unsigned how, struct graid_array **out)
{
	return gctl_open_for(cmd, members, nmembers, backend, how, -1, NULL, out);
}

int gctl_close(const char *cmd, struct graid_array *a)
{
	int rc = graid_array_close(a);

	if (rc) {
		gctl_err("%s: closing the array: %s", cmd, graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	return GCTL_EXIT_OK;
}

/* What -EOPNOTSUPP means from the healing calls, which is all it means today. */
const char *gctl_level_reason(int err)
{
	return err == -EOPNOTSUPP ? " (RAID-0 has no redundancy)" : "";
}

int gctl_parse_index(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= GRAID_MAX_MEMBERS)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

const char *gctl_state_name(int state)
{
	switch (state) {
	case GRAID_MEMBER_ACTIVE:
		return "active";
	case GRAID_MEMBER_FAILED:
		return "failed";
	case GRAID_MEMBER_MISSING:
		return "missing";
	case GRAID_MEMBER_REBUILDING:
		return "rebuilding";
	case GRAID_MEMBER_SPARE:
		return "spare";
	case GRAID_MEMBER_UNREACHABLE:
		return "unreachable";
	default:
		return "unknown";
	}
}

/* RFC 9562 text form, byte 0 first, as docs/FORMAT.md prints UUIDs. */
void gctl_uuid_format(const uint8_t uuid[16], char out[37])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		p += sprintf(p, "%02x", uuid[i]);
	}
}

double gctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
