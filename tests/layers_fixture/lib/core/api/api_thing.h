/* SPDX-License-Identifier: MIT */
/* The highest layer's header, which no lower layer may include. */
int api_thing(void);
