/* SPDX-License-Identifier: MIT */
/* graidctl status: assemble an array and describe it and every member role, as text or JSON. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include <json-c/json.h>

#include "gctl.h"
#include "gctl_ctl.h"
#include "gctl_json.h"
#include "gctl_status.h"

void gctl_help_status(FILE *f)
{
	gctl_print_cmd_usage(f, "status");
	fprintf(f,
		"\nAssemble the array from MEMBER... and describe it: level, size, state, parity\n"
		"engine, UUID, event count, and each member role's state, path, device identity\n"
		"and I/O counters (counted since this assembly, so mostly the assembly's own\n"
		"I/O), with checksums the blocks that failed them (csum).\n"
		"Members that are NVMe namespaces get a second table of what libnvme's identify\n"
		"said: controller, namespace ID, model, serial, firmware, LBA format (data+metadata\n"
		"bytes), capacity, MDTS, the largest command libgraid issues, volatile write cache,\n"
		"whether deallocated blocks read as zeroes, and block or passthrough I/O.\n"
		"Drive health, where a member has a health log (NVMe): critical warning bits,\n"
		"available spare / threshold, percent used, temperature, media errors; of a\n"
		"served array the holder's watch's last sample (its age) and the policy's rules\n"
		"holding (warning or critical), else read from each drive now, not judged.\n"
		"It only looks: members are opened read-only, nothing is locked or written, so it\n"
		"works while the array is served and on members it may not write. A member given\n"
		"but left out is named with the reason.\n\n"
		"  -j, --json          print exactly one JSON document on stdout\n"
		"  -b, --backend NAME  parity engine to assemble with (default: $GRAID_BACKEND,\n"
		"                      else auto)\n\n"
		"States: clean (every role active, closed cleanly or held by a live process),\n"
		"degraded (roles failed, missing, unreachable or rebuilding, data still served),\n"
		"unclean (not closed cleanly and nobody holds it, as after a crash: the next\n"
		"writable open resyncs the regions the write-intent bitmap marks), failed (too\n"
		"many roles lost to assemble), unknown (it could not be looked at; stderr says\n"
		"why). While another process on this host holds the array, roles are shown as it\n"
		"sees them, and the holder is named; when it serves a control endpoint, the whole\n"
		"array is its live state (its counters, spares, catch-up progress).\n"
		"Exit status: 0 clean; 3 degraded or unclean, or blocks recorded bad; 4 failed;\n"
		"1 unknown or other failure; 2 usage error.\n");
}


/* The path given for a role that has no device in the array, left out: its index, or -1. */
static int status_given_for(const struct status_view *v, unsigned role)
{
	if (role >= v->info.nmembers || v->m[role].mi.path[0])
		return -1;
	return gctl_look_left_out(v->given, v->ngiven, role);
}

/* Roles, then whatever the library numbers after them (hot spares), until it says no more. */
static int status_collect(struct graid_array *a, struct status_view *v)
{
	int rc;

	v->info.struct_size = sizeof(v->info);
	rc = graid_array_info(a, &v->info);
	if (rc)
		return rc;
	v->m = calloc(GRAID_MAX_MEMBERS, sizeof(*v->m));
	if (!v->m)
		return -ENOMEM;
	for (v->nroles = 0; v->nroles < GRAID_MAX_MEMBERS; v->nroles++) {
		struct status_member *m = &v->m[v->nroles];

		m->mi.struct_size = sizeof(m->mi);
		if (graid_array_member_info(a, v->nroles, &m->mi) != 0)
			break;
		m->ok = 1;
		rc = v->nroles < v->info.nmembers ? graid_array_bad_blocks(a, v->nroles, NULL, 0) : 0;
		if (rc > 0) {
			m->bad = calloc((size_t)rc, sizeof(*m->bad));
			if (!m->bad)
				return -ENOMEM;
			rc = graid_array_bad_blocks(a, v->nroles, m->bad, (unsigned)rc);
			m->nbad = rc > 0 ? (unsigned)rc : 0;
		}
		v->bad_bytes += m->mi.bad_blocks * 4096;
	}
	v->given = calloc((size_t)v->ngiven, sizeof(*v->given));
	if (!v->given)
		return -ENOMEM;
	for (int i = 0; i < v->ngiven; i++) {
		v->given[i].struct_size = sizeof(v->given[i]);
		rc = graid_array_given_info(a, (unsigned)i, &v->given[i]);
		if (rc)
			return rc;
	}
	/*
	 * A role rebuilding is not yet redundant: that is degraded, even with nfailed 0. Not
	 * closed cleanly, with nobody holding it: the next open resyncs (the man page's states).
	 */
	v->state = v->info.nfailed ? "degraded" : v->info.unclean ? "unclean" : "clean";
	for (unsigned i = 0; i < v->info.nmembers && i < v->nroles; i++)
		if (v->m[i].mi.state == GRAID_MEMBER_REBUILDING)
			v->state = "degraded";
	return 0;
}

/* What identify said of the roles that are NVMe namespaces, as a second table. */
static void status_text_nvme(const struct status_view *v)
{
	bool any = false;

	for (unsigned i = 0; i < v->nroles; i++)
		any |= v->m[i].mi.nvme != 0;
	if (!any)
		return;
	printf("\n%4s %-7s %4s %-20s %-14s %-8s %8s %9s %7s %7s %6s %7s  %s\n", "role", "ctrl",
	       "nsid", "model", "serial", "fw", "lba", "capacity", "mdts", "max-io", "wcache",
	       "dealloc", "io");
	for (unsigned i = 0; i < v->nroles; i++) {
		const struct graid_member_info *mi = &v->m[i].mi;
		char cap[32], mdts[32], maxio[32], lba[24];

		if (!mi->nvme)
			continue;
		gctl_size_format(mi->nvme_capacity, cap, sizeof(cap));
		if (mi->nvme_mdts_bytes)
			gctl_size_format(mi->nvme_mdts_bytes, mdts, sizeof(mdts));
		else
			snprintf(mdts, sizeof(mdts), "none");
		gctl_size_format(mi->nvme_max_transfer, maxio, sizeof(maxio));
		if (mi->nvme_meta_bytes)
			snprintf(lba, sizeof(lba), "%u+%u", mi->nvme_lba_bytes, mi->nvme_meta_bytes);
		else
			snprintf(lba, sizeof(lba), "%u", mi->nvme_lba_bytes);
		printf("%4u %-7s %4u %-20.20s %-14s %-8s %8s %9s %7s %7s %6s %7s  %s\n", mi->role,
		       mi->nvme_ctrl[0] ? mi->nvme_ctrl : "-", mi->nvme_nsid, mi->nvme_model,
		       mi->nvme_serial, mi->nvme_firmware, lba, cap, mdts, maxio,
		       mi->nvme_volatile_write_cache ? "yes" : "no",
		       mi->nvme_dealloc_zeroes ? "zeroes" : "-",
		       mi->nvme_passthrough ? "passthrough" : "block");
	}
}

/* Members reached over a fabric: where, how their controllers are, and what they catch up. */
static void status_text_paths(const struct status_view *v)
{
	bool any = false;

	for (unsigned i = 0; i < v->nroles; i++) {
		const struct graid_member_info *mi = &v->m[i].mi;

		any |= (mi->nvme_transport[0] && strcmp(mi->nvme_transport, "pcie")) ||
		       mi->catchup_total || mi->outages;
	}
	if (!any)
		return;
	printf("\n%4s %-11s %-5s %-11s %5s %7s %-22s  %s\n", "role", "state", "via", "controller",
	       "paths", "outages", "catch-up", "address");
	for (unsigned i = 0; i < v->nroles; i++) {
		const struct graid_member_info *mi = &v->m[i].mi;
		char done[32], total[32], progress[72] = "-", paths[24] = "-";

		if (mi->catchup_total && mi->state == GRAID_MEMBER_REBUILDING) {
			gctl_size_format(mi->catchup_done, done, sizeof(done));
			gctl_size_format(mi->catchup_total, total, sizeof(total));
			snprintf(progress, sizeof(progress), "%s of %s", done, total);
		}
		if (mi->nvme_paths)
			snprintf(paths, sizeof(paths), "%u/%u", mi->nvme_paths_live, mi->nvme_paths);
		printf("%4u %-11s %-5s %-11s %5s %7llu %-22s  %s\n", mi->role,
		       gctl_state_name(mi->state), mi->nvme_transport[0] ? mi->nvme_transport : "-",
		       mi->nvme_ctrl_state[0] ? mi->nvme_ctrl_state : "-", paths,
		       (unsigned long long)mi->outages, progress,
		       mi->nvme_address[0] ? mi->nvme_address : "-");
	}
}

void gctl_status_free(struct status_view *v)
{
	for (unsigned r = 0; v->m && r < GRAID_MAX_MEMBERS; r++) {
		free(v->m[r].bad);
		json_object_put(v->m[r].health);
	}
	free(v->m);
	free(v->given);
	json_object_put(v->scrub);
	json_object_put(v->stats);
}

/* "lost" and/or "unreadable": why a bad-block range holds nothing valid. */
static const char *status_bad_why(unsigned flags)
{
	if ((flags & GRAID_BAD_BLOCK_LOST) && (flags & GRAID_BAD_BLOCK_UNREADABLE))
		return "lost, unreadable";
	return flags & GRAID_BAD_BLOCK_LOST ? "lost" : "unreadable";
}

/* Each role's bad-block log: what holds nothing valid, and which array bytes that is. */
static void status_text_bad_blocks(const struct status_view *v)
{
	if (!v->bad_bytes)
		return;
	printf("\nbad blocks (reads of them fail with EIO where no redundancy is left; a write "
	       "of their whole stripe, or chunk, clears them):\n");
	printf("%4s %16s %10s %16s  %s\n", "role", "member offset", "length", "array offset",
	       "why");
	for (unsigned r = 0; r < v->nroles; r++)
		for (unsigned k = 0; k < v->m[r].nbad; k++) {
			const struct graid_bad_block *b = &v->m[r].bad[k];
			char len[32], arr[32] = "parity";

			gctl_size_format(b->len, len, sizeof(len));
			if (b->array_offset != UINT64_MAX)
				snprintf(arr, sizeof(arr), "%llu", (unsigned long long)b->array_offset);
			printf("%4u %16llu %10s %16s  %s\n", r, (unsigned long long)b->member_offset,
			       len, arr, status_bad_why(b->flags));
		}
}

/* After "checksums : on": the roles' blocks that failed their checksum, where any did. */
static void status_text_csum(const struct status_view *v)
{
	uint64_t all = 0, tag = 0, lost = 0;

	for (unsigned i = 0; i < v->info.nmembers && i < v->nroles; i++) {
		all += v->m[i].mi.checksum_errors;
		tag += v->m[i].mi.checksum_tag_errors;
		lost += v->m[i].mi.checksum_lost_writes;
	}
	if (!all)
		return;
	printf("; %llu block%s failed the check since %s open (%llu of them a wrong tag over "
	       "right data", (unsigned long long)all, all == 1 ? "" : "s",
	       v->live ? "the holder's" : "this", (unsigned long long)tag);
	/* A drive that drops acknowledged writes wants another answer than bit rot. */
	if (lost)
		printf(", %llu a lost write", (unsigned long long)lost);
	printf("; csum below)");
}

/* Paths given that are in no role's row: another array's, no superblock, not opened... */
static void status_text_left_out(const struct status_view *v)
{
	bool any = false;

	for (int i = 0; i < v->ngiven; i++) {
		const struct graid_given_info *g = &v->given[i];

		if (g->verdict == GRAID_GIVEN_MEMBER || g->verdict == GRAID_GIVEN_SPARE ||
		    (g->role >= 0 && status_given_for(v, (unsigned)g->role) == i))
			continue;
		if (!any)
			printf("\nleft out:\n");
		any = true;
		printf("  %s: %s\n", v->paths[i], g->why);
	}
}

/* The scrub the holder runs or ran (since its endpoint started): state and how far. */
static void status_text_scrub(struct json_object *sc)
{
	uint64_t done = gctl_ctl_u64(sc, "done"), total = gctl_ctl_u64(sc, "total");
	const char *state = gctl_ctl_str(sc, "state");
	char sdone[32], stotal[32];

	gctl_size_format(done, sdone, sizeof(sdone));
	gctl_size_format(total, stotal, sizeof(stotal));
	printf("       scrub : %s in the holder, %.1f%% (%s of %s), %s", state,
	       total ? 100.0 * (double)done / (double)total : 0.0, sdone, stotal,
	       gctl_ctl_bool(sc, "repair") ? "with repair" : "check only");
	if (!strcmp(state, "done"))
		printf(": %llu mismatches, %llu repaired, %llu skipped",
		       (unsigned long long)gctl_ctl_u64(sc, "mismatches"),
		       (unsigned long long)gctl_ctl_u64(sc, "repaired"),
		       (unsigned long long)gctl_ctl_u64(sc, "skipped"));
	else if (!strcmp(state, "failed"))
		printf(": %s", gctl_ctl_str(sc, "error"));
	putchar('\n');
}

/* A grow under way (or stopped): how far, how fast, how long left. */
static void status_text_reshape(const struct graid_array_info *in)
{
	char done[32], total[32], rate[32];

	gctl_size_format(in->reshape_done, done, sizeof(done));
	gctl_size_format(in->reshape_total, total, sizeof(total));
	printf("     reshape : growing to %u members, %.1f%% moved (%s of %s)", in->nmembers,
	       in->reshape_total ? 100.0 * (double)in->reshape_done / (double)in->reshape_total
				 : 100.0, done, total);
	if (in->reshape_running && in->reshape_bytes_per_sec) {
		gctl_size_format(in->reshape_bytes_per_sec, rate, sizeof(rate));
		printf(", %s/s", rate);
		if (in->reshape_eta_sec != UINT64_MAX)
			printf(", ETA %llu s", (unsigned long long)in->reshape_eta_sec);
	} else if (in->reshape_error) {
		printf(", stopped: %s (the next writable open resumes it)",
		       graid_strerror(in->reshape_error));
	} else if (!in->reshape_running) {
		printf(", not moving (the next writable open resumes it)");
	}
	putchar('\n');
}

static void status_text(const struct status_view *v)
{
	const struct graid_array_info *in = &v->info;
	char uuid[37], size[32], chunk[32];

	gctl_uuid_format(in->uuid, uuid);
	gctl_size_format(in->size, size, sizeof(size));
	gctl_size_format(in->chunk_bytes, chunk, sizeof(chunk));
	printf("        uuid : %s\n", uuid);
	printf("       level : raid%d\n", in->level);
	printf("       state : %s", v->state);
	if (in->nfailed)
		printf(" (%u of %u roles failed or missing)", in->nfailed, in->nmembers);
	if (in->unclean)
		printf("%snot closed cleanly: the next writable open resyncs %llu region%s of "
		       "the write-intent bitmap%s", in->nfailed ? "; " : " (",
		       (unsigned long long)in->resync_regions, in->resync_regions == 1 ? "" : "s",
		       in->nfailed ? "" : ")");
	if (v->bad_bytes)
		printf("%sblocks recorded bad: reads of them fail, listed below%s",
		       in->nfailed || in->unclean ? "; " : " (", in->nfailed || in->unclean ? "" : ")");
	if (in->holder_pid)
		printf("\n     held by : %s%s", in->holder,
		       v->live ? " (live state, from its control endpoint)" : "");
	printf("\n        size : %s (%llu bytes)\n", size, (unsigned long long)in->size);
	printf("  chunk size : %s\n", chunk);
	printf("  block size : %u\n", in->block_size);
	printf("      engine : %s\n", in->engine);
	if (in->journal_bytes) {
		char jsize[32];

		gctl_size_format(in->journal_bytes, jsize, sizeof(jsize));
		printf("     journal : %s per member (write-hole journal)\n", jsize);
	} else {
		printf("     journal : none\n");
	}
	printf("   checksums : %s", in->checksums ? "on (a CRC-32C tag per 4 KiB block)" : "off");
	status_text_csum(v);
	putchar('\n');
	/* The live-data map's count: what a rebuild, resync or scrub would read. */
	printf("        used : %.1f%% (%llu bytes in regions written and not discarded)\n",
	       in->size ? 100.0 * (double)in->used_bytes / (double)in->size : 0.0,
	       (unsigned long long)in->used_bytes);
	if (v->bad_bytes)
		printf("  bad blocks : %llu bytes recorded (listed below)\n",
		       (unsigned long long)v->bad_bytes);
	printf("      events : %llu\n", (unsigned long long)in->events);
	if (v->scrub)
		status_text_scrub(v->scrub);
	if (in->reshaping)
		status_text_reshape(in);
	if (in->owner_epoch)
		printf("       owner : %s, epoch %llu\n", in->owner_host[0] ? in->owner_host : "?",
		       (unsigned long long)in->owner_epoch);
	printf("     members : %u\n\n", in->nmembers);
	printf("%4s %-10s %-6s %8s %8s %10s %10s %6s ", "role", "state", "direct",
	       "reads", "writes", "read", "written", "errors");
	/* Blocks that failed their checksum: a column only where there are checksums. */
	if (in->checksums)
		printf("%6s ", "csum");
	printf(" %s\n", "path [identity]");
	for (unsigned i = 0; i < v->nroles; i++) {
		const struct graid_member_info *mi = &v->m[i].mi;
		int g = status_given_for(v, i);
		char rb[32], wb[32];

		gctl_size_format(mi->read_bytes, rb, sizeof(rb));
		gctl_size_format(mi->write_bytes, wb, sizeof(wb));
		printf("%4u %-10s %-6s %8llu %8llu %10s %10s %6llu ", mi->role,
		       gctl_state_name(mi->state), mi->path[0] ? (mi->direct_io ? "yes" : "no") : "-",
		       (unsigned long long)mi->reads, (unsigned long long)mi->writes, rb, wb,
		       (unsigned long long)mi->errors);
		if (in->checksums)
			printf("%6llu ", (unsigned long long)mi->checksum_errors);
		printf(" %s", mi->path[0] ? mi->path : g >= 0 ? v->paths[g] : "-");
		if (mi->identity[0])
			printf(" [%s]", mi->identity);
		else if (g >= 0)
			printf(" [left out: %s]", v->given[g].why);
		putchar('\n');
	}
	/* Below the roles' table, a section each, shown only where it has something to say. */
	status_text_left_out(v);
	status_text_bad_blocks(v);
	status_text_nvme(v);
	status_text_paths(v);
	gctl_status_health_text(v);
}

/* An identifier as hex digits, or null when it is all zero (the namespace has none). */
static void status_json_hex(struct gctl_json *j, const char *key, const uint8_t *id, size_t n)
{
	char hex[40] = "";
	bool zero = true;

	for (size_t i = 0; i < n && 2 * i + 2 < sizeof(hex); i++) {
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
		zero &= id[i] == 0;
	}
	if (zero)
		gctl_json_null(j, key);
	else
		gctl_json_string(j, key, hex);
}

static void status_json(const struct status_view *v)
{
	const struct graid_array_info *in = &v->info;
	struct gctl_json j;
	char uuid[37];

	gctl_uuid_format(in->uuid, uuid);
	gctl_json_init(&j, stdout);
	gctl_json_object_begin(&j, NULL);
	gctl_json_string(&j, "uuid", uuid);
	gctl_json_int(&j, "level", in->level);
	gctl_json_string(&j, "state", v->state);
	gctl_json_uint(&j, "size", in->size);
	gctl_json_uint(&j, "chunk_bytes", in->chunk_bytes);
	gctl_json_uint(&j, "block_size", in->block_size);
	gctl_json_string(&j, "engine", in->engine);
	gctl_json_uint(&j, "journal_bytes", in->journal_bytes);
	gctl_json_bool(&j, "checksums", in->checksums);
	gctl_json_uint(&j, "used_bytes", in->used_bytes);
	gctl_json_uint(&j, "events", in->events);
	gctl_json_string(&j, "owner_host", in->owner_host);
	gctl_json_uint(&j, "owner_epoch", in->owner_epoch);
	gctl_json_uint(&j, "nmembers", in->nmembers);
	gctl_json_uint(&j, "nfailed", in->nfailed);
	gctl_json_bool(&j, "unclean", in->unclean);
	gctl_json_uint(&j, "resync_regions", in->resync_regions);
	gctl_json_uint(&j, "bad_block_bytes", v->bad_bytes);
	if (in->holder_pid) {
		gctl_json_uint(&j, "holder_pid", in->holder_pid);
		gctl_json_string(&j, "holder", in->holder);
	} else {
		gctl_json_null(&j, "holder_pid");
		gctl_json_null(&j, "holder");
	}
	/* The reshape (RESHAPEOBJ, docs/CONTROL.md): reshaping false when none is recorded. */
	gctl_json_object_begin(&j, "reshape");
	gctl_json_bool(&j, "reshaping", in->reshaping);
	gctl_json_bool(&j, "running", in->reshape_running);
	gctl_json_int(&j, "errno", -in->reshape_error);
	gctl_json_uint(&j, "done_bytes", in->reshape_done);
	gctl_json_uint(&j, "total_bytes", in->reshape_total);
	gctl_json_uint(&j, "bytes_per_s", in->reshape_bytes_per_sec);
	if (in->reshape_running && in->reshape_eta_sec != UINT64_MAX)
		gctl_json_uint(&j, "eta_s", in->reshape_eta_sec);
	else
		gctl_json_null(&j, "eta_s");
	gctl_json_object_end(&j);
	/* The holder's scrub, as its endpoint gives it (docs/CONTROL.md); null unserved. */
	gctl_json_value(&j, "scrub", v->scrub);
	/* The holder's I/O statistics (docs/CONTROL.md, STATSOBJ); null unserved: no I/O. */
	gctl_json_value(&j, "stats", v->stats);
	gctl_json_array_begin(&j, "members");
	for (unsigned i = 0; i < v->nroles; i++) {
		const struct graid_member_info *mi = &v->m[i].mi;
		int g = status_given_for(v, i);

		gctl_json_object_begin(&j, NULL);
		gctl_json_uint(&j, "role", mi->role);
		gctl_json_string(&j, "state", gctl_state_name(mi->state));
		if (mi->path[0])
			gctl_json_string(&j, "path", mi->path);
		else if (g >= 0)
			gctl_json_string(&j, "path", v->paths[g]);
		else
			gctl_json_null(&j, "path");
		if (g >= 0)
			gctl_json_string(&j, "left_out", v->given[g].why);
		else
			gctl_json_null(&j, "left_out");
		gctl_json_string(&j, "identity", mi->identity);
		gctl_json_bool(&j, "direct_io", mi->direct_io);
		gctl_json_uint(&j, "reads", mi->reads);
		gctl_json_uint(&j, "writes", mi->writes);
		gctl_json_uint(&j, "read_bytes", mi->read_bytes);
		gctl_json_uint(&j, "write_bytes", mi->write_bytes);
		gctl_json_uint(&j, "errors", mi->errors);
		gctl_json_uint(&j, "outages", mi->outages);
		gctl_json_uint(&j, "catchup_done", mi->catchup_done);
		gctl_json_uint(&j, "catchup_total", mi->catchup_total);
		gctl_json_uint(&j, "read_repaired", mi->read_repaired);
		gctl_json_uint(&j, "checksum_errors", mi->checksum_errors);
		gctl_json_uint(&j, "checksum_tag_errors", mi->checksum_tag_errors);
		gctl_json_uint(&j, "checksum_lost_writes", mi->checksum_lost_writes);
		/* A replace in service of the role (only a holder's live status knows one). */
		gctl_json_bool(&j, "replacing", mi->replacing);
		if (mi->replacing)
			gctl_json_string(&j, "replace_path", mi->replace_path);
		else
			gctl_json_null(&j, "replace_path");
		gctl_json_uint(&j, "replace_done", mi->replace_done);
		gctl_json_uint(&j, "replace_total", mi->replace_total);
		/* HEALTHOBJ: the holder's watch's, or this look's own read of the drive. */
		gctl_json_value(&j, "health", v->m[i].health);
		gctl_json_array_begin(&j, "bad_blocks");
		for (unsigned k = 0; k < v->m[i].nbad; k++) {
			const struct graid_bad_block *b = &v->m[i].bad[k];

			gctl_json_object_begin(&j, NULL);
			gctl_json_uint(&j, "member_offset", b->member_offset);
			gctl_json_uint(&j, "len", b->len);
			if (b->array_offset != UINT64_MAX)
				gctl_json_uint(&j, "array_offset", b->array_offset);
			else
				gctl_json_null(&j, "array_offset");
			gctl_json_bool(&j, "lost", b->flags & GRAID_BAD_BLOCK_LOST);
			gctl_json_bool(&j, "unreadable", b->flags & GRAID_BAD_BLOCK_UNREADABLE);
			gctl_json_object_end(&j);
		}
		gctl_json_array_end(&j);
		if (mi->nvme) {
			gctl_json_object_begin(&j, "nvme");
			gctl_json_string(&j, "controller", mi->nvme_ctrl);
			gctl_json_string(&j, "model", mi->nvme_model);
			gctl_json_string(&j, "serial", mi->nvme_serial);
			gctl_json_string(&j, "firmware", mi->nvme_firmware);
			gctl_json_uint(&j, "nsid", mi->nvme_nsid);
			gctl_json_uint(&j, "lba_bytes", mi->nvme_lba_bytes);
			gctl_json_uint(&j, "meta_bytes", mi->nvme_meta_bytes);
			gctl_json_uint(&j, "capacity", mi->nvme_capacity);
			gctl_json_uint(&j, "mdts_bytes", mi->nvme_mdts_bytes);
			gctl_json_uint(&j, "max_transfer", mi->nvme_max_transfer);
			gctl_json_bool(&j, "volatile_write_cache", mi->nvme_volatile_write_cache);
			gctl_json_bool(&j, "dealloc_zeroes", mi->nvme_dealloc_zeroes);
			gctl_json_uint(&j, "dlfeat", mi->nvme_dlfeat);
			gctl_json_bool(&j, "passthrough", mi->nvme_passthrough);
			gctl_json_string(&j, "transport", mi->nvme_transport);
			gctl_json_string(&j, "address", mi->nvme_address);
			gctl_json_string(&j, "controller_state", mi->nvme_ctrl_state);
			gctl_json_uint(&j, "paths", mi->nvme_paths);
			gctl_json_uint(&j, "paths_live", mi->nvme_paths_live);
			gctl_json_string(&j, "subsystem_nqn", mi->nvme_subsysnqn);
			status_json_hex(&j, "nguid", mi->nvme_nguid, sizeof(mi->nvme_nguid));
			status_json_hex(&j, "eui64", mi->nvme_eui64, sizeof(mi->nvme_eui64));
			status_json_hex(&j, "uuid", mi->nvme_uuid, sizeof(mi->nvme_uuid));
			gctl_json_object_end(&j);
		} else {
			gctl_json_null(&j, "nvme");
		}
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	gctl_json_array_begin(&j, "given");
	for (int i = 0; i < v->ngiven; i++) {
		const struct graid_given_info *g = &v->given[i];

		gctl_json_object_begin(&j, NULL);
		gctl_json_string(&j, "path", v->paths[i]);
		gctl_json_string(&j, "verdict", gctl_verdict_name(g->verdict));
		if (g->role >= 0)
			gctl_json_uint(&j, "role", (unsigned)g->role);
		else
			gctl_json_null(&j, "role");
		if (g->why[0])
			gctl_json_string(&j, "why", g->why);
		else
			gctl_json_null(&j, "why");
		gctl_json_object_end(&j);
	}
	gctl_json_array_end(&j);
	gctl_json_object_end(&j);
	gctl_json_finish(&j);
}

/* With --json, a failed assembly is still one JSON document, so scripts need one parser. */
static void status_json_error(char **paths, int n, int exit_code)
{
	struct gctl_json j;

	gctl_json_init(&j, stdout);
	gctl_json_object_begin(&j, NULL);
	gctl_json_string(&j, "state", exit_code == GCTL_EXIT_BROKEN ? "failed" : "unknown");
	gctl_json_string(&j, "error", exit_code == GCTL_EXIT_BROKEN ?
				      "too many members failed or missing to assemble" :
				      "cannot assemble (see stderr)");
	gctl_json_array_begin(&j, "members_given");
	for (int i = 0; i < n; i++)
		gctl_json_string(&j, NULL, paths[i]);
	gctl_json_array_end(&j);
	gctl_json_object_end(&j);
	gctl_json_finish(&j);
}


int gctl_cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "backend", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	struct status_view v = { 0 };
	const char *backend = NULL;
	struct graid_array *a;
	bool json = false;
	int c, n, rc, ex;

	while ((c = getopt_long(argc, argv, "jb:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'b':
			backend = optarg;
			break;
		default:
			fprintf(stderr, "Try 'graidctl status --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	n = argc - optind;
	if (n < 1)
		return gctl_usage_err("status", "no members given");
	if (n > GRAID_MAX_MEMBERS)
		return gctl_usage_err("status", "%d members given; at most %d", n,
				      GRAID_MAX_MEMBERS);
	ex = gctl_open("status", argv + optind, n, backend, GCTL_OPEN_LOOK, &a);
	if (ex != GCTL_EXIT_OK) {
		if (json)
			status_json_error(argv + optind, n, ex);
		else if (ex == GCTL_EXIT_BROKEN)
			printf("state : failed (too many members failed or missing to assemble)\n");
		return ex;
	}
	v.paths = argv + optind;
	v.ngiven = n;
	rc = status_collect(a, &v);
	if (rc) {
		gctl_err("status: %s", graid_strerror(rc));
		gctl_status_free(&v);
		gctl_close("status", a);
		return GCTL_EXIT_FAILED;
	}
	if (v.info.holder_pid)
		gctl_status_ask_holder(a, &v);
	/* A holder's drives are asked by its watch: a look reads them only where none is. */
	if (!v.live)
		gctl_status_health_look(a, &v);
	if (json)
		status_json(&v);
	else
		status_text(&v);
	/* Blocks that hold nothing valid need attention even on an array whose roles are all in. */
	ex = strcmp(v.state, "clean") == 0 && !v.bad_bytes ? GCTL_EXIT_OK : GCTL_EXIT_DEGRADED;
	gctl_status_free(&v);
	if (gctl_close("status", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}
