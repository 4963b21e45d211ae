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

/* read.c: the mailbox-wait histogram of metered class `id` (its index in
 * ura_metrics_classes' order), summed over the workers into *out. */
void ura__metrics_class_wait_id(ura_system *sys, unsigned id, ura_hist *out);

/* http.c: what a request asks for. */
struct ura__http_req {
	int head_only;   /* HEAD */
	int om;          /* its Accept names OpenMetrics */
	int actors;      /* /actors (the top N), not /metrics */
	int by;          /* /actors?by=mailbox|handler_time|handled */
	unsigned n;      /* /actors?n=1..100 (default 10) */
};
/* Parses a request head (h[0 .. len): the request line and its header
 * lines) into *rq: 0, or the HTTP status to answer (400, 404, 405). */
int ura__http_head(const char *h, size_t len, struct ura__http_req *rq);

#endif
