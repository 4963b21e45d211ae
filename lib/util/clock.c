/* SPDX-License-Identifier: MIT */
/* The virtual clock of the deterministic build (util/util.h); nothing in
 * the ordinary build. */
#include "util/util.h"

#ifdef URA_DETERMINISTIC
/* Starts far from 0 (ura__clock's "not read yet") at a multiple of 2^40
 * ns, as runtime/det.c realigns it for every system. */
_Atomic uint64_t ura__vclock = (uint64_t)1 << 40;
#else
/* ISO C wants a translation unit to declare something. */
typedef int ura__clock_unused;
#endif
