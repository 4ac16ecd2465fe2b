/* SPDX-License-Identifier: MIT */
/* A tiny streaming JSON writer (RFC 8259): escaping, commas and indentation done in one place. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gctl_json.h"

void gctl_json_init(struct gctl_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
static size_t json_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/*
 * Paths and device names are bytes, not text: a byte that is not part of valid UTF-8 is
 * written as U+FFFD so the document stays valid JSON (the raw path is lost, not the report).
 */
static void json_write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	while (*p) {
		size_t n;

		switch (*p) {
		case '"':
			fputs("\\\"", f);
			p++;
			continue;
		case '\\':
			fputs("\\\\", f);
			p++;
			continue;
		case '\b':
			fputs("\\b", f);
			p++;
			continue;
		case '\f':
			fputs("\\f", f);
			p++;
			continue;
		case '\n':
			fputs("\\n", f);
			p++;
			continue;
		case '\r':
			fputs("\\r", f);
			p++;
			continue;
		case '\t':
			fputs("\\t", f);
			p++;
			continue;
		default:
			break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
			p++;
			continue;
		}
		n = json_utf8_len(p);
		if (n == 0) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* Comma, newline, indent and key before a value; keys belong in objects only. */
static void json_prefix(struct gctl_json *j, const char *key)
{
	if (j->depth == 0 && j->count[0] > 0)
		j->bad = 1; /* a second top-level value: not one document */
	if (j->count[j->depth]++ > 0)
		fputc(',', j->f);
	if (j->depth > 0) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key) {
		json_write_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void json_open(struct gctl_json *j, const char *key, char c)
{
	json_prefix(j, key);
	fputc(c, j->f);
	if (j->depth + 1 >= GCTL_JSON_MAX_DEPTH) {
		j->bad = 1;
		return;
	}
	j->count[++j->depth] = 0;
}

static void json_close(struct gctl_json *j, char c)
{
	if (j->depth == 0) {
		j->bad = 1;
		return;
	}
	if (j->count[j->depth] > 0) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth - 1; i++)
			fputs("  ", j->f);
	}
	j->depth--;
	fputc(c, j->f);
}

void gctl_json_object_begin(struct gctl_json *j, const char *key)
{
	json_open(j, key, '{');
}

void gctl_json_object_end(struct gctl_json *j)
{
	json_close(j, '}');
}

void gctl_json_array_begin(struct gctl_json *j, const char *key)
{
	json_open(j, key, '[');
}

void gctl_json_array_end(struct gctl_json *j)
{
	json_close(j, ']');
}

void gctl_json_string(struct gctl_json *j, const char *key, const char *value)
{
	json_prefix(j, key);
	json_write_string(j->f, value);
}

void gctl_json_uint(struct gctl_json *j, const char *key, uint64_t value)
{
	json_prefix(j, key);
	fprintf(j->f, "%" PRIu64, value);
}

void gctl_json_int(struct gctl_json *j, const char *key, int64_t value)
{
	json_prefix(j, key);
	fprintf(j->f, "%" PRId64, value);
}

/* JSON has no NaN or infinity: those become null. 15 digits print 1.23 as 1.23. */
void gctl_json_double(struct gctl_json *j, const char *key, double value)
{
	json_prefix(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.15g", value);
	else
		fputs("null", j->f);
}

void gctl_json_bool(struct gctl_json *j, const char *key, int value)
{
	json_prefix(j, key);
	fputs(value ? "true" : "false", j->f);
}

void gctl_json_null(struct gctl_json *j, const char *key)
{
	json_prefix(j, key);
	fputs("null", j->f);
}

int gctl_json_finish(struct gctl_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
	return (j->bad || j->depth != 0 || j->count[0] != 1) ? -EINVAL : 0;
}
