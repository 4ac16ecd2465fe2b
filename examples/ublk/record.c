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
 * A record left by a server that was killed names a pid that is gone; readers check it.
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

static int gu_record_path(uint32_t dev_id, char *path, size_t len, bool make_dir)
{
	const char *run = getenv("GRAID_RUN_DIR");
	char dir[3072];

	if (!run || !*run)
		run = "/run/graid";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/ublk", run) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (make_dir) {
		if (mkdir(run, 0700) && errno != EEXIST)
			return -errno;
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
	}
	if ((size_t)snprintf(path, len, "%s/ublkb%" PRIu32, dir, dev_id) >= len)
		return -ENAMETOOLONG;
	return 0;
}

void gu_record_write(uint32_t dev_id, const uint8_t uuid[16])
{
	char path[4096], tmp[4200];
	const uint8_t *u = uuid;
	FILE *f;
	int rc = gu_record_path(dev_id, path, sizeof(path), true);

	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
		f = fopen(tmp, "w");
		if (!f) {
			rc = -errno;
		} else {
			fprintf(f, "uuid=%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
				   "%02x%02x%02x%02x%02x%02x\npid=%ld\n",
				u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
				u[11], u[12], u[13], u[14], u[15], (long)getpid());
			if (fclose(f) || rename(tmp, path))
				rc = -errno;
			if (rc)
				unlink(tmp);
		}
	}
	if (rc)
		fprintf(stderr, "graid-ublk: cannot record which array /dev/ublkb%" PRIu32
				" serves (%s; GRAID_RUN_DIR): graid-nvmet will refuse to export it\n",
			dev_id, strerror(-rc));
}

void gu_record_remove(uint32_t dev_id)
{
	char path[4096];

	if (gu_record_path(dev_id, path, sizeof(path), false) == 0)
		unlink(path);
}
