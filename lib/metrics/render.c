/* SPDX-License-Identifier: MIT */
/*
 * The metrics as Prometheus text (exposition format 0.0.4) or OpenMetrics
 * 1.0 text: the same families, spelt as each wants them. Times are in
 * seconds, as both formats ask. A family's samples are labelled by worker
 * and node, or by class: never by actor, so the size is workers x
 * families + classes x families whatever the number of actors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "metrics/metrics.h"

struct out {
	char *buf;
	size_t cap, len; /* len counts what did not fit too (snprintf's way) */
	int om;          /* OpenMetrics */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->len < o->cap ? o->cap - o->len : 0;
	int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(struct out *o, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			put(o, "\\\\");
		else if (*s == '"')
			put(o, "\\\"");
		else if (*s == '\n')
			put(o, "\\n");
		else
			put(o, "%c", *s);
	}
}

enum kind { COUNTER, GAUGE, HISTOGRAM };

/* The family's header. A counter's samples end in _total; its family
 * name does too in Prometheus text, not in OpenMetrics. */
static void family(struct out *o, const char *name, enum kind k, const char *help)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	const char *suffix = k == COUNTER && !o->om ? "_total" : "";
	put(o, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, types[k]);
}

static void worker_labels(struct out *o, const ura_worker_metrics *w)
{
	put(o, "{worker=\"%u\",node=\"%u\"}", w->id, w->node);
}

static void class_labels(struct out *o, const ura_class_metrics *c)
{
	put(o, "{class=\"");
	put_label(o, c->name);
	put(o, "\"}");
}

static void seconds(struct out *o, uint64_t ns)
{
	put(o, " %llu.%09llu\n", (unsigned long long)(ns / URA_SEC),
	    (unsigned long long)(ns % URA_SEC));
}

/* A histogram's samples, cumulative, with the labels' opening `lab`
 * (e.g. `worker="0",node="0"`; "" for none). */
static void hist(struct out *o, const char *name, const char *lab, const ura_hist *h)
{
	uint64_t cum = 0;
	const char *sep = *lab ? "," : "";
	for (unsigned i = 0; i < URA_HIST_BUCKETS; i++) {
		cum += h->bucket[i];
		uint64_t b = URA_HIST_BOUND(i);
		put(o, "%s_bucket{%s%sle=\"%llu.%09llu\"} %llu\n", name, lab, sep,
		    (unsigned long long)(b / URA_SEC), (unsigned long long)(b % URA_SEC),
		    (unsigned long long)cum);
	}
	/* +Inf is the count: the values above the last bound are in it. A
	 * reader may see count a little ahead of the buckets it summed just
	 * before; never behind (cum <= count is what promtool checks). */
	uint64_t count = h->count > cum ? h->count : cum;
	put(o, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lab, sep, (unsigned long long)count);
	put(o, "%s_sum{%s}", name, lab);
	seconds(o, h->sum_ns);
	put(o, "%s_count{%s} %llu\n", name, lab, (unsigned long long)count);
}

#define NW_MAX 1024u

struct wfield {
	const char *name;
	enum kind k;
	const char *help;
	size_t off;
	int secs;
};

#define WF(n, k, h, f, s) { "ura_worker_" n, k, h, offsetof(ura_worker_metrics, f), s }
static const struct wfield wfields[] = {
	WF("busy_seconds", COUNTER, "Time neither spinning nor asleep.", busy_ns, 1),
	WF("spin_seconds", COUNTER, "Time idle, spinning and stealing.", spin_ns, 1),
	WF("sleep_seconds", COUNTER, "Time asleep in the poller.", sleep_ns, 1),
	WF("uptime_seconds", COUNTER, "Time since the worker started.", uptime_ns, 1),
	WF("turns", COUNTER, "Actor turns run.", turns, 0),
	WF("messages_received", COUNTER, "Messages taken from mailboxes.", received, 0),
	WF("messages_sent", COUNTER, "Messages sent.", sent, 0),
	WF("spawned", COUNTER, "Actors spawned.", spawned, 0),
	WF("stopped", COUNTER, "Actors stopped.", stopped, 0),
	WF("unmatched", COUNTER, "Messages no case matched.", unmatched, 0),
	WF("dead_letters", COUNTER, "Messages to stopped actors.", dead_letters, 0),
	WF("steals", COUNTER, "Actors stolen from other workers.", steals, 0),
	WF("steals_remote", COUNTER, "Actors stolen from another node.", steals_remote, 0),
	WF("sleeps", COUNTER, "Times the worker went to sleep.", sleeps, 0),
	WF("woken", COUNTER, "Sleeps a wake ended.", woken, 0),
	WF("wakeups_sent", COUNTER, "Wakes sent to sleeping workers.", wakeups_sent, 0),
	WF("wakeups_msg_ring", COUNTER, "Of the wakes sent, IORING_OP_MSG_RING ones.",
	   wakeups_msg_ring, 0),
	WF("wakeups_eventfd", COUNTER, "Of the wakes sent, eventfd writes.", wakeups_eventfd, 0),
	WF("ring_enters", COUNTER, "Poller waits (io_uring_enter or epoll_wait).", ring_enters, 0),
	WF("spin_yields", COUNTER, "CPU given away by idle spins after one was preempted.",
	   spin_yields, 0),
	WF("alarm_sets", COUNTER, "Sets of its alarm (a busy turn's timer deadline).",
	   alarm_sets, 0),
	WF("alarm_wakes", COUNTER, "Sleeps in which a busy peer's alarm fired.", alarm_wakes, 0),
	WF("timers_armed", COUNTER, "Timers armed.", timers_armed, 0),
	WF("timers_fired", COUNTER, "Timers fired.", timers_fired, 0),
	WF("timers_cancelled", COUNTER, "Timers cancelled.", timers_cancelled, 0),
	WF("io_submitted", COUNTER, "I/O operations started.", io_submitted, 0),
	WF("io_completed", COUNTER, "I/O completion messages.", io_completed, 0),
	WF("cross_node", COUNTER, "Messages sent to another node.", cross_node, 0),
	WF("outbox_flushes", COUNTER, "Outbox batches handed to another node.", flushes, 0),
	WF("outbox_flushed", COUNTER, "Messages in those batches.", flushed, 0),
};

struct cfield {
	const char *name;
	enum kind k;
	const char *help;
	size_t off;
};
#define CF(n, k, h, f) { "ura_class_" n, k, h, offsetof(ura_class_metrics, f) }
static const struct cfield cfields[] = {
	CF("live", GAUGE, "Actors alive.", live),
	CF("spawned", COUNTER, "Actors spawned.", spawned),
	CF("stopped_normal", COUNTER, "Actors stopped with reason normal.", stopped_normal),
	CF("stopped_other", COUNTER, "Actors stopped with another reason.", stopped_other),
	CF("messages_received", COUNTER, "Messages taken from mailboxes.", received),
	CF("messages_handled", COUNTER, "Messages a handler ran for.", handled),
	CF("unmatched", COUNTER, "Messages no case matched.", unmatched),
	CF("dead_letters", COUNTER, "Messages to stopped actors.", dead_letters),
	CF("mailbox_messages", GAUGE, "Messages waiting, as each actor's last turn saw them.",
	   mailbox),
};

/* The classes' handler times (wait 0) or mailbox waits (wait 1). */
static void class_hists(ura_system *sys, struct out *o, const ura_class_metrics *cs, int nc,
			int wait)
{
	const char *name = wait ? "ura_class_mailbox_wait_seconds" : "ura_class_handler_seconds";
	family(o, name, HISTOGRAM,
	       wait ? "Time plain messages waited from their send to the turn that took them, "
		      "sampled as handler times are."
		    : "Handler times, sampled (1 in ura_config.metrics_sample_log2's power of two).");
	for (int i = 0; i < nc; i++) {
		struct out lab = { .buf = NULL, .cap = 0, .len = 0, .om = o->om };
		char tmp[512];
		lab.buf = tmp;
		lab.cap = sizeof tmp;
		put(&lab, "class=\"");
		put_label(&lab, cs[i].name);
		put(&lab, "\"");
		if (lab.len >= sizeof tmp)
			continue; /* a class name too long to label: left out */
		/* cs[i] is class id i (ura_metrics_classes' order). */
		ura_hist h;
		if (wait)
			ura__metrics_class_wait_id(sys, (unsigned)i, &h);
		hist(o, name, tmp, wait ? &h : &cs[i].handler);
	}
}

static int render(ura_system *sys, struct out *o)
{
	ura_worker_metrics *ws = NULL;
	ura_class_metrics *cs = NULL;
	int nw = ura_metrics_workers(sys, NULL, 0);
	if (nw < 0)
		return nw;
	ws = ura__calloc((size_t)nw ? (size_t)nw : 1, sizeof *ws);
	cs = ura__calloc(URA_METRICS_CLASSES, sizeof *cs);
	if (!ws || !cs) {
		free(ws);
		free(cs);
		return -ENOMEM;
	}
	ura_metrics_workers(sys, ws, (unsigned)nw);
	uint64_t overflow = 0;
	int nc = ura_metrics_classes(sys, cs, URA_METRICS_CLASSES, &overflow);
	if (nc > (int)URA_METRICS_CLASSES)
		nc = URA_METRICS_CLASSES;
	ura_stats st;
	ura_system_stats(sys, &st);

	family(o, "ura_info", GAUGE, "The runtime: its version and poller backend.");
	put(o, "ura_info{version=\"%s\",backend=\"", ura_version_string());
	put_label(o, st.backend);
	put(o, "\"} 1\n");
	family(o, "ura_actors_live", GAUGE, "Actors alive.");
	put(o, "ura_actors_live %llu\n", (unsigned long long)st.live);
	family(o, "ura_actor_slots", GAUGE,
	       "Actor slots made (128 bytes each): the live actors and free slots kept for reuse.");
	put(o, "ura_actor_slots %llu\n", (unsigned long long)st.slots);
	family(o, "ura_timers_pending", GAUGE, "Timers armed now.");
	put(o, "ura_timers_pending %llu\n", (unsigned long long)st.timers_pending);
	family(o, "ura_io_inflight", GAUGE, "I/O operations started and not completed.");
	put(o, "ura_io_inflight %llu\n", (unsigned long long)st.io_inflight);
	family(o, "ura_metrics_classes_overflow", COUNTER,
	       "Spawns of metered classes past the class table, not counted by class.");
	put(o, "ura_metrics_classes_overflow_total %llu\n", (unsigned long long)overflow);

	family(o, "ura_worker_runq", GAUGE, "Actors in the worker's stealable run queue.");
	for (int i = 0; i < nw; i++) {
		put(o, "ura_worker_runq");
		worker_labels(o, &ws[i]);
		put(o, " %u\n", ws[i].runq);
	}
	for (size_t f = 0; f < URA__ARRAY_LEN(wfields); f++) {
		const struct wfield *d = &wfields[f];
		family(o, d->name, d->k, d->help);
		for (int i = 0; i < nw; i++) {
			uint64_t v;
			memcpy(&v, (const char *)&ws[i] + d->off, sizeof v);
			put(o, "%s%s", d->name, d->k == COUNTER ? "_total" : "");
			worker_labels(o, &ws[i]);
			if (d->secs)
				seconds(o, v);
			else
				put(o, " %llu\n", (unsigned long long)v);
		}
	}
	family(o, "ura_worker_timer_lateness_seconds", HISTOGRAM,
	       "How late timers fired after their deadline.");
	for (int i = 0; i < nw; i++) {
		char lab[64];
		snprintf(lab, sizeof lab, "worker=\"%u\",node=\"%u\"", ws[i].id, ws[i].node);
		hist(o, "ura_worker_timer_lateness_seconds", lab, &ws[i].timer_late);
	}

	for (size_t f = 0; f < URA__ARRAY_LEN(cfields); f++) {
		const struct cfield *d = &cfields[f];
		family(o, d->name, d->k, d->help);
		for (int i = 0; i < nc; i++) {
			uint64_t v;
			memcpy(&v, (const char *)&cs[i] + d->off, sizeof v);
			put(o, "%s%s", d->name, d->k == COUNTER ? "_total" : "");
			class_labels(o, &cs[i]);
			put(o, " %llu\n", (unsigned long long)v);
		}
	}
	class_hists(sys, o, cs, nc, 0);
	class_hists(sys, o, cs, nc, 1);
	if (o->om)
		put(o, "# EOF\n");
	free(ws);
	free(cs);
	return 0;
}

URA_API int ura_metrics_render(ura_system *sys, int format, char *buf, size_t cap)
{
	if (!sys || (cap && !buf) ||
	    (format != URA_METRICS_PROMETHEUS && format != URA_METRICS_OPENMETRICS))
		return -EINVAL;
	struct out o = { .buf = buf, .cap = cap, .len = 0, .om = format == URA_METRICS_OPENMETRICS };
	if (cap)
		buf[0] = '\0';
	int rc = render(sys, &o);
	if (rc < 0)
		return rc;
	if (o.len > INT32_MAX)
		return -EOVERFLOW;
	return (int)o.len;
}
