/* SPDX-License-Identifier: MIT */
/* Persistent reservations on one member: the Linux PR ioctls, or a test's modelled drive. */
#include <errno.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <linux/pr.h>

#include "member/member.h"
#include "member/member_pr.h"

/*
 * What an ioctl returning a positive value means: the device's status (SCSI status byte; the
 * kernel maps NVMe statuses onto the same values). 0x18 is RESERVATION CONFLICT in both.
 */
#define PR_STATUS_CONFLICT 0x18

/* One ioctl's outcome as this file's callers see it. */
static int pr_result(const struct member *m, const char *what, int rc)
{
	int err;

	if (rc == 0)
		return 0;
	if (rc == PR_STATUS_CONFLICT)
		return -EBUSY;
	if (rc > 0) {
		graid__log(GRAID_LOG_WARNING, "member %s: reservation %s: device status 0x%x",
			   m->dev.path, what, (unsigned)rc);
		return -EIO;
	}
	err = errno;
	/*
	 * No pr_ops (ENOTTY, EOPNOTSUPP), or a device that answers the command with "invalid
	 * opcode or field" (the kernel's EINVAL: nvmet before reservations came in 6.13).
	 */
	if (err == ENOTTY || err == EOPNOTSUPP || err == EINVAL)
		return -EOPNOTSUPP;
	/* The kernel allows them on whole devices only, and to CAP_SYS_ADMIN before 6.5. */
	if (err == EPERM) {
		graid__log(GRAID_LOG_INFO, "member %s: reservation %s not permitted (a partition, "
					   "or not privileged)", m->dev.path, what);
		return -EOPNOTSUPP;
	}
	graid__log(GRAID_LOG_WARNING, "member %s: reservation %s: %s", m->dev.path, what,
		   graid_strerror(-err));
	return -err;
}

int member_pr_reserve(struct member *m, uint64_t key)
{
	struct pr_registration reg = { .new_key = key, .flags = PR_FL_IGNORE_KEY };
	struct pr_reservation res = { .key = key, .type = PR_WRITE_EXCLUSIVE };
	int rc;

	if (m->dev.fault)
		return fault_pr(m->dev.fault, FAULT_PR_RESERVE, key, 0);
	if (!m->dev.is_blk || m->dev.nvme.passthru)
		return -EOPNOTSUPP;
	rc = pr_result(m, "register", ioctl(m->dev.fd, IOC_PR_REGISTER, &reg));
	if (rc)
		return rc;
	return pr_result(m, "reserve", ioctl(m->dev.fd, IOC_PR_RESERVE, &res));
}

int member_pr_preempt(struct member *m, uint64_t key, uint64_t victim)
{
	/* Linux's names: old_key is this host's own registered key, new_key the victim's. */
	struct pr_preempt p = { .old_key = key, .new_key = victim, .type = PR_WRITE_EXCLUSIVE };

	if (m->dev.fault)
		return fault_pr(m->dev.fault, FAULT_PR_PREEMPT, key, victim);
	if (!m->dev.is_blk || m->dev.nvme.passthru)
		return -EOPNOTSUPP;
	/*
	 * Plain preempt, not preempt-and-abort: LIO's abort of the victim's commands stalled
	 * this call (and the victim's I/O) for minutes in the test bed. What the victim
	 * had already started at the device completes; the takeover's fence wait (2.5 s)
	 * covers it before this host writes data.
	 */
	return pr_result(m, "preempt", ioctl(m->dev.fd, IOC_PR_PREEMPT, &p));
}

int member_pr_settle(struct member *m, uint64_t key, int rc, bool strict, bool *held)
{
	*held = rc == 0;
	if (rc == 0 || rc == -EBUSY)
		return rc;
	if (strict) {
		graid__log(GRAID_LOG_ERR, "member %s: %s, and persistent reservations were asked for "
					  "(GRAID_OPEN_RESERVE)",
			   m->dev.path, rc == -EOPNOTSUPP ? "no persistent reservations"
						      : graid_strerror(rc));
		return rc;
	}
	/* Registered, perhaps (a device that refused the reserve): undone. */
	member_pr_release(m, key);
	graid__log(GRAID_LOG_INFO, "member %s: no persistent reservations (%s): fenced by the "
				   "lease and the owner epoch only", m->dev.path, graid_strerror(rc));
	return 0;
}

void member_pr_release(struct member *m, uint64_t key)
{
	struct pr_reservation res = { .key = key, .type = PR_WRITE_EXCLUSIVE };
	struct pr_registration reg = { .old_key = key, .new_key = 0 };

	if (m->dev.fault) {
		fault_pr(m->dev.fault, FAULT_PR_RELEASE, key, 0);
		return;
	}
	if (!m->dev.is_blk || m->dev.nvme.passthru || m->dev.fd < 0)
		return;
	/* Either may find nothing of ours (preempted, or never taken): that is fine. */
	(void)ioctl(m->dev.fd, IOC_PR_RELEASE, &res);
	(void)ioctl(m->dev.fd, IOC_PR_REGISTER, &reg);
}
