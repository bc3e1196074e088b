/* A synchronising call holds its own thread only: while one thread of a tenant waits
 * for a stream, an event or the whole context, the others go on calling and get their
 * answers, as with the driver; and a tenant that leaves while one of its threads waits
 * frees everything without disturbing the server. */
#include "ds_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static struct ds_test_server srv;
static CUcontext ctx;

/* The long work a thread waits for, in ms: three kernels of a third of it each. */
#define LONG_MS 300.0

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ctx = ds_test_ctx();
}

static void start_server_only(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(waits, .init = start, .fini = stop);
TestSuite(waits_leave, .init = start_server_only, .fini = stop);

static double now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A third of LONG_MS of device time on s.  On the sim a kernel's time grows with its
 * grid: 26.4 M blocks of 256 threads are 100 000 waves of 1 us on 132 SMs.  On a GPU the
 * spin kernel waits on the device's clock.  No assertions: a peer process runs it too. */
static CUresult launch_long(CUstream s)
{
    static CUmodule m;
    static CUdeviceptr dummy;
    CUfunction f;
    CUresult rc = CUDA_SUCCESS;
    unsigned long long ns = (unsigned long long)(LONG_MS / 3 * 1e6);
    int v = 0, n = 0;
    void *fill[] = { &dummy, &v, &n }, *spin[] = { &ns };

    if (m == NULL)
        rc = cuModuleLoad(&m, DS_KERNEL_DIR "/launch.fatbin");
    if (rc == CUDA_SUCCESS && dummy == 0)
        rc = cuMemAlloc(&dummy, 4);
    if (rc == CUDA_SUCCESS)
        rc = cuModuleGetFunction(&f, m, ds_test_on_sim() ? "fill" : "spin");
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ds_test_on_sim())
        return cuLaunchKernel(f, 26400000, 1, 1, 256, 1, 1, 0, s, fill, NULL);
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, spin, NULL);
}

static void long_kernel(CUstream s)
{
    CU_OK(launch_long(s));
}

enum what { STREAM, EVENT, CONTEXT };

struct waiter {
    enum what what;
    CUstream s;
    CUevent e;
    CUresult rc;
    double took_ms;
    atomic_int done;
};

static void *wait_thread(void *p)
{
    struct waiter *w = p;
    double t0 = now_ms();

    w->rc = cuCtxSetCurrent(ctx);
    if (w->rc == CUDA_SUCCESS)
        w->rc = w->what == STREAM  ? cuStreamSynchronize(w->s)
                : w->what == EVENT ? cuEventSynchronize(w->e)
                                   : cuCtxSynchronize();
    w->took_ms = now_ms() - t0;
    atomic_store(&w->done, 1);
    return NULL;
}

/* The calls of a thread that has nothing to do with the long work: each needs its own
 * reply from the executor, and none depends on the long work (cuMemFree would: the
 * driver's free waits for the device, so p is allocated before and freed after). */
static void unrelated_calls(CUstream other, CUdeviceptr p)
{
    CUevent e;
    int v = 7;

    CU_OK(cuMemcpyHtoD(p, &v, sizeof(v)));
    v = 0;
    CU_OK(cuMemcpyDtoH(&v, p, sizeof(v)));
    cr_assert_eq(v, 7);
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemsetD32Async(p, 3, 16, other));
    CU_OK(cuEventRecord(e, other));
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuStreamSynchronize(other));
    CU_OK(cuEventDestroy(e));
}

static void others_go_on(enum what what)
{
    struct waiter w = { .what = what };
    CUdeviceptr p;
    CUstream other;
    pthread_t t;
    double t0, took;

    CU_OK(cuMemAlloc(&p, 1 << 20));
    CU_OK(cuStreamCreate(&w.s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&w.e, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < 3; i++)
        long_kernel(w.s);
    CU_OK(cuEventRecord(w.e, w.s));
    cr_assert(pthread_create(&t, NULL, wait_thread, &w) == 0);
    usleep(30 * 1000); /* the waiter's call is in by now, most likely */
    t0 = now_ms();
    unrelated_calls(other, p);
    CU_IS(cuStreamQuery(w.s), CUDA_ERROR_NOT_READY);
    took = now_ms() - t0;
    cr_assert(!atomic_load(&w.done), "the waiter returned before the long work ended");
    cr_assert_lt(took, LONG_MS / 3, "the other thread's calls took %.1f ms", took);
    pthread_join(t, NULL);
    CU_OK(w.rc);
    cr_assert_geq(w.took_ms, LONG_MS * 0.8, "the wait took %.1f ms", w.took_ms);
    CU_OK(cuStreamQuery(w.s));
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(w.s));
    CU_OK(cuStreamDestroy(other));
    CU_OK(cuEventDestroy(w.e));
}

Test(waits, stream_synchronize_holds_only_its_thread)
{
    others_go_on(STREAM);
}

Test(waits, event_synchronize_holds_only_its_thread)
{
    others_go_on(EVENT);
}

Test(waits, context_synchronize_holds_only_its_thread)
{
    others_go_on(CONTEXT);
}

/* A synchronisation waits for the work submitted before it, not for what another
 * thread submits to the stream while it waits. */
Test(waits, work_submitted_later_is_not_waited_for)
{
    struct waiter w = { .what = STREAM };
    pthread_t t;

    CU_OK(cuStreamCreate(&w.s, CU_STREAM_NON_BLOCKING));
    long_kernel(w.s);
    cr_assert(pthread_create(&t, NULL, wait_thread, &w) == 0);
    usleep(30 * 1000);
    for (int i = 0; i < 6; i++)
        long_kernel(w.s);
    pthread_join(t, NULL);
    CU_OK(w.rc);
    cr_assert_lt(w.took_ms, LONG_MS * 1.5, "the wait took %.1f ms", w.took_ms);
    CU_OK(cuStreamSynchronize(w.s));
    CU_OK(cuStreamDestroy(w.s));
}

/* Already finished work: the reply comes at once, not after an idle executor's sleep. */
Test(waits, idle_stream_synchronize_returns_at_once)
{
    CUstream s;
    double t0, took;

    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamSynchronize(s));
    t0 = now_ms();
    for (int i = 0; i < 100; i++)
        CU_OK(cuStreamSynchronize(s));
    took = now_ms() - t0;
    cr_assert_lt(took, 100.0, "100 synchronisations of an idle stream took %.1f ms", took);
    CU_OK(cuStreamDestroy(s));
}

static CUcontext peer_ctx;

static void *wait_forever(void *p)
{
    if (cuCtxSetCurrent(peer_ctx) == CUDA_SUCCESS)
        cuStreamSynchronize(*(CUstream *)p);
    return NULL;
}

/* The peer starts a long wait on a thread and leaves (with _exit) while it runs. */
static int leave_while_waiting(void *unused)
{
    static CUstream s;
    pthread_t t;

    (void)unused;
    if (ds_test_connect() != CUDA_SUCCESS || cuCtxGetCurrent(&peer_ctx) != CUDA_SUCCESS)
        return 4;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < 3; i++)
        if (launch_long(s) != CUDA_SUCCESS)
            return 3;
    if (pthread_create(&t, NULL, wait_forever, &s) != 0)
        return 2;
    usleep(30 * 1000);
    return 0;
}

Test(waits_leave, a_tenant_leaving_during_a_wait_frees_it)
{
    struct ds_test_peer peer;
    CUstream s;

    ds_test_peer_fork(&peer, leave_while_waiting, NULL);
    ctx = ds_test_ctx();
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
    /* The server goes on serving, and its stop (the fixture) finds a clean log. */
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    long_kernel(s);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}
