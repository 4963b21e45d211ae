/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (the provider "ura"), compiled in with meson's -Dusdt
 * option: a probe is one nop in the code and a note in the ELF file
 * (.note.stapsdt), which bpftrace, perf and systemtap turn into a
 * breakpoint only while something is attached to it. README.md lists
 * them with a bpftrace one-liner each; tests/probes.sh checks the notes.
 * Without the option every probe is nothing at all.
 *
 * The arguments are evaluated only to be put in registers (the note says
 * where), so each is a value already at hand: an index, a tag, a worker.
 */
#ifndef URA_UTIL_PROBE_H
#define URA_UTIL_PROBE_H

#ifdef URA_USDT
#include <sys/sdt.h>
#define URA_PROBE1(name, a) DTRACE_PROBE1(ura, name, a)
#define URA_PROBE2(name, a, b) DTRACE_PROBE2(ura, name, a, b)
#define URA_PROBE3(name, a, b, c) DTRACE_PROBE3(ura, name, a, b, c)
#else
#define URA_PROBE1(name, a) ((void)0)
#define URA_PROBE2(name, a, b) ((void)0)
#define URA_PROBE3(name, a, b, c) ((void)0)
#endif

#endif
