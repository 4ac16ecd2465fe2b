/* SPDX-License-Identifier: MIT */
/* Helpers of the checksum suites: a member's layout and tags read from its file, events kept. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include <criterion/criterion.h>

#include "csumutil.h"

static uint64_t cu_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void cu_geom_read(struct cu_geom *g, struct graid_array *a, const char *member0)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t sb[4096];
	int fd = open(member0, O_RDONLY);
	uint64_t rows;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
	cr_assert_eq(graid_array_info(a, &info), 0);
	memset(g, 0, sizeof(*g));
	g->level = info.level;
	g->n = info.nmembers;
	g->chunk = info.chunk_bytes;
	g->bpc = g->chunk / CU_BLOCK;
	memcpy(g->uuid, info.uuid, 16);
	g->data_offset = cu_le64(sb + 0x50);
	g->data_bytes = cu_le64(sb + 0x58);
	g->mblocks = g->data_bytes / CU_BLOCK;
	g->tag_offset = g->data_offset + g->data_bytes;
	g->tag_bytes = (g->mblocks + 511) / 512 * CU_BLOCK;
	g->ablocks = info.size / CU_BLOCK;
	rows = g->data_bytes / g->chunk;
	switch (g->level) {
	case 1:
		g->units = rows;
		g->tolerance = g->n - 1;
		break;
	case 5:
		g->units = rows;
		g->tolerance = 1;
		break;
	case 6:
		g->units = rows;
		g->tolerance = 2;
		break;
	case 10:
		g->units = g->n * rows / 2;
		g->tolerance = 1;
		break;
	default:
		cr_assert_fail("level %d has no checksums", g->level);
	}
}

int64_t cu_map(const struct cu_geom *g, unsigned member, uint64_t mblock)
{
	uint64_t row = mblock / g->bpc, in = mblock % g->bpc;
	unsigned n = g->n, p;

	switch (g->level) {
	case 1:
		return (int64_t)mblock;
	case 10: {
		uint64_t slot = row * n + member;

		if (slot / 2 >= g->units)
			return CU_UNUSED;
		return (int64_t)(slot / 2 * g->bpc + in);
	}
	case 5:
		p = (n - 1) - (unsigned)(row % n);
		if (member == p)
			return CU_P;
		return (int64_t)((row * (n - 1) + (member + n - p - 1) % n) * g->bpc + in);
	default:
		p = (n - 1) - (unsigned)(row % n);
		if (member == p)
			return CU_P;
		if (member == (p + 1) % n)
			return CU_Q;
		return (int64_t)((row * (n - 2) + (member + 2 * n - p - 2) % n) * g->bpc + in);
	}
}

unsigned cu_unit_slots(const struct cu_geom *g, uint64_t unit, unsigned *member,
		       uint64_t *mblock0)
{
	if (g->level == 10) {
		for (unsigned c = 0; c < 2; c++) {
			uint64_t slot = 2 * unit + c;

			member[c] = (unsigned)(slot % g->n);
			mblock0[c] = slot / g->n * g->bpc;
		}
		return 2;
	}
	for (unsigned m = 0; m < g->n; m++) {
		member[m] = m;
		mblock0[m] = unit * g->bpc;
	}
	return g->n;
}

uint32_t cu_tag_crc(const struct cu_geom *g, unsigned role, uint64_t mblock, const uint8_t *data)
{
	uint8_t key[32] = { 0 };
	uint32_t crc;

	memcpy(key, g->uuid, 16);
	for (int i = 0; i < 4; i++)
		key[16 + i] = (uint8_t)(role >> (8 * i));
	for (int i = 0; i < 8; i++)
		key[24 + i] = (uint8_t)(mblock >> (8 * i));
	/* ISA-L neither starts from nor ends with the inversion: both are ours. */
	crc = crc32_iscsi(key, sizeof(key), 0xFFFFFFFFu);
	crc = crc32_iscsi((unsigned char *)data, CU_BLOCK, crc);
	return crc ^ 0xFFFFFFFFu;
}

bool cu_crc_self_check(void)
{
	unsigned char s[] = "123456789";

	return (crc32_iscsi(s, 9, 0xFFFFFFFFu) ^ 0xFFFFFFFFu) == 0xE3069283u;
}

void cu_events_init(struct cu_events *e)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->mu, NULL);
}

void cu_events_reset(struct cu_events *e)
{
	pthread_mutex_lock(&e->mu);
	e->n = 0;
	e->first_seq = e->ring_max = 0;
	memset(e->by_type, 0, sizeof(e->by_type));
	pthread_mutex_unlock(&e->mu);
}

void cu_events_free(struct cu_events *e)
{
	free(e->v);
	pthread_mutex_destroy(&e->mu);
}

static void cu_events_add(struct cu_events *e, const struct graid_event *ev)
{
	if (ev->type >= 0 && ev->type < 64)
		e->by_type[ev->type]++;
	if (ev->type == GRAID_EVENT_CSUM_ERROR || ev->type == GRAID_EVENT_CSUM_TAG_ERROR ||
	    ev->type == GRAID_EVENT_CSUM_UNVERIFIED || ev->type == GRAID_EVENT_CSUM_LOST_WRITE) {
		if (e->n == e->cap) {
			e->cap = e->cap ? 2 * e->cap : 1024;
			e->v = realloc(e->v, e->cap * sizeof(*e->v));
			if (!e->v)
				abort();
		}
		e->v[e->n++] = (struct cu_ev){ .type = ev->type, .member = ev->member,
					       .error = ev->error, .block = ev->stripe,
					       .count = ev->count ? ev->count : 1 };
	}
}

void cu_events_cb(void *arg, const struct graid_event *ev)
{
	struct cu_events *e = arg;

	pthread_mutex_lock(&e->mu);
	if (!e->first_seq)
		e->first_seq = ev->seq;
	if (ev->seq > e->ring_max)
		cu_events_add(e, ev);
	pthread_mutex_unlock(&e->mu);
}

void cu_events_merge_ring(struct cu_events *e, const struct graid_event *v, unsigned n)
{
	pthread_mutex_lock(&e->mu);
	for (unsigned i = 0; i < n; i++) {
		if (e->first_seq && v[i].seq >= e->first_seq)
			continue;
		cu_events_add(e, &v[i]);
		if (v[i].seq > e->ring_max)
			e->ring_max = v[i].seq;
	}
	pthread_mutex_unlock(&e->mu);
}

bool cu_events_cover(struct cu_events *e, int type, int error, unsigned member, uint64_t mblock)
{
	bool found = false;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n && !found; i++) {
		const struct cu_ev *v = &e->v[i];

		found = v->type == type && v->error == error && v->member == (int)member &&
			mblock >= v->block && mblock < v->block + v->count;
	}
	pthread_mutex_unlock(&e->mu);
	return found;
}
