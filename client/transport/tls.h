/*
 * TLS for a TCP tenant that asks for it: DETSHARE_TLS_CA=FILE (the server's certificate
 * must chain to the CAs in FILE) or DETSHARE_TLS=1 (to the system's).  libssl is opened
 * only then (common/ds_tls.h).  A Unix-socket tenant never uses TLS: the kernel already
 * keeps its traffic on the host.
 */
#ifndef DS_CLIENT_TLS_H
#define DS_CLIENT_TLS_H

#include "ds_addr.h"

#include <cuda.h>

struct ds_tls;

/* Whether the tenant asks for TLS. */
int ds__tls_wanted(void);

/* Shake hands with the server at a (named `where` in messages) over connected socket
 * fd; *out is the session, for the preface, then ds_tls_keys and ds_tls_free.  Returns
 * CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE after one line on stderr saying why. */
CUresult ds__tls_start(int fd, const struct ds_addr *a, const char *where, struct ds_tls **out);

#endif
