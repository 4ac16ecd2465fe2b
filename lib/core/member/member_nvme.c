/* SPDX-License-Identifier: MIT */
/* NVMe members: identify through libnvme, synchronous passthrough commands, deallocate. */
/* libnvme first: it brings its own copy of <linux/nvme_ioctl.h>, under the same guard. */
#ifdef GRAID_HAVE_LIBNVME
#include <libnvme.h>
#endif

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <endian.h>

#include "array/array.h"
#include "member/member_path.h"
#include "common/signals.h"
#include "format/nvme_cmd.h"
#include "format/nvme_meta.h"
#include "format/tag_format.h"
#include "member/member_nvme.h"

/*
 * For the generic char device @rdev ("ngXnY": X the controller's instance, Y the
 * namespace's): its controller ("nvmeX") and the block device of the same namespace. That is
 * "nvmeSnY" with S the subsystem's instance, which differs from X once a controller was
 * removed and came back, so it is looked up among the controller's namespaces: "nvmeSnY",
 * or the multipath path "nvmeScXnY" whose head is "nvmeSnY". Empty strings when unknown.
 */
static void nvme_generic_names(dev_t rdev, char *ctrl, size_t clen, char *blk, size_t blen)
{
	char link[96], name[64], dir[96];
	unsigned x, y, s, c, n;
	struct dirent *e;
	DIR *d;

	ctrl[0] = blk[0] = '\0';
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u", major(rdev), minor(rdev));
	member_sysfs_link_base(link, name, sizeof(name));
	if (sscanf(name, "ng%un%u", &x, &y) != 2)
		return;
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device", major(rdev), minor(rdev));
	member_sysfs_link_base(link, ctrl, clen);
	if (!ctrl[0])
		return;
	snprintf(dir, sizeof(dir), "/sys/class/nvme/%.31s", ctrl);
	d = opendir(dir);
	while (d && (e = readdir(d)) && !blk[0]) {
		if (sscanf(e->d_name, "nvme%uc%un%u", &s, &c, &n) == 3 && n == y)
			snprintf(blk, blen, "nvme%un%u", s, n);
		else if (sscanf(e->d_name, "nvme%un%u", &s, &n) == 2 && n == y &&
			 !strchr(e->d_name, 'c'))
			snprintf(blk, blen, "nvme%un%u", s, n);
	}
	if (d)
		closedir(d);
}

#ifdef GRAID_HAVE_LIBNVME
/* Identify strings are space-padded, not terminated: copy and trim. */
static void nvme_copy_str(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t n = srclen < dstlen - 1 ? srclen : dstlen - 1;

	memcpy(dst, src, n);
	dst[n] = '\0';
	while (n && (dst[n - 1] == ' ' || dst[n - 1] == '\0'))
		dst[--n] = '\0';
}

/* A number from a sysfs file, or 0. */
static uint64_t nvme_sysfs_u64(const char *fmt, const char *name)
{
	char path[PATH_MAX];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), fmt, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* The kernel's own limits for one request: max_hw_sectors_kb, and segments of one page each. */
static uint32_t nvme_os_limit(const char *blk)
{
	uint64_t kb = nvme_sysfs_u64("/sys/block/%s/queue/max_hw_sectors_kb", blk);
	uint64_t segs = nvme_sysfs_u64("/sys/block/%s/queue/max_segments", blk);
	long page = sysconf(_SC_PAGESIZE);
	uint64_t lim = 0;

	if (kb)
		lim = kb * 1024;
	/* User pages need not be contiguous: each may be its own segment. */
	if (segs && page > 0 && (lim == 0 || segs * (uint64_t)page < lim))
		lim = segs * (uint64_t)page;
	if (lim == 0)
		lim = 128 * 1024; /* nothing known: a size every NVMe controller takes */
	return lim > UINT32_MAX ? UINT32_MAX : (uint32_t)lim;
}

static void nvme_ctrl_name(const char *blk, char *out, size_t len)
{
	char link[PATH_MAX];

	snprintf(link, sizeof(link), "/sys/block/%s/device", blk);
	member_sysfs_link_base(link, out, len);
}

/* The namespace UUID sysfs shows ("xxxxxxxx-xxxx-..."), or zeroes. */
static void nvme_ns_uuid(const char *blk, uint8_t out[16])
{
	char path[96], v[64];
	unsigned k = 0;
	FILE *f;

	memset(out, 0, 16);
	snprintf(path, sizeof(path), "/sys/block/%s/uuid", blk);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(v, sizeof(v), f))
		v[0] = '\0';
	fclose(f);
	for (const char *c = v; *c && *c != '\n' && k < 32; c++) {
		int d = *c >= '0' && *c <= '9'   ? *c - '0'
			: *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
			: *c >= 'A' && *c <= 'F' ? *c - 'A' + 10
						 : -1;

		if (*c == '-')
			continue;
		if (d < 0)
			break;
		out[k / 2] = (uint8_t)(out[k / 2] << 4 | d);
		k++;
	}
	if (k != 32)
		memset(out, 0, 16);
}

/*
 * Transport and paths: a fabric member is one whose controllers are not PCIe. A multipath
 * head's "device" is its subsystem: name its first controller instead.
 */
static void nvme_paths_note(struct member *m)
{
	struct member_paths p;

	member_paths_read(m, &p);
	m->dev.nvme.fabric = p.fabric;
	if (p.fabric)
		signals_note_fabric();
	if (p.ctrl[0] && !strncmp(m->dev.nvme.ctrl, "nvme-subsys", 11))
		snprintf(m->dev.nvme.ctrl, sizeof(m->dev.nvme.ctrl), "%s", p.ctrl);
}
#endif

int member_nvme_blockdev(const char *path, dev_t *dev)
{
	char ctrl[32], blk[64], p[PATH_MAX];
	unsigned maj, min;
	struct stat st;
	FILE *f;
	int ok;

	if (stat(path, &st) || !S_ISCHR(st.st_mode))
		return -ENOENT;
	nvme_generic_names(st.st_rdev, ctrl, sizeof(ctrl), blk, sizeof(blk));
	if (!blk[0])
		return -ENOENT;
	snprintf(p, sizeof(p), "/sys/class/block/%s/dev", blk);
	f = fopen(p, "re");
	if (!f)
		return -ENOENT;
	ok = fscanf(f, "%u:%u", &maj, &min) == 2;
	fclose(f);
	if (!ok)
		return -ENOENT;
	*dev = makedev(maj, min);
	return 0;
}

#ifdef GRAID_HAVE_LIBNVME
/* libnvme's convention: 0, -1 with errno, or a positive NVMe status. */
static int nvme_lib_err(int rc, const char *what, const char *path)
{
	if (rc == 0)
		return 0;
	if (rc < 0) {
		int err = errno ? -errno : -EIO;

		graid__log(GRAID_LOG_INFO, "member %s: %s: %s", path, what, graid_strerror(err));
		return err;
	}
	graid__log(GRAID_LOG_ERR, "member %s: %s: NVMe status 0x%x (%s)", path, what, rc,
		   nvme_status_name(rc));
	return nvme_status_errno(rc);
}

/*
 * The protection information format of LBA format @p fmt: ELBAF bits 8:7 of the NVM command
 * set's Identify Namespace where the controller has extended LBA formats (CTRATT bit 15),
 * else 0 (the 16-bit guard, the only one before them). 3 (reserved: refused) when asked
 * and unanswered.
 */
static unsigned nvme_pif(struct member *m, int fd, const struct nvme_id_ctrl *ctrl, __u32 nsid,
			 unsigned fmt)
{
	struct nvme_nvm_id_ns *nvm;
	unsigned pif = 3;

	if (!(le32toh(ctrl->ctratt) & NVME_CTRL_CTRATT_ELBAS))
		return 0;
	if (posix_memalign((void **)&nvm, 4096, sizeof(*nvm)))
		return pif;
	if (nvme_lib_err(nvme_identify_ns_csi(fd, nsid, 0, NVME_CSI_NVM, nvm),
			 "Identify Namespace (NVM command set)", m->dev.path) == 0)
		pif = (le32toh(nvm->elbaf[fmt]) & NVME_NVM_ELBAF_PIF_MASK) >> 7;
	free(nvm);
	return pif;
}

static int nvme_identify_fd(struct member *m, int fd, bool is_char, const char *blk)
{
	struct member_nvme *n = &m->dev.nvme;
	struct nvme_id_ctrl *ctrl;
	struct nvme_id_ns *ns;
	unsigned fmt, pif = 0;
	const char *why;
	__u32 nsid;
	int rc;

	if (nvme_get_nsid(fd, &nsid) < 0) {
		/* ENOTTY: a block device of another driver; that is no error. */
		if (!is_char)
			return 0;
		graid__log(GRAID_LOG_ERR, "member %s: a character device that is not an NVMe "
					  "namespace", m->dev.path);
		return -EOPNOTSUPP;
	}
	/* Identify data are 4 KiB each; aligned for the controller's DMA. */
	if (posix_memalign((void **)&ctrl, 4096, sizeof(*ctrl)))
		return -ENOMEM;
	if (posix_memalign((void **)&ns, 4096, sizeof(*ns))) {
		free(ctrl);
		return -ENOMEM;
	}
	rc = nvme_lib_err(nvme_identify_ctrl(fd, ctrl), "Identify Controller", m->dev.path);
	if (rc == 0)
		rc = nvme_lib_err(nvme_identify_ns(fd, nsid, ns), "Identify Namespace", m->dev.path);
	if (rc) {
		free(ctrl);
		free(ns);
		/* A block device still works without identify (no permission, say). */
		return is_char ? rc : 0;
	}
	memset(n, 0, sizeof(*n));
	n->is_nvme = true;
	n->passthru = is_char;
	n->nsid = nsid;
	nvme_copy_str(n->model, sizeof(n->model), ctrl->mn, sizeof(ctrl->mn));
	nvme_copy_str(n->serial, sizeof(n->serial), ctrl->sn, sizeof(ctrl->sn));
	nvme_copy_str(n->firmware, sizeof(n->firmware), ctrl->fr, sizeof(ctrl->fr));
	n->vwc = ctrl->vwc & NVME_CTRL_VWC_PRESENT;
	n->dsm = le16toh(ctrl->oncs) & NVME_CTRL_ONCS_DSM;
	n->write_zeroes = le16toh(ctrl->oncs) & NVME_CTRL_ONCS_WRITE_ZEROES;
	n->mdts_bytes = nvme_mdts_bytes(ctrl->mdts, 0);
	/* FLBAS: bits 3:0 and 6:5 select the format in use (64 formats since NVMe 2.0). */
	fmt = (ns->flbas & NVME_NS_FLBAS_LOWER_MASK) |
	      (((unsigned)ns->flbas & NVME_NS_FLBAS_HIGHER_MASK) >> 1);
	if (fmt >= 64 || ns->lbaf[fmt].ds < 9 || ns->lbaf[fmt].ds > 16) {
		graid__log(GRAID_LOG_ERR, "member %s: LBA format %u has data size 2^%u", m->dev.path,
			   fmt, fmt < 64 ? ns->lbaf[fmt].ds : 0);
		free(ctrl);
		free(ns);
		return -EOPNOTSUPP;
	}
	n->lba_bytes = 1u << ns->lbaf[fmt].ds;
	n->meta_bytes = le16toh(ns->lbaf[fmt].ms);
	n->dps = ns->dps;
	n->meta_ext = ns->flbas & NVME_NS_FLBAS_META_EXT;
	if (is_char && n->meta_bytes && (n->dps & NVME_NS_DPS_PI_MASK))
		pif = nvme_pif(m, fd, ctrl, nsid, fmt);
	n->nsze = le64toh(ns->nsze);
	n->dlfeat = ns->dlfeat;
	n->wz_deac = ns->dlfeat & (1u << 3);
	/* 001b: reads of deallocated blocks return zeroes; only useful where DSM exists. */
	n->dealloc_zeroes = (ns->dlfeat & 0x7) == 1 && n->dsm;
	memcpy(n->nguid, ns->nguid, sizeof(n->nguid));
	memcpy(n->eui64, ns->eui64, sizeof(n->eui64));
	nvme_copy_str(n->subnqn, sizeof(n->subnqn), ctrl->subnqn, sizeof(ctrl->subnqn));
	free(ctrl);
	free(ns);

	nvme_ctrl_name(blk, n->ctrl, sizeof(n->ctrl));
	snprintf(n->blk, sizeof(n->blk), "%s", blk);
	nvme_ns_uuid(blk, n->uuid);
	nvme_paths_note(m);
	n->max_xfer = nvme_max_transfer(n->mdts_bytes, nvme_os_limit(blk), n->lba_bytes);
	if (!is_char)
		n->blk_discard = nvme_sysfs_u64("/sys/block/%s/queue/discard_max_bytes", blk) > 0;
	/* The block device's metadata is the kernel's (its integrity profile); none sent here. */
	if (is_char && nvme_meta_decide(n->lba_bytes, n->meta_bytes, n->meta_ext, n->dps, pif,
					&n->meta, &why)) {
		graid__log(GRAID_LOG_ERR, "member %s: LBA format of %u bytes with %u metadata bytes "
					  "(PI type %u) cannot be used through passthrough: %s",
			   m->dev.path, n->lba_bytes, n->meta_bytes, n->dps & NVME_NS_DPS_PI_MASK,
			   why);
		return -EOPNOTSUPP;
	}
	return 0;
}
#endif

int member_nvme_identify(struct member *m, const struct stat *st)
{
	memset(&m->dev.nvme, 0, sizeof(m->dev.nvme));
	if (!S_ISBLK(st->st_mode) && !S_ISCHR(st->st_mode))
		return 0;
#ifdef GRAID_HAVE_LIBNVME
	{
		char blk[64] = "", ctrl[32] = "";
		int rc;

		if (S_ISCHR(st->st_mode)) {
			nvme_generic_names(st->st_rdev, ctrl, sizeof(ctrl), blk, sizeof(blk));
		} else {
			/* By device number: the path may be a link (/dev/disk/by-id/...). */
			char link[64];

			snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st->st_rdev),
				 minor(st->st_rdev));
			member_sysfs_link_base(link, blk, sizeof(blk));
		}
		struct sigpipe_guard g;

		/* Admin commands go over the same connection; the transport is not known yet. */
		sigpipe_guard_begin_always(&g);
		rc = nvme_identify_fd(m, m->dev.fd, S_ISCHR(st->st_mode), blk);
		sigpipe_guard_end(&g);
		if (ctrl[0])
			snprintf(m->dev.nvme.ctrl, sizeof(m->dev.nvme.ctrl), "%s", ctrl);

		if (rc || !m->dev.nvme.is_nvme)
			return rc;
		graid__log(GRAID_LOG_INFO, "member %s: NVMe %s, %u-byte LBAs (+%u metadata), "
					   "%llu LBAs, MDTS %u, %u bytes per command, write cache %s, "
					   "deallocated blocks read %s", m->dev.path, m->dev.nvme.model,
			   m->dev.nvme.lba_bytes, m->dev.nvme.meta_bytes,
			   (unsigned long long)m->dev.nvme.nsze, m->dev.nvme.mdts_bytes, m->dev.nvme.max_xfer,
			   m->dev.nvme.vwc ? "yes" : "no",
			   m->dev.nvme.dealloc_zeroes ? "zeroes" : "unspecified");
		return 0;
	}
#else
	if (S_ISCHR(st->st_mode)) {
		graid__log(GRAID_LOG_ERR, "member %s: NVMe generic devices need libnvme, which this "
					  "libgraid was built without", m->path);
		return -EOPNOTSUPP;
	}
	return 0;
#endif
}

/* One synchronous command; the status is translated and logged with its NVMe name. */
static int nvme_sync_cmd(struct member *m, const struct nvme_uring_cmd *uc, const char *what,
			 uint64_t off)
{
	struct nvme_passthru_cmd pc = {
		.opcode = uc->opcode,
		.flags = uc->flags,
		.nsid = uc->nsid,
		.cdw2 = uc->cdw2,
		.cdw3 = uc->cdw3,
		.metadata = uc->metadata,
		.addr = uc->addr,
		.metadata_len = uc->metadata_len,
		.data_len = uc->data_len,
		.cdw10 = uc->cdw10,
		.cdw11 = uc->cdw11,
		.cdw12 = uc->cdw12,
		.cdw13 = uc->cdw13,
		.cdw14 = uc->cdw14,
		.cdw15 = uc->cdw15,
	};
	struct sigpipe_guard g;
	int rc;

	sigpipe_guard_begin(&g);
	do
		rc = ioctl(m->dev.fd, NVME_IOCTL_IO_CMD, &pc);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		rc = -errno;
	sigpipe_guard_end(&g);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		int err = nvme_status_errno(rc);

		graid__log(GRAID_LOG_ERR, "member %s: NVMe %s at byte %llu: status 0x%x (%s, "
					  "SCT %u SC 0x%02x): %s", m->dev.path, what,
			   (unsigned long long)off, rc, nvme_status_name(rc), nvme_status_sct(rc),
			   nvme_status_sc(rc), graid_strerror(err));
		return err;
	}
	return 0;
}

int member_nvme_rw_meta(struct member *m, void *buf, size_t len, uint64_t off, bool write,
			void *meta)
{
	const struct member_nvme *n = &m->dev.nvme;
	size_t done = 0;

	if (!n->passthru || off % n->lba_bytes || len % n->lba_bytes)
		return -EINVAL;
	while (done < len) {
		size_t piece = len - done < n->max_xfer ? len - done : n->max_xfer;
		struct nvme_uring_cmd c;
		int rc;

		rc = nvme_cmd_build_rw(&c, write, n->nsid, (off + done) / n->lba_bytes,
				 (uint32_t)(piece / n->lba_bytes), n->lba_bytes,
				 (char *)buf + done, false);
		if (rc == 0) {
			nvme_meta_cmd(&c, &n->meta,
				      meta ? (char *)meta + nvme_meta_len(&n->meta, done) : NULL);
			rc = nvme_sync_cmd(m, &c, write ? "Write" : "Read", off + done);
		}
		if (rc)
			return rc;
		done += piece;
	}
	return 0;
}

/*
 * The tags of the data-area blocks of [off, off + len) of a device whose role keeps them in
 * its metadata: made from @p buf into @p meta (a write), or checked (a read: the first block
 * whose bytes fail a present tag, -EBADMSG, as an unreadable block would be).
 */
static int nvme_rw_tags(struct member *m, void *buf, size_t len, uint64_t off, bool write,
			void *meta)
{
	const struct member_nvme *n = &m->dev.nvme;

	for (uint64_t at = off; at < off + len; at += TAG_DATA_BLOCK) {
		const uint8_t *data = (const uint8_t *)buf + (at - off);
		uint64_t block = (at - n->tag_data_off) / TAG_DATA_BLOCK;
		uint32_t crc;
		tag_t t;

		if (at < n->tag_data_off || at >= n->tag_data_end)
			continue;
		crc = tag_crc_end(tag_crc_feed(tag_crc_begin_at(n->tag_prefix, block), data,
					       TAG_DATA_BLOCK));
		if (write) {
			nvme_meta_tag_put(meta, &n->meta, (at - off) / TAG_DATA_BLOCK, tag_make(crc));
			continue;
		}
		t = nvme_meta_tag_get(meta, &n->meta, (at - off) / TAG_DATA_BLOCK);
		if (!tag_holds(t, crc)) {
			graid__log(GRAID_LOG_ERR, "member %s: data-area block %llu fails the tag in "
						  "its metadata", m->dev.path, (unsigned long long)block);
			return -EBADMSG;
		}
	}
	return 0;
}

int member_nvme_rw(struct member *m, void *buf, size_t len, uint64_t off, bool write)
{
	const struct member_nvme *n = &m->dev.nvme;
	uint64_t mlen = nvme_meta_len(&n->meta, len);
	void *meta = NULL;
	int rc;

	if (mlen && !(meta = calloc(1, mlen)))
		return -ENOMEM;
	if (write && n->tags_inline)
		nvme_rw_tags(m, buf, len, off, true, meta);
	rc = member_nvme_rw_meta(m, buf, len, off, write, meta);
	if (rc == 0 && !write && n->tags_inline)
		rc = nvme_rw_tags(m, buf, len, off, false, meta);
	free(meta);
	return rc;
}

int member_nvme_flush(struct member *m)
{
	struct nvme_uring_cmd c;

	/* Without a volatile write cache every completed write is durable already. */
	if (!m->dev.nvme.vwc)
		return 0;
	nvme_cmd_build_flush(&c, m->dev.nvme.nsid);
	return nvme_sync_cmd(m, &c, "Flush", 0);
}

int member_nvme_deallocate(struct member *m, uint64_t off, uint64_t len)
{
	const struct member_nvme *n = &m->dev.nvme;
	/* Per range: a count that fits 32 bits and keeps each range aligned to 1 GiB of LBAs. */
	const uint64_t per_range = 1u << 30;
	struct nvme_cmd_dsm_range *r;
	uint64_t slba, nlb;
	int rc = 0;

	if (!n->is_nvme || off % n->lba_bytes || len % n->lba_bytes)
		return -EINVAL;
	if (!n->dsm)
		return -EOPNOTSUPP;
	if (posix_memalign((void **)&r, 4096, NVME_CMD_DSM_MAX_RANGES * sizeof(*r)))
		return -ENOMEM;
	slba = off / n->lba_bytes;
	nlb = len / n->lba_bytes;
	while (rc == 0 && nlb) {
		struct nvme_uring_cmd c;
		unsigned k = 0;
		uint64_t at = slba;

		for (; k < NVME_CMD_DSM_MAX_RANGES && nlb; k++) {
			uint64_t cnt = nlb < per_range ? nlb : per_range;

			nvme_cmd_dsm_range_set(&r[k], slba, (uint32_t)cnt);
			slba += cnt;
			nlb -= cnt;
		}
		rc = nvme_cmd_build_dsm(&c, n->nsid, r, k);
		if (rc == 0)
			rc = nvme_sync_cmd(m, &c, "Dataset Management (deallocate)",
					   at * n->lba_bytes);
	}
	free(r);
	return rc;
}

void member_nvme_info(const struct member_nvme *n, struct graid_member_info *mi)
{
	if (!n->is_nvme)
		return;
	mi->nvme = 1;
	mi->nvme_passthrough = n->passthru;
	snprintf(mi->nvme_ctrl, sizeof(mi->nvme_ctrl), "%s", n->ctrl);
	snprintf(mi->nvme_model, sizeof(mi->nvme_model), "%s", n->model);
	snprintf(mi->nvme_serial, sizeof(mi->nvme_serial), "%s", n->serial);
	snprintf(mi->nvme_firmware, sizeof(mi->nvme_firmware), "%s", n->firmware);
	mi->nvme_nsid = n->nsid;
	mi->nvme_lba_bytes = n->lba_bytes;
	mi->nvme_meta_bytes = n->meta_bytes;
	mi->nvme_capacity = n->nsze * n->lba_bytes;
	mi->nvme_mdts_bytes = n->mdts_bytes;
	mi->nvme_max_transfer = n->max_xfer;
	mi->nvme_volatile_write_cache = n->vwc;
	mi->nvme_dealloc_zeroes = n->dealloc_zeroes;
	mi->nvme_dlfeat = n->dlfeat;
	memcpy(mi->nvme_nguid, n->nguid, sizeof(mi->nvme_nguid));
	memcpy(mi->nvme_eui64, n->eui64, sizeof(mi->nvme_eui64));
	memcpy(mi->nvme_uuid, n->uuid, sizeof(mi->nvme_uuid));
	snprintf(mi->nvme_subsysnqn, sizeof(mi->nvme_subsysnqn), "%s", n->subnqn);
}
