/* SPDX-License-Identifier: MIT */
/* A header beside the engine's files, which they include by its bare name. */
int engine_local(void);
