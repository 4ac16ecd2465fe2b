/* SPDX-License-Identifier: MIT */
/* The control commands of a ublk device: add, set parameters, start, resize, stop, delete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "ublk_srv.h"

#define UCTRL_DEV "/dev/ublk-control"

/* A command's opcode in the encoding this driver takes (see ublk_uapi.h). */
#define UCTRL_OP(c, name) ((c)->ioctl_encode ? UBLK_U_CMD_##name : UBLK_CMD_##name)

/*
 * Send one command and wait for its answer. Commands go one at a time: they are rare, and
 * START_DEV must not be sent before the queues are ready anyway. Returns the driver's
 * result: 0 or a negative errno.
 */
static int uctrl_send(struct uctrl *c, unsigned op, const struct ublksrv_ctrl_cmd *cmd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	struct io_uring_cqe *cqe;
	int rc;

	if (!sqe)
		return -EBUSY; /* cannot happen: nothing else is queued on this ring */
	usrv_prep_cmd(sqe, c->fd, op, cmd, sizeof(*cmd), 0);
	rc = io_uring_submit(&c->ring);
	if (rc < 0)
		return rc;
	do
		rc = io_uring_wait_cqe(&c->ring, &cqe);
	while (rc == -EINTR);
	if (rc < 0)
		return rc;
	rc = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return rc;
}

/* A command addressed to a device; queue_id is -1 because none of ours is per queue. */
static struct ublksrv_ctrl_cmd uctrl_cmd_for(uint32_t dev_id, const void *buf, size_t len)
{
	return (struct ublksrv_ctrl_cmd){
		.dev_id = dev_id,
		.queue_id = UINT16_MAX,
		.len = (uint16_t)len,
		.addr = (uint64_t)(uintptr_t)buf,
	};
}

int uctrl_open(struct uctrl *c)
{
	uint64_t features = 0;
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(UINT32_MAX, &features, sizeof(features));
	int rc;

	c->fd = open(UCTRL_DEV, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	/* Control commands carry 32 bytes of payload: only a 128-byte SQE has room. */
	rc = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (rc < 0) {
		close(c->fd);
		return rc;
	}
	/*
	 * Before 6.5 there is no GET_FEATURES, and the answer is an error: such a driver
	 * takes the legacy opcodes (6.4 takes both). Later ones say whether they take the
	 * ioctl encoding, which is then the safe choice: a kernel may be built without the
	 * legacy opcodes.
	 */
	if (uctrl_send(c, UBLK_U_CMD_GET_FEATURES, &cmd))
		features = 0;
	c->features = features;
	c->ioctl_encode = features & UBLK_F_CMD_IOCTL_ENCODE;
	return 0;
}

void uctrl_close(struct uctrl *c)
{
	io_uring_queue_exit(&c->ring);
	close(c->fd);
}

int uctrl_add_dev(struct uctrl *c, struct ublksrv_ctrl_dev_info *info)
{
	/* dev_id must be the same in both: UINT32_MAX lets the driver pick the number. */
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(info->dev_id, info, sizeof(*info));

	if (c->ioctl_encode)
		info->flags |= UBLK_F_CMD_IOCTL_ENCODE;
	/* The driver writes the info back: the number it chose, and what it adjusted. */
	return uctrl_send(c, UCTRL_OP(c, ADD_DEV), &cmd);
}

int uctrl_set_params(struct uctrl *c, uint32_t dev_id, struct ublk_params *p)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, p, sizeof(*p));

	/* p->len tells a newer driver how much of its larger struct we filled. */
	p->len = sizeof(*p);
	return uctrl_send(c, UCTRL_OP(c, SET_PARAMS), &cmd);
}

int uctrl_queue_affinity(struct uctrl *c, uint32_t dev_id, uint16_t q_id, cpu_set_t *cpus)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, cpus, sizeof(*cpus));

	/*
	 * The CPUs whose requests the block layer sends to this queue (its hctx's map). The
	 * driver reads the queue's number from data[0], not from queue_id.
	 */
	CPU_ZERO(cpus);
	cmd.data[0] = q_id;
	return uctrl_send(c, UCTRL_OP(c, GET_QUEUE_AFFINITY), &cmd);
}

int uctrl_start_dev(struct uctrl *c, uint32_t dev_id)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, NULL, 0);

	/*
	 * The driver waits here until every queue has a FETCH_REQ on every tag, then adds
	 * /dev/ublkbN (and reads its partition table through our queues).
	 */
	cmd.data[0] = (uint64_t)getpid();
	return uctrl_send(c, UCTRL_OP(c, START_DEV), &cmd);
}

int uctrl_update_size(struct uctrl *c, uint32_t dev_id, uint64_t sectors)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, NULL, 0);

	/* No legacy number: a driver that has it takes the ioctl encoding (6.16+). */
	if (!(c->features & UBLK_F_UPDATE_SIZE))
		return -EOPNOTSUPP;
	cmd.data[0] = sectors;
	return uctrl_send(c, UBLK_U_CMD_UPDATE_SIZE, &cmd);
}

int uctrl_stop_dev(struct uctrl *c, uint32_t dev_id)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, NULL, 0);

	/*
	 * Removes /dev/ublkbN once the requests in flight are done (the queue threads must
	 * still be serving), then ends every waiting FETCH with UBLK_IO_RES_ABORT.
	 */
	return uctrl_send(c, UCTRL_OP(c, STOP_DEV), &cmd);
}

int uctrl_del_dev(struct uctrl *c, uint32_t dev_id)
{
	struct ublksrv_ctrl_cmd cmd = uctrl_cmd_for(dev_id, NULL, 0);

	/* Waits until /dev/ublkcN is closed by everyone: the queue rings first. */
	return uctrl_send(c, UCTRL_OP(c, DEL_DEV), &cmd);
}
