/* Primary and created contexts, the per-thread current-context stack, and what a
 * context's end frees. */
#include "ds_test.h"

#include <pthread.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    CU_OK(cuInit(0));
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(context, .init = start, .fini = stop);

Test(context, primary_refcount_and_state)
{
    CUcontext a, b;
    unsigned flags;
    int active;

    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC));
    CU_OK(cuDevicePrimaryCtxRetain(&a, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&b, 0));
    cr_assert_eq(a, b, "one primary context per device");
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1);
    cr_assert_eq(flags, CU_CTX_SCHED_BLOCKING_SYNC);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1, "still retained once");
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    CU_IS(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuDevicePrimaryCtxRetain(&a, 3), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDevicePrimaryCtxSetFlags(0, 0x10000), CUDA_ERROR_INVALID_VALUE);
}

Test(context, no_current_context_is_an_error)
{
    CUdeviceptr p;
    CUstream s;
    CUcontext cur = (CUcontext)1;

    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_null(cur);
    CU_IS(cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
}

Test(context, push_pop_and_queries)
{
    CUcontext c1, c2, cur;
    CUdevice dev;
    unsigned v;
    unsigned long long id1, id2;

    CU_OK(cuCtxCreate(&c1, NULL, 0, 0));
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, c1, "a created context becomes current");
    CU_OK(cuCtxCreate(&c2, NULL, CU_CTX_SCHED_SPIN, 0));
    CU_OK(cuCtxGetFlags(&v));
    cr_assert_eq(v, CU_CTX_SCHED_SPIN);
    CU_OK(cuCtxGetId(c1, &id1));
    CU_OK(cuCtxGetId(c2, &id2));
    cr_assert_neq(id1, id2);
    CU_OK(cuCtxPopCurrent(&cur));
    cr_assert_eq(cur, c2);
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, c1);
    CU_OK(cuCtxGetDevice(&dev));
    cr_assert_eq(dev, 0);
    CU_OK(cuCtxGetApiVersion(c1, &v));
    cr_assert_geq(v, 3020);
    CU_OK(cuCtxPushCurrent(c2));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, c1, "destroying the current context pops it");
    CU_IS(cuCtxDestroy(c2), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxDestroy(c1));
}

Test(context, destroy_frees_what_the_context_held)
{
    CUcontext c, p;
    CUdeviceptr d;
    CUstream s;
    size_t free0, free1, total;

    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(cuCtxSetCurrent(p));
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    CU_OK(cuMemAlloc(&d, 1 << 30));
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, 1 << 30);
    CU_OK(cuCtxDestroy(c));
    CU_OK(cuCtxSetCurrent(p));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free1, free0, "the context's allocation was freed with it");
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
}

Test(context, primary_reset_frees_everything)
{
    CUcontext p;
    CUdeviceptr d;
    size_t free0, free1, total;

    p = ds_test_ctx();
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAlloc(&d, 256 << 20));
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(cuCtxSetCurrent(p));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free1, free0);
    CU_IS(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
}

static void *other_thread(void *arg)
{
    CUcontext cur = (CUcontext)1;

    (void)arg;
    cuCtxGetCurrent(&cur);
    return cur;
}

Test(context, current_context_is_per_thread)
{
    pthread_t t;
    void *seen;

    ds_test_ctx();
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, &seen);
    cr_assert_null(seen, "a new thread starts with no current context");
}
