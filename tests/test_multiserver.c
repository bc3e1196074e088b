/* Several servers, one tenant: DETSHARE_SERVER lists two servers, and the tenant sees
 * two devices, each described by its own server, each call going to the server of the
 * device it concerns (client/transport/route.h). */
#include "ds_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096
#define SIM1_SMS 66
#define SIM1_MEM (8ull << 30)

static struct ds_test_server srv[2];

static void start(void)
{
    /* On the sim, device 1 differs from device 0 (132 SMs, 80 GiB, GPU 0) in everything
     * a tenant can ask.  On a GPU both servers serve GPU 0, which takes one MPS daemon
     * at a time: neither starts one. */
    ds_test_server_start(&srv[0], 0, ds_test_on_sim() ? NULL : "--mps off");
    ds_test_server_start(&srv[1], 0, ds_test_on_sim() ? "--sim-sms 66 --sim-memory 8G --gpu 1"
                                                      : "--mps off");
    ds_test_servers_use(srv, 2);
}

static void stop(void)
{
    ds_test_server_stop(&srv[1]);
    ds_test_server_stop(&srv[0]);
}

TestSuite(multiserver, .init = start, .fini = stop, .timeout = 120);

static CUcontext primary(int dev)
{
    CUcontext c;

    CU_OK(cuDevicePrimaryCtxRetain(&c, dev));
    return c;
}

static CUmodule load_launch(void)
{
    char path[512];
    CUmodule m;
    FILE *f;
    char *image;
    long n;

    snprintf(path, sizeof(path), "%s/launch.fatbin", DS_KERNEL_DIR);
    f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    image = malloc((size_t)n);
    cr_assert_eq(fread(image, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    CU_OK(cuModuleLoadData(&m, image));
    free(image);
    return m;
}

/* The bytes of dev's n-int allocation p, read under dev's own context. */
static void read_back(CUcontext ctx, CUdeviceptr p, int *out)
{
    CU_OK(cuCtxPushCurrent(ctx));
    CU_OK(cuMemcpyDtoH(out, p, N * sizeof(int)));
    CU_OK(cuCtxPopCurrent(NULL));
}

/* n bytes of p, read under ctx. */
static void read_back_bytes(CUcontext ctx, CUdeviceptr p, void *out, size_t n)
{
    CU_OK(cuCtxPushCurrent(ctx));
    CU_OK(cuMemcpyDtoH(out, p, n));
    CU_OK(cuCtxPopCurrent(NULL));
}

Test(multiserver, one_device_per_server)
{
    CUdevice d;
    int n = 0;

    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    cr_assert_eq(n, 2);
    CU_OK(cuDeviceGet(&d, 1));
    cr_assert_eq(d, 1);
    CU_IS(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
}

Test(multiserver, each_device_described_by_its_server)
{
    int sms0, sms1;
    size_t mem0, mem1;
    char name0[256], name1[256];
    CUuuid u0, u1;

    DS_SIM_ONLY();
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetAttribute(&sms0, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CU_OK(cuDeviceGetAttribute(&sms1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
    cr_assert_eq(sms0, 132);
    cr_assert_eq(sms1, SIM1_SMS);
    CU_OK(cuDeviceTotalMem(&mem0, 0));
    CU_OK(cuDeviceTotalMem(&mem1, 1));
    cr_assert_eq(mem0, 80ull << 30);
    cr_assert_eq(mem1, SIM1_MEM);
    CU_OK(cuDeviceGetName(name0, sizeof(name0), 0));
    CU_OK(cuDeviceGetName(name1, sizeof(name1), 1));
    cr_assert_not_null(strstr(name0, "132 SMs"), "%s", name0);
    cr_assert_not_null(strstr(name1, "66 SMs"), "%s", name1);
    CU_OK(cuDeviceGetUuid(&u0, 0));
    CU_OK(cuDeviceGetUuid(&u1, 1));
    cr_assert_neq(memcmp(u0.bytes, u1.bytes, sizeof(u0.bytes)), 0);
}

Test(multiserver, contexts_know_their_device)
{
    CUcontext c0, c1, c2;
    CUdevice d;
    size_t free0, total0, free1, total1;

    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    /* Each server's first context gets the same handle from its own executor. */
    cr_assert_neq(c0, c1);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuCtxGetDevice(&d));
    cr_assert_eq(d, 1);
    CU_OK(cuMemGetInfo(&free1, &total1));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxGetDevice(&d));
    cr_assert_eq(d, 0);
    CU_OK(cuMemGetInfo(&free0, &total0));
    if (ds_test_on_sim()) {
        cr_assert_eq(total0, 80ull << 30);
        cr_assert_eq(total1, SIM1_MEM);
    }
    CU_OK(cuCtxCreate(&c2, NULL, 0, 1));
    CU_OK(cuCtxGetDevice(&d));
    cr_assert_eq(d, 1);
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuDevicePrimaryCtxRelease(1));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

Test(multiserver, memory_and_kernels_on_each_device)
{
    CUcontext ctx[2];
    CUdeviceptr p[2];
    static int host[2][N], back[N];
    size_t before[2], after[2], total;

    CU_OK(cuInit(0));
    for (int dev = 0; dev < 2; dev++) {
        CUmodule m;
        CUfunction f;
        int v = 1000 * (dev + 1), n = N;
        void *args[] = { &p[dev], &v, &n };

        ctx[dev] = primary(dev);
        CU_OK(cuCtxSetCurrent(ctx[dev]));
        CU_OK(cuMemGetInfo(&before[dev], &total));
        CU_OK(cuMemAlloc(&p[dev], 64u << 20));
        for (int i = 0; i < N; i++)
            host[dev][i] = (dev + 1) * 7 + i;
        CU_OK(cuMemcpyHtoD(p[dev], host[dev], sizeof(host[dev])));
        m = load_launch();
        CU_OK(cuModuleGetFunction(&f, m, "fill"));
        CU_OK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        CU_OK(cuCtxSynchronize());
        /* The sim models a kernel's time, not its effect. */
        if (!ds_test_on_sim())
            for (int i = 0; i < N; i++)
                host[dev][i] = v + i;
    }
    /* Each allocation came out of its own device's memory. */
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuMemGetInfo(&after[0], &total));
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CU_OK(cuMemGetInfo(&after[1], &total));
    cr_assert_geq(before[0] - after[0], 64u << 20);
    cr_assert_geq(before[1] - after[1], 64u << 20);
    for (int dev = 0; dev < 2; dev++) {
        read_back(ctx[dev], p[dev], back);
        cr_assert_arr_eq(back, host[dev], sizeof(back), "device %d", dev);
    }
    /* A device address goes to its own device's server whatever is current. */
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuMemcpyDtoH(back, p[1], sizeof(back)));
    cr_assert_arr_eq(back, host[1], sizeof(back));
    /* No call spans two servers. */
    CU_IS(cuMemcpyDtoD(p[0], p[1], 4096), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemFree(p[1]));
    CU_OK(cuMemFree(p[0]));
}

Test(multiserver, a_stream_goes_to_its_device)
{
    CUcontext c0, c1;
    CUstream s0, s1;
    CUevent e1;
    CUdeviceptr p1;
    static int host[N], back[N];

    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemAlloc(&p1, sizeof(host)));
    /* Both executors numbered their first stream alike. */
    cr_assert_neq(s0, s1);
    for (int i = 0; i < N; i++)
        host[i] = 3 * i + 1;
    /* Device 0's context current: the work still belongs to device 1, as natively a
     * stream's work runs in its stream's context. */
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemcpyHtoDAsync(p1, host, sizeof(host), s1));
    CU_OK(cuEventRecord(e1, s1));
    CU_OK(cuStreamWaitEvent(s1, e1, 0));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuEventSynchronize(e1));
    CU_OK(cuStreamQuery(s1));
    /* A made-up stream is nobody's, whatever its top bits say. */
    CU_IS(cuStreamQuery((CUstream)(uintptr_t)0xdeadbeefdeadbeefull), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuCtxSetCurrent((CUcontext)(uintptr_t)0xfeedfacefeedfaceull));
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxSetCurrent(c0));
    /* Device 0's stream cannot wait for device 1's event: no call spans servers. */
    CU_IS(cuStreamWaitEvent(s0, e1, 0), CUDA_ERROR_NOT_SUPPORTED);
    read_back(c1, p1, back);
    cr_assert_arr_eq(back, host, sizeof(back));
    /* Device 0's context, sent to device 1's server with device 1's event, is no
     * context of that server's, though both primaries have the same number there (the
     * error of a batched call comes with the next synchronous one). */
    CU_OK(cuCtxRecordEvent(c0, e1));
    CU_IS(cuStreamSynchronize(s1), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxRecordEvent(c1, e1));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s0));
    CU_OK(cuEventDestroy(e1));
    CU_OK(cuMemFree(p1));
}

/* A synchronisation of device 0 says nothing of device 1's work, though both have a
 * legacy stream numbered alike. */
Test(multiserver, idle_is_known_per_device)
{
    CUcontext c0, c1;
    CUdeviceptr p;
    CUfunction f;
    int v = 0, n = 0;
    void *params[] = { &p, &v, &n };

    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuModuleGetFunction(&f, load_launch(), "fill"));
    CU_OK(cuCtxSynchronize());
    /* Wide kernels that touch nothing: tens of milliseconds, modelled or real. */
    for (int i = 0; i < 16; i++)
        CU_OK(cuLaunchKernel(f, 2640000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamQuery(NULL));
    CU_OK(cuCtxSetCurrent(c1));
    CU_IS(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamQuery(NULL));
    CU_OK(cuMemFree(p));
}

/* Memory named by location: a physical allocation and a pool of device 1, made while
 * device 0's context is current, are device 1's, and so is what they hold. */
Test(multiserver, locations_name_their_device)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1 } };
    CUmemAccessDesc access = { .location = prop.location,
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemPoolProps pprops = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = prop.location };
    CUmemAllocationProp got;
    CUmemGenericAllocationHandle h;
    CUmemoryPool pool, def0, def1;
    CUcontext c0, c1;
    CUstream s1;
    CUdeviceptr va, fromPool;
    size_t g, free1, free1_after, total;
    static int host[N], back[N];

    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemGetInfo(&free1, &total));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemCreate(&h, g, &prop, 0));
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    cr_assert_eq(got.location.id, 1);
    CU_OK(cuMemMap(va, g, 0, h, 0));
    CU_OK(cuMemSetAccess(va, g, &access, 1));
    for (int i = 0; i < N; i++)
        host[i] = 5 * i;
    CU_OK(cuMemcpyHtoD(va, host, sizeof(host)));
    read_back(c1, va, back);
    cr_assert_arr_eq(back, host, sizeof(back));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemGetInfo(&free1_after, &total));
    cr_assert_geq(free1 - free1_after, g);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h));

    CU_OK(cuMemPoolCreate(&pool, &pprops));
    CU_OK(cuMemAllocFromPoolAsync(&fromPool, sizeof(host), pool, s1));
    CU_OK(cuMemcpyHtoDAsync(fromPool, host, sizeof(host), s1));
    CU_OK(cuStreamSynchronize(s1));
    read_back(c1, fromPool, back);
    cr_assert_arr_eq(back, host, sizeof(back));
    CU_OK(cuMemFreeAsync(fromPool, s1));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuDeviceGetDefaultMemPool(&def0, 0));
    CU_OK(cuDeviceGetDefaultMemPool(&def1, 1));
    cr_assert_neq(def0, def1);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemAddressFree(va, g));
}

Test(multiserver, visible_devices_choose_among_servers)
{
    int n = 0, sms;

    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    cr_assert_eq(n, 1);
    if (ds_test_on_sim()) {
        CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
        cr_assert_eq(sms, SIM1_SMS);
    }
}

/* detshare-ctl, given no --admin, asks the first server of the list. */
Test(multiserver, ctl_asks_the_first_server)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "%s status >%s/ctl.out 2>&1", DS_CTL_BIN, srv[0].dir);
    cr_assert_eq(system(cmd), 0);
}

/* cuInit with stderr in a file: its result, and what the client wrote into err. */
static CUresult init_saying(char *err, size_t len)
{
    char path[160];
    int fd, saved = dup(2);
    CUresult rc;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/tenant.err", srv[0].dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_geq(saved, 0);
    dup2(fd, 2);
    rc = cuInit(0);
    dup2(saved, 2);
    close(saved);
    n = pread(fd, err, len - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    return rc;
}

Test(multiserver, a_bad_entry_is_named)
{
    char list[512], err[4096];

    snprintf(list, sizeof(list), "%s,nonsense", srv[0].unix_addr);
    setenv("DETSHARE_SERVER", list, 1);
    cr_assert_eq(init_saying(err, sizeof(err)), CUDA_ERROR_NO_DEVICE);
    cr_assert_not_null(strstr(err, "DETSHARE_SERVER entry 2 (nonsense)"), "%s", err);
}

Test(multiserver, an_unreachable_server_is_named)
{
    char list[512], err[4096];
    int n;

    snprintf(list, sizeof(list), "%s,unix:%s/none.sock", srv[0].unix_addr, srv[1].dir);
    setenv("DETSHARE_SERVER", list, 1);
    cr_assert_eq(init_saying(err, sizeof(err)), CUDA_ERROR_NO_DEVICE);
    cr_assert_not_null(strstr(err, "none.sock"), "%s", err);
    CU_IS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    /* Fixed, it connects to both. */
    ds_test_servers_use(srv, 2);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    cr_assert_eq(n, 2);
}

/* Two servers' devices reach each other, and peer access is enabled once per pair of
 * contexts, as CUDA answers. */
Test(multiserver, peer_access)
{
    CUcontext c0, c1;
    int can = -1;

    CU_OK(cuInit(0));
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 1));
    cr_assert_eq(can, 1);
    CU_OK(cuDeviceCanAccessPeer(&can, 1, 0));
    cr_assert_eq(can, 1);
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0);
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_IS(cuCtxDisablePeerAccess(c1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    CU_OK(cuCtxEnablePeerAccess(c1, 0));
    CU_IS(cuCtxEnablePeerAccess(c1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CU_IS(cuCtxEnablePeerAccess(c0, 0), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuCtxEnablePeerAccess(c0, 0));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxDisablePeerAccess(c1));
    CU_IS(cuCtxDisablePeerAccess(c1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

#define PEER_BYTES (3u << 20)

/* A few MiB from device 0 to device 1 and back, synchronously and on a stream of device
 * 1, byte for byte; a freed source copies nothing. */
Test(multiserver, peer_copies)
{
    CUcontext c0, c1;
    CUdeviceptr a0, b1, c0mem;
    CUstream s1;
    unsigned char *host = malloc(PEER_BYTES), *back = malloc(PEER_BYTES);

    cr_assert_not_null(host);
    cr_assert_not_null(back);
    for (size_t i = 0; i < PEER_BYTES; i++)
        host[i] = (unsigned char)(i * 131 + (i >> 12));
    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemAlloc(&a0, PEER_BYTES));
    CU_OK(cuMemAlloc(&c0mem, PEER_BYTES));
    CU_OK(cuMemcpyHtoD(a0, host, PEER_BYTES));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemAlloc(&b1, PEER_BYTES));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD8(b1, 0, PEER_BYTES));
    CU_OK(cuCtxSetCurrent(c0));

    CU_OK(cuMemcpyPeer(b1, c1, a0, c0, PEER_BYTES));
    memset(back, 0, PEER_BYTES);
    read_back_bytes(c1, b1, back, PEER_BYTES);
    cr_assert_arr_eq(back, host, PEER_BYTES);
    /* Back, from an offset into device 1's allocation. */
    CU_OK(cuMemcpyPeer(c0mem, c0, b1 + 4096, c1, PEER_BYTES - 4096));
    read_back_bytes(c0, c0mem, back, PEER_BYTES - 4096);
    cr_assert_arr_eq(back, host + 4096, PEER_BYTES - 4096);

    /* Device 0's new bytes, written before the copy is asked for, are what it copies. */
    for (size_t i = 0; i < PEER_BYTES; i++)
        host[i] = (unsigned char)~host[i];
    CU_OK(cuMemcpyHtoDAsync(a0, host, PEER_BYTES, NULL));
    CU_OK(cuMemcpyPeerAsync(b1, c1, a0, c0, PEER_BYTES, s1));
    CU_OK(cuStreamSynchronize(s1));
    read_back_bytes(c1, b1, back, PEER_BYTES);
    cr_assert_arr_eq(back, host, PEER_BYTES);

    /* Past the source's end, or from a freed source: refused, nothing sent. */
    CU_IS(cuMemcpyPeer(b1, c1, a0 + 8, c0, PEER_BYTES), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(a0));
    CU_IS(cuMemcpyPeer(b1, c1, a0, c0, PEER_BYTES), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuMemFree(b1));
    CU_OK(cuMemFree(c0mem));
    free(host);
    free(back);
}
