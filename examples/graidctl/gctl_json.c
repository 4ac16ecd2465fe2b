/* SPDX-License-Identifier: MIT */
/*
 * graidctl's JSON (RFC 8259) through json-c, the library libnvme already brings and
 * nvme-cli writes its reports with: escaping, numbers and layout are json-c's. What it
 * does not do is kept here: paths are bytes, not text, so strings are made valid UTF-8
 * first, and doubles keep 15 significant digits (1.23 prints as 1.23, not 1.2299999999999999).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

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
 * A json-c string of @p s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD, so the document stays valid JSON (the raw path is lost, not the report).
 */
static struct json_object *json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), o = 0;
	struct json_object *v;
	char *buf = malloc(3 * len + 1); /* each bad byte grows to three */

	if (!buf)
		return NULL;
	while (*p) {
		size_t n = json_utf8_len(p);

		if (n == 0) {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
			continue;
		}
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	v = json_object_new_string_len(buf, (int)o);
	free(buf);
	return v;
}

/* Put @p v where the document is: the root, the open array, or the open object under @p key. */
static void json_put(struct gctl_json *j, const char *key, struct json_object *v)
{
	struct json_object *in = j->depth ? j->open[j->depth - 1] : NULL;

	if (!v) {
		j->bad = 1;
		return;
	}
	if (!in) {
		if (j->root || key) {
			j->bad = 1; /* a second top-level value, or a key outside any object */
			json_object_put(v);
			return;
		}
		j->root = v;
	} else if (json_object_is_type(in, json_type_object)) {
		if (!key) {
			j->bad = 1;
			json_object_put(v);
			return;
		}
		json_object_object_add(in, key, v);
	} else {
		if (key)
			j->bad = 1;
		json_object_array_add(in, v);
	}
}

static void json_open(struct gctl_json *j, const char *key, struct json_object *c)
{
	if (j->depth >= GCTL_JSON_MAX_DEPTH) {
		j->bad = 1;
		json_object_put(c);
		return;
	}
	json_put(j, key, c);
	if (c)
		j->open[j->depth++] = c;
}

static void json_close(struct gctl_json *j, enum json_type t)
{
	if (j->depth == 0 || !json_object_is_type(j->open[j->depth - 1], t)) {
		j->bad = 1;
		return;
	}
	j->depth--;
}

void gctl_json_object_begin(struct gctl_json *j, const char *key)
{
	json_open(j, key, json_object_new_object());
}

void gctl_json_object_end(struct gctl_json *j)
{
	json_close(j, json_type_object);
}

void gctl_json_array_begin(struct gctl_json *j, const char *key)
{
	json_open(j, key, json_object_new_array());
}

void gctl_json_array_end(struct gctl_json *j)
{
	json_close(j, json_type_array);
}

void gctl_json_string(struct gctl_json *j, const char *key, const char *value)
{
	json_put(j, key, json_text(value));
}

void gctl_json_uint(struct gctl_json *j, const char *key, uint64_t value)
{
	json_put(j, key, json_object_new_uint64(value));
}

void gctl_json_int(struct gctl_json *j, const char *key, int64_t value)
{
	json_put(j, key, json_object_new_int64(value));
}

/* JSON has no NaN or infinity: those become null. */
void gctl_json_double(struct gctl_json *j, const char *key, double value)
{
	char text[32];

	if (!isfinite(value)) {
		gctl_json_null(j, key);
		return;
	}
	snprintf(text, sizeof(text), "%.15g", value);
	json_put(j, key, json_object_new_double_s(value, text));
}

void gctl_json_bool(struct gctl_json *j, const char *key, int value)
{
	json_put(j, key, json_object_new_boolean(value != 0));
}

void gctl_json_null(struct gctl_json *j, const char *key)
{
	struct json_object *in = j->depth ? j->open[j->depth - 1] : NULL;

	/* json-c's null is a NULL value: json_put() would take it for a failed allocation. */
	if (in && json_object_is_type(in, json_type_object) && key)
		json_object_object_add(in, key, NULL);
	else if (in && json_object_is_type(in, json_type_array) && !key)
		json_object_array_add(in, NULL);
	else
		j->bad = 1;
}

void gctl_json_value(struct gctl_json *j, const char *key, struct json_object *v)
{
	if (!v)
		gctl_json_null(j, key);
	else
		json_put(j, key, json_object_get(v));
}

int gctl_json_finish(struct gctl_json *j)
{
	const char *text;
	int rc = 0;

	if (j->bad || j->depth != 0 || !j->root) {
		rc = -EINVAL;
	} else {
		text = json_object_to_json_string_ext(j->root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_SPACED |
							       JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!text)
			rc = -ENOMEM;
		else
			fprintf(j->f, "%s\n", text);
	}
	fflush(j->f);
	json_object_put(j->root);
	j->root = NULL;
	return rc;
}
