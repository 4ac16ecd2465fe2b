/* SPDX-License-Identifier: MIT */
/*
 * The holder's live view, in "UUID.state" beside its lock file (docs/ARRAYS.md, "Status of
 * an array in use"). Text, one item a line, replaced whole (written aside, then renamed):
 *
 *   libgraid-state 2
 *   uuid 0f1e2d3c-...
 *   owner PID START BOOT-ID HOST
 *   role R STATE COPIED TOTAL OUTAGES BLK CTRL PASSTHRU PATH   (one line per role, R from 0)
 *
 * STATE is enum graid_member_state; COPIED and TOTAL the bytes of the role's catch-up or
 * rebuild; OUTAGES the times it became unreachable; BLK and CTRL an NVMe member's block
 * device and controller names ("-" for none), PASSTHRU 1 for a generic device; PATH, the
 * rest of the line, the path the holder opened it by. A status look reads the paths of an
 * unreachable member from sysfs by those names: it cannot open the member itself. A reader trusts it only while the owner
 * process is alive (pid, start time and boot id, as for the lock file's record).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "meta/array_view.h"
#include "ownership/array_own.h"

void array_view_publish(struct graid_array *a)
{
	char path[300], tmp[310], uuid[37], boot[37];
	struct sb_owner me;
	FILE *f;

	if (a->read_only || a->uuid_lock.fd < 0 ||
	    array_uuid_file_path(a->uuid, ".state", path, sizeof(path)))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return; /* best effort: status then reports the superblocks */
	owner_self(&me);
	sb_uuid_format(a->uuid, uuid);
	sb_uuid_format(me.boot_id, boot);
	fprintf(f, "libgraid-state 2\nuuid %s\nowner %u %llu %s %s\n", uuid, me.pid,
		(unsigned long long)me.start, boot, me.host[0] ? me.host : "-");
	for (unsigned r = 0; r < a->nmembers; r++) {
		const struct member *m = &a->members[r];

		fprintf(f, "role %u %d %llu %llu %llu %s %s %d %s\n", r, atomic_load(&m->state),
			(unsigned long long)atomic_load(&m->role.copied),
			(unsigned long long)atomic_load(&m->role.copy_total),
			(unsigned long long)atomic_load(&m->role.outages),
			m->dev.nvme.is_nvme && m->dev.nvme.blk[0] ? m->dev.nvme.blk : "-",
			m->dev.nvme.is_nvme && m->dev.nvme.ctrl[0] ? m->dev.nvme.ctrl : "-",
			m->dev.nvme.is_nvme && m->dev.nvme.passthru, m->dev.path);
	}
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

void array_view_withdraw(struct graid_array *a)
{
	char path[300];

	if (!a->read_only && a->uuid_lock.fd >= 0 &&
	    !array_uuid_file_path(a->uuid, ".state", path, sizeof(path)))
		unlink(path);
}

/* The header; false when it is not a live holder's view of this array. */
static bool live_header(FILE *f, const struct graid_array *a, struct sb_owner *o)
{
	char line[256], uuid[64], boot[64], host[GRAID_SB_HOST_BYTES];
	uint8_t id[16];
	unsigned long long start;
	unsigned version, pid;

	if (!fgets(line, sizeof(line), f) || sscanf(line, "libgraid-state %u", &version) != 1 ||
	    version != 2)
		return false;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "uuid %63s", uuid) != 1 ||
	    sb_uuid_parse(uuid, id) || memcmp(id, a->uuid, 16))
		return false;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "owner %u %llu %63s %63s", &pid, &start, boot, host) != 4 ||
	    sb_uuid_parse(boot, o->boot_id))
		return false;
	o->pid = pid;
	o->start = start;
	snprintf(o->host, sizeof(o->host), "%s", strcmp(host, "-") ? host : "");
	return owner_liveness(o) == OWNER_ALIVE;
}

void array_view_load(struct graid_array *a)
{
	struct array_holder_view *v = &a->view;
	struct sb_owner o = { 0 };
	char path[300], line[512];
	FILE *f;

	if (!a->read_only || array_uuid_file_path(a->uuid, ".state", path, sizeof(path)))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	v->role = calloc(a->nmembers, sizeof(*v->role));
	if (v->role && live_header(f, a, &o)) {
		unsigned seen = 0;

		while (fgets(line, sizeof(line), f)) {
			unsigned long long copied, total, outages;
			char blk[32], ctrl[32];
			struct array_holder_role *hr;
			unsigned r;
			int st, passthru, at = 0;

			if (sscanf(line, "role %u %d %llu %llu %llu %31s %31s %d %n", &r, &st, &copied,
				   &total, &outages, blk, ctrl, &passthru, &at) != 8 || !at ||
			    r >= a->nmembers || st < 0 || st > GRAID_MEMBER_UNREACHABLE)
				break;
			hr = &v->role[r];
			*hr = (struct array_holder_role){ .state = st, .copied = copied,
							  .total = total, .outages = outages,
							  .passthru = passthru == 1 };
			/* Names of sysfs entries, nothing else (they are looked up there). */
			if (strcmp(blk, "-") && !strncmp(blk, "nvme", 4) && !strchr(blk, '/'))
				snprintf(hr->blk, sizeof(hr->blk), "%s", blk);
			if (strcmp(ctrl, "-") && !strncmp(ctrl, "nvme", 4) && !strchr(ctrl, '/'))
				snprintf(hr->ctrl, sizeof(hr->ctrl), "%s", ctrl);
			line[strcspn(line, "\n")] = '\0';
			snprintf(hr->path, sizeof(hr->path), "%s", line + at);
			seen++;
		}
		v->valid = seen == a->nmembers;
		v->pid = o.pid;
		v->nroles = a->nmembers;
	}
	fclose(f);
	if (!v->valid)
		array_view_free(a);
}

void array_view_free(struct graid_array *a)
{
	free(a->view.role);
	a->view = (struct array_holder_view){ 0 };
}
