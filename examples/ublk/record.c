/* SPDX-License-Identifier: MIT */
/*
 * Which array a /dev/ublkbN serves, for the tools beside graid-ublk: graid-nvmet refuses to
 * export a device under an array's names unless this record says the device serves that
 * array (a device number is only a number: two arrays started in another order swap them).
 *
 * $GRAID_RUN_DIR/ublk/ublkbN (default /run/graid/ublk/ublkbN), written once the device is
 * up and removed when it stops:
 *     uuid=xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
 *     pid=PID
 *     start=START     the process's start time (field 22 of /proc/PID/stat)
 * A record left by a server that was killed names a process that is gone (pid and start
 * time together: a pid can be reused); readers check both. Both directories must be this
 * user's own and writable by nobody else (anyone who could write there could forge a
 * record, or plant a link for this process to write through).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ublk_srv.h"

/* Made 0700/0755 when missing; an existing one must be ours and not group/other-writable. */
static int gu_record_dir(const char *dir, mode_t mode)
{
	struct stat st;

	if (mkdir(dir, mode) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

static int gu_record_path(uint32_t dev_id, char *path, size_t len, bool make_dir)
{
	const char *run = getenv("GRAID_RUN_DIR");
	char dir[3072];
	int rc;

	if (!run || !*run)
		run = "/run/graid";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/ublk", run) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (make_dir) {
		rc = gu_record_dir(run, 0700);
		if (rc == 0)
			rc = gu_record_dir(dir, 0755);
		if (rc)
			return rc;
	}
	if ((size_t)snprintf(path, len, "%s/ublkb%" PRIu32, dir, dev_id) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Field 22 of /proc/self/stat (after the command name, which may hold spaces); 0: unknown. */
static unsigned long long gu_start_time(void)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* ") S ppid ...": the state is field 3, so the start time is the 20th field after ')' */
	for (unsigned field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

void gu_uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

void gu_record_write(uint32_t dev_id, const uint8_t uuid[16])
{
	char path[4096], tmp[4200], text[256], u[37];
	int rc = gu_record_path(dev_id, path, sizeof(path), true), fd, len;

	if (rc == 0) {
		gu_uuid_str(uuid, u);
		len = snprintf(text, sizeof(text), "uuid=%s\npid=%ld\nstart=%llu\n", u,
			       (long)getpid(), gu_start_time());
		snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
		unlink(tmp);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			rc = -errno;
		} else {
			if (write(fd, text, (size_t)len) != len)
				rc = errno ? -errno : -EIO;
			if (close(fd) && rc == 0)
				rc = -errno;
			if (rc == 0 && rename(tmp, path))
				rc = -errno;
			if (rc)
				unlink(tmp);
		}
	}
	if (rc) {
		/* No older record may stand in for this server. */
		if (gu_record_path(dev_id, path, sizeof(path), false) == 0)
			unlink(path);
		fprintf(stderr, "graid-ublk: cannot record which array /dev/ublkb%" PRIu32
				" serves (%s; GRAID_RUN_DIR must be this user's own directory): "
				"graid-nvmet will refuse to export it\n",
			dev_id, strerror(-rc));
	}
}

void gu_record_remove(uint32_t dev_id)
{
	char path[4096];

	if (gu_record_path(dev_id, path, sizeof(path), false) == 0)
		unlink(path);
}
