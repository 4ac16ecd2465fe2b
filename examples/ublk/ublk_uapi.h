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
 * Resizing a live device (Linux 6.16+; values of the 7.3 header): UPDATE_SIZE sets the
 * disk's capacity to data[0] 512-byte sectors and tells the kernel (a uevent; the
 * filesystem on it grows only when asked, resize2fs). Only ioctl-encoded, listed by
 * GET_FEATURES, not asked for at ADD_DEV. Only while the disk exists (after START_DEV,
 * before STOP_DEV): some kernels dereference a missing disk.
 */
#ifndef UBLK_F_UPDATE_SIZE
#define UBLK_F_UPDATE_SIZE (1ULL << 10)
#endif
#ifndef UBLK_U_CMD_UPDATE_SIZE
#define UBLK_U_CMD_UPDATE_SIZE _IOWR('u', 0x15, struct ublksrv_ctrl_cmd)
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

/*
 * Zero copy (Linux 6.16+; values of the 7.3 header). AUTO_BUF_REG: the driver registers a
 * new request's pages in the buffer table of the ring its fetch or commit command came
 * through, at the index the SQE's addr names, and unregisters them at the commit;
 * the server never maps them. USER_COPY: the server reads and writes a request's data
 * with pread()/pwrite() on /dev/ublkcN at gu_user_copy_pos(). With FALLBACK, a
 * registration that fails delivers the request anyway, marked NEED_REG_BUF.
 */
#ifndef UBLK_F_USER_COPY
#define UBLK_F_USER_COPY (1ULL << 7)
#endif
#ifndef UBLK_F_AUTO_BUF_REG
#define UBLK_F_AUTO_BUF_REG (1ULL << 11)
#define UBLK_AUTO_BUF_REG_FALLBACK (1 << 0)
#define UBLK_IO_F_NEED_REG_BUF (1U << 17)
#endif
#define GU_IO_BUF_BITS 25 /* UBLK_IO_BUF_BITS: a request's bytes */
#define GU_TAG_BITS 16    /* UBLK_TAG_BITS */

/* Where request @p tag of queue @p q_id starts in /dev/ublkcN (USER_COPY). */
static inline __u64 gu_user_copy_pos(unsigned q_id, unsigned tag)
{
	return 0x80000000ULL /* UBLKSRV_IO_BUF_OFFSET */ +
	       ((__u64)q_id << (GU_IO_BUF_BITS + GU_TAG_BITS)) + ((__u64)tag << GU_IO_BUF_BITS);
}

/* The SQE's addr of a FETCH_REQ or COMMIT_AND_FETCH_REQ with AUTO_BUF_REG: index, flags. */
static inline __u64 gu_auto_buf_reg(unsigned index, unsigned flags)
{
	return (__u64)(__u16)index | (__u64)(__u8)flags << 16;
}

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
