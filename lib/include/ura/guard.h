/* SPDX-License-Identifier: MIT */
/* Guards on behavior cases: included by ura.h. (Being written.) */
#ifndef URA_GUARD_H
#define URA_GUARD_H
#endif
