/* SPDX-License-Identifier: MIT */
/* A member's drive health: the NVMe SMART / Health Information log, or a test's scripted one. */
#ifdef GRAID_HAVE_LIBNVME
/* libnvme first: it brings its own copy of <linux/nvme_ioctl.h>, under the same guard. */
#include <libnvme.h>
#endif

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "format/nvme_cmd.h"
#include "member/member.h"
#include "member/member_health.h"

#ifdef GRAID_HAVE_LIBNVME
/* A 128-bit little-endian counter of the log page, saturated to 64 bits. */
static uint64_t health_u128(const uint8_t v[16])
{
	uint64_t lo = 0;

	for (int i = 8; i < 16; i++)
		if (v[i])
			return UINT64_MAX;
	for (int i = 7; i >= 0; i--)
		lo = lo << 8 | v[i];
	return lo;
}

static void health_decode(const struct nvme_smart_log *l, struct graid_member_health *h)
{
	unsigned kelvin = (unsigned)l->temperature[0] | (unsigned)l->temperature[1] << 8;

	snprintf(h->source, sizeof(h->source), "nvme");
	h->critical_warning = l->critical_warning;
	h->available_spare = l->avail_spare;
	h->spare_threshold = l->spare_thresh;
	h->percent_used = l->percent_used;
	h->temperature_c = (int)kelvin - 273;
	h->media_errors = health_u128(l->media_errors);
	h->error_log_entries = health_u128(l->num_err_log_entries);
	h->power_on_hours = health_u128(l->power_on_hours);
	h->power_cycles = health_u128(l->power_cycles);
	h->unsafe_shutdowns = health_u128(l->unsafe_shutdowns);
	h->data_units_read = health_u128(l->data_units_read);
	h->data_units_written = health_u128(l->data_units_written);
	h->warning_temp_minutes = le32toh(l->warning_temp_time);
	h->critical_temp_minutes = le32toh(l->critical_comp_time);
}

static int health_nvme(const struct member_device *d, struct graid_member_health *h)
{
	struct nvme_smart_log *l;
	int rc;

	/* Log pages are read by DMA: aligned like the identify buffers. */
	if (posix_memalign((void **)&l, 4096, sizeof(*l)))
		return -ENOMEM;
	memset(l, 0, sizeof(*l));
	/*
	 * The controller's log (all namespaces); RAE kept: a monitor's events stay its own.
	 * The kernel's own admin timeout (0): a shorter one of ours would not abort a slow
	 * command but reset the whole controller, in-flight data I/O and all.
	 */
	struct nvme_get_log_args args = {
		.args_size = sizeof(args), .fd = d->fd, .timeout = 0,
		.lid = NVME_LOG_LID_SMART, .len = sizeof(*l), .log = l, .nsid = NVME_NSID_ALL,
		.csi = NVME_CSI_NVM, .rae = true,
	};

	rc = nvme_get_log(&args);
	if (rc > 0) {
		graid__log(GRAID_LOG_ERR, "member %s: SMART log: NVMe status 0x%x (%s)",
			   d->path, rc, nvme_status_name(rc));
		rc = nvme_status_errno(rc);
	} else if (rc < 0) {
		rc = errno ? -errno : -EIO;
		graid__log(GRAID_LOG_INFO, "member %s: SMART log: %s", d->path,
			   graid_strerror(rc));
	} else {
		health_decode(l, h);
	}
	free(l);
	return rc;
}
#endif

int member_health_read_scripted(const char *file, struct graid_member_health *h)
{
	memset(h, 0, sizeof(*h));
	h->struct_size = sizeof(*h);
	h->sampled_ns = graid__now_ns();
	return fault_health_at(file, h);
}

int member_health_read(const struct member_device *d, struct graid_member_health *h)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->struct_size = sizeof(*h);
	h->sampled_ns = graid__now_ns();
	if (d->fd < 0)
		return -ENODEV;
	rc = fault_health(d->fault, h);
	if (rc != -EOPNOTSUPP)
		return rc;
#ifdef GRAID_HAVE_LIBNVME
	if (d->nvme.is_nvme)
		return health_nvme(d, h);
#endif
	return -EOPNOTSUPP;
}
