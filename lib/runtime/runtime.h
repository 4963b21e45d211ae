/* SPDX-License-Identifier: MIT */
/* The top layer: the worker threads (runtime/worker.c) and the system's
 * life (runtime/system.c). */
#ifndef URA_RUNTIME_H
#define URA_RUNTIME_H

#include "core/core.h"

/* Starts every worker thread and waits until each has its ring (or
 * failed: then all are stopped again and the first error returned). */
int ura__workers_start(ura_system *sys);
/* Sets shutdown, wakes and joins the workers. Idempotent. */
void ura__workers_stop(ura_system *sys);

#endif
