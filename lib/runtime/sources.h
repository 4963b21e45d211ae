/* SPDX-License-Identifier: MIT */
/*
 * The worker loop's sources of work that are not actors, in the order a
 * pass services them (runtime/worker.c says what each must provide); the
 * deterministic scheduler (runtime/det.c) walks the same list.
 */
#ifndef URA_RUNTIME_SOURCES_H
#define URA_RUNTIME_SOURCES_H

#include "core/outbox.h"
#include "io/io.h"
#include "io/signals.h"
#include "time/timers.h"

/* X(name, sends): `sends` when servicing it moves quiescence counters
 * (it posts or drops counted messages): the worker is marked busy first,
 * so the counters only move while it is visibly busy. I/O completions do
 * not need it (see ura__io_service). */
#define SOURCES(X)              \
	X(inbox, 1)             \
	X(timers, 1)            \
	X(signals, 1)           \
	X(io, 0)

#endif
