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

#ifdef URA_DETERMINISTIC
/* The deterministic build (runtime/det.c). init: reads the seed (cfg's
 * reserved_[0], URA_SEED) and allocates; -EINVAL, -ENOMEM. start: runs
 * every worker on one thread (ura__workers_start's stand-in; stopped by
 * ura__workers_stop). fini: logs the trace hash and frees. */
int ura__det_init(ura_system *sys, const ura_config *cfg);
int ura__det_start(ura_system *sys);
void ura__det_fini(ura_system *sys);
#endif

#endif
