#define _GNU_SOURCE
#include "rpc.h"

#include "ds_addr.h"
#include "ds_arena.h"
#include "mem.h"
#include "ds_log.h"
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Record-stream buffers; a larger message is streamed in fragments. */
#define DS_RECBUF (256 * 1024)

/* clnt_vc turns the wait into int milliseconds: stay well below INT_MAX. A server that
 * dies closes the socket, which ends any wait at once. */
#define DS_CALL_WAIT_S 1000000

static struct {
    pthread_mutex_t lock;
    atomic_uint_fast64_t calls;
    CLIENT *clnt;
    atomic_int ready;
    int lost;
    ds_hello_res hello;
    char where[300];
} conn = { .lock = PTHREAD_MUTEX_INITIALIZER };

static _Thread_local uint64_t my_last;

uint64_t ds__rpc_calls(void)
{
    return atomic_load_explicit(&conn.calls, memory_order_acquire);
}

uint64_t ds__rpc_my_last(void)
{
    return my_last;
}

/* Called with the lock held, for every call sent. */
static void count_call(unsigned long proc, uint64_t t0)
{
    ds__stats_add(proc, ds__stats_now() - t0);
    my_last = atomic_fetch_add_explicit(&conn.calls, 1, memory_order_acq_rel) + 1;
}

int ds__rpc_ready(void)
{
    return atomic_load_explicit(&conn.ready, memory_order_acquire);
}

const ds_device_desc *ds__rpc_device(void)
{
    return &conn.hello.ds_hello_res_u.ok.dev;
}

uint64_t ds__rpc_primary(void)
{
    return ds__rpc_ready() ? conn.hello.ds_hello_res_u.ok.primary : 0;
}

static int server_addr(struct ds_addr *a)
{
    const char *env = getenv("DETSHARE_SERVER");

    if (env == NULL || env[0] == '\0') {
        ds_addr_default(a);
        return 0;
    }
    if (ds_addr_parse(env, a) != 0) {
        ds_error("DETSHARE_SERVER=%s is neither unix:PATH nor tcp:HOST:PORT", env);
        return -1;
    }
    return 0;
}

static CLIENT *open_client(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct netbuf nb;
    struct timeval wait = { .tv_sec = DS_CALL_WAIT_S };
    CLIENT *c;

    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return NULL;
    nb.buf = &ss;
    nb.len = nb.maxlen = len;
    c = clnt_vc_create(fd, &nb, DS_PROG, DS_V1, DS_RECBUF, DS_RECBUF);
    if (c == NULL)
        return NULL;
    clnt_control(c, CLSET_TIMEOUT, (char *)&wait);
    /* Destroying the client closes the socket. */
    clnt_control(c, CLSET_FD_CLOSE, NULL);
    return c;
}

static void tenant_identity(char *name, size_t len, ds_class *klass)
{
    const char *n = getenv("DETSHARE_TENANT");
    const char *k = getenv("DETSHARE_CLASS");

    if (n != NULL && n[0] != '\0')
        snprintf(name, len, "%s", n);
    else
        snprintf(name, len, "%s.%d", program_invocation_short_name, (int)getpid());
    *klass = (k != NULL && strcmp(k, "latency") == 0) ? DS_CLASS_LATENCY : DS_CLASS_BEST_EFFORT;
}

/*
 * A write to a server that went away raises SIGPIPE, which would kill the application.
 * The library installs no handlers (the process is not ours), so it blocks SIGPIPE in
 * the calling thread around each call and discards one the call itself raised.
 */
struct pipe_guard {
    sigset_t old;
    int was_pending;
};

static void pipe_guard_begin(struct pipe_guard *g)
{
    sigset_t set, pending;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void pipe_guard_end(struct pipe_guard *g)
{
    static const struct timespec zero = { 0, 0 };
    sigset_t set, pending;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    if (!g->was_pending && sigismember(&pending, SIGPIPE))
        sigtimedwait(&set, NULL, &zero);
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static CUresult handshake(void)
{
    char name[DS_NAME_MAX + 1];
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION, .tenant = name };
    struct timeval wait = { .tv_sec = DS_CALL_WAIT_S };
    struct pipe_guard guard;
    enum clnt_stat st;

    tenant_identity(name, sizeof(name), &a.klass);
    memset(&conn.hello, 0, sizeof(conn.hello));
    pipe_guard_begin(&guard);
    st = clnt_call(conn.clnt, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&a,
                   (xdrproc_t)xdr_ds_hello_res, (char *)&conn.hello, wait);
    pipe_guard_end(&guard);
    if (st != RPC_SUCCESS) {
        ds_error("no answer from detshare-server at %s: %s", conn.where, clnt_sperrno(st));
        return CUDA_ERROR_NO_DEVICE;
    }
    if (conn.hello.err != CUDA_SUCCESS) {
        ds_error("detshare-server at %s refused the handshake (error %d): is it the same "
                 "version as this library (protocol %d)?",
                 conn.where, conn.hello.err, DS_PROTO_VERSION);
        return CUDA_ERROR_NO_DEVICE;
    }
    ds_debug("connected to %s as %s (%s device %s)", conn.where, name,
             conn.hello.ds_hello_res_u.ok.backend, conn.hello.ds_hello_res_u.ok.dev.name);
    return CUDA_SUCCESS;
}

static CUresult connect_once(void)
{
    struct ds_addr a;
    int fd;
    CUresult rc;

    if (server_addr(&a) != 0)
        return CUDA_ERROR_NO_DEVICE;
    ds_addr_format(&a, conn.where, sizeof(conn.where));
    fd = ds_addr_connect(&a);
    if (fd < 0) {
        ds_error("cannot reach detshare-server at %s: %s", conn.where, strerror(errno));
        return CUDA_ERROR_NO_DEVICE;
    }
    if (a.kind == DS_ADDR_UNIX) {
        int arena = ds__mem_arena_create();

        if (arena >= 0) {
            if (ds_arena_send(fd, arena) != 0)
                ds_debug("could not hand the host arena over: mapped memory unavailable");
            close(arena);
        }
    }
    conn.clnt = open_client(fd);
    if (conn.clnt == NULL) {
        close(fd);
        ds_error("cannot set up RPC to %s", conn.where);
        return CUDA_ERROR_NO_DEVICE;
    }
    rc = handshake();
    if (rc != CUDA_SUCCESS) {
        xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&conn.hello);
        clnt_destroy(conn.clnt);
        conn.clnt = NULL;
    }
    return rc;
}

CUresult ds__rpc_init(void)
{
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&conn.lock);
    if (!ds__rpc_ready()) {
        ds_log_set_prefix("detshare");
        rc = connect_once();
        if (rc == CUDA_SUCCESS)
            atomic_store_explicit(&conn.ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&conn.lock);
    return rc;
}

/* Called with the lock held. */
static CUresult transport_failed(unsigned long proc, enum clnt_stat st)
{
    if (!conn.lost)
        ds_error("lost detshare-server at %s during %s: %s; every later call fails with "
                 "CUDA_ERROR_DEVICE_UNAVAILABLE",
                 conn.where, ds_proc_name(proc) ? ds_proc_name(proc) : "?", clnt_sperrno(st));
    conn.lost = 1;
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

CUresult ds__rpc_call(unsigned long proc, xdrproc_t xarg, void *arg, xdrproc_t xres, void *res)
{
    struct timeval wait = { .tv_sec = DS_CALL_WAIT_S };
    struct pipe_guard guard;
    enum clnt_stat st;
    uint64_t t0;
    CUresult rc;

    pthread_mutex_lock(&conn.lock);
    if (conn.lost) {
        pthread_mutex_unlock(&conn.lock);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    t0 = ds__stats_now();
    pipe_guard_begin(&guard);
    st = clnt_call(conn.clnt, proc, xarg, arg, xres, res, wait);
    pipe_guard_end(&guard);
    count_call(proc, t0);
    /* The transport status decides whether res holds anything at all. */
    rc = st == RPC_SUCCESS ? (CUresult) * (int *)res : transport_failed(proc, st);
    pthread_mutex_unlock(&conn.lock);
    return rc;
}

CUresult ds__rpc_send(unsigned long proc, xdrproc_t xarg, void *arg)
{
    struct timeval none = { 0, 0 };
    struct pipe_guard guard;
    enum clnt_stat st;
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&conn.lock);
    if (conn.lost) {
        rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
    } else {
        /* A NULL result routine with a zero wait is TI-RPC's batching: encode, buffer,
         * no reply.  It reports RPC_TIMEDOUT for a successfully buffered call. */
        uint64_t t0 = ds__stats_now();

        pipe_guard_begin(&guard);
        st = clnt_call(conn.clnt, proc, xarg, arg, NULL, NULL, none);
        pipe_guard_end(&guard);
        count_call(proc, t0);
        if (st != RPC_SUCCESS && st != RPC_TIMEDOUT)
            rc = transport_failed(proc, st);
    }
    pthread_mutex_unlock(&conn.lock);
    return rc;
}

void ds__rpc_free(xdrproc_t xres, void *res)
{
    xdr_free(xres, res);
}
