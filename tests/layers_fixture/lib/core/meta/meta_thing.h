/* SPDX-License-Identifier: MIT */
/* A middle layer's header: above engine, below api. */
int meta_thing(void);
