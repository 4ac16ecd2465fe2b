/* SPDX-License-Identifier: MIT */
/* The CPU engine (layer engine) reaching up to meta. */
#include "engine_local.h"
#include "common/common_thing.h"
#include "meta/meta_thing.h"
