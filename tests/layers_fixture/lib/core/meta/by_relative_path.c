/* SPDX-License-Identifier: MIT */
/* Reaches up to api by a path beside the file. */
#include <string.h>

#include "common/common_thing.h"
#include "meta/meta_thing.h"
#include "../api/api_thing.h"
