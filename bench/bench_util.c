/* SPDX-License-Identifier: MIT */
/* Helpers the benchmarks share: clocks, medians, aligned memory, random fill, run header,
 * the load average, and a watchdog against a hung library. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double bench_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void *bench_alloc(size_t align, size_t size)
{
	void *p;

	return posix_memalign(&p, align, size ? size : align) ? NULL : p;
}

void bench_fill_random(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed | 1, *w = buf;
	size_t i;

	/* Word at a time: filling hundreds of MiB byte-wise would dominate a quick run. */
	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		*w++ = x * 0x2545f4914f6cdd1dull;
	}
	for (; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)(x >> (i % 8 * 8));
}

void bench_cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

void bench_loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a1, a5, a15;

	snprintf(buf, len, "unknown");
	if (f && fscanf(f, "%lf %lf %lf", &a1, &a5, &a15) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", a1, a5, a15);
	if (f)
		fclose(f);
}

void bench_print_header(FILE *out, int argc, char **argv)
{
	char date[64], cpu[256], load[64];
	time_t t = time(NULL);

	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
	bench_cpu_model(cpu, sizeof(cpu));
	bench_loadavg(load, sizeof(load));
	/* The load says how far to trust the figures on a shared machine. */
	fprintf(out, "# date: %s\n# cpu: %s (%ld online), load average %s\n# command:", date,
		cpu, sysconf(_SC_NPROCESSORS_ONLN), load);
	for (int i = 0; i < argc; i++)
		fprintf(out, " %s", argv[i]);
	fputc('\n', out);
}

/* Other work on a shared machine moves every figure: print the load beside them. */
void bench_print_loadavg(const char *when)
{
	char buf[64] = "";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f && fgets(buf, sizeof(buf), f))
		printf("# load average %s: %.*s\n", when, (int)strcspn(buf, " \n"), buf);
	if (f)
		fclose(f);
}

/* A hung library must not hang the benchmark: say where it stuck, and stop. */
static const char *volatile bench_watch_prog = "bench";
static const char *volatile bench_watch_phase = "start";

/* Only write(2) here: it runs in the signal handler. */
static void bench_watch_say(const char *s)
{
	ssize_t rc = write(2, s, strlen(s));

	(void)rc;
}

static void bench_watch_alarm(int sig)
{
	(void)sig;
	bench_watch_say("\n");
	bench_watch_say(bench_watch_prog);
	bench_watch_say(": no progress, giving up (library hang?) during: ");
	bench_watch_say(bench_watch_phase);
	bench_watch_say("\n");
	_exit(2);
}

void bench_watch_init(const char *prog)
{
	bench_watch_prog = prog;
	signal(SIGALRM, bench_watch_alarm);
}

void bench_watch(const char *phase, double expect_secs)
{
	bench_watch_phase = phase;
	alarm((unsigned)(expect_secs * 4) + 60);
}
