/* SPDX-License-Identifier: MIT */
/* Sizes on the command line ("64K", "1G", "4096") and sizes in output ("1.50 GiB"). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "gctl.h"

/*
 * A decimal integer with an optional suffix K, M, G or T (any case; "KiB", "KB" and a
 * plain "B" too), all powers of 1024 as mdadm and fio read them. Fractions are refused
 * rather than rounded: a chunk or member size other than what the user typed is worse
 * than an error.
 */
int gctl_size_parse(const char *s, uint64_t *out)
{
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		break;
	}
	if (shift)
		end++;
	if (*end && strcasecmp(end, shift ? "ib" : "b") != 0 && strcasecmp(end, "b") != 0)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Exact units where the size is a whole number of them ("64 KiB"), two decimals otherwise. */
void gctl_size_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	double v = (double)bytes;

	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	if (u == 0 || (bytes & ((1ull << (10 * u)) - 1)) == 0)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
}
