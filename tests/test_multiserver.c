/* Several servers, one tenant: DETSHARE_SERVER lists two servers, and the tenant sees
 * two devices, each described by its own server, each call going to the server of the
 * device it concerns (client/transport/route.h). */
#include "ds_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 4096
#define SIM1_SMS 66
#define SIM1_MEM (8ull << 30)

static struct ds_test_server srv[2];

static void start(void)
{
    /* On the sim, device 1 differs from device 0 (132 SMs, 80 GiB, GPU 0) in everything
     * a tenant can ask.  On a GPU both servers serve GPU 0, which takes one MPS daemon
     * at a time: neither starts one; with DS_TEST_GPU_PAIR set (a two-GPU box) they serve
     * GPUs 0 and 1, each with its MPS daemon, as deployed: interprocess events and memory
     * then cross two daemons. */
    int pair = !ds_test_on_sim() && getenv("DS_TEST_GPU_PAIR") != NULL;

    ds_test_server_start(&srv[0], 0, ds_test_on_sim() ? NULL : pair ? "--gpu 0" : "--mps off");
    ds_test_server_start(&srv[1], 0, ds_test_on_sim() ? "--sim-sms 66 --sim-memory 8G --gpu 1"
                                     : pair            ? "--gpu 1"
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
    /* A copy between the two devices' memory runs on one of them. */
    CU_OK(cuMemcpyDtoD(p[0], p[1], sizeof(back)));
    read_back(ctx[0], p[0], back);
    cr_assert_arr_eq(back, host[1], sizeof(back));
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
    CUevent written;
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

    /* Device 0's new bytes are what the copy on device 1's stream sees once that stream
     * waits for them, as in CUDA (an asynchronous peer copy follows its stream only). */
    for (size_t i = 0; i < PEER_BYTES; i++)
        host[i] = (unsigned char)~host[i];
    CU_OK(cuEventCreate(&written, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemcpyHtoDAsync(a0, host, PEER_BYTES, NULL));
    CU_OK(cuEventRecord(written, NULL));
    CU_OK(cuStreamWaitEvent(s1, written, 0));
    CU_OK(cuMemcpyPeerAsync(b1, c1, a0, c0, PEER_BYTES, s1));
    CU_OK(cuEventDestroy(written));
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

/* A stream of one device waiting for an event of the other (issue 26), with device 1's
 * work held behind a word until the test releases it, so that nothing but the wait can
 * order device 0's copy after it. */
#define XB (1u << 20)

struct xdev {
    CUcontext c0, c1;
    CUstream s0, s1, s1b; /* s1b: device 1's stream that releases s1 */
    CUdeviceptr word1, buf1, buf0;
    CUevent e;
};

static void xdev_setup(struct xdev *x)
{
    CU_OK(cuInit(0));
    x->c0 = primary(0);
    x->c1 = primary(1);
    CU_OK(cuCtxSetCurrent(x->c1));
    CU_OK(cuStreamCreate(&x->s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&x->s1b, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAlloc(&x->word1, sizeof(unsigned)));
    CU_OK(cuMemAlloc(&x->buf1, XB));
    CU_OK(cuMemsetD32(x->word1, 0, 1));
    CU_OK(cuMemsetD8(x->buf1, 0, XB));
    CU_OK(cuEventCreate(&x->e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuCtxSetCurrent(x->c0));
    CU_OK(cuStreamCreate(&x->s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAlloc(&x->buf0, XB));
    CU_OK(cuMemsetD8(x->buf0, 0, XB));
}

/* Device 1: wait for the word, fill buf1 with 0x5a, record e. */
static void xdev_hold(struct xdev *x)
{
    CU_OK(cuStreamWaitValue32(x->s1, x->word1, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuMemsetD8Async(x->buf1, 0x5a, XB, x->s1));
    CU_OK(cuEventRecord(x->e, x->s1));
}

static void xdev_release(struct xdev *x)
{
    CU_OK(cuStreamWriteValue32(x->s1b, x->word1, 1, 0));
}

/* Device 0's copy of buf1, on s0, behind the wait. */
static void xdev_copy(struct xdev *x)
{
    CU_OK(cuMemcpyPeerAsync(x->buf0, x->c0, x->buf1, x->c1, XB, x->s0));
}

/* Whether all XB bytes of buf0 are `byte`. */
static int xdev_buf0_is(struct xdev *x, unsigned char byte)
{
    static unsigned char back[XB];
    int all = 1;

    read_back_bytes(x->c0, x->buf0, back, XB);
    for (size_t i = 0; i < XB && all; i++)
        all = back[i] == byte;
    return all;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

Test(multiserver, a_stream_waits_for_another_devices_event)
{
    struct xdev x;

    xdev_setup(&x);
    xdev_hold(&x);
    /* The host goes on at once: device 1's work cannot be done before the release
     * below, which this thread makes. */
    CU_OK(cuStreamWaitEvent(x.s0, x.e, 0));
    xdev_copy(&x);
    usleep(50 * 1000);
    CU_IS(cuStreamQuery(x.s0), CUDA_ERROR_NOT_READY);
    cr_assert(xdev_buf0_is(&x, 0), "device 0's copy ran before device 1's event");
    xdev_release(&x);
    CU_OK(cuStreamSynchronize(x.s0));
    cr_assert(xdev_buf0_is(&x, 0x5a), "device 0's copy did not see device 1's fill");
    /* Again with the shadow already open, and the legacy stream waiting. */
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemsetD8Async(x.buf1, 0x33, XB, x.s1));
    CU_OK(cuEventRecord(x.e, x.s1));
    CU_OK(cuCtxSetCurrent(x.c0));
    CU_OK(cuStreamWaitEvent(NULL, x.e, 0));
    CU_OK(cuMemcpyPeerAsync(x.buf0, x.c0, x.buf1, x.c1, XB, NULL));
    CU_OK(cuCtxSynchronize());
    cr_assert(xdev_buf0_is(&x, 0x33));
    CU_IS(cuStreamWaitEvent(x.s0, x.e, 7), CUDA_ERROR_INVALID_VALUE);
}

struct releaser {
    struct xdev *x;
    unsigned delay_ms;
};

static void *release_later(void *arg)
{
    struct releaser *r = arg;

    usleep(r->delay_ms * 1000);
    cuCtxSetCurrent(r->x->c1);
    cuStreamWriteValue32(r->x->s1b, r->x->word1, 1, 0);
    cuStreamSynchronize(r->x->s1b);
    return NULL;
}

/* A wait made on the host: the calling thread waits for the event, which device 1's
 * work reaches 200 ms later, and the copy still sees its work. */
static void xdev_wait_on_host(struct xdev *x)
{
    struct releaser r = { x, 200 };
    struct timespec t0;
    pthread_t th;

    xdev_hold(x);
    cr_assert_eq(pthread_create(&th, NULL, release_later, &r), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_OK(cuStreamWaitEvent(x->s0, x->e, 0));
    cr_assert_geq(ms_since(&t0), 150.0, "the wait did not wait for the event on the host");
    xdev_copy(x);
    CU_OK(cuStreamSynchronize(x->s0));
    pthread_join(th, NULL);
    cr_assert(xdev_buf0_is(x, 0x5a), "device 0's copy did not see device 1's fill");
}

/* DETSHARE_XDEV_WAIT=host: the wait is made on the host, as where the shadow cannot be
 * opened. */
Test(multiserver, a_wait_made_on_the_host)
{
    struct xdev x;

    setenv("DETSHARE_XDEV_WAIT", "host", 1);
    xdev_setup(&x);
    xdev_wait_on_host(&x);
}

/* Servers whose executors cannot open each other's interprocess events, as a driver may
 * refuse across two MPS daemons (DETSHARE_SIM_NO_IPC_EVENTS). */
static void start_without_ipc_events(void)
{
    setenv("DETSHARE_SIM_NO_IPC_EVENTS", "1", 1);
    start();
}

TestSuite(multiserver_no_ipc_events, .init = start_without_ipc_events, .fini = stop,
          .timeout = 120);

/* The shadow cannot be opened: the wait is made on the host, the first time and again
 * (the refusal remembered), and orders the copy all the same. */
Test(multiserver_no_ipc_events, a_wait_falls_back_to_the_host)
{
    struct xdev x;

    DS_SIM_ONLY();
    xdev_setup(&x);
    xdev_wait_on_host(&x);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemsetD32(x.word1, 0, 1));
    CU_OK(cuMemsetD8(x.buf1, 0, XB));
    CU_OK(cuCtxSetCurrent(x.c0));
    CU_OK(cuMemsetD8(x.buf0, 0, XB));
    xdev_wait_on_host(&x);
}

/* The tenant destroys the event while device 0's stream still waits for it: the wait
 * holds, as CUDA's does. */
Test(multiserver, an_event_destroyed_while_waited_for)
{
    struct xdev x;

    xdev_setup(&x);
    xdev_hold(&x);
    CU_OK(cuStreamWaitEvent(x.s0, x.e, 0));
    CU_OK(cuEventDestroy(x.e));
    xdev_copy(&x);
    usleep(50 * 1000);
    CU_IS(cuStreamQuery(x.s0), CUDA_ERROR_NOT_READY);
    xdev_release(&x);
    CU_OK(cuStreamSynchronize(x.s0));
    cr_assert(xdev_buf0_is(&x, 0x5a));
    CU_IS(cuStreamWaitEvent(x.s0, x.e, 0), CUDA_ERROR_INVALID_HANDLE);
}

/* Plain copies between the two devices' memory (issue 26), as PyTorch's .to('cuda:1')
 * makes them: cuMemcpyDtoDAsync, cuMemcpyAsync with unified addresses, or
 * cuMemcpyPeerAsync, on a stream of either device. */
enum xcopy_how { XCOPY_DTOD, XCOPY_UNIFIED, XCOPY_PEER, XCOPY_HOWS };

static void xcopy(enum xcopy_how how, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                  CUcontext sctx, size_t n, CUstream s)
{
    switch (how) {
    case XCOPY_DTOD:
        CU_OK(cuMemcpyDtoDAsync(dst, src, n, s));
        break;
    case XCOPY_UNIFIED:
        CU_OK(cuMemcpyAsync(dst, src, n, s));
        break;
    default:
        CU_OK(cuMemcpyPeerAsync(dst, dctx, src, sctx, n, s));
    }
}

/* n bytes of a pattern that differs with seed. */
static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + (i >> 11) + seed * 29 + 1);
}

/* Write n bytes of host into p under ctx. */
static void put(CUcontext ctx, CUdeviceptr p, const void *host, size_t n)
{
    CU_OK(cuCtxPushCurrent(ctx));
    CU_OK(cuMemcpyHtoD(p, host, n));
    CU_OK(cuCtxPopCurrent(NULL));
}

/* Whether buf0 holds the XB bytes of want. */
static int xdev_buf0_holds(struct xdev *x, const unsigned char *want)
{
    static unsigned char back[XB];

    read_back_bytes(x->c0, x->buf0, back, XB);
    return memcmp(back, want, XB) == 0;
}

/* Device 1 (the source) fills buf1 from pat1 once the word is set, on s1. */
static void xdev_hold_copy(struct xdev *x, CUdeviceptr pat1)
{
    CU_OK(cuCtxSetCurrent(x->c1));
    CU_OK(cuMemsetD32(x->word1, 0, 1));
    CU_OK(cuStreamWaitValue32(x->s1, x->word1, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuMemcpyDtoDAsync(x->buf1, pat1, XB, x->s1));
}

/* From buf1 (device 1) to buf0 (device 0) on the source's stream, ordered as PyTorch
 * orders it: the source's stream waits for the destination stream's earlier work, and
 * the destination's stream for the copy.  Device 1's stream is held behind the word, so
 * only stream order can put the copy after the source's fill. */
Test(multiserver, copies_on_the_source_devices_stream)
{
    static unsigned char want[XB];
    struct xdev x;
    CUdeviceptr pat1;
    CUevent e0;

    xdev_setup(&x);
    CU_OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemAlloc(&pat1, XB));
    for (int how = 0; how < XCOPY_HOWS; how++) {
        pattern(want, XB, (unsigned)how);
        put(x.c1, pat1, want, XB);
        CU_OK(cuCtxSetCurrent(x.c0));
        CU_OK(cuMemsetD8Async(x.buf0, 0x11, XB, x.s0));
        CU_OK(cuEventRecord(e0, x.s0));
        xdev_hold_copy(&x, pat1);
        CU_OK(cuStreamWaitEvent(x.s1, e0, 0));
        xcopy((enum xcopy_how)how, x.buf0, x.c0, x.buf1, x.c1, XB, x.s1);
        CU_OK(cuEventRecord(x.e, x.s1));
        CU_OK(cuStreamWaitEvent(x.s0, x.e, 0));
        usleep(50 * 1000);
        CU_IS(cuStreamQuery(x.s1), CUDA_ERROR_NOT_READY);
        cr_assert(!xdev_buf0_holds(&x, want), "copy %d ran before its stream's fill", how);
        xdev_release(&x);
        CU_OK(cuStreamSynchronize(x.s0));
        cr_assert(xdev_buf0_holds(&x, want), "copy %d: buf0 differs", how);
    }
    CU_OK(cuEventDestroy(e0));
}

/* The same copy on the destination's stream, which waits for the source's event; the
 * current context is the source's, and the stream still decides where the copy runs. */
Test(multiserver, copies_on_the_destination_devices_stream)
{
    static unsigned char want[XB];
    struct xdev x;
    CUdeviceptr pat1;

    xdev_setup(&x);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemAlloc(&pat1, XB));
    for (int how = 0; how < XCOPY_HOWS; how++) {
        pattern(want, XB, (unsigned)how + 7);
        put(x.c1, pat1, want, XB);
        xdev_hold_copy(&x, pat1);
        CU_OK(cuEventRecord(x.e, x.s1));
        CU_OK(cuStreamWaitEvent(x.s0, x.e, 0));
        xcopy((enum xcopy_how)how, x.buf0, x.c0, x.buf1, x.c1, XB, x.s0);
        usleep(50 * 1000);
        CU_IS(cuStreamQuery(x.s0), CUDA_ERROR_NOT_READY);
        cr_assert(!xdev_buf0_holds(&x, want), "copy %d ran before the source's fill", how);
        xdev_release(&x);
        CU_OK(cuStreamSynchronize(x.s0));
        cr_assert(xdev_buf0_holds(&x, want), "copy %d: buf0 differs", how);
    }
}

/* cuMemcpyDtoD and cuMemcpy between the devices, at odd offsets and lengths, each way;
 * and returning only after the other device's legacy stream's earlier work, held 200 ms
 * behind the word, as CUDA serialises a synchronous copy between devices with it. */
Test(multiserver, synchronous_copies_across_devices)
{
    static unsigned char want[XB], back[XB];
    struct releaser r;
    struct timespec t0;
    struct xdev x;
    pthread_t th;

    xdev_setup(&x);
    pattern(want, XB, 3);
    put(x.c0, x.buf0, want, XB);
    CU_OK(cuCtxSetCurrent(x.c0));
    CU_OK(cuMemcpyDtoD(x.buf1 + 3, x.buf0 + 5, XB - 8));
    read_back_bytes(x.c1, x.buf1, back, XB);
    cr_assert_arr_eq(back + 3, want + 5, XB - 8);
    cr_assert_eq(back[0] | back[1] | back[2] | back[XB - 5], 0);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemsetD8(x.buf0, 0, XB));
    CU_OK(cuMemcpy(x.buf0 + 1, x.buf1 + 3, XB - 9));
    read_back_bytes(x.c0, x.buf0, back, XB);
    cr_assert_arr_eq(back + 1, want + 5, XB - 9);
    cr_assert_eq(back[0] | back[XB - 8], 0);

    put(x.c0, x.buf0, want, XB);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuStreamWaitValue32(NULL, x.word1, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuMemsetD8Async(x.buf1, 0x5a, XB, NULL));
    CU_OK(cuCtxSetCurrent(x.c0));
    r = (struct releaser){ &x, 200 };
    cr_assert_eq(pthread_create(&th, NULL, release_later, &r), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_OK(cuMemcpyDtoD(x.buf1, x.buf0, XB));
    cr_assert_geq(ms_since(&t0), 150.0, "the copy did not wait for device 1's work");
    pthread_join(th, NULL);
    read_back_bytes(x.c1, x.buf1, back, XB);
    cr_assert_arr_eq(back, want, XB, "device 1's fill came after the copy");
}

/* A 2-D copy between the devices' memory, on a stream of either device and
 * synchronously: each row where it belongs, and nothing between the rows. */
#define ROW_W 1000
#define ROWS 64

static void copy_2d_across(struct xdev *x, CUstream s, int wait, const unsigned char *src)
{
    static unsigned char want[XB], back[XB];
    CUDA_MEMCPY2D c = { .srcXInBytes = 16, .srcY = 2, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = x->buf0, .srcPitch = 1024,
                        .dstXInBytes = 8, .dstY = 1, .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                        .dstDevice = x->buf1, .dstPitch = 1536,
                        .WidthInBytes = ROW_W, .Height = ROWS };

    memset(want, 0, XB);
    for (size_t y = 0; y < ROWS; y++)
        memcpy(want + (y + 1) * 1536 + 8, src + (y + 2) * 1024 + 16, ROW_W);
    CU_OK(cuCtxSetCurrent(x->c1));
    CU_OK(cuMemsetD8(x->buf1, 0, XB));
    CU_OK(cuCtxSetCurrent(x->c0));
    if (wait) {
        CU_OK(cuMemcpy2D(&c));
    } else {
        CU_OK(cuMemcpy2DAsync(&c, s));
        CU_OK(cuStreamSynchronize(s));
    }
    read_back_bytes(x->c1, x->buf1, back, XB);
    cr_assert_arr_eq(back, want, XB);
}

Test(multiserver, a_2d_copy_across_devices)
{
    static unsigned char src[XB];
    struct xdev x;

    xdev_setup(&x);
    pattern(src, XB, 5);
    put(x.c0, x.buf0, src, XB);
    copy_2d_across(&x, x.s0, 0, src);
    copy_2d_across(&x, x.s1, 0, src);
    copy_2d_across(&x, NULL, 1, src);
}

/* Only cuMemAlloc's memory can be mapped on another device: a pool's allocation of
 * device 1 copied on device 0's stream is refused. */
Test(multiserver, a_pool_allocation_is_not_reached_from_another_device)
{
    struct xdev x;
    CUdeviceptr pooled;

    xdev_setup(&x);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemAllocAsync(&pooled, XB, x.s1));
    CU_OK(cuStreamSynchronize(x.s1));
    CU_IS(cuMemcpyDtoDAsync(x.buf0, pooled, XB, x.s0), CUDA_ERROR_INVALID_VALUE);
    /* On device 1's stream, the pool's memory is that device's own. */
    CU_OK(cuMemcpyDtoDAsync(x.buf0, pooled, XB, x.s1));
    CU_OK(cuStreamSynchronize(x.s1));
    CU_OK(cuMemFreeAsync(pooled, x.s1));
    CU_OK(cuStreamSynchronize(x.s1));
}

/* A mapping made in a context goes with it: a copy after the context's end maps anew. */
Test(multiserver, a_mapping_goes_with_its_context)
{
    static unsigned char want[XB];
    CUcontext mine;
    CUstream s;
    struct xdev x;

    xdev_setup(&x);
    pattern(want, XB, 9);
    put(x.c1, x.buf1, want, XB);
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemcpyPeerAsync(x.buf0, mine, x.buf1, x.c1, XB, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert(xdev_buf0_holds(&x, want));
    CU_OK(cuCtxDestroy(mine));
    CU_OK(cuCtxSetCurrent(x.c0));
    CU_OK(cuMemsetD8(x.buf0, 0, XB));
    CU_OK(cuMemcpyPeer(x.buf0, x.c0, x.buf1, x.c1, XB));
    cr_assert(xdev_buf0_holds(&x, want));
}

/* An allocation that ends with its context, unseen by the client, and a new one at the
 * same address: a copy from the new one must not go through the old one's mapping. */
Test(multiserver, a_new_allocation_at_an_old_address_is_mapped_anew)
{
    static unsigned char first[XB], second[XB];
    CUdeviceptr a, b;
    CUcontext m;
    struct xdev x;

    xdev_setup(&x);
    pattern(first, XB, 3);
    pattern(second, XB, 11);
    CU_OK(cuCtxCreate(&m, NULL, 0, 1));
    CU_OK(cuMemAlloc(&a, XB));
    put(m, a, first, XB);
    CU_OK(cuMemcpyPeer(x.buf0, x.c0, a, m, XB));
    cr_assert(xdev_buf0_holds(&x, first));
    CU_OK(cuCtxDestroy(m));
    CU_OK(cuCtxCreate(&m, NULL, 0, 1));
    CU_OK(cuMemAlloc(&b, XB));
    if (b != a)
        cr_skip_test("the server gave the new allocation another address");
    put(m, b, second, XB);
    CU_OK(cuMemcpyPeer(x.buf0, x.c0, b, m, XB));
    cr_assert(xdev_buf0_holds(&x, second), "the copy came through the old allocation's mapping");
    CU_OK(cuCtxDestroy(m));
}

/* Executors of server s (children of its control process) holding the sim's IPC
 * memfds: descriptors (fds) or mappings (maps) named detshare-ipc-*. */
static int ipc_memfds(const struct ds_test_server *s, int maps)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int count = 0;

    cr_assert_not_null(d);
    while ((de = readdir(d)) != NULL) {
        char path[300], line[512];
        int pid = atoi(de->d_name), ppid = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        if (pid <= 0 || (f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(line, sizeof(line), f) != NULL && strrchr(line, ')') != NULL)
            sscanf(strrchr(line, ')') + 2, "%*c %d", &ppid);
        fclose(f);
        if (ppid != s->pid)
            continue;
        snprintf(path, sizeof(path), maps ? "/proc/%d/maps" : "/proc/%d/fd", pid);
        if (maps) {
            if ((f = fopen(path, "r")) == NULL)
                continue;
            while (fgets(line, sizeof(line), f) != NULL)
                count += strstr(line, "detshare-ipc-") != NULL;
            fclose(f);
        } else {
            DIR *fd = opendir(path);
            struct dirent *fe;

            while (fd != NULL && (fe = readdir(fd)) != NULL) {
                char link[700], target[256];
                ssize_t n;

                snprintf(link, sizeof(link), "%s/%s", path, fe->d_name);
                n = readlink(link, target, sizeof(target) - 1);
                target[n > 0 ? n : 0] = '\0';
                count += strstr(target, "detshare-ipc-") != NULL;
            }
            if (fd != NULL)
                closedir(fd);
        }
    }
    closedir(d);
    return count;
}

/* A tenant in a child process: EVENTS events of device 1 waited for by device 0's
 * stream, then half destroyed, then an exit without cleaning up, a step per byte read
 * from `go`; it writes 'r' after each step, or 'f' when a call failed. */
#define EVENTS 4

static void shadow_tenant(int go, int done)
{
    struct xdev x;
    CUevent e[EVENTS];
    char c;
    int ok = ds_test_connect() == CUDA_SUCCESS &&
             cuDevicePrimaryCtxRetain(&x.c0, 0) == CUDA_SUCCESS &&
             cuDevicePrimaryCtxRetain(&x.c1, 1) == CUDA_SUCCESS;

    ok = ok && cuCtxSetCurrent(x.c1) == CUDA_SUCCESS &&
         cuStreamCreate(&x.s1, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
         cuCtxSetCurrent(x.c0) == CUDA_SUCCESS &&
         cuStreamCreate(&x.s0, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    for (int i = 0; i < EVENTS && ok; i++)
        ok = cuCtxSetCurrent(x.c1) == CUDA_SUCCESS &&
             cuEventCreate(&e[i], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS &&
             cuEventRecord(e[i], x.s1) == CUDA_SUCCESS &&
             cuStreamWaitEvent(x.s0, e[i], 0) == CUDA_SUCCESS;
    ok = ok && cuStreamSynchronize(x.s0) == CUDA_SUCCESS;
    if (write(done, ok ? "r" : "f", 1) != 1 || read(go, &c, 1) != 1)
        _exit(1);
    for (int i = 0; i < EVENTS / 2 && ok; i++)
        ok = cuEventDestroy(e[i]) == CUDA_SUCCESS;
    if (write(done, ok ? "r" : "f", 1) != 1 || read(go, &c, 1) != 1)
        _exit(1);
    _exit(0);
}

/* Wait up to 5 s for server s's executors to hold `want` IPC memfds (maps: mapped). */
static int settles_at(const struct ds_test_server *s, int maps, int want)
{
    for (int i = 0; i < 500; i++) {
        if (ipc_memfds(s, maps) == want)
            return 1;
        usleep(10 * 1000);
    }
    return 0;
}

/* A copy on the source's stream maps the destination's allocation on the source's
 * device (a memfd of device 1's executor mapped by device 0's): freeing the destination
 * closes that mapping. */
Test(multiserver, freeing_the_destination_drops_its_mapping)
{
    static unsigned char want[XB], back[XB];
    struct xdev x;
    CUdeviceptr dst1;
    int before;

    DS_SIM_ONLY();
    xdev_setup(&x);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemAlloc(&dst1, XB));
    pattern(want, XB, 11);
    put(x.c0, x.buf0, want, XB);
    before = ipc_memfds(&srv[0], 1);
    CU_OK(cuMemcpyDtoDAsync(dst1, x.buf0, XB, x.s0));
    CU_OK(cuStreamSynchronize(x.s0));
    cr_assert_gt(ipc_memfds(&srv[0], 1), before, "device 0 mapped nothing of device 1's");
    read_back_bytes(x.c1, dst1, back, XB);
    cr_assert_arr_eq(back, want, XB);
    CU_OK(cuCtxSetCurrent(x.c1));
    CU_OK(cuMemFree(dst1));
    cr_assert(settles_at(&srv[0], 1, before), "device 0 maps %d", ipc_memfds(&srv[0], 1));
}

/* Each shadow is a memfd of device 1's executor, mapped by device 0's: destroying
 * events frees theirs, and the tenant's exit the rest. */
Test(multiserver, shadows_go_with_their_events_and_tenant)
{
    int go[2], done[2], status;
    char c = 0;
    pid_t child;

    DS_SIM_ONLY();
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(done), 0);
    child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        /* The test's end, passing or not, ends the tenant: its read of go sees EOF. */
        close(go[1]);
        close(done[0]);
        shadow_tenant(go[0], done[1]);
    }
    close(go[0]);
    close(done[1]);
    cr_assert_eq(read(done[0], &c, 1), 1);
    cr_assert_eq(c, 'r', "the tenant's waits failed");
    cr_assert_eq(ipc_memfds(&srv[1], 0), EVENTS);
    cr_assert_eq(ipc_memfds(&srv[0], 1), EVENTS);
    cr_assert_eq(write(go[1], "g", 1), 1);
    cr_assert_eq(read(done[0], &c, 1), 1);
    cr_assert_eq(c, 'r', "destroying the events failed");
    cr_assert(settles_at(&srv[1], 0, EVENTS / 2), "device 1 holds %d", ipc_memfds(&srv[1], 0));
    cr_assert(settles_at(&srv[0], 1, EVENTS / 2), "device 0 maps %d", ipc_memfds(&srv[0], 1));
    cr_assert_eq(write(go[1], "g", 1), 1);
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert(settles_at(&srv[1], 0, 0), "device 1 holds %d", ipc_memfds(&srv[1], 0));
    cr_assert(settles_at(&srv[0], 1, 0), "device 0 maps %d", ipc_memfds(&srv[0], 1));
}

/* Peer access goes with the context that had or gave it: a primary context reset and
 * retained again, with the same handle, starts with none. */
Test(multiserver, peer_access_ends_with_its_context)
{
    CUcontext c0, c1;

    CU_OK(cuInit(0));
    c0 = primary(0);
    c1 = primary(1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxEnablePeerAccess(c1, 0));
    CU_OK(cuCtxSetCurrent(NULL));
    CU_OK(cuDevicePrimaryCtxReset(0));
    cr_assert_eq(primary(0), c0);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxEnablePeerAccess(c1, 0));
    /* And the peer's end takes the access to it along. */
    CU_OK(cuDevicePrimaryCtxReset(1));
    cr_assert_eq(primary(1), c1);
    CU_OK(cuCtxEnablePeerAccess(c1, 0));
}
