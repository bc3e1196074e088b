/* Managed memory: one pointer the program reads and writes directly and the device uses
 * as it is, coherent after synchronisation; pointer and range attributes as CUDA gives
 * them; counted as managed memory under the quota and released with a tenant that exits
 * holding it; refused to a TCP tenant. */
#include "ds_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1u << 20)

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(managed, .init = start, .fini = stop, .timeout = 120);

static CUfunction fill_kernel(void)
{
    char path[512];
    CUmodule m;
    CUfunction f;

    snprintf(path, sizeof(path), "%s/launch.fatbin", DS_KERNEL_DIR);
    m = ds_test_module(path);
    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    return f;
}

/* What the device attributes tell a tenant about host memory (docs/memory.md): managed
 * memory it may touch while kernels run, but no reach into its malloc'ed memory, no
 * atomics shared with the host, no managed memory on the device; on a GPU too, whatever
 * the driver says of the executor's process. */
Test(managed, the_attributes_say_what_a_tenant_can_do_with_host_memory)
{
    const struct {
        CUdevice_attribute a;
        int want;
    } says[] = {
        { CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 },
        { CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1 },
        { CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0 },
        { CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0 },
        { CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0 },
        { CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0 },
    };

    CU_OK(ds_test_connect());
    for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++) {
        int v = -1;

        CU_OK(cuDeviceGetAttribute(&v, says[i].a, 0));
        cr_expect_eq(v, says[i].want, "attribute %d reads %d", (int)says[i].a, v);
    }
}

Test(managed, the_program_and_the_device_share_one_pointer)
{
    CUdeviceptr p, dev;
    unsigned char back[4096];
    unsigned char *h;

    ds_test_ctx();
    CU_OK(cuMemAllocManaged(&p, 1 * MiB, CU_MEM_ATTACH_GLOBAL));
    h = (unsigned char *)(uintptr_t)p;
    for (int i = 0; i < 4096; i++)
        h[i] = (unsigned char)(i * 3);
    CU_OK(cuMemcpyDtoH(back, p, sizeof(back)));
    cr_assert_arr_eq(back, h, sizeof(back), "the device sees what the program wrote");
    CU_OK(cuMemsetD32Async(p + 64, 0xa1b2c3d4, 4, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(((unsigned *)h)[16], 0xa1b2c3d4, "the program sees what the device wrote");
    cr_assert_eq(((unsigned *)h)[19], 0xa1b2c3d4);
    cr_assert_eq(h[80], (unsigned char)(80 * 3));

    CU_OK(cuMemAlloc(&dev, 4096));
    CU_OK(cuMemcpyDtoD(dev, p, 4096));
    CU_OK(cuMemcpyDtoH(back, dev, 4096));
    cr_assert_arr_eq(back, h, 4096);
    CU_OK(cuMemsetD8(dev, 0x5e, 4096));
    CU_OK(cuMemcpy(p + 8192, dev, 4096));
    cr_assert_eq(h[8192], 0x5e);
    cr_assert_eq(h[8192 + 4095], 0x5e);
    CU_OK(cuMemFree(dev));
    CU_OK(cuMemFree(p));
    CU_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
}

/* Kernels compute only on a GPU; on the sim the launch is checked and modelled. */
Test(managed, a_kernel_writes_what_the_program_reads_after_synchronising)
{
    CUfunction f = (ds_test_ctx(), fill_kernel());
    int n = 1 << 16, v = 1000;
    CUdeviceptr p;
    int *h;
    void *params[] = { &p, &v, &n };

    CU_OK(cuMemAllocManaged(&p, (size_t)n * sizeof(int), CU_MEM_ATTACH_GLOBAL));
    h = (int *)(uintptr_t)p;
    memset(h, 0, (size_t)n * sizeof(int));
    CU_OK(cuLaunchKernel(f, (unsigned)n / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
    if (!ds_test_on_sim()) {
        for (int i = 0; i < n; i++)
            cr_assert_eq(h[i], v + i, "h[%d] = %d", i, h[i]);
    }
    CU_OK(cuMemFree(p));
}

Test(managed, attributes_say_managed)
{
    CUpointer_attribute attrs[4] = { CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                     CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                     CU_POINTER_ATTRIBUTE_HOST_POINTER };
    unsigned managed = 0, type = 0;
    CUdeviceptr p, dev = 0, base = 0;
    void *host = NULL, *data[4] = { &managed, &type, &dev, &host };
    size_t size = 0;

    ds_test_ctx();
    CU_OK(cuMemAllocManaged(&p, 10000, CU_MEM_ATTACH_HOST));
    CU_OK(cuPointerGetAttributes(4, attrs, data, p + 10));
    cr_assert_eq(managed, 1);
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    cr_assert_eq(dev, p + 10);
    cr_assert_eq(host, (void *)(uintptr_t)(p + 10));
    CU_OK(cuMemGetAddressRange(&base, &size, p + 9999));
    cr_assert_eq(base, p);
    cr_assert_eq(size, 10000);
    CU_OK(cuMemFree(p));
}

Test(managed, prefetch_advice_and_attachment_are_checked_and_remembered)
{
    CUmemLocation dev0 = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    CUmemLocation host = { .type = CU_MEM_LOCATION_TYPE_HOST };
    CUdeviceptr p, plain;
    CUstream s;
    int v = -5, by[2];

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocManaged(&p, 2 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&plain, 4096));

    CU_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, 2 * MiB));
    cr_assert_eq(v, 0);
    CU_OK(cuMemAdvise(p, 2 * MiB, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
    CU_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, 2 * MiB));
    cr_assert_eq(v, 1);
    CU_OK(cuMemAdvise(p, 2 * MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
    CU_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, 2 * MiB));
    cr_assert_eq(v, CU_DEVICE_CPU);
    CU_OK(cuMemAdvise(p, 2 * MiB, CU_MEM_ADVISE_SET_ACCESSED_BY, dev0));
    CU_OK(cuMemRangeGetAttribute(by, sizeof(by), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, 2 * MiB));
    cr_assert_eq(by[0], 0);
    cr_assert_eq(by[1], CU_DEVICE_INVALID);

    CU_OK(cuMemPrefetchAsync(p, 2 * MiB, dev0, 0, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p,
                                 2 * MiB));
    cr_assert_eq(v, 0);
    CU_OK(cuMemPrefetchAsync(p, 2 * MiB, host, 0, s));
    CU_OK(cuStreamSynchronize(s));

    CU_IS(cuMemPrefetchAsync(plain, 4096, dev0, 0, s), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAdvise(plain, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, plain, 4096),
          CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuStreamAttachMemAsync(s, p, 0, CU_MEM_ATTACH_SINGLE));
    CU_OK(cuStreamSynchronize(s));
    CU_IS(cuStreamAttachMemAsync(s, p, 4096, CU_MEM_ATTACH_HOST), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamAttachMemAsync(s, plain, 0, CU_MEM_ATTACH_HOST), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(plain));
    CU_OK(cuStreamDestroy(s));
}

Test(managed, bad_arguments_are_refused)
{
    CUdeviceptr p;

    ds_test_ctx();
    CU_IS(cuMemAllocManaged(NULL, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocManaged(&p, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL));
    CU_IS(cuMemFree(p + 16), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}

/* The tenant's "memory" object in `status --json`, in obj. */
static void memory_of(const char *name, char *obj, size_t len)
{
    char out[16384];
    const char *at, *end;

    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, name, obj, len);
    at = strstr(strstr(out, obj), "\"memory\":{");
    cr_assert_not_null(at, "%s", out);
    end = strchr(at, '}');
    snprintf(obj, len, "%.*s", (int)(end - at + 1), at);
}

static int hold_managed(void *arg)
{
    CUdeviceptr p;

    (void)arg;
    setenv("DETSHARE_TENANT", "holder", 1);
    if (ds_test_connect() != CUDA_SUCCESS)
        return 1;
    if (cuMemAllocManaged(&p, 3 * MiB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
        return 2;
    memset((void *)(uintptr_t)p, 9, 3 * MiB);
    return 0;
}

Test(managed, counted_as_managed_memory_and_released_with_the_tenant)
{
    struct ds_test_peer peer;
    char obj[1024], out[16384];
    CUdeviceptr p;

    ds_test_peer_fork(&peer, hold_managed, NULL);
    ds_test_peer_join(&peer);
    memory_of("holder", obj, sizeof(obj));
    cr_assert(strstr(obj, "\"managed\":3145728"), "%s", obj);
    ds_test_peer_leave(&peer);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        if (strstr(out, "\"name\":\"holder\"") == NULL)
            break;
        usleep(10000);
    }
    cr_assert_null(strstr(out, "\"name\":\"holder\""), "the tenant is gone: %s", out);

    setenv("DETSHARE_TENANT", "self", 1);
    ds_test_ctx();
    CU_OK(cuMemAllocManaged(&p, 1 * MiB, CU_MEM_ATTACH_GLOBAL));
    memory_of("self", obj, sizeof(obj));
    cr_assert(strstr(obj, "\"managed\":1048576"), "%s", obj);
    CU_OK(cuMemFree(p));
    memory_of("self", obj, sizeof(obj));
    cr_assert(strstr(obj, "\"managed\":0"), "%s", obj);
}

Test(managed, the_memory_quota_counts_it)
{
    char out[256];
    CUdeviceptr a, b;

    cr_assert_eq(ds_test_ctl(&srv, "quota small memory=4MiB", out, sizeof(out)), 0, "%s", out);
    setenv("DETSHARE_TENANT", "small", 1);
    ds_test_ctx();
    CU_OK(cuMemAllocManaged(&a, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_IS(cuMemAllocManaged(&b, 2 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    CU_IS(cuMemAlloc(&b, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemAllocManaged(&b, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemFree(b));
}

Test(managed, a_remote_tenant_is_refused)
{
    CUdeviceptr p;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    CU_IS(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
}
