/* SPDX-License-Identifier: MIT */
/* graidctl's JSON reports, built with json-c (as nvme-cli does) and printed in one go. */
#ifndef GCTL_JSON_H
#define GCTL_JSON_H

#include <stdint.h>
#include <stdio.h>

#define GCTL_JSON_MAX_DEPTH 16

struct json_object;

/*
 * Values are added as they come; inside an object each call names its key, inside an
 * array the key is NULL. gctl_json_finish() prints the document, indented two spaces a
 * level, always valid UTF-8 (a byte of a path that is not UTF-8 becomes U+FFFD).
 */
struct gctl_json {
	FILE *f;
	struct json_object *root;                    /* the document's one top-level value */
	struct json_object *open[GCTL_JSON_MAX_DEPTH]; /* open objects and arrays, innermost last */
	int depth;
	int bad;                            /* misuse seen: too deep, unbalanced, key misuse */
};

void gctl_json_init(struct gctl_json *j, FILE *f);
void gctl_json_object_begin(struct gctl_json *j, const char *key);
void gctl_json_object_end(struct gctl_json *j);
void gctl_json_array_begin(struct gctl_json *j, const char *key);
void gctl_json_array_end(struct gctl_json *j);
void gctl_json_string(struct gctl_json *j, const char *key, const char *value);
void gctl_json_uint(struct gctl_json *j, const char *key, uint64_t value);
void gctl_json_int(struct gctl_json *j, const char *key, int64_t value);
void gctl_json_double(struct gctl_json *j, const char *key, double value);
void gctl_json_bool(struct gctl_json *j, const char *key, int value);
void gctl_json_null(struct gctl_json *j, const char *key);
/* A value parsed elsewhere (a holder's reply), shared, not copied; NULL: null. */
void gctl_json_value(struct gctl_json *j, const char *key, struct json_object *v);
/*
 * Prints the document and a newline, and frees it; 0 if it was well formed, -EINVAL
 * otherwise (nothing printed), -ENOMEM.
 */
int gctl_json_finish(struct gctl_json *j);

#endif /* GCTL_JSON_H */
