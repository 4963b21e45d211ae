/* SPDX-License-Identifier: MIT */
/*
 * Distribution in a build without libei (erlang-dev): the calls exist,
 * so the ABI is the same, and refuse with -ENOTSUP.
 */
#include <errno.h>

#include "ura.h"

URA_API int ura_dist_start(ura_system *sys, const ura_dist_opts *opts, ura_dist **out)
{
	(void)sys; (void)opts; (void)out;
	return -ENOTSUP;
}
URA_API int ura_dist_stop(ura_dist *d) { (void)d; return -EINVAL; }
URA_API const char *ura_dist_name(const ura_dist *d) { (void)d; return NULL; }
URA_API int ura_dist_connect(ura_dist *d, const char *node, uint64_t timeout_ns)
{
	(void)d; (void)node; (void)timeout_ns;
	return -ENOTSUP;
}
URA_API ura_ref ura_dist_node_ref(ura_dist *d, const char *node)
{
	(void)d; (void)node;
	return URA_NOREF;
}
URA_API int ura_dist_whereis(ura_dist *d, const char *node, const char *name, ura_ref *out)
{
	(void)d; (void)node; (void)name; (void)out;
	return -ENOTSUP;
}
