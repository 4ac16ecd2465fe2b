/* SPDX-License-Identifier: MIT */
/* NVMe commands as the library builds them, status codes as errno, transfer-size math: pure, no I/O. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "format/nvme_cmd.h"

int nvme_cmd_build_rw(struct nvme_uring_cmd *cmd, bool write, uint32_t nsid, uint64_t slba,
		uint32_t nblocks, uint32_t lbs, void *buf, bool fua)
{
	if (!cmd || nblocks == 0 || nblocks > 65536 || lbs == 0 ||
	    (uint64_t)nblocks * lbs > UINT32_MAX)
		return -EINVAL;
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = write ? NVME_CMD_OP_WRITE : NVME_CMD_OP_READ;
	cmd->nsid = nsid;
	cmd->addr = (uint64_t)(uintptr_t)buf;
	cmd->data_len = nblocks * lbs;
	cmd->cdw10 = (uint32_t)slba;
	cmd->cdw11 = (uint32_t)(slba >> 32);
	/* NLB is 0's based: 0 means one block. */
	cmd->cdw12 = (nblocks - 1) | (fua ? NVME_CMD_RW_FUA : 0);
	return 0;
}

void nvme_cmd_build_flush(struct nvme_uring_cmd *cmd, uint32_t nsid)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = NVME_CMD_OP_FLUSH;
	cmd->nsid = nsid;
}

void nvme_cmd_dsm_range_set(struct nvme_cmd_dsm_range *r, uint64_t slba, uint32_t nblocks)
{
	memset(r->bytes, 0, 4); /* context attributes: none */
	for (unsigned i = 0; i < 4; i++)
		r->bytes[4 + i] = (uint8_t)(nblocks >> (8 * i));
	for (unsigned i = 0; i < 8; i++)
		r->bytes[8 + i] = (uint8_t)(slba >> (8 * i));
}

int nvme_cmd_build_dsm(struct nvme_uring_cmd *cmd, uint32_t nsid,
		 const struct nvme_cmd_dsm_range *ranges, unsigned nranges)
{
	if (!cmd || !ranges || nranges == 0 || nranges > NVME_CMD_DSM_MAX_RANGES)
		return -EINVAL;
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = NVME_CMD_OP_DSM;
	cmd->nsid = nsid;
	cmd->addr = (uint64_t)(uintptr_t)ranges;
	cmd->data_len = nranges * (uint32_t)sizeof(*ranges);
	cmd->cdw10 = nranges - 1; /* NR is 0's based */
	cmd->cdw11 = NVME_CMD_DSM_AD;
	return 0;
}

/* One row per status the I/O path can meet: SCT, SC, name from the specification, errno. */
struct nvme_status_row {
	uint8_t sct, sc;
	int err;
	const char *name;
};

static const struct nvme_status_row nvme_status_rows[] = {
	/* Generic Command Status (SCT 0) */
	{ .sct = 0, .sc = 0x00, .err = 0, .name = "Successful Completion" },
	{ .sct = 0, .sc = 0x01, .err = -EOPNOTSUPP, .name = "Invalid Command Opcode" },
	{ .sct = 0, .sc = 0x02, .err = -EINVAL, .name = "Invalid Field in Command" },
	{ .sct = 0, .sc = 0x03, .err = -EIO, .name = "Command ID Conflict" },
	{ .sct = 0, .sc = 0x04, .err = -EIO, .name = "Data Transfer Error" },
	{ .sct = 0, .sc = 0x05, .err = -EIO,
	  .name = "Commands Aborted due to Power Loss Notification" },
	{ .sct = 0, .sc = 0x06, .err = -EIO, .name = "Internal Error" },
	{ .sct = 0, .sc = 0x07, .err = -EIO, .name = "Command Abort Requested" },
	{ .sct = 0, .sc = 0x08, .err = -EIO, .name = "Command Aborted due to SQ Deletion" },
	{ .sct = 0, .sc = 0x0b, .err = -ENODEV, .name = "Invalid Namespace or Format" },
	{ .sct = 0, .sc = 0x0c, .err = -EIO, .name = "Command Sequence Error" },
	{ .sct = 0, .sc = 0x0d, .err = -EINVAL, .name = "Invalid SGL Segment Descriptor" },
	{ .sct = 0, .sc = 0x0f, .err = -EINVAL, .name = "Data SGL Length Invalid" },
	{ .sct = 0, .sc = 0x20, .err = -EROFS, .name = "Namespace is Write Protected" },
	{ .sct = 0, .sc = 0x21, .err = -EAGAIN, .name = "Command Interrupted" },
	{ .sct = 0, .sc = 0x22, .err = -EAGAIN, .name = "Transient Transport Error" },
	{ .sct = 0, .sc = 0x80, .err = -EINVAL, .name = "LBA Out of Range" },
	{ .sct = 0, .sc = 0x81, .err = -ENOSPC, .name = "Capacity Exceeded" },
	{ .sct = 0, .sc = 0x82, .err = -EAGAIN, .name = "Namespace Not Ready" },
	/* As the block layer reports it (BLK_STS_RESV_CONFLICT): another host fenced us. */
	{ .sct = 0, .sc = 0x83, .err = -EBADE, .name = "Reservation Conflict" },
	{ .sct = 0, .sc = 0x84, .err = -EAGAIN, .name = "Format In Progress" },
	/* Command Specific Status (SCT 1), NVM command set */
	{ .sct = 1, .sc = 0x80, .err = -EINVAL, .name = "Conflicting Attributes" },
	{ .sct = 1, .sc = 0x81, .err = -EINVAL, .name = "Invalid Protection Information" },
	{ .sct = 1, .sc = 0x82, .err = -EROFS, .name = "Attempted Write to Read Only Range" },
	/* Media and Data Integrity Errors (SCT 2) */
	{ .sct = 2, .sc = 0x80, .err = -EIO, .name = "Write Fault" },
	{ .sct = 2, .sc = 0x81, .err = -EIO, .name = "Unrecovered Read Error" },
	{ .sct = 2, .sc = 0x82, .err = -EIO, .name = "End-to-end Guard Check Error" },
	{ .sct = 2, .sc = 0x83, .err = -EIO, .name = "End-to-end Application Tag Check Error" },
	{ .sct = 2, .sc = 0x84, .err = -EIO, .name = "End-to-end Reference Tag Check Error" },
	{ .sct = 2, .sc = 0x85, .err = -EIO, .name = "Compare Failure" },
	{ .sct = 2, .sc = 0x86, .err = -EACCES, .name = "Access Denied" },
	{ .sct = 2, .sc = 0x87, .err = -ENODATA, .name = "Deallocated or Unwritten Logical Block" },
	/* Path Related Status (SCT 3) */
	{ .sct = 3, .sc = 0x00, .err = -EIO, .name = "Internal Path Error" },
	{ .sct = 3, .sc = 0x01, .err = -EIO, .name = "Asymmetric Access Persistent Loss" },
	{ .sct = 3, .sc = 0x02, .err = -EIO, .name = "Asymmetric Access Inaccessible" },
	{ .sct = 3, .sc = 0x03, .err = -EAGAIN, .name = "Asymmetric Access Transition" },
	{ .sct = 3, .sc = 0x60, .err = -EIO, .name = "Controller Pathing Error" },
	{ .sct = 3, .sc = 0x70, .err = -EIO, .name = "Host Pathing Error" },
	{ .sct = 3, .sc = 0x71, .err = -EIO, .name = "Command Aborted By Host" },
};

static const struct nvme_status_row *nvme_status_find(int status)
{
	unsigned sct = nvme_status_sct(status), sc = nvme_status_sc(status);

	for (size_t i = 0; i < sizeof(nvme_status_rows) / sizeof(nvme_status_rows[0]); i++)
		if (nvme_status_rows[i].sct == sct && nvme_status_rows[i].sc == sc)
			return &nvme_status_rows[i];
	return NULL;
}

int nvme_status_errno(int status)
{
	const struct nvme_status_row *r;

	if (status < 0)
		return status; /* already an errno: the host side failed, not the device */
	r = nvme_status_find(status);
	if (r)
		return r->err;
	/* Unknown codes: a device failure, never success. */
	return -EIO;
}

const char *nvme_status_name(int status)
{
	const struct nvme_status_row *r = status >= 0 ? nvme_status_find(status) : NULL;

	return r ? r->name : "Unknown Status";
}

uint32_t nvme_mdts_bytes(uint8_t mdts, unsigned mpsmin)
{
	unsigned shift = 12u + mpsmin + mdts;

	if (mdts == 0)
		return 0;
	return shift >= 32 ? UINT32_MAX : 1u << shift;
}

uint32_t nvme_max_transfer(uint32_t mdts_bytes, uint32_t os_bytes, uint32_t lbs)
{
	uint64_t max = (uint64_t)lbs * 65536;

	if (mdts_bytes && mdts_bytes < max)
		max = mdts_bytes;
	if (os_bytes && os_bytes < max)
		max = os_bytes;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	max -= max % lbs;
	return max < lbs ? lbs : (uint32_t)max;
}
