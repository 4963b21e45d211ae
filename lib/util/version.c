/* SPDX-License-Identifier: MIT */
/* The library's version, and the ABI's sizes pinned (ura.h's "ABI"). */
#include "util/util.h"

URA_API unsigned ura_version(void)
{
	return URA_VERSION_NUMBER;
}

URA_API const char *ura_version_string(void)
{
	return URA_VERSION_STRING;
}

/*
 * Within a soname these never change: a new field takes words from the
 * struct's reserved_ space, and the sizes below must still hold. A
 * failure here means a struct grew (or shrank) and broke every caller
 * built against the previous header.
 */
_Static_assert(sizeof(ura_value) == 16, "ura_value is 16 bytes");
_Static_assert(sizeof(ura_ref) == 8, "ura_ref is 8 bytes");
_Static_assert(sizeof(ura_case) == 56, "ura_case is 56 bytes");
_Static_assert(sizeof(ura_behavior) == 56, "ura_behavior is 56 bytes");
_Static_assert(sizeof(ura_class) == 96, "ura_class is 96 bytes");
_Static_assert(sizeof(ura_config) == 224, "ura_config is 224 bytes");
_Static_assert(sizeof(ura_stats) == 488, "ura_stats is 488 bytes");
_Static_assert(sizeof(ura_worker_metrics) == 520, "ura_worker_metrics is 520 bytes");
_Static_assert(sizeof(ura_class_metrics) == 400, "ura_class_metrics is 400 bytes");
_Static_assert(sizeof(ura_spawn_opts) == 64, "ura_spawn_opts is 64 bytes");
_Static_assert(sizeof(ura_request_opts) == 72, "ura_request_opts is 72 bytes");
_Static_assert(sizeof(ura_promise) == 16, "ura_promise is 16 bytes");
_Static_assert(sizeof(ura_io_req) == 120, "ura_io_req is 120 bytes");
_Static_assert(sizeof(ura_snap_class) == 72, "ura_snap_class is 72 bytes");
_Static_assert(sizeof(ura_snap_opts) == 72, "ura_snap_opts is 72 bytes");
_Static_assert(sizeof(ura_snap_info) == 168, "ura_snap_info is 168 bytes");
