/* Synchronous calls from several application threads at once.  Against a stand-in
 * executor that holds a round of calls and answers them in reverse order, each thread
 * gets its own reply, and a reply nobody awaits or a connection that ends fails every
 * waiting call.  Against a server, threads each on a stream of their own copy both ways
 * (the bytes checked), synchronise streams and events and allocate, over the Unix
 * socket with the call ring and without it and over TCP, also while another thread
 * sends calls too large for the ring. */
#include "detshare.h"
#include "ds_arena.h"
#include "ds_preface.h"
#include "ds_ring.h"
#include "ds_sock.h"
#include "ds_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8

/* ---- A stand-in executor ---- */

enum ending {
    REVERSED, /* every round answered last call first */
    STRANGER, /* one call answered, then a reply to a call never made */
    HANG_UP,  /* the connection closed with every call unanswered */
};

struct fake {
    enum ending how;
    int rounds;
    int lfd;
    pthread_t thread;
    int failed_at; /* the line where the stand-in itself went wrong, 0 if nowhere */
};

static int fake_read(void *h, void *buf, int len)
{
    ssize_t n = recv(*(int *)h, buf, (size_t)len, 0);

    return n > 0 ? (int)n : -1;
}

static int fake_write(void *h, void *buf, int len)
{
    return ds_send_all(*(int *)h, buf, (size_t)len) == 0 ? len : -1;
}

/* The next call's header, for procedure `proc`; its arguments follow in x. */
static int next_call(XDR *x, unsigned long proc, uint32_t *xid)
{
    char auth[2 * MAX_AUTH_BYTES];
    struct rpc_msg m;

    memset(&m, 0, sizeof(m));
    m.rm_call.cb_cred.oa_base = auth;
    m.rm_call.cb_verf.oa_base = auth + MAX_AUTH_BYTES;
    x->x_op = XDR_DECODE;
    if (!xdrrec_skiprecord(x) || !xdr_callmsg(x, &m) || m.rm_call.cb_proc != proc)
        return 0;
    *xid = m.rm_xid;
    return 1;
}

static int reply(XDR *x, uint32_t xid, xdrproc_t xres, void *res)
{
    struct rpc_msg m = { .rm_xid = xid, .rm_direction = REPLY };

    m.rm_reply.rp_stat = MSG_ACCEPTED;
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_stat = SUCCESS;
    m.acpted_rply.ar_results.where = res;
    m.acpted_rply.ar_results.proc = xres;
    x->x_op = XDR_ENCODE;
    return xdr_replymsg(x, &m) && xdrrec_endofrecord(x, TRUE);
}

static int hello(XDR *x)
{
    ds_hello_args a;
    ds_hello_res r;
    uint32_t xid;
    int ok;

    memset(&a, 0, sizeof(a));
    memset(&r, 0, sizeof(r));
    ok = next_call(x, DS_HELLO, &xid) && xdr_ds_hello_args(x, &a);
    xdr_free((xdrproc_t)xdr_ds_hello_args, (char *)&a);
    r.ds_hello_res_u.ok.proto_version = DS_PROTO_VERSION;
    r.ds_hello_res_u.ok.primary = 1;
    r.ds_hello_res_u.ok.backend = "stand-in";
    r.ds_hello_res_u.ok.dev.name = "stand-in";
    return ok && reply(x, xid, (xdrproc_t)xdr_ds_hello_res, &r);
}

/* What a caller with context handle h expects of cuMemGetInfo. */
static size_t free_for(ds_handle h)
{
    return (size_t)h * 1000;
}

static int answer(XDR *x, uint32_t xid, ds_handle h)
{
    ds_meminfo_res r = { .err = 0 };

    r.ds_meminfo_res_u.info.free_bytes = free_for(h);
    r.ds_meminfo_res_u.info.total_bytes = h;
    return reply(x, xid, (xdrproc_t)xdr_ds_meminfo_res, &r);
}

/* Take one DS_MEM_GET_INFO call from each caller, then answer as f->how says.
 * Returns 0, or the line where it went wrong. */
static int round_of_calls(struct fake *f, XDR *x)
{
    uint32_t xid[THREADS];
    ds_handle h[THREADS];

    for (int i = 0; i < THREADS; i++)
        if (!next_call(x, DS_MEM_GET_INFO, &xid[i]) || !xdr_ds_handle(x, &h[i]))
            return __LINE__;
    switch (f->how) {
    case REVERSED:
        for (int i = THREADS - 1; i >= 0; i--)
            if (!answer(x, xid[i], h[i]))
                return __LINE__;
        return 0;
    case STRANGER:
        return answer(x, xid[0], h[0]) && answer(x, xid[0] + 0x10000, h[0]) ? 0 : __LINE__;
    case HANG_UP:
        return 0;
    }
    return __LINE__;
}

/* Take the TCP tenant's token preface, whatever it holds, and accept it.  Returns 1 when
 * it came whole and the answer left. */
static int accept_preface(int fd)
{
    unsigned char buf[DS_PREFACE_MAX], yes[1];
    size_t have = 0;
    int missing;

    while ((missing = ds_preface_missing(buf, have)) > 0) {
        ssize_t n = read(fd, buf + have, (size_t)missing);

        if (n <= 0)
            return 0;
        have += (size_t)n;
    }
    return missing == 0 && write(fd, yes, ds_preface_answer(NULL, yes)) == 1;
}

static void *fake_main(void *p)
{
    struct fake *f = p;
    int fd = accept(f->lfd, NULL, NULL);
    XDR x;

    if (fd < 0) {
        f->failed_at = __LINE__;
        return NULL;
    }
    xdrrec_create(&x, 0, 0, &fd, fake_read, fake_write);
    if (!accept_preface(fd) || !hello(&x))
        f->failed_at = __LINE__;
    for (int r = 0; r < f->rounds && f->failed_at == 0; r++)
        f->failed_at = round_of_calls(f, &x);
    XDR_DESTROY(&x);
    close(fd);
    return NULL;
}

/* Listen on a loopback port, point DETSHARE_SERVER at it and serve in a thread. */
static void fake_start(struct fake *f)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t len = sizeof(sin);
    char addr[64];

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(f->lfd, 0);
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(listen(f->lfd, 1), 0);
    cr_assert_eq(getsockname(f->lfd, (struct sockaddr *)&sin, &len), 0);
    snprintf(addr, sizeof(addr), "tcp:127.0.0.1:%d", ntohs(sin.sin_port));
    setenv("DETSHARE_SERVER", addr, 1);
    cr_assert_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
    cr_assert_eq(pthread_join(f->thread, NULL), 0);
    close(f->lfd);
    cr_assert_eq(f->failed_at, 0, "the stand-in executor went wrong at line %d", f->failed_at);
}

struct caller {
    int id, rounds;
    CUresult rc;
    int wrong; /* replies that were someone else's */
};

/* Each caller's context handle is its own number, which the stand-in echoes back. */
static void *call_info(void *p)
{
    struct caller *c = p;
    ds_handle h = (ds_handle)c->id + 1;

    c->rc = cuCtxSetCurrent((CUcontext)(uintptr_t)h);
    for (int r = 0; r < c->rounds && c->rc == CUDA_SUCCESS; r++) {
        size_t free_b = 0, total = 0;

        c->rc = cuMemGetInfo(&free_b, &total);
        if (c->rc == CUDA_SUCCESS && (free_b != free_for(h) || total != h))
            c->wrong++;
    }
    return NULL;
}

static void call_from_threads(struct caller *c, int rounds)
{
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++) {
        c[i] = (struct caller){ .id = i, .rounds = rounds };
        cr_assert_eq(pthread_create(&t[i], NULL, call_info, &c[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_join(t[i], NULL), 0);
}

TestSuite(demux, .timeout = 60);

Test(demux, replies_in_reverse_order_reach_their_callers)
{
    struct fake f = { .how = REVERSED, .rounds = 50 };
    struct caller c[THREADS];

    fake_start(&f);
    CU_OK(cuInit(0));
    call_from_threads(c, f.rounds);
    fake_stop(&f);
    for (int i = 0; i < THREADS; i++) {
        cr_expect_eq(c[i].rc, CUDA_SUCCESS, "caller %d: %s", i, ds_test_cu_name(c[i].rc));
        cr_expect_eq(c[i].wrong, 0, "caller %d got %d replies of others", i, c[i].wrong);
    }
}

/* After a reply that is nobody's, the session is lost: every call still waiting fails,
 * the one answered before it does not, and a later call fails at once. */
Test(demux, a_reply_nobody_awaits_fails_every_waiting_call)
{
    struct fake f = { .how = STRANGER, .rounds = 1 };
    struct caller c[THREADS];
    size_t free_b, total;
    int answered = 0;

    fake_start(&f);
    CU_OK(cuInit(0));
    call_from_threads(c, 1);
    fake_stop(&f);
    for (int i = 0; i < THREADS; i++) {
        cr_expect_eq(c[i].wrong, 0, "caller %d got a reply of another", i);
        if (c[i].rc == CUDA_SUCCESS)
            answered++;
        else
            cr_expect_eq(c[i].rc, CUDA_ERROR_DEVICE_UNAVAILABLE, "caller %d: %s", i,
                         ds_test_cu_name(c[i].rc));
    }
    cr_expect_eq(answered, 1);
    CU_OK(cuCtxSetCurrent((CUcontext)(uintptr_t)1));
    CU_IS(cuMemGetInfo(&free_b, &total), CUDA_ERROR_DEVICE_UNAVAILABLE);
}

Test(demux, a_connection_that_ends_fails_every_waiting_call)
{
    struct fake f = { .how = HANG_UP, .rounds = 1 };
    struct caller c[THREADS];
    size_t free_b, total;

    fake_start(&f);
    CU_OK(cuInit(0));
    call_from_threads(c, 1);
    fake_stop(&f);
    for (int i = 0; i < THREADS; i++)
        cr_expect_eq(c[i].rc, CUDA_ERROR_DEVICE_UNAVAILABLE, "caller %d: %s", i,
                     ds_test_cu_name(c[i].rc));
    CU_OK(cuCtxSetCurrent((CUcontext)(uintptr_t)1));
    CU_IS(cuMemGetInfo(&free_b, &total), CUDA_ERROR_DEVICE_UNAVAILABLE);
}

/* ---- Threads of a tenant of a real server ---- */

#define ROUNDS 64
/* Every eighth round copies BIG bytes: two chunks where bytes go in-band, two slots of
 * the staging ring where they are staged. */
#define BIG ((5u << 20) + 4099)
#define SMALL 3000u

static struct ds_test_server srv;

static void start(void)
{
    /* The executor's summary of the calls it served and where they came from. */
    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(threads, .init = start, .fini = stop, .timeout = 240);

struct worker {
    int (*job)(struct worker *);
    int id;
    CUcontext ctx;
    pthread_barrier_t *start;
    char why[200];
};

static int failed(struct worker *w, int round, const char *what, CUresult rc)
{
    snprintf(w->why, sizeof(w->why), "thread %d, round %d: %s -> %s", w->id, round, what,
             ds_test_cu_name(rc));
    return -1;
}

#define STEP(w, round, call)                              \
    do {                                                  \
        CUresult rc_ = (call);                            \
        if (rc_ != CUDA_SUCCESS)                          \
            return failed((w), (round), #call, rc_);      \
    } while (0)

/* A buffer to the device and back on the thread's stream, waited for through the
 * stream or an event, and compared byte for byte. */
static int one_round(struct worker *w, int r, CUstream s, CUevent ev, unsigned char *src,
                     unsigned char *dst)
{
    size_t n = r % 8 == 7 ? BIG : SMALL + (size_t)r * 131 + (size_t)w->id * 17;
    CUdeviceptr d;

    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 7 + (size_t)r * 13 + (size_t)w->id * 101);
    STEP(w, r, cuMemAlloc(&d, n));
    STEP(w, r, cuMemcpyHtoDAsync(d, src, n, s));
    if (r % 2 == 0) {
        STEP(w, r, cuStreamSynchronize(s));
    } else {
        STEP(w, r, cuEventRecord(ev, s));
        STEP(w, r, cuEventSynchronize(ev));
    }
    memset(dst, 0, n);
    if (r % 3 == 0) {
        STEP(w, r, cuMemcpyDtoH(dst, d, n));
    } else {
        STEP(w, r, cuMemcpyDtoHAsync(dst, d, n, s));
        STEP(w, r, cuStreamSynchronize(s));
    }
    if (memcmp(src, dst, n) != 0) {
        snprintf(w->why, sizeof(w->why), "thread %d, round %d: %zu bytes came back changed",
                 w->id, r, n);
        return -1;
    }
    STEP(w, r, cuMemFree(d));
    return 0;
}

static int stream_rounds(struct worker *w, unsigned char *src, unsigned char *dst)
{
    CUstream s;
    CUevent ev;

    STEP(w, -1, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    STEP(w, -1, cuEventCreate(&ev, 0));
    for (int r = 0; r < ROUNDS; r++)
        if (one_round(w, r, s, ev, src, dst) != 0)
            return -1;
    STEP(w, -1, cuEventDestroy(ev));
    STEP(w, -1, cuStreamDestroy(s));
    return 0;
}

static int rounds(struct worker *w)
{
    unsigned char *src = malloc(BIG), *dst = malloc(BIG);
    int rc = -1;

    if (src == NULL || dst == NULL)
        snprintf(w->why, sizeof(w->why), "thread %d: out of memory", w->id);
    else
        rc = stream_rounds(w, src, dst);
    free(src);
    free(dst);
    return rc;
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    CUresult rc = cuCtxSetCurrent(w->ctx);

    pthread_barrier_wait(w->start);
    if (rc != CUDA_SUCCESS)
        failed(w, -1, "cuCtxSetCurrent", rc);
    else
        w->job(w);
    return NULL;
}

/* THREADS threads doing rounds at once, and `extra` on one more unless it is NULL.
 * Returns 0, or 1 with the first failure in why. */
static int run_threads(int (*extra)(struct worker *), char *why, size_t len)
{
    int n = THREADS + (extra != NULL);
    struct worker w[THREADS + 1];
    pthread_t t[THREADS + 1];
    pthread_barrier_t go;
    CUcontext ctx;

    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == NULL) {
        snprintf(why, len, "no current context");
        return 1;
    }
    pthread_barrier_init(&go, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){ .job = i < THREADS ? rounds : extra, .id = i, .ctx = ctx,
                                .start = &go };
        if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0) {
            snprintf(why, len, "thread %d could not start", i);
            return 1; /* the others wait at the barrier until the tenant exits */
        }
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < n; i++) {
        if (w[i].why[0] != '\0') {
            snprintf(why, len, "%s", w[i].why);
            return 1;
        }
    }
    return 0;
}

/* Connect and run the threads; returns as run_threads does. */
static int connect_and_run(int (*extra)(struct worker *), char *why, size_t len)
{
    CUresult rc = ds_test_connect();

    if (rc != CUDA_SUCCESS) {
        snprintf(why, len, "connecting: %s", ds_test_cu_name(rc));
        return 1;
    }
    return run_threads(extra, why, len);
}

/* Run `tenant` in a child process (a tenant connects once per process), assert that it
 * succeeded, and wait for its executor's summary, logged when the connection ends. */
static void run_tenant(int (*tenant)(char *, size_t))
{
    char why[256] = "";
    int fds[2], status;
    ssize_t n;
    pid_t pid;

    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int rc;

        close(fds[0]);
        rc = tenant(why, sizeof(why));
        if (rc != 0 && write(fds[1], why, strlen(why)) < 0)
            rc = 2;
        _exit(rc);
    }
    close(fds[1]);
    n = read(fds[0], why, sizeof(why) - 1);
    why[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tenant failed (status 0x%x): %s",
              status, why);
    for (int i = 0; i < 250 && !ds_test_log_has(&srv, "calls from the ring:"); i++)
        usleep(20000);
    cr_assert(ds_test_log_has(&srv, "calls from the ring:"), "no summary from the executor");
}

static int ring_tenant(char *why, size_t len)
{
    return connect_and_run(NULL, why, len);
}

Test(threads, eight_threads_through_the_ring)
{
    run_tenant(ring_tenant);
    cr_expect(!ds_test_log_has(&srv, "calls from the ring: 0,"), "no call came through the ring");
}

static int socket_tenant(char *why, size_t len)
{
    setenv("DETSHARE_RING", "0", 1);
    return connect_and_run(NULL, why, len);
}

Test(threads, eight_threads_over_the_unix_socket_without_the_ring)
{
    run_tenant(socket_tenant);
    cr_expect(ds_test_log_has(&srv, "calls from the ring: 0,"), "calls came through a ring");
}

static int tcp_tenant(char *why, size_t len)
{
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    return connect_and_run(NULL, why, len);
}

/* Device-to-host copies of BIG bytes are posted chunks here, several threads' at once. */
Test(threads, eight_threads_over_tcp)
{
    run_tenant(tcp_tenant);
    cr_expect(ds_test_log_has(&srv, "connected on tcp:127.0.0.1"), "not a TCP tenant");
    cr_expect(ds_test_log_has(&srv, "served memcpy_dtoh:"), "no in-band copy to the host");
}

/* Load a module larger than the ring, which goes over the socket once the ring is
 * drained, and launch its kernel, a few times over; a fill after each launch on the
 * same stream must then be what comes back. */
static int large_modules(struct worker *w, const void *img)
{
    int out[64], v, n = 64;
    void *params[] = { NULL, &v, &n };
    CUdeviceptr d;
    CUstream s;

    STEP(w, -1, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    STEP(w, -1, cuMemAlloc(&d, sizeof(out)));
    params[0] = &d;
    for (v = 1; v <= 4; v++) {
        CUmodule m;
        CUfunction f;

        STEP(w, v, cuModuleLoadData(&m, img));
        STEP(w, v, cuModuleGetFunction(&f, m, "fill"));
        STEP(w, v, cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL));
        STEP(w, v, cuMemsetD32Async(d, (unsigned)v, 64, s));
        STEP(w, v, cuMemcpyDtoHAsync(out, d, sizeof(out), s));
        STEP(w, v, cuStreamSynchronize(s));
        for (int i = 0; i < n; i++) {
            if (out[i] != v) {
                snprintf(w->why, sizeof(w->why), "load %d: out[%d] = %d", v, i, out[i]);
                return -1;
            }
        }
        STEP(w, v, cuModuleUnload(m));
    }
    STEP(w, -1, cuMemFree(d));
    STEP(w, -1, cuStreamDestroy(s));
    return 0;
}

static int load_large_modules(struct worker *w)
{
    void *img = ds_test_padded_cubin(DS_KERNEL_DIR "/launch.cubin",
                                     (size_t)DS_RING_SIZE + (1u << 20));
    int rc = -1;

    if (img == NULL)
        snprintf(w->why, sizeof(w->why), "no padded cubin");
    else
        rc = large_modules(w, img);
    free(img);
    return rc;
}

static int module_tenant(char *why, size_t len)
{
    return connect_and_run(load_large_modules, why, len);
}

Test(threads, a_module_larger_than_the_ring_loads_while_others_call)
{
    run_tenant(module_tenant);
    cr_expect(!ds_test_log_has(&srv, "from the socket: 0"), "no call came over the socket");
    cr_expect(!ds_test_log_has(&srv, "calls from the ring: 0,"), "no call came through the ring");
}

/* With the host arena all taken by page-locked memory, there is no staging ring:
 * pageable copies go in-band, and a BIG copy's first chunk, a batched call larger than
 * the call ring, goes over the socket with its round trip, from several threads. */
static int full_arena_tenant(char *why, size_t len)
{
    CUresult rc = ds_test_connect();
    void *pinned;

    if (rc == CUDA_SUCCESS)
        rc = cuMemHostAlloc(&pinned, DS_ARENA_SIZE - (8u << 20), 0);
    if (rc != CUDA_SUCCESS) {
        snprintf(why, len, "filling the arena: %s", ds_test_cu_name(rc));
        return 1;
    }
    return run_threads(NULL, why, len);
}

Test(threads, batched_calls_larger_than_the_ring_from_several_threads)
{
    DS_SIM_ONLY(); /* a real GPU would page-lock the whole arena */
    run_tenant(full_arena_tenant);
    cr_expect(ds_test_log_has(&srv, "served memcpy_htod_async:"), "no in-band copy to the device");
    cr_expect(!ds_test_log_has(&srv, "calls from the ring: 0,"), "no call came through the ring");
}
