/* SPDX-License-Identifier: MIT */
/*
 * The CUDA engine and the core together, on the emulated runtime (the engine built as the
 * cuda plugin over tests/gpu/cuda_rt_emul.c): a context lost in the middle of a batch costs
 * one line from the engine and one from the core, and that batch and every later one come
 * back correct from the CPU engine, counted as failovers, the engine no longer asked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#define NDATA 4
#define NBLK (NDATA + 2)
#define LEN 4096
#define NSTRIPES 4
#define BATCHES 6

static unsigned lines;

static void core_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= GRAID_LOG_WARNING) {
		lines++;
		fprintf(stderr, "log %d: %s\n", level, msg);
	}
}

/* 0 if every stripe's P and Q are the reference's. */
static int core_verify(uint8_t *const *blocks)
{
	static uint8_t copy[NBLK][LEN];
	uint8_t *ptr[NBLK];

	for (size_t s = 0; s < NSTRIPES; s++) {
		for (unsigned j = 0; j < NBLK; j++) {
			memcpy(copy[j], blocks[s * NBLK + j], LEN);
			ptr[j] = copy[j];
		}
		graid_gf_ref_gen(NDATA, 2, 0, LEN, ptr);
		if (memcmp(copy[NDATA], blocks[s * NBLK + NDATA], LEN) ||
		    memcmp(copy[NDATA + 1], blocks[s * NBLK + NDATA + 1], LEN))
			return -EBADMSG;
	}
	return 0;
}

int main(void)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	static uint8_t mem[NSTRIPES * NBLK][LEN];
	uint8_t *blocks[NSTRIPES * NBLK];
	struct graid_backend *be;
	uint64_t x = 12345;
	int rc, fail = 0;

	/* 4 KiB pieces: a batch is tens of launches; one in the middle of the second faults. */
	setenv("GRAID_CUDA_PIECE_KB", "4", 1);
	setenv("GRAID_CUDA_EMUL_STICKY_AFTER", "40", 1);
	graid_log_set(core_log, NULL, GRAID_LOG_DEBUG);
	rc = graid_backend_open("cuda", &be);
	if (rc) {
		printf("FAIL: the emulated cuda engine does not open: %s\n", graid_strerror(rc));
		return 1;
	}
	for (size_t i = 0; i < NSTRIPES * NBLK; i++)
		blocks[i] = mem[i];
	for (int b = 0; b < BATCHES; b++) {
		for (size_t i = 0; i < sizeof(mem); i++)
			((uint8_t *)mem)[i] = (uint8_t)((x = x * 6364136223846793005ull + 1) >> 56);
		rc = graid_parity_gen(be, NDATA, 2, LEN, NSTRIPES, blocks);
		if (rc || core_verify(blocks)) {
			printf("FAIL: batch %d: %s\n", b, rc ? graid_strerror(rc) : "wrong parity");
			fail = 1;
		}
		graid_backend_stats(be, &st);
		printf("batch %d: %llu failovers so far\n", b, (unsigned long long)st.failovers);
		/* The first batch runs on the device; from the faulting one on, all fail over. */
		if ((b == 0 && st.failovers) || (b > 1 && st.failovers != (uint64_t)b)) {
			printf("FAIL: %llu failovers after batch %d\n",
			       (unsigned long long)st.failovers, b);
			fail = 1;
		}
	}
	if (lines != 2) {
		printf("FAIL: %u warning or error lines, want 2 (the engine's, the core's)\n", lines);
		fail = 1;
	}
	graid_backend_close(be);
	printf("%s: lost context mid-batch, %d batches correct, %llu failovers, %u log lines\n",
	       fail ? "FAIL" : "ok", BATCHES, (unsigned long long)st.failovers, lines);
	return fail;
}
