/* SPDX-License-Identifier: MIT */
/* A label value written as the text exposition format wants it (every family uses it). */
#include "metrics/metrics.h"

/*
 * The length of the well-formed UTF-8 sequence at @p p (1 to 4), or 0 where it is not one:
 * a stray continuation byte, a sequence cut short, an overlong form, a surrogate or a code
 * point past U+10FFFF (the table of Unicode 3.9, "Well-Formed UTF-8 Byte Sequences").
 */
static unsigned utf8_len(const unsigned char *p)
{
	unsigned n, lo = 0x80, hi = 0xbf;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (unsigned i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * The exposition is UTF-8 and a parser refuses the whole text at one bad byte, while a
 * device path may hold any byte but '\0': each byte that starts no well-formed sequence is
 * written as U+FFFD, so one odd file name costs its own label's exactness, not the scrape.
 */
void metrics_label(FILE *out, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	while (*p) {
		unsigned n = utf8_len(p);

		if (!n) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		if (*p == '\\' || *p == '"')
			fputc('\\', out);
		if (*p == '\n')
			fputs("\\n", out);
		else
			fwrite(p, 1, n, out);
		p += n;
	}
}
