#define _GNU_SOURCE
#include "rpc.h"

#include "ds_addr.h"
#include "ds_error.h"
#include "ds_log.h"
#include "session.h"
#include "stats.h"
#include "route.h"
#include "wire.h"
#include "ds_clock.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* A batched call waits in the send buffer at most this long when more calls follow
 * (checked as each is queued), so the GPU starts work while the tenant keeps issuing. */
#define DS_FLUSH_NS (20 * 1000u)
/* ...and at most this long when the tenant stops calling: the flusher thread's period. */
#define DS_IDLE_FLUSH_NS (200 * 1000u)

/* One session per server, device k's at sess[k] (route.h), set up by session.c. */
static struct ds_session sess[DS_ROUTE_MAX];
static int nsess;
static atomic_int ready;
static atomic_uint_fast64_t calls;
static unsigned auto_spin_us; /* DETSHARE_SPIN_US, read at cuInit */
/* Taken before any session's lock by cuInit, so that one thread connects. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local uint64_t my_last;
/* A thread waits for one reply at a time, so one condition per thread will do. */
static _Thread_local pthread_cond_t my_wake = PTHREAD_COND_INITIALIZER;
/* The session a thread holds between ds__rpc_hold and ds__rpc_release. */
static _Thread_local struct ds_session *held;

uint64_t ds__rpc_calls(void)
{
    return atomic_load_explicit(&calls, memory_order_acquire);
}

uint64_t ds__rpc_my_last(void)
{
    return my_last;
}

/* Called with a session's lock held, as each call leaves. */
static void count_sent(void)
{
    my_last = atomic_fetch_add_explicit(&calls, 1, memory_order_acq_rel) + 1;
}

static int lost(struct ds_session *s)
{
    return atomic_load(&s->lost);
}

int ds__rpc_ready(void)
{
    return atomic_load_explicit(&ready, memory_order_acquire);
}

int ds__rpc_devices(void)
{
    return ds__rpc_ready() ? nsess : 0;
}

const ds_device_desc *ds__rpc_device(int dev)
{
    if (!ds__rpc_ready() || dev < 0 || dev >= nsess)
        return NULL;
    return &sess[dev].hello.ds_hello_res_u.ok.dev;
}

uint64_t ds__rpc_primary(int dev)
{
    if (!ds__rpc_ready() || dev < 0 || dev >= nsess)
        return 0;
    /* Decoded with the session's tag (route.c). */
    return sess[dev].hello.ds_hello_res_u.ok.primary;
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
        spin = auto_spin_us;
        break;
    }
    for (int i = 0; i < nsess; i++) {
        struct ds_session *s = &sess[i];

        atomic_store(&s->wait_spin_us, spin);
        pthread_mutex_lock(&s->lock);
        if (s->wire != NULL)
            ds__wire_set_spin(s->wire, spin);
        pthread_mutex_unlock(&s->lock);
    }
}

/* The reader role is free: wake a caller still waiting for its reply to take it, or
 * every one once the session is lost (none of them will be answered).  Called with
 * s->wait held. */
static void hand_over(struct ds_session *s)
{
    for (struct ds_rpc_pending *p = s->pending; p != NULL; p = p->next) {
        if (p->sleeping && !p->done) {
            pthread_cond_signal(p->wake);
            if (!lost(s))
                return;
        }
    }
}

/* Log the first failure and shut the socket down, so that a reader waiting for bytes
 * and a sender waiting for room both stop; every waiting call then fails, and so does
 * every later one.  Called with s->lock held. */
static CUresult transport_failed(struct ds_session *s, unsigned long proc, int err)
{
    if (!atomic_exchange(&s->lost, 1)) {
        ds_error("lost detshare-server at %s during %s: %s; every later call fails with "
                 "CUDA_ERROR_DEVICE_UNAVAILABLE",
                 s->where, ds_proc_name(proc) ? ds_proc_name(proc) : "?",
                 err == DS_EIO ? strerror(errno ? errno : EPIPE) : ds_strerror(err));
        ds__wire_shutdown(s->wire);
    }
    pthread_cond_signal(&s->queued);
    pthread_mutex_lock(&s->wait);
    /* A reader hands over itself once it stops. */
    if (!s->reading)
        hand_over(s);
    pthread_mutex_unlock(&s->wait);
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

/* A failure the reader saw.  The socket is shut down before s->lock is taken: a
 * sender stuck in send(), the executor no longer reading, then lets go of it. */
static void reader_failed(struct ds_session *s, unsigned long proc, int err)
{
    ds__wire_shutdown(s->wire);
    pthread_mutex_lock(&s->lock);
    transport_failed(s, proc, err);
    pthread_mutex_unlock(&s->lock);
}

/* ds__wire_read_reply's question: which pending call is `xid`?  The reader's own call
 * needs no lock, since only its owner changes it. */
static void *find_pending(void *reader, uint32_t xid, xdrproc_t *xres, void **res)
{
    struct ds_rpc_pending *p = reader;
    struct ds_session *s = p->session;

    if (p->xid != xid) {
        pthread_mutex_lock(&s->wait);
        for (p = s->pending; p != NULL && (p->xid != xid || p->done); p = p->next)
            ;
        pthread_mutex_unlock(&s->wait);
    }
    if (p != NULL) {
        *xres = p->xres;
        *res = p->res;
    }
    return p;
}

/* Be the reader until p's reply is in or the session is lost: decode each reply into
 * its caller's results, without holding s->wait while bytes are awaited, and wake
 * that caller; then hand the reading over.  Called and returns with s->wait held. */
static void read_replies(struct ds_rpc_pending *p)
{
    struct ds_session *s = p->session;

    s->reading = 1;
    ds__route_decoding(s->dev);
    while (!p->done && !lost(s)) {
        struct ds_rpc_pending *q = NULL;
        int err;

        pthread_mutex_unlock(&s->wait);
        err = ds__wire_read_reply(s->wire, find_pending, p, (void **)&q);
        if (err != 0)
            reader_failed(s, p->proc, err);
        pthread_mutex_lock(&s->wait);
        if (err == 0) {
            q->done = 1;
            if (q->sleeping)
                pthread_cond_signal(q->wake);
        }
    }
    s->reading = 0;
    hand_over(s);
}

/* While another thread reads, look for p's reply without sleeping for as long as the
 * context's flags say (ds__rpc_sched_flags): the reader decodes it within microseconds
 * of its arrival, and waking a sleeping thread costs more than that.  Returns 1 when the
 * reply is in, 0 when the caller is to sleep or to read itself.  Called and returns
 * with s->wait held. */
static int spin_for(struct ds_rpc_pending *p)
{
    struct ds_session *s = p->session;
    uint64_t until = ds_now_ns() + (uint64_t)atomic_load(&s->wait_spin_us) * 1000u;

    pthread_mutex_unlock(&s->wait);
    while (!atomic_load(&p->done) && atomic_load(&s->reading) && !lost(s) &&
           ds_now_ns() < until)
        ;
    pthread_mutex_lock(&s->wait);
    return atomic_load(&p->done);
}

/* Wait until p's reply is in (returns 0), or until the session is lost and nobody can
 * be decoding into p any more (DS_EIO); p is then no longer pending.  Called and
 * returns with s->wait held. */
static int await(struct ds_rpc_pending *p)
{
    struct ds_session *s = p->session;
    struct ds_rpc_pending **pp;
    int spun = 0;

    while (!p->done) {
        if (!s->reading && lost(s))
            break;
        if (!s->reading) {
            read_replies(p);
            continue;
        }
        if (!spun++ && spin_for(p))
            break;
        if (!s->reading || p->done)
            continue;
        p->sleeping = 1;
        pthread_cond_wait(p->wake, &s->wait);
        p->sleeping = 0;
    }
    for (pp = &s->pending; *pp != p; pp = &(*pp)->next)
        ;
    *pp = p->next;
    return p->done ? 0 : DS_EIO;
}

/* Set p up for a call of proc whose reply goes into res, and list it: once the call
 * leaves, any thread may read that reply.  Called with s->lock held. */
static void enlist(struct ds_session *s, struct ds_rpc_pending *p, unsigned long proc,
                   xdrproc_t xres, void *res)
{
    *p = (struct ds_rpc_pending){ .proc = proc, .xres = xres, .res = res,
                                  .xid = ds__wire_xid(s->wire), .t0 = ds_now_ns(),
                                  .wake = &my_wake, .session = s };
    pthread_mutex_lock(&s->wait);
    p->next = s->pending;
    s->pending = p;
    pthread_mutex_unlock(&s->wait);
}

/* Wait for p's reply (see await).  Returns 0 or DS_EIO. */
static int finish(struct ds_rpc_pending *p)
{
    struct ds_session *s = p->session;
    int err;

    pthread_mutex_lock(&s->wait);
    err = await(p);
    pthread_mutex_unlock(&s->wait);
    return err;
}

static void sleep_until(uint64_t ns)
{
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
                           .tv_nsec = (long)(ns % 1000000000u) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* How long the flusher goes on looking with nothing queued before it sleeps until woken. */
#define DS_PARK_NS (20 * 1000 * 1000u)

/* Sleep a period at a time, looking at the send buffer without the lock, until the batch
 * queued at `since` (0: none) is due, or until nothing has been queued since *seen for
 * DS_PARK_NS, or the session is lost: then the caller looks under the lock. */
static void nap(struct ds_session *s, uint64_t since, uint64_t *seen)
{
    for (;;) {
        uint64_t now;

        sleep_until((since != 0 ? since : ds_now_ns()) + DS_IDLE_FLUSH_NS);
        since = ds__wire_queued_since(s->wire);
        now = ds_now_ns();
        if (since != 0)
            *seen = now;
        if (lost(s) || (since != 0 && now - since >= DS_IDLE_FLUSH_NS) ||
            (since == 0 && now - *seen >= DS_PARK_NS))
            return;
    }
}

/*
 * Sends a batch the tenant left behind when it stopped calling (it computes on the CPU,
 * or waits on something that is not ours), so queued GPU work never waits for the
 * tenant's next call.  While the tenant queues batches it looks every period without
 * being woken: waking it would cost the first call of every batch a system call (a futex
 * wake, and a cross-CPU interrupt that a virtual machine makes dear), on the way of a
 * launch followed by a synchronisation.  After DS_PARK_NS with nothing queued it sleeps
 * on a condition, which the next batch's first call signals.  (With a call ring nothing
 * is ever queued here.)
 */
static void *flusher(void *arg)
{
    struct ds_session *s = arg;
    uint64_t seen;

    /* The kernel's default 50 us timer slack would make every period late. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    pthread_mutex_lock(&s->lock);
    seen = ds_now_ns();
    while (!lost(s)) {
        uint64_t since = ds__wire_queued_since(s->wire), now = ds_now_ns();

        if (since != 0 && now - since >= DS_IDLE_FLUSH_NS) {
            int err = ds__wire_flush(s->wire);

            if (err != 0)
                transport_failed(s, DS_NULL, err);
            continue;
        }
        if (since != 0) {
            seen = now;
        } else if (now - seen >= DS_PARK_NS) {
            s->flusher_idle = 1;
            pthread_cond_wait(&s->queued, &s->lock);
            s->flusher_idle = 0;
            seen = ds_now_ns();
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        nap(s, since, &seen);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* A forked child shares the parent's sockets: a call from it would interleave records
 * with the parent's.  As with the real driver, CUDA does not work in the child.  Every
 * session's locks are taken, in device order, so that the child gets them in a known
 * state; none is held while a reader or a caller sleeps, so a fork waits at most for a
 * send. */
static void atfork_prepare(void)
{
    for (int i = 0; i < DS_ROUTE_MAX; i++) {
        pthread_mutex_lock(&sess[i].lock);
        pthread_mutex_lock(&sess[i].wait);
    }
}

static void atfork_parent(void)
{
    for (int i = DS_ROUTE_MAX - 1; i >= 0; i--) {
        pthread_mutex_unlock(&sess[i].wait);
        pthread_mutex_unlock(&sess[i].lock);
    }
}

/* The child has only the thread that forked: the calls waiting for replies, the
 * reader's among them, belong to threads it does not have. */
static void atfork_child(void)
{
    for (int i = DS_ROUTE_MAX - 1; i >= 0; i--) {
        struct ds_session *s = &sess[i];

        if (ds__rpc_ready())
            atomic_store(&s->lost, 1);
        s->pending = NULL;
        s->reading = 0;
        pthread_mutex_unlock(&s->wait);
        pthread_mutex_unlock(&s->lock);
    }
}

static void set_up(void)
{
    for (int i = 0; i < DS_ROUTE_MAX; i++) {
        pthread_mutex_init(&sess[i].lock, NULL);
        pthread_mutex_init(&sess[i].wait, NULL);
        pthread_cond_init(&sess[i].queued, NULL);
        sess[i].dev = i;
    }
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int start_flusher(struct ds_session *s)
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
    rc = pthread_create(&t, &attr, flusher, s);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = rc;
    return rc;
}

/* Set up every server's session (session.h), then start their flushers.  A flusher
 * that cannot start leaves the client unusable for good (*broken): the flushers started
 * before it hold their sessions. */
static CUresult connect_all(int *broken)
{
    int n;

    if (ds__session_open_all(sess, &n, &auto_spin_us) != CUDA_SUCCESS)
        return CUDA_ERROR_NO_DEVICE;
    /* The hellos were decoded before the client's view of handles is installed (once
     * the servers are counted: ds__route_start), so their primary contexts carry no
     * device tag; untagged, device 1's was device 0's, and cudart, which takes primary
     * contexts from its private table (compat/export.c), ran everything of "device 1"
     * on device 0 (two H200s, run 139). */
    for (int i = 1; i < n; i++)
        sess[i].hello.ds_hello_res_u.ok.primary |= (uint64_t)i << DS_ROUTE_SHIFT;
    for (int i = 0; i < n; i++) {
        if (start_flusher(&sess[i]) != 0) {
            ds_error("cannot start the client's flusher thread: %s", strerror(errno));
            *broken = 1;
            return CUDA_ERROR_NO_DEVICE;
        }
    }
    nsess = n;
    return CUDA_SUCCESS;
}

CUresult ds__rpc_init(ds_route_owner_fn owner)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static int broken;
    CUresult rc = CUDA_SUCCESS;

    pthread_once(&once, set_up);
    pthread_mutex_lock(&init_lock);
    if (broken) {
        rc = CUDA_ERROR_NO_DEVICE;
    } else if (!ds__rpc_ready()) {
        ds_log_set_prefix("detshare");
        rc = connect_all(&broken);
        if (rc == CUDA_SUCCESS) {
            ds__route_start(nsess, owner);
            atomic_store_explicit(&ready, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&init_lock);
    return rc;
}

/* List p and send its call, unless the session is lost.  Called with s->lock held.
 * Whatever it returns, p is to be collected. */
static CUresult post(struct ds_session *s, struct ds_rpc_pending *p, unsigned long proc,
                     xdrproc_t xarg, void *arg, xdrproc_t xres, void *res)
{
    int err;

    enlist(s, p, proc, xres, res);
    if (lost(s))
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    ds__route_encoding(s->dev);
    err = ds__wire_post(s->wire, p->xid, proc, xarg, arg);
    s->after_sync = 1;
    count_sent();
    return err == 0 ? CUDA_SUCCESS : transport_failed(s, proc, err);
}

CUresult ds__rpc_collect(struct ds_rpc_pending *p)
{
    int err = finish(p);

    ds__stats_add(p->proc, ds_now_ns() - p->t0);
    /* The transport status decides whether res holds anything at all. */
    return err == 0 ? (CUresult) * (int *)p->res : CUDA_ERROR_DEVICE_UNAVAILABLE;
}

/* The session of a call, or NULL when it names objects of two devices: natively a peer
 * access, which no one server can do (said once). */
static struct ds_session *session_of(unsigned long proc, xdrproc_t xarg, void *arg)
{
    static atomic_int once;
    int dev = ds__route_pick(xarg, arg);

    if (dev >= 0)
        return &sess[dev];
    if (!atomic_exchange(&once, 1))
        ds_warn("%s names objects of two devices: detshare serves no call across servers "
                "(CUDA_ERROR_NOT_SUPPORTED)",
                ds_proc_name(proc) ? ds_proc_name(proc) : "a call");
    return NULL;
}

CUresult ds__rpc_call(unsigned long proc, xdrproc_t xarg, void *arg, xdrproc_t xres, void *res)
{
    struct ds_session *s = session_of(proc, xarg, arg);
    struct ds_rpc_pending p;

    if (s == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (lost(s))
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    pthread_mutex_lock(&s->lock);
    /* A failed post is collected like any other: it fails once nothing can be decoding
     * into res. */
    post(s, &p, proc, xarg, arg, xres, res);
    pthread_mutex_unlock(&s->lock);
    return ds__rpc_collect(&p);
}

int ds__rpc_device_of(unsigned long proc, xdrproc_t xarg, void *arg)
{
    struct ds_session *s = ds__rpc_ready() ? session_of(proc, xarg, arg) : NULL;

    return s != NULL && !lost(s) ? s->dev : -1;
}

int ds__rpc_attach_info(int dev, struct ds_addr *a, unsigned long long *id,
                        unsigned char *secret, char *where, size_t len)
{
    const ds_hello_ok *ok;

    if (!ds__rpc_ready() || dev < 0 || dev >= nsess || sess[dev].tls ||
        sess[dev].addr.kind != DS_ADDR_TCP)
        return 0;
    ok = &sess[dev].hello.ds_hello_res_u.ok;
    *a = sess[dev].addr;
    *id = ok->tenant_id;
    memcpy(secret, ok->attach_secret, DS_ATTACH_SECRET);
    snprintf(where, len, "%s", sess[dev].where);
    return 1;
}

CUresult ds__rpc_hold(unsigned long proc, xdrproc_t xarg, void *arg)
{
    struct ds_session *s = session_of(proc, xarg, arg);

    if (s == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&s->lock);
    if (!lost(s)) {
        held = s;
        return CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&s->lock);
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

void ds__rpc_release(void)
{
    pthread_mutex_unlock(&held->lock);
    held = NULL;
}

CUresult ds__rpc_post(struct ds_rpc_pending *p, unsigned long proc, xdrproc_t xarg, void *arg,
                      xdrproc_t xres, void *res)
{
    return post(held, p, proc, xarg, arg, xres, res);
}

/* Queue a batched call at time t0; one too large for the ring leaves with a DS_NULL
 * call listed as *trip, whose reply the caller awaits without s->lock.  Called with
 * s->lock held.  Returns 0 or DS_EIO; either way *large says whether *trip is listed. */
static int queue(struct ds_session *s, unsigned long proc, xdrproc_t xarg, void *arg,
                 uint64_t t0, struct ds_rpc_pending *trip, int *large)
{
    uint64_t since = ds__wire_queued_since(s->wire);
    int err;

    ds__route_encoding(s->dev);
    err = ds__wire_queue(s->wire, proc, xarg, arg);
    *large = err == 1;
    if (*large) {
        enlist(s, trip, DS_NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL);
        return ds__wire_send_large(s->wire, proc, xarg, arg, trip->xid);
    }
    /* The first call after a synchronisation leaves at once: the device may be idle
     * until it comes, and the executor submits it while the tenant goes on to its next
     * call (a launch then a synchronisation over TCP would otherwise pay the launch's
     * submission in the round trip).  The calls after it are batched. */
    if (err == 0 && s->after_sync) {
        s->after_sync = 0;
        return ds__wire_flush(s->wire);
    }
    if (err == 0 && since != 0 && t0 - since >= DS_FLUSH_NS)
        return ds__wire_flush(s->wire);
    if (err == 0 && since == 0 && s->flusher_idle && ds__wire_queued_since(s->wire) != 0)
        pthread_cond_signal(&s->queued);
    return err;
}

/* Queue a batched call, sent at once when `now`. */
static CUresult send_call(unsigned long proc, xdrproc_t xarg, void *arg, int now)
{
    struct ds_session *s = session_of(proc, xarg, arg);
    struct ds_rpc_pending trip;
    CUresult rc = CUDA_SUCCESS;
    uint64_t t0;
    int err, large;

    if (s == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&s->lock);
    if (lost(s)) {
        pthread_mutex_unlock(&s->lock);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    t0 = ds_now_ns();
    err = queue(s, proc, xarg, arg, t0, &trip, &large);
    if (err == 0 && now && !large)
        err = ds__wire_flush(s->wire);
    count_sent();
    if (err != 0)
        rc = transport_failed(s, proc, err);
    pthread_mutex_unlock(&s->lock);
    if (large && finish(&trip) != 0)
        rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
    ds__stats_add(proc, ds_now_ns() - t0);
    return rc;
}

CUresult ds__rpc_send(unsigned long proc, xdrproc_t xarg, void *arg)
{
    return send_call(proc, xarg, arg, 0);
}

CUresult ds__rpc_send_now(unsigned long proc, xdrproc_t xarg, void *arg)
{
    return send_call(proc, xarg, arg, 1);
}

void ds__rpc_free(xdrproc_t xres, void *res)
{
    xdr_free(xres, res);
}
