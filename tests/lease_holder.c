/* SPDX-License-Identifier: MIT */
/*
 * test_lease's "other host": takes an array's sanlock lease as HOST_ID through the daemon
 * that SANLOCK_RUN_DIR names (libsanlock_client reads it once per process, hence a program
 * of its own), writes "held\n" to stdout, holds it until stdin closes, gives it back.
 *
 *   lease_holder LOCKSPACE HOST_ID LEASE_PATH
 *
 * Exit status: 0, or the step that failed (with sanlock's error on stderr).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanlock.h>
#include <sanlock_admin.h>
#include <sanlock_resource.h>

int main(int argc, char **argv)
{
	struct sanlk_lockspace ls = { .flags = SANLK_LSF_SECTOR512 | SANLK_LSF_ALIGN1M };
	struct {
		struct sanlk_resource r;
		struct sanlk_disk d;
	} res = { .r = { .flags = SANLK_RES_SECTOR512 | SANLK_RES_ALIGN1M, .num_disks = 1 } };
	struct sanlk_resource *rp[1] = { &res.r };
	char c;
	int sock, rc;

	if (argc != 4)
		return 2;
	snprintf(ls.name, sizeof(ls.name), "%s", argv[1]);
	ls.host_id = strtoull(argv[2], NULL, 10);
	snprintf(ls.host_id_disk.path, sizeof(ls.host_id_disk.path), "%s", argv[3]);
	memcpy(res.r.lockspace_name, ls.name, sizeof(ls.name));
	snprintf(res.r.name, sizeof(res.r.name), "array");
	snprintf(res.d.path, sizeof(res.d.path), "%s", argv[3]);
	res.d.offset = 1u << 20;
	sock = sanlock_register();
	if (sock < 0) {
		fprintf(stderr, "lease_holder: register: %d\n", sock);
		return 20;
	}
	rc = sanlock_add_lockspace_timeout(&ls, 0, 1);
	if (rc && rc != -EEXIST) {
		fprintf(stderr, "lease_holder: add_lockspace: %d\n", rc);
		return 21;
	}
	rc = sanlock_acquire(sock, -1, 0, 1, rp, NULL);
	if (rc) {
		fprintf(stderr, "lease_holder: acquire: %d\n", rc);
		return 22;
	}
	printf("held\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	sanlock_release(sock, -1, 0, 1, rp);
	return 0;
}
