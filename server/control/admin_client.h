/*
 * One request to a server's admin socket (admin.h, docs/admin.md) and its answer: what
 * detshare-ctl and the Kubernetes device plugin (k8s/) both do, so it is written once.
 */
#ifndef DS_ADMIN_CLIENT_H
#define DS_ADMIN_CLIENT_H

#include <msgpack.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ds_addr.h is C's alone: declared here for C++ too. */
#include "ds_addr.h"

/* Send the packed request req (len bytes) to the admin socket at admin and wait at most
 * timeout_ms for the answer, one msgpack object, unpacked into out with u's memory (both
 * initialised by the caller).  Returns 0, or -1 with why (for a message) saying what
 * failed: the socket cannot be reached, or no whole answer came in time. */
int ds_admin_ask(const struct ds_addr *admin, const char *req, size_t len, int timeout_ms,
                 msgpack_unpacker *u, msgpack_unpacked *out, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
