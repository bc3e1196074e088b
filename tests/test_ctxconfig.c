/* Context and function preferences: the cache preference reads back per context as
 * set, the bank size is the device's, and bad values are refused as the driver refuses
 * them. */
#include "ds_test.h"

#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(ctxconfig, .init = start, .fini = stop);

/* cuda.h marks the shared-memory configuration calls deprecated; programs still call them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

Test(ctxconfig, cache_preference_is_per_context)
{
    CUcontext primary, other;
    CUfunc_cache c = (CUfunc_cache)-1;

    CU_OK(cuCtxGetCurrent(&primary));
    CU_OK(cuCtxGetCacheConfig(&c));
    cr_assert_eq(c, CU_FUNC_CACHE_PREFER_NONE);
    CU_OK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
    CU_OK(cuCtxGetCacheConfig(&c));
    cr_assert_eq(c, CU_FUNC_CACHE_PREFER_SHARED);
    CU_OK(cuCtxCreate(&other, NULL, 0, 0));
    CU_OK(cuCtxGetCacheConfig(&c));
    cr_assert_eq(c, CU_FUNC_CACHE_PREFER_NONE);
    CU_OK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuCtxGetCacheConfig(&c));
    cr_assert_eq(c, CU_FUNC_CACHE_PREFER_SHARED);
    CU_IS(cuCtxSetCacheConfig((CUfunc_cache)7), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuCtxGetCacheConfig(NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxDestroy(other));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_NONE));
}

Test(ctxconfig, bank_size_is_the_devices)
{
    CUsharedconfig c = (CUsharedconfig)-1;
    CUfunction f;

    CU_OK(cuCtxGetSharedMemConfig(&c));
    cr_assert_eq(c, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    CU_OK(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    CU_OK(cuCtxGetSharedMemConfig(&c));
    cr_assert_eq(c, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    CU_IS(cuCtxSetSharedMemConfig((CUsharedconfig)9), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuFuncSetSharedMemConfig(f, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE));
    CU_IS(cuFuncSetSharedMemConfig(f, (CUsharedconfig)9), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuFuncSetSharedMemConfig(NULL, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE),
          CUDA_ERROR_INVALID_HANDLE);
}

Test(ctxconfig, no_current_context_is_refused)
{
    CUcontext none = NULL;
    CUfunc_cache c;
    CUsharedconfig b;

    CU_OK(cuCtxSetCurrent(none));
    CU_IS(cuCtxGetCacheConfig(&c), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuCtxGetSharedMemConfig(&b), CUDA_ERROR_INVALID_CONTEXT);
}

Test(ctxconfig, set_flags_of_the_current_context)
{
    CUcontext primary, other;
    unsigned flags = 0;

    CU_OK(cuCtxGetCurrent(&primary));
    CU_OK(cuCtxCreate(&other, NULL, 0, 0));
    CU_OK(cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC));
    CU_OK(cuCtxGetFlags(&flags));
    cr_assert_eq(flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_BLOCKING_SYNC);
    CU_IS(cuCtxSetFlags(0x80000000u), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuCtxGetFlags(&flags));
    cr_assert_eq(flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_AUTO);
    CU_OK(cuCtxSetFlags(CU_CTX_SCHED_SPIN));
    CU_OK(cuCtxGetFlags(&flags));
    cr_assert_eq(flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_SPIN);
    CU_OK(cuCtxSetFlags(CU_CTX_SCHED_AUTO));
    CU_OK(cuCtxDestroy(other));
    CU_OK(cuCtxSetCurrent(primary));
}

/* Read on stream s into page-locked v: the legacy stream waits too after
 * cuCtxWaitEvent, and freeing page-locked memory may synchronise the device. */
static uint32_t read32(CUdeviceptr p, CUstream s, uint32_t *v)
{
    *v = 0xffffffffu;
    CU_OK(cuMemcpyDtoHAsync(v, p, sizeof(*v), s));
    CU_OK(cuStreamSynchronize(s));
    return *v;
}

/* cuCtxRecordEvent stands behind every stream of the context, cuCtxWaitEvent holds every
 * one of them: shown with a stream held by a stream memory wait until released. */
Test(ctxconfig, context_wide_record_and_wait)
{
    CUstream held, other, writer;
    CUdeviceptr flag, out;
    CUevent all, first;
    CUcontext ctx;
    uint32_t *v;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuMemAllocHost((void **)&v, sizeof(*v)));
    CU_OK(cuMemAlloc(&flag, 4));
    CU_OK(cuMemAlloc(&out, 4));
    CU_OK(cuMemsetD32(flag, 0, 1));
    CU_OK(cuMemsetD32(out, 0, 1));
    CU_OK(cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&all, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&first, CU_EVENT_DISABLE_TIMING));

    CU_OK(cuStreamWaitValue32(held, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuEventRecord(first, held));
    CU_OK(cuCtxRecordEvent(ctx, all));
    CU_OK(cuCtxWaitEvent(NULL, first));
    CU_OK(cuStreamWriteValue32(other, out, 4, 0));
    usleep(20000);
    CU_IS(cuEventQuery(all), CUDA_ERROR_NOT_READY);
    CU_IS(cuStreamQuery(other), CUDA_ERROR_NOT_READY);
    /* A stream made after the wait is free: it reads, then releases the held one. */
    CU_OK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    cr_assert_eq(read32(out, writer, v), 0, "a stream ran past cuCtxWaitEvent");
    CU_OK(cuStreamWriteValue32(writer, flag, 1, 0));
    CU_OK(cuEventSynchronize(all));
    CU_OK(cuStreamSynchronize(other));
    cr_assert_eq(read32(out, writer, v), 4);
    CU_IS(cuCtxRecordEvent(ctx, NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventDestroy(all));
    CU_OK(cuEventDestroy(first));
    CU_OK(cuStreamDestroy(held));
    CU_OK(cuStreamDestroy(other));
    CU_OK(cuStreamDestroy(writer));
    CU_OK(cuMemFreeHost(v));
}
