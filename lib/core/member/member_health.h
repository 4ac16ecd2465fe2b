/* SPDX-License-Identifier: MIT */
/* A member's drive health: the NVMe SMART / Health Information log, or a test's scripted one. */
#ifndef LIBGRAID_CORE_MEMBER_HEALTH_H
#define LIBGRAID_CORE_MEMBER_HEALTH_H

#include <libgraid/graid.h>

struct member_device;

/*
 * Read the health of device @p d now into @p h (every field; sampled_ns set).
 * A "faulty:...,health=FILE" member reads FILE instead (fault injection builds). 0;
 * -ENODEV no device; -EOPNOTSUPP not an NVMe namespace, or no libnvme; -errno.
 */
int member_health_read(const struct member_device *d, struct graid_member_health *h);
/* The same from a scripted drive's FILE (fault_health_file()), no device needed. */
int member_health_read_scripted(const char *file, struct graid_member_health *h);

#endif /* LIBGRAID_CORE_MEMBER_HEALTH_H */
