/* SPDX-License-Identifier: MIT */
/* graid-ublk's shared state: the control channel, the server, and its queue threads. */
#ifndef GRAID_UBLK_SRV_H
#define GRAID_UBLK_SRV_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <liburing.h>

#include <libgraid/graid.h>

#include "ublk_uapi.h"

/*
 * Fill a 128-byte SQE with a URING_CMD for the ublk driver: opcode @op, payload @cmd.
 * The payload goes at the SQE's cmd field, which liburing declares as a zero-length array;
 * the offset is taken from the SQE pointer so that the copy is not a write to "0 bytes".
 */
static inline void usrv_prep_cmd(struct io_uring_sqe *sqe, int fd, unsigned op,
				 const void *cmd, size_t len, uint64_t user_data)
{
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = user_data;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), cmd, len);
}

/* ---- control.c: commands to /dev/ublk-control ---- */

/** The control device and the ring its commands go through (SQE128: they are 32 bytes). */
struct uctrl {
	int fd;
	struct io_uring ring;
	bool ioctl_encode; /* the driver takes ioctl-encoded opcodes: send those */
	uint64_t features; /* UBLK_F_* the driver has (GET_FEATURES; 0 before 6.5) */
};

int uctrl_open(struct uctrl *c);
void uctrl_close(struct uctrl *c);
/* info->dev_id is filled in, and the driver's adjustments (queues, buffer size) applied. */
int uctrl_add_dev(struct uctrl *c, struct ublksrv_ctrl_dev_info *info);
int uctrl_set_params(struct uctrl *c, uint32_t dev_id, struct ublk_params *p);
/* The CPUs that submit to queue @q_id (0 or -errno). */
int uctrl_queue_affinity(struct uctrl *c, uint32_t dev_id, uint16_t q_id, cpu_set_t *cpus);
int uctrl_start_dev(struct uctrl *c, uint32_t dev_id);
/*
 * The started device's capacity becomes @p sectors (512 bytes each): 0, -EOPNOTSUPP the
 * driver lacks UBLK_F_UPDATE_SIZE (before 6.16), or the driver's -errno.
 */
int uctrl_update_size(struct uctrl *c, uint32_t dev_id, uint64_t sectors);
int uctrl_stop_dev(struct uctrl *c, uint32_t dev_id);
int uctrl_del_dev(struct uctrl *c, uint32_t dev_id);

/* ---- the server: what every queue thread shares ---- */

struct usrv {
	struct graid_array *array;
	uint32_t dev_id;
	int cdev_fd;           /* /dev/ublkcN: the driver lets it be opened once, so shared */
	int stop_fd;           /* eventfd, written once at shutdown and never read */
	unsigned op_fetch;     /* UBLK_IO_FETCH_REQ in the encoding the driver takes */
	unsigned op_commit;    /* UBLK_IO_COMMIT_AND_FETCH_REQ, likewise */
	bool batch;            /* UBLK_F_BATCH_IO: batched fetches and commits (queue_batch.c) */
	bool fixed_buffers;    /* tag buffers registered with each graid queue */
	uint32_t queue_flags;  /* graid_queue_create_flags(): ONE_THREAD unless --defer-taskrun off */
	/*
	 * The ublk commands go through each graid queue's own ring, one wait for both
	 * (queue_one.c): always with zero copy, and for the per-tag protocol unless
	 * --one-ring off (or the driver is older than 6.5).
	 */
	bool one_ring;
	/*
	 * UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_AUTO_BUF_REG | UBLK_F_USER_COPY: the driver
	 * registers each request's pages in the graid queue's ring and member reads land in
	 * them.
	 */
	bool zero_copy;
	unsigned depth;        /* tags per queue, as the driver granted */
	/*
	 * The device's capacity in 512-byte sectors as last given to the driver (SET_PARAMS,
	 * then UPDATE_SIZE): the main thread's only (resize.c).
	 */
	uint64_t dev_sectors;
	bool resize_told;      /* the driver cannot resize: said once */
	size_t buf_bytes;      /* largest request, and each tag's buffer */
	atomic_bool stopping;  /* the main thread is taking the device down */
	/*
	 * --on-foreign: requests that fail because the array went foreign (-ESTALE) are held,
	 * not answered, until the hook has run and set @released (or the server stops), and
	 * then answered -EIO: the hook takes this host's export down first, so that a client
	 * sees its path go away instead of an I/O error (docs/REMOTE.md). release_fd is
	 * written when @released is set; -1 without a hook.
	 */
	bool park_foreign;
	const char *hook;      /* the --on-foreign command */
	atomic_bool released;
	int release_fd;

	/* queue threads report here once their FETCH_REQs are in, or that they failed */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned nready, nfailed;
};

/* ---- queue.c: one thread per hardware queue ---- */

struct uq;

/*
 * Start queue q_id's thread, on the CPUs @cpus (NULL: anywhere); it reports to s->nready
 * or s->nfailed.
 */
int uq_start(struct usrv *s, unsigned q_id, const cpu_set_t *cpus, struct uq **out);
/* Wait for the thread (after s->stop_fd was written) and free it; its exit status. */
int uq_join(struct uq *q);

/* record.c: which array /dev/ublkbN serves ($GRAID_RUN_DIR/ublk/ublkbN), for graid-nvmet. */
void gu_record_write(uint32_t dev_id, const uint8_t uuid[16]);
void gu_record_remove(uint32_t dev_id);
/* The UUID as graidctl prints it: 36 characters and a NUL. */
void gu_uuid_str(const uint8_t uuid[16], char out[37]);

/* ---- resize.c: the device follows the array's size ---- */

/*
 * Where the array is now larger than the device (a grow has finished), give the device its
 * size (UPDATE_SIZE), or say once that it keeps the old one until graid-ublk is restarted.
 * Never fails the device. The main thread, between START_DEV and STOP_DEV.
 */
void gu_resize(struct uctrl *c, struct usrv *s);

/* ---- foreign.c: --on-foreign ---- */

/*
 * Run the hook s->hook with /bin/sh (GRAID_ARRAY_UUID and GRAID_UBLK_DEVICE in its
 * environment), waiting for it at most a minute, then set s->released and wake the queue
 * threads to fail the requests they held. Once; later calls do nothing.
 */
void gu_foreign_hook(struct usrv *s, const uint8_t uuid[16]);

#endif /* GRAID_UBLK_SRV_H */
