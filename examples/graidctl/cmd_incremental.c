/* SPDX-License-Identifier: MIT */
/* graidctl incremental: udev's one device at a time; the array is assembled once its last member is seen. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/file.h>
#include <sys/stat.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_scan.h"

void gctl_help_incremental(FILE *f)
{
	gctl_print_cmd_usage(f, "incremental");
	fprintf(f,
		"\nFor udev, called once for each device that appears, in any order and at the same\n"
		"time for many: if DEVICE carries a libgraid superblock, record it in the array's\n"
		"state file ($GRAID_RUN_DIR/incremental/UUID, default run directory /run/graid);\n"
		"once every role of that array has been seen, assemble it (without waiting for a\n"
		"catch-up: whoever serves it next finishes that) and start the service its\n"
		"ARRAY line's serve= names. Each array is assembled once: later calls for it only\n"
		"record the device. Calls for one array wait for each other (flock on its state\n"
		"file). A device without a superblock is ignored. The run directory is meant to be\n"
		"emptied at boot (a tmpfs). After a crash the resync is not waited for either\n"
		"(udev stops what it runs after a while): the regions stay marked, and whoever\n"
		"opens the array next resyncs them. An assembly that failed is not tried again\n"
		"for the same devices with the same superblocks: each open would make udev send\n"
		"another event for every member; a new or changed member tries again, and\n"
		"`graidctl assemble --scan` tries by hand.\n\n"
		"With --remove (udev's remove event, md's `mdadm --incremental --fail`), DEVICE\n"
		"has gone: it is taken out of every array's state file that records it, so a\n"
		"device that appears later under its name is judged afresh.\n\n"
		"  -c, --config FILE  the config (default $GRAID_CONF, else " GCTL_CONF_DEFAULT ")\n"
		"  -r, --remove       DEVICE was removed (see above)\n\n"
		"Exit status: 0 recorded (and assembled, or waiting for more members, or\n"
		"assembled already, or no superblock); 3 assembled degraded, or with a crash's\n"
		"resync still under way when it closed; 1 failed (DEVICE\n"
		"cannot be read, a bad config, the assembly failed now or failed before for the\n"
		"same devices); 2 usage error.\n");
}

/*
 * The run directory is made when missing and must be this user's own and writable by no
 * one else: whoever could write the state could make this (root) process open any path.
 */
static int inc_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/*
 * The state: "device PATH" per device seen, "assembled N" once the array was assembled,
 * "failed HEX" with the fingerprint of the devices a failed assembly was tried on.
 */
struct inc_state {
	char **dev;
	int ndev;
	unsigned assembled;
	uint64_t failed;
};

static int inc_read(int fd, struct inc_state *st)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int dfd = dup(fd), rc = 0;

	if (dfd < 0 || !(f = fdopen(dfd, "r"))) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	rewind(f);
	while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (!strncmp(line, "device ", 7)) {
			char **v = realloc(st->dev, (size_t)(st->ndev + 1) * sizeof(*v));

			if (!v || !(v[st->ndev] = strdup(line + 7)))
				rc = -ENOMEM;
			if (v)
				st->dev = v;
			if (rc == 0)
				st->ndev++;
		} else if (!strncmp(line, "assembled ", 10)) {
			st->assembled = (unsigned)strtoul(line + 10, NULL, 10);
		} else if (!strncmp(line, "failed ", 7)) {
			st->failed = strtoull(line + 7, NULL, 16);
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* Rewritten in place under the lock (a rename would leave waiters locking the old file). */
static int inc_write(int fd, const struct inc_state *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc = 0;

	if (!m)
		return -ENOMEM;
	for (int i = 0; i < st->ndev; i++)
		fprintf(m, "device %s\n", st->dev[i]);
	if (st->assembled)
		fprintf(m, "assembled %u\n", st->assembled);
	if (st->failed)
		fprintf(m, "failed %016llx\n", (unsigned long long)st->failed);
	if (fclose(m))
		return -ENOMEM;
	if (ftruncate(fd, 0) || pwrite(fd, buf, len, 0) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	free(buf);
	return rc;
}

static void inc_free(struct inc_state *st)
{
	for (int i = 0; i < st->ndev; i++)
		free(st->dev[i]);
	free(st->dev);
}

/* Keep only the recorded devices that still carry this array (a device replaced, reused). */
static int inc_prune(struct inc_state *st, const struct gctl_scan *s,
		     const struct gctl_scan_array *a)
{
	int k = 0;

	for (int i = 0; i < st->ndev; i++) {
		int keep = 0;

		for (int d = 0; a && d < a->ndev && !keep; d++)
			keep = !strcmp(s->dev[a->dev[d]].path, st->dev[i]);
		if (keep)
			st->dev[k++] = st->dev[i];
		else
			free(st->dev[i]);
	}
	st->ndev = k;
	return 0;
}

/*
 * What an assembly is tried on: each device found for the array, by name, the filesystem
 * and device numbers, inode, and what its superblock says of it (member UUID, role, state,
 * event count): FNV-1a over them in the record's order. A device swapped under the same
 * name, or a superblock anyone rewrote, changes it. Never 0, which the state reads as "no
 * failure".
 */
static uint64_t inc_fingerprint(const struct gctl_scan *s, const struct gctl_scan_array *a)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int d = 0; d < a->ndev; d++) {
		const struct gctl_scan_dev *v = &s->dev[a->dev[d]];
		char buf[160];
		int n = snprintf(buf, sizeof(buf), "|%llx:%llx:%llx:%llx:%u:%d:",
				 (unsigned long long)v->st.st_dev, (unsigned long long)v->st.st_rdev,
				 (unsigned long long)v->st.st_ino, (unsigned long long)v->p.events,
				 v->p.role, v->p.state);

		for (int i = 0; i < 16; i++)
			h = (h ^ v->p.member_uuid[i]) * 0x100000001b3ull;

		for (const char *p = v->path; *p; p++)
			h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
		for (int i = 0; i < n && i < (int)sizeof(buf); i++)
			h = (h ^ (uint8_t)buf[i]) * 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The fingerprint of the recorded devices probed again now (@p before if they cannot be). */
static uint64_t inc_fingerprint_now(const struct gctl_conf *c, const struct inc_state *st,
				    const uint8_t uuid[16], uint64_t before)
{
	struct gctl_scan s = { 0 };
	const struct gctl_scan_array *a;
	uint64_t fp = before;

	if (gctl_scan_paths(c, st->dev, st->ndev, &s) == 0 && (a = gctl_scan_find(&s, uuid)))
		fp = inc_fingerprint(&s, a);
	gctl_scan_free(&s);
	return fp;
}

static int inc_run(const char *config, const char *path)
{
	struct graid_member_probe p = { .struct_size = sizeof(p) };
	struct inc_state st = { 0 };
	struct gctl_conf c;
	struct gctl_scan s = { 0 };
	struct gctl_scan_array *a;
	const struct gctl_conf_array *ca;
	const char *run = getenv("GRAID_RUN_DIR");
	char dir[4096], file[4200], uuid[37], label[128], missing[1024];
	int rc, fd = -1, ex = GCTL_EXIT_FAILED, known = 0;
	uint64_t fp;

	if (!run || !*run)
		run = "/run/graid";
	if (gctl_conf_load(config, &c))
		return GCTL_EXIT_FAILED;
	rc = gctl_scan_probe_one(path, &p);
	if (rc) {
		gctl_err("incremental: %s: %s", path, graid_strerror(rc));
		goto out;
	}
	ex = GCTL_EXIT_OK;
	if (!p.has_superblock)
		goto out;
	gctl_uuid_format(p.array_uuid, uuid);
	ca = gctl_conf_find(&c, p.array_uuid);
	if (!ca && !c.auto_all) {
		printf("%s: %s: no ARRAY line in %s, and AUTO is no: ignored\n", uuid, path, c.path);
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s/incremental", run);
	if ((rc = inc_dir(run)) || (rc = inc_dir(dir))) {
		gctl_err("incremental: %s: %s%s", rc == -EPERM ? dir : run, strerror(-rc),
			 rc == -EPERM ? " (it must be this user's own directory, writable by no "
			 "one else)" : "");
		ex = GCTL_EXIT_FAILED;
		goto out;
	}
	snprintf(file, sizeof(file), "%s/%s", dir, uuid);
	fd = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		gctl_err("incremental: %s: %s", file, strerror(errno));
		ex = GCTL_EXIT_FAILED;
		goto out;
	}
	if ((rc = inc_read(fd, &st)))
		goto fail_rc;
	for (int i = 0; i < st.ndev; i++)
		known |= !strcmp(st.dev[i], path);
	if (!known) {
		char **v = realloc(st.dev, (size_t)(st.ndev + 1) * sizeof(*v));

		if (!v || !(v[st.ndev] = strdup(path))) {
			if (v)
				st.dev = v;
			rc = -ENOMEM;
			goto fail_rc;
		}
		st.dev = v;
		st.ndev++;
	}
	if (st.assembled) {
		printf("%s: %s recorded; the array was assembled already\n", uuid, path);
		rc = inc_write(fd, &st);
		goto done;
	}
	/* Every device recorded, probed again now: what the array has, and what it lacks. */
	if ((rc = gctl_scan_paths(&c, st.dev, st.ndev, &s)))
		goto fail_rc;
	a = gctl_scan_find(&s, p.array_uuid);
	inc_prune(&st, &s, a);
	if (!a) { /* DEVICE is not one of its ARRAY line's members= */
		printf("%s: %s is not among its ARRAY line's members=: ignored\n", uuid, path);
		rc = inc_write(fd, &st);
		goto done;
	}
	gctl_scan_label(a, label, sizeof(label));
	if (a->holder_pid) {
		printf("%s: %s recorded; the array is held by %s\n", label, path, a->holder);
		rc = inc_write(fd, &st);
		goto done;
	}
	if (a->nmissing) {
		gctl_scan_missing_text(a, missing, sizeof(missing));
		printf("%s: %s recorded (role %u); waiting for role%s %s\n", label, path, p.role,
		       a->nmissing > 1 ? "s" : "", missing);
		rc = inc_write(fd, &st);
		goto done;
	}
	fp = inc_fingerprint(&s, a);
	if (st.failed == fp) {
		printf("%s: %s recorded; its assembly failed before on these same devices: not "
		       "tried again until one changes (graidctl assemble --scan tries by hand)\n",
		       label, path);
		ex = GCTL_EXIT_FAILED;
		rc = inc_write(fd, &st);
		goto done;
	}
	ex = gctl_scan_start("incremental", &s, a, GCTL_OPEN_RESYNC_LATER, 0, 0);
	if (ex == GCTL_EXIT_OK || ex == GCTL_EXIT_DEGRADED) {
		st.assembled++;
		st.failed = 0;
	} else {
		/*
		 * The devices as the attempt left them: an open that got as far as writing
		 * superblocks, or a service that failed after the array was assembled and
		 * closed, moved their events, and udev's event for that close must not count
		 * as a change that deserves another try.
		 */
		st.failed = inc_fingerprint_now(&c, &st, p.array_uuid, fp);
	}
	rc = inc_write(fd, &st);
done:
	if (rc == 0)
		goto out;
fail_rc:
	gctl_err("incremental: %s: %s", file, strerror(-rc));
	ex = GCTL_EXIT_FAILED;
out:
	if (fd >= 0)
		close(fd); /* lets the next call for this array in */
	gctl_scan_free(&s);
	inc_free(&st);
	gctl_conf_free(&c);
	return ex;
}

/*
 * Take @p path out of the state file @p file (under its lock); 1 when it was recorded there,
 * 0 when not, -errno.
 */
static int inc_forget_in(const char *file, const char *path)
{
	struct inc_state st = { 0 };
	int fd = open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC), rc, k = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_EX)) {
		rc = -errno;
		goto out;
	}
	if ((rc = inc_read(fd, &st)))
		goto out;
	for (int i = 0; i < st.ndev; i++) {
		if (strcmp(st.dev[i], path))
			st.dev[k++] = st.dev[i];
		else
			free(st.dev[i]);
	}
	rc = k == st.ndev ? 0 : 1;
	st.ndev = k;
	/*
	 * Every device of the array gone: its next appearance is a new start (a rewrite, not
	 * an unlink: a call waiting on this file's lock must find it still the record).
	 */
	if (k == 0) {
		st.assembled = 0;
		st.failed = 0;
	}
	if (rc == 1 && (rc = inc_write(fd, &st)) == 0)
		rc = 1;
out:
	close(fd);
	inc_free(&st);
	return rc;
}

/* udev's remove event: DEVICE is gone; forget it in every array's state file. */
static int inc_remove(const char *path)
{
	const char *run = getenv("GRAID_RUN_DIR");
	char dir[4096], file[4400];
	struct dirent *d;
	DIR *dp;
	int found = 0, ex = GCTL_EXIT_OK;

	if (!run || !*run)
		run = "/run/graid";
	snprintf(dir, sizeof(dir), "%s/incremental", run);
	/* The records name paths this (root) process rewrites: the same checks as for adding. */
	if (access(dir, F_OK) == 0) {
		int rc = inc_dir(run);

		if (rc == 0)
			rc = inc_dir(dir);
		if (rc) {
			gctl_err("incremental: %s: %s%s", rc == -EPERM ? dir : run, strerror(-rc),
				 rc == -EPERM ? " (it must be this user's own directory, writable by "
				 "no one else)" : "");
			return GCTL_EXIT_FAILED;
		}
	}
	dp = opendir(dir);
	if (!dp) {
		if (errno == ENOENT) {
			printf("%s: not recorded (no array was recorded on this host): nothing to do\n",
			       path);
			return GCTL_EXIT_OK;
		}
		gctl_err("incremental: %s: %s", dir, strerror(errno));
		return GCTL_EXIT_FAILED;
	}
	while ((d = readdir(dp))) {
		int rc;

		if (d->d_name[0] == '.' || strlen(d->d_name) != 36)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, d->d_name);
		rc = inc_forget_in(file, path);
		if (rc < 0) {
			gctl_err("incremental: %s: %s", file, strerror(-rc));
			ex = GCTL_EXIT_FAILED;
		} else if (rc) {
			printf("%s: %s removed from its record\n", d->d_name, path);
			found = 1;
		}
	}
	closedir(dp);
	if (!found && ex == GCTL_EXIT_OK)
		printf("%s: not recorded: nothing to do\n", path);
	return ex;
}

int gctl_cmd_incremental(int argc, char **argv)
{
	char abs[4096];
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "remove", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL;
	int c, remove = 0;

	while ((c = getopt_long(argc, argv, "c:r", opts, NULL)) != -1) {
		if (c == 'c') {
			config = optarg;
		} else if (c == 'r') {
			remove = 1;
		} else {
			fprintf(stderr, "Try 'graidctl incremental --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return gctl_usage_err("incremental", argc - optind ? "one DEVICE at a time" :
				      "no DEVICE given");
	/* A removed device's name cannot be resolved: it is matched as udev gives it. */
	if (remove)
		return inc_remove(argv[optind]);
	/* The record must name the device the same way from any directory a later call runs in. */
	if (argv[optind][0] != '/') {
		if (!realpath(argv[optind], abs)) {
			gctl_err("incremental: %s: %s", argv[optind], strerror(errno));
			return GCTL_EXIT_FAILED;
		}
		return inc_run(config, abs);
	}
	return inc_run(config, argv[optind]);
}
