/* SPDX-License-Identifier: MIT */
/* Reaches up to api through the include path, in angle brackets. */
#include <sys/types.h>

#include <common/common_thing.h>
#include <api/api_thing.h>
