/* Streams and events on the sim device: in-order execution, the legacy default
 * stream's rules, cross-stream waits, modelled timings, and batched-call errors. */
#include "ds_test.h"

static struct ds_test_server srv;
static CUdeviceptr big_a, big_b;

#define BIG (256ull << 20)
/* The sim's cost of a 256 MiB device-to-device copy: 2 us + 512 MiB at 1.5 TB/s. */
#define BIG_COPY_MS (0.002 + 2.0 * (double)BIG / 1.5e9)

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&big_a, BIG));
    CU_OK(cuMemAlloc(&big_b, BIG));
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(stream, .init = start, .fini = stop);

static float elapsed(CUevent a, CUevent b)
{
    float ms;

    CU_OK(cuEventElapsedTime(&ms, a, b));
    return ms;
}

/* A kernel that touches nothing, over a grid wide enough to take milliseconds: unlike a
 * copy it costs the sim's host nothing, so modelled time does not depend on host speed. */
static CUfunction wide(void)
{
    static CUfunction f;

    if (f == NULL)
        CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    return f;
}

static void wide_on(CUstream s)
{
    int v = 0, n = 0;
    void *params[] = { &big_a, &v, &n };

    CU_OK(cuLaunchKernel(wide(), 2640000, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

/* How long one wide kernel takes, measured alone on a stream of its own. */
static double wide_ms(void)
{
    CUevent a, b;
    CUstream s;

    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    wide_on(s); /* warm-up */
    CU_OK(cuEventRecord(a, s));
    for (int i = 0; i < 4; i++)
        wide_on(s);
    CU_OK(cuEventRecord(b, s));
    CU_OK(cuEventSynchronize(b));
    return elapsed(a, b) / 4.0;
}

Test(stream, event_timing_follows_the_model)
{
    CUevent e0, e1;
    CUstream s;
    float ms;

    DS_SIM_ONLY();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e0, 0));
    CU_OK(cuEventCreate(&e1, 0));
    CU_OK(cuEventRecord(e0, s));
    CU_OK(cuMemcpyDtoDAsync(big_b, big_a, BIG, s));
    CU_OK(cuEventRecord(e1, s));
    CU_OK(cuEventSynchronize(e1));
    ms = elapsed(e0, e1);
    cr_assert_geq(ms, BIG_COPY_MS * 0.999, "%.3f ms", ms);
    cr_assert_lt(ms, BIG_COPY_MS + 20.0, "%.3f ms", ms);
}

Test(stream, work_completes_in_order_and_queries_see_it)
{
    CUevent done;
    CUstream s;

    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuEventCreate(&done, 0));
    CU_OK(cuEventQuery(done)); /* never recorded counts as complete */
    for (int i = 0; i < 20; i++)
        CU_OK(cuMemcpyDtoDAsync(big_b, big_a, BIG, s));
    /* Then wide kernels that touch nothing: on the sim the copies' bytes move on the host
     * while the executor takes them, which a slow host can outlast, but these leave about
     * 80 ms of modelled work after the last call is taken. */
    for (int i = 0; i < 8; i++)
        wide_on(s);
    CU_OK(cuEventRecord(done, s));
    CU_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_IS(cuEventQuery(done), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamQuery(s));
    CU_OK(cuEventQuery(done));
}

Test(stream, wait_event_orders_streams_and_others_run_free)
{
    CUstream s1, s2, s3;
    CUevent e1, e2, e3, t0;
    double one = wide_ms();

    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&t0, 0));
    CU_OK(cuEventCreate(&e1, 0));
    CU_OK(cuEventCreate(&e2, 0));
    CU_OK(cuEventCreate(&e3, 0));
    CU_OK(cuEventRecord(t0, s1));
    for (int i = 0; i < 5; i++)
        wide_on(s1);
    CU_OK(cuEventRecord(e1, s1));
    CU_OK(cuStreamWaitEvent(s2, e1, 0));
    CU_OK(cuEventRecord(e2, s2));
    CU_OK(cuEventRecord(e3, s3));
    CU_OK(cuCtxSynchronize());
    cr_assert_geq(elapsed(e1, e2), 0.0f, "s2 ran after what it waited for");
    cr_assert_geq(elapsed(t0, e2), 5 * one * 0.9);
    cr_assert_lt(elapsed(t0, e3), 5 * one * 0.5, "s3 was not held back by s1");
}

Test(stream, legacy_default_stream_synchronises_blocking_streams)
{
    CUstream blocking, nonblocking;
    CUevent t0, eb, enb;
    double one = wide_ms();

    CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CU_OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&t0, 0));
    CU_OK(cuEventCreate(&eb, 0));
    CU_OK(cuEventCreate(&enb, 0));
    CU_OK(cuEventRecord(t0, NULL));
    for (int i = 0; i < 5; i++)
        wide_on(NULL);
    CU_OK(cuEventRecord(eb, blocking));
    CU_OK(cuEventRecord(enb, nonblocking));
    CU_OK(cuCtxSynchronize());
    cr_assert_geq(elapsed(t0, eb), 5 * one * 0.9, "a blocking stream waits");
    cr_assert_lt(elapsed(t0, enb), 5 * one * 0.5, "a non-blocking one does not");
}

Test(stream, traits_and_handles)
{
    CUstream s;
    CUcontext ctx, cur;
    unsigned flags;
    unsigned long long id1, id2;
    int prio, least, greatest;

    CU_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    CU_OK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -100));
    CU_OK(cuStreamGetPriority(s, &prio));
    cr_assert_eq(prio, greatest, "clamped like CUDA");
    CU_OK(cuStreamGetFlags(s, &flags));
    cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamGetCtx(s, &ctx));
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(ctx, cur);
    CU_OK(cuStreamGetId(s, &id1));
    CU_OK(cuStreamGetId(CU_STREAM_LEGACY, &id2));
    cr_assert_neq(id1, id2);
    CU_OK(cuStreamDestroy(s));
    CU_IS(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuStreamSynchronize((CUstream)(uintptr_t)0x4242), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuStreamCreate(&s, 0x80), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
}

Test(stream, event_rules)
{
    CUevent a, b, untimed;
    float ms;

    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    CU_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    CU_IS(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
    CU_OK(cuEventRecord(a, NULL));
    CU_OK(cuEventRecord(untimed, NULL));
    CU_OK(cuEventRecord(b, NULL));
    CU_OK(cuEventSynchronize(b));
    cr_assert_geq(elapsed(a, b), 0.0f);
    CU_IS(cuEventElapsedTime(&ms, a, untimed), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuEventCreate(&a, 0x100), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuEventDestroy(b));
    CU_IS(cuEventQuery(b), CUDA_ERROR_INVALID_HANDLE);
}

Test(stream, batched_errors_surface_at_the_next_synchronous_call)
{
    unsigned char buf[16] = { 0 };
    CUstream s;

    CU_OK(cuStreamCreate(&s, 0));
    /* Asynchronous calls return at once, as CUDA's do... */
    CU_OK(cuMemcpyHtoDAsync(0xbad0000, buf, sizeof(buf), s));
    CU_OK(cuMemsetD8Async(big_a, 1, 16, s));
    /* ...and the first error waits for the next synchronous call, once. */
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(buf, big_a, 16));
    cr_assert_eq(buf[15], 1, "the good call after the bad one still ran");
}

