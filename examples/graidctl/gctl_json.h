/* SPDX-License-Identifier: MIT */
/* A tiny streaming JSON writer: enough for graidctl's reports, with correct string escaping. */
#ifndef GCTL_JSON_H
#define GCTL_JSON_H

#include <stdint.h>
#include <stdio.h>

#define GCTL_JSON_MAX_DEPTH 16

/*
 * Values are written as they come; inside an object each call names its key, inside an
 * array the key is NULL. Output is indented, two spaces a level, and always valid UTF-8.
 */
struct gctl_json {
	FILE *f;
	int depth;                          /* open objects and arrays */
	int count[GCTL_JSON_MAX_DEPTH];     /* values written at each depth (for commas) */
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
/* Ends the document with a newline; 0 if it was well formed, -EINVAL otherwise. */
int gctl_json_finish(struct gctl_json *j);

#endif /* GCTL_JSON_H */
