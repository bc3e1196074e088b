/* The batched memory calls of CUDA 12.8 and 13 (copies between host and device
 * pointers, 1-D and 3-D, prefetches and discards of managed memory) with the driver's
 * argument checks, and cuPointerSetAttribute. */
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

TestSuite(batchcopy, .init = start, .fini = stop);

#define N 4096

Test(batchcopy, copies_between_host_and_device)
{
    CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
    unsigned char *host, *back;
    CUdeviceptr a, b, dsts[3], srcs[3];
    size_t sizes[3] = { N, N, N }, idx = 0;
    CUstream s;

    CU_OK(cuMemAllocHost((void **)&host, N));
    CU_OK(cuMemAllocHost((void **)&back, N));
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 1);
    memset(back, 0, N);
    CU_OK(cuMemAlloc(&a, N));
    CU_OK(cuMemAlloc(&b, N));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    dsts[0] = a, srcs[0] = (CUdeviceptr)(uintptr_t)host;
    dsts[1] = b, srcs[1] = a;
    dsts[2] = (CUdeviceptr)(uintptr_t)back, srcs[2] = b;
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(memcmp(host, back, N), 0);

    /* The driver's checks: no legacy stream, attributes that start at copy 0. */
    CU_IS(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, NULL),
          CUDA_ERROR_INVALID_VALUE);
    idx = 1;
    CU_IS(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, s), CUDA_ERROR_INVALID_VALUE);
    idx = 0;
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    CU_IS(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFreeHost(host));
    CU_OK(cuMemFreeHost(back));
}

static CUmemcpy3DOperand ptr_operand(CUdeviceptr p, size_t row, size_t layer)
{
    CUmemcpy3DOperand o;

    memset(&o, 0, sizeof(o));
    o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    o.op.ptr.ptr = p;
    o.op.ptr.rowLength = row;
    o.op.ptr.layerHeight = layer;
    return o;
}

/* A 16x4x2 box out of a 32x8x2 device volume into a packed host one. */
Test(batchcopy, boxes_between_pointers)
{
    unsigned char vol[32 * 8 * 2], *out;
    CUDA_MEMCPY3D_BATCH_OP op;
    CUdeviceptr d;
    CUstream s;

    for (unsigned i = 0; i < sizeof(vol); i++)
        vol[i] = (unsigned char)i;
    CU_OK(cuMemAlloc(&d, sizeof(vol)));
    CU_OK(cuMemcpyHtoD(d, vol, sizeof(vol)));
    CU_OK(cuMemAllocHost((void **)&out, 16 * 4 * 2));
    memset(out, 0, 16 * 4 * 2);
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(&op, 0, sizeof(op));
    op.src = ptr_operand(d, 32, 8);
    op.dst = ptr_operand((CUdeviceptr)(uintptr_t)out, 16, 4);
    op.extent.width = 16;
    op.extent.height = 4;
    op.extent.depth = 2;
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CU_OK(cuMemcpy3DBatchAsync(1, &op, 0, s));
    CU_OK(cuStreamSynchronize(s));
    for (unsigned z = 0; z < 2; z++)
        for (unsigned y = 0; y < 4; y++)
            cr_assert_eq(memcmp(out + (z * 4 + y) * 16, vol + (z * 8 + y) * 32, 16), 0,
                         "row %u of slice %u", y, z);
    op.extent.depth = 0;
    CU_IS(cuMemcpy3DBatchAsync(1, &op, 0, s), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpy3DBatchAsync(1, &op, 1, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(d));
    CU_OK(cuMemFreeHost(out));
}

Test(batchcopy, prefetch_and_discard_managed_ranges)
{
    CUmemLocation locs[2] = { { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                              { .type = CU_MEM_LOCATION_TYPE_HOST } };
    CUdeviceptr m, ptrs[2], plain;
    size_t sizes[2] = { N, N }, idxs[2] = { 0, 1 };
    CUstream s;

    CU_OK(cuMemAllocManaged(&m, 2 * N, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&plain, N));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ptrs[0] = m, ptrs[1] = m + N;
    ((unsigned char *)(uintptr_t)m)[N] = 42;
    CU_OK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 2, 0, s));
    CU_OK(cuMemDiscardAndPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 1, 0, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(((unsigned char *)(uintptr_t)m)[N], 42, "a prefetch changed the bytes");
    CU_OK(cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, s));
    CU_OK(cuStreamSynchronize(s));
    CU_IS(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 2, 1, s), CUDA_ERROR_INVALID_VALUE);
    idxs[1] = 5;
    CU_IS(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 2, 0, s), CUDA_ERROR_INVALID_VALUE);
    ptrs[0] = plain; /* not managed memory */
    CU_IS(cuMemDiscardBatchAsync(ptrs, sizes, 1, 0, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(plain));
}

/* cuPointerSetAttribute's one settable attribute reads back per allocation. */
Test(batchcopy, sync_memops_reads_back)
{
    unsigned one = 1, zero = 0, got = 7;
    CUdeviceptr a, b;

    CU_OK(cuMemAlloc(&a, 4096));
    CU_OK(cuMemAlloc(&b, 4096));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a));
    cr_assert_eq(got, 0);
    CU_OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a + 100));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a));
    cr_assert_eq(got, 1);
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, b));
    cr_assert_eq(got, 0);
    CU_OK(cuPointerSetAttribute(&zero, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a));
    cr_assert_eq(got, 0);
    CU_IS(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_CONTEXT, a), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 0x1000),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}
