/* Mapped host memory: page-locked memory a local tenant shares with its executor, which
 * the device reads and writes in place. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(hostmem, .init = start, .fini = stop, .timeout = 60);

Test(hostmem, the_device_reads_and_writes_mapped_memory_in_place)
{
    unsigned char *h, back[4096];
    CUdeviceptr d, d2, dev;

    ds_test_ctx();
    CU_OK(cuMemHostAlloc((void **)&h, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
    for (int i = 0; i < 4096; i++)
        h[i] = (unsigned char)(i * 13);
    CU_OK(cuMemHostGetDevicePointer(&d, h, 0));
    CU_OK(cuMemHostGetDevicePointer(&d2, h + 100, 0));
    cr_assert_eq(d2, d + 100, "pointers inside map to the same offsets");
    CU_OK(cuMemcpyDtoH(back, d, sizeof(back)));
    cr_assert_arr_eq(back, h, sizeof(back), "the device sees what the host wrote");
    CU_OK(cuMemsetD8(d + 100, 0xaa, 10));
    for (int i = 100; i < 110; i++)
        cr_assert_eq(h[i], 0xaa, "the host sees what the device wrote, at %d", i);
    cr_assert_eq(h[110], (unsigned char)(110 * 13));
    CU_OK(cuMemAlloc(&dev, 4096));
    CU_OK(cuMemcpyDtoD(dev, d, 4096));
    CU_OK(cuMemcpyDtoH(back, dev, 4096));
    cr_assert_eq(back[105], 0xaa);
    CU_IS(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));
    CU_IS(cuMemcpyDtoH(back, d, 16), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemHostGetDevicePointer(&d, back, 0), CUDA_ERROR_INVALID_VALUE);
}

/* As natively under unified addressing: page-locked memory's device address is its host
 * address, so a pointer a program hands to the device as it is (XLA does) works. */
Test(hostmem, page_locked_memory_is_reached_at_its_own_address)
{
    unsigned *h;
    CUdeviceptr d;

    ds_test_ctx();
    CU_OK(cuMemHostAlloc((void **)&h, 1 << 16, 0));
    memset(h, 0, 1 << 16);
    CU_OK(cuMemHostGetDevicePointer(&d, h, 0));
    cr_assert_eq(d, (CUdeviceptr)(uintptr_t)h, "device %#llx, host %p", (unsigned long long)d,
                 (void *)h);
    CU_OK(cuMemsetD32Async((CUdeviceptr)(uintptr_t)(h + 16), 0x01020304, 4, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(h[16], 0x01020304);
    cr_assert_eq(h[19], 0x01020304);
    cr_assert_eq(h[20], 0);
    CU_OK(cuMemFreeHost(h));
}

Test(hostmem, arena_memory_is_reused_after_free)
{
    void *a, *b;

    ds_test_ctx();
    for (int i = 0; i < 200; i++) {
        CU_OK(cuMemHostAlloc(&a, 64 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
        CU_OK(cuMemHostAlloc(&b, 4096, 0));
        CU_OK(cuMemFreeHost(a));
        CU_OK(cuMemFreeHost(b));
    }
}

Test(hostmem, a_remote_tenant_has_no_mapped_memory)
{
    CUdeviceptr d;
    void *h;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    CU_OK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    CU_IS(cuMemHostGetDevicePointer(&d, h, 0), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemFreeHost(h));
}
