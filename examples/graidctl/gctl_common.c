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
void gctl_explain_paths(const char *cmd, char **paths, int n)
{
	for (int i = 0; i < n; i++) {
		if (access(paths[i], F_OK) != 0)
			gctl_err("%s: %s: %s", cmd, paths[i], strerror(errno));
		else if (access(paths[i], R_OK | W_OK) != 0)
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

/*
 * Before an open that would write: would it run with roles missing? Such an open records
 * them missing (they catch up when given again, but meanwhile the array is degraded), which
 * mdadm too does only when told (--run). A look (read-only) tells without writing.
 */
static int gctl_check_complete(const char *cmd, char **members, int n)
{
	/*
	 * The look computes no parity: the reference engine, so that "auto" is not measured and
	 * no accelerator initialised twice for one command.
	 */
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = "ref",
					.flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	char roles[512] = "";
	size_t at = 0;
	unsigned out = 0;

	if (graid_array_open((const char *const *)members, (unsigned)n, &o, &a))
		return GCTL_EXIT_OK; /* the real open reports why */
	if (graid_array_info(a, &info) == 0)
		for (unsigned r = 0; r < info.nmembers; r++)
			if (info.member_state[r] == GRAID_MEMBER_MISSING) {
				if (at < sizeof(roles))
					at += (size_t)snprintf(roles + at, sizeof(roles) - at, "%s%u",
							       out ? ", " : "", r);
				out++;
			}
	graid_array_close(a);
	if (!out)
		return GCTL_EXIT_OK;
	gctl_err("%s: role%s %s of the array %s not among the members given; give %s, or add "
		 "--degraded to go on without %s (nothing was changed)",
		 cmd, out > 1 ? "s" : "", roles, out > 1 ? "are" : "is", out > 1 ? "them" : "it",
		 out > 1 ? "them" : "it");
	return GCTL_EXIT_FAILED;
}

int gctl_open(const char *cmd, char **members, int nmembers, const char *backend,
	      unsigned how, struct graid_array **out)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = backend };
	int rc, ex = gctl_given_twice(cmd, members, nmembers);

	if (ex == GCTL_EXIT_OK && !(how & GCTL_OPEN_LOOK) && !gctl_degraded_ok)
		ex = gctl_check_complete(cmd, members, nmembers);
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
	/* The array's lease (graidctl lease-init), for opens that may write. */
	if (!(how & GCTL_OPEN_LOOK) && getenv("GRAID_LEASE") && *getenv("GRAID_LEASE"))
		o.lease = getenv("GRAID_LEASE");
	rc = graid_array_open((const char *const *)members, (unsigned)nmembers, &o, out);
	if (rc == 0)
		return GCTL_EXIT_OK;
	if (rc == -ENOENT || rc == -EACCES || rc == -EPERM)
		gctl_explain_paths(cmd, members, nmembers);
	if (rc == -EINVAL || rc == -ENODEV)
		gctl_explain_backend(cmd, backend);
	gctl_err("%s: cannot assemble the array from %d member%s: %s", cmd, nmembers,
		 nmembers == 1 ? "" : "s", graid_strerror(rc));
	/* -EIO from open means "too many roles lost": the array is broken, not the call. */
	return rc == -EIO ? GCTL_EXIT_BROKEN : GCTL_EXIT_FAILED;
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
