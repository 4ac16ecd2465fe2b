/* SPDX-License-Identifier: MIT */
/* libFuzzer target: decoding any 4096 bytes is safe, and what decodes re-encodes to itself. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/superblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *why)
{
	fprintf(stderr, "fuzz_superblock: %s\n", why);
	abort();
}

/*
 * Bytes an encoder does not carry over: minor, crc, reserved0, reserved3, reserved1, the
 * host name's last byte and the NQN's last byte (always written as terminators).
 */
static int fuzz_byte_is_free(size_t i)
{
	return (i >= 0x0a && i < 0x10) || (i >= 0x4c && i < 0x50) || (i >= 0xb4 && i < 0xb8) ||
	       (i >= 0xf0 && i < 0x100) || i == 0xb3f || i == 0xfff;
}

static void fuzz_one(const uint8_t *buf)
{
	struct superblock sb, again;
	uint8_t out[GRAID_SB_SIZE];
	int err = sb_decode(buf, &sb);

	if (err != 0 && err != -EINVAL && err != -EBADMSG && err != -EPROTO)
		fuzz_fail("decode returned an undocumented error");
	if (err)
		return;
	sb_encode(&sb, out);
	if (sb_decode(out, &again) != 0)
		fuzz_fail("a decoded superblock does not decode after re-encoding");
	again.minor = sb.minor; /* the encoder writes its own minor */
	if (memcmp(&sb, &again, sizeof(sb)) != 0)
		fuzz_fail("re-encoding changed a field");
	for (size_t i = 0; i < GRAID_SB_SIZE; i++)
		if (!fuzz_byte_is_free(i) && out[i] != buf[i])
			fuzz_fail("re-encoding changed a byte outside the reserved space");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[GRAID_SB_SIZE];
	uint32_t crc;

	/* Short inputs are zero-padded and long ones cut: decode only ever sees 4096 bytes. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	fuzz_one(buf);

	/*
	 * Random bytes almost never carry a right CRC, so validation would go unexplored:
	 * run the same bytes again with the magic and CRC made right.
	 */
	memcpy(buf, GRAID_SB_MAGIC, GRAID_SB_MAGIC_LEN);
	crc = sb_checksum(buf);
	for (unsigned i = 0; i < 4; i++)
		buf[0x0c + i] = (uint8_t)(crc >> (8 * i));
	fuzz_one(buf);
	return 0;
}
