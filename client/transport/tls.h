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
#include <signal.h>

struct ds_tls;

/* Whether the tenant asks for TLS. */
int ds__tls_wanted(void);

/* Shake hands with the server at a (named `where` in messages) over connected socket
 * fd; *out is the session, for the preface, then ds_tls_keys and ds_tls_free.  Returns
 * CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE after one line on stderr saying why. */
CUresult ds__tls_start(int fd, const struct ds_addr *a, const char *where, struct ds_tls **out);

/* OpenSSL writes to the socket with write(2): a server that closed the connection would
 * raise SIGPIPE, which kills a program that did not ask for it.  Between _begin and
 * _end the calling thread holds SIGPIPE blocked, and one raised meanwhile is taken
 * away, unless one was pending already (the application's).  No handler is installed. */
struct ds_tls_pipe {
    sigset_t old;
    int pending;
};
void ds__tls_pipe_begin(struct ds_tls_pipe *g);
void ds__tls_pipe_end(struct ds_tls_pipe *g);

#endif
