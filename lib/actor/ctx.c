/* SPDX-License-Identifier: MIT */
/* The handler context's calls and where actors live (placement). */
#include <errno.h>
#include <string.h>

#include "actor/actor.h"

static struct ura__actor *live_actor(ura_system *sys, ura_ref r)
{
	return sys ? ura__slot_live(sys, r) : NULL;
}

URA_API int ura_actor_node(ura_system *sys, ura_ref r)
{
	struct ura__actor *a = live_actor(sys, r);
	/* A racing stop and respawn of the slot may show the next
	 * incarnation's node: the answer is as stale as any for an actor
	 * that stops while we ask. */
	return a ? (int)ura__home(a) : (sys ? -ESRCH : -EINVAL);
}

URA_API int ura_actor_worker(ura_system *sys, ura_ref r)
{
	struct ura__actor *a = live_actor(sys, r);
	return a ? (int)atomic_load_explicit(&a->last_worker, memory_order_relaxed) :
		   (sys ? -ESRCH : -EINVAL);
}

URA_API int ura_worker_node(ura_system *sys, unsigned worker)
{
	if (!sys || worker >= sys->nworkers)
		return -EINVAL;
	return (int)sys->workers[worker].node;
}

URA_API int ura_system_nodes(ura_system *sys)
{
	return sys ? (int)sys->nnodes : -EINVAL;
}

/* ---- handler context ------------------------------------------------ */

URA_API ura_ref ura_self(ura_ctx *cx)
{
	return ura__ctx_bad(cx) ? URA_NOREF : ura__self_ref(cx->a);
}
URA_API ura_ref ura_sender(ura_ctx *cx)
{
	return !ura__ctx_bad(cx) && cx->m ? ura__msg_sender(cx->m) : URA_NOREF;
}
URA_API void *ura_state(ura_ctx *cx) { return ura__ctx_bad(cx) ? NULL : cx->a->state; }
URA_API ura_system *ura_ctx_system(ura_ctx *cx) { return ura__ctx_bad(cx) ? NULL : cx->sys; }
URA_API unsigned ura_worker_id(ura_ctx *cx)
{
	return !ura__ctx_bad(cx) && cx->w ? cx->w->id : (unsigned)-1;
}
URA_API ura_value ura_bound(ura_ctx *cx)
{
	if (ura__ctx_bad(cx)) {
		ura_value z;
		memset(&z, 0, sizeof z);
		return z;
	}
	return ura__ctx_bound(cx);
}
