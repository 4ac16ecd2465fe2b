/* SPDX-License-Identifier: MIT */
/* The lowest layer's header, which every layer may include. */
int common_thing(void);
