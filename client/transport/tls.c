#include "tls.h"

#include "ds_log.h"
#include "ds_tls.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* DETSHARE_TLS_CA, when set and not empty. */
static const char *ca_file(void)
{
    const char *v = getenv("DETSHARE_TLS_CA");

    return v != NULL && v[0] != '\0' ? v : NULL;
}

int ds__tls_wanted(void)
{
    const char *v = getenv("DETSHARE_TLS");

    return ca_file() != NULL || (v != NULL && strcmp(v, "1") == 0);
}

CUresult ds__tls_start(int fd, const struct ds_addr *a, const char *where, struct ds_tls **out)
{
    char why[320];
    struct ds_tls_ctx *ctx = ds_tls_client_ctx(ca_file(), why, sizeof(why));

    *out = NULL;
    if (ctx == NULL) {
        ds_error("cannot use TLS to reach detshare-server at %s: %s", where, why);
        return CUDA_ERROR_NO_DEVICE;
    }
    *out = ds_tls_connect(ctx, fd, a->host, why, sizeof(why));
    /* The session keeps what it needs of the context. */
    ds_tls_ctx_free(ctx);
    if (*out == NULL) {
        ds_error("TLS with detshare-server at %s failed: %s (a server takes TLS tenants "
                 "only when started with --tls-cert)", where, why);
        return CUDA_ERROR_NO_DEVICE;
    }
    return CUDA_SUCCESS;
}

void ds__tls_pipe_begin(struct ds_tls_pipe *g)
{
    sigset_t pipe, pending;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    g->pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

void ds__tls_pipe_end(struct ds_tls_pipe *g)
{
    sigset_t pipe;
    struct timespec zero = { 0, 0 };

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!g->pending)
        while (sigtimedwait(&pipe, NULL, &zero) == SIGPIPE)
            ;
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}
