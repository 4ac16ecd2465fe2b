/* SPDX-License-Identifier: MIT */
/* Encode, decode and validate member superblocks; CRC32C and UUID helpers for them. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "format/layout.h"
#include "format/superblock.h"
#include "format/tag_format.h"

/* The layout docs/FORMAT.md promises; a compiler that pads differently fails to build. */
_Static_assert(sizeof(struct sb_disk) == GRAID_SB_SIZE, "superblock is 4096 bytes");
_Static_assert(offsetof(struct sb_disk, crc) == 0x00c, "crc at 0x00c");
_Static_assert(offsetof(struct sb_disk, array_uuid) == 0x018, "array_uuid at 0x018");
_Static_assert(offsetof(struct sb_disk, data_offset) == 0x050, "data_offset at 0x050");
_Static_assert(offsetof(struct sb_disk, log_bytes) == 0x090, "log_bytes at 0x090");
_Static_assert(offsetof(struct sb_disk, member_state) == 0x100, "member_state at 0x100");
_Static_assert(offsetof(struct sb_disk, history_events) == 0x0a0, "history at 0x0a0");
_Static_assert(offsetof(struct sb_disk, owner_boot_id) == 0x0c8, "boot id at 0x0c8");
_Static_assert(offsetof(struct sb_disk, slot_id) == 0x200, "slot_id at 0x200");
_Static_assert(offsetof(struct sb_disk, slot_flags) == 0xa00, "slot_flags at 0xa00");
_Static_assert(offsetof(struct sb_disk, owner_host) == 0xb00, "owner_host at 0xb00");
_Static_assert(offsetof(struct sb_disk, left_events) == 0xb40, "left_events at 0xb40");
_Static_assert(offsetof(struct sb_disk, live_offset) == 0x0d8, "live map at 0x0d8");
_Static_assert(offsetof(struct sb_disk, owner_epoch) == 0x0f0, "owner_epoch at 0x0f0");
_Static_assert(offsetof(struct sb_disk, owner_host_id) == 0x0f8, "owner_host_id at 0x0f8");
_Static_assert(offsetof(struct sb_disk, nvme_nguid) == 0xf40, "nvme_nguid at 0xf40");
_Static_assert(offsetof(struct sb_disk, nvme_flags) == 0xf5c, "nvme_flags at 0xf5c");
_Static_assert(offsetof(struct sb_disk, nvme_subnqn) == 0xf70, "nvme_subnqn at 0xf70");
_Static_assert(offsetof(struct sb_disk, bbl_block) == 0x04c, "bbl_block at 0x04c");
_Static_assert(offsetof(struct sb_disk, bbl_blocks) == 0x0b4, "bbl_blocks at 0x0b4");
_Static_assert(sizeof(GRAID_SB_MAGIC) - 1 == GRAID_SB_MAGIC_LEN, "8-byte magic");

/*
 * ISA-L's crc32_iscsi neither inverts its seed nor its result: it returns the raw register.
 * Seeding with ~0 and inverting the result gives standard CRC32C, and passing the raw
 * register back in as the seed continues a running CRC. Its buffer parameter is not const
 * but the buffer is only read.
 */
static uint32_t sb_crc_update(uint32_t reg, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		reg = crc32_iscsi((unsigned char *)p, n, reg);
		p += n;
		len -= (size_t)n;
	}
	return reg;
}

uint32_t crc32c_update(uint32_t reg, const void *buf, size_t len)
{
	return sb_crc_update(reg, buf, len);
}

uint32_t crc32c(const void *buf, size_t len)
{
	return sb_crc_update(0xFFFFFFFFu, buf, len) ^ 0xFFFFFFFFu;
}

uint32_t sb_checksum(const void *buf)
{
	static const unsigned char zero[sizeof(uint32_t)];
	const unsigned char *p = buf;
	const size_t at = offsetof(struct sb_disk, crc);
	uint32_t reg = 0xFFFFFFFFu;

	/* Same as CRC32C over a copy with the crc field zeroed, without the copy. */
	reg = sb_crc_update(reg, p, at);
	reg = sb_crc_update(reg, zero, sizeof(zero));
	reg = sb_crc_update(reg, p + at + sizeof(zero), GRAID_SB_SIZE - at - sizeof(zero));
	return reg ^ 0xFFFFFFFFu;
}

void sb_encode(const struct superblock *sb, void *buf)
{
	struct sb_disk d;

	memset(&d, 0, sizeof(d));
	memcpy(d.magic, GRAID_SB_MAGIC, GRAID_SB_MAGIC_LEN);
	d.major = htole16((uint16_t)sb->version);
	d.minor = htole16(GRAID_SB_VERSION_MINOR);
	d.sb_bytes = htole32(GRAID_SB_SIZE);
	d.flags = htole32(sb->flags);
	memcpy(d.array_uuid, sb->array_uuid, sizeof(d.array_uuid));
	memcpy(d.member_uuid, sb->member_uuid, sizeof(d.member_uuid));
	d.level = htole32((uint32_t)sb->level);
	d.chunk_bytes = htole32(sb->chunk_bytes);
	d.nmembers = htole32(sb->nmembers);
	d.role = htole32(sb->role);
	d.block_size = htole32(sb->block_size);
	d.data_offset = htole64(sb->data_offset);
	d.data_bytes = htole64(sb->data_bytes);
	d.ctime = htole64(sb->ctime);
	d.events = htole64(sb->events);
	d.rebuild_offset = htole64(sb->rebuild_offset);
	d.bitmap_offset = htole64(sb->bitmap_offset);
	d.bitmap_bytes = htole64(sb->bitmap_bytes);
	d.log_offset = htole64(sb->log_offset);
	d.log_bytes = htole64(sb->log_bytes);
	memcpy(d.member_state, sb->member_state, sizeof(d.member_state));
	d.bitmap_region_stripes = htole64(sb->bitmap_region_stripes);
	d.history_events = htole64(sb->history_events);
	d.scrub_offset = htole64(sb->scrub_offset);
	d.owner_pid = htole32(sb->owner.pid);
	d.owner_start = htole64(sb->owner.start);
	d.owner_since = htole64(sb->owner.since);
	memcpy(d.owner_boot_id, sb->owner.boot_id, sizeof(d.owner_boot_id));
	memcpy(d.owner_host, sb->owner.host, sizeof(d.owner_host));
	d.owner_host[sizeof(d.owner_host) - 1] = '\0';
	d.owner_epoch = htole64(sb->owner.epoch);
	d.owner_host_id = htole64(sb->owner.host_id);
	for (unsigned i = 0; i < GRAID_SB_MAX_MEMBERS; i++)
		d.slot_id[i] = htole64(sb->slot_id[i]);
	memcpy(d.slot_flags, sb->slot_flags, sizeof(d.slot_flags));
	for (unsigned i = 0; i < GRAID_SB_MAX_MEMBERS; i++)
		d.left_events[i] = htole32(sb->left_events[i]);
	d.live_offset = htole64(sb->live_offset);
	d.live_bytes = htole64(sb->live_bytes);
	d.live_region_stripes = htole64(sb->live_region_stripes);
	/* Valid areas are whole 4 KiB blocks well below 2^32 blocks (sb_validate). */
	d.bbl_block = htole32((uint32_t)(sb->bbl_offset / GRAID_SB_SIZE));
	d.bbl_blocks = htole32((uint32_t)(sb->bbl_bytes / GRAID_SB_SIZE));
	d.nvme_flags = htole32(sb->nvme.flags);
	d.nvme_nsid = htole32(sb->nvme.nsid);
	memcpy(d.nvme_nguid, sb->nvme.nguid, sizeof(d.nvme_nguid));
	memcpy(d.nvme_eui64, sb->nvme.eui64, sizeof(d.nvme_eui64));
	memcpy(d.nvme_uuid, sb->nvme.uuid, sizeof(d.nvme_uuid));
	memcpy(d.nvme_subnqn, sb->nvme.subnqn, sizeof(d.nvme_subnqn));
	d.nvme_subnqn[sizeof(d.nvme_subnqn) - 1] = '\0';
	d.crc = htole32(sb_checksum(&d));
	memcpy(buf, &d, sizeof(d));
}

/*
 * A reserved area (bitmap, log) is either absent (0, 0) or whole 4 KiB blocks between the
 * superblock and the data area, so it can be written with O_DIRECT and never clobbers either.
 */
static bool sb_area_ok(uint64_t off, uint64_t len, uint64_t data_offset)
{
	if (len == 0)
		return off == 0;
	if (off % GRAID_SB_SIZE || len % GRAID_SB_SIZE || off < GRAID_SB_SIZE)
		return false;
	return off <= data_offset && len <= data_offset - off;
}

static bool sb_two_overlap(uint64_t o1, uint64_t l1, uint64_t o2, uint64_t l2)
{
	if (l1 == 0 || l2 == 0)
		return false;
	return o1 < o2 + l2 && o2 < o1 + l1;
}

static bool sb_areas_overlap(const struct superblock *sb)
{
	const uint64_t o[4] = { sb->bitmap_offset, sb->log_offset, sb->live_offset, sb->bbl_offset };
	const uint64_t l[4] = { sb->bitmap_bytes, sb->log_bytes, sb->live_bytes, sb->bbl_bytes };

	for (unsigned i = 0; i < 4; i++)
		for (unsigned j = i + 1; j < 4; j++)
			if (sb_two_overlap(o[i], l[i], o[j], l[j]))
				return true;
	return false;
}

/* Layout slots hold data, so they cannot be spares; slots past the layout hold only spares. */
static bool sb_states_ok(const struct superblock *sb)
{
	for (unsigned i = 0; i < GRAID_SB_MAX_MEMBERS; i++) {
		uint8_t s = sb->member_state[i];

		if (i < sb->nmembers) {
			if (s > GRAID_MEMBER_REBUILDING)
				return false;
		} else if (s != 0 && s != GRAID_MEMBER_FAILED && s != GRAID_MEMBER_MISSING &&
			   s != GRAID_MEMBER_SPARE) {
			return false;
		}
	}
	return true;
}

void sb_tag_area(uint32_t flags, uint64_t data_offset, uint64_t data_bytes, uint64_t *offset,
		 uint64_t *bytes)
{
	*offset = *bytes = 0;
	if (!(flags & GRAID_SB_F_CHECKSUMS))
		return;
	*offset = data_offset + data_bytes;
	*bytes = tag_area_bytes(data_bytes);
}

uint64_t sb_member_end(const struct superblock *sb)
{
	if (sb->tag_bytes)
		return sb->tag_offset + sb->tag_bytes;
	return sb->data_offset + sb->data_bytes;
}

bool sb_reshape_area_free(const struct superblock *sb)
{
	const uint64_t o[4] = { sb->bitmap_offset, sb->log_offset, sb->live_offset, sb->bbl_offset };
	const uint64_t l[4] = { sb->bitmap_bytes, sb->log_bytes, sb->live_bytes, sb->bbl_bytes };

	if (!sb_area_ok(GRAID_SB_RESHAPE_OFFSET, GRAID_SB_RESHAPE_BYTES, sb->data_offset))
		return false;
	for (unsigned i = 0; i < 4; i++)
		if (sb_two_overlap(GRAID_SB_RESHAPE_OFFSET, GRAID_SB_RESHAPE_BYTES, o[i], l[i]))
			return false;
	return true;
}

bool sb_reshape_recorded(const struct superblock *sb)
{
	return sb->version == GRAID_SB_VERSION_MAJOR_FEATURES && sb->flags & GRAID_SB_F_RESHAPE;
}

unsigned sb_layout_id(const struct superblock *sb)
{
	return sb->version == GRAID_SB_VERSION_MAJOR_FEATURES && sb->flags & GRAID_SB_F_Q_LAST
		       ? LAYOUT_Q_LAST
		       : LAYOUT_ROTATING;
}

bool sb_generations(const struct superblock *sb)
{
	return sb->version == GRAID_SB_VERSION_MAJOR_FEATURES && sb->flags & GRAID_SB_F_GENERATIONS;
}

/*
 * Major 1 knows no incompatible feature; major 2 is major 1 with CHECKSUMS (in both, bits
 * 16..31 are reserved bits, kept and meaning nothing, as before major 3); major 3 has at
 * least one feature bit, every one known here, CHECKSUMS or not. A checksummed array
 * protects levels that have redundancy, in whole 4 KiB blocks, and its tag area must end
 * inside a 64-bit member. A reshaping one keeps its record's area free. GENERATIONS lives
 * in the tags' meta words: without CHECKSUMS there are no tags to keep them, so a major 3
 * claiming it without them is refused.
 */
static int sb_validate_features(const struct superblock *sb)
{
	uint32_t incompat = sb->flags & GRAID_SB_F_INCOMPAT;
	uint32_t features = sb->flags & GRAID_SB_F_FEATURES;

	if (sb->version == GRAID_SB_VERSION_MAJOR)
		return incompat ? -EPROTO : 0;
	if (sb->version == GRAID_SB_VERSION_MAJOR_INCOMPAT && !incompat)
		return -EPROTO;
	if (sb->version == GRAID_SB_VERSION_MAJOR_FEATURES &&
	    (!features || features & ~GRAID_SB_F_FEATURES_KNOWN))
		return -EPROTO;
	if (sb_reshape_recorded(sb) && !sb_reshape_area_free(sb))
		return -EPROTO;
	if (sb_generations(sb) && !(sb->flags & GRAID_SB_F_CHECKSUMS))
		return -EPROTO;
	if (sb_layout_id(sb) == LAYOUT_Q_LAST && sb->level != 6)
		return -EPROTO; /* only a RAID-6 has a Q to put last */
	if (sb->flags & GRAID_SB_F_CHECKSUMS) {
		if (sb->level != 1 && sb->level != 5 && sb->level != 6 && sb->level != 10)
			return -EPROTO;
		if (sb->block_size != TAG_DATA_BLOCK)
			return -EPROTO;
		if (sb->data_offset + sb->data_bytes > UINT64_MAX - sb->tag_bytes)
			return -EPROTO;
	}
	return 0;
}

/* Everything an assembler relies on without checking again; see FORMAT.md "Validity". */
static int sb_validate(const struct superblock *sb)
{
	struct layout l;

	if (sb->nmembers == 0 || sb->nmembers > GRAID_SB_MAX_MEMBERS)
		return -EPROTO;
	if (layout_init_id(&l, sb->level, sb->nmembers, sb->chunk_bytes, sb->data_bytes,
			   sb_layout_id(sb)))
		return -EPROTO;
	if (l.member_bytes != sb->data_bytes)
		return -EPROTO;
	if (sb->block_size != 512 && sb->block_size != 4096)
		return -EPROTO;
	if (sb->data_offset < GRAID_SB_SIZE || sb->data_offset % GRAID_SB_SIZE ||
	    sb->data_bytes > UINT64_MAX - sb->data_offset)
		return -EPROTO;
	if (sb->rebuild_offset > sb->data_bytes || sb->scrub_offset > sb->data_bytes / sb->chunk_bytes)
		return -EPROTO;
	if (sb->bitmap_bytes == 0 && sb->bitmap_region_stripes != 0)
		return -EPROTO;
	if (!sb_area_ok(sb->bitmap_offset, sb->bitmap_bytes, sb->data_offset) ||
	    !sb_area_ok(sb->log_offset, sb->log_bytes, sb->data_offset) ||
	    !sb_area_ok(sb->live_offset, sb->live_bytes, sb->data_offset) ||
	    !sb_area_ok(sb->bbl_offset, sb->bbl_bytes, sb->data_offset) || sb_areas_overlap(sb))
		return -EPROTO;
	/* The log is two 4 KiB copies (FORMAT.md, "The bad-block log"): no room, no log. */
	if (sb->bbl_bytes && sb->bbl_bytes < 2 * GRAID_SB_SIZE)
		return -EPROTO;
	if ((sb->live_bytes == 0) != (sb->live_region_stripes == 0))
		return -EPROTO;
	if (!sb_states_ok(sb))
		return -EPROTO;
	if (sb->role >= sb->nmembers &&
	    (sb->role >= GRAID_SB_MAX_MEMBERS || sb->member_state[sb->role] != GRAID_MEMBER_SPARE))
		return -EPROTO;
	return sb_validate_features(sb);
}

int sb_decode(const void *buf, struct superblock *sb)
{
	struct sb_disk d;
	struct superblock out;
	uint32_t level;
	int err;

	if (!buf || !sb)
		return -EINVAL;
	memcpy(&d, buf, sizeof(d));
	if (memcmp(d.magic, GRAID_SB_MAGIC, GRAID_SB_MAGIC_LEN) != 0)
		return -EINVAL;
	if (le32toh(d.crc) != sb_checksum(&d))
		return -EBADMSG;
	/* sb_bytes is checked, never used as a length: a larger future superblock is a major. */
	if ((le16toh(d.major) != GRAID_SB_VERSION_MAJOR &&
	     le16toh(d.major) != GRAID_SB_VERSION_MAJOR_INCOMPAT &&
	     le16toh(d.major) != GRAID_SB_VERSION_MAJOR_FEATURES) ||
	    le32toh(d.sb_bytes) != GRAID_SB_SIZE)
		return -EPROTO;

	memset(&out, 0, sizeof(out));
	out.version = le16toh(d.major);
	out.minor = le16toh(d.minor);
	memcpy(out.array_uuid, d.array_uuid, sizeof(out.array_uuid));
	memcpy(out.member_uuid, d.member_uuid, sizeof(out.member_uuid));
	/* Only small values are valid levels, so the int32 conversion is never out of range. */
	level = le32toh(d.level);
	out.level = level > 10 ? -1 : (int32_t)level;
	out.chunk_bytes = le32toh(d.chunk_bytes);
	out.nmembers = le32toh(d.nmembers);
	out.role = le32toh(d.role);
	out.block_size = le32toh(d.block_size);
	out.data_offset = le64toh(d.data_offset);
	out.data_bytes = le64toh(d.data_bytes);
	out.ctime = le64toh(d.ctime);
	out.events = le64toh(d.events);
	out.flags = le32toh(d.flags);
	out.rebuild_offset = le64toh(d.rebuild_offset);
	out.bitmap_offset = le64toh(d.bitmap_offset);
	out.bitmap_bytes = le64toh(d.bitmap_bytes);
	out.log_offset = le64toh(d.log_offset);
	out.log_bytes = le64toh(d.log_bytes);
	memcpy(out.member_state, d.member_state, sizeof(out.member_state));
	/* Minor 1 fields: a minor-0 writer left them zero, which each field reads as "unknown". */
	out.bitmap_region_stripes = le64toh(d.bitmap_region_stripes);
	out.history_events = le64toh(d.history_events);
	out.scrub_offset = le64toh(d.scrub_offset);
	out.owner.pid = le32toh(d.owner_pid);
	out.owner.start = le64toh(d.owner_start);
	out.owner.since = le64toh(d.owner_since);
	memcpy(out.owner.boot_id, d.owner_boot_id, sizeof(out.owner.boot_id));
	memcpy(out.owner.host, d.owner_host, sizeof(out.owner.host));
	/* Minor 2: zero before, read as "no live-data map". */
	out.live_offset = le64toh(d.live_offset);
	out.live_bytes = le64toh(d.live_bytes);
	out.live_region_stripes = le64toh(d.live_region_stripes);
	out.owner.host[sizeof(out.owner.host) - 1] = '\0'; /* trust no terminator */
	/* Minor 3: zero before, read as "epoch and host id unknown". */
	out.owner.epoch = le64toh(d.owner_epoch);
	out.owner.host_id = le64toh(d.owner_host_id);
	/* Minor 4: zero before, read as "no bad-block log". */
	out.bbl_offset = (uint64_t)le32toh(d.bbl_block) * GRAID_SB_SIZE;
	out.bbl_bytes = (uint64_t)le32toh(d.bbl_blocks) * GRAID_SB_SIZE;
	for (unsigned i = 0; i < GRAID_SB_MAX_MEMBERS; i++)
		out.slot_id[i] = le64toh(d.slot_id[i]);
	memcpy(out.slot_flags, d.slot_flags, sizeof(out.slot_flags));
	for (unsigned i = 0; i < GRAID_SB_MAX_MEMBERS; i++)
		out.left_events[i] = le32toh(d.left_events[i]);
	/* Minor 2: zero before, which reads as "no identity recorded". */
	out.nvme.flags = le32toh(d.nvme_flags);
	out.nvme.nsid = le32toh(d.nvme_nsid);
	memcpy(out.nvme.nguid, d.nvme_nguid, sizeof(out.nvme.nguid));
	memcpy(out.nvme.eui64, d.nvme_eui64, sizeof(out.nvme.eui64));
	memcpy(out.nvme.uuid, d.nvme_uuid, sizeof(out.nvme.uuid));
	memcpy(out.nvme.subnqn, d.nvme_subnqn, sizeof(out.nvme.subnqn));
	out.nvme.subnqn[sizeof(out.nvme.subnqn) - 1] = '\0'; /* trust no terminator */
	/* Minor 5: the tag area's place follows from the data area's. */
	sb_tag_area(out.flags, out.data_offset, out.data_bytes, &out.tag_offset, &out.tag_bytes);

	err = sb_validate(&out);
	if (err)
		return err;
	memcpy(sb, &out, sizeof(out));
	return 0;
}

/* Fill @p buf from the kernel's CSPRNG; false if it cannot (no getrandom, no /dev/urandom). */
static bool uuid_random_bytes(uint8_t *buf, size_t len)
{
	size_t got = 0;
	int fd;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EINTR)
			break;
	}
	if (got == len)
		return true;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || errno != EINTR)
			break;
	}
	close(fd);
	return got == len;
}

/* splitmix64: spreads clock and pid bits evenly when no random source exists. */
static uint64_t uuid_mix(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void sb_uuid_generate(uint8_t uuid[16])
{
	if (!uuid_random_bytes(uuid, 16)) {
		/*
		 * No kernel randomness (a sandbox without getrandom or /dev): the UUID still
		 * has to differ between arrays, so derive it from time, pid and a counter.
		 */
		static _Atomic uint64_t counter;
		struct timespec ts;
		uint64_t state, a, b;

		clock_gettime(CLOCK_REALTIME, &ts);
		state = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		state ^= (uint64_t)getpid() << 32 ^ (counter++ << 48);
		a = uuid_mix(&state);
		b = uuid_mix(&state);
		memcpy(uuid, &a, 8);
		memcpy(uuid + 8, &b, 8);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);  /* version 4: random */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);  /* variant 10: RFC 9562 */
}

void sb_uuid_format(const uint8_t uuid[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;

	for (unsigned i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[uuid[i] >> 4];
		*p++ = hex[uuid[i] & 0xf];
	}
	*p = '\0';
}

static int uuid_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sb_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t out[16];
	unsigned j = 0;

	if (!s || !uuid)
		return -EINVAL;
	for (unsigned i = 0; i < 36; i++) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		hi = uuid_hex_digit(s[i]);
		lo = hi < 0 ? -1 : uuid_hex_digit(s[i + 1]);
		if (lo < 0)
			return -EINVAL;
		out[j++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (s[36] != '\0')
		return -EINVAL;
	memcpy(uuid, out, sizeof(out));
	return 0;
}
