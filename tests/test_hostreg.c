/* cuMemHostRegister: a program's own pages, registered, are read and written by the device
 * in place, at the program's own address; the bytes that share their pages survive
 * registration and unregistration; the errors are CUDA's; a forked child and a tenant that
 * exits holding registrations leave everything as it was; a TCP tenant's registration is
 * accepted and its copies stay correct. */
#include "ds_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(hostreg, .init = start, .fini = stop, .timeout = 120);

/* Three private pages, each byte its own value. */
static unsigned char *three_pages(void)
{
    unsigned char *p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    cr_assert_neq(p, MAP_FAILED);
    for (int i = 0; i < 3 * PAGE; i++)
        p[i] = (unsigned char)(i * 7 + 1);
    return p;
}

static void expect_pattern(const unsigned char *p, int from, int to)
{
    for (int i = from; i < to; i++)
        cr_assert_eq(p[i], (unsigned char)(i * 7 + 1), "byte %d changed", i);
}

Test(hostreg, the_device_reads_and_writes_registered_pages_at_their_own_address)
{
    unsigned char *pages = three_pages(), *h = pages + 100, back[5000];
    CUdeviceptr d, dev;

    ds_test_ctx();
    CU_OK(cuMemHostRegister(h, 5000, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&d, h, 0));
    cr_assert_eq(d, (CUdeviceptr)(uintptr_t)h, "device %#llx, host %p", (unsigned long long)d,
                 (void *)h);
    CU_OK(cuMemcpyDtoH(back, d, sizeof(back)));
    cr_assert_arr_eq(back, h, sizeof(back), "the device sees the bytes registered");
    h[10] = 0x5a;
    CU_OK(cuMemcpyDtoH(back, d + 10, 1));
    cr_assert_eq(back[0], 0x5a, "and what the program writes afterwards");
    CU_OK(cuMemsetD8(d + 200, 0xee, 50));
    for (int i = 200; i < 250; i++)
        cr_assert_eq(h[i], 0xee, "the program sees what the device wrote, at %d", i);
    cr_assert_eq(h[250], (unsigned char)((100 + 250) * 7 + 1));

    /* Copies from and to the registered range, as cudaMemcpy makes them. */
    CU_OK(cuMemAlloc(&dev, 5000));
    CU_OK(cuMemcpyHtoD(dev, h, 5000));
    memset(back, 0, sizeof(back));
    CU_OK(cuMemcpyDtoH(back, dev, 5000));
    cr_assert_arr_eq(back, h, 5000);
    CU_OK(cuMemsetD8(dev, 0x11, 5000));
    CU_OK(cuMemcpyDtoHAsync(h, dev, 4000, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(h[0], 0x11);
    cr_assert_eq(h[3999], 0x11);
    cr_assert_eq(h[4000], (unsigned char)((100 + 4000) * 7 + 1));
    CU_OK(cuMemFree(dev));
    CU_OK(cuMemHostUnregister(h));
    munmap(pages, 3 * PAGE);
}

/* Registration is by whole pages: the bytes before and after the range on its first and
 * last page are the program's, before, during and after. */
Test(hostreg, neighbouring_bytes_on_the_same_pages_survive)
{
    unsigned char *pages = three_pages(), *h = pages + 100;

    ds_test_ctx();
    CU_OK(cuMemHostRegister(h, 5000, 0));
    expect_pattern(pages, 0, 3 * PAGE);
    pages[50] = 0xab;           /* before the range, on its first page */
    pages[100 + 5000 + 7] = 0xcd; /* after it, on its last page */
    h[0] = 0x42;
    pages[2 * PAGE + 1] = 0x99; /* a page never registered */
    CU_OK(cuMemHostUnregister(h));
    cr_assert_eq(pages[50], 0xab);
    cr_assert_eq(pages[5107], 0xcd);
    cr_assert_eq(h[0], 0x42);
    cr_assert_eq(pages[2 * PAGE + 1], 0x99);
    expect_pattern(pages, 51, 100);
    expect_pattern(pages, 101, 5107);
    expect_pattern(pages, 5108, 2 * PAGE + 1);
    expect_pattern(pages, 2 * PAGE + 2, 3 * PAGE);
    pages[60] = 0x01; /* still writable, as private memory */
    cr_assert_eq(pages[60], 0x01);
    munmap(pages, 3 * PAGE);
}

Test(hostreg, errors_are_cudas)
{
    unsigned char *pages = three_pages();
    unsigned flags = 0;
    void *pinned;
    CUdeviceptr d;

    ds_test_ctx();
    CU_IS(cuMemHostUnregister(pages), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_IS(cuMemHostRegister(NULL, 100, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemHostRegister(pages, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemHostRegister(pages, 100, 0x80), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemHostRegister(pages, 100, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED);

    CU_OK(cuMemHostRegister(pages, 2 * PAGE, CU_MEMHOSTREGISTER_PORTABLE));
    CU_IS(cuMemHostRegister(pages + PAGE, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_OK(cuMemHostGetFlags(&flags, pages + 5));
    cr_assert_eq(flags, CU_MEMHOSTREGISTER_PORTABLE);
    CU_IS(cuMemHostUnregister(pages + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_OK(cuMemHostUnregister(pages));
    CU_IS(cuMemHostUnregister(pages), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_IS(cuMemHostGetFlags(&flags, pages), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemHostGetDevicePointer(&d, pages, 0), CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuMemHostAlloc(&pinned, PAGE, 0));
    CU_IS(cuMemHostRegister(pinned, PAGE, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_OK(cuMemFreeHost(pinned));
    munmap(pages, 3 * PAGE);
}

Test(hostreg, pointer_attributes_and_address_range_answer_for_registered_memory)
{
    unsigned char *pages = three_pages(), *h = pages + 16;
    CUpointer_attribute attrs[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                     CU_POINTER_ATTRIBUTE_IS_MANAGED };
    unsigned type = 0, managed = 7;
    void *host = NULL, *data[3] = { &type, &host, &managed };
    CUdeviceptr dev = 0, base = 0;
    size_t size = 0;

    ds_test_ctx();
    CU_OK(cuMemHostRegister(h, 3000, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)(h + 8)));
    cr_assert_eq(type, CU_MEMORYTYPE_HOST);
    cr_assert_eq(host, h + 8);
    cr_assert_eq(managed, 0);
    CU_OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                (CUdeviceptr)(uintptr_t)(h + 8)));
    cr_assert_eq(dev, (CUdeviceptr)(uintptr_t)(h + 8));
    CU_OK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(h + 100)));
    cr_assert_eq(base, (CUdeviceptr)(uintptr_t)h);
    cr_assert_eq(size, 3000);
    CU_OK(cuMemHostUnregister(h));
    CU_IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                (CUdeviceptr)(uintptr_t)h),
          CUDA_ERROR_INVALID_VALUE);
    munmap(pages, 3 * PAGE);
}

/* Copies larger than the staging ring's pieces, which take the arena path. */
Test(hostreg, large_copies_keep_every_byte)
{
    size_t n = 24u << 20;
    unsigned char *h = malloc(n + 123), *src = h + 123, *back = malloc(n);
    CUdeviceptr d;

    cr_assert(h != NULL && back != NULL);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i ^ (i >> 11));
    ds_test_ctx();
    CU_OK(cuMemHostRegister(src, n, 0));
    CU_OK(cuMemAlloc(&d, n));
    CU_OK(cuMemcpyHtoDAsync(d, src, n, NULL));
    CU_OK(cuMemcpyDtoH(back, d, n));
    cr_assert_arr_eq(back, src, n);
    memset(back, 0x3c, n);
    CU_OK(cuMemcpyHtoD(d, back, n));
    CU_OK(cuMemcpyDtoH(src, d, n));
    cr_assert_eq(src[0], 0x3c);
    cr_assert_eq(src[n - 1], 0x3c);
    CU_OK(cuMemHostUnregister(src));
    cr_assert_eq(src[n / 2], 0x3c);
    CU_OK(cuMemFree(d));
    free(back);
    free(h);
}

/* A forked child's pages are its own, as they would be natively: what it writes does not
 * reach the parent's registered pages. */
Test(hostreg, a_forked_child_writes_its_own_copy)
{
    unsigned char *pages = three_pages();
    int status;
    pid_t pid;

    ds_test_ctx();
    CU_OK(cuMemHostRegister(pages, PAGE, 0));
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int same = pages[5] == (unsigned char)(5 * 7 + 1);

        pages[5] = 0;
        _exit(same ? 0 : 1);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child saw its bytes: %#x",
              status);
    expect_pattern(pages, 0, 3 * PAGE);
    CU_OK(cuMemHostUnregister(pages));
    munmap(pages, 3 * PAGE);
}

static int register_and_stay(void *arg)
{
    unsigned char *p = malloc(1 << 20);

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || p == NULL)
        return 1;
    memset(p, 1, 1 << 20);
    return cuMemHostRegister(p, 1 << 20, CU_MEMHOSTREGISTER_DEVICEMAP) != CUDA_SUCCESS;
}

/* The executor lets go of the pages and its mappings with the tenant (the sanitizer build
 * of the fixture fails on leaks); the server goes on serving. */
Test(hostreg, a_tenant_that_exits_holding_registrations_leaves_nothing)
{
    struct ds_test_peer peer;
    unsigned char *pages;

    ds_test_peer_fork(&peer, register_and_stay, NULL);
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
    pages = three_pages();
    ds_test_ctx();
    CU_OK(cuMemHostRegister(pages, PAGE, 0));
    CU_OK(cuMemHostUnregister(pages));
    munmap(pages, 3 * PAGE);
}

/* Over TCP the executor cannot map the tenant's pages: registration is accepted and
 * changes nothing, copies carry the bytes, and there is no device pointer. */
Test(hostreg, a_remote_tenant_registers_without_sharing)
{
    unsigned char *pages = three_pages(), back[PAGE];
    unsigned flags = 0;
    CUdeviceptr d, dev;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    CU_OK(cuMemHostRegister(pages, 2 * PAGE, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuMemHostGetFlags(&flags, pages));
    cr_assert_eq(flags, CU_MEMHOSTREGISTER_DEVICEMAP);
    CU_IS(cuMemHostGetDevicePointer(&d, pages, 0), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemAlloc(&dev, PAGE));
    CU_OK(cuMemcpyHtoD(dev, pages, PAGE));
    CU_OK(cuMemcpyDtoH(back, dev, PAGE));
    cr_assert_arr_eq(back, pages, PAGE);
    CU_OK(cuMemsetD8(dev, 0x77, PAGE));
    CU_OK(cuMemcpyDtoHAsync(pages + PAGE, dev, PAGE, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(pages[2 * PAGE - 1], 0x77);
    CU_OK(cuMemHostUnregister(pages));
    CU_OK(cuMemFree(dev));
    munmap(pages, 3 * PAGE);
}
