/* SPDX-License-Identifier: MIT */
/*
 * The Linux persistent-reservation ioctls on a block device, one operation a call, its result
 * printed as the kernel gave it (the reserve suite, guest/reserve.sh: another host's view).
 *
 *   pr_probe DEVICE register KEY | reserve KEY | release KEY | preempt MYKEY VICTIMKEY |
 *            clear KEY | unregister KEY | write | read
 *
 * preempt: Linux's struct pr_preempt names this nexus's own registered key old_key and the
 * key to preempt new_key (SCSI: RESERVATION KEY and SERVICE ACTION RESERVATION KEY; NVMe:
 * CRKEY and PRKEY), whatever the names suggest.
 * Prints "OP rc=N errno=E (text)" and exits 0 when the ioctl or I/O succeeded, 1 otherwise
 * (an ioctl may also return a positive status: a reservation conflict from the device).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/pr.h>

static uint64_t key(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *op = argc > 2 ? argv[2] : "";
	int fd, rc = -1, err = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: pr_probe DEVICE OP [KEYS]\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0) {
		printf("open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	errno = 0;
	if (!strcmp(op, "register") && argc == 4) {
		struct pr_registration r = { .new_key = key(argv[3]), .flags = PR_FL_IGNORE_KEY };

		rc = ioctl(fd, IOC_PR_REGISTER, &r);
	} else if (!strcmp(op, "unregister") && argc == 4) {
		struct pr_registration r = { .old_key = key(argv[3]), .new_key = 0 };

		rc = ioctl(fd, IOC_PR_REGISTER, &r);
	} else if ((!strcmp(op, "reserve") || !strcmp(op, "release")) && argc == 4) {
		struct pr_reservation r = { .key = key(argv[3]), .type = PR_WRITE_EXCLUSIVE };

		rc = ioctl(fd, !strcmp(op, "reserve") ? IOC_PR_RESERVE : IOC_PR_RELEASE, &r);
	} else if (!strcmp(op, "preempt") && argc == 5) {
		struct pr_preempt p = { .old_key = key(argv[3]), .new_key = key(argv[4]),
					.type = PR_WRITE_EXCLUSIVE };

		rc = ioctl(fd, IOC_PR_PREEMPT, &p);
	} else if (!strcmp(op, "clear") && argc == 4) {
		struct pr_clear c = { .key = key(argv[3]) };

		rc = ioctl(fd, IOC_PR_CLEAR, &c);
	} else if (!strcmp(op, "write") || !strcmp(op, "read")) {
		void *buf;

		if (posix_memalign(&buf, 4096, 4096))
			return 1;
		memset(buf, 0x5a, 4096);
		rc = !strcmp(op, "write") ? (int)pwrite(fd, buf, 4096, 0) : (int)pread(fd, buf, 4096, 0);
		if (rc == 4096)
			rc = 0;
	} else {
		fprintf(stderr, "pr_probe: unknown operation '%s'\n", op);
		return 2;
	}
	err = rc < 0 ? errno : 0;
	printf("%s rc=%d errno=%d (%s)\n", op, rc, err, err ? strerror(err) : "-");
	close(fd);
	return rc == 0 ? 0 : 1;
}
