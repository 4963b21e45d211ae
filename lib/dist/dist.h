/* SPDX-License-Identifier: MIT */
/*
 * Distribution (ura.h's "Distribution" section): a ura system as a hidden
 * Erlang node. dist.c has the node, its connections and proxies; term.c
 * the bounds check that every term from a peer passes before libei
 * decodes it.
 */
#ifndef URA_DIST_DIST_H
#define URA_DIST_DIST_H

#include <stddef.h>
#include <stdint.h>

/* Checks that the term at p[*pos] (its version byte 131 first) lies
 * wholly inside p[0..n), nests at most 64 deep and uses only tags a peer
 * without an atom cache may send; advances *pos past it. 0, or -1 for a
 * malformed term (then *pos is meaningless). */
int ura__dist_term_check(const uint8_t *p, size_t n, size_t *pos);
/* The same for a term without its version byte: what follows a
 * distribution header (erl_ext_dist, "Distribution Header"). */
int ura__dist_term_check_bare(const uint8_t *p, size_t n, size_t *pos);

#endif
