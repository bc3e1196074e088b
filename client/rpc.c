#define _GNU_SOURCE
#include "rpc.h"

#include "ds_addr.h"
#include "ds_arena.h"
#include "ds_error.h"
#include "mem.h"
#include "ds_log.h"
#include "stats.h"
#include "wire.h"
#include "ds_clock.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* A batched call waits in the send buffer at most this long when more calls follow
 * (checked as each is queued), so the GPU starts work while the tenant keeps issuing. */
#define DS_FLUSH_NS (20 * 1000u)
/* ...and at most this long when the tenant stops calling: the flusher thread's period. */
#define DS_IDLE_FLUSH_NS (200 * 1000u)
/* How long a reply is awaited without sleeping when the context's flags ask for
 * CU_CTX_SCHED_AUTO (DETSHARE_SPIN_US overrides). */
#define DS_SPIN_US 200u

static struct {
    pthread_mutex_t lock;
    pthread_cond_t queued; /* a first call was queued while the flusher slept */
    atomic_uint_fast64_t calls;
    struct ds_wire *wire;
    atomic_int ready;
    int lost;
    int flusher_idle;
    unsigned auto_spin_us;
    ds_hello_res hello;
    char where[300];
} conn = { .lock = PTHREAD_MUTEX_INITIALIZER, .queued = PTHREAD_COND_INITIALIZER };

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
    ds__stats_add(proc, ds_now_ns() - t0);
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

/* DETSHARE_RING=0 keeps a local tenant's calls on the socket (to compare the two). */
static int ring_wanted(void)
{
    const char *v = getenv("DETSHARE_RING");

    return v == NULL || strcmp(v, "0") != 0;
}

static unsigned spin_from_env(void)
{
    const char *v = getenv("DETSHARE_SPIN_US");
    char *end;
    unsigned long us;

    if (v == NULL || v[0] == '\0')
        return DS_SPIN_US;
    us = strtoul(v, &end, 10);
    if (*end != '\0' || us > 10u * 1000 * 1000) {
        ds_warn("DETSHARE_SPIN_US=%s is not a number of microseconds up to 10 s; using %u",
                v, DS_SPIN_US);
        return DS_SPIN_US;
    }
    return (unsigned)us;
}

void ds__rpc_sched_flags(unsigned flags)
{
    unsigned spin;

    switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_SPIN:
    case CU_CTX_SCHED_YIELD:
        spin = UINT_MAX / 1000u;
        break;
    case CU_CTX_SCHED_BLOCKING_SYNC:
        spin = 0;
        break;
    default:
        spin = conn.auto_spin_us;
        break;
    }
    pthread_mutex_lock(&conn.lock);
    if (conn.wire != NULL)
        ds__wire_set_spin(conn.wire, spin);
    pthread_mutex_unlock(&conn.lock);
}

/* Called with the lock held. */
static CUresult transport_failed(unsigned long proc, int err)
{
    if (!conn.lost)
        ds_error("lost detshare-server at %s during %s: %s; every later call fails with "
                 "CUDA_ERROR_DEVICE_UNAVAILABLE",
                 conn.where, ds_proc_name(proc) ? ds_proc_name(proc) : "?",
                 err == DS_EIO ? strerror(errno ? errno : EPIPE) : ds_strerror(err));
    conn.lost = 1;
    pthread_cond_signal(&conn.queued);
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

static CUresult handshake(void)
{
    char name[DS_NAME_MAX + 1];
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION, .tenant = name };
    int err;

    tenant_identity(name, sizeof(name), &a.klass);
    a.arena_base = ds__mem_arena_base();
    memset(&conn.hello, 0, sizeof(conn.hello));
    err = ds__wire_call(conn.wire, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, &a,
                        (xdrproc_t)xdr_ds_hello_res, &conn.hello);
    if (err != 0) {
        ds_error("no answer from detshare-server at %s: %s", conn.where,
                 err == DS_EIO ? strerror(errno ? errno : EPIPE) : ds_strerror(err));
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

static void sleep_until(uint64_t ns)
{
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
                           .tv_nsec = (long)(ns % 1000000000u) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/*
 * Sends a batch the tenant left behind when it stopped calling (it computes on the CPU,
 * or waits on something that is not ours), so queued GPU work never waits for the
 * tenant's next call.  It sleeps on a condition while nothing is queued.
 */
static void *flusher(void *unused)
{
    (void)unused;
    /* The kernel's default 50 us timer slack would make every period late. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    pthread_mutex_lock(&conn.lock);
    while (!conn.lost) {
        uint64_t since = ds__wire_queued_since(conn.wire);

        if (since == 0) {
            conn.flusher_idle = 1;
            pthread_cond_wait(&conn.queued, &conn.lock);
            conn.flusher_idle = 0;
            continue;
        }
        if (ds_now_ns() - since >= DS_IDLE_FLUSH_NS) {
            int err = ds__wire_flush(conn.wire);

            if (err != 0)
                transport_failed(DS_NULL, err);
            continue;
        }
        pthread_mutex_unlock(&conn.lock);
        sleep_until(since + DS_IDLE_FLUSH_NS);
        pthread_mutex_lock(&conn.lock);
    }
    pthread_mutex_unlock(&conn.lock);
    return NULL;
}

/* A forked child shares the parent's socket: a call from it would interleave records
 * with the parent's.  As with the real driver, CUDA does not work in the child. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&conn.lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&conn.lock);
}

static void atfork_child(void)
{
    if (ds__rpc_ready())
        conn.lost = 1;
    pthread_mutex_unlock(&conn.lock);
}

static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int start_flusher(void)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    int rc;

    /* The application's signals must not land on a thread it does not know. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, flusher, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = rc;
    return rc;
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
    conn.auto_spin_us = spin_from_env();
    conn.wire = ds__wire_open(fd, conn.auto_spin_us);
    if (conn.wire == NULL) {
        close(fd);
        ds_error("cannot set up RPC to %s: out of memory", conn.where);
        return CUDA_ERROR_NO_DEVICE;
    }
    if (a.kind == DS_ADDR_UNIX && ring_wanted() && ds__wire_offer_ring(conn.wire) != 0)
        ds_debug("could not hand a call ring over: calls go over the socket");
    rc = handshake();
    if (rc == CUDA_SUCCESS && start_flusher() != 0) {
        ds_error("cannot start the client's flusher thread: %s", strerror(errno));
        rc = CUDA_ERROR_NO_DEVICE;
    }
    if (rc != CUDA_SUCCESS) {
        xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&conn.hello);
        ds__wire_close(conn.wire);
        conn.wire = NULL;
    }
    return rc;
}

CUresult ds__rpc_init(void)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    CUresult rc = CUDA_SUCCESS;

    pthread_once(&atfork_once, register_atfork);
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

CUresult ds__rpc_call(unsigned long proc, xdrproc_t xarg, void *arg, xdrproc_t xres, void *res)
{
    uint64_t t0;
    CUresult rc;
    int err;

    pthread_mutex_lock(&conn.lock);
    if (conn.lost) {
        pthread_mutex_unlock(&conn.lock);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    t0 = ds_now_ns();
    err = ds__wire_call(conn.wire, proc, xarg, arg, xres, res);
    count_call(proc, t0);
    /* The transport status decides whether res holds anything at all. */
    rc = err == 0 ? (CUresult) * (int *)res : transport_failed(proc, err);
    pthread_mutex_unlock(&conn.lock);
    return rc;
}

CUresult ds__rpc_hold(void)
{
    pthread_mutex_lock(&conn.lock);
    if (!conn.lost)
        return CUDA_SUCCESS;
    pthread_mutex_unlock(&conn.lock);
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

void ds__rpc_release(void)
{
    pthread_mutex_unlock(&conn.lock);
}

CUresult ds__rpc_post(unsigned long proc, xdrproc_t xarg, void *arg, uint32_t *xid)
{
    uint64_t t0 = ds_now_ns();
    int err;

    if (conn.lost)
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    err = ds__wire_post(conn.wire, proc, xarg, arg, xid);
    count_call(proc, t0);
    return err == 0 ? CUDA_SUCCESS : transport_failed(proc, err);
}

CUresult ds__rpc_collect(unsigned long proc, uint32_t xid, xdrproc_t xres, void *res)
{
    int err;

    if (conn.lost)
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    err = ds__wire_collect(conn.wire, xid, xres, res);
    return err == 0 ? (CUresult) * (int *)res : transport_failed(proc, err);
}

CUresult ds__rpc_send(unsigned long proc, xdrproc_t xarg, void *arg)
{
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&conn.lock);
    if (conn.lost) {
        rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
    } else {
        uint64_t t0 = ds_now_ns();
        uint64_t since = ds__wire_queued_since(conn.wire);
        int err = ds__wire_queue(conn.wire, proc, xarg, arg);

        if (err == 0 && since != 0 && t0 - since >= DS_FLUSH_NS)
            err = ds__wire_flush(conn.wire);
        else if (err == 0 && since == 0 && conn.flusher_idle &&
                 ds__wire_queued_since(conn.wire) != 0)
            pthread_cond_signal(&conn.queued);
        count_call(proc, t0);
        if (err != 0)
            rc = transport_failed(proc, err);
    }
    pthread_mutex_unlock(&conn.lock);
    return rc;
}

void ds__rpc_free(xdrproc_t xres, void *res)
{
    xdr_free(xres, res);
}
