/* SPDX-License-Identifier: MIT */
/* The parts of the ublk uAPI this server uses, whatever the age of the installed header. */
#ifndef GRAID_UBLK_UAPI_H
#define GRAID_UBLK_UAPI_H

#include <linux/ioctl.h>
#include <linux/ublk_cmd.h>

/*
 * Every command has two encodings: the legacy bare number (Linux 6.0 .. 6.3 know only this
 * one) and an ioctl-style number (6.4 and later; a kernel built without
 * CONFIG_BLKDEV_UBLK_LEGACY_OPCODES knows only this one). Headers older than 6.4 lack the
 * second; the values below are those of later headers, byte for byte.
 */
#ifndef UBLK_U_CMD_ADD_DEV
#define UBLK_U_CMD_ADD_DEV _IOWR('u', UBLK_CMD_ADD_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_DEL_DEV _IOWR('u', UBLK_CMD_DEL_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_DEV _IOWR('u', UBLK_CMD_START_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_STOP_DEV _IOWR('u', UBLK_CMD_STOP_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_SET_PARAMS _IOWR('u', UBLK_CMD_SET_PARAMS, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_GET_QUEUE_AFFINITY _IOR('u', UBLK_CMD_GET_QUEUE_AFFINITY, struct ublksrv_ctrl_cmd)
#define UBLK_U_IO_FETCH_REQ _IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ \
	_IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#endif

/* Asks which UBLK_F_* the driver supports (6.5+); only ever sent ioctl-encoded. */
#ifndef UBLK_U_CMD_GET_FEATURES
#define UBLK_U_CMD_GET_FEATURES _IOR('u', 0x13, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_FEATURES_LEN
#define UBLK_FEATURES_LEN 8
#endif
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE (1ULL << 6)
#endif

/* The 6.0 header's ublksrv_ctrl_cmd and ublksrv_io_cmd are the sizes later ones kept. */
_Static_assert(sizeof(struct ublksrv_ctrl_cmd) == 32, "ublksrv_ctrl_cmd is 32 bytes");
_Static_assert(sizeof(struct ublksrv_io_cmd) == 16, "ublksrv_io_cmd is 16 bytes");
_Static_assert(sizeof(struct ublksrv_io_desc) == 24, "ublksrv_io_desc is 24 bytes");

#endif /* GRAID_UBLK_UAPI_H */
