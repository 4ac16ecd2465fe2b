/* SPDX-License-Identifier: MIT */
/* graid_strerror(): names for the negative errnos the library returns. */
#include <errno.h>
#include <string.h>

#include "common/internal.h"

GRAID_API const char *graid_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "Success";
	case EINVAL:
		return "Invalid argument";
	case ENOMEM:
		return "Out of memory";
	case EIO:
		return "I/O error (a member or an engine failed)";
	case ENODEV:
		return "No such engine or device on this machine";
	case ENOEXEC:
		return "Engine plugin refused (ABI version or operations)";
	case EOPNOTSUPP:
		return "Operation not supported";
	case EAGAIN:
		return "Resource temporarily unavailable, try again";
	default:
		/* strerror() is not thread-safe in general, but glibc's is for known errnos. */
		return strerror(err);
	}
}
