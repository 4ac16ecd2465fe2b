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

/*
 * Batched fetches and commits (UBLK_F_BATCH_IO; Linux 7.3 has them, 6.12 not): one
 * PREP_IO_CMDS gives the driver every tag's buffer, one multishot FETCH_IO_CMDS hands out
 * the tags of new requests (2 bytes each) into a provided buffer, and one COMMIT_IO_CMDS
 * answers any number of them. The values are those of the 7.3 header.
 */
#ifndef UBLK_F_BATCH_IO
#define UBLK_F_BATCH_IO (1ULL << 15)
#define UBLK_BATCH_F_HAS_BUF_ADDR (1 << 1)
struct ublk_batch_io {
	__u16 q_id;
	__u16 flags;
	__u16 nr_elem;
	__u8 elem_bytes;
	__u8 reserved;
	__u64 reserved2;
};
#define UBLK_U_IO_PREP_IO_CMDS _IOWR('u', 0x25, struct ublk_batch_io)
#define UBLK_U_IO_COMMIT_IO_CMDS _IOWR('u', 0x26, struct ublk_batch_io)
#define UBLK_U_IO_FETCH_IO_CMDS _IOWR('u', 0x27, struct ublk_batch_io)
#endif

/* One element of PREP_IO_CMDS and COMMIT_IO_CMDS with UBLK_BATCH_F_HAS_BUF_ADDR. */
struct gu_batch_elem {
	__u16 tag;
	__u16 buf_index; /* automatic buffer registration only: unused here */
	__s32 result;    /* commit: the request's result */
	__u64 buf_addr;  /* where the driver copies a write's data to, a read's from */
};

/* io_uring bits newer than some installed headers (values of Linux 6.12 and later). */
#ifndef IORING_URING_CMD_MULTISHOT
#define IORING_URING_CMD_MULTISHOT (1U << 1)
#endif
/* io_uring_buf_reg flags' IOU_PBUF_RING_INC (an enum where headers have it): the buffer is
 * used up bit by bit, what a CQE did not use stays the kernel's to fill. */
#define GU_PBUF_RING_INC 2

/* The 6.0 header's ublksrv_ctrl_cmd and ublksrv_io_cmd are the sizes later ones kept. */
_Static_assert(sizeof(struct ublksrv_ctrl_cmd) == 32, "ublksrv_ctrl_cmd is 32 bytes");
_Static_assert(sizeof(struct ublksrv_io_cmd) == 16, "ublksrv_io_cmd is 16 bytes");
_Static_assert(sizeof(struct ublksrv_io_desc) == 24, "ublksrv_io_desc is 24 bytes");
_Static_assert(sizeof(struct ublk_batch_io) == 16, "ublk_batch_io is 16 bytes");
_Static_assert(sizeof(struct gu_batch_elem) == 16, "a batch element with its address is 16 bytes");

#endif /* GRAID_UBLK_UAPI_H */
