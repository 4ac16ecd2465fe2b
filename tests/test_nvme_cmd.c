/* SPDX-License-Identifier: MIT */
/* NVMe without a drive: command building, the status-to-errno table, MDTS split math, piece counting. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "array/array.h"
#include "member/member_io.h"
#include "format/nvme_cmd.h"
#include "api/array_life.h"

/* The status field as the kernel hands it over: SC | SCT << 8 | DNR << 14. */
static int status(unsigned sct, unsigned sc, int dnr)
{
	return (int)(sc | sct << 8 | (dnr ? 1u << 14 : 0));
}

Test(nvme_status, success_is_zero_and_named)
{
	cr_assert_eq(nvme_status_errno(0), 0);
	cr_assert_str_eq(nvme_status_name(0), "Successful Completion");
}

Test(nvme_status, generic_codes_map_to_their_errno)
{
	cr_assert_eq(nvme_status_errno(status(0, 0x01, 1)), -EOPNOTSUPP);
	cr_assert_eq(nvme_status_errno(status(0, 0x02, 1)), -EINVAL);
	cr_assert_eq(nvme_status_errno(status(0, 0x04, 0)), -EIO);
	cr_assert_eq(nvme_status_errno(status(0, 0x0b, 1)), -ENODEV);
	cr_assert_eq(nvme_status_errno(status(0, 0x80, 1)), -EINVAL);
	cr_assert_str_eq(nvme_status_name(status(0, 0x80, 1)), "LBA Out of Range");
	cr_assert_eq(nvme_status_errno(status(0, 0x81, 1)), -ENOSPC);
	cr_assert_eq(nvme_status_errno(status(0, 0x82, 0)), -EAGAIN);
	/* What the block layer returns for it too: the array treats it as a takeover. */
	cr_assert_eq(nvme_status_errno(status(0, 0x83, 1)), -EBADE);
}

Test(nvme_status, media_errors_are_member_failures)
{
	cr_assert_eq(nvme_status_errno(status(2, 0x80, 1)), -EIO);
	cr_assert_str_eq(nvme_status_name(status(2, 0x80, 1)), "Write Fault");
	cr_assert_eq(nvme_status_errno(status(2, 0x81, 1)), -EIO);
	cr_assert_str_eq(nvme_status_name(status(2, 0x81, 0)), "Unrecovered Read Error");
	cr_assert_eq(nvme_status_errno(status(2, 0x86, 1)), -EACCES);
	cr_assert_eq(nvme_status_errno(status(2, 0x87, 1)), -ENODATA);
	cr_assert_eq(nvme_status_errno(status(1, 0x82, 1)), -EROFS);
	cr_assert_eq(nvme_status_errno(status(3, 0x70, 0)), -EIO);
	cr_assert_str_eq(nvme_status_name(status(3, 0x70, 0)), "Host Pathing Error");
}

Test(nvme_status, unknown_codes_fail_with_eio_never_succeed)
{
	cr_assert_eq(nvme_status_errno(status(0, 0x7f, 0)), -EIO);
	cr_assert_eq(nvme_status_errno(status(7, 0x00, 0)), -EIO);
	cr_assert_str_eq(nvme_status_name(status(7, 0x00, 0)), "Unknown Status");
	cr_assert_str_eq(nvme_status_name(-EIO), "Unknown Status");
}

Test(nvme_status, host_side_errnos_pass_through)
{
	cr_assert_eq(nvme_status_errno(-EINTR), -EINTR);
	cr_assert_eq(nvme_status_errno(-ENOMEM), -ENOMEM);
}

Test(nvme_status, fields_are_split_as_the_spec_says)
{
	int st = status(2, 0x81, 1);

	cr_assert_eq(nvme_status_sct(st), 2);
	cr_assert_eq(nvme_status_sc(st), 0x81);
}

Test(nvme_mdts, units_are_minimum_pages)
{
	cr_assert_eq(nvme_mdts_bytes(0, 0), 0, "0: no limit");
	cr_assert_eq(nvme_mdts_bytes(5, 0), 128u * 1024);
	cr_assert_eq(nvme_mdts_bytes(7, 0), 512u * 1024);
	cr_assert_eq(nvme_mdts_bytes(7, 1), 1024u * 1024, "8 KiB minimum pages");
	cr_assert_eq(nvme_mdts_bytes(20, 0), UINT32_MAX, "saturates");
}

Test(nvme_mdts, max_transfer_is_the_smallest_limit_in_whole_blocks)
{
	cr_assert_eq(nvme_max_transfer(512u * 1024, 0, 512), 512u * 1024);
	cr_assert_eq(nvme_max_transfer(512u * 1024, 508u * 1024, 4096), 508u * 1024);
	cr_assert_eq(nvme_max_transfer(0, 0, 512), 512u * 65536, "the NLB field's limit");
	cr_assert_eq(nvme_max_transfer(0, 6000, 4096), 4096, "rounded down to blocks");
	cr_assert_eq(nvme_max_transfer(0, 100, 4096), 4096, "never below one block");
	cr_assert_eq(nvme_max_transfer(UINT32_MAX, 0, 65536), UINT32_MAX - UINT32_MAX % 65536);
}

Test(nvme_mdts, split_count_covers_the_transfer)
{
	cr_assert_eq(nvme_split_count(0, 4096), 0);
	cr_assert_eq(nvme_split_count(4096, 4096), 1);
	cr_assert_eq(nvme_split_count(4097, 4096), 2);
	cr_assert_eq(nvme_split_count(1u << 20, 508u * 1024), 3);
}

Test(nvme_cmd, read_and_write_fill_the_nvm_command_set_fields)
{
	struct nvme_uring_cmd c;
	static char buf[8192];

	cr_assert_eq(nvme_cmd_build_rw(&c, true, 1, 0x123456789aull, 2, 4096, buf, false), 0);
	cr_assert_eq(c.opcode, NVME_CMD_OP_WRITE);
	cr_assert_eq(c.nsid, 1);
	cr_assert_eq(c.addr, (uint64_t)(uintptr_t)buf);
	cr_assert_eq(c.data_len, 8192);
	cr_assert_eq(c.cdw10, 0x3456789a, "SLBA low");
	cr_assert_eq(c.cdw11, 0x12, "SLBA high");
	cr_assert_eq(c.cdw12, 1, "NLB is 0's based");
	cr_assert_eq(c.metadata, 0);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 3, 7, 1, 512, buf, true), 0);
	cr_assert_eq(c.opcode, NVME_CMD_OP_READ);
	cr_assert_eq(c.cdw12, NVME_CMD_RW_FUA, "FUA set, one block");
}

Test(nvme_cmd, block_counts_outside_the_field_are_refused)
{
	struct nvme_uring_cmd c;

	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 0, 0, 512, NULL, false), -EINVAL);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 0, 65537, 512, NULL, false), -EINVAL);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 0, 65536, 512, NULL, false), 0);
	cr_assert_eq(c.cdw12, 0xffff);
}

Test(nvme_cmd, flush_names_only_the_namespace)
{
	struct nvme_uring_cmd c;

	memset(&c, 0xff, sizeof(c));
	nvme_cmd_build_flush(&c, 5);
	cr_assert_eq(c.opcode, NVME_CMD_OP_FLUSH);
	cr_assert_eq(c.nsid, 5);
	cr_assert_eq(c.data_len, 0);
	cr_assert_eq(c.cdw10, 0);
}

Test(nvme_cmd, dsm_deallocate_ranges_are_little_endian)
{
	struct nvme_cmd_dsm_range r[2];
	struct nvme_uring_cmd c;
	static const uint8_t want[16] = { 0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12,
					  0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 };

	nvme_cmd_dsm_range_set(&r[0], 0x0102030405060708ull, 0x12345678);
	cr_assert_arr_eq(r[0].bytes, want, 16);
	nvme_cmd_dsm_range_set(&r[1], 0, 1);
	cr_assert_eq(nvme_cmd_build_dsm(&c, 1, r, 2), 0);
	cr_assert_eq(c.opcode, NVME_CMD_OP_DSM);
	cr_assert_eq(c.cdw10, 1, "number of ranges, 0's based");
	cr_assert_eq(c.cdw11, NVME_CMD_DSM_AD);
	cr_assert_eq(c.data_len, 32);
	cr_assert_eq(c.addr, (uint64_t)(uintptr_t)r);
	cr_assert_eq(nvme_cmd_build_dsm(&c, 1, r, 0), -EINVAL);
	cr_assert_eq(nvme_cmd_build_dsm(&c, 1, r, NVME_CMD_DSM_MAX_RANGES + 1), -EINVAL);
}

Test(nvme_pieces, a_split_io_completes_once_with_the_first_error)
{
	struct graid_array *a = array_alloc(1, 0);
	struct member_io_fault mf = { .pieces = 3 };

	cr_assert_not_null(a);
	snprintf(a->members[0].dev.path, sizeof(a->members[0].dev.path), "/dev/ng9n1");
	cr_assert_eq(member_io_result(a, 0, &mf, 12288, 0), MEMBER_IO_MORE);
	cr_assert_eq(member_io_result(a, 0, &mf, 12288, status(2, 0x81, 1)), MEMBER_IO_MORE);
	cr_assert_eq(member_io_result(a, 0, &mf, 12288, -EIO), -EIO, "the first error wins");
	cr_assert_eq(mf.pieces, 0);

	mf = (struct member_io_fault){ .pieces = 2 };
	cr_assert_eq(member_io_result(a, 0, &mf, 8192, status(0, 0x80, 1)), MEMBER_IO_MORE);
	cr_assert_eq(member_io_result(a, 0, &mf, 8192, 0), -EINVAL);

	mf = (struct member_io_fault){ .pieces = 2 };
	cr_assert_eq(member_io_result(a, 0, &mf, 8192, 0), MEMBER_IO_MORE);
	cr_assert_eq(member_io_result(a, 0, &mf, 8192, 0), 8192, "all done: the whole length");
	array_free(a);
}

Test(nvme_pieces, plain_io_results_pass_through)
{
	struct graid_array *a = array_alloc(1, 0);
	struct member_io_fault mf = { 0 };

	cr_assert_not_null(a);
	cr_assert_eq(member_io_result(a, 0, &mf, 4096, 4096), 4096);
	cr_assert_eq(member_io_result(a, 0, &mf, 4096, 2048), 2048, "short stays short");
	cr_assert_eq(member_io_result(a, 0, &mf, 4096, -EIO), -EIO);
	array_free(a);
}
