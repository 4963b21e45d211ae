/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "util/util.h"

/*
 * The codes ura returns itself get a text that is true for every call that
 * returns them (ura.h lists which); the same codes also come from the
 * kernel (an I/O completion's res), so each text keeps the errno's own
 * meaning first.
 */
URA_API const char *ura_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case ESRCH: return "no such actor (it has stopped, never existed, or there is none "
			   "to reply to)";
	case ESHUTDOWN: return "the actor system is shut down";
	case EDEADLK: return "not allowed from a worker thread (it would wait for itself)";
	case EMSGSIZE: return "message too large";
	case EBUSY: return "busy: another operation is in progress or the system is not in the "
			   "state this call needs (a snapshot running, a system not new; from "
			   "ura_system_destroy: accepted messages were never handled)";
	case ETIMEDOUT: return "timed out";
	case EINVAL: return "invalid argument";
	case ENOMEM: return "out of memory";
	default: {
		/* Not strerror(): for codes glibc does not know it formats into
		 * a per-thread buffer that the next call reuses. */
		const char *d = strerrordesc_np(err);
		return d ? d : "unknown error";
	}
	}
}
