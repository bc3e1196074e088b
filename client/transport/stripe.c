#define _GNU_SOURCE
#include "stripe.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_preface.h"
#include "ds_sock.h"
#include "rpc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Bytes of an encoded ds_chunk_hdr. */
#define HDR_BYTES 16
/* Four connections: on a two-GPU H200 box (16 cores a GPU, run 137) pinned 256 MiB copies
 * over loopback ran 11.0-13.5 GB/s striped over four against 4.2-4.9 over one, since the
 * executor moves each connection's chunks on a thread of its own. */
#define STREAMS_DEFAULT 4
/* How long an attach may take: the server answers at once, or never will. */
#define ATTACH_TIMEOUT_S 5

struct ds_stripe {
    pthread_mutex_t lock; /* held for a whole copy: chunks go in the calls' order */
    int tried;            /* attaching was tried: n is what it gave */
    int fd[DS_DATA_CONNS_MAX];
    int n;
    uint32_t next_copy;
};

/* By device, as the sessions are (route.h). */
static struct ds_stripe stripes[DS_ROUTE_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void set_up(void)
{
    for (int i = 0; i < DS_ROUTE_MAX; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
}

/* Data connections wanted: DETSHARE_TCP_STREAMS (connections in all, 1..8) less one. */
static int wanted(void)
{
    const char *v = getenv("DETSHARE_TCP_STREAMS");
    char *end;
    long n;

    if (v == NULL || v[0] == '\0')
        return STREAMS_DEFAULT - 1;
    n = strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > DS_DATA_CONNS_MAX + 1) {
        ds_warn("DETSHARE_TCP_STREAMS=%s is not a number of connections from 1 to %d; "
                "using %d", v, DS_DATA_CONNS_MAX + 1, STREAMS_DEFAULT);
        return STREAMS_DEFAULT - 1;
    }
    return (int)n - 1;
}

static void read_timeout(int fd, int seconds)
{
    struct timeval tv = { .tv_sec = seconds };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* One data connection, attached: the control process answers its preface, then the
 * executor says it kept it.  Returns its descriptor, or -1. */
static int attach_one(const struct ds_addr *a, unsigned long long id,
                      const unsigned char *secret)
{
    unsigned char pre[DS_PREFACE_ATTACH_LEN];
    char why[DS_PREFACE_REASON_MAX + 1] = "";
    int fd = ds_addr_connect(a), rc = -1;

    if (fd < 0)
        return -1;
    ds_preface_encode_attach(pre, id, secret);
    read_timeout(fd, ATTACH_TIMEOUT_S);
    if (send(fd, pre, sizeof(pre), MSG_NOSIGNAL) == (ssize_t)sizeof(pre) &&
        ds_preface_await(fd, why, sizeof(why)) == 0 && ds_preface_await(fd, why, sizeof(why)) == 0)
        rc = 0;
    explicit_bzero(pre, sizeof(pre));
    if (rc != 0) {
        ds_debug("a data connection was not taken%s%s", why[0] ? ": " : "", why);
        close(fd);
        return -1;
    }
    read_timeout(fd, 0);
    return fd;
}

/* Attach device dev's data connections, once: up to wanted(), stopping at the first
 * refused; none when the session gave no secret (Unix, TLS, a server that takes none).
 * Called with st->lock held. */
static void open_once(struct ds_stripe *st, int dev)
{
    unsigned char secret[DS_ATTACH_SECRET], any = 0;
    unsigned long long id;
    char where[300];
    struct ds_addr a;
    int want = wanted();

    if (st->tried)
        return;
    st->tried = 1;
    if (want == 0 || !ds__rpc_attach_info(dev, &a, &id, secret, where, sizeof(where)))
        return;
    for (int i = 0; i < DS_ATTACH_SECRET; i++)
        any |= secret[i];
    while (any && st->n < want) {
        int fd = attach_one(&a, id, secret);

        if (fd < 0)
            break;
        st->fd[st->n++] = fd;
    }
    explicit_bzero(secret, sizeof(secret));
    ds_debug("%d data connections to %s", st->n, where);
}

/* Close st's connections: a copy over them failed, and so did the session. */
static void close_all(struct ds_stripe *st)
{
    for (int i = 0; i < st->n; i++)
        close(st->fd[i]);
    st->n = 0;
}

/* One connection's share of a copy: chunks i, i + conns, ... */
struct share {
    struct ds_stripe *st;
    const ds_striped_args *a;
    char *host;
    int to_device;
    int i;
    int err;
    pthread_t thread;
};

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_WAITALL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return DS_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int chunk_out(int fd, uint32_t copy, uint64_t off, char *bytes, size_t len)
{
    char raw[HDR_BYTES];
    ds_chunk_hdr h = { .copy = copy, .length = (u_int)len, .offset = off };
    struct iovec iov[2] = { { raw, sizeof(raw) }, { bytes, len } };
    XDR x;

    xdrmem_create(&x, raw, sizeof(raw), XDR_ENCODE);
    if (!xdr_ds_chunk_hdr(&x, &h))
        return DS_EPROTO;
    return ds_sendv_all(fd, iov, 2) == 0 ? 0 : DS_EIO;
}

/* The executor's chunks are checked as the executor checks the tenant's. */
static int chunk_in(int fd, uint32_t copy, uint64_t off, char *bytes, size_t len)
{
    char raw[HDR_BYTES];
    ds_chunk_hdr h;
    XDR x;
    int rc = read_all(fd, raw, sizeof(raw));

    if (rc != 0)
        return rc;
    xdrmem_create(&x, raw, sizeof(raw), XDR_DECODE);
    if (!xdr_ds_chunk_hdr(&x, &h) || h.copy != copy || h.offset != off || h.length != len)
        return DS_EPROTO;
    return read_all(fd, bytes, len);
}

static void *move_share(void *arg)
{
    struct share *s = arg;
    uint64_t step = (uint64_t)s->a->conns * DS_CHUNK_MAX;
    int fd = s->st->fd[s->i];

    for (uint64_t off = (uint64_t)s->i * DS_CHUNK_MAX; off < s->a->size && s->err == 0;
         off += step) {
        size_t len = s->a->size - off < DS_CHUNK_MAX ? (size_t)(s->a->size - off) : DS_CHUNK_MAX;

        s->err = s->to_device ? chunk_out(fd, s->a->copy, off, s->host + off, len)
                              : chunk_in(fd, s->a->copy, off, s->host + off, len);
    }
    /* The other connections' peers then stop waiting too. */
    if (s->err != 0)
        for (int k = 0; k < s->st->n; k++)
            shutdown(s->st->fd[k], SHUT_RDWR);
    return NULL;
}

/* Move the copy's chunks over every data connection at once, a thread each but the
 * first's, which is the caller's.  Returns 0, or DS_E*: the connections are closed. */
static int move(struct ds_stripe *st, const ds_striped_args *a, char *host, int to_device)
{
    struct share s[DS_DATA_CONNS_MAX];
    sigset_t all, old;
    int err = 0;

    /* The application's signals must not land on threads it does not know. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < (int)a->conns; i++) {
        s[i] = (struct share){ .st = st, .a = a, .host = host, .to_device = to_device, .i = i };
        if (i > 0 && pthread_create(&s[i].thread, NULL, move_share, &s[i]) != 0)
            s[i].err = DS_ENOMEM;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int i = 1; i < (int)a->conns; i++)
        if (s[i].err != 0)
            s[0].err = s[i].err;
    /* A share nobody moves would leave the executor waiting for its chunks: the copy
     * fails whole, its connections shut so that the threads started stop too. */
    if (s[0].err != 0)
        for (int k = 0; k < st->n; k++)
            shutdown(st->fd[k], SHUT_RDWR);
    else
        move_share(&s[0]);
    for (int i = 0; i < (int)a->conns; i++) {
        if (i > 0 && s[i].err != DS_ENOMEM)
            pthread_join(s[i].thread, NULL);
        if (err == 0)
            err = s[i].err;
    }
    if (err != 0) {
        ds_error("a data connection failed during a copy (%s): the server ends the session",
                 ds_strerror(err));
        close_all(st);
    }
    return err;
}

CUresult ds__stripe_copy(int to_device, CUdeviceptr dev, char *host, size_t n, uint64_t stream,
                         int *done)
{
    ds_striped_args a = { .dev = dev, .size = n, .stream = stream };
    unsigned long proc = to_device ? DS_MEMCPY_HTOD_STRIPED : DS_MEMCPY_DTOH_STRIPED;
    struct ds_stripe *st;
    ds_void_res r;
    CUresult rc;
    int server;

    *done = 0;
    if (n < DS_STRIPE_MIN ||
        (server = ds__rpc_device_of(proc, (xdrproc_t)xdr_ds_striped_args, &a)) < 0)
        return CUDA_SUCCESS;
    pthread_once(&once, set_up);
    st = &stripes[server];
    pthread_mutex_lock(&st->lock);
    open_once(st, server);
    if (st->n == 0) {
        pthread_mutex_unlock(&st->lock);
        return CUDA_SUCCESS;
    }
    *done = 1;
    a.copy = ++st->next_copy;
    a.conns = (u_int)st->n;
    if (!to_device) {
        rc = ds_rpc_memcpy_dtoh_striped(&a, &r);
        if (rc == CUDA_SUCCESS && move(st, &a, host, 0) != 0)
            rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
    } else {
        rc = ds__rpc_send_now(proc, (xdrproc_t)xdr_ds_striped_args, &a);
        if (rc == CUDA_SUCCESS && move(st, &a, host, 1) != 0)
            rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}
