/* detshare's libnvidia-ml.so.1 inside a tenant under a memory quota: the memory NVML
 * shows is the tenant's quota and what it holds itself, in step with cuMemGetInfo; the
 * processes are its own alone; utilisation is how busy its own work kept the device;
 * the device's identity is the device's; whatever would change the device is refused
 * and whatever is not served says so. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv;
static char dir[64];

#define NV_OK(call)                                                                    \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_assert_eq(rc_, NVML_SUCCESS, "%s -> %s", #call, nvmlErrorString(rc_));      \
    } while (0)

#define NV_IS(call, want)                                                              \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_assert_eq(rc_, (want), "%s -> %s, expected %s", #call, nvmlErrorString(rc_), \
                     nvmlErrorString(want));                                           \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A server whose only rule gives tenant "nv" 64 MiB. */
static void start(void)
{
    char config[128], args[160];
    const char *rules = "quota nv memory=64MiB\n";
    int fd;

    snprintf(dir, sizeof(dir), "/tmp/dsnvml.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    fd = open(config, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", config, strerror(errno));
    cr_assert_eq(write(fd, rules, strlen(rules)), (ssize_t)strlen(rules));
    close(fd);
    snprintf(args, sizeof(args), "--config %s", config);
    ds_test_server_start(&srv, 0, args);
    setenv("DETSHARE_TENANT", "nv", 1);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* nvmlInit, and the one device's handle. */
static nvmlDevice_t open_device(void)
{
    nvmlDevice_t h;
    unsigned n = 0;

    NV_OK(nvmlInit_v2());
    NV_OK(nvmlDeviceGetCount_v2(&n));
    cr_assert_eq(n, 1, "%u devices", n);
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h));
    return h;
}

TestSuite(nvml, .init = start, .fini = stop, .timeout = 120);

/* Another tenant, with memory of its own that this one must not see. */
static int neighbour(void *arg)
{
    CUdeviceptr d;

    (void)arg;
    setenv("DETSHARE_TENANT", "neighbour", 1);
    return ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 32 * MiB) == CUDA_SUCCESS ? 0 : 1;
}

Test(nvml, memory_is_the_quota_and_what_the_tenant_holds)
{
    struct ds_test_peer peer;
    nvmlMemory_t m, m2;
    nvmlMemory_v2_t v2 = { .version = nvmlMemory_v2 };
    nvmlDevice_t h;
    CUdeviceptr d;
    size_t free_b, total;

    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_peer_join(&peer);
    h = open_device();
    NV_OK(nvmlDeviceGetMemoryInfo(h, &m));
    cr_expect_eq(m.total, 64 * MiB, "total %llu", m.total);
    cr_expect_eq(m.used, 0, "used %llu before any allocation (the neighbour's is not ours)",
                 m.used);
    cr_expect_eq(m.free, 64 * MiB);

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 8 * MiB));
    NV_OK(nvmlDeviceGetMemoryInfo(h, &m2));
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(m2.total, total, "NVML total %llu, cuMemGetInfo %zu", m2.total, total);
    cr_expect_eq(m2.free, free_b, "NVML free %llu, cuMemGetInfo %zu", m2.free, free_b);
    cr_expect_eq(m2.used - m.used, 8 * MiB, "used grew by %llu", m2.used - m.used);
    cr_expect_eq(m2.used + m2.free, m2.total);

    NV_OK(nvmlDeviceGetMemoryInfo_v2(h, &v2));
    cr_expect_eq(v2.total, m2.total);
    cr_expect_eq(v2.used, m2.used);
    cr_expect_eq(v2.free, m2.free);
    v2.version = 1;
    NV_IS(nvmlDeviceGetMemoryInfo_v2(h, &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
    ds_test_peer_leave(&peer);
}

Test(nvml, the_processes_are_the_tenants_own)
{
    struct ds_test_peer peer;
    nvmlProcessInfo_t p[4];
    nvmlDevice_t h;
    CUdeviceptr d;
    unsigned n = 0;

    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_peer_join(&peer);
    h = open_device();
    /* No context and no memory yet: not a process running on the device. */
    NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL));
    cr_expect_eq(n, 0, "%u processes before the tenant used the device", n);

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    n = 0;
    NV_IS(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_expect_eq(n, 1, "%u processes, the neighbour's included", n);
    n = 4;
    NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, p));
    cr_assert_eq(n, 1);
    cr_expect_eq(p[0].pid, (unsigned)getpid(), "pid %u, not ours (%d)", p[0].pid, (int)getpid());
    cr_expect_eq(p[0].usedGpuMemory, 4 * MiB);
    n = 4;
    NV_OK(nvmlDeviceGetGraphicsRunningProcesses_v3(h, &n, p));
    cr_expect_eq(n, 0);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
    ds_test_peer_leave(&peer);
}

Test(nvml, the_device_is_the_devices)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cu_name[256], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char want[NVML_DEVICE_UUID_V2_BUFFER_SIZE], bus[32];
    const unsigned char *b;
    nvmlPciInfo_t pci;
    nvmlDevice_t h, again;
    CUuuid u;
    int major, minor, cu_major;

    h = open_device();
    NV_OK(nvmlDeviceGetName(h, name, sizeof(name)));
    CU_OK(cuDeviceGetName(cu_name, sizeof(cu_name), 0));
    cr_expect_str_eq(name, cu_name);
    NV_IS(nvmlDeviceGetName(h, name, 2), NVML_ERROR_INSUFFICIENT_SIZE);

    NV_OK(nvmlDeviceGetUUID(h, uuid, sizeof(uuid)));
    CU_OK(cuDeviceGetUuid(&u, 0));
    b = (const unsigned char *)u.bytes;
    snprintf(want, sizeof(want),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    cr_expect_str_eq(uuid, want);
    NV_OK(nvmlDeviceGetHandleByUUID(uuid, &again));
    cr_expect_eq(again, h);
    NV_IS(nvmlDeviceGetHandleByUUID("GPU-nothing", &again), NVML_ERROR_NOT_FOUND);

    NV_OK(nvmlDeviceGetPciInfo_v3(h, &pci));
    CU_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
    cr_expect_str_eq(pci.busIdLegacy, bus);
    NV_OK(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again));
    cr_expect_eq(again, h);

    NV_OK(nvmlDeviceGetCudaComputeCapability(h, &major, &minor));
    CU_OK(cuDeviceGetAttribute(&cu_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    cr_expect_eq(major, cu_major);
    NV_OK(nvmlShutdown());
}

/* Kernels of about 2 ms on the sim, two at a time, for `ms` of wall time: the share of
 * that time the device spent on them, as test_throttle.c measures it. */
static double keep_busy(CUfunction fill, CUdeviceptr d, double ms)
{
    double t0 = now_ms(), kernel_ms = 0;
    int v = 1, z = 0, n = 0;
    void *params[] = { &d, &v, &z };
    CUevent a, b;
    float one;

    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    while (now_ms() - t0 < ms) {
        CU_OK(cuEventRecord(a, NULL));
        CU_OK(cuLaunchKernel(fill, 264 * 2000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuEventRecord(b, NULL));
        CU_OK(cuLaunchKernel(fill, 264 * 2000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuCtxSynchronize());
        CU_OK(cuEventElapsedTime(&one, a, b));
        kernel_ms += 2 * one;
        n += 2;
    }
    cuEventDestroy(a);
    cuEventDestroy(b);
    return kernel_ms / (now_ms() - t0);
}

Test(nvml, utilization_is_how_busy_the_tenants_work_kept_its_sms)
{
    nvmlUtilization_t busy, idle;
    CUfunction fill;
    CUdeviceptr d;
    nvmlDevice_t h;
    double share;

    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    h = open_device();
    share = keep_busy(fill, d, 1200);
    NV_OK(nvmlDeviceGetUtilizationRates(h, &busy));
    cr_log_info("%u%% busy, the device ran the kernels %.0f%% of the time", busy.gpu,
                share * 100);
    cr_expect(busy.gpu > 0 && busy.gpu >= share * 100 / 2 && busy.gpu <= 100,
              "%u%% busy while the device ran the tenant's kernels %.0f%% of the time",
              busy.gpu, share * 100);
    usleep(1100 * 1000);
    NV_OK(nvmlDeviceGetUtilizationRates(h, &idle));
    cr_expect_leq(idle.gpu, 2, "%u%% busy over a second of doing nothing", idle.gpu);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
}

/* A program that loads libnvidia-ml.so.1 and no libcuda, as nvidia-smi does: the
 * library finds detshare's libcuda beside itself and the program is a tenant of its
 * own, with the quota of its name, holding nothing. */
Test(nvml, a_program_with_nvml_alone_is_a_tenant_of_its_own)
{
    char line[256] = "";
    unsigned long long total = 0, used = 1, free_b = 0;
    unsigned n = 0, procs = 9;
    FILE *p = popen(DS_NVML_PROBE, "r");

    cr_assert_not_null(p);
    cr_assert_not_null(fgets(line, sizeof(line), p), "the probe printed nothing");
    cr_assert_eq(pclose(p), 0, "the probe: %s", line);
    cr_assert_eq(sscanf(line, "count=%u total=%llu used=%llu free=%llu processes=%u", &n, &total,
                        &used, &free_b, &procs),
                 5, "%s", line);
    cr_expect_eq(n, 1);
    cr_expect_eq(total, 64 * MiB, "%s", line);
    cr_expect_eq(used, 0, "%s", line);
    cr_expect_eq(free_b, 64 * MiB, "%s", line);
    cr_expect_eq(procs, 0, "%s", line);
}

Test(nvml, changes_are_refused_and_the_unserved_says_so)
{
    nvmlDevice_t h;
    unsigned n, temp;

    NV_IS(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    h = open_device();
    NV_IS(nvmlDeviceSetPowerManagementLimit(h, 100000), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetPersistenceMode(h, NVML_FEATURE_ENABLED), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceResetGpuLockedClocks(h), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &temp), NVML_ERROR_NOT_SUPPORTED);
    NV_OK(nvmlShutdown());
    NV_IS(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    NV_IS(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

/* Fails the test unless `call` gave a value or NVML_ERROR_NOT_SUPPORTED, the two answers
 * nvidia-smi prints (a value or "N/A"); counts the values. */
#define ANSWERS(call, values)                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_expect(rc_ == NVML_SUCCESS || rc_ == NVML_ERROR_NOT_SUPPORTED, "%s -> %s",  \
                  #call, nvmlErrorString(rc_));                                        \
        (values) += rc_ == NVML_SUCCESS;                                               \
    } while (0)

/* The public queries behind nvidia-smi's plain view and the sections of -q (header,
 * identity, PCI, memory, utilisation, ECC, temperature, power, clocks, processes, MIG),
 * called as nvidia-smi calls them: a value or "not supported", never another error that
 * it could take for a broken library. */
Test(nvml, what_nvidia_smi_q_asks_gets_a_value_or_not_supported)
{
    char s[NVML_DEVICE_NAME_V2_BUFFER_SIZE + NVML_DEVICE_SERIAL_BUFFER_SIZE];
    unsigned u, u2, n = 0, served = 0;
    unsigned long long ull;
    int i, i2;
    nvmlDevice_t h;
    nvmlEnableState_t e, e2;
    nvmlPciInfo_t pci;
    nvmlMemory_t m;
    nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
    nvmlBAR1Memory_t bar1;
    nvmlUtilization_t util;
    nvmlComputeMode_t mode;
    nvmlPstates_t ps;
    nvmlBrandType_t brand;
    nvmlDeviceArchitecture_t arch;
    nvmlProcessInfo_t procs[4];
    nvmlEventSet_t set;

    NV_OK(nvmlInit_v2());
    ANSWERS(nvmlSystemGetDriverVersion(s, sizeof(s)), served);
    ANSWERS(nvmlSystemGetNVMLVersion(s, sizeof(s)), served);
    ANSWERS(nvmlSystemGetCudaDriverVersion_v2(&i), served);
    ANSWERS(nvmlDeviceGetCount_v2(&u), served);
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h));
    ANSWERS(nvmlDeviceGetName(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetBrand(h, &brand), served);
    ANSWERS(nvmlDeviceGetUUID(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetSerial(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetMinorNumber(h, &u), served);
    ANSWERS(nvmlDeviceGetVbiosVersion(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetBoardId(h, &u), served);
    ANSWERS(nvmlDeviceGetBoardPartNumber(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetDisplayMode(h, &e), served);
    ANSWERS(nvmlDeviceGetDisplayActive(h, &e), served);
    ANSWERS(nvmlDeviceGetPersistenceMode(h, &e), served);
    ANSWERS(nvmlDeviceGetAccountingMode(h, &e), served);
    ANSWERS(nvmlDeviceGetMigMode(h, &u, &u2), served);
    ANSWERS(nvmlDeviceGetMaxMigDeviceCount(h, &u), served);
    ANSWERS(nvmlDeviceGetPciInfo_v3(h, &pci), served);
    ANSWERS(nvmlDeviceGetMaxPcieLinkGeneration(h, &u), served);
    ANSWERS(nvmlDeviceGetCurrPcieLinkWidth(h, &u), served);
    ANSWERS(nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_TX_BYTES, &u), served);
    ANSWERS(nvmlDeviceGetFanSpeed(h, &u), served);
    ANSWERS(nvmlDeviceGetPerformanceState(h, &ps), served);
    ANSWERS(nvmlDeviceGetCurrentClocksEventReasons(h, &ull), served);
    ANSWERS(nvmlDeviceGetMemoryInfo(h, &m), served);
    ANSWERS(nvmlDeviceGetMemoryInfo_v2(h, &m2), served);
    ANSWERS(nvmlDeviceGetBAR1MemoryInfo(h, &bar1), served);
    ANSWERS(nvmlDeviceGetComputeMode(h, &mode), served);
    ANSWERS(nvmlDeviceGetUtilizationRates(h, &util), served);
    ANSWERS(nvmlDeviceGetEncoderUtilization(h, &u, &u2), served);
    ANSWERS(nvmlDeviceGetEccMode(h, &e, &e2), served);
    ANSWERS(nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                                        &ull), served);
    ANSWERS(nvmlDeviceGetRetiredPagesPendingStatus(h, &e), served);
    ANSWERS(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &u), served);
    ANSWERS(nvmlDeviceGetTemperatureThreshold(h, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &u),
            served);
    ANSWERS(nvmlDeviceGetPowerUsage(h, &u), served);
    ANSWERS(nvmlDeviceGetEnforcedPowerLimit(h, &u), served);
    ANSWERS(nvmlDeviceGetPowerManagementLimitConstraints(h, &u, &u2), served);
    for (nvmlClockType_t c = NVML_CLOCK_GRAPHICS; c < NVML_CLOCK_COUNT; c++) {
        ANSWERS(nvmlDeviceGetClockInfo(h, c, &u), served);
        ANSWERS(nvmlDeviceGetMaxClockInfo(h, c, &u), served);
        ANSWERS(nvmlDeviceGetApplicationsClock(h, c, &u), served);
    }
    ANSWERS(nvmlDeviceGetCudaComputeCapability(h, &i, &i2), served);
    ANSWERS(nvmlDeviceGetArchitecture(h, &arch), served);
    ANSWERS(nvmlDeviceGetMemoryBusWidth(h, &u), served);
    n = 0;
    ANSWERS(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL), served);
    n = 4;
    ANSWERS(nvmlDeviceGetGraphicsRunningProcesses_v3(h, &n, procs), served);
    n = 4;
    ANSWERS(nvmlDeviceGetMPSComputeRunningProcesses_v3(h, &n, procs), served);
    ANSWERS(nvmlEventSetCreate(&set), served);
    /* What detshare serves (docs/nvml.md, "What a tenant sees"), so that a change that
     * lost one to "not supported" shows. */
    cr_expect_eq(served, 19, "%u of the queries gave a value", served);
    NV_OK(nvmlShutdown());
}
