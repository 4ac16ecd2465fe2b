/* SPDX-License-Identifier: MIT */
/* graid_metrics_write(): arrays' state in Prometheus's text exposition format (docs/METRICS.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "common/internal.h"
#include "metrics/metrics.h"

static void start(FILE *o, const char *name, const struct metrics_snap *s)
{
	fprintf(o, "%s{array=\"", name);
	metrics_label(o, s->label);
	fputc('"', o);
}

static void start_member(FILE *o, const char *name, const struct metrics_snap *s, unsigned i)
{
	start(o, name, s);
	fprintf(o, ",member=\"%u\",device=\"", i);
	metrics_label(o, s->m[i].mi.path);
	fputc('"', o);
}

static void end_u(FILE *o, uint64_t v)
{
	fprintf(o, "} %" PRIu64 "\n", v);
}

static void end_d(FILE *o, double v)
{
	fprintf(o, "} %.9g\n", v);
}

static void array_u(FILE *o, const char *name, const struct metrics_snap *s, uint64_t v)
{
	start(o, name, s);
	end_u(o, v);
}

static bool is_role(const struct metrics_snap *s, unsigned i)
{
	return i < s->info.nmembers;
}

/* A rebuild or catch-up of role i has bytes left to copy. */
static bool copying(const struct metrics_snap *s, unsigned i)
{
	const struct graid_member_info *mi = &s->m[i].mi;

	return is_role(s, i) && (mi->state == GRAID_MEMBER_REBUILDING ||
				 (mi->catchup_total && mi->catchup_done < mi->catchup_total));
}

static unsigned roles_in(const struct metrics_snap *s, int state)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nall; i++)
		n += s->m[i].mi.state == state;
	return n;
}

/* ---- the array ---- */

static void f_info(FILE *o, const char *name, const struct metrics_snap *s)
{
	start(o, name, s);
	fprintf(o, ",uuid=\"%s\",level=\"%d\",engine=\"", s->uuid, s->info.level);
	metrics_label(o, s->info.engine);
	fputc('"', o);
	end_u(o, 1);
}

static void f_disks(FILE *o, const char *name, const struct metrics_snap *s)
{
	unsigned active = roles_in(s, GRAID_MEMBER_ACTIVE), failed = roles_in(s, GRAID_MEMBER_FAILED);
	const struct {
		const char *state;
		unsigned n;
	} d[] = {
		{ "active", active },
		{ "failed", failed },
		{ "spare", roles_in(s, GRAID_MEMBER_SPARE) },
		{ "down", s->info.nmembers - active - failed },
	};

	for (size_t k = 0; k < sizeof(d) / sizeof(d[0]); k++) {
		start(o, name, s);
		fprintf(o, ",state=\"%s\"", d[k].state);
		end_u(o, d[k].n);
	}
}

static void f_disks_required(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.nmembers);
}

static const char *array_state(const struct metrics_snap *s)
{
	/*
	 * A role being copied, not rebuild_running: the background thread is "due" for a moment
	 * at every writable open that asks it to look (graid_array_rebuild_start()), with
	 * nothing to copy.
	 */
	bool copy = false, out = false;

	for (unsigned i = 0; i < s->info.nmembers; i++) {
		copy = copy || copying(s, i);
		out = out || s->m[i].mi.state != GRAID_MEMBER_ACTIVE;
	}
	if (s->broken)
		return "failed";
	if (copy)
		return "recovering";
	if (s->info.unclean)
		return "resync";
	if (s->scrubs)
		return "check";
	return out ? "degraded" : "active";
}

static void f_state(FILE *o, const char *name, const struct metrics_snap *s)
{
	static const char *const states[] = { "active", "degraded", "recovering", "resync",
					      "check", "failed" };
	const char *now = array_state(s);

	for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
		start(o, name, s);
		fprintf(o, ",state=\"%s\"", states[k]);
		end_u(o, !strcmp(states[k], now));
	}
}

static void f_degraded(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.nmembers - roles_in(s, GRAID_MEMBER_ACTIVE));
}

static void f_blocks(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.size / 1024);
}

/* As md's sync_completed: the least advanced copy's share of the array, else all of it. */
static void f_blocks_synced(FILE *o, const char *name, const struct metrics_snap *s)
{
	double frac = 1;

	for (unsigned i = 0; i < s->info.nmembers; i++) {
		const struct graid_member_info *mi = &s->m[i].mi;

		if (!copying(s, i))
			continue;
		if (!mi->catchup_total)
			frac = 0;
		else if ((double)mi->catchup_done / (double)mi->catchup_total < frac)
			frac = (double)mi->catchup_done / (double)mi->catchup_total;
	}
	array_u(o, name, s, (uint64_t)((double)(s->info.size / 1024) * frac));
}

static void f_size(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.size);
}

static void f_used(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.used_bytes);
}

static void f_served(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->served);
}

static void f_unclean(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.unclean != 0);
}

static void f_resync_regions(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.resync_regions);
}

static void f_rebuild_running(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.rebuild_running != 0);
}

static void f_rebuild_error(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, (uint64_t)(s->info.rebuild_error < 0 ? -s->info.rebuild_error : 0));
}

/* A reshape (graid_array_grow()): running always; its amounts while one is recorded. */
static void f_reshape_running(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.reshape_running != 0);
}

static void f_reshape_error(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, (uint64_t)(s->info.reshape_error < 0 ? -s->info.reshape_error : 0));
}

static void f_reshape_done(FILE *o, const char *name, const struct metrics_snap *s)
{
	if (s->info.reshaping)
		array_u(o, name, s, s->info.reshape_done);
}

static void f_reshape_total(FILE *o, const char *name, const struct metrics_snap *s)
{
	if (s->info.reshaping)
		array_u(o, name, s, s->info.reshape_total);
}

/* Only while it runs at a measured rate: no figure rather than a made-up one. */
static void f_reshape_eta(FILE *o, const char *name, const struct metrics_snap *s)
{
	if (s->info.reshape_running && s->info.reshape_eta_sec != UINT64_MAX)
		array_u(o, name, s, s->info.reshape_eta_sec);
}

static void f_scrub_running(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->scrubs);
}

static void f_scrub_checkpoint(FILE *o, const char *name, const struct metrics_snap *s)
{
	start(o, name, s);
	end_d(o, s->scrub_ratio);
}

static void f_events(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->event_seq);
}

static void f_sb_events(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.events);
}

static void f_owner_epoch(FILE *o, const char *name, const struct metrics_snap *s)
{
	array_u(o, name, s, s->info.owner_epoch);
}

/* ---- roles and spares ---- */

static void f_member_state(FILE *o, const char *name, const struct metrics_snap *s)
{
	static const int states[] = { GRAID_MEMBER_ACTIVE, GRAID_MEMBER_FAILED,
				      GRAID_MEMBER_MISSING, GRAID_MEMBER_REBUILDING,
				      GRAID_MEMBER_SPARE, GRAID_MEMBER_UNREACHABLE };

	for (unsigned i = 0; i < s->nall; i++)
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
			start_member(o, name, s, i);
			fprintf(o, ",state=\"%s\"", member_state_name(states[k]));
			end_u(o, s->m[i].mi.state == states[k]);
		}
}

/* A member family of one value per role (and spare, where @p spares). */
#define MEMBER_FAMILY(fn, spares, expr)                                                        \
	static void fn(FILE *o, const char *name, const struct metrics_snap *s)                \
	{                                                                                      \
		for (unsigned i = 0; i < s->nall; i++) {                                       \
			const struct graid_member_info *mi = &s->m[i].mi;                      \
			if (!(spares) && !is_role(s, i))                                       \
				continue;                                                      \
			start_member(o, name, s, i);                                           \
			end_u(o, (expr));                                                      \
		}                                                                              \
	}

MEMBER_FAMILY(f_bad_blocks, false, mi->bad_blocks)
MEMBER_FAMILY(f_errors, true, mi->errors)
MEMBER_FAMILY(f_timeouts, true, mi->timeouts)
MEMBER_FAMILY(f_outages, false, mi->outages)
MEMBER_FAMILY(f_read_repaired, false, mi->read_repaired)

/*
 * Roles of checksummed arrays only: a 0 for an array that checks nothing would read as
 * "no mismatch found" where none could be.
 */
enum csum_count { CSUM_ALL, CSUM_TAG, CSUM_LOST };

static void f_csum(FILE *o, const char *name, const struct metrics_snap *s, enum csum_count c)
{
	if (!s->info.checksums)
		return;
	for (unsigned i = 0; i < s->info.nmembers && i < s->nall; i++) {
		const struct graid_member_info *mi = &s->m[i].mi;

		start_member(o, name, s, i);
		end_u(o, c == CSUM_TAG ? mi->checksum_tag_errors :
			 c == CSUM_LOST ? mi->checksum_lost_writes : mi->checksum_errors);
	}
}

static void f_csum_errors(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_csum(o, name, s, CSUM_ALL);
}

static void f_csum_tag_errors(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_csum(o, name, s, CSUM_TAG);
}

static void f_csum_lost_writes(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_csum(o, name, s, CSUM_LOST);
}

/* The copy families: only roles a rebuild or catch-up ran on since the open. */
static void f_copy(FILE *o, const char *name, const struct metrics_snap *s, bool total)
{
	for (unsigned i = 0; i < s->info.nmembers; i++) {
		const struct graid_member_info *mi = &s->m[i].mi;

		if (!mi->catchup_total && !copying(s, i))
			continue;
		start_member(o, name, s, i);
		end_u(o, total ? mi->catchup_total : mi->catchup_done);
	}
}

static void f_copy_done(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_copy(o, name, s, false);
}

static void f_copy_total(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_copy(o, name, s, true);
}

/* A replace in service: only roles being copied now (the copy has no history once swapped). */
static void f_replace(FILE *o, const char *name, const struct metrics_snap *s, int what)
{
	for (unsigned i = 0; i < s->info.nmembers; i++) {
		const struct graid_member_info *mi = &s->m[i].mi;

		if (what && !mi->replacing)
			continue;
		start_member(o, name, s, i);
		end_u(o, what == 0 ? (uint64_t)mi->replacing :
			 what == 1 ? mi->replace_done : mi->replace_total);
	}
}

static void f_replacing(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_replace(o, name, s, 0);
}

static void f_replace_done(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_replace(o, name, s, 1);
}

static void f_replace_total(FILE *o, const char *name, const struct metrics_snap *s)
{
	f_replace(o, name, s, 2);
}

static void f_copy_eta(FILE *o, const char *name, const struct metrics_snap *s)
{
	for (unsigned i = 0; i < s->info.nmembers; i++) {
		if (s->m[i].eta_s < 0)
			continue;
		start_member(o, name, s, i);
		end_d(o, s->m[i].eta_s);
	}
}

static void f_critical(FILE *o, const char *name, const struct metrics_snap *s)
{
	static const struct {
		const char *bit;
		unsigned mask;
	} bits[] = {
		{ "spare", GRAID_HEALTH_CRIT_SPARE },
		{ "temperature", GRAID_HEALTH_CRIT_TEMPERATURE },
		{ "reliability", GRAID_HEALTH_CRIT_RELIABILITY },
		{ "read_only", GRAID_HEALTH_CRIT_READ_ONLY },
		{ "backup", GRAID_HEALTH_CRIT_BACKUP },
		{ "pmr", GRAID_HEALTH_CRIT_PMR },
	};

	for (unsigned i = 0; i < s->nall; i++) {
		if (!s->m[i].health)
			continue;
		for (size_t k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
			start_member(o, name, s, i);
			fprintf(o, ",bit=\"%s\"", bits[k].bit);
			end_u(o, (s->m[i].h.critical_warning & bits[k].mask) != 0);
		}
	}
}

/* A health family: members whose health was read. */
#define HEALTH_FAMILY(fn, end, expr)                                                           \
	static void fn(FILE *o, const char *name, const struct metrics_snap *s)                \
	{                                                                                      \
		for (unsigned i = 0; i < s->nall; i++) {                                       \
			const struct graid_member_health *h = &s->m[i].h;                      \
			if (!s->m[i].health)                                                   \
				continue;                                                      \
			start_member(o, name, s, i);                                           \
			end(o, (expr));                                                        \
		}                                                                              \
	}

HEALTH_FAMILY(f_spare, end_d, h->available_spare / 100.0)
HEALTH_FAMILY(f_spare_threshold, end_d, h->spare_threshold / 100.0)
HEALTH_FAMILY(f_used_life, end_d, h->percent_used / 100.0)
HEALTH_FAMILY(f_media_errors, end_u, h->media_errors)
HEALTH_FAMILY(f_error_log, end_u, h->error_log_entries)
HEALTH_FAMILY(f_temperature, end_d, (double)h->temperature_c)

/* A holder shows its watch's last sample: how old it is says whether the watch keeps up. */
static void f_health_age(FILE *o, const char *name, const struct metrics_snap *s)
{
	for (unsigned i = 0; i < s->nall; i++) {
		uint64_t at = s->m[i].health_ns;

		if (!s->m[i].health)
			continue;
		start_member(o, name, s, i);
		end_d(o, s->now_ns > at ? (double)(s->now_ns - at) / 1e9 : 0.0);
	}
}

struct family {
	const char *name, *type, *help;
	void (*emit)(FILE *o, const char *name, const struct metrics_snap *s);
	bool health;             /* left out with GRAID_METRICS_NO_HEALTH */
};

static const struct family families[] = {
	{ "graid_array_info", "gauge", "Always 1: the array's UUID, RAID level and parity engine.",
	  f_info, false },
	{ "graid_disks", "gauge", "Member roles by state (as node_md_disks): active, failed, "
	  "down (missing, unreachable or being rebuilt), and hot spares.", f_disks, false },
	{ "graid_disks_required", "gauge", "Member roles of the array (as node_md_disks_required).",
	  f_disks_required, false },
	{ "graid_state", "gauge", "1 for the array's state (as node_md_state): active, degraded, "
	  "recovering, resync, check or failed.", f_state, false },
	{ "graid_degraded", "gauge", "Member roles not active (md's degraded).", f_degraded, false },
	{ "graid_blocks", "gauge", "Array size in 1 KiB blocks (as node_md_blocks).", f_blocks,
	  false },
	{ "graid_blocks_synced", "gauge", "1 KiB blocks in sync: the array's size times the least "
	  "advanced rebuild's share done (as node_md_blocks_synced).", f_blocks_synced, false },
	{ "graid_size_bytes", "gauge", "Usable bytes of the array.", f_size, false },
	{ "graid_used_bytes", "gauge", "Bytes of the array in regions written since create.",
	  f_used, false },
	{ "graid_served", "gauge", "1 when a holder that may write rendered the array (its jobs "
	  "can run), 0 for a read-only look (what the superblocks record).", f_served, false },
	{ "graid_unclean", "gauge", "1 while the array was not closed cleanly and its resync has "
	  "not run (or runs).", f_unclean, false },
	{ "graid_resync_regions", "gauge", "Write-intent bitmap regions a resync reads.",
	  f_resync_regions, false },
	{ "graid_rebuild_running", "gauge", "1 while the library's background rebuild is due or "
	  "runs.", f_rebuild_running, false },
	{ "graid_rebuild_error", "gauge", "The errno the last background rebuild stopped with; 0 "
	  "when it ended well or none ran.", f_rebuild_error, false },
	{ "graid_reshape_running", "gauge", "1 while a reshape (grow) moves the array's data.",
	  f_reshape_running, false },
	{ "graid_reshape_error", "gauge", "The errno the reshape stopped with; 0 while it runs or "
	  "none stopped.", f_reshape_error, false },
	{ "graid_reshape_done_bytes", "gauge", "Array bytes a recorded reshape has moved to the new "
	  "geometry.", f_reshape_done, false },
	{ "graid_reshape_total_bytes", "gauge", "Array bytes a recorded reshape moves in all.",
	  f_reshape_total, false },
	{ "graid_reshape_remaining_seconds", "gauge", "Estimated seconds the running reshape has "
	  "left, at the rate of the last seconds.", f_reshape_eta, false },
	{ "graid_scrub_running", "gauge", "Scrubs under way on the array's handle.",
	  f_scrub_running, false },
	{ "graid_scrub_checkpoint_ratio", "gauge", "How far an unfinished scrub got (0: none "
	  "unfinished).", f_scrub_checkpoint, false },
	{ "graid_events_total", "counter", "Events the array's handle sent (the last event's "
	  "sequence number).", f_events, false },
	{ "graid_superblock_events", "gauge", "Event counter of the array's superblocks.",
	  f_sb_events, false },
	{ "graid_owner_epoch", "gauge", "Owner epoch of the array (one more at each takeover by "
	  "another host).", f_owner_epoch, false },
	{ "graid_member_state", "gauge", "1 for the state of each member role and hot spare.",
	  f_member_state, false },
	{ "graid_member_bad_blocks", "gauge", "4 KiB blocks in the role's bad-block log.",
	  f_bad_blocks, false },
	{ "graid_member_errors_total", "counter", "I/O errors seen on the member since the open.",
	  f_errors, false },
	{ "graid_member_timeouts_total", "counter", "I/Os of the member given up on after the "
	  "array's I/O timeout.", f_timeouts, false },
	{ "graid_member_outages_total", "counter", "Times the role became unreachable.",
	  f_outages, false },
	{ "graid_member_read_repaired_total", "counter", "Blocks the role could not read that were "
	  "recomputed from redundancy and written back.", f_read_repaired, false },
	{ "graid_member_checksum_errors_total", "counter", "4 KiB blocks of the role that failed "
	  "their checksum when read (healed or not), since the open (checksummed arrays only).",
	  f_csum_errors, false },
	{ "graid_member_checksum_tag_errors_total", "counter", "Of those, the blocks whose repair "
	  "found the data right and only the tag wrong.", f_csum_tag_errors, false },
	{ "graid_member_checksum_lost_writes_total", "counter", "Of those, the blocks found "
	  "stale by their write generation: writes the drive acknowledged and lost.",
	  f_csum_lost_writes, false },
	{ "graid_member_rebuild_done_bytes", "gauge", "Bytes the role's current or last rebuild or "
	  "catch-up copied.", f_copy_done, false },
	{ "graid_member_rebuild_total_bytes", "gauge", "Bytes the role's current or last rebuild "
	  "or catch-up copies in all.", f_copy_total, false },
	{ "graid_member_rebuild_remaining_seconds", "gauge", "Estimated seconds the role's rebuild "
	  "or catch-up has left, at the rate of the last minutes.", f_copy_eta, false },
	{ "graid_member_replacing", "gauge", "1 while the role is copied onto a new device with "
	  "its member in service (replace in service).", f_replacing, false },
	{ "graid_member_replace_done_bytes", "gauge", "Bytes of the role a replace in service "
	  "copied so far.", f_replace_done, false },
	{ "graid_member_replace_total_bytes", "gauge", "Bytes of the role a replace in service "
	  "copies in all.", f_replace_total, false },
	{ "graid_member_critical_warning", "gauge", "The drive's NVMe critical warning bits.",
	  f_critical, true },
	{ "graid_member_available_spare_ratio", "gauge", "The drive's available spare capacity.",
	  f_spare, true },
	{ "graid_member_available_spare_threshold_ratio", "gauge", "The drive's threshold for its "
	  "available spare.", f_spare_threshold, true },
	{ "graid_member_life_used_ratio", "gauge", "The drive's percentage used, as a ratio (may "
	  "pass 1).", f_used_life, true },
	{ "graid_member_media_errors_total", "counter", "The drive's unrecovered media errors "
	  "over its life.", f_media_errors, true },
	{ "graid_member_error_log_entries_total", "counter", "The drive's error log entries over "
	  "its life.", f_error_log, true },
	{ "graid_member_temperature_celsius", "gauge", "The drive's composite temperature.",
	  f_temperature, true },
	{ "graid_member_health_age_seconds", "gauge", "How old the drive health sample above is "
	  "(a holder's: its health watch's last; a read-only look's: 0, read now).",
	  f_health_age, true },
};

static void metrics_render(FILE *out, const struct metrics_snap *s, unsigned n, unsigned flags)
{
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct family *f = &families[k];

		if (f->health && (flags & GRAID_METRICS_NO_HEALTH))
			continue;
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
		for (unsigned i = 0; i < n; i++)
			f->emit(out, f->name, &s[i]);
	}
	metrics_stats_families(out, s, n);
}

static int metrics_check_names(struct graid_array *const *arrays, const char *const *names,
			       unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const char *nm = names ? names[i] : NULL;

		if (!arrays[i])
			return -EINVAL;
		for (unsigned j = 0; j < i; j++)
			if (arrays[j] == arrays[i])
				return -EINVAL;
		if (!nm)
			continue;
		if (!*nm || strlen(nm) >= sizeof(((struct metrics_snap *)0)->label))
			return -EINVAL;
		for (const char *p = nm; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -EINVAL;
	}
	return 0;
}

GRAID_API int graid_metrics_write(FILE *out, struct graid_array *const *arrays,
				  const char *const *names, unsigned n, unsigned flags)
{
	struct metrics_snap *s;
	int rc = 0;

	if (!out || (n && !arrays) || (flags & ~GRAID_METRICS_NO_HEALTH))
		return -EINVAL;
	if (!n)
		return 0;
	rc = metrics_check_names(arrays, names, n);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "metrics: a NULL array, an array given twice, or a bad "
					  "name (empty, too long or with a control character)");
		return rc;
	}
	s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (unsigned i = 0; i < n && !rc; i++) {
		if (names && names[i])
			snprintf(s[i].label, sizeof(s[i].label), "%s", names[i]);
		rc = metrics_snap_take(&s[i], arrays[i], flags);
	}
	/* Two arrays of one UUID (a look and a handle) would give the same series twice. */
	for (unsigned i = 0; i < n && !rc; i++)
		for (unsigned j = 0; j < i && !rc; j++)
			if (!strcmp(s[i].label, s[j].label)) {
				graid__log(GRAID_LOG_ERR, "metrics: two arrays labelled \"%s\"",
					   s[i].label);
				rc = -EINVAL;
			}
	if (!rc) {
		metrics_render(out, s, n, flags);
		if (fflush(out) || ferror(out))
			rc = -EIO;
	}
	for (unsigned i = 0; i < n; i++)
		metrics_snap_free(&s[i]);
	free(s);
	return rc;
}
