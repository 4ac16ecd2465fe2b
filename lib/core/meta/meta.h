/* SPDX-License-Identifier: MIT */
/*
 * Every header of the meta layer's array-state modules at once, for files that use several:
 * it declares nothing itself. Each module's calls are in its own header.
 */
#ifndef LIBGRAID_CORE_META_H
#define LIBGRAID_CORE_META_H

#include "meta/array_flush.h"
#include "meta/array_meta.h"
#include "meta/array_readerr.h"
#include "meta/events.h"
#include "meta/member_fail.h"

#endif /* LIBGRAID_CORE_META_H */
