/* Stream attributes: set, read back and copied per stream, and carried by every kernel
 * launched on the stream, where the executor checks them as a launch's own (an
 * access-policy window must name the tenant's memory). */
#include "ds_test.h"

#include <string.h>

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

TestSuite(streamattr, .init = start, .fini = stop);

Test(streamattr, set_get_and_copy)
{
    CUstreamAttrValue v, got;
    CUstream a, b;

    CU_OK(cuStreamCreateWithPriority(&a, CU_STREAM_NON_BLOCKING, -1));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
    cr_assert_eq(got.priority, -1);
    CU_OK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
    cr_assert_eq(got.syncPolicy, CU_SYNC_POLICY_AUTO);
    memset(&v, 0, sizeof(v));
    v.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
    CU_OK(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    memset(&v, 0, sizeof(v));
    v.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    CU_OK(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v));
    CU_OK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
    cr_assert_eq(got.syncPolicy, CU_SYNC_POLICY_BLOCKING_SYNC);
    CU_OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
    cr_assert_eq(got.syncPolicy, CU_SYNC_POLICY_AUTO);
    CU_OK(cuStreamCopyAttributes(b, a));
    CU_OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
    cr_assert_eq(got.syncPolicy, CU_SYNC_POLICY_BLOCKING_SYNC);
    CU_OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &got));
    cr_assert_eq(got.memSyncDomain, CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    CU_IS(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &got), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, NULL),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(a));
    CU_OK(cuStreamDestroy(b));
}

static void launch_fill(CUstream s, CUdeviceptr out)
{
    static CUfunction f;
    int v = 5, n = 64;
    void *params[] = { &out, &v, &n };

    if (f == NULL)
        CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL));
}

/* The window goes with each launch on the stream: one over the tenant's memory is
 * served; one over memory that is not the tenant's fails the launch. */
Test(streamattr, access_policy_window_goes_with_launches)
{
    CUstreamAttrValue v;
    CUdeviceptr out;
    CUstream s;

    CU_OK(cuMemAlloc(&out, 1 << 20));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(&v, 0, sizeof(v));
    v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)out;
    v.accessPolicyWindow.num_bytes = 1 << 20;
    v.accessPolicyWindow.hitRatio = 0.5f;
    v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
    v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
    CU_OK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    launch_fill(s, out);
    CU_OK(cuStreamSynchronize(s));
    v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)(out + (2 << 20));
    CU_OK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    launch_fill(s, out);
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(out));
}
