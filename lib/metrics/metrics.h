/* SPDX-License-Identifier: MIT */
/*
 * Metrics, the readers (ura.h's "Metrics"): what the workers wrote
 * (core/metrics.h) summed and copied out (read.c), rendered as Prometheus
 * or OpenMetrics text (render.c), and served over HTTP by actors of the
 * system itself (http.c). The layer above the actors: the exporter is one.
 */
#ifndef URA_METRICS_H
#define URA_METRICS_H

#include <stddef.h>

#include "util/util.h"

/* http.c: a request head (h[0 .. len), the request line and its header
 * lines): 0 for GET /metrics, 1 for HEAD of it, else the HTTP status to
 * answer (400, 404, 405). *om: its Accept names OpenMetrics. */
int ura__http_head(const char *h, size_t len, int *om);

#endif
