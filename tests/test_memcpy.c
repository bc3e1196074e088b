/* Copies and fills: bit-exact in every direction, sync and async, and refused outside
 * the tenant's own allocations. */
#include "ds_test.h"

#include <stdlib.h>
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

TestSuite(memcpy, .init = start, .fini = stop, .timeout = 120);

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;

    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    return p;
}

/* host -> a -> b -> host, each leg in the given mode; returns what came back. */
static void round_trip(size_t n, int async, int unified)
{
    unsigned char *src = pattern(n, (unsigned)n), *dst = malloc(n ? n : 1);
    size_t alloc = n ? n : 1;
    CUdeviceptr a, b;
    CUstream s;

    CU_OK(cuMemAlloc(&a, alloc));
    CU_OK(cuMemAlloc(&b, alloc));
    CU_OK(cuStreamCreate(&s, 0));
    memset(dst, 0xee, alloc);
    if (unified && async) {
        CU_OK(cuMemcpyAsync(a, (CUdeviceptr)(uintptr_t)src, n, s));
        CU_OK(cuMemcpyAsync(b, a, n, s));
        CU_OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, b, n, s));
        CU_OK(cuStreamSynchronize(s));
    } else if (unified) {
        CU_OK(cuMemcpy(a, (CUdeviceptr)(uintptr_t)src, n));
        CU_OK(cuMemcpy(b, a, n));
        CU_OK(cuMemcpy((CUdeviceptr)(uintptr_t)dst, b, n));
    } else if (async) {
        CU_OK(cuMemcpyHtoDAsync(a, src, n, s));
        CU_OK(cuMemcpyDtoDAsync(b, a, n, s));
        CU_OK(cuMemcpyDtoHAsync(dst, b, n, s));
        CU_OK(cuStreamSynchronize(s));
    } else {
        CU_OK(cuMemcpyHtoD(a, src, n));
        CU_OK(cuMemcpyDtoD(b, a, n));
        CU_OK(cuMemcpyDtoH(dst, b, n));
    }
    cr_assert_eq(memcmp(src, dst, n), 0, "%zu bytes, async %d, unified %d", n, async, unified);
    if (n > 0)
        cr_assert_eq(dst[n - 1], src[n - 1]);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(src);
    free(dst);
}

static const size_t sizes[] = { 0, 1, 4095, 64u << 20 };

Test(memcpy, sync_is_bit_exact)
{
    for (size_t i = 0; i < 4; i++)
        round_trip(sizes[i], 0, 0);
}

Test(memcpy, async_is_bit_exact)
{
    for (size_t i = 0; i < 4; i++)
        round_trip(sizes[i], 1, 0);
}

Test(memcpy, unified_is_bit_exact)
{
    for (size_t i = 0; i < 4; i++) {
        round_trip(sizes[i], 0, 1);
        round_trip(sizes[i], 1, 1);
    }
}

Test(memcpy, pinned_host_memory)
{
    unsigned char *h, *src = pattern(1 << 20, 3);
    unsigned flags;
    CUdeviceptr d;

    CU_OK(cuMemHostAlloc((void **)&h, 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    CU_OK(cuMemHostGetFlags(&flags, h));
    cr_assert_eq(flags, CU_MEMHOSTALLOC_PORTABLE);
    memcpy(h, src, 1 << 20);
    CU_OK(cuMemAlloc(&d, 1 << 20));
    CU_OK(cuMemcpyHtoDAsync(d, h, 1 << 20, NULL));
    /* From page-locked memory the copy is asynchronous, as in CUDA: the source may
     * change only once it is done. */
    CU_OK(cuStreamSynchronize(NULL));
    memset(h, 0, 1 << 20);
    CU_OK(cuMemcpyDtoHAsync(h, d, 1 << 20, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(memcmp(h, src, 1 << 20), 0);
    CU_OK(cuMemFreeHost(h));
    CU_IS(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemFreeHost(src), CUDA_ERROR_INVALID_VALUE);
    free(src);
}

Test(memcpy, offsets_inside_an_allocation)
{
    unsigned char *src = pattern(8192, 9), back[100];
    CUdeviceptr d, base;
    size_t size;

    CU_OK(cuMemAlloc(&d, 8192));
    CU_OK(cuMemcpyHtoD(d, src, 8192));
    CU_OK(cuMemcpyDtoH(back, d + 8092, 100));
    cr_assert_arr_eq(back, src + 8092, 100);
    CU_OK(cuMemGetAddressRange(&base, &size, d + 5000));
    cr_assert_eq(base, d);
    cr_assert_eq(size, 8192);
    free(src);
}

Test(memcpy, memset_every_width)
{
    uint8_t b8[64];
    uint16_t b16[64];
    uint32_t b32[64];
    CUdeviceptr d;

    CU_OK(cuMemAlloc(&d, 256));
    CU_OK(cuMemsetD8(d, 0xab, 256));
    CU_OK(cuMemcpyDtoH(b8, d, 64));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(b8[i], 0xab);
    CU_OK(cuMemsetD16Async(d, 0x1234, 128, NULL));
    CU_OK(cuMemcpyDtoH(b16, d, 128));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(b16[i], 0x1234);
    CU_OK(cuMemsetD32(d, 0xdeadbeef, 64));
    CU_OK(cuMemcpyDtoH(b32, d, 256));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(b32[i], 0xdeadbeef);
    CU_IS(cuMemsetD32(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemsetD8(d, 0, 257), CUDA_ERROR_INVALID_VALUE);
}

Test(memcpy, memset_2d_touches_only_its_rectangle)
{
    uint8_t img[16 * 8];
    CUdeviceptr d;

    CU_OK(cuMemAlloc(&d, sizeof(img)));
    CU_OK(cuMemsetD8(d, 0, sizeof(img)));
    /* 4 rows of 3 uint32 in a 16-byte pitch, starting at row 1. */
    CU_OK(cuMemsetD2D32(d + 16, 16, 0x01020304, 3, 4));
    CU_OK(cuMemcpyDtoH(img, d, sizeof(img)));
    for (int row = 0; row < 8; row++)
        for (int col = 0; col < 16; col++) {
            int in = row >= 1 && row <= 4 && col < 12;

            cr_assert_eq(img[row * 16 + col] != 0, in, "row %d col %d", row, col);
        }
    CU_IS(cuMemsetD2D8(d, 4, 1, 8, 2), CUDA_ERROR_INVALID_VALUE); /* pitch < width */
    CU_IS(cuMemsetD2D8(d, 16, 1, 16, 9), CUDA_ERROR_INVALID_VALUE); /* past the end */
}

Test(memcpy, out_of_range_and_freed_pointers_are_refused)
{
    unsigned char buf[64] = { 0 };
    CUdeviceptr d, gone;

    CU_OK(cuMemAlloc(&d, 32));
    CU_OK(cuMemAlloc(&gone, 32));
    CU_OK(cuMemFree(gone));
    CU_IS(cuMemcpyHtoD(d, buf, 33), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoH(buf, d + 16, 17), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoD(d, d + 1, 32), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyHtoD(gone, buf, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoH(buf, 0x1234, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoH(buf, ~0ull - 4, 8), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemFree(gone), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemFree(d + 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyHtoD(d, buf, 32));
}

Test(memcpy, allocation_accounting)
{
    size_t free0, free1, total;
    CUdeviceptr d;

    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAlloc(&d, 3u << 30));
    CU_OK(cuMemGetInfo(&free1, &total));
    /* Exact on the sim; a real device may round up, and others may allocate too. */
    if (ds_test_on_sim())
        cr_assert_eq(free0 - free1, 3u << 30);
    else
        cr_assert_geq(free0 - free1, 3u << 30);
    CU_IS(cuMemAlloc(&d, total), CUDA_ERROR_OUT_OF_MEMORY);
    CU_IS(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
}

/* Attribute attr of p; the driver writes 4 bytes for most, 8 for handle types and pools. */
static unsigned long long attribute(CUpointer_attribute attr, CUdeviceptr p)
{
    unsigned long long v = 99;
    int wide = attr == CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES ||
               attr == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE;

    CU_OK(cuPointerGetAttribute(&v, attr, p));
    return wide ? v : v & 0xffffffffull;
}

/* The rest of the attributes, as the H100's driver answered them for cuMemAlloc memory
 * and page-locked host memory, 100 bytes in (lab/gpu-runs.md, run 50). */
Test(memcpy, the_other_pointer_attributes_answer_as_the_driver)
{
    static const struct {
        CUpointer_attribute attr;
        unsigned long long dev, host;
    } want[] = {
        { CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 0, 0 },
        { CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 1, 0 },
        { CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, 0, 0 },
        { CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, 1, 0 },
        { CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE,
          CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE },
        { CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0, 0 },
        { CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, 1, 0 },
    };
    CUdeviceptr d, base, h64;
    unsigned long long v, id1, id2;
    void *h;

    CU_OK(cuMemAlloc(&d, 1 << 20));
    CU_OK(cuMemHostAlloc(&h, 1 << 20, 0));
    h64 = (CUdeviceptr)(uintptr_t)h;
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        v = attribute(want[i].attr, d + 100);
        cr_expect_eq(v, want[i].dev, "attribute %d of device memory: %llu", want[i].attr, v);
        v = attribute(want[i].attr, h64 + 100);
        cr_expect_eq(v, want[i].host, "attribute %d of host memory: %llu", want[i].attr, v);
    }
    CU_OK(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, d + 100));
    cr_assert_eq(base, d);
    v = 0;
    CU_OK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, d + 100));
    cr_assert_geq(v, 1 << 20);
    CU_OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, d + 100));
    CU_OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, h64 + 100));
    cr_assert(id1 != 0 && id2 != 0 && id1 != id2);
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuMemFree(d));
}

/* Frameworks ask what a pointer is before copying from it (PyTorch's pin_memory). */
Test(memcpy, pointer_attributes)
{
    CUpointer_attribute which[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                     CU_POINTER_ATTRIBUTE_RANGE_SIZE };
    unsigned type = 99;
    void *host = (void *)1, *h;
    size_t size = 1;
    void *out[3] = { &type, &host, &size };
    CUdeviceptr d, got;
    int local;

    CU_OK(cuMemAlloc(&d, 8192));
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100));
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100));
    cr_assert_eq(got, d);
    CU_IS(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemHostAlloc(&h, 4096, 0));
    CU_OK(cuPointerGetAttributes(3, which, out, (CUdeviceptr)(uintptr_t)h + 8));
    cr_assert_eq(type, CU_MEMORYTYPE_HOST);
    cr_assert_eq(host, (char *)h + 8);
    cr_assert_eq(size, 4096);
    /* Ordinary host memory: no error from the plural form, zeros instead. */
    CU_OK(cuPointerGetAttributes(3, which, out, (CUdeviceptr)(uintptr_t)&local));
    cr_assert_eq(type, 0);
    cr_assert_null(host);
    CU_IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                (CUdeviceptr)(uintptr_t)&local),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuMemFree(d));
}
