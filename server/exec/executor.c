#include "executor.h"

#include "fault.h"

#include "conn.h"
#include "ds_tlsrec.h"
#include "devout.h"
#include "ds_rec.h"
#include "ds_arena.h"
#include "ds_devout.h"
#include "ds_fdpass.h"
#include "ds_preface.h"
#include "ds_error.h"
#include "ds_log.h"
#include "registry.h"
#include "ops.h"
#include "shm.h"
#include "exec_spawn.h"
#include "ds_clock.h"
#include "held.h"
#include "stripes.h"
#include "waits.h"
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef void (*call_fn)(struct ds_tenant *t, void *a, void *r);

struct proc_entry {
    xdrproc_t xdr_arg, xdr_res;
    call_fn call;
    int batched;
};

union any_arg {
#define ARG_S(n, P, A, R) A n;
#define ARG_B(n, P, A) A n;
    DS_PROCS(ARG_S, ARG_B)
};

union any_res {
#define RES_S(n, P, A, R) R n;
#define RES_B(n, P, A)
    DS_PROCS(RES_S, RES_B)
};

#define CALL_S(n, P, A, R)                                      \
    static void call_##n(struct ds_tenant *t, void *a, void *r) \
    {                                                           \
        ((R *)r)->err = ds__ops_##n(t, a, r);                   \
    }
#define CALL_B(n, P, A)                                         \
    static void call_##n(struct ds_tenant *t, void *a, void *r) \
    {                                                           \
        *(int *)r = ds__ops_##n(t, a);                          \
    }
DS_PROCS(CALL_S, CALL_B)

#define ENTRY_S(n, P, A, R) [P] = { (xdrproc_t)xdr_##A, (xdrproc_t)xdr_##R, call_##n, 0 },
#define ENTRY_B(n, P, A) [P] = { (xdrproc_t)xdr_##A, NULL, call_##n, 1 },
static const struct proc_entry procs[DS_PROC_MAX + 1] = { DS_PROCS(ENTRY_S, ENTRY_B) };

/* An executor serves exactly one tenant over one connection. */
static struct ds_tenant tenant;
static struct ds_conn conn;
static struct ds_waits waits = { .efd = -1 };
static struct ds_held held;
static struct ds_watchdog watchdog;
static volatile sig_atomic_t stop_requested;
/* Started by the control process (not ds__executor_serve): DS_EXEC_CTL_FD is its pair. */
static int spawned;
/* Calls served and, with DETSHARE_LOG=debug, the time spent serving them (decode to
 * reply sent), by procedure: logged at the tenant's exit with DETSHARE_LOG=debug, so a slow program shows which
 * calls it made and, against the tenant's own timing, how much of a round trip is the
 * executor's (and tests can see which path a copy took). */
static unsigned long long served[DS_PROC_MAX + 1], served_ns[DS_PROC_MAX + 1];

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* The handler of a synchronising call left a fence: its reply waits (waits.h).
 * Returns 1 when it does, 0 when it is to be sent now, with r->err set. */
static int defer(struct ds_tenant *t, const struct proc_entry *e, const struct ds_call *call,
                 union any_res *r)
{
    struct ds_bfence *f = t->await;

    t->await = NULL;
    if (f == NULL)
        return 0;
    if (r->hello.err != 0 || e->xdr_res != (xdrproc_t)xdr_ds_void_res) {
        ds_error("%s left a fence it cannot wait on: replying at once", ds_proc_name(call->proc));
        t->ops->fence_destroy(t->be, f);
        return 0;
    }
    if (ds__waits_add(&waits, t->ops, t->be, call, f) != 0) {
        r->hello.err = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    return 1;
}

/* How long an executor whose device context failed goes on answering its tenant (every
 * call with the context's error, as the driver does) before it leaves.  Its leaving is
 * what lets MPS take new clients again: after a fault the MPS server admits none until
 * every client it had has exited (seen on the H100, run 66: a tenant arriving 0.4 s
 * after a neighbour's fault was refused).  A second is enough for the tenant to read
 * its error; a program that keeps calling then sees CUDA_ERROR_DEVICE_UNAVAILABLE. */
#define LOST_GRACE_NS (1000 * 1000 * 1000ull)

/* Whether the tenant's device context has failed for good: then every later call fails
 * with that error (serve), and the executor leaves LOST_GRACE_NS later.  Asked only after
 * a call failed (a sticky error is always some call's error), never on a launch that went
 * in; probe asks the device too, for a context that made no call since a neighbour's
 * fault. */
static void check_device(struct ds_tenant *t, int probe)
{
    int f;

    if (t->lost != 0 || t->be == NULL || (f = t->ops->fault(t->be, probe)) == 0)
        return;
    t->lost = f;
    t->lost_ns = ds_now_ns();
    ds__fault_record(t, f);
}

/* The control process saw an executor leave with a failed context, or a kernel of this
 * executor's MPS domain faulted or cost a context: under MPS, this one's may have failed
 * with it. */
static void check_faults(void)
{
    struct ds_shm_domain *d = ds_shm_domain_of(tenant.shm, &tenant.shm->slots[tenant.slot]);
    unsigned n = atomic_load_explicit(&tenant.shm->faults, memory_order_relaxed) +
                 (d != NULL ? atomic_load_explicit(&d->faults, memory_order_acquire) +
                                  atomic_load_explicit(&d->lost, memory_order_relaxed)
                            : 0);

    if (n == tenant.faults_seen)
        return;
    tenant.faults_seen = n;
    check_device(&tenant, 1);
}

/* The chunks of a striped copy to the device that its handler will not see are still
 * coming on the data connections: they are read and dropped, so that the connections
 * stay in step with the calls and the tenant is not left sending into a full socket. */
static void drop_striped(struct ds_tenant *t, unsigned long proc, const union any_arg *a)
{
    const ds_striped_args *s = &a->memcpy_htod_striped;

    if (proc == DS_MEMCPY_HTOD_STRIPED &&
        ds__stripes_recv(t, s->copy, s->size, s->conns, NULL, NULL) != 0)
        t->closing = 1;
}

/* A batched call's error waits for the next synchronous call, like CUDA's
 * asynchronous errors; that call is then refused with it and not run. */
static void serve(struct ds_tenant *t, const struct proc_entry *e, const struct ds_call *call,
                  union any_arg *a)
{
    union any_res r;

    memset(&r, 0, sizeof(r));
    if (!t->greeted && call->proc != DS_HELLO) {
        r.hello.err = CUDA_ERROR_NOT_INITIALIZED;
    } else if (!e->batched && t->pending != 0) {
        r.hello.err = t->pending;
        t->pending = 0;
    } else if (t->lost != 0) {
        r.hello.err = t->lost;
        drop_striped(t, call->proc, a);
    } else {
        e->call(t, a, &r);
        /* NOT_READY answers a query; it is no failure. */
        if (r.hello.err != 0 && r.hello.err != CUDA_ERROR_NOT_READY) {
            atomic_fetch_add_explicit(&t->shm->slots[t->slot].errors[call->proc], 1,
                                      memory_order_relaxed);
            check_device(t, 0);
        }
    }
    if (e->batched) {
        if (r.hello.err != 0) {
            ds_debug("%s failed with %d; held for the next synchronous call",
                     ds_proc_name(call->proc), r.hello.err);
            if (t->pending == 0)
                t->pending = r.hello.err;
        }
        return;
    }
    if (defer(t, e, call, &r))
        return;
    if (r.hello.err != 0)
        ds_debug("%s -> %d", ds_proc_name(call->proc), r.hello.err);
    if (ds_conn_reply(&conn, call, e->xdr_res, &r) != 0)
        t->closing = 1;
    else if (call->proc == DS_MEMCPY_DTOH_STRIPED && r.hello.err == 0 &&
             ds__ops_dtoh_striped_send(t, &a->memcpy_dtoh_striped) != 0)
        t->closing = 1;
    /* Results point at buffers the handler allocated (dtoh, function layouts) or at
     * tenant state (hello, the in-band reply buffer), which must not be freed. */
    if (call->proc == DS_MEMCPY_DTOH)
        ds__bulk_forget(t, &r.memcpy_dtoh.ds_bytes_res_u.data.data_val);
    if (call->proc != DS_HELLO)
        xdr_free(e->xdr_res, (char *)&r);
}

static int gate_closed(void)
{
    return atomic_load_explicit(&tenant.shm->slots[tenant.slot].gate, memory_order_acquire) != 0;
}

/* Refuse a call at once with `err`, as its handler would have. */
static void refuse(const struct proc_entry *e, const struct ds_call *call, CUresult err)
{
    union any_res r;

    if (e->batched) {
        if (tenant.pending == 0)
            tenant.pending = err;
        return;
    }
    memset(&r, 0, sizeof(r));
    r.hello.err = err;
    if (ds_conn_reply(&conn, call, e->xdr_res, &r) != 0)
        tenant.closing = 1;
}

/* Host-to-device chunks are decoded into an in-band slot where one is free (bulk.h). */
static int is_htod(unsigned long proc)
{
    return proc == DS_MEMCPY_HTOD || proc == DS_MEMCPY_HTOD_ASYNC;
}

/* Give a chunk decoded into a slot a buffer of its own.  Returns 0, or DS_ENOMEM with
 * the chunk dropped. */
static int own_chunk(unsigned long proc, union any_arg *a)
{
    ds_htod_args *h = &a->memcpy_htod;
    char *copy, *slot = h->data.data_val;

    if (!is_htod(proc) || !ds__bulk_owns(&tenant, slot))
        return 0;
    copy = malloc(h->data.data_len ? h->data.data_len : 1);
    if (copy != NULL)
        memcpy(copy, slot, h->data.data_len);
    ds__bulk_forget(&tenant, &slot);
    h->data.data_val = copy;
    if (copy == NULL)
        h->data.data_len = 0;
    return copy != NULL ? 0 : DS_ENOMEM;
}

/* Free decoded arguments, but not the in-band slot they may point into. */
static void free_args(const struct proc_entry *e, unsigned long proc, union any_arg *a)
{
    if (is_htod(proc))
        ds__bulk_forget(&tenant, &a->memcpy_htod.data.data_val);
    xdr_free(e->xdr_arg, (char *)a);
}

/*
 * Records of up to this many bytes hold host memory uncounted: one in-band copy chunk
 * (decoded into the bulk buffers) and its call, and everything smaller.  Past it, a
 * record's bytes count against the server's host memory limits as they arrive (account.h),
 * so a tenant declaring a 1 GiB module image is refused before the executor holds it.
 */
#define RECORD_FREE ((size_t)DS_CHUNK_MAX + (1u << 20))

/* The procedure whose arguments are being decoded, for the grant's log line. */
static unsigned long decoding;

static int grant(void *h, size_t n)
{
    (void)h;
    return ds__account_host_take(&tenant.acct, n, ds_proc_name(decoding));
}

/* A held call's arguments (first, so that the queue's pointer is theirs) and the host
 * bytes they count for. */
struct held_args {
    union any_arg a;
    uint64_t host;
};

static void free_held(struct ds_held_call *h)
{
    struct held_args *ha = h->args;

    xdr_free(procs[h->proc].xdr_arg, (char *)&ha->a);
    ds__account_host_give(&tenant.acct, ha->host);
    free(ha);
    free(h);
}

/*
 * Hold a decoded call behind the gate (held.h); its arguments move to the queue, and so
 * do the host bytes its record was granted (`granted`).  A held call counts for its
 * record's bytes (a copy's chunk, when it takes a buffer of its own) whatever its size:
 * a gated tenant could otherwise queue copies without end.
 */
static void hold(const struct proc_entry *e, const struct ds_call *call, union any_arg *a,
                 size_t granted)
{
    size_t host = ds_conn_taken(&conn, call) + sizeof(struct held_args);
    struct held_args *copy;

    if (is_htod(call->proc) && host < a->memcpy_htod.data.data_len + sizeof(*copy))
        host = a->memcpy_htod.data.data_len + sizeof(*copy);
    ds__account_host_give(&tenant.acct, granted);
    if (ds__account_host_take(&tenant.acct, host, ds_proc_name(call->proc)) != 0) {
        free_args(e, call->proc, a);
        refuse(e, call, CUDA_ERROR_OUT_OF_MEMORY);
        return;
    }
    /* A chunk decoded into an in-band slot takes a buffer of its own: the slot is for
     * the next chunk. */
    copy = own_chunk(call->proc, a) == 0 ? malloc(sizeof(*copy)) : NULL;
    if (copy != NULL) {
        copy->a = *a;
        copy->host = host;
        if (ds__held_push(&held, call->proc, call->xid, copy) == 0)
            return;
        free(copy);
    }
    free_args(e, call->proc, a);
    ds__account_host_give(&tenant.acct, host);
    refuse(e, call, CUDA_ERROR_OUT_OF_MEMORY);
}

/* A held striped copy's chunks are read at once: the tenant is sending them. */
static int read_ahead(const ds_striped_args *a)
{
    int rc = ds__stripes_read_ahead(&tenant, a->copy, a->size, a->conns);

    if (rc != 0)
        ds_error("held striped copy %u: %s; ending the session", a->copy, ds_strerror(rc));
    return rc;
}

/* The tenant's record passed the host memory it may have held: its call is refused, the
 * connection stays (the rest of the record is dropped as the next one is read). */
static void refuse_record(const struct proc_entry *e, const struct ds_call *call,
                          union any_arg *a, size_t granted)
{
    free_args(e, call->proc, a);
    ds__account_host_give(&tenant.acct, granted);
    refuse(e, call, CUDA_ERROR_OUT_OF_MEMORY);
}

static void dispatch(const struct ds_call *call)
{
    unsigned long proc = call->proc;
    const struct proc_entry *e = proc <= DS_PROC_MAX ? &procs[proc] : NULL;
    union any_arg a;
    uint64_t t0 = 0;
    size_t granted;

    if (proc == DS_NULL) {
        if (ds_conn_reply(&conn, call, (xdrproc_t)(void (*)(void))xdr_void, NULL) != 0)
            tenant.closing = 1;
        return;
    }
    if (e == NULL || e->call == NULL) {
        ds_warn("unknown procedure %lu", proc);
        if (ds_conn_reply_error(&conn, call, PROC_UNAVAIL) != 0)
            tenant.closing = 1;
        return;
    }
    /* Only under DETSHARE_LOG=debug: two clock reads on every call otherwise. */
    if (tenant.timing)
        t0 = ds_now_ns();
    memset(&a, 0, sizeof(a));
    /* The generated decoder fills a buffer it is given, of DS_CHUNK_MAX bytes, its
     * bound, instead of allocating one. */
    if (is_htod(proc))
        a.memcpy_htod.data.data_val = ds__bulk_htod_slot(&tenant);
    decoding = proc;
    if (!e->xdr_arg(call->args, &a)) {
        granted = ds_conn_granted(&conn, call);
        if (ds_conn_refused(&conn, call)) {
            refuse_record(e, call, &a, granted);
            return;
        }
        /* Arguments cut short by the tenant's exit are a disconnection, not garbage. */
        if (!conn.eof)
            ds_warn("malformed arguments for %s: closing the connection", ds_proc_name(proc));
        ds_conn_reply_error(&conn, call, GARBAGE_ARGS);
        free_args(e, proc, &a);
        ds__account_host_give(&tenant.acct, granted);
        tenant.closing = 1;
        return;
    }
    granted = ds_conn_granted(&conn, call);
    served[proc]++;
    atomic_store_explicit(&tenant.shm->slots[tenant.slot].calls[proc], served[proc],
                          memory_order_relaxed);
    if (ds__held_must_hold(&held, proc, gate_closed)) {
        if (proc == DS_MEMCPY_HTOD_STRIPED && read_ahead(&a.memcpy_htod_striped) != 0)
            tenant.closing = 1;
        hold(e, call, &a, granted);
        return;
    }
    serve(&tenant, e, call, &a);
    free_args(e, proc, &a);
    ds__account_host_give(&tenant.acct, granted);
    if (tenant.timing)
        served_ns[proc] += ds_now_ns() - t0;
}

/* Serve held calls in order, up to a launch that meets the gate still closed (held.h).
 * Returns how many were served. */
static unsigned serve_held(void)
{
    struct ds_held_call *h;
    unsigned n = 0;
    uint64_t held_ns;

    while (held.head != NULL && !tenant.closing &&
           !(ds__held_is_launch(held.head->proc) && gate_closed())) {
        const struct proc_entry *e;
        struct ds_call call = { 0 };

        h = ds__held_pop(&held, &held_ns);
        e = &procs[h->proc];
        call.proc = h->proc;
        call.xid = h->xid;
        serve(&tenant, e, &call, h->args);
        free_held(h);
        if (held_ns != 0)
            atomic_fetch_add(&tenant.shm->slots[tenant.slot].gated_ns, held_ns);
        n++;
    }
    return n;
}

/* The tenant left: what it still had held goes unserved. */
static void drop_held(void)
{
    struct ds_held_call *h;
    uint64_t held_ns;

    while ((h = ds__held_pop(&held, &held_ns)) != NULL)
        free_held(h);
}

static void install_term_handler(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* How the connection ended, from what ds_conn_poll returned. */
static int ended(int rc)
{
    /* A peer that connects and leaves without a word (a liveness probe, a program
     * that never called cuInit) simply disconnected. */
    if (rc == DS_ENOTREADY)
        return DS_EXEC_STOPPED;
    if (rc == DS_EIO)
        return conn.eof || tenant.greeted ? DS_EXEC_DISCONNECTED : DS_EXEC_PROTOCOL;
    if (conn.eof)
        return DS_EXEC_DISCONNECTED;
    ds_warn("the tenant sent a record that is not an RPC call of ours: closing the connection");
    return DS_EXEC_PROTOCOL;
}

/* The connection is to end after a call (t->closing): a reply that could not be sent, or
 * arguments that could not be read, because the tenant is gone, are its disconnection;
 * anything else broke the protocol. */
static int closed(void)
{
    return conn.eof ? DS_EXEC_DISCONNECTED : DS_EXEC_PROTOCOL;
}

/* How often a sleeping executor with held calls looks at its gate again.  Nothing wakes
 * it when the gate opens (the word is in shared memory, not a descriptor a poll can
 * watch), and a look costs a system call: every 200 us is 0.4% of a core, and a tenant
 * held for a policy's turn of tens of milliseconds resumes at most that late. */
#define GATE_LOOK_NS (200 * 1000u)

/* How long the tenant must have sent nothing before its last launch gets a progress
 * stamp: longer than the few microseconds between launches of a program that launches
 * as fast as it can (a stamp costs as much as a launch), short against the 5 ms at which
 * the control process samples the stamps. */
#define STAMP_PAUSE_NS (50 * 1000u)

/* The longest an executor sleeps, to look at stop_requested again: a SIGTERM handled
 * between the serving loop's look and its sleep (or, on a GPU, on one of the driver's
 * threads) interrupts nothing, and the executor of an idle tenant slept until the server
 * killed it at its stop (seen in test_metrics). */
#define STOP_LOOK_NS (250 * 1000 * 1000ull)

/* How long a tenant has to say hello once its executor holds its connection.  The
 * handshake takes milliseconds; a connection that showed its preface and then said
 * nothing held an executor and a slot for as long as it stayed open.
 * DETSHARE_HELLO_DEADLINE_MS overrides it (tests use a short one). */
#define HELLO_DEADLINE_MS 10000u
#define HELLO_DEADLINE_ENV "DETSHARE_HELLO_DEADLINE_MS"

/* When the tenant's hello is due (ds_now_ns clock); 0 once it came. */
static uint64_t hello_by;

/* HELLO_DEADLINE_MS, or what DETSHARE_HELLO_DEADLINE_MS says (1 ms to an hour); read
 * once. */
static unsigned hello_deadline_ms(void)
{
    static unsigned ms;
    const char *env;
    unsigned long v;
    char *end;

    if (ms != 0)
        return ms;
    ms = HELLO_DEADLINE_MS;
    if ((env = getenv(HELLO_DEADLINE_ENV)) == NULL || env[0] == '\0')
        return ms;
    errno = 0;
    v = strtoul(env, &end, 10);
    if (errno != 0 || *end != '\0' || env[0] == '-' || v == 0 || v > 3600ul * 1000)
        ds_warn("%s=%s: not a number of milliseconds up to an hour; tenants get %u ms to "
                "say hello", HELLO_DEADLINE_ENV, env, ms);
    else
        ms = (unsigned)v;
    return ms;
}

/* The kernel counts a socket's read timeout in its ticks, and may end one up to a tick
 * early: a tick (10 ms at the coarsest, HZ=100) more keeps it from ending before
 * hello_by. */
#define TICK_MS 10u

/* Reads of the tenant's socket give up after ms, a tick more (0: never).  Until the
 * hello, a read that waits (for the descriptors a local tenant sends first, or for the
 * rest of a record the tenant began) could otherwise wait past the deadline for ever. */
static void read_limit(int fd, unsigned ms)
{
    unsigned wait = ms != 0 ? ms + TICK_MS : 0;
    struct timeval tv = { .tv_sec = wait / 1000, .tv_usec = (wait % 1000) * 1000 };

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
        ds_debug("cannot bound the reads of the tenant's socket: %s", strerror(errno));
}

/* Whether the tenant's hello is late.  Once it came, the deadline is lifted. */
static int hello_late(void)
{
    if (hello_by == 0)
        return 0;
    if (tenant.greeted) {
        hello_by = 0;
        read_limit(conn.fd, 0);
        return 0;
    }
    return ds_now_ns() >= hello_by;
}

static int no_hello(void)
{
    ds_warn("the tenant sent no hello within %g s: closing the connection",
            hello_deadline_ms() / 1000.0);
    return DS_EXEC_NO_HELLO;
}

/* When to wake without being woken: the fences' time, soon when calls are held, the end
 * of a failed context's grace, the hello's deadline, traced ops still to settle, and
 * STOP_LOOK_NS from now at the latest. */
static uint64_t wake_time(void)
{
    uint64_t fences = ds__waits_arm(&waits, tenant.ops, tenant.be), soonest = fences, t;

    if (held.count > 0) {
        t = ds_now_ns() + GATE_LOOK_NS;
        soonest = soonest != 0 && soonest < t ? soonest : t;
    }
    if (tenant.lost != 0) {
        t = tenant.lost_ns + LOST_GRACE_NS;
        soonest = soonest != 0 && soonest < t ? soonest : t;
    }
    if (hello_by != 0)
        soonest = soonest != 0 && soonest < hello_by ? soonest : hello_by;
    if ((t = ds__trace_poll(&tenant)) != 0)
        soonest = soonest != 0 && soonest < t ? soonest : t;
    t = ds_now_ns() + STOP_LOOK_NS;
    return soonest != 0 && soonest < t ? soonest : t;
}

/*
 * The executor's loop, as libuv's uv_run turns: serve the calls held behind the gate
 * while it is open (held.h); take the calls that have come; between them, send the
 * replies whose fences the device has passed; when none of this has happened for
 * spin_us, arm the fences and sleep until a call, a fence's wake-up on the eventfd, or
 * the time a fence (or the held calls' next look at the gate) gave.  Spinning first is
 * what makes a short synchronisation return within microseconds of the GPU finishing: a
 * wake-up costs more than that.  While the tenant waits in a synchronisation the loop
 * spins up to sync_spin_us instead: a sleep then costs the tenant the chain of wake-ups
 * (the driver's blocking event, the eventfd, the reply) after the GPU is done, 100 to
 * 400 us on an H200 (run 123, bench/compat/first_launch.cu), and the spinning core is
 * the one the tenant's own thread would spin natively, where it now sleeps.
 */
static int serve_loop(unsigned spin_us, unsigned sync_spin_us)
{
    uint64_t idle_since = 0, idle;
    unsigned look = 0;

    for (;;) {
        struct ds_call call;
        int rc;

        /* One comparison per turn once the hello came. */
        if (hello_by != 0 && hello_late())
            return no_hello();
        if (held.count > 0 && serve_held() > 0) {
            if (tenant.closing)
                return closed();
            idle_since = 0;
        }
        rc = ds_conn_poll(&conn, &call, look++);

        if (rc == 1) {
            dispatch(&call);
            ds_conn_done(&conn, &call);
            if (tenant.closing)
                return closed();
            idle_since = 0;
            look = 0;
            continue;
        }
        if (rc < 0 || stop_requested)
            return stop_requested ? DS_EXEC_STOPPED : hello_late() ? no_hello() : ended(rc);
        if (waits.count > 0 && (rc = ds__waits_reap(&waits, tenant.ops, tenant.be, &conn)) != 0) {
            if (rc < 0)
                return DS_EXEC_DISCONNECTED;
            check_device(&tenant, 0);
            idle_since = 0;
            continue;
        }
        check_faults();
        if (tenant.lost != 0 && ds_now_ns() - tenant.lost_ns >= LOST_GRACE_NS)
            return DS_EXEC_DEVICE_LOST;
        if (idle_since == 0)
            idle_since = ds_now_ns();
        idle = ds_now_ns() - idle_since;
        /* A pause, not the gap between two launches of a busy tenant: its last launch
         * takes its progress stamp now (tenant.h). */
        if (idle >= STAMP_PAUSE_NS || idle >= (uint64_t)spin_us * 1000u)
            ds__tenant_stamp_tail(&tenant);
        ds__trace_poll(&tenant);
        if (idle < (uint64_t)(waits.count > 0 ? sync_spin_us : spin_us) * 1000u)
            continue;
        if (ds_conn_sleep(&conn, waits.efd, wake_time()) != 0)
            return DS_EXEC_DISCONNECTED;
        ds__waits_woken(&waits);
        idle_since = 0;
        look = 0;
    }
}

static void log_served(void)
{
    if (!ds_log_enabled(DS_LOG_DEBUG))
        return;
    for (unsigned long p = 0; p <= DS_PROC_MAX; p++)
        if (served[p] > 0)
            ds_debug("served %s: %llu, %.2f us each", ds_proc_name(p), served[p],
                     (double)served_ns[p] / (double)served[p] / 1e3);
    if (served[DS_LAUNCH] > 0)
        ds_debug("of each launch, %.2f us in the backend's launch",
                 (double)tenant.launch_backend_ns / (double)served[DS_LAUNCH] / 1e3);
}

/* Take one descriptor the client handed over before its first call (common/ds_arena.h,
 * common/ds_ring.h, common/ds_devout.h); *ring holds the ring's memfd until its doorbell comes. */
static int take_descriptor(int fd, int *ring)
{
    char tag;
    int d;

    if (ds_fd_recv(fd, &tag, &d) != 0)
        return DS_EPROTO;
    if (tag == DS_ARENA_MARKER)
        return ds__tenant_arena(&tenant, d) == 0 ? 0 : DS_EPROTO;
    if (ds__devout_is_marker(tag)) {
        if (ds__devout_take(tag, d) != 0)
            ds_warn("cannot send device output to the tenant's std%s: it goes to the server's",
                    tag == DS_STDOUT_MARKER ? "out" : "err");
        return 0;
    }
    if (tag == DS_RING_MARKER && *ring < 0) {
        *ring = d;
        return 0;
    }
    if (tag == DS_BELL_MARKER && *ring >= 0) {
        int rc = ds_ring_attach(&conn.ring, *ring, d);

        *ring = -1;
        return rc == 0 ? 0 : DS_EPROTO;
    }
    close(d);
    return DS_EPROTO;
}

/* Returns 0, DS_EIO when the peer left before its first call, or DS_EPROTO.  The
 * doorbell comes last: the calls that follow it arrive through the ring, so nothing
 * more would come on the socket to peek at. */
static int take_descriptors(int fd)
{
    int ring = -1, rc;
    char tag = 0;

    while (tag != DS_BELL_MARKER && (rc = ds_fd_peek(fd, &tag)) == 0 &&
           (tag == DS_ARENA_MARKER || tag == DS_RING_MARKER || tag == DS_BELL_MARKER ||
            ds__devout_is_marker(tag)))
        if ((rc = take_descriptor(fd, &ring)) != 0)
            break;
    if (ring >= 0)
        close(ring);
    return rc;
}

/* Where calls came from, and how the socket's bytes went (tests read this: a copy's
 * chunks are to go between the socket and their buffers in place). */
static void log_paths(void)
{
    struct ds_rec_stats st;

    ds_debug("calls from the ring: %llu, from the socket: %llu; replies: %llu", conn.from_ring,
             conn.from_socket, conn.replies);
    ds_rec_stats(&conn.sock, &st);
    ds_debug("socket bytes in place: %llu read, %llu sent; through the buffer: %llu read, "
             "%llu sent", st.in_direct, st.out_direct, st.in_buffered, st.out_buffered);
}

/* A TLS tenant's stream is protected with the keys that came with its connection.
 * Returns 0, or DS_ENOMEM / DS_EIO. */
static int take_tls(void)
{
    struct ds_tls_keys k;
    int rc;

    if (!ds_spawn_tenant_keys(&k))
        return 0;
    rc = ds_conn_tls(&conn, &k);
    explicit_bzero(&k, sizeof(k));
    if (rc == 0)
        ds_debug("TLS tenant: the kernel protects %s of its stream",
                 ds_tlsrec_kernel(conn.tls) == 3 ? "both directions"
                 : ds_tlsrec_kernel(conn.tls) == 0 ? "neither direction" : "one direction");
    return rc;
}

/* Serve the tenant on connected socket fd until it leaves; returns a ds_exec_status. */
static int serve_tenant(int fd, unsigned spin_us, unsigned sync_spin_us)
{
    int status, rc;

    /* The socket comes from libuv's accept, which makes it non-blocking; the record
     * stream reads and writes block. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (ds_conn_init(&conn, fd, &stop_requested) != 0 || take_tls() != 0) {
        ds_error("no memory for the tenant's connection");
        ds_conn_close(&conn);
        return DS_EXEC_FAILED;
    }
    ds_conn_budget(&conn, RECORD_FREE, grant, NULL);
    if (spawned && (rc = ds__stripes_start(fd, conn.tls != NULL, &stop_requested)) != 0)
        ds_warn("cannot take data connections (%s): copies go over the first one",
                ds_strerror(rc));
    ds__held_init(&held);
    hello_by = ds_now_ns() + hello_deadline_ms() * 1000000ull;
    read_limit(fd, hello_deadline_ms());
    if ((rc = ds_watchdog_start(&watchdog, fd, DS_EXEC_STUCK)) != 0)
        ds_warn("cannot start the watchdog thread (%s): a call stuck in the driver after "
                "the tenant left would keep this executor", strerror(rc));
    rc = take_descriptors(fd);
    if (rc == 0) {
        status = serve_loop(spin_us, sync_spin_us);
        log_served();
        log_paths();
    } else {
        status = hello_late() ? no_hello() : rc == DS_EIO ? DS_EXEC_DISCONNECTED : DS_EXEC_PROTOCOL;
    }
    drop_held();
    if (tenant.be != NULL)
        ds__waits_drop(&waits, tenant.ops, tenant.be);
    ds_watchdog_stop(&watchdog);
    ds__stripes_fini();
    ds_conn_close(&conn);
    return status;
}

static int config_from(struct ds_shm *shm, int slot, struct ds_backend_config *be,
                       const struct ds_backend_ops **ops)
{
    const struct ds_backend_entry *e = ds_registry_device(shm->device);

    if (slot < 0 || slot >= (int)shm->nslots || e == NULL)
        return -1;
    *ops = e->ops;
    memset(be, 0, sizeof(*be));
    be->gpu = shm->gpu;
    be->sim_sms = shm->sim_sms;
    be->shm = shm;
    be->slot = slot;
    be->spin_us = shm->spin_us;
    be->stop = &stop_requested;
    return 0;
}

/* Serve the tenant set up by ds__tenant_init on fd (taken over; -1: none came), then
 * free everything it held.  Returns a ds_exec_status. */
static int serve_and_free(int fd, unsigned spin_us, unsigned sync_spin_us)
{
    int status;

    if (fd >= 0 && ds__waits_init(&waits) != 0) {
        ds_error("cannot make the executor's eventfd: %s", strerror(errno));
        close(fd);
        fd = -1;
    }
    status = fd >= 0 ? serve_tenant(fd, spin_us, sync_spin_us) : DS_EXEC_STOPPED;
    ds__tenant_fini(&tenant);
    ds__waits_fini(&waits);
    return status;
}

/* A warm executor whose context is no MPS client while the server expects one leaves for
 * another to be started (shm.h), unless its tenant is already there.  Its control socket
 * is shut for reading first: a tenant handed over before that is still read and served
 * here, and a handover after it fails (EPIPE), so the control process offers the tenant
 * to another executor instead of losing it while this one closes its device (a context's
 * teardown takes a while on a GPU). */
static int leave_without_mps(struct ds_shm *shm)
{
    if (atomic_load(&shm->mps_expected) != DS_SHM_MPS_RETRY ||
        tenant.view.attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED] != 0 ||
        atomic_load(&shm->slots[tenant.slot].isolation) == DS_ISO_OWN)
        return 0;
    ds_spawn_stop_taking();
    if (ds_spawn_tenant_came())
        return 0;
    ds_debug("leaving for an executor that is an MPS client");
    ds_binder_ahead(&tenant.binder, 0);
    serve_and_free(-1, 0, 0);
    ds_shm_unmap(shm);
    return 1;
}

int ds_executor_main(const char *slot_arg)
{
    const struct ds_backend_ops *ops;
    struct ds_backend_config be;
    struct ds_shm *shm;
    char prefix[32];
    int slot = atoi(slot_arg), fd, status;

    /* The control process may have died before this line: the wait for a tenant below
     * then ends at once, since nobody holds the other end of the pair. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    install_term_handler();
    snprintf(prefix, sizeof(prefix), "executor[#%d]", slot);
    ds_log_set_prefix(prefix);
    if (ds__devout_init() != 0)
        ds_warn("no descriptor left for the log: device output goes to the server's stderr");
    shm = ds_shm_attach(DS_EXEC_SHM_FD);
    if (shm == NULL || config_from(shm, slot, &be, &ops) != 0) {
        ds_error("started without a valid control block: run detshare-server without "
                 "--executor");
        return DS_EXEC_FAILED;
    }
    /* Kept open (for this process only): the tenant's executors of other servers on
     * this host find this one's IPC registry at /proc/PID/fd/DS_EXEC_SHM_FD to copy from
     * its memory (ops_ipc.c, peer copies). */
    fcntl(DS_EXEC_SHM_FD, F_SETFD, FD_CLOEXEC);
    if ((fd = ds_spawn_listen()) != 0) {
        ds_error("cannot start the thread that takes the tenant's connection: %s",
                 strerror(fd));
        ds_shm_unmap(shm);
        return DS_EXEC_FAILED;
    }
    ds__tenant_init(&tenant, ops, &be, &ds__ops_areas);
    tenant.timing = ds_log_enabled(DS_LOG_DEBUG);
    tenant.own_process = 1;
    /* Opening the device (for CUDA: driver, context, green context, hundreds of
     * milliseconds) happens before the tenant connects, so that its connection does not
     * wait for it.  When the tenant is already there (no pool, or a burst of
     * connections), the device opens at its hello instead, so that a connection that
     * never says hello (a liveness probe) costs no device context.  A failure is
     * reported to the tenant at its hello. */
    if (!ds_spawn_tenant_came()) {
        ds_binder_ahead(&tenant.binder, 1);
        if (ds__ops_open_device(&tenant, 0) != 0)
            ds_debug("the device did not open ahead of the tenant; trying again at its hello");
        else if (leave_without_mps(shm))
            return DS_EXEC_NO_MPS;
    }
    fd = ds_spawn_await_tenant(&stop_requested);
    ds_binder_ahead(&tenant.binder, 0);
    /* The pair stays open for the tenant's data connections (stripes.h). */
    spawned = 1;
    /* The sim's fences wake the executor at their modelled time: nothing to gain by
     * spinning on them, and a 2-core test machine has no core to spare. */
    status = serve_and_free(fd, shm->spin_us,
                            shm->device == DS_SHM_CUDA && shm->sync_spin_us > shm->spin_us
                                ? shm->sync_spin_us
                                : shm->spin_us);
    close(DS_EXEC_CTL_FD);
    ds_shm_unmap(shm);
    return status;
}

int ds__executor_serve(const struct ds_backend_ops *ops, const struct ds_backend_config *cfg,
                       int fd)
{
    ds__tenant_init(&tenant, ops, cfg, &ds__ops_areas);
    tenant.timing = ds_log_enabled(DS_LOG_DEBUG);
    return serve_and_free(fd, cfg->spin_us, cfg->spin_us);
}
