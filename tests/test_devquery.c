/* Device queries beyond the attribute table: peer questions answered as the driver does
 * on a machine with one GPU, the deprecated property block, and what only the device can
 * tell (LUID, 1-D linear texture widths, host atomics).  On a GPU the answers are
 * compared with the real driver's, asked natively in the same test (native_devquery). */
#include "ds_test.h"

#include <stdio.h>
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

TestSuite(devquery, .init = start, .fini = stop);

static int attr(CUdevice_attribute a)
{
    int v = -1;

    CU_OK(cuDeviceGetAttribute(&v, a, 0));
    return v;
}

Test(devquery, one_device_has_no_peer)
{
    CUcontext ctx, other;
    int can = -1, v;

    CU_OK(cuDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0);
    CU_IS(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceCanAccessPeer(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0),
          CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceGetP2PAttribute(NULL, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuCtxCreate(&other, NULL, 0, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_IS(cuCtxEnablePeerAccess(other, 0), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuCtxEnablePeerAccess(other, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuCtxDisablePeerAccess(other), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    CU_IS(cuCtxEnablePeerAccess((CUcontext)(uintptr_t)0x1234, 0), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxDestroy(other));
}

/* cuda.h marks cuDeviceGetProperties deprecated; programs still call it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

Test(devquery, properties_are_the_attributes)
{
    CUdevprop p;

    memset(&p, 0, sizeof(p));
    CU_OK(cuDeviceGetProperties(&p, 0));
    cr_assert_eq(p.maxThreadsPerBlock, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
    cr_assert_eq(p.maxThreadsDim[2], attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z));
    cr_assert_eq(p.maxGridSize[0], attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X));
    cr_assert_eq(p.sharedMemPerBlock, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
    cr_assert_eq(p.SIMDWidth, 32);
    cr_assert_eq(p.clockRate, attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
    cr_assert_eq(p.textureAlign, attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
    cr_assert_gt(p.regsPerBlock, 0);
    CU_IS(cuDeviceGetProperties(&p, 1), CUDA_ERROR_INVALID_DEVICE);
}

/* A tenant never chooses SMs: no affinity offered, and its context spans the device. */
Test(devquery, execution_affinity_is_the_whole_device)
{
    CUexecAffinityParam p;
    int pi = -1;

    CU_OK(cuDeviceGetExecAffinitySupport(&pi, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0));
    cr_assert_eq(pi, 0);
    CU_OK(cuCtxGetExecAffinity(&p, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
    cr_assert_eq((int)p.param.smCount.val, attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
}

Test(devquery, stream_device)
{
    CUdevice d = -1;
    CUstream s;

    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuStreamGetDevice(s, &d));
    cr_assert_eq(d, 0);
    CU_OK(cuStreamGetDevice(NULL, &d));
    CU_IS(cuStreamGetDevice((CUstream)(uintptr_t)0x4321, &d), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuStreamDestroy(s));
}

/* detshare's answers, in native_devquery's format. */
static void ours(char *out, size_t len)
{
    CUatomicOperation ops[CU_ATOMIC_OPERATION_MAX];
    unsigned caps[CU_ATOMIC_OPERATION_MAX], mask = 0;
    unsigned long long id = 0;
    char luid[8] = { 0 };
    size_t width = 0, used;
    int can = -1, v = -1;
    CUresult rc;

    rc = cuDeviceGetLuid(luid, &mask, 0);
    memcpy(&id, luid, sizeof(id));
    used = (size_t)snprintf(out, len, "luid %d %llx %u\n", rc, id, mask);
    rc = cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, 0);
    used += (size_t)snprintf(out + used, len - used, "tex1d_float4 %d %zu\n", rc, width);
    rc = cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0);
    used += (size_t)snprintf(out + used, len - used, "tex1d_u8 %d %zu\n", rc, width);
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++)
        ops[i] = (CUatomicOperation)i;
    memset(caps, 0xff, sizeof(caps));
    rc = cuDeviceGetHostAtomicCapabilities(caps, ops, CU_ATOMIC_OPERATION_MAX, 0);
    used += (size_t)snprintf(out + used, len - used, "host_atomics %d", rc);
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++)
        used += (size_t)snprintf(out + used, len - used, " %u", rc == CUDA_SUCCESS ? caps[i] : 0);
    used += (size_t)snprintf(out + used, len - used, "\n");
    rc = cuDeviceCanAccessPeer(&can, 0, 0);
    used += (size_t)snprintf(out + used, len - used, "can_access_peer %d %d\n", rc, can);
    rc = cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0);
    snprintf(out + used, len - used, "p2p_attribute %d\n", rc);
}

/* The sim answers as an H100 on Linux does (docs/sim-device.md). */
Test(devquery, device_only_answers_on_the_sim)
{
    unsigned caps[2] = { 7, 7 }, mask;
    CUatomicOperation ops[2] = { CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_CAS };
    CUatomicOperation bad = CU_ATOMIC_OPERATION_MAX;
    size_t width = 0;
    char luid[8];

    DS_SIM_ONLY();
    CU_IS(cuDeviceGetLuid(luid, &mask, 0), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, 0));
    cr_assert_eq(width, (size_t)1 << 28);
    CU_OK(cuDeviceGetHostAtomicCapabilities(caps, ops, 2, 0));
    cr_assert_eq(caps[0], 0);
    cr_assert_eq(caps[1], 0);
    CU_IS(cuDeviceGetHostAtomicCapabilities(caps, &bad, 1, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceGetHostAtomicCapabilities(caps, ops, 2, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceGetP2PAtomicCapabilities(caps, ops, 2, 0, 0), CUDA_ERROR_INVALID_DEVICE);
}

/* On a GPU: every answer equals the real driver's, asked natively. */
Test(devquery, answers_equal_the_native_drivers)
{
    char mine[1024], native[1024] = "";
    size_t n = 0;
    FILE *p;

    if (ds_test_on_sim())
        cr_skip_test("compares with the real driver");
    ours(mine, sizeof(mine));
    p = popen("env -u LD_LIBRARY_PATH -u LD_PRELOAD " DS_NATIVE_DEVQUERY, "r");
    cr_assert_not_null(p);
    n = fread(native, 1, sizeof(native) - 1, p);
    native[n] = '\0';
    cr_assert_eq(pclose(p), 0, "native_devquery failed: %s", native);
    cr_assert_str_eq(mine, native);
}
